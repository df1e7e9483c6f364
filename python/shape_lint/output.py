"""Renderers for ``shape-lint check``: concise, full, json, json-lines, github, sarif, statistics.

The JSON record has exactly ruff's fields (``cell``, ``code``, ``end_location``, ``filename``,
``fix``, ``location``, ``message``, ``noqa_row``, ``url``), so tools that read ``ruff --output-format
json`` read ours too.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from .record import Record, factory

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "Diagnostic",
    "RENDERERS",
    "render",
    "render_statistics",
    "docs_base",
    "rule_url",
]

#: The environment variable that sets where the rule documentation is (``docs_base``).
DOCS_URL_ENV = "SHAPE_LINT_DOCS_URL"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_TAB_WIDTH = 4
_MAX_SOURCE_LINES = 6


class Diagnostic(Record):
    """One finding of one file, ready to render (1-based rows, code-point columns)."""

    _hidden = frozenset({"source_lines"})

    filename: str
    """Path as shown to the user (relative to the cwd when possible, ``-`` for anonymous stdin)."""
    code: str
    name: str
    message: str
    row: int
    col: int
    end_row: int
    end_col: int
    trace: list[str] = factory(list)
    condition: str | None = None
    noqa_row: int | None = None
    """The line a ``# noqa`` comment would go on (the last line of a multi-line statement token)."""
    abspath: str | None = None
    """Absolute path (``None`` for anonymous stdin)."""
    source_lines: Sequence[str] | None = None
    """The file's lines (without line ends), used by the ``full`` format (not compared or shown)."""
    fix: dict[str, Any] | None = None
    """The core's suggested fix (``fixes.valid_fix``), always unsafe (it changes behaviour)."""
    show_fix: bool = False
    """Mark the fix as applicable (``[*]``): ``--unsafe-fixes`` is on."""
    cell: int | None = None
    """In a notebook: the code cell (1-based among code cells); ``row`` is then the line in it."""

    @property
    def head(self) -> str:
        """``SHP101 [*] message``; a syntax error has no code (``SyntaxError: ...``), as in ruff."""
        mark = "[*] " if self.fix is not None and self.show_fix else ""
        return f"{self.code} {mark}{self.message}" if self.code else self.message

    def sort_key(self) -> tuple[Any, ...]:
        return (self.filename, self.cell or 0, self.row, self.col, self.code, self.message)

    @property
    def where(self) -> str:
        """``path:row:col``, or ``path:cell K:row:col`` in a notebook (ruff's form)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.filename}:{cell}{self.row}:{self.col}"


_LOCAL_DOCS: list[str | None] = []


def docs_base(configured: str | None = None) -> str | None:
    """Where the rule documentation is: a folder with one ``SHPxxx.md`` per rule (the
    repository's ``docs/rules``, generated from the rule units). The ``docs-url`` setting, else
    ``$SHAPE_LINT_DOCS_URL`` (a mirror of the repository: ``https://host/you/shape-lint/blob/main/docs/rules``),
    else the ``docs/rules`` folder beside this package when it runs from a checkout of the
    repository (a ``file://`` URI), else none: no link rather than a dead one
    (``shape-lint rule SHP101`` prints the same text offline)."""
    base = configured or os.environ.get(DOCS_URL_ENV)
    if base:
        return base.rstrip("/")
    if not _LOCAL_DOCS:
        local = Path(__file__).resolve().parent.parent.parent / "docs" / "rules"
        _LOCAL_DOCS.append(local.as_uri() if (local / "README.md").is_file() else None)
    return _LOCAL_DOCS[0]


def rule_url(code: str, base: str | None = None) -> str | None:
    """The link to a rule's documentation (``docs_base``), ``None`` when there is nowhere to
    point (or no code: a syntax error)."""
    root = docs_base(base)
    return f"{root}/{code}.md" if root and code else None


# ---------------------------------------------------------------------------------------------
# concise / full


def render_concise(diags: Sequence[Diagnostic], **_: Any) -> str:
    out = [f"{d.where}: {d.head}\n" for d in diags]
    out.append(_summary(diags))
    return "".join(out)


def _summary(diags: Sequence[Diagnostic]) -> str:
    n = len(diags)
    if n == 0:
        return "All checks passed!\n"
    return f"Found {n} error{'s' if n != 1 else ''}.\n"


def _expand(line: str, col0: int) -> tuple[str, int]:
    """Expand tabs; return the expanded line and the display column of code point ``col0``."""
    col0 = max(0, min(col0, len(line)))
    prefix = line[:col0].expandtabs(_TAB_WIDTH)
    return line.expandtabs(_TAB_WIDTH), len(prefix)


def _snippet(d: Diagnostic) -> list[str]:
    lines = d.source_lines
    if not lines or not (1 <= d.row <= len(lines)):
        return []
    last = min(max(d.end_row, d.row), len(lines), d.row + _MAX_SOURCE_LINES - 1)
    width = len(str(last))
    gutter = " " * width
    out = [f"{gutter} |"]
    for row in range(d.row, last + 1):
        raw = lines[row - 1].rstrip("\r\n")
        start0 = d.col - 1 if row == d.row else len(raw) - len(raw.lstrip())
        end0 = d.end_col - 1 if row == d.end_row else len(raw)
        text, start = _expand(raw, start0)
        _, end = _expand(raw, end0)
        out.append(f"{row:>{width}} | {text}".rstrip())
        carets = max(1, end - start)
        out.append(f"{gutter} | {' ' * start}{'^' * carets}")
    if last < d.end_row:
        out.append(f"{gutter} | ...")
    out.append(f"{gutter} |")
    return out


def render_full(diags: Sequence[Diagnostic], **_: Any) -> str:
    out: list[str] = []
    for d in diags:
        out.append(d.head)
        snippet = _snippet(d)
        indent = " " * (len(snippet[0]) - 2) if snippet else ""
        out.append(f"{indent}--> {d.where}")
        out.extend(snippet)
        notes = []
        if d.condition:
            notes.append(f"fails when {d.condition}")
        notes.extend(d.trace)
        for note in notes:
            out.append(f"{indent} = note: {note}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "") + _summary(diags)


# ---------------------------------------------------------------------------------------------
# json / json-lines


def json_record(d: Diagnostic, docs: str | None = None) -> dict[str, Any]:
    return {
        "cell": d.cell,
        "code": d.code or None,
        "end_location": {"column": d.end_col, "row": d.end_row},
        "filename": d.abspath if d.abspath is not None else d.filename,
        "fix": _json_fix(d.fix),
        "location": {"column": d.col, "row": d.row},
        "message": d.message,
        "noqa_row": d.noqa_row if d.noqa_row is not None else d.row,
        "url": rule_url(d.code, docs),
    }


def _json_fix(fix: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A fix in ruff's JSON shape."""
    if fix is None:
        return None
    return {
        "applicability": fix["applicability"],
        "edits": [
            {
                "content": e["content"],
                "end_location": {"column": e["end_col"], "row": e["end_row"]},
                "location": {"column": e["col"], "row": e["row"]},
            }
            for e in fix["edits"]
        ],
        "message": fix["message"],
    }


def render_json(diags: Sequence[Diagnostic], docs_url: str | None = None, **_: Any) -> str:
    import json

    return json.dumps([json_record(d, docs_url) for d in diags], indent=2, ensure_ascii=False) + "\n"


def render_json_lines(diags: Sequence[Diagnostic], docs_url: str | None = None, **_: Any) -> str:
    import json

    return "".join(json.dumps(json_record(d, docs_url), ensure_ascii=False) + "\n" for d in diags)


# ---------------------------------------------------------------------------------------------
# github


def _gh_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


#: GitHub's annotation command for each level (`level`).
GITHUB_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def render_github(diags: Sequence[Diagnostic], rules: Sequence[Mapping[str, Any]] = (), **_: Any) -> str:
    by_code = {r["code"]: r for r in rules}
    out = []
    for d in diags:
        props = ",".join(
            [
                f"title={_gh_prop(f'shape-lint ({d.code})')}",
                f"file={_gh_prop(d.filename)}",
                f"line={d.row}",
                f"col={d.col}",
                f"endLine={d.end_row}",
                f"endColumn={d.end_col}",
            ]
        )
        command = GITHUB_COMMANDS[level(by_code.get(d.code))]
        cell = f"cell {d.cell}: " if d.cell is not None else ""
        out.append(f"::{command} {props}::{_gh_data(f'{cell}{d.code} {d.message}')}\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# sarif


def _sarif_location(d: Diagnostic, cwd: Path) -> dict[str, Any]:
    artifact: dict[str, Any]
    if d.abspath is None:
        artifact = {"uri": d.filename.replace(os.sep, "/")}
    else:
        p = Path(d.abspath)
        try:
            rel = p.relative_to(cwd)
        except ValueError:
            artifact = {"uri": p.as_uri()}
        else:
            artifact = {"uri": rel.as_posix(), "uriBaseId": "%SRCROOT%"}
    return {
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": {
                "startLine": d.row,
                "startColumn": d.col,
                "endLine": d.end_row,
                "endColumn": d.end_col,
            },
        }
    }


def render_sarif(
    diags: Sequence[Diagnostic],
    *,
    rules: Sequence[Mapping[str, Any]] = (),
    version: str = "",
    cwd: Path | None = None,
    docs_url: str | None = None,
    **_: Any,
) -> str:
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    by_code = {r["code"]: r for r in rules}
    used = sorted({d.code for d in diags})
    index = {code: i for i, code in enumerate(used)}
    sarif_rules = []
    for code in used:
        r = by_code.get(code)
        name = r["name"] if r else next(d.name for d in diags if d.code == code)
        summary = r["summary"] if r else name
        doc = r["doc"] if r else summary
        sarif_rules.append(
            {
                "id": code,
                "name": name,
                "shortDescription": {"text": summary},
                "fullDescription": {"text": doc, "markdown": doc},
                "help": {"text": doc, "markdown": doc},
                **({"helpUri": url} if (url := rule_url(code, docs_url)) else {}),
                "defaultConfiguration": {"level": level(r)},
                "properties": {"tags": [name]},
            }
        )
    results = [
        {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": level(by_code.get(d.code)),
            "message": {"text": d.message},
            "locations": [_sarif_location(d, cwd)],
            # in a notebook, the region's lines are the cell's (`cell`)
            **({"properties": {"cell": d.cell}} if d.cell is not None else {}),
        }
        for d in diags
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "shape-lint",
                "version": version,
                **({"informationUri": f"{base}/README.md"} if (base := docs_base(docs_url)) else {}),
                "rules": sarif_rules,
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd.as_uri() + "/"}},
        "results": results,
    }
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    import json

    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def level(rule: Mapping[str, Any] | None) -> str:
    """A finding's level, SARIF's words (the LSP's severities and GitHub's annotations follow):
    notices about the analysis itself (SHP002, analysis incomplete) are notes; opt-in rules
    (SHP9xx, "may fail" and advice) and the patterns that run but train the wrong thing (the
    training-loop rules that raise nothing: a missing ``zero_grad()``, SHP301-SHP308) are
    warnings; everything else, where torch raises, and the internal error, is an error."""
    if rule is None:
        return "error"
    if rule.get("code") == INCOMPLETE:
        return "note"
    if not rule.get("default_enabled", True):
        return "warning"
    if not rule.get("raises", True) and rule.get("code") != INTERNAL:
        return "warning"
    return "error"


