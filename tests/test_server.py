"""``shape-lint server`` end to end: pytest-lsp starts the real server over stdio and speaks LSP
to it as an editor does (VS Code's client capabilities: UTF-16 positions, inlay hints, code
actions with diagnostics in their context).

Unit tests of the server's pure helpers (``noqa_edit``, ``innermost``, the code action built
from a finding's ``fix``) are at the end; they need no client.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (pip install '.[test]')")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from test_contracts import SMALL_CNN  # noqa: E402 - the model whose contract hover shows

from shape_lint import server as srv  # noqa: E402

from lsp_buffers import BUGGY, CALL, FC2  # noqa: E402

SERVER = [sys.executable, "-m", "shape_lint.cli", "server"]



@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        )
    )
    yield
    if not getattr(lsp_client, "exited", False):  # a test that ended the server itself
        await lsp_client.shutdown_session()


async def open_doc(client: LanguageClient, name: str, text: str, *, write: bool = True) -> str:
    path = client.root / name  # type: ignore[attr-defined]
    if write:
        path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await wait_diagnostics(client, uri)
    return uri


async def wait_diagnostics(client: LanguageClient, uri: str, timeout: float = 30.0) -> list[types.Diagnostic]:
    async def until() -> None:
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                return

    await asyncio.wait_for(until(), timeout)
    return list(client.diagnostics[uri])


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.asyncio
async def test_diagnostic_with_code_docs_link_and_related_layers(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    (d,) = client.diagnostics[uri]
    assert d.code == "SHP101"
    assert d.source == "shape-lint"
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.range.start == types.Position(line=CALL, character=15)
    assert "fc2 (line 9)" in d.message and "120 != 80" in d.message
    from shape_lint.output import rule_url

    url = rule_url("SHP101")  # the rule's page (test_rule_docs.py); none from an installed package
    assert (d.code_description.href if d.code_description else None) == url
    related = {(r.location.range.start.line, r.message) for r in d.related_information or []}
    assert (7, "120 from out_features of fc1 (line 8)") in related
    assert any(line == FC2 and msg.startswith("fc2 (line 9)") for line, msg in related)
    assert all(r.location.uri == uri for r in d.related_information or [])


MODEL_PY = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 120)
        self.fc2 = nn.Linear(120, 84)

    def forward(self, x):
        return self.fc2(self.fc1(x))
"""

TRAIN_PY = """\
import torch
import torch.nn as nn
from model import Net

model = Net()
head = nn.Linear(80, 10)
y = head(model(torch.randn(4, 16)))
"""


@pytest.mark.asyncio
async def test_related_information_points_into_another_project_file(client: LanguageClient):
    """`84 from out_features of fc2 (model.py:8)`: the related place is in model.py, which
    the editor has not opened (read from disk), at the span of `nn.Linear(120, 84)`."""
    model = client.root / "model.py"  # type: ignore[attr-defined]
    model.write_text(MODEL_PY)
    uri = await open_doc(client, "train.py", TRAIN_PY)
    (d,) = client.diagnostics[uri]
    assert d.code == "SHP101" and "84 != 80" in d.message
    places = {(r.location.uri, r.location.range.start.line, r.location.range.start.character, r.message)
              for r in d.related_information or []}
    assert (model.as_uri(), 7, 19, "84 from out_features of fc2 (model.py:8)") in places
    assert (uri, 5, 7, "head (line 6) expects in_features=80") in places


