"""``shape-lint server``: a language server over stdio (pygls), started by editors like ``ruff server``.

One analysis per edit. After an open, or a change and a short debounce, the buffer's text goes
through ``solver.analyze``: ONE run of the Rust core (``_core.analyze_source``) gives the
findings (Z3 confirms the undecided checks, as for the CLI) and the tensors of every span.
Then ``cli.check_text`` applies the ``[tool.shape-lint]`` settings found above the file
(selection, per-file-ignores, ``# noqa``), exactly as ``shape-lint check`` does. From that one
result the server answers:

- **diagnostics**: the SHP code, a ``codeDescription`` link (the rule URL of the JSON and SARIF
  outputs), and ``relatedInformation`` for each place of the project that the finding's trace
  names (``120 from out_features of fc1 (line 8)`` points at line 8 of the buffer,
  ``model.py:14`` at line 14 of that file). The core gives those places as spans
  (``Finding.related``, with a path for another file); nothing is parsed from text here;
- **hover**: the innermost span under the cursor that held a tensor, with its shape, dtype and
  device on each path and the origin of each dimension that has one;
- while the buffer does not parse (a half-typed line), the diagnostics are the parser's errors
  (as the CLI reports them) and hover and inlay hints keep the last analysis that parsed;
- **notebooks** (LSP 3.17 notebook documents): the notebook's Python code cells are analysed
  together as one program (``notebook.of_cells``: IPython syntax rewritten as the CLI does), on
  each change of any cell; the result is the notebook's, and each diagnostic, related place,
  hover, inlay hint and code action is moved to the cell it is on (``Result.cells``: each cell's
  URI and the lines before it in the analysed text);
- **inlay hints** after each assignment target (``h: [4, 120]``), unless the ``inlayHints``
  setting is false;
- **code actions**: the finding's own fix when the core offers one (``fix``: one edit that makes
  the code consistent; unsafe in ruff's sense, so a quick fix the user picks, never applied on
  save), and "add ``# noqa: SHPxxx``" (extending an existing ``# noqa:`` list).

Settings (``initializationOptions``, or ``workspace/didChangeConfiguration`` with
``{"shape-lint": {...}}``): ``inlayHints`` (bool, default true) and ``debounceMs`` (int, default
25). Everything else comes from the project's configuration files, as for the CLI.

Buffers whose text equals the file on disk share the project's results cache
(``.shape_lint_cache``) with the CLI and flake8; edited, unsaved text is analysed without it (a
cache entry per keystroke would only fill the folder). A save retakes the project stamps, so
files importing the saved one are analysed against its new text.

A buffer that breaks the analysis (the core's panic guard gives SHP001) or this module (any
exception: an SHP001 diagnostic naming it) never stops the server. The analysis and the LSP
diagnostics built from it run on one worker thread; the protocol thread only sends them, so
requests and ``shutdown`` are answered meanwhile. Positions are converted to the client's
encoding by ``ClientPositions`` (each line's wide characters found once, then a binary search):
the cost is linear in the diagnostics and the text, where converting each position by counting
its line's prefix was quadratic for many errors on one long line (5,000 syntax errors took 15 s
to publish, 20,000 never did and held up ``shutdown``). After ``shutdown`` nothing more is
analysed or published, and ``exit`` ends the process (``main``) without waiting more than
``EXIT_GRACE_S`` for an analysis still in the core.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from . import cli, notebook
from . import config as cfg
from .output import level, rule_url

__all__ = ["ClientPositions", "ShapeLintServer", "fix_action", "main", "noqa_edit"]

DEFAULT_DEBOUNCE_MS = 25
#: The longest inlay hint, in characters: one reading, shortened; the hover has them all.
HINT_MAX_CHARS = 40
SOURCE = "shape-lint"


@dataclass
class Options:
    inlay_hints: bool = True
    debounce_ms: int = DEFAULT_DEBOUNCE_MS

    def update(self, raw: Any) -> None:
        if not isinstance(raw, Mapping):
            return
        raw = raw.get("shape-lint", raw.get("shape_lint", raw))
        if not isinstance(raw, Mapping):
            return
        hints = raw.get("inlayHints", raw.get("inlay_hints"))
        if isinstance(hints, bool):
            self.inlay_hints = hints
        debounce = raw.get("debounceMs", raw.get("debounce_ms"))
        if isinstance(debounce, int) and not isinstance(debounce, bool) and debounce >= 0:
            self.debounce_ms = debounce


@dataclass
class Result:
    """The analysis of one version of one document."""

    version: int | None
    lines: list[str]
    #: (diagnostic as the CLI filters it, the core's finding dict)
    findings: list[tuple[cli.Diagnostic, dict[str, Any]]] = field(default_factory=list)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    #: the text the shapes' positions refer to (an older one while the buffer does not parse)
    shape_lines: list[str] = field(default_factory=list)
    #: a notebook's: each code cell's URI and the lines before it in the analysed text (the
    #: cells in order, as one program; empty for a text document)
    cells: list[tuple[str, int]] = field(default_factory=list)
    #: ``cells`` of ``shape_lines``
    shape_cells: list[tuple[str, int]] = field(default_factory=list)
    #: the ``docs-url`` setting of the document's project (``output.docs_base``)
    docs_url: str | None = None


def cell_at(cells: Sequence[tuple[str, int]], line: int) -> tuple[str, int] | None:
    """The cell of ``cells`` holding 0-based ``line`` of the analysed text: (its URI, the lines
    before it)."""
    k = bisect.bisect_right([first for _, first in cells], line) - 1
    return cells[k] if k >= 0 else None


def shifted(r: types.Range, rows: int) -> types.Range:
    """A range ``rows`` lines up (from the analysed text to a cell's)."""
    return types.Range(
        start=types.Position(line=r.start.line - rows, character=r.start.character),
        end=types.Position(line=r.end.line - rows, character=r.end.character),
    )


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = unquote(parsed.path)
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]
    return path


