"""Jupyter notebooks (``.ipynb``): their code cells as one program, and the way back from a
line of that program to a cell.

The code cells are analysed in order as one program, as a kernel that runs them top to bottom
would see them. Cells are numbered as nbQA and a "Run All" number them: the 1-based index among
the notebook's code cells (markdown and raw cells are not counted), so ``cell 3`` is the cell
that a fresh kernel shows as ``In [3]``.

IPython syntax is rewritten as IPython itself rewrites it, to a call the analyser does not see
into, on the same line: a line magic (``%matplotlib inline``), a shell line (``!pip install x``),
a help line (``model?``) becomes ``get_ipython()``; an assignment from one (``files = !ls``)
becomes ``files = get_ipython()`` (an unknown value). A cell magic whose body is Python
(``%%time``, ``%%capture``, ...) keeps its body; any other cell magic (``%%bash``,
``%%writefile``, ...) makes the whole cell text that is not Python, left out. Only a line that
starts a statement is rewritten: a ``%`` that continues an expression, or that is inside a
string, is Python. The rewritten program has the notebook's lines one for one, so a position in
it is a cell and a line of that cell.
"""

from __future__ import annotations

import re

from .record import Record, factory

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Sequence

SUFFIX = ".ipynb"

#: Cell magics whose body is Python that IPython runs (timed, captured, profiled, debugged).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_CELL_MAGIC = re.compile(r"^\s*%%(\w+)")


class NotebookError(Exception):
    """The file is not a notebook this reads (not JSON, or not nbformat's layout)."""


class Notebook(Record):
    """A notebook's code cells as one program (``source``), and where each of its lines is."""

    source: str = ""
    """The code cells, in order, IPython syntax rewritten (see the module's docs)."""
    rows: list[tuple[int, int]] = factory(list)
    """For each line of ``source`` (0-based): its cell (1-based among code cells) and its line
    in that cell (1-based)."""
    cells: list[list[str]] = factory(list)
    """Each code cell's lines as written (no line ends), for the renderers' snippets."""

    def first_rows(self) -> list[int]:
        """Each cell's first line in ``source`` (1-based)."""
        firsts: list[int] = []
        for row, (cell, _) in enumerate(self.rows, 1):
            if cell > len(firsts):
                firsts.append(row)
        return firsts

    def locate(self, row: int) -> tuple[int, int]:
        """The cell and the line in it of line ``row`` (1-based) of ``source``; a row past the
        end is the last line."""
        if not self.rows:
            return (1, 1)
        return self.rows[max(0, min(row, len(self.rows)) - 1)]


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


def parse(text: str) -> Notebook:
    """The notebook of a ``.ipynb`` file's text (nbformat 4, or 3's worksheets). A notebook of
    another language than Python has no code to analyse."""
    import json  # here: most runs read no notebook

    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # (nested past the parser's depth: the latter)
        raise NotebookError(f"not a notebook (invalid JSON: {exc})") from None
    if not isinstance(doc, dict):
        raise NotebookError("not a notebook (the JSON is not an object)")
    cells: Any = doc.get("cells")
    if cells is None and isinstance(doc.get("worksheets"), list):  # nbformat 3
        cells = [c for w in doc["worksheets"] if isinstance(w, dict) for c in (w.get("cells") or [])]
    if not isinstance(cells, list):
        raise NotebookError("not a notebook (no list of cells)")
    if not _is_python(doc.get("metadata")):
        return Notebook()
    texts = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", cell.get("input", ""))
        text = "".join(raw) if isinstance(raw, list) and all(isinstance(r, str) for r in raw) else raw
        if not isinstance(text, str):
            raise NotebookError(f"not a notebook (code cell {len(texts) + 1}'s source is not text)")
        texts.append(text)
    return of_cells(texts)


def of_cells(texts: Sequence[str]) -> Notebook:
    """The notebook of code cells' texts, in order (a file's cells, or an editor's)."""
    out: list[str] = []
    rows: list[tuple[int, int]] = []
    written: list[list[str]] = []
    for number, text in enumerate(texts, 1):
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if lines and lines[-1] == "" and len(lines) > 1:
            lines.pop()  # the cell's last line end
        written.append(lines)
        for i, line in enumerate(python_lines(lines)):
            out.append(line + "\n")
            rows.append((number, i + 1))
    return Notebook(source="".join(out), rows=rows, cells=written)


def _is_python(metadata: Any) -> bool:
    """Whether the notebook's kernel runs Python (a notebook that does not say is taken to)."""
    if not isinstance(metadata, dict):
        return True
    language = None
    info, spec = metadata.get("language_info"), metadata.get("kernelspec")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        language = info["name"]
    elif isinstance(spec, dict) and isinstance(spec.get("language"), str):
        language = spec["language"]
    return language is None or language.lower() == "python"


