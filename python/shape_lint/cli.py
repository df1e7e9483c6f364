"""The ``shape-lint`` command line (ruff's conventions: ``check``, ``rule``, ``version``, ``server``; ``api``).

Exit codes: 0 no findings, 1 findings, 2 usage / configuration error or unreadable input (a
source that cannot be decoded as Python decodes it, see ``decode_source``, included).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import tokenize
from pathlib import Path

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

from . import config as cfg
from . import notebook
from .config import ConfigError, RuleSelection, Settings
from .fixes import apply_edits, fix_edits, unified_diff, valid_fix
from .output import INCOMPLETE, Diagnostic, render, render_statistics
from .record import Record, factory

__all__ = ["main"]

ENV_OUTPUT_FORMAT = "SHAPE_LINT_OUTPUT_FORMAT"
DEFAULT_OUTPUT_FORMAT = "concise"
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks too, as ruff (`notebook`)

# flake8's own patterns (flake8/defaults.py), copied so that the CLI silences exactly what flake8
# silences.
NOQA_INLINE_REGEXP = re.compile(
    r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?",
    re.IGNORECASE,
)
NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.I)
COMMA_SEPARATED_LIST_RE = re.compile(r"[,\s]")
# ruff's file-level form: `# ruff: noqa` (everything) or `# ruff: noqa: SHP101, SHP2`.
RUFF_NOQA_FILE = re.compile(
    r"\s*#\s*ruff\s*:\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)


# ------------------------------------------------------------------------------------------------
# The seam to the Rust core (tests monkeypatch these).


def _check_source(source: str, filename: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    from . import solver

    return solver.check_source(source, filename, options)


def _syntax_errors(source: str) -> list[tuple[str, int, int, int, int]]:
    """The parser's syntax errors (the core's ruff parser, so ruff's wording)."""
    from . import _core

    fn = getattr(_core, "syntax_errors", None)
    if fn is not None:
        return [tuple(e) for e in fn(source)]
    import ast

    try:
        ast.parse(source)
    except SyntaxError as exc:
        row, col = exc.lineno or 1, exc.offset or 1
        return [(str(exc.msg), row, col, exc.end_lineno or row, exc.end_offset or col)]
    return []


def _rules() -> list[dict[str, Any]]:
    from . import _core

    return [dict(r) for r in _core.rules()]


def _version() -> str:
    from . import _core

    return str(_core.__version__)


def _apis() -> list[dict[str, Any]]:
    """The registry of modelled APIs (``_core.api_json()``)."""
    import json

    from . import _core

    return list(json.loads(_core.api_json()))


def _api_resolve(path: str) -> str | None:
    """The registry name a call of ``path`` resolves to through the core's aliases."""
    from . import _core

    return _core.api_resolve(path)


# ------------------------------------------------------------------------------------------------
# noqa (flake8's semantics)


def parse_comma_separated_list(value: str) -> list[str]:
    return [item.strip() for item in COMMA_SEPARATED_LIST_RE.split(value) if item.strip()]


def noqa_line_mapping(lines: Sequence[str], upto: int | None = None) -> dict[int, tuple[str, int]]:
    """Map each line to (the text searched for ``# noqa``, the last line of that range).

    Like flake8's ``FileProcessor._noqa_line_mapping``: a token that spans several lines (a
    triple-quoted string, a bracketed expression up to its NEWLINE) shares one noqa text.
    Returns ``{}`` when the file cannot be tokenized (callers then use the physical line).
    ``upto``: only the lines up to that one are needed (the last finding's): the tokenizer
    stops after the logical line that holds it (Python's tokenizer takes 50 to 70 ms for a
    file of a thousand lines, and a budget's notice is on line 1).
    """
    it = iter(lines)
    out: dict[int, tuple[str, int]] = {}
    min_line = len(lines) + 2
    max_line = -1
    try:
        for tok in tokenize.generate_tokens(lambda: next(it)):
            if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            min_line = min(min_line, tok.start[0])
            max_line = max(max_line, tok.end[0])
            if tok.type in (tokenize.NL, tokenize.NEWLINE):
                joined = "".join(lines[min_line - 1 : max_line])
                for line in range(min_line, max_line + 1):
                    out[line] = (joined, max_line)
                if upto is not None and max_line >= upto:
                    break
                min_line = len(lines) + 2
                max_line = -1
    except (tokenize.TokenError, SyntaxError, StopIteration, ValueError):
        return {}
    return out


def is_inline_ignored(code: str, noqa_text: str) -> bool:
    match = NOQA_INLINE_REGEXP.search(noqa_text)
    if match is None:
        return False
    codes_str = match.groupdict()["codes"]
    if codes_str is None:
        return True
    codes = set(parse_comma_separated_list(codes_str))
    return code in codes or code.startswith(tuple(codes))


class FileExemption(Record):
    """File-level noqa: ``all`` silences the file, else the codes (prefixes) listed."""

    all: bool = False
    codes: tuple[str, ...] = ()

    def covers(self, code: str) -> bool:
        return self.all or (bool(self.codes) and code.startswith(self.codes))


def _says_noqa(source: str) -> bool:
    """Whether ``noqa`` appears in ``source`` in any case, as the ``re.IGNORECASE`` patterns
    above see it (no character outside ASCII matches n, o, q or a ignoring case). Six times
    faster than a case-insensitive search: most files never say it."""
    return b"noqa" in source.encode("utf-8", "surrogatepass").lower()


def file_exemption(lines: Sequence[str]) -> FileExemption:
    codes: list[str] = []
    for line in lines:
        if NOQA_FILE.match(line):
            return FileExemption(all=True)
        m = RUFF_NOQA_FILE.match(line)
        if m:
            if m.group("codes") is None:
                return FileExemption(all=True)
            codes.extend(parse_comma_separated_list(m.group("codes")))
    return FileExemption(codes=tuple(codes))


# ------------------------------------------------------------------------------------------------
# Reading sources


class UndecodableError(Exception):
    """The bytes of a source are not text in the encoding Python would read them with."""