# ------------------------------------------------------------------------------------------------
# Analysis (runs on the worker thread)


def _known_rules() -> list[dict[str, Any]]:
    return cli._rules()


def analyze(
    source: str, path: str, rules: Sequence[Mapping[str, Any]], nb: notebook.Notebook | None = None,
) -> tuple[list[tuple[cli.Diagnostic, dict[str, Any]]], list[dict[str, Any]], str | None, str | None]:
    """(kept findings, shapes, a configuration problem to show, the ``docs-url`` setting) for one
    buffer; ``nb``: the notebook whose code cells ``source`` is (its findings name cells, and
    have no fix: the notebook is never edited through one)."""
    from . import solver

    known = [str(r["code"]) for r in rules]
    problem = None
    try:
        settings = cfg.load_settings(cwd=Path(path).parent if os.path.isabs(path) else None, known_codes=known)
    except cfg.ConfigError as exc:
        problem = f"shape-lint: configuration ignored: {exc}"
        settings = cfg.load_settings(isolated=True, known_codes=known)
    if cli._force_excluded(Path(path), settings):
        return [], [], problem, settings.docs_url
    selection = cfg.RuleSelection.from_settings(settings, rules=rules)
    options = settings.core_options()
    on_disk = False
    if options.get("cache", True):
        try:
            on_disk = cli.decode_source(Path(path).read_bytes()) == source
        except (OSError, cli.UndecodableError):
            on_disk = False
    options["cache"] = on_disk
    try:
        analysis = solver.analyze(source, path, options)
        raw = [dict(f) for f in analysis["findings"]]
        shapes = list(analysis["shapes"])
    except Exception as exc:  # an analyser bug: say so in the buffer, keep serving
        raw = [cli._internal_error(f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__)]
        shapes = []
    notices: list[cli.Diagnostic] = []
    diagnostics = cli.check_text(
        source, display=path, abspath=path, settings=settings, selection=selection,
        ignore_noqa=False, findings=raw, notices=notices,
    )
    # the analysis-incomplete notice (SHP002) is published whether or not it is selected, as
    # information: the buffer was only partly checked
    diagnostics += notices
    by_key = {(str(f["code"]), int(f["row"]), int(f["col"])): f for f in raw}
    kept = [(d, by_key.get((d.code, d.row, d.col), {})) for d in diagnostics]
    if nb is not None:
        kept = [
            (
                notebook.relabelled(d, nb),
                {**f, "fix": None, "related": [{**r, "message": notebook.relabel(str(r["message"]), nb)} for r in f.get("related") or []]},
            )
            for d, f in kept
        ]
    return kept, shapes, problem, settings.docs_url


# ------------------------------------------------------------------------------------------------
# Pure helpers (unit-tested without a client)