def python_lines(lines: Sequence[str]) -> list[str]:
    """A code cell's lines with IPython syntax rewritten, one line for each."""
    if not lines:
        return []
    m = _CELL_MAGIC.match(lines[0])
    if m:
        if m.group(1) not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)  # not Python: out of the program
        return [""] + python_lines(lines[1:])
    out: list[str] = []
    scan = _Scanner()
    continued_magic = False
    for line in lines:
        if continued_magic:
            # a magic's line continued with a backslash
            out.append("")
            continued_magic = line.rstrip().endswith("\\")
            continue
        if scan.at_statement_start() and _is_ipython(line, scan):
            indent = line[: len(line) - len(line.lstrip())]
            m = _ASSIGNED_MAGIC.match(line)
            out.append(f"{m.group(1)}{m.group(2)} = get_ipython()" if m else f"{indent}get_ipython()")
            continued_magic = line.rstrip().endswith("\\")
            continue
        scan.feed(line)
        out.append(line)
    return out


def _is_ipython(line: str, scan: _Scanner) -> bool:
    """Whether a line that starts a statement is IPython syntax, not Python."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!?":
        return True
    if _ASSIGNED_MAGIC.match(line):
        return True
    # a help line: `model?`, `np.zeros??` (a `?` ending the code, outside strings and comments)
    code = scan.code_part(line).rstrip()
    return code.endswith("?")


class _Scanner:
    """Enough of Python's tokenizer to know whether the next line starts a statement: the open
    brackets, an open triple-quoted string, a backslash continuation."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open triple quote, if any
        self.backslash = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def code_part(self, line: str) -> str:
        """The line up to its comment (strings that open and close on it skipped)."""
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if c == "#":
                return line[:i]
            if c in "'\"":
                q = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else c
                end = line.find(q, i + len(q))
                if end < 0:
                    return line
                i = end + len(q)
                continue
            i += 1
        return line

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        self.backslash = False
        while i < n:
            if self.quote is not None:
                end = line.find(self.quote, i)
                while end > 0 and _escaped(line, end):
                    end = line.find(self.quote, end + 1)
                if end < 0:
                    return
                i = end + 3
                self.quote = None
                continue
            c = line[i]
            if c == "#":
                return
            if c in "'\"":
                triple = line[i : i + 3]
                if triple in ('"""', "'''"):
                    self.quote = triple
                    i += 3
                    continue
                j = i + 1
                while j < n and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "\\" and i == n - 1:
                self.backslash = True
            i += 1


def _escaped(line: str, i: int) -> bool:
    """Whether the character at ``i`` follows an odd number of backslashes."""
    k = i
    while k > 0 and line[k - 1] == "\\":
        k -= 1
    return (i - k) % 2 == 1


_LINE = re.compile(r"\bline (\d+)\b")


def in_cells(diags: Sequence[Any], nb: Notebook) -> list[Any]:
    """Findings on lines of ``nb.source`` (``output.Diagnostic``), placed in their cells: the
    row, the end and the ``noqa`` line in the cell, the lines the message, the trace and the
    condition name in ``cell K, line M`` form, and the cell's own lines for the snippet. A
    fix is dropped: its edits are on the program, not on the notebook's JSON, which is never
    rewritten."""
    out = []
    for d in diags:
        cell, row = nb.locate(d.row)
        end_cell, end_row = nb.locate(max(d.end_row, d.row))
        end_col = d.end_col
        lines = nb.cells[cell - 1] if 0 < cell <= len(nb.cells) else []
        if end_cell != cell:  # ends in a later cell: up to the end of this one
            end_row = len(lines)
            end_col = len(lines[-1]) + 1 if lines else 1
        noqa_row = row
        if d.noqa_row is not None:
            noqa_cell, noqa_row = nb.locate(d.noqa_row)
            if noqa_cell != cell:
                noqa_row = row
        out.append(relabelled(d, nb).replace(
            cell=cell, row=row, end_row=end_row, end_col=end_col, noqa_row=noqa_row, source_lines=lines,
        ))
    return out


def relabelled(d: Any, nb: Notebook) -> Any:
    """A finding on ``nb.source`` whose message, trace and condition name lines as ``cell K,
    line M``, without its fix (the notebook's JSON is never rewritten)."""
    return d.replace(
        message=relabel(d.message, nb), trace=[relabel(t, nb) for t in d.trace],
        condition=None if d.condition is None else relabel(d.condition, nb), fix=None,
    )


def relabel(text: str, nb: Notebook) -> str:
    """``line N`` of the program, in a message, as ``cell K, line M``."""

    def one(m: re.Match[str]) -> str:
        cell, row = nb.locate(int(m.group(1)))
        return f"cell {cell}, line {row}"

    return _LINE.sub(one, text)