def decode_source(data: bytes) -> str:
    """Decode as Python reads a source file, then normalise line ends to ``\\n``.

    The encoding is Python's own choice (``tokenize.detect_encoding``): a UTF-8 BOM, else a
    PEP 263 coding declaration on line 1 or 2 (``# -*- coding: latin-1 -*-``), else UTF-8.
    Bytes that are not valid in that encoding, an unknown encoding or a BOM that contradicts the
    declaration raise :class:`UndecodableError`, whose message says which and where.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown encoding, or a BOM with another declaration
        msg = str(exc.msg if getattr(exc, "msg", None) else exc)
        if msg.startswith("invalid or missing encoding declaration"):
            encoding = "utf-8"  # line 1 or 2 is not UTF-8: the decoding below says where
        else:
            if msg.startswith("encoding problem"):
                msg = "a UTF-8 BOM and a coding declaration of another encoding"
            raise UndecodableError(msg) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = "; save it as UTF-8 or declare its encoding (PEP 263)" if encoding.startswith("utf-8") else ""
        raise UndecodableError(
            f"cannot decode as {encoding}: line {line}: byte {data[exc.start]:#04x}: {exc.reason}{hint}"
        ) from None
    except LookupError as exc:  # pragma: no cover - detect_encoding already checks the name
        raise UndecodableError(str(exc)) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    # (a text without `\r`, nearly every one, is not copied twice)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def split_lines(source: str) -> list[str]:
    """Lines with their ``\\n`` (only ``\\n`` ends a line, as for Python's tokenizer)."""
    parts = source.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# ------------------------------------------------------------------------------------------------
# File discovery


class _GitIgnores:
    """``.gitignore`` files (and ``.git/info/exclude``) as matchers (``_core.GitIgnore``: the
    ``ignore`` crate, git's rules), per directory."""

    def __init__(self) -> None:
        self._specs: dict[Path, Any] = {}
        self._repo_roots: dict[Path, Path | None] = {}
        self._chains: dict[tuple[Path, Path], list[tuple[Path, Any]]] = {}
        self._no_git: set[Path] = set()

    def listed(self, directory: Path, dirnames: Sequence[str], filenames: Sequence[str]) -> None:
        """What a walk saw in ``directory`` (absolute): without a ``.gitignore`` and a ``.git``
        there, it has no patterns and is no repository root, and need not be asked again."""
        if ".gitignore" not in filenames and ".git" not in dirnames and ".git" not in filenames:
            self._specs.setdefault(directory, None)
            self._no_git.add(directory)

    def _spec_for(self, directory: Path) -> Any:
        if directory in self._specs:
            return self._specs[directory]
        lines: list[str] = []
        for p in (directory / ".gitignore", directory / ".git" / "info" / "exclude"):
            try:
                lines.extend(p.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue
        # blank lines and comments match nothing: a matcher only when a pattern is left
        patterns = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
        spec = None
        if patterns:
            from . import _core

            spec = _core.GitIgnore(str(directory), lines)
        self._specs[directory] = spec
        return spec

    def _repo_root(self, directory: Path) -> Path | None:
        """The nearest directory at or above ``directory`` with a ``.git`` (memoised for every
        directory on the way up: a walk asks for each directory of a tree)."""
        if directory in self._repo_roots:
            return self._repo_roots[directory]
        if directory not in self._no_git and (directory / ".git").exists():
            root: Path | None = directory
        elif directory.parent == directory:
            root = None
        else:
            root = self._repo_root(directory.parent)
        self._repo_roots[directory] = root
        return root

    def _chain(self, parent: Path, top: Path) -> list[tuple[Path, Any]]:
        """The directories from ``top`` (when it is above ``parent``) down to ``parent`` that
        have patterns, shallow first, with their matchers; one list per directory."""
        key = (parent, top)
        got = self._chains.get(key)
        if got is None:
            spec = self._spec_for(parent)
            own = [(parent, spec)] if spec is not None else []
            # (`top` strictly above `parent`: the chain of the parent's parent, which a walk
            # made already, then its own; compared as text, not as paths, most of a walk's time)
            p, t = str(parent), str(top)
            if p != t and p.startswith(t.rstrip(os.sep) + os.sep):
                got = self._chain(parent.parent, top) + own
            else:
                got = own
            self._chains[key] = got
        return got

    def names_ignored(self, directory: Path, is_dir: bool, walk_root: Path, *, inherit: bool = True) -> Callable[[str], bool] | None:
        """``ignored`` for the files (or directories) named in ``directory`` (absolute), as a
        test of a name; ``None`` when no pattern applies there (most directories)."""
        top = (self._repo_root(directory) or walk_root) if inherit else walk_root
        chain = self._chain(directory, top)
        if not chain:
            return None
        prefixes = [(directory.relative_to(d).as_posix(), spec) for d, spec in chain]

        def test(name: str) -> bool:
            verdict: bool | None = None
            for rel, spec in prefixes:  # shallow first, deeper overrides
                result = spec.check(name if rel == "." else f"{rel}/{name}", is_dir)
                if result is not None:
                    verdict = result
            return bool(verdict)

        return test

    def ignored(self, path: Path, is_dir: bool, walk_root: Path, *, inherit: bool = True) -> bool:
        """Whether a ``.gitignore`` between the repository root (or ``walk_root`` outside a
        repository) and ``path`` ignores ``path``. Deeper files override shallower ones.
        ``inherit=False``: only the files in ``walk_root`` and below count (the user named an
        ignored directory, e.g. one under ``~/.pyenv``, whose repository ignores ``/versions``)."""
        test = self.names_ignored(path.parent, is_dir, walk_root, inherit=inherit)
        # (the filesystem root has no name: its path relative to itself is ".")
        return test is not None and test(path.name or ".")


class Discovery(Record):
    files: list[Path] = factory(list)
    errors: list[str] = factory(list)


def _excluded(path: Path | str, settings: Settings) -> bool:
    return cfg.matches_any(path, settings.all_excludes, settings.project_root)


def _force_excluded(path: Path, settings: Settings) -> bool:
    """``--force-exclude``: the path or one of its ancestors matches an exclude pattern."""
    path = Path(os.path.abspath(path))
    for p in (path, *path.parents):
        if _excluded(p, settings):
            return True
        if p == settings.project_root:
            break
    return False


def discover(paths: Sequence[str], settings: Settings, *, force_exclude: bool) -> Discovery:
    found = Discovery()
    seen: set[str] = set()
    gitignores = _GitIgnores()

    def add(p: Path, key: str | None = None) -> None:
        key = key or os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            found.files.append(p)

    for raw in paths:
        p = Path(raw)
        if not p.exists():
            found.errors.append(f"{raw}: No such file or directory")
            continue
        if force_exclude and _force_excluded(p, settings):
            continue
        if p.is_file():
            add(p)  # explicitly named files are checked whatever their suffix
            continue
        walk_root = Path(os.path.abspath(p))
        # A directory named on the command line is checked even when a .gitignore above it
        # ignores it (ruff's rule: named paths are checked unless --force-exclude); the
        # .gitignore files inside it still apply to what it holds.
        inherit = force_exclude or not (
            settings.respect_gitignore and gitignores.ignored(walk_root, True, walk_root.parent)
        )

        for dirpath, dirnames, filenames in os.walk(p, onerror=None):
            absolute = Path(os.path.abspath(dirpath))
            gitignores.listed(absolute, dirnames, filenames)
            if dirnames:
                skip = _skip_test(absolute, True, walk_root, inherit, settings, gitignores)
                dirnames[:] = [d for d in sorted(dirnames) if not skip(d)]
            names = [name for name in sorted(filenames) if name.endswith(PYTHON_SUFFIXES)]
            if not names:
                continue
            skip = _skip_test(absolute, False, walk_root, inherit, settings, gitignores)
            here, text = Path(dirpath), str(absolute)
            for name in names:
                if not skip(name):
                    add(here / name, os.path.join(text, name))
    return found


def _skip_test(
    directory: Path, is_dir: bool, walk_root: Path, inherit: bool, settings: Settings, gitignores: _GitIgnores,
) -> Callable[[str], bool]:
    """Whether a walk skips the file (or directory) of a name in ``directory`` (absolute): an
    exclude matches it, or a ``.gitignore`` ignores it. Made once per directory: the
    ``.gitignore`` files that apply, and the paths as text (Path objects per entry were most
    of a large tree's discovery)."""
    ignored = gitignores.names_ignored(directory, is_dir, walk_root, inherit=inherit) if settings.respect_gitignore else None
    text = str(directory)
    return lambda name: _excluded(os.path.join(text, name), settings) or (ignored is not None and ignored(name))


# ------------------------------------------------------------------------------------------------
# Checking


class FileResult(Record):
    diagnostics: list[Diagnostic] = factory(list)
    error: str | None = None
    warning: str | None = None
    notices: list[Diagnostic] = factory(list)
    """The analysis-incomplete notices (``SHP002``) not selected as diagnostics."""
    fixed: int = 0
    """How many findings ``--fix --unsafe-fixes`` fixed (or ``--diff`` would fix)."""
    diff: str = ""


class FixMode(Record):
    """``--fix``, ``--unsafe-fixes``, ``--diff``."""

    _frozen = True

    fix: bool = False
    unsafe: bool = False
    diff: bool = False

    @property
    def applies(self) -> bool:
        return (self.fix or self.diff) and self.unsafe


def _display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # different drive (Windows)
        return str(path)
    return str(path) if rel.startswith(".." + os.sep) else rel


def _internal_error(reason: str) -> dict[str, Any]:
    return {
        "code": "SHP001",
        "name": "internal-error",
        "message": f"shape-lint internal error: {reason}",
        "row": 1,
        "col": 1,
        "end_row": 1,
        "end_col": 1,
        "trace": [],
        "condition": None,
    }


def _run_core(source: str, filename: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The core's findings, well formed; a ``solver.Findings`` with the syntax errors of the
    same parse when the core gave them."""
    try:
        findings = _check_source(source, filename, options)
    except Exception as exc:  # never let an analyser bug stop the run
        return [_internal_error(f"{type(exc).__name__}: {exc}".splitlines()[0])]
    good = _well_formed(findings)
    errors = getattr(findings, "syntax_errors", None)
    if errors is None:
        return good
    from .solver import Findings

    out = Findings(good)
    out.syntax_errors = list(errors)
    return out


def _well_formed(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The findings with the keys a Diagnostic needs, each checked (a malformed one: SHP001)."""
    good = []
    for f in findings:
        try:
            good.append(
                {
                    "code": str(f["code"]),
                    "name": str(f.get("name") or f["code"]),
                    "message": str(f["message"]).replace("\n", " "),
                    "row": int(f["row"]),
                    "col": int(f["col"]),
                    "end_row": int(f.get("end_row") or f["row"]),
                    "end_col": int(f.get("end_col") or f["col"]),
                    "trace": [str(t) for t in (f.get("trace") or [])],
                    "condition": None if f.get("condition") is None else str(f["condition"]),
                    "fix": valid_fix(f.get("fix")),
                }
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            good.append(_internal_error(f"malformed finding: {exc!r}"))
    return good


def check_text(
    source: str,
    *,
    display: str,
    abspath: str | None,
    settings: Settings,
    selection: RuleSelection,
    ignore_noqa: bool,
    findings: Sequence[Mapping[str, Any]] | None = None,
    unsafe_fixes: bool = False,
    notices: list[Diagnostic] | None = None,
) -> list[Diagnostic]:
    """Analyse one file's text and apply selection, per-file-ignores and noqa. ``findings``:
    the core's findings when the caller ran the analysis already (the language server).
    ``notices``: where the analysis-incomplete notice (``SHP002``) goes when it is not selected
    (and not ignored): the CLI prints it as a warning and the machine formats carry it."""
    # The file's lines, split once and only when needed: most files have no `noqa` and no
    # finding, and need neither.
    split: list[list[str]] = []
    bare: list[list[str]] = []

    def lines() -> list[str]:
        if not split:
            split.append(split_lines(source))
        return split[0]

    def bare_lines() -> list[str]:
        """The lines without their ``\\n`` (the renderers' source lines), one list per file."""
        if not bare:
            bare.append([ln.rstrip("\n") for ln in lines()])
        return bare[0]

    if findings is None:
        findings = _run_core(source, abspath or display, settings.core_options())
    else:
        findings = _well_formed(findings)
    match_path = abspath or display
    out: list[Diagnostic] = []
    mapping: dict[int, tuple[str, int]] | None = None
    # a file that does not parse has no findings: report the parser's errors, as ruff does (no
    # code, not subject to selection or noqa); from the core's run when it gave them, else
    # parsed here
    errors = None if findings else getattr(findings, "syntax_errors", None)
    if not findings and errors is None:
        errors = _syntax_errors(source)
    if not (findings or errors):
        return []
    # The file-level exemption (`# flake8: noqa`, `# ruff: noqa: SHP1`), read only now that there
    # is something to report: most files have nothing, and need no scan of their text. An exempt
    # file's analysis runs and is dropped (the scan for `noqa`, encoding and lowering the whole
    # text, cost more over a repository than the few exempt files' analyses). Both forms say
    # `noqa`: a file without the word needs no line-by-line scan.
    exemption = FileExemption() if ignore_noqa or not _says_noqa(source) else file_exemption(lines())
    if exemption.all:
        return []
    if not findings:
        for message, row, col, end_row, end_col in errors or ():
            out.append(Diagnostic(filename=display, code="", name="syntax-error",
                                  message=f"SyntaxError: {message}", row=row, col=col,
                                  end_row=end_row, end_col=end_col, abspath=abspath,
                                  source_lines=bare_lines()))
    for f in findings:
        code = f["code"]
        notice = False
        if not selection.enabled_for(match_path, code):
            if code != INCOMPLETE or notices is None or selection.silenced(match_path, code):
                continue
            notice = True
        if exemption.covers(code):
            continue
        if mapping is None:
            mapping = noqa_line_mapping(lines(), upto=max(int(g["row"]) for g in findings))
        row = f["row"]
        physical = lines()[row - 1] if 1 <= row <= len(lines()) else ""
        noqa_text, noqa_row = mapping.get(row, (physical, row))
        if not ignore_noqa and is_inline_ignored(code, noqa_text):
            continue
        (notices if notice and notices is not None else out).append(
            Diagnostic(
                filename=display,
                code=code,
                name=f["name"],
                message=f["message"],
                row=row,
                col=f["col"],
                end_row=f["end_row"],
                end_col=f["end_col"],
                trace=f["trace"],
                condition=f["condition"],
                noqa_row=noqa_row,
                abspath=abspath,
                source_lines=bare_lines(),
                fix=f.get("fix"),
                show_fix=unsafe_fixes,
            )
        )
    return out


def check_notebook(
    text: str,
    *,
    display: str,
    abspath: str | None,
    settings: Settings,
    selection: RuleSelection,
    ignore_noqa: bool,
    notices: list[Diagnostic] | None = None,
) -> list[Diagnostic]:
    """``check_text`` of a notebook's code cells (``notebook.parse``; raises
    ``notebook.NotebookError``), each finding placed in its cell. ``notices`` gets the cut
    notices, placed too."""
    nb = notebook.parse(text)
    cut: list[Diagnostic] = []
    diags = check_text(nb.source, display=display, abspath=abspath, settings=settings, selection=selection,
                       ignore_noqa=ignore_noqa, notices=cut)
    if notices is not None:
        notices.extend(notebook.in_cells(cut, nb))
    return notebook.in_cells(diags, nb)


def _check_file(
    path: Path, settings: Settings, selection: RuleSelection, ignore_noqa: bool,
    mode: FixMode = FixMode(),
) -> FileResult:
    display = _display(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(error=f"{display}: cannot read: {exc.strerror or exc}")
    try:
        source = decode_source(data)
    except UndecodableError as exc:
        return FileResult(error=f"{display}: {exc}")
    notices: list[Diagnostic] = []
    if notebook.is_notebook(str(path)):
        # a notebook's code cells, as one program; its JSON is never rewritten (no fix)
        try:
            diags = check_notebook(source, display=display, abspath=os.path.abspath(path), settings=settings,
                                   selection=selection, ignore_noqa=ignore_noqa, notices=notices)
        except notebook.NotebookError as exc:
            return FileResult(error=f"{display}: {exc}")
        return FileResult(diagnostics=diags, notices=notices)

    def check(text: str) -> list[Diagnostic]:
        notices.clear()
        return check_text(text, display=display, abspath=os.path.abspath(path), settings=settings,
                          selection=selection, ignore_noqa=ignore_noqa, unsafe_fixes=mode.unsafe,
                          notices=notices)

    diags = check(source)
    fixable = [d for d in diags if d.fix is not None]
    if not (mode.applies and fixable):
        return FileResult(diagnostics=diags, notices=notices)
    fixed_text = apply_edits(source, fix_edits([d.fix for d in fixable if d.fix is not None]))
    if fixed_text == source:
        return FileResult(diagnostics=diags)
    after = check(fixed_text)
    fixed = max(0, len(diags) - len(after))
    if mode.diff:
        return FileResult(diagnostics=diags, fixed=fixed, diff=unified_diff(source, fixed_text, display))
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:  # another coding: not rewritten
        return FileResult(diagnostics=diags)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    out_text = fixed_text.replace("\n", "\r\n") if b"\r\n" in data else fixed_text
    try:
        path.write_bytes(bom + out_text.encode("utf-8"))
    except OSError as exc:
        return FileResult(diagnostics=diags, error=f"{display}: cannot write: {exc.strerror or exc}")
    return FileResult(diagnostics=after, fixed=fixed)


def default_jobs() -> int:
    """Every core this process may run on (``--jobs``' default)."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13
    if count is not None:
        return max(1, count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_files(
    files: Sequence[Path], settings: Settings, selection: RuleSelection, ignore_noqa: bool,
    mode: FixMode, jobs: int,
) -> list[FileResult]:
    """Each file's result, in the order of ``files``. ``jobs`` files are analysed at a time, on
    threads (the core runs with the GIL released); ``jobs=1`` analyses them one after another
    in this thread. The largest files start first, so that a large file does not start last
    and leave the other threads idle at the end; the results do not depend on the order."""

    def one(p: Path) -> FileResult:
        return _check_file(p, settings, selection, ignore_noqa, mode)

    if jobs <= 1 or len(files) <= 1:
        return [one(p) for p in files]

    def size(i: int) -> int:
        try:
            return os.stat(files[i]).st_size
        except OSError:
            return 0

    # plain threads (concurrent.futures would import logging at each start): each takes the
    # next file of the queue until it is empty
    import threading

    queue = iter(sorted(range(len(files)), key=lambda i: (-size(i), i)))
    lock = threading.Lock()
    results: list[FileResult | None] = [None] * len(files)
    failures: list[BaseException] = []

    def work() -> None:
        while not failures:
            with lock:
                i = next(queue, None)
            if i is None:
                return
            try:
                results[i] = one(files[i])
            except BaseException as exc:  # a bug of ours: main() reports it
                failures.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(jobs, len(files)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return [r for r in results if r is not None]


# ------------------------------------------------------------------------------------------------
# Argument parsing


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing ``shutil`` (with ``bz2`` and
    ``lzma``: 5% of a run's start-up), which argparse's formatter imports for it."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


def _comma_list(values: Iterable[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [item.strip() for v in values for item in v.split(",") if item.strip()]


COMMANDS = ("check", "rule", "api", "summary", "coverage", "version", "server")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (one of ``COMMANDS``), only that subcommand's
    (each parser costs a few gettext lookups and formatter checks at every start)."""
    parser = _Parser(
        prog="shape-lint",
        description="Finds tensor shape errors and PyTorch training bugs before the model trains.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def wanted(name: str) -> bool:
        return command is None or command == name

    if wanted("check"):
        _check_parser(sub)
    if wanted("rule"):
        _rule_parser(sub)
    if wanted("api"):
        _api_parser(sub)
    if wanted("summary"):
        _summary_parser(sub)
    if wanted("coverage"):
        _coverage_parser(sub)
    if wanted("version"):
        sub.add_parser("version", help="print the version")
    if wanted("server"):
        sub.add_parser("server", help="run the language server over stdio (for editors)")
    return parser


def _check_parser(sub: Any) -> None:
    check = sub.add_parser("check", help="check files or directories (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - for stdin")
    sel = check.add_argument_group("rule selection")
    sel.add_argument("--select", action="append", metavar="CODES",
                     help="comma-separated codes or prefixes to enable (replaces the config's)")
    sel.add_argument("--ignore", action="append", metavar="CODES",
                     help="comma-separated codes or prefixes to disable")
    sel.add_argument("--extend-select", action="append", metavar="CODES",
                     help="comma-separated codes or prefixes to enable in addition")
    sel.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES",
                     help="file pattern to codes, e.g. 'tests/*:SHP101,SHP102' (replaces the config's)")
    files = check.add_argument_group("file selection")
    files.add_argument("--exclude", action="append", metavar="PATTERNS",
                       help="comma-separated globs to exclude (replaces the defaults)")
    files.add_argument("--extend-exclude", action="append", metavar="PATTERNS",
                       help="comma-separated globs to exclude in addition to the defaults")
    files.add_argument("--respect-gitignore", dest="respect_gitignore", action="store_true",
                       default=None, help="skip files ignored by .gitignore (default)")
    files.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                       help="also check files ignored by .gitignore")
    files.add_argument("--force-exclude", action="store_true",
                       help="apply exclusions to paths named on the command line too")
    files.add_argument("--stdin-filename", "--stdin-display-name", dest="stdin_filename",
                       metavar="PATH", help="the name of the file read from stdin")
    out = check.add_argument_group("output")
    out.add_argument("--output-format", choices=cfg.OUTPUT_FORMATS, default=None,
                     help=f"output format (default: {DEFAULT_OUTPUT_FORMAT}; "
                     f"env {ENV_OUTPUT_FORMAT})")
    out.add_argument("-o", "--output-file", metavar="PATH", help="write the report to PATH")
    out.add_argument("--statistics", action="store_true", help="count findings per code")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    fx = check.add_argument_group("fixes")
    fx.add_argument("--fix", action="store_true", default=None,
                    help="apply fixes (the suggested fixes are unsafe: also give --unsafe-fixes)")
    fx.add_argument("--no-fix", dest="fix", action="store_false")
    fx.add_argument("--unsafe-fixes", action="store_true", default=None,
                    help="show and, with --fix, apply the fixes that change behaviour")
    fx.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    fx.add_argument("--diff", action="store_true",
                    help="print the fixes as a diff instead of writing them (implies --fix)")
    out.add_argument("--show-shapes", action="store_true",
                     help="print the inferred shapes of each line (debug view)")
    conf = check.add_argument_group("configuration")
    conf.add_argument("--config", action="append", metavar="PATH|KEY=VALUE",
                      help="a config file, or a TOML KEY=VALUE override (repeatable)")
    conf.add_argument("--isolated", action="store_true", help="ignore all config files")
    conf.add_argument("--ignore-noqa", action="store_true", help="ignore # noqa comments")
    conf.add_argument("--may-fail", action="store_true", default=None,
                      help="also report lines that fail only on some paths (SHP9xx)")
    conf.add_argument("--max-paths", type=int, metavar="N", help="path budget per function")
    conf.add_argument("--max-steps", type=int, metavar="N",
                      help="work budget per file, in interpreter steps (deterministic; "
                      "a file cut by it gets an SHP002 notice)")
    conf.add_argument("--timeout-ms", type=int, metavar="MS",
                      help="wall-clock safety net per file (default 30000); a file it cuts gets "
                      "an SHP002 notice, and that result may differ between machines")
    conf.add_argument("--no-solver", dest="solver", action="store_false", default=None,
                      help="do not let Z3 decide the checks the core leaves undecided")
    conf.add_argument("-n", "--no-cache", action="store_true",
                      help="neither read nor write the caches of findings and Z3 answers (.shape_lint_cache)")
    conf.add_argument("--jobs", type=int, metavar="N",
                      help="analyse N files at a time (default: every core); 1 analyses them "
                      "one after another")



def _rule_parser(sub: Any) -> None:
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", metavar="CODE", help="a code (SHP101) or a rule name")
    rule.add_argument("--all", action="store_true", help="print every rule")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")



def _api_parser(sub: Any) -> None:
    api = sub.add_parser("api", help="print what is modelled for a torch API")
    api.add_argument("name", nargs="?", metavar="NAME",
                     help="a qualified or short name: torch.cat, nn.Linear, F.relu, Tensor.view, Linear")
    api.add_argument("--all", action="store_true", help="list every modelled API, one a line")
    api.add_argument("--output-format", choices=("text", "json"), default="text")



def _summary_parser(sub: Any) -> None:
    summ = sub.add_parser("summary", help="a torchinfo-like table of each model call, without running it")
    summ.add_argument("file", metavar="FILE", help="a Python script")
    summ.add_argument("--model", metavar="NAME",
                      help="summarise this module class's forward, with inputs of unknown shapes")
    summ.add_argument("--input-size", metavar="N,C,...", action="append", type=_input_size,
                      help="with --model: the size of a forward input, the batch included (torchinfo's "
                           "input_size); repeat it for each input")
    summ.add_argument("--output-format", choices=("text", "json"), default="text")



def _input_size(text: str) -> list[int]:
    """``1,3,32,32`` (or ``(1, 3, 32, 32)``, ``1x3x32x32``) as sizes."""
    parts = [p for p in re.split(r"[,x\s()\[\]]+", text.strip()) if p]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected positive sizes such as 1,3,32,32, got {text!r}")
    return [int(p) for p in parts]


def _coverage_parser(sub: Any) -> None:
    cov = sub.add_parser(
        "coverage",
        help="what the analysis followed and what made values Unknown (the Unknown-cause report)",
    )
    cov.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    cov.add_argument("--output-format", choices=("text", "json"), default="text")
    cov.add_argument("--top", type=int, default=25, metavar="N", help="how many causes to list (text)")
    cov.add_argument("--isolated", action="store_true", help="ignore all config files")


# ------------------------------------------------------------------------------------------------
# Commands


def _cmd_version(stdout: TextIO) -> int:
    stdout.write(f"shape-lint {_version()}\n")
    return 0


def _rule_markdown(r: Mapping[str, Any]) -> str:
    """A rule's documentation, then the templates of the messages it renders (``{field}``
    placeholders are what each finding fills in) and, for a shape error, what the message ends
    with."""
    doc = str(r["doc"]).rstrip("\n")
    out = f"# {r['name']} ({r['code']})\n\n{doc}\n"
    messages = list(r.get("messages") or [])
    if messages:
        out += "\n## Messages\n" + "".join(f"- `{m}`\n" for m in messages)
        if str(r["code"]).startswith("SHP1"):
            out += ("\n## Where sizes came from\nWhere the analysis knows where the size a message is about "
                    "came from, the message ends with it, e.g. `(2304 = 64·6·6 from pool (line 9), flattened "
                    "at line 16)`; `--output-format full` shows the whole chain, a step deeper per line.\n")
    return out


def _cmd_rule(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import json

    rules = _rules()
    if args.all:
        chosen = rules
    elif args.code:
        key = args.code.strip()
        chosen = [r for r in rules if r["code"] == key.upper() or r["name"] == key]
        if not chosen:
            stderr.write(f"error: unknown rule {args.code!r}\n")
            return 2
    else:
        stderr.write("error: give a rule code (e.g. SHP101) or --all\n")
        return 2
    if args.output_format == "json":
        data: Any = chosen if args.all else chosen[0]
        stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        stdout.write("\n".join(_rule_markdown(r) for r in chosen))
    return 0


# The short spellings users write for the prefixes of the registry's qualified names.
API_SHORT_PREFIXES = (
    ("nn.functional.", "torch.nn.functional."),
    ("functional.", "torch.nn.functional."),
    ("F.", "torch.nn.functional."),
    ("nn.", "torch.nn."),
    ("Tensor.", "torch.Tensor."),
    ("transforms.", "torchvision.transforms."),
    ("datasets.", "torchvision.datasets."),
    ("models.", "torchvision.models."),
    ("data.", "torch.utils.data."),
)


def api_candidates(name: str) -> list[str]:
    """The qualified names ``name`` may stand for, most literal first (``nn.Linear`` ->
    ``torch.nn.Linear``; ``torch.nn.modules.linear.Linear`` through the core's aliases)."""
    name = name.strip()
    out = [name]
    for short, full in API_SHORT_PREFIXES:
        if name.startswith(short):
            out.append(full + name[len(short):])
    if not name.startswith(("torch.", "torchvision.")) and "." in name:
        out.append("torch." + name)
    return list(dict.fromkeys(out))


def find_api(name: str, apis: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], str]:
    """The entries ``name`` names: ``([entry], "")``, ``([], "")`` when it names none, or
    several entries for an ambiguous bare name. The second part says how an alias resolved."""
    by_name = {str(a["name"]): a for a in apis}
    for cand in api_candidates(name):
        if cand in by_name:
            return [by_name[cand]], ""
    for cand in api_candidates(name):
        resolved = _api_resolve(cand)
        if resolved and resolved in by_name:
            return [by_name[resolved]], f"{cand} resolves to {resolved}"
    if "." not in name:
        return [a for a in apis if str(a["name"]).rsplit(".", 1)[-1] == name], ""
    return [], ""


def api_suggestions(name: str, apis: Sequence[Mapping[str, Any]], n: int = 5) -> list[str]:
    """Close matches (difflib) among the qualified names and their last parts."""
    import difflib

    names = [str(a["name"]) for a in apis]
    found: list[str] = []
    for cand in api_candidates(name):
        found += difflib.get_close_matches(cand, names, n=n, cutoff=0.75)
    last = name.rsplit(".", 1)[-1]
    shorts: dict[str, list[str]] = {}
    for full in names:
        shorts.setdefault(full.rsplit(".", 1)[-1], []).append(full)
    for close in difflib.get_close_matches(last, list(shorts), n=n, cutoff=0.75):
        found += shorts[close]
    return list(dict.fromkeys(found))[:n]


def _param_text(p: Mapping[str, Any]) -> str:
    star = {"var_positional": "*", "var_keyword": "**"}.get(str(p["kind"]), "")
    default = f"={p['default']}" if p.get("default") is not None else ""
    return f"{'' if p['read'] else '~'}{star}{p['name']}{default}"


def signature_text(params: Sequence[Mapping[str, Any]]) -> str:
    """A parsed signature back in Python's syntax (``~`` marks an accepted, ignored parameter)."""
    parts: list[str] = []
    star_done = False
    for p in params:
        if p["kind"] == "var_positional":
            star_done = True
        elif p["kind"] == "keyword" and not star_done:
            parts.append("*")
            star_done = True
        parts.append(_param_text(p))
    return ", ".join(parts)


def api_line(a: Mapping[str, Any]) -> str:
    """One line for ``api --all``: the kind, then the call as it is written."""
    call = f"({signature_text(a['call_params'])})" if a["kind"] == "module" else ""
    return f"{a['kind']:<9} {a['name']}({signature_text(a['params'])}){call}"


def api_text(a: Mapping[str, Any], rule_names: Mapping[str, str]) -> str:
    kind = str(a["kind"])
    name = str(a["name"])
    lines = [f"{name} ({kind})", ""]
    label = {"module": "constructor", "method": "method"}.get(kind, "signature")
    recv = "tensor." + name.rsplit(".", 1)[-1] if kind == "method" else name
    lines.append(f"  {label + ':':<13}{recv}({signature_text(a['params'])})")
    if kind == "module":
        lines.append(f"  {'call:':<13}{name}(...)({signature_text(a['call_params'])})")
    ignored = [str(p["name"]) for p in [*a["params"], *a["call_params"]] if not p["read"]]
    if ignored:
        lines.append(f"  {'ignored:':<13}{', '.join(ignored)} (accepted; cannot change the result)")
    if a.get("twin"):
        lines.append(f"  {'twin:':<13}{a['twin']}")
    checks = [f"{c} {rule_names.get(c, '')}".rstrip() for c in a.get("checks", [])]
    lines.append(f"  {'checks:':<13}{', '.join(checks) if checks else '(none: the model reports nothing)'}")
    lines += ["", "  A call with an argument not in the signature is not modelled: its result is Unknown."]
    return "\n".join(lines) + "\n"


def _cmd_api(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import json

    apis = _apis()
    if args.all:
        chosen = apis
    elif args.name:
        chosen, how = find_api(args.name, apis)
        if not chosen:
            tried = api_candidates(args.name)
            also = f" ({', '.join(tried[1:])})" if len(tried) > 1 else ""
            stderr.write(f"error: {args.name}{also} is not modelled: the results of its calls are Unknown "
                         "(never reported on)\n")
            close = api_suggestions(args.name, apis)
            if close:
                stderr.write(f"did you mean: {', '.join(close)}?\n")
            return 1
        if len(chosen) > 1:
            stderr.write(f"error: {args.name} is ambiguous: {', '.join(str(a['name']) for a in chosen)}\n")
            return 1
        if how and args.output_format == "text":
            stdout.write(f"({how})\n")
    else:
        stderr.write("error: give an API name (e.g. nn.Linear, torch.cat) or --all\n")
        return 2
    if args.output_format == "json":
        stdout.write(json.dumps(list(chosen), indent=2) + "\n")
    elif args.all:
        stdout.write("".join(api_line(a) + "\n" for a in chosen))
    else:
        names = {str(r["code"]): str(r["name"]) for r in _rules()}
        stdout.write(api_text(chosen[0], names))
    return 0


def _resolve_settings(args: argparse.Namespace, known: Sequence[str]) -> Settings:
    config_path = None
    overrides = []
    for value in args.config or []:
        if os.path.isfile(value):
            if config_path is not None:
                raise ConfigError("--config: only one configuration file may be given")
            config_path = value
        elif "=" in value:
            overrides.append(value)
        else:
            raise ConfigError(f"--config {value}: no such file")
    settings = cfg.load_settings(
        config_path, isolated=args.isolated, overrides=overrides, known_codes=known
    )
    changes: dict[str, Any] = {}
    if args.exclude is not None:
        changes["exclude"] = tuple(_comma_list(args.exclude) or ())
    if args.extend_exclude is not None:
        changes["extend_exclude"] = tuple(settings.extend_exclude) + tuple(
            _comma_list(args.extend_exclude) or ()
        )
    if args.respect_gitignore is not None:
        changes["respect_gitignore"] = args.respect_gitignore
    if args.may_fail:
        changes["may_fail"] = True
    if args.max_paths is not None:
        if args.max_paths <= 0:
            raise ConfigError("--max-paths: expected a positive integer")
        changes["max_paths"] = args.max_paths
    if args.max_steps is not None:
        if args.max_steps <= 0:
            raise ConfigError("--max-steps: expected a positive integer")
        changes["max_steps"] = args.max_steps
    if args.timeout_ms is not None:
        if args.timeout_ms < 0:
            raise ConfigError("--timeout-ms: expected a non-negative integer")
        changes["timeout_ms"] = args.timeout_ms
    if args.solver is not None:
        changes["solver"] = args.solver
    if args.no_cache:
        changes["cache"] = False
    return settings.replace(**changes)


def _output_format(args: argparse.Namespace, settings: Settings) -> str:
    if args.output_format:
        return str(args.output_format)
    env = os.environ.get(ENV_OUTPUT_FORMAT)
    if env:
        if env not in cfg.OUTPUT_FORMATS:
            raise ConfigError(
                f"{ENV_OUTPUT_FORMAT}={env!r}: expected one of {', '.join(cfg.OUTPUT_FORMATS)}"
            )
        return env
    return settings.output_format or DEFAULT_OUTPUT_FORMAT


def _show_shapes(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from . import _core

    fn = getattr(_core, "show_shapes", None)
    if fn is None:
        stderr.write("error: --show-shapes is not available in this build\n")
        return 2
    paths = args.paths or []
    if not paths:
        stderr.write("error: --show-shapes needs a FILE\n")
        return 2
    status = 0
    for raw in paths:
        display = (args.stdin_filename or "-") if raw == "-" else raw
        try:
            data = _read_stdin() if raw == "-" else Path(raw).read_bytes()
            source = decode_source(data)
        except (OSError, UndecodableError) as exc:
            stderr.write(f"error: {display}: {exc}\n")
            status = 2
            continue
        nb = None
        if notebook.is_notebook(display):
            try:
                nb = notebook.parse(source)
            except notebook.NotebookError as exc:
                stderr.write(f"error: {display}: {exc}\n")
                status = 2
                continue
            source = nb.source
        for line, text in fn(source, display):
            where = "cell {}:{}".format(*nb.locate(line)) if nb is not None else str(line)
            stdout.write(f"{display}:{where}: {text}\n")
    return status


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        return bytes(stream.read())
    return sys.stdin.read().encode("utf-8")


def _cmd_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.show_shapes:
        return _show_shapes(args, stdout, stderr)
    rules = _rules()
    known = [r["code"] for r in rules]
    settings = _resolve_settings(args, known)
    fmt = _output_format(args, settings)

    def codes(values: list[str] | None, flag: str) -> list[str] | None:
        items = _comma_list(values)
        if items is None:
            return None
        return [cfg.validate_selector(c, known, flag) for c in items]

    per_file = None
    if args.per_file_ignores is not None:
        per_file = [
            (pattern, [cfg.validate_selector(c, known, "--per-file-ignores") for c in cs])
            for pattern, cs in cfg.parse_per_file_ignores_arg(args.per_file_ignores)
        ]
    selection = RuleSelection.from_settings(
        settings,
        cli_select=codes(args.select, "--select"),
        cli_extend_select=codes(args.extend_select, "--extend-select") or [],
        cli_ignore=codes(args.ignore, "--ignore") or [],
        cli_per_file_ignores=per_file,
        rules=rules,
    )

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs: expected a positive integer")
    jobs = args.jobs or default_jobs()
    unsafe = bool(args.unsafe_fixes)
    mode = FixMode(fix=bool(args.fix) or args.diff, unsafe=unsafe, diff=args.diff)
    paths = list(args.paths)
    if not paths:
        paths = ["-"] if args.stdin_filename else ["."]
    use_stdin = "-" in paths
    paths = [p for p in paths if p != "-"]

    errors: list[str] = []
    diagnostics: list[Diagnostic] = []
    notices: list[Diagnostic] = []

    if use_stdin:
        data = _read_stdin()
        name = args.stdin_filename
        skip = bool(name) and args.force_exclude and _force_excluded(Path(name), settings)
        if not skip:
            try:
                source = decode_source(data)
            except UndecodableError as exc:
                errors.append(f"{name or '-'}: {exc}")
                source = None
            if source is not None and name and notebook.is_notebook(name):
                try:
                    diagnostics += check_notebook(
                        source, display=_display(Path(name)), abspath=os.path.abspath(name), settings=settings,
                        selection=selection, ignore_noqa=args.ignore_noqa, notices=notices,
                    )
                except notebook.NotebookError as exc:
                    errors.append(f"{name}: {exc}")
            elif source is not None:
                diagnostics += check_text(
                    source,
                    display=_display(Path(name)) if name else "-",
                    abspath=os.path.abspath(name) if name else None,
                    settings=settings,
                    selection=selection,
                    ignore_noqa=args.ignore_noqa,
                    unsafe_fixes=unsafe,
                    notices=notices,
                )

    fixed = 0
    diffs: list[str] = []
    if paths:
        found = discover(paths, settings, force_exclude=args.force_exclude)
        errors += found.errors
        if not found.files and not found.errors:
            stderr.write("warning: No Python files found under the given path(s)\n")
        collected = check_files(found.files, settings, selection, args.ignore_noqa, mode, jobs)
        for res in collected:
            if res.warning:
                stderr.write(f"warning: {res.warning}\n")
            if res.error:
                errors.append(res.error)
            diagnostics += res.diagnostics
            notices += res.notices
            fixed += res.fixed
            if res.diff:
                diffs.append(res.diff)

    for e in errors:
        stderr.write(f"error: {e}\n")
    # a file a budget cut short is never passed silently: a warning whatever the selection, and
    # the machine formats carry the notice (SHP002)
    for n in sorted(notices, key=Diagnostic.sort_key):
        stderr.write(f"warning: {n.filename}: {n.message} [{n.code}]\n")

    if args.diff:
        # ruff: the diff on stdout, the count on stderr; exit 1 when there is something to fix
        stdout.write("".join(diffs))
        n = fixed
        stderr.write(f"Would fix {n} error{'s' if n != 1 else ''}.\n" if n else "No errors would be fixed.\n")
        if errors:
            return 2
        return 1 if n else 0

    machine = fmt in ("json", "json-lines", "sarif")
    if args.statistics:
        text = render_statistics(diagnostics + notices, fmt)
    else:
        text = render(fmt, diagnostics + notices if machine else diagnostics, rules=rules, version=_version(), docs_url=settings.docs_url)
        if fmt in ("concise", "full"):
            text = _fix_summary(text, diagnostics, fixed, mode)
            if errors and text == "All checks passed!\n":
                text = ""  # not every file was checked: the errors above say which
            elif notices and text == "All checks passed!\n":
                # not every file was analysed to its end: never "passed"
                n = len({d.filename for d in notices})
                text = f"No findings, but {n} file{'s were' if n != 1 else ' was'} only partly analysed (SHP002).\n"
    if args.output_file:
        out_path = Path(args.output_file)
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(text, encoding="utf-8")
        except OSError as exc:
            stderr.write(f"error: {args.output_file}: cannot write: {exc.strerror or exc}\n")
            return 2
    else:
        stdout.write(text)
        stdout.flush()

    if errors:
        return 2
    if diagnostics and not args.exit_zero:
        return 1
    return 0


def _cmd_coverage(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from . import coverage

    settings = cfg.load_settings(None, isolated=args.isolated, known_codes=[r["code"] for r in _rules()])
    found = discover(args.paths or ["."], settings, force_exclude=False)
    for e in found.errors:
        stderr.write(f"error: {e}\n")

    def read(path: Path) -> str | None:
        try:
            return decode_source(path.read_bytes())
        except (OSError, UndecodableError) as exc:
            stderr.write(f"warning: {_display(path)}: skipped: {exc}\n")
            return None

    options = {k: v for k, v in settings.core_options().items() if k in ("max_paths", "max_steps", "timeout_ms")}
    per_file = coverage.run(((p, _display(p)) for p in found.files), options, read)
    agg = coverage.aggregate(per_file)
    if args.output_format == "json":
        stdout.write(coverage.render_json(agg, per_file))
    else:
        stdout.write(coverage.render_text(agg, max(0, args.top)))
    return 2 if found.errors else 0


def _cmd_summary(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import json

    from . import summary

    try:
        source = decode_source(Path(args.file).read_bytes())
    except (OSError, UndecodableError) as exc:
        stderr.write(f"error: {args.file}: {exc}\n")
        return 2
    nb = None
    if notebook.is_notebook(args.file):
        try:
            nb = notebook.parse(source)
        except notebook.NotebookError as exc:
            stderr.write(f"error: {args.file}: {exc}\n")
            return 2
        source = nb.source
    if args.input_size and not args.model:
        stderr.write("error: --input-size needs --model NAME (the module class whose forward it feeds)\n")
        return 2
    calls = summary.summarise(source, os.path.abspath(args.file), args.model, args.input_size)
    for call in calls if nb is not None else ():
        if isinstance(call.get("line"), int):  # in a notebook: the cell, and the line in it
            call["cell"], call["line"] = nb.locate(call["line"])
    if args.model and not calls:
        stderr.write(f"error: {args.file}: no module class {args.model!r} whose forward could be run\n")
        return 1
    if args.output_format == "json":
        stdout.write(json.dumps(calls, indent=2) + "\n")
    else:
        stdout.write(summary.render_text(calls, args.file))
    return 0


def _fix_summary(text: str, diagnostics: Sequence[Diagnostic], fixed: int, mode: FixMode) -> str:
    """ruff's closing lines about fixes: ``Found 2 errors (1 fixed, 1 remaining).``, or how
    many fixes ``--fix`` (``--unsafe-fixes``) would apply."""
    n = sum(1 for d in diagnostics if d.fix is not None)
    if fixed:
        body = text.rsplit("\n", 2)[0] + "\n" if diagnostics else ""
        total = fixed + len(diagnostics)
        text = f"{body}Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {len(diagnostics)} remaining).\n"
    if not n:
        return text
    if not mode.unsafe:
        return text + (f"No fixes available ({n} hidden fix{'es' if n != 1 else ''} can be enabled "
                       "with the `--unsafe-fixes` option).\n")
    if not mode.fix:
        return text + f"[*] {n} fixable with the `--fix` option.\n"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``shape-lint``; returns the exit code."""
    stdout, stderr = sys.stdout, sys.stderr
    words = sys.argv[1:] if argv is None else list(argv)
    first = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.version or args.command == "version":
            return _cmd_version(stdout)
        if args.command == "rule":
            return _cmd_rule(args, stdout, stderr)
        if args.command == "api":
            return _cmd_api(args, stdout, stderr)
        if args.command == "check":
            return _cmd_check(args, stdout, stderr)
        if args.command == "server":
            from . import server

            return server.main()
        if args.command == "summary":
            return _cmd_summary(args, stdout, stderr)
        if args.command == "coverage":
            return _cmd_coverage(args, stdout, stderr)
        parser.print_help(stderr)
        return 2
    except ConfigError as exc:
        stderr.write(f"error: {exc}\n")
        return 2
    except BrokenPipeError:
        # e.g. `shape-lint check | head`: not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 1
    except KeyboardInterrupt:
        stderr.write("interrupted\n")
        return 130
    except Exception as exc:  # a bug of ours: say so, like ruff's panics (exit 2)
        import traceback

        traceback.print_exc(file=stderr)
        stderr.write(f"error: shape-lint crashed: {type(exc).__name__}: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