def noqa_edit(line: str, code: str) -> tuple[int, int, str] | None:
    """The edit adding ``code`` to the ``# noqa`` of ``line`` (without its line end):
    ``(start, end, new text)`` in code points, or ``None`` when the line already silences it.
    An existing ``# noqa: A, B`` list gets ``, code``; a line without one gets ``  # noqa: code``."""
    m = cli.NOQA_INLINE_REGEXP.search(line)
    if m is not None:
        codes = m.group("codes")
        if codes is None or cli.is_inline_ignored(code, m.group(0)):
            return None
        end = m.start("codes") + len(codes.rstrip(", \t"))
        return end, end, f", {code}"
    stripped = len(line.rstrip())
    return stripped, len(line), f"  # noqa: {code}"


def innermost(shapes: Sequence[Mapping[str, Any]], row: int, col: int) -> Mapping[str, Any] | None:
    """The smallest recorded span containing (row, col) (1-based; the end is inclusive so the
    cursor just after a name still finds it)."""
    best = None
    best_size: tuple[int, int] | None = None
    for s in shapes:
        start, end = (s["row"], s["col"]), (s["end_row"], s["end_col"])
        if not (start <= (row, col) <= end) or not s.get("views"):
            continue
        size = (s["end_row"] - s["row"], s["end_col"] - s["col"] if s["end_row"] == s["row"] else 10**6)
        if best_size is None or size < best_size:
            best, best_size = s, size
    return best


def view_text(v: Mapping[str, Any]) -> str:
    """``[4, 120] float32 cpu``."""
    parts = [str(v["shape"])]
    parts += [str(v[k]) for k in ("dtype", "device") if v.get(k)]
    return " ".join(parts)


def origin_items(v: Mapping[str, Any], indent: str = "") -> list[str]:
    """The origin chains of a reading's sizes as nested Markdown list items: each line of the
    core's ``origins`` is indented two spaces per step back, e.g. ``2304 = 64·6·6 from pool
    (line 9), flattened at line 16``, then ``  64 from out_channels of conv2 (line 8)``."""
    items = []
    for o in v.get("origins") or ():
        text = str(o)
        depth = (len(text) - len(text.lstrip(" "))) // 2
        items.append(f"{indent}{'  ' * depth}- {text.strip()}")
    return items


def hover_markdown(span: Mapping[str, Any], text: str) -> str:
    """The shape of every reading of a span, each with where its sizes came from (the whole
    chain, one list item per step)."""
    views = list(span["views"])
    title = f"`{span['name'] or text}`"
    if len(views) == 1:
        return "\n".join([f"{title}: `{view_text(views[0])}`", *origin_items(views[0])])
    lines = [f"{title}, on {len(views)} paths:"]
    for v in views:
        lines.append(f"- `{view_text(v)}`")
        lines += origin_items(v, "  ")
    return "\n".join(lines)


def hint_label(span: Mapping[str, Any]) -> str:
    """One reading of a span's shapes, at most ``HINT_MAX_CHARS`` long: the most concrete one
    (fewest sizes that are not numbers; the first of those), ``+N`` when other paths give N more,
    shortened with ``…`` when it is too long. The hover lists every reading with its origins."""
    shapes = list(dict.fromkeys(str(v["shape"]) for v in span["views"]))

    def vagueness(shape: str) -> int:
        return sum(1 for d in shape.strip("[]").split(",") if not d.strip().isdigit())

    best = min(shapes, key=vagueness)
    more = f" +{len(shapes) - 1}" if len(shapes) > 1 else ""
    label = f": {best}"
    room = HINT_MAX_CHARS - len(more)
    if len(label) > room:
        label = label[: room - 2] + "…" + (label[-1] if label.endswith("]") else "")
    return label + more


def fix_action(
    uri: str,
    code: str,
    fix: Mapping[str, Any] | None,
    to_range: Any,
    diagnostic: types.Diagnostic | None,
) -> types.CodeAction | None:
    """The quick fix of a finding's ``fix`` (``{"message", "applicability", "edits": [{"content",
    "row", "col", "end_row", "end_col"}]}``, 1-based code-point positions): one preferred
    code action; ``to_range(row, col, end_row, end_col)`` converts positions for the client."""
    if not fix or not fix.get("edits"):
        return None
    edits = [
        types.TextEdit(range=to_range(e["row"], e["col"], e["end_row"], e["end_col"]), new_text=str(e["content"]))
        for e in fix["edits"]
    ]
    return types.CodeAction(
        title=str(fix.get("message") or f"Fix {code}"),
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic] if diagnostic else None,
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )


#: The characters that take more than one code unit, per position encoding, and how many more.
_WIDE = {
    types.PositionEncodingKind.Utf8: (re.compile("[^\x00-\x7f]"), lambda c: len(c.encode("utf-8")) - 1),
    types.PositionEncodingKind.Utf16: (re.compile("[\U00010000-\U0010ffff]"), lambda c: 1),
}


