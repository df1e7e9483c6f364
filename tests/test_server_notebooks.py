"""``shape-lint server`` with notebook documents (LSP 3.17 ``notebookDocument/*``): the code
cells are analysed as one program, and each diagnostic, hover, inlay hint and code action is on
the cell it belongs to. pytest-lsp starts the real server, as in ``test_server.py``."""

from __future__ import annotations

import asyncio

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (pip install '.[test]')")

from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

# the server and the workspace every server test starts from
from test_server import client  # noqa: E402, F401 - the fixture

IMPORTS = "%matplotlib inline\nimport torch\nimport torch.nn as nn\n"
LAYERS = "fc1 = nn.Linear(16, 120)\nfc2 = nn.Linear(80, 10)\n"
CALL = "!nvidia-smi\nx = torch.randn(4, 16)\nh = fc1(x)\ny = fc2(h)\n"


def cell_uri(client: LanguageClient, k: int) -> str:
    return f"vscode-notebook-cell:{client.root}/nb.ipynb#cell{k}"  # type: ignore[attr-defined]


class Published:
    """Waits for the next diagnostics published to a cell. A notebook's cells are published
    one after another at once, faster than a client's wait for the next notification can be
    set up again, so this watches what the client stored (a new list at each publication)."""

    def __init__(self, client: LanguageClient, uri: str) -> None:
        self.client, self.uri = client, uri
        self.before = client.diagnostics.get(uri)

    async def wait(self, timeout: float = 30.0) -> list[types.Diagnostic]:
        deadline = asyncio.get_running_loop().time() + timeout
        while self.client.diagnostics.get(self.uri) is self.before:
            assert asyncio.get_running_loop().time() < deadline, f"nothing published to {self.uri}"
            await asyncio.sleep(0.01)
        return list(self.client.diagnostics[self.uri])


async def open_notebook(client: LanguageClient, texts: list[str]) -> tuple[str, list[str]]:
    """A notebook of a markdown cell then a code cell per text; its URI and its cells' URIs
    (the markdown one first). Waits for the last cell's diagnostics."""
    nb = (client.root / "nb.ipynb").as_uri()  # type: ignore[attr-defined]
    uris = [cell_uri(client, k) for k in range(len(texts) + 1)]
    cells = [types.NotebookCell(kind=types.NotebookCellKind.Markup, document=uris[0])]
    cells += [types.NotebookCell(kind=types.NotebookCellKind.Code, document=u) for u in uris[1:]]
    docs = [types.TextDocumentItem(uri=uris[0], language_id="markdown", version=1, text="# A model\n")]
    docs += [types.TextDocumentItem(uri=u, language_id="python", version=1, text=t) for u, t in zip(uris[1:], texts)]
    published = Published(client, uris[-1])
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=nb, notebook_type="jupyter-notebook", version=1, cells=cells),
            cell_text_documents=docs,
        )
    )
    await published.wait()
    return nb, uris


def edit_cell(client: LanguageClient, nb: str, version: int, uri: str, text: str) -> None:
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb, version=version),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            ),
        )
    )


@pytest.mark.asyncio
async def test_the_diagnostic_is_on_its_cell_with_related_places_in_other_cells(client: LanguageClient):
    _, uris = await open_notebook(client, [IMPORTS, LAYERS, CALL])
    assert list(client.diagnostics.get(uris[1], [])) == [] and list(client.diagnostics.get(uris[2], [])) == []
    (d,) = client.diagnostics[uris[3]]
    assert d.code == "SHP101"
    assert d.range.start == types.Position(line=3, character=4)  # `fc2(h)`, line 4 of the third code cell
    assert "fc2 (cell 2, line 2)" in d.message and "120 != 80" in d.message
    related = {(r.location.uri, r.location.range.start.line, r.message) for r in d.related_information or []}
    assert (uris[2], 0, "120 from out_features of fc1 (cell 2, line 1)") in related


@pytest.mark.asyncio
async def test_hover_and_inlay_hints_in_a_cell(client: LanguageClient):
    _, uris = await open_notebook(client, [IMPORTS, LAYERS, CALL])
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uris[3]), position=types.Position(line=2, character=0))
    )
    assert hover is not None and "[4, 120] float32 cpu" in hover.contents.value  # type: ignore[union-attr]
    assert hover.range is not None and hover.range.start.line == 2
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uris[3]),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=4, character=0)),
        )
    )
    got = {(h.position.line, h.label) for h in hints or []}
    assert (1, ": [4, 16]") in got and (2, ": [4, 120]") in got
    # the layer cell holds no tensor: no hint there
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=2, character=0)),
        )
    )
    assert not hints


@pytest.mark.asyncio
async def test_editing_a_cell_and_noqa_in_a_cell(client: LanguageClient):
    nb, uris = await open_notebook(client, [IMPORTS, LAYERS, CALL])
    (d,) = client.diagnostics[uris[3]]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uris[3]), range=d.range,
                               context=types.CodeActionContext(diagnostics=[d]))
    )
    (noqa,) = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.title == "Add `# noqa: SHP101`"]
    (edit,) = noqa.edit.changes[uris[3]]  # type: ignore[union-attr,index]
    assert edit.range.start.line == 3 and edit.new_text == "  # noqa: SHP101"
    published = Published(client, uris[3])
    edit_cell(client, nb, 2, uris[3], CALL.replace("y = fc2(h)", "y = fc2(h)  # noqa: SHP101"))
    assert await published.wait() == []
    # fixing the layer in its own cell clears it too
    published = Published(client, uris[3])
    edit_cell(client, nb, 3, uris[3], CALL)
    assert [x.code for x in await published.wait()] == ["SHP101"]
    published = Published(client, uris[3])
    edit_cell(client, nb, 4, uris[2], LAYERS.replace("Linear(80, 10)", "Linear(120, 10)"))
    assert await published.wait() == []


@pytest.mark.asyncio
async def test_closing_the_notebook_clears_its_cells(client: LanguageClient):
    nb, uris = await open_notebook(client, [IMPORTS, LAYERS, CALL])
    assert client.diagnostics[uris[3]]
    published = Published(client, uris[3])
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=nb),
            cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in uris],
        )
    )
    assert await published.wait() == []