@pytest.mark.asyncio
async def test_unsaved_edits_are_analysed_and_clear_the_diagnostic(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    assert [d.code for d in client.diagnostics[uri]] == ["SHP101"]
    change(client, uri, 2, BUGGY.replace("nn.Linear(80, 84)", "nn.Linear(120, 84)"))
    assert await wait_diagnostics(client, uri) == []
    # the file on disk is unchanged: the buffer is what was analysed
    assert "nn.Linear(80, 84)" in Path(client.root / "net.py").read_text()  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_settings_and_noqa_are_honoured(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n\n[tool.shape-lint]\nignore = ['SHP101']\n")
    uri = await open_doc(client, "ignored.py", BUGGY)
    assert list(client.diagnostics[uri]) == []
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    uri = await open_doc(client, "noqa.py", BUGGY.replace("return self.fc2(h)", "return self.fc2(h)  # noqa: SHP101"))
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_a_training_loop_pattern_is_published_as_a_warning(client: LanguageClient):
    # SHP301 (gradients never zeroed) runs and trains the wrong thing: a warning, where torch's
    # shape errors are errors
    loop = (
        "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor step in range(10):\n"
        "    x = torch.randn(8, 4)\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
    )
    uri = await open_doc(client, "loop.py", loop)
    (d,) = client.diagnostics[uri]
    assert d.code == "SHP301"
    assert d.severity == types.DiagnosticSeverity.Warning
    assert d.range.start.line == 8


@pytest.mark.asyncio
async def test_a_budget_cut_is_published_as_information(client: LanguageClient):
    # SHP002 is not selected by default, and the editor still says the buffer was only partly
    # analysed; the same cut as the CLI's (the budget counts steps, not time)
    root: Path = client.root  # type: ignore[attr-defined]
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n\n[tool.shape-lint]\nmax-steps = 40\n")
    try:
        uri = await open_doc(client, "cut.py", BUGGY)
        diags = list(client.diagnostics[uri])
        assert [d.code for d in diags] == ["SHP002"]
        assert diags[0].severity == types.DiagnosticSeverity.Information
        assert diags[0].message.startswith("analysis incomplete: the step budget (40 interpreter steps per file)")
    finally:
        (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")


@pytest.mark.asyncio
async def test_a_path_budget_cut_is_published_as_information(client: LanguageClient):
    # two paths that cannot be joined (one runs with autograd off) exceed a path budget of 1
    root: Path = client.root  # type: ignore[attr-defined]
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n\n[tool.shape-lint]\nmax-paths = 1\n")
    forked = "import sys\n\nimport torch\n\nif len(sys.argv) > 1:\n    torch.set_grad_enabled(False)\nz = torch.randn(3, 4) @ torch.randn(5, 6)\n"
    try:
        uri = await open_doc(client, "forked.py", forked)
        diags = list(client.diagnostics[uri])
        assert [d.code for d in diags] == ["SHP002"]
        assert diags[0].severity == types.DiagnosticSeverity.Information
        assert diags[0].message.startswith("analysis incomplete: more than 1 path was live at once (the path budget) at line 5")
    finally:
        (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")


CNN = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.pool(self.conv(x))
        flat = torch.flatten(x, 1)
        return flat


out = Net()(torch.randn(4, 3, 16, 16))
"""


@pytest.mark.asyncio
async def test_hover_shows_the_whole_origin_chain(client: LanguageClient):
    """A flattened size's hover tells each step: the product, then each factor's own chain
    back to the literal input size."""
    uri = await open_doc(client, "cnn.py", CNN)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=12, character=9))
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    chain = "\n".join([
        "  - 392 = 8·7·7 from pool (line 9), flattened at line 13",
        "    - 8 from out_channels of conv (line 8)",
        "    - 7 from pool (line 9) at line 12",
        "      - 14 from conv (line 8) at line 12",
        "        - 16 from torch.randn at line 17",
    ])
    assert "- `[4, 392] float32 cpu`\n  - 4 from torch.randn at line 17\n" + chain in text, text


@pytest.mark.asyncio
async def test_hover_on_a_class_shows_its_input_contract(client: LanguageClient):
    """Hover on a module class's name: what its forward accepts, with the line of each
    condition and an example (``summary --model``'s contract)."""
    uri = await open_doc(client, "small_cnn.py", SMALL_CNN)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=8))
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert text.startswith("`SmallCNN`'s forward (its input contract):\ninput rank 4:\n```text\nAccepts: x: [N, 1, H, W] with\n"), text
    assert "  16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304 (line 15)\n  e.g. [2, 1, 28, 28]\n```" in text, text
    assert hover.range.start == types.Position(line=5, character=6) and hover.range.end == types.Position(line=5, character=14)
    # on `nn.Module` of the same line, and on a line that defines none: no contract
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=20))
    )
    assert hover is None or "input contract" not in hover.contents.value  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_hover_shows_shape_dtype_device_and_origin(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    # on `h` of `h = self.fc1(x)` (line 12)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=11, character=8))
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    # each reading, then where each of its sizes came from, nested under it
    assert "- `[4, 120] float32 cpu`\n  - 4 from torch.randn at line 17\n  - 120 from out_features of fc1 (line 8)" in text, text
    assert "[*, 120]" in text  # the forward entry, with an input of unknown shape: a second path
    # on the expression `torch.randn(4, 16)`
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=16, character=12))
    )
    assert hover is not None and "[4, 16] float32 cpu" in hover.contents.value  # type: ignore[union-attr]
    # on a line holding no tensor
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=3))
    )
    assert hover is None