# ---------------------------------------------------------------------------------------------

RENDERERS: dict[str, Callable[..., str]] = {
    "concise": render_concise,
    "full": render_full,
    "json": render_json,
    "json-lines": render_json_lines,
    "github": render_github,
    "sarif": render_sarif,
}


#: The analysis-incomplete notice: a budget cut the file's analysis short (``SHP002``).
INCOMPLETE = "SHP002"
#: The internal error: the analysis of a file broke (``SHP001``).
INTERNAL = "SHP001"


def render(fmt: str, diags: Sequence[Diagnostic], **kwargs: Any) -> str:
    """Render ``diags`` (sorted here) in format ``fmt``."""
    ordered = sorted(diags, key=Diagnostic.sort_key)
    return RENDERERS[fmt](ordered, **kwargs)


def render_statistics(diags: Sequence[Diagnostic], fmt: str = "concise") -> str:
    """``--statistics``: one line per code, most frequent first (ruff's layout)."""
    counts = Counter(d.code for d in diags)
    names = {d.code: d.name for d in diags}
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt in ("json", "json-lines", "sarif"):
        data = [
            {"code": code, "name": names[code], "count": n, "fixable": False} for code, n in rows
        ]
        import json

        return json.dumps(data, indent=2) + "\n"
    if not rows:
        return ""
    cw = max(len(str(n)) for _, n in rows)
    kw = max(len(code) for code, _ in rows)
    return "".join(f"{n:>{cw}}\t{code:<{kw}}\t[ ] {names[code]}\n" for code, n in rows)