class ClientPositions:
    """1-based rows and code-point columns of one text (``lines``, with their line ends, as
    pygls splits a document) as LSP positions in the client's encoding (UTF-16 unless another
    was negotiated).

    The wide characters of a line (beyond the BMP for UTF-16, non-ASCII for UTF-8) are found
    once, by a regular expression, and a column is its code points plus the extra units of the
    wide characters before it (a binary search). N positions on one line of length L cost
    O(L + N log L); pygls's ``position_to_client_units`` counts the line's prefix again for
    every position, O(L) each, so thousands of syntax errors on one long line took O(N * L)
    (5,000 errors: 15 s before this class). Past the last line, a position is the end of the
    text as pygls gives it (``(len(lines), 0)``); a column past a line's end is its end."""

    def __init__(self, lines: Sequence[str], encoding: Any = types.PositionEncodingKind.Utf16) -> None:
        self.lines = lines
        self.encoding = encoding
        self.wide = _WIDE.get(encoding, _WIDE[types.PositionEncodingKind.Utf16]) if encoding != types.PositionEncodingKind.Utf32 else None
        #: per line: (code-point indices of its wide characters, their extra units summed so far)
        self._index: dict[int, tuple[list[int], list[int]] | None] = {}

    def _line_index(self, line_no: int) -> tuple[list[int], list[int]] | None:
        if line_no not in self._index:
            line = self.lines[line_no]
            index = None
            if self.wide is not None and not line.isascii():
                pattern, extra = self.wide
                at: list[int] = []
                total: list[int] = []
                n = 0
                for m in pattern.finditer(line):
                    n += extra(m.group())
                    at.append(m.start())
                    total.append(n)
                index = (at, total) if at else None
            self._index[line_no] = index
        return self._index[line_no]

    def position(self, row: int, col: int) -> types.Position:
        line_no, char = max(row - 1, 0), max(col - 1, 0)
        if line_no >= len(self.lines):
            return types.Position(line=len(self.lines), character=0)
        char = min(char, len(self.lines[line_no]))
        index = self._line_index(line_no)
        if index is not None:
            at, total = index
            k = bisect.bisect_left(at, char)  # the wide characters before the column
            if k:
                char += total[k - 1]
        return types.Position(line=line_no, character=char)

    def range(self, row: int, col: int, end_row: int, end_col: int) -> types.Range:
        return types.Range(start=self.position(row, col), end=self.position(end_row, end_col))


def parses(source: str) -> bool:
    """Whether the core's parser accepts ``source`` (asked only when an analysis found nothing)."""
    from . import _core

    fn = getattr(_core, "syntax_errors", None)
    if fn is None:
        return True
    return not fn(source)


#: The LSP severity of each level (`output.level`).
SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}


def severity(code: str, rules: list[dict[str, Any]]) -> types.DiagnosticSeverity:
    """A finding's severity: its rule's level (``output.level``); a syntax error (no code) is
    an error."""
    return SEVERITIES[level(next((r for r in rules if r.get("code") == code), None))]


# ------------------------------------------------------------------------------------------------
# The server


class ShapeLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            SOURCE, cli._version(), text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            # notebooks (LSP 3.17): their Python code cells, analysed as one program
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])],
                save=True,
            ),
        )
        self.options = Options()
        self.results: dict[str, Result] = {}
        #: the input contracts hover shows for a class, by (text, path, class name): the last few
        self.contracts: dict[tuple[str, str, str], str | None] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        # one analysis at a time: the core is single-threaded per file and the machine shared
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shape-lint-analysis")
        self._rules: list[dict[str, Any]] | None = None
        #: `shutdown` was received: nothing more is analysed or published
        self.stopping = False

    def rules(self) -> list[dict[str, Any]]:
        if self._rules is None:
            self._rules = _known_rules()
        return self._rules

    # -- positions -------------------------------------------------------------------------------

    def _lines(self, uri: str) -> list[str]:
        doc = self.workspace.get_text_document(uri)
        return list(doc.lines)

    def encoding(self, uri: str) -> Any:
        """The position encoding negotiated with the client (every document shares it)."""
        return self.workspace.get_text_document(uri).position_codec.encoding

    def to_client(self, uri: str, lines: Sequence[str], row: int, col: int) -> types.Position:
        """A 1-based row / code-point column as an LSP position in the negotiated encoding (one
        position; many positions of one text go through one ``ClientPositions``)."""
        return ClientPositions(lines, self.encoding(uri)).position(row, col)

    def to_range(self, uri: str, lines: Sequence[str], row: int, col: int, end_row: int, end_col: int) -> types.Range:
        return ClientPositions(lines, self.encoding(uri)).range(row, col, end_row, end_col)

    def from_client(self, uri: str, pos: types.Position) -> tuple[int, int]:
        doc = self.workspace.get_text_document(uri)
        p = doc.position_codec.position_from_client_units(list(doc.lines), types.Position(line=pos.line, character=pos.character))
        return p.line + 1, p.character + 1

    # -- analysis --------------------------------------------------------------------------------

    def schedule(self, uri: str, delay_ms: int) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.pending[uri] = asyncio.ensure_future(self._run(uri, delay_ms))

    def forget(self, uri: str) -> Result | None:
        """A closed document's (or notebook's) pending analysis cancelled, its result dropped
        and returned."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        return self.results.pop(uri, None)

    def stale(self, uri: str, version: int | None) -> bool:
        """Whether an analysis of ``version`` would be published for nothing: the buffer was
        closed or edited since, or the client asked for shutdown (read from the worker thread
        too: a dict lookup and an attribute)."""
        if self.stopping or (uri not in self.results and uri not in self.pending):
            return True
        doc = self.workspace.get_notebook_document(notebook_uri=uri) or self.workspace.text_documents.get(uri)
        return doc is None or doc.version != version

    def notebook_text(self, uri: str) -> tuple[int | None, notebook.Notebook, list[str], list[tuple[str, int]], Any] | None:
        """An open notebook's (version, code cells as a notebook, their lines as the editor has
        them, each cell's URI and the lines before it, the position encoding); ``None`` for a
        text document."""
        nb = self.workspace.get_notebook_document(notebook_uri=uri)
        if nb is None:
            return None
        docs = [self.workspace.get_text_document(c.document) for c in nb.cells if c.kind == types.NotebookCellKind.Code]
        program = notebook.of_cells([d.source for d in docs])
        firsts = program.first_rows()
        lines = [line + "\n" for cell in program.cells for line in cell]
        encoding = docs[0].position_codec.encoding if docs else types.PositionEncodingKind.Utf16
        return nb.version, program, lines, [(d.uri, first - 1) for d, first in zip(docs, firsts)], encoding

    def place(self, uri: str) -> tuple[Result | None, int, int]:
        """Where a document a request names is in what was analysed: (the result it is part
        of, the lines before it in the findings' text, in the shapes' text). A notebook cell is
        part of its notebook's result."""
        nb = self.workspace.get_notebook_document(cell_uri=uri)
        if nb is None:
            return self.results.get(uri), 0, 0
        res = self.results.get(nb.uri)
        if res is None:
            return None, 0, 0
        before = dict(res.cells).get(uri)
        shape_before = dict(res.shape_cells).get(uri)
        if before is None or shape_before is None:
            return None, 0, 0
        return res, before, shape_before

    async def _run(self, uri: str, delay_ms: int) -> None:
        try:
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            if self.stopping:
                return
            cells = self.notebook_text(uri)
            program = None
            if cells is not None:
                version, program, lines, cell_rows, encoding = cells
                source = program.source
            else:
                doc = self.workspace.get_text_document(uri)
                version = doc.version
                source = doc.source.replace("\r\n", "\n").replace("\r", "\n")
                lines = list(doc.lines)
                encoding = doc.position_codec.encoding
                cell_rows = []
            previous = self.results.get(uri)
            rules = self.rules()
            loop = asyncio.get_running_loop()
            try:
                # the analysis and the diagnostics built from it run on the worker thread: the
                # protocol thread only sends them, so `shutdown` and requests answer meanwhile
                done = await loop.run_in_executor(
                    self.executor, self.work, uri, version, source, lines, encoding, previous, rules, program, cell_rows,
                )
            except Exception as exc:  # never let a buffer stop the server
                result = Result(version=version, lines=lines, cells=cell_rows, shape_cells=cell_rows)
                done = result, {c: [] for c, _ in cell_rows} or {uri: []}, f"shape-lint: analysis failed: {type(exc).__name__}: {exc}"
            if done is None or self.stale(uri, version):
                return  # closed, edited (a newer analysis is on its way) or shutting down
            result, published, problem = done
            self.results[uri] = result
            if problem:
                self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=problem))
            for cell, _ in previous.cells if previous is not None else ():
                published.setdefault(cell, [])  # a cell deleted or no longer Python: cleared
            for target, diagnostics in published.items():
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=target, diagnostics=diagnostics, version=version if target == uri else None)
                )
            self.refresh_hints()
        except asyncio.CancelledError:
            pass
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                self.pending.pop(uri, None)

    def work(
        self, uri: str, version: int | None, source: str, lines: list[str], encoding: Any,
        previous: Result | None, rules: list[dict[str, Any]], program: notebook.Notebook | None = None,
        cells: list[tuple[str, int]] | None = None,
    ) -> tuple[Result, dict[str, list[types.Diagnostic]], str | None] | None:
        """On the worker thread: the analysis of one version and its LSP diagnostics by the
        document they are published to (a notebook's: by cell), or ``None`` when the version
        is stale by the time the analysis ends."""
        kept, shapes, problem, docs_url = analyze(source, path=uri_to_path(uri), rules=rules, nb=program)
        if self.stale(uri, version):
            return None
        cells = cells or []
        shape_lines, shape_cells = lines, cells
        if not shapes and previous is not None and previous.shapes and not parses(source):
            # a half-typed line: the parser's errors are the diagnostics (as the CLI
            # reports them); hover and inlay hints keep the last analysis that parsed
            shapes, shape_lines, shape_cells = previous.shapes, previous.shape_lines, previous.shape_cells
        result = Result(version=version, lines=lines, findings=kept, shapes=shapes, shape_lines=shape_lines,
                        cells=cells, shape_cells=shape_cells, docs_url=docs_url)
        diagnostics = self.diagnostics(uri, result, encoding)
        if not cells:
            return result, {uri: diagnostics}, problem
        return result, self.by_cell(uri, cells, len(lines), diagnostics), problem

    @staticmethod
    def by_cell(uri: str, cells: list[tuple[str, int]], n_lines: int, diagnostics: list[types.Diagnostic]) -> dict[str, list[types.Diagnostic]]:
        """A notebook's diagnostics (on the lines of its cells as one text) by cell, each on
        the cell's lines; a related place in the notebook points into its cell."""
        out: dict[str, list[types.Diagnostic]] = {c: [] for c, _ in cells}
        ends = {c: (cells[k + 1][1] if k + 1 < len(cells) else n_lines) for k, (c, _) in enumerate(cells)}

        def local(r: types.Range) -> tuple[str, types.Range]:
            cell, before = cell_at(cells, r.start.line) or cells[0]
            if r.end.line >= ends[cell]:  # ends in a later cell: at the end of its first line
                r = types.Range(start=r.start, end=types.Position(line=r.start.line, character=max(r.start.character, r.end.character)))
            return cell, shifted(r, before)

        for d in diagnostics:
            cell, d.range = local(d.range)
            for info in d.related_information or []:
                if info.location.uri == uri:
                    info.location.uri, info.location.range = local(info.location.range)
            out[cell].append(d)
        return out

    def related_location(self, uri: str, r: Mapping[str, Any], here: ClientPositions, others: dict[str, ClientPositions]) -> types.Location:
        """Where a related place is: in this buffer, or in another file of the project (its
        open buffer's text when the editor has it, else the file on disk, read once per publish)."""
        path = r.get("path")
        if not path:
            return types.Location(uri=uri, range=here.range(r["row"], r["col"], r["end_row"], r["end_col"]))
        other = Path(path).as_uri()
        if other not in others:
            doc = self.workspace.text_documents.get(other)
            if doc is not None:
                other_lines = list(doc.lines)
            else:
                try:  # decoded as the core decoded it (BOM, PEP 263 coding line, else UTF-8)
                    other_lines = cli.split_lines(cli.decode_source(Path(path).read_bytes()))
                except (OSError, cli.UndecodableError):
                    other_lines = []
            # the negotiated encoding is the client's, whichever document converts it
            others[other] = ClientPositions(other_lines, here.encoding)
        return types.Location(uri=other, range=others[other].range(r["row"], r["col"], r["end_row"], r["end_col"]))

    def diagnostics(self, uri: str, res: Result, encoding: Any) -> list[types.Diagnostic]:
        """The LSP diagnostics of one result, in time linear in their number and the text's
        size (``ClientPositions``; 20,000 syntax errors take about a second end to end)."""
        here = ClientPositions(res.lines, encoding)
        out = []
        others: dict[str, ClientPositions] = {}
        for d, raw in res.findings:
            related = [
                types.DiagnosticRelatedInformation(location=self.related_location(uri, r, here, others), message=str(r["message"]))
                for r in raw.get("related") or []
            ]
            out.append(
                types.Diagnostic(
                    range=here.range(d.row, d.col, d.end_row, d.end_col),
                    message=d.message,
                    severity=severity(d.code, self.rules()),
                    code=d.code or None,
                    code_description=types.CodeDescription(href=url) if (url := rule_url(d.code, res.docs_url)) else None,
                    source=SOURCE,
                    related_information=related or None,
                    # a syntax error (no code) has no noqa and no fix: nothing to carry
                    data={"noqa_row": d.noqa_row or d.row, "fix": raw.get("fix")} if d.code else None,
                )
            )
        return out

    def refresh_hints(self) -> None:
        caps = self.client_capabilities.workspace
        hints = getattr(caps, "inlay_hint", None) if caps else None
        if hints is not None and getattr(hints, "refresh_support", False):
            self.workspace_inlay_hint_refresh(None)


server = ShapeLintServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: ShapeLintServer, params: types.InitializeParams) -> None:
    ls.options.update(params.initialization_options)


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: ShapeLintServer, params: Any) -> None:
    """Answered at once, whatever is being analysed: the pending analyses are cancelled, the one
    running on the worker thread is left to end (its result is dropped), none starts after."""
    ls.stopping = True
    for task in ls.pending.values():
        task.cancel()
    ls.executor.shutdown(wait=False, cancel_futures=True)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(ls: ShapeLintServer, params: types.DidChangeConfigurationParams) -> None:
    ls.options.update(params.settings)
    ls.refresh_hints()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: ShapeLintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.results.setdefault(params.text_document.uri, Result(version=None, lines=[]))
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(ls: ShapeLintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, ls.options.debounce_ms)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(ls: ShapeLintServer, params: types.DidSaveTextDocumentParams) -> None:
    from . import cache

    cache.forget_stamps()  # the project changed: files importing this one see its new text
    for uri in list(ls.results):
        ls.schedule(uri, 0)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched(ls: ShapeLintServer, params: types.DidChangeWatchedFilesParams) -> None:
    from . import cache

    cache.forget_stamps()
    for uri in list(ls.results):
        ls.schedule(uri, ls.options.debounce_ms)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: ShapeLintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.forget(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def on_notebook_open(ls: ShapeLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.results.setdefault(uri, Result(version=None, lines=[]))
    ls.schedule(uri, 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def on_notebook_change(ls: ShapeLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, ls.options.debounce_ms)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def on_notebook_save(ls: ShapeLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    on_save(ls, params)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def on_notebook_close(ls: ShapeLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    res = ls.forget(params.notebook_document.uri)
    cells = {c.uri for c in params.cell_text_documents} | {c for c, _ in (res.cells if res else [])}
    for cell in sorted(cells):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=[]))


#: How many classes' contracts the server keeps.
CONTRACTS_KEPT = 16


def contract_markdown(name: str, calls: Sequence[Mapping[str, Any]]) -> str | None:
    """What a module class's ``forward`` accepts (``summary --model``'s input contract, one
    block per input rank it takes), or ``None`` when there is none (not a model, or nothing
    known of its inputs)."""
    from . import summary

    blocks = []
    for c in calls:
        if not c.get("accepts"):
            continue
        ranks = ", ".join("?" if r is None else str(r) for r in c.get("input_ranks") or [])
        text = "\n".join(summary._accepts(c["accepts"]))
        blocks.append(f"input rank {ranks}:\n```text\n{text}\n```" if len(calls) > 1 else f"```text\n{text}\n```")
    if not blocks:
        return None
    return "\n".join([f"`{name}`'s forward (its input contract):", *blocks])


def class_hover(ls: ShapeLintServer, uri: str, position: types.Position) -> types.Hover | None:
    """Hover on the name of a class a text document defines: its input contract."""
    if ls.workspace.get_notebook_document(cell_uri=uri) is not None:
        return None
    doc = ls.workspace.get_text_document(uri)
    lines = doc.lines
    if not 0 <= position.line < len(lines):
        return None
    from . import summary

    m = summary.CLASS_LINE.match(lines[position.line])
    # (positions in code points: a class name is ASCII, as is what comes before it)
    if m is None or not m.start(1) <= position.character <= m.end(1):
        return None
    name, path = m[1], doc.path or "<buffer>"
    key = (doc.source, path, name)
    if key not in ls.contracts:
        try:
            calls = summary.summarise(doc.source, path, name)
        except Exception:  # noqa: BLE001 - a hover never breaks the server
            calls = []
        while len(ls.contracts) >= CONTRACTS_KEPT:
            ls.contracts.pop(next(iter(ls.contracts)))
        ls.contracts[key] = contract_markdown(name, calls)
    text = ls.contracts[key]
    if text is None:
        return None
    r = types.Range(start=types.Position(line=position.line, character=m.start(1)), end=types.Position(line=position.line, character=m.end(1)))
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=r)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def on_hover(ls: ShapeLintServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    contract = class_hover(ls, uri, params.position)
    if contract is not None:
        return contract
    res, _, before = ls.place(uri)
    if res is None or not res.shapes:
        return None
    row, col = ls.from_client(uri, params.position)
    span = innermost(res.shapes, row + before, col)
    if span is None:
        return None
    lines = res.shape_lines
    r0, c0, r1, c1 = span["row"], span["col"], span["end_row"], span["end_col"]
    text = lines[r0 - 1][c0 - 1 : c1 - 1] if r0 == r1 and 0 < r0 <= len(lines) else "expression"
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_markdown(span, text.strip())),
        range=shifted(ls.to_range(uri, lines, r0, c0, r1, c1), before),
    )


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
def on_inlay_hint(ls: ShapeLintServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    uri = params.text_document.uri
    res, _, before = ls.place(uri)
    if not ls.options.inlay_hints or res is None:
        return []
    first, last = params.range.start.line + 1 + before, params.range.end.line + 1 + before
    if res.shape_cells:  # a notebook cell: its own lines only
        ends = [b for _, b in res.shape_cells if b > before]
        last = min(last, ends[0] if ends else len(res.shape_lines))
    out = []
    for s in res.shapes:
        if s.get("name") is None or not s.get("views") or not first <= s["end_row"] <= last:
            continue
        at = ls.to_client(uri, res.shape_lines, s["end_row"], s["end_col"])
        out.append(
            types.InlayHint(
                position=types.Position(line=at.line - before, character=at.character),
                label=hint_label(s),
                kind=types.InlayHintKind.Type,
                tooltip="\n".join(view_text(v) for v in s["views"]),
            )
        )
    return out


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def on_code_action(ls: ShapeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    res, before, _ = ls.place(uri)
    if res is None:
        return []
    lines = res.lines
    wanted = [d for d in params.context.diagnostics if d.source == SOURCE]
    if not wanted:  # a client that sends no context: the stored findings in the range
        first, last = params.range.start.line + 1 + before, params.range.end.line + 1 + before
        wanted_keys = {(d.code, d.row) for d, _ in res.findings if first <= d.row <= last}
    else:
        wanted_keys = {(str(d.code), d.range.start.line + 1 + before) for d in wanted}
    if res.cells:  # a notebook cell: the findings on its own lines
        wanted_keys = {(c, row) for c, row in wanted_keys if (cell_at(res.cells, row - 1) or ("",))[0] == uri}

    def to_range(*rc: int) -> types.Range:
        return shifted(ls.to_range(uri, lines, *rc), before)

    actions: list[types.CodeAction] = []
    for d, raw in res.findings:
        if not d.code or (d.code, d.row) not in wanted_keys:
            continue
        lsp_diag = next((w for w in wanted if str(w.code) == d.code and w.range.start.line + 1 + before == d.row), None)
        fixed = fix_action(uri, d.code, raw.get("fix"), to_range, lsp_diag)
        if fixed is not None:
            actions.append(fixed)
        noqa_row = d.noqa_row or d.row
        if 0 < noqa_row <= len(lines):
            line = lines[noqa_row - 1].rstrip("\r\n")
            edit = noqa_edit(line, d.code)
            if edit is not None:
                start, end, text = edit
                actions.append(
                    types.CodeAction(
                        title=f"Add `# noqa: {d.code}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diag] if lsp_diag else None,
                        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=to_range(noqa_row, start + 1, noqa_row, end + 1), new_text=text)]}),
                    )
                )
    return actions


#: How long ``exit`` waits for an analysis still running on the worker thread.
EXIT_GRACE_S = 0.3


def main() -> int:
    """Serve over stdio until the client says exit (or closes stdin), then end the process:
    status 0 after ``shutdown``, 1 without it (as the LSP specification asks). An analysis still
    running in the core (a hostile buffer) gets ``EXIT_GRACE_S``, then the process ends without
    joining its thread (``os._exit``; the interpreter would wait for it)."""
    server.start_io()
    code = 0 if server.stopping else 1
    server.executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + EXIT_GRACE_S
    for thread in list(getattr(server.executor, "_threads", ())):
        thread.join(max(0.0, deadline - time.monotonic()))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