@pytest.mark.asyncio
async def test_inlay_hints_after_assignments_and_the_setting_to_turn_them_off(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    params = types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=18, character=0)),
    )
    hints = await client.text_document_inlay_hint_async(params)
    got = {(h.position.line, h.position.character, h.label) for h in hints or []}
    assert (16, 1, ": [4, 16]") in got  # x = torch.randn(4, 16)
    assert (11, 9, ": [4, 120] +1") in got  # h = self.fc1(x): the concrete reading; the hover has both
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"shape-lint": {"inlayHints": False}}))
    assert list(await client.text_document_inlay_hint_async(params) or []) == []


@pytest.mark.asyncio
async def test_code_action_adds_noqa_and_extends_an_existing_list(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY.replace("return self.fc2(h)", "return self.fc2(h)  # noqa: E501"))
    (d,) = client.diagnostics[uri]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    titles = [a.title for a in actions or [] if isinstance(a, types.CodeAction)]
    assert "Add `# noqa: SHP101`" in titles
    (noqa,) = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.title.startswith("Add `# noqa")]
    (edit,) = noqa.edit.changes[uri]  # type: ignore[union-attr,index]
    line = BUGGY.splitlines()[CALL] + "  # noqa: E501"
    new = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    assert new == "        return self.fc2(h)  # noqa: E501, SHP101"
    # applying it silences the finding
    text = BUGGY.replace("return self.fc2(h)", "return self.fc2(h)  # noqa: E501, SHP101")
    change(client, uri, 2, text)
    assert await wait_diagnostics(client, uri) == []


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (ASCII text: UTF-16 units are code points) as a client does."""
    lines = text.splitlines(keepends=True)

    def offset(p: types.Position) -> int:
        return sum(len(line) for line in lines[: p.line]) + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


@pytest.mark.asyncio
async def test_quick_fix_from_the_core_clears_the_diagnostic(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    (d,) = client.diagnostics[uri]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=d.range, context=types.CodeActionContext(diagnostics=[d])
        )
    )
    preferred = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.is_preferred]
    (fix,) = preferred
    assert fix.title == "use nn.Linear(120, 84)"
    assert fix.kind == types.CodeActionKind.QuickFix
    fixed = apply_edits(BUGGY, list(fix.edit.changes[uri]))  # type: ignore[union-attr,index]
    assert fixed.splitlines()[FC2] == "        self.fc2 = nn.Linear(120, 84)"
    change(client, uri, 2, fixed)
    assert await wait_diagnostics(client, uri) == []


HOSTILE = [
    "x = " + "(" * 400 + "1" + ")" * 400 + "\n",  # deeper than the parser or the lowering follows
    "import torch\nx = torch.zeros(2, 3)\x00\ny = x @ x\n",  # a NUL byte
    "import torch\nx = torch.randn(4, 16)\ny = x.view(\n",  # a half-typed line
    "def f(:\n\tpass\n" + "if True:\n" * 200,
    "x = '\U0001f600'; import torch; y = torch.zeros(2) @ torch.zeros(3)\n",  # outside the BMP
]


@pytest.mark.asyncio
async def test_hostile_buffers_never_kill_the_server(client: LanguageClient):
    uri = await open_doc(client, "hostile.py", "", write=True)
    for version, text in enumerate(HOSTILE, start=2):
        change(client, uri, version, text)
        diags = await wait_diagnostics(client, uri)
        assert all(d.code != "SHP001" for d in diags), (text[:40], diags)
        await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=2))
        )
    # still serving: a real finding after all of it
    change(client, uri, 99, BUGGY)
    assert [d.code for d in await wait_diagnostics(client, uri)] == ["SHP101"]


#: 20,001 syntax errors on one line of 140,000 characters: the positions of the errors were
#: converted by counting the line's prefix for each (O(N * L)): 5,000 took 15 s to publish,
#: 20,000 never published and held up `shutdown`.
MANY_ERRORS = "x = (; " * 20_000 + "\n"
#: the bound of issue 29: publishing them end to end (server and pytest-lsp's client) took 0.8 to 1.4 s
#: on a shared 2-core machine (load 3.6); the quadratic conversion would take minutes
MANY_ERRORS_S = 2.0


@pytest.mark.asyncio
async def test_twenty_thousand_syntax_errors_publish_at_once_and_never_delay_exit(client: LanguageClient):
    uri = await open_doc(client, "many.py", BUGGY)
    assert [d.code for d in client.diagnostics[uri]] == ["SHP101"]
    t0 = time.perf_counter()
    change(client, uri, 2, MANY_ERRORS)
    diags = await wait_diagnostics(client, uri)
    elapsed = time.perf_counter() - t0
    assert len(diags) == 20_001 and all(d.message.startswith("SyntaxError: ") for d in diags)
    assert elapsed < MANY_ERRORS_S, f"{len(diags)} syntax errors took {elapsed:.1f} s to publish"
    # each `(` lacks its expression at the next `;`; the last error is at the end of the text
    assert [d.range.start for d in diags[:-1]] == [types.Position(line=0, character=i) for i in range(5, len(MANY_ERRORS), 7)]
    assert diags[-1].range.start == types.Position(line=1, character=0)
    # the original text's diagnostics come back
    change(client, uri, 3, BUGGY)
    assert [d.code for d in await wait_diagnostics(client, uri)] == ["SHP101"]
    # shutdown is answered, and exit ends the process with status 0, while the hostile buffer
    # is still being analysed
    change(client, uri, 4, MANY_ERRORS)
    await asyncio.sleep(0.05)
    t0 = time.perf_counter()
    await asyncio.wait_for(client.shutdown_async(None), 1.0)
    client.exit(None)
    client.exited = True  # type: ignore[attr-defined]
    process = client._server  # the server's process, as pytest-lsp started it
    assert process is not None
    assert await asyncio.wait_for(process.wait(), 1.0) == 0
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.asyncio
async def test_a_half_typed_line_keeps_the_last_shapes(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    change(client, uri, 2, BUGGY + "z = x.view(\n")
    (d,) = await wait_diagnostics(client, uri)
    assert d.code is None and d.message.startswith("SyntaxError: ") and d.range.start.line >= 18
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=16, character=0))
    )
    assert hover is not None and "[4, 16] float32 cpu" in hover.contents.value  # type: ignore[union-attr]
    # a buffer that parses and has no tensors replaces it
    change(client, uri, 3, "a = 1\n")
    assert await wait_diagnostics(client, uri) == []
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0))
    )
    assert hover is None


@pytest.mark.asyncio
async def test_an_untitled_buffer_is_analysed(client: LanguageClient):
    uri = "untitled:Untitled-1"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BUGGY))
    )
    assert [d.code for d in await wait_diagnostics(client, uri)] == ["SHP101"]


@pytest.mark.asyncio
async def test_typing_fast_is_debounced_to_the_last_version(client: LanguageClient):
    uri = await open_doc(client, "net.py", BUGGY)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"shape-lint": {"debounceMs": 200}}))
    fixed = BUGGY.replace("nn.Linear(80, 84)", "nn.Linear(120, 84)")
    for version in range(2, 12):  # ten keystrokes within the debounce
        change(client, uri, version, fixed if version == 11 else BUGGY.replace("80", str(80 + version)))
    assert await wait_diagnostics(client, uri) == []  # the first publication is the last version's


# ------------------------------------------------------------------------------------------------
# Pure helpers


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("y = f(x)", "y = f(x)  # noqa: SHP101"),
        ("y = f(x)   ", "y = f(x)  # noqa: SHP101"),
        ("y = f(x)  # noqa: E501", "y = f(x)  # noqa: E501, SHP101"),
        ("y = f(x)  # noqa:E501,W291", "y = f(x)  # noqa:E501,W291, SHP101"),
        ("y = f(x)  # noqa: E501  # why", "y = f(x)  # noqa: E501, SHP101  # why"),
        ("y = f(x)  # a comment", "y = f(x)  # a comment  # noqa: SHP101"),
    ],
)
def test_noqa_edit(line: str, expected: str) -> None:
    edit = srv.noqa_edit(line, "SHP101")
    assert edit is not None
    start, end, text = edit
    new = line[:start] + text + line[end:]
    assert new == expected
    assert srv.noqa_edit(new, "SHP101") is None  # and it silences the finding


def test_noqa_edit_leaves_a_silenced_line() -> None:
    assert srv.noqa_edit("y = f(x)  # noqa", "SHP101") is None
    assert srv.noqa_edit("y = f(x)  # noqa: SHP1", "SHP101") is None


@pytest.mark.parametrize(
    ("shapes", "label"),
    [
        (["[4, 120]"], ": [4, 120]"),
        # the most concrete reading; the others are counted (the hover lists them)
        (["[*, 120]", "[4, 120]", "[B, 120]"], ": [4, 120] +2"),
        (["[N, 64*((H - 10) // 4 + 1)*((W - 10) // 4 + 1)]", "[16, 1600]"], ": [16, 1600] +1"),
        # too long: shortened to 40 characters, the bracket kept
        (["[N, 64*((H - 10) // 4 + 1)*((W - 10) // 4 + 1), 3]"], ": [N, 64*((H - 10) // 4 + 1)*((W - 10)…]"),
        (["[N, 64*((H - 10) // 4 + 1)*((W - 10) // 4 + 1)]", "[N, ?*((H - 10) // 4 + 1)*((W - 10) // 4 + 1)]"],
         ": [N, 64*((H - 10) // 4 + 1)*((W - …] +1"),
    ],
)
def test_inlay_hint_is_one_short_reading(shapes: list[str], label: str) -> None:
    got = srv.hint_label({"views": [{"shape": s} for s in shapes]})
    assert got == label and len(got) <= srv.HINT_MAX_CHARS


def test_innermost_span_wins() -> None:
    shapes = [
        {"row": 3, "col": 1, "end_row": 3, "end_col": 30, "name": None, "views": [{"shape": "[2]"}]},
        {"row": 3, "col": 5, "end_row": 3, "end_col": 10, "name": None, "views": [{"shape": "[3]"}]},
        {"row": 3, "col": 6, "end_row": 3, "end_col": 8, "name": None, "views": []},
    ]
    assert srv.innermost(shapes, 3, 7)["views"] == [{"shape": "[3]"}]  # type: ignore[index]
    assert srv.innermost(shapes, 3, 20)["views"] == [{"shape": "[2]"}]  # type: ignore[index]
    assert srv.innermost(shapes, 4, 1) is None


def test_fix_action_from_a_findings_fix() -> None:
    """The quick fix is built from the core finding's ``fix`` key (summary14's interface)."""
    fix = {
        "message": "use nn.Linear(120, 84)",
        "applicability": "unsafe",
        "edits": [{"content": "120", "row": 9, "col": 30, "end_row": 9, "end_col": 32}],
    }

    def to_range(row: int, col: int, end_row: int, end_col: int) -> types.Range:
        return types.Range(start=types.Position(line=row - 1, character=col - 1), end=types.Position(line=end_row - 1, character=end_col - 1))

    action = srv.fix_action("file:///net.py", "SHP101", fix, to_range, None)
    assert action is not None and action.is_preferred and action.kind == types.CodeActionKind.QuickFix
    assert action.title == "use nn.Linear(120, 84)"
    (edit,) = action.edit.changes["file:///net.py"]  # type: ignore[union-attr,index]
    line = BUGGY.splitlines()[FC2]
    assert line[edit.range.start.character : edit.range.end.character] == "80"
    new = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    assert new == "        self.fc2 = nn.Linear(120, 84)"
    assert srv.fix_action("file:///net.py", "SHP101", None, to_range, None) is None


@pytest.mark.parametrize("encoding", [types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32])
def test_client_positions_agree_with_pygls(encoding: str) -> None:
    """``ClientPositions`` (a binary search per position) gives what pygls's codec gives (a count
    of the line's prefix per position), in each encoding, past line ends and past the text."""
    from pygls.workspace.position_codec import PositionCodec

    codec = PositionCodec(encoding)
    rng = random.Random(29)
    alphabet = ["a", " ", "\u00e9", "\u20ac", "\uffff", "\U0001f600", "\U00010000", "\x00", "\n", "\r\n"]
    for _ in range(200):
        lines = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))).splitlines(keepends=True)
        positions = srv.ClientPositions(lines, encoding)
        for row in range(0, len(lines) + 3):
            for col in range(0, 34):
                want = codec.position_to_client_units(lines, types.Position(line=max(row - 1, 0), character=max(col - 1, 0)))
                assert positions.position(row, col) == want, (lines, row, col)
