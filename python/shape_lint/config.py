"""Project settings: ``[tool.shape-lint]`` in pyproject.toml, or ``shape-lint.toml`` / ``.shape-lint.toml``.

Keys and semantics follow ruff's (``select``, ``ignore``, ``extend-select``, ``per-file-ignores``,
``exclude``, ``extend-exclude``, ``respect-gitignore``) plus the analysis budgets (``may-fail``,
``max-paths``, ``timeout-ms``), the Z3 bridge switch (``solver``) and ``output-format``.

Rule selection (:class:`RuleSelection`) is ruff's: selectors are code prefixes (``SHP``, ``SHP1``,
``SHP101``; ``ALL`` is accepted as a synonym of ``SHP``), the most specific selector wins, and
``ignore`` beats ``select`` at equal specificity. Opt-in rules (the SHP9xx family, registry field
``default_enabled = False``) are only enabled by a selector at least as specific as ``SHP9``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from pathlib import Path

from .record import Record, factory

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Sequence


__all__ = [
    "CONFIG_FILENAMES",
    "DEFAULT_EXCLUDE",
    "OUTPUT_FORMATS",
    "ConfigError",
    "RuleSelection",
    "Settings",
    "find_config_file",
    "load_config_file",
    "load_settings",
    "matches_any",
    "parse_inline_override",
    "settings_from_table",
]

TOOL_NAME = "shape-lint"

#: Looked for in this order in each directory while walking up (ruff's order: dot-file first).
CONFIG_FILENAMES = (".shape-lint.toml", "shape-lint.toml", "pyproject.toml")

OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif")

#: Directory and file names skipped while walking directories (ruff's defaults plus a few more).
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".shape_lint_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

_SELECTOR_RE = re.compile(r"^SHP[0-9]{0,3}$")
_OPT_IN_MIN_SPECIFICITY = len("SHP9")


class ConfigError(Exception):
    """A problem with the user's configuration or command line (exit code 2)."""


# --------------------------------------------------------------------------------------------
# Settings


class Settings(Record):
    """Resolved settings. ``None`` means "not set here" (the built-in default applies)."""

    _frozen = True

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    may_fail: bool = False
    max_paths: int | None = None
    max_steps: int | None = None
    timeout_ms: int | None = None
    #: Let Z3 decide the checks the core leaves undecided (``shape_lint.solver``).
    solver: bool = True
    #: Read and write the caches of findings and Z3 answers (``shape_lint.cache``, ``shape_lint.z3cache``).
    cache: bool = True
    output_format: str | None = None
    #: Where the rule documentation is (``output.docs_base``): links in JSON, SARIF and the server.
    docs_url: str | None = None
    #: The file the settings came from (``None`` for defaults / ``--isolated``).
    source: Path | None = None
    #: Relative patterns (``exclude``, ``per-file-ignores``) are anchored here.
    project_root: Path = factory(Path.cwd)

    @property
    def all_excludes(self) -> tuple[str, ...]:
        base = DEFAULT_EXCLUDE if self.exclude is None else self.exclude
        return tuple(base) + tuple(self.extend_exclude)

    def core_options(self) -> dict[str, Any]:
        """The ``options`` dict for ``solver.check_source`` (``_core.check_source``'s keys, plus
        ``solver: False`` when the Z3 bridge is switched off)."""
        opts: dict[str, Any] = {"may_fail": self.may_fail}
        if self.max_paths is not None:
            opts["max_paths"] = self.max_paths
        if self.max_steps is not None:
            opts["max_steps"] = self.max_steps
        if self.timeout_ms is not None:
            opts["timeout_ms"] = self.timeout_ms
        if not self.solver:
            opts["solver"] = False
        if not self.cache:
            opts["cache"] = False
        return opts


# key -> (attribute, kind)
_KEYS: dict[str, tuple[str, str]] = {
    "select": ("select", "codes"),
    "ignore": ("ignore", "codes"),
    "extend-select": ("extend_select", "codes"),
    "per-file-ignores": ("per_file_ignores", "per-file"),
    "exclude": ("exclude", "strings"),
    "extend-exclude": ("extend_exclude", "strings"),
    "respect-gitignore": ("respect_gitignore", "bool"),
    "may-fail": ("may_fail", "bool"),
    "max-paths": ("max_paths", "positive-int"),
    "max-steps": ("max_steps", "positive-int"),
    "timeout-ms": ("timeout_ms", "non-negative-int"),
    "solver": ("solver", "bool"),
    "cache": ("cache", "bool"),
    "output-format": ("output_format", "format"),
    "docs-url": ("docs_url", "url"),
}


def _type_name(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _known_codes(known: Iterable[str] | None) -> tuple[str, ...]:
    if known is not None:
        return tuple(known)
    from . import _core

    return tuple(r["code"] for r in _core.rules())


def validate_selector(selector: str, known_codes: Sequence[str], where: str) -> str:
    """Return the normalised selector, or raise :class:`ConfigError` naming ``where``."""
    if not isinstance(selector, str):
        raise ConfigError(f"{where}: expected a code prefix string, got {_type_name(selector)}")
    sel = selector.strip()
    if sel == "ALL":
        return sel
    if not _SELECTOR_RE.match(sel) or not any(code.startswith(sel) for code in known_codes):
        raise ConfigError(
            f"{where}: unknown rule selector {selector!r} "
            "(expected a code or code prefix such as SHP, SHP1 or SHP101)"
        )
    return sel


def _check_value(key: str, kind: str, value: Any, where: str, known_codes: Sequence[str]) -> Any:
    loc = f"{where}: key {key!r}"
    if kind == "codes":
        if not isinstance(value, list):
            raise ConfigError(f"{loc}: expected an array of rule codes, got {_type_name(value)}")
        return tuple(validate_selector(v, known_codes, loc) for v in value)
    if kind == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{loc}: expected an array of strings, got {_type_name(value)}")
        return tuple(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{loc}: expected a boolean (true/false), got {_type_name(value)}")
        return value
    if kind in ("positive-int", "non-negative-int"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{loc}: expected an integer, got {_type_name(value)}")
        if kind == "positive-int" and value <= 0:
            raise ConfigError(f"{loc}: expected a positive integer, got {value}")
        if value < 0:
            raise ConfigError(f"{loc}: expected a non-negative integer, got {value}")
        return value
    if kind == "url":
        if not isinstance(value, str) or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$", value):
            raise ConfigError(f"{loc}: expected a URL (https://... or file://...), got {value!r}")
        return value
    if kind == "format":
        if value not in OUTPUT_FORMATS:
            raise ConfigError(
                f"{loc}: expected one of {', '.join(OUTPUT_FORMATS)}, got {value!r}"
            )
        return value
    if kind == "per-file":
        if not isinstance(value, dict):
            raise ConfigError(
                f"{loc}: expected a table mapping glob patterns to arrays of codes, "
                f"got {_type_name(value)}"
            )
        out = []
        for pattern, codes in value.items():
            if not isinstance(codes, list):
                raise ConfigError(
                    f"{loc}: pattern {pattern!r}: expected an array of rule codes, "
                    f"got {_type_name(codes)}"
                )
            out.append(
                (
                    pattern,
                    tuple(
                        validate_selector(c, known_codes, f"{loc}: pattern {pattern!r}")
                        for c in codes
                    ),
                )
            )
        return tuple(out)
    raise AssertionError(kind)  # pragma: no cover


def settings_from_table(
    table: Mapping[str, Any],
    *,
    where: str,
    base: Settings | None = None,
    known_codes: Iterable[str] | None = None,
) -> Settings:
    """Validate a ``[tool.shape-lint]``-shaped table and lay it over ``base``."""
    codes = _known_codes(known_codes)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _KEYS:
            hint = ""
            alt = key.replace("_", "-")
            if alt in _KEYS:
                hint = f" (did you mean {alt!r}?)"
            raise ConfigError(
                f"{where}: unknown key {key!r}{hint}; known keys: {', '.join(sorted(_KEYS))}"
            )
        attr, kind = _KEYS[key]
        changes[attr] = _check_value(key, kind, value, where, codes)
    return (base or Settings()).replace(**changes)


def _tomllib() -> Any:
    """``tomllib`` (``tomli`` before 3.11), imported when a TOML text is read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


def _read_toml(path: Path) -> dict[str, Any]:
    tomllib = _tomllib()
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def load_config_file(path: Path) -> dict[str, Any]:
    """The shape-lint table of ``path``: ``[tool.shape-lint]`` for pyproject.toml, else the root."""
    doc = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = doc.get("tool", {})
        table = tool.get(TOOL_NAME, {}) if isinstance(tool, dict) else {}
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.{TOOL_NAME}] must be a table")
        return table
    return doc


def _pyproject_has_section(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if TOOL_NAME.encode() not in data and b"\\u" not in data and b"\\U" not in data:
        return False  # not even spelled (a key may spell it with escapes: parsed below)
    tomllib = _tomllib()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A broken pyproject.toml that does not concern us must not stop discovery; one that
        # mentions us is reported when loaded.
        try:
            return f"[tool.{TOOL_NAME}]" in path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    tool = doc.get("tool")
    return isinstance(tool, dict) and TOOL_NAME in tool


def find_config_file(start: Path) -> Path | None:
    """Nearest config file walking up from ``start`` (a directory or a file).

    ``.shape-lint.toml`` and ``shape-lint.toml`` always count; ``pyproject.toml`` only when it
    has a ``[tool.shape-lint]`` table (like ruff with ``[tool.ruff]``).
    """
    start = Path(os.path.abspath(start))
    if not start.is_dir():
        start = start.parent
    for directory in (start, *start.parents):
        for name in CONFIG_FILENAMES:
            candidate = directory / name
            if not candidate.is_file():
                continue
            if name == "pyproject.toml" and not _pyproject_has_section(candidate):
                continue
            return candidate
    return None


def parse_inline_override(text: str, known_codes: Iterable[str] | None = None) -> dict[str, Any]:
    """Parse a ``--config KEY=VALUE`` override (TOML syntax, ruff's convention)."""
    tomllib = _tomllib()
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {text!r}: not a file and not a valid KEY=VALUE TOML pair: {exc}")
    return table


def load_settings(
    config: str | os.PathLike[str] | None = None,
    *,
    isolated: bool = False,
    cwd: Path | None = None,
    overrides: Sequence[str] = (),
    known_codes: Iterable[str] | None = None,
) -> Settings:
    """Resolve the settings of a run.

    ``config`` is an explicit file (``--config PATH``); otherwise the nearest config file above
    ``cwd`` is used. ``isolated`` ignores all config files. ``overrides`` are ``KEY=VALUE`` TOML
    snippets applied last.
    """
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    codes = _known_codes(known_codes)
    settings = Settings(project_root=cwd)
    path: Path | None
    if isolated:
        path = None
    elif config is not None:
        path = Path(config)
        if not path.is_absolute():
            path = cwd / path
        if not path.is_file():
            raise ConfigError(f"--config {config}: no such file")
    else:
        path = find_config_file(cwd)
    if path is not None:
        table = load_config_file(path)
        settings = settings_from_table(
            table,
            where=str(path),
            base=settings.replace(source=path, project_root=path.parent),
            known_codes=codes,
        )
    for text in overrides:
        settings = settings_from_table(
            parse_inline_override(text), where=f"--config {text!r}", base=settings, known_codes=codes
        )
    return settings


# --------------------------------------------------------------------------------------------
# Path patterns (exclude, per-file-ignores): ruff matches a glob against the absolute path and
# against the basename; relative patterns are anchored at the project root.


def _absolute_pattern(pattern: str, root: Path) -> str:
    expanded = os.path.expanduser(pattern)
    if os.path.isabs(expanded):
        return os.path.normpath(expanded)
    return os.path.join(str(root), expanded)


_GLOB_CHARS = ("*", "?", "[")


class _Matcher:
    """A list of patterns prepared once: literal names and paths in sets (most patterns, the
    default excludes all, have no wildcard), the globs as one regular expression each for the
    basename and for the absolute path."""

    __slots__ = ("names", "paths", "name_glob", "path_glob")

    def __init__(self, patterns: Sequence[str], root: Path) -> None:
        names: set[str] = set()
        paths: set[str] = set()
        name_globs: list[str] = []
        path_globs: list[str] = []
        for pattern in patterns:
            absolute = _absolute_pattern(pattern, root)
            if _is_glob(pattern):
                name_globs.append(pattern)
            else:
                names.add(pattern)
            if _is_glob(absolute):
                path_globs.append(absolute)
            else:
                paths.add(absolute)
        self.names = frozenset(names)
        self.paths = frozenset(paths)
        self.name_glob = _one_regex(name_globs)
        self.path_glob = _one_regex(path_globs)

    def matches(self, abspath: str) -> bool:
        basename = os.path.basename(abspath)
        if basename in self.names or abspath in self.paths:
            return True
        if self.name_glob is not None and self.name_glob.match(basename):
            return True
        return self.path_glob is not None and self.path_glob.match(abspath) is not None


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in _GLOB_CHARS)


def _one_regex(globs: Sequence[str]) -> re.Pattern[str] | None:
    """One expression that matches what ``fnmatch.fnmatchcase`` matches with any of ``globs``."""
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))


@functools.lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...], root: Path) -> _Matcher:
    return _Matcher(patterns, root)


def matches_any(path: str | os.PathLike[str], patterns: Iterable[str], root: Path) -> bool:
    """Whether ``path`` (file or directory) matches one of the glob ``patterns``: its basename
    or its absolute path (``fnmatch.fnmatchcase``; relative patterns anchored at ``root``)."""
    return _matcher(tuple(patterns), root).matches(os.path.abspath(path))


# --------------------------------------------------------------------------------------------
# Rule selection


def _specificity(selector: str) -> int:
    return len("SHP") if selector == "ALL" else len(selector)


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


class _Layer(Record):
    _frozen = True

    select: tuple[str, ...] | None
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]


class RuleSelection:
    """Which codes are enabled, globally and per file.

    Layers are applied in order (defaults, config file, command line), like ruff: a layer with
    ``select`` starts afresh, one without carries the previous set over; inside a layer the
    selectors are applied from the least to the most specific, ignores after selects at equal
    specificity.
    """

    def __init__(
        self,
        layers: Sequence[tuple[Sequence[str] | None, Sequence[str], Sequence[str]]] = (),
        *,
        per_file_ignores: Sequence[tuple[str, Sequence[str]]] = (),
        project_root: Path | None = None,
        default_enabled: Mapping[str, bool] | None = None,
    ) -> None:
        self._layers = [
            _Layer(None if s is None else tuple(s), tuple(e), tuple(i)) for s, e, i in layers
        ]
        self._per_file = [(p, tuple(c)) for p, c in per_file_ignores]
        self._root = project_root or Path.cwd()
        self._default_enabled = dict(default_enabled or {})
        self._cache: dict[str, bool] = {}

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        cli_select: Sequence[str] | None = None,
        cli_extend_select: Sequence[str] = (),
        cli_ignore: Sequence[str] = (),
        cli_per_file_ignores: Sequence[tuple[str, Sequence[str]]] | None = None,
        rules: Sequence[Mapping[str, Any]] | None = None,
    ) -> RuleSelection:
        if rules is None:
            from . import _core

            rules = _core.rules()
        layers: list[tuple[Sequence[str] | None, Sequence[str], Sequence[str]]] = [
            (settings.select, settings.extend_select, settings.ignore)
        ]
        if cli_select is not None or cli_extend_select or cli_ignore:
            layers.append((cli_select, cli_extend_select, cli_ignore))
        per_file = (
            settings.per_file_ignores if cli_per_file_ignores is None else cli_per_file_ignores
        )
        return cls(
            layers,
            per_file_ignores=per_file,
            project_root=settings.project_root,
            default_enabled={r["code"]: bool(r["default_enabled"]) for r in rules},
        )

    def _opt_in(self, code: str) -> bool:
        if code in self._default_enabled:
            return not self._default_enabled[code]
        return code.startswith("SHP9")

    def is_enabled(self, code: str) -> bool:
        """Whether ``code`` is enabled by select / ignore / extend-select (not per file)."""
        cached = self._cache.get(code)
        if cached is not None:
            return cached
        opt_in = self._opt_in(code)
        # Built-in default: everything that is not opt-in.
        enabled = not opt_in and code.startswith("SHP")
        for layer in self._layers:
            if layer.select is not None:
                enabled = False
            entries = [(_specificity(s), 0, s) for s in (layer.select or ()) + layer.extend_select]
            entries += [(_specificity(s), 1, s) for s in layer.ignore]
            entries.sort(key=lambda e: (e[0], e[1]))
            for spec, is_ignore, sel in entries:
                if not _matches(code, sel):
                    continue
                if is_ignore:
                    enabled = False
                elif not opt_in or spec >= _OPT_IN_MIN_SPECIFICITY:
                    enabled = True
        self._cache[code] = enabled
        return enabled

    def ignored_in_file(self, path: str | os.PathLike[str], code: str) -> bool:
        """Whether ``per-file-ignores`` switches ``code`` off for ``path``."""
        for pattern, codes in self._per_file:
            if any(_matches(code, c) for c in codes) and matches_any(path, [pattern], self._root):
                return True
        return False

    def silenced(self, path: str | os.PathLike[str] | None, code: str) -> bool:
        """Whether an ``ignore`` selector or ``per-file-ignores`` names ``code``: a notice
        shown whether or not it is selected (``SHP002``) is hidden then."""
        if any(_matches(code, s) for layer in self._layers for s in layer.ignore):
            return True
        return path is not None and self.ignored_in_file(path, code)

    def enabled_for(self, path: str | os.PathLike[str] | None, code: str) -> bool:
        if not self.is_enabled(code):
            return False
        return path is None or not self.ignored_in_file(path, code)


def parse_per_file_ignores_arg(values: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Parse ``--per-file-ignores`` values: ``PATTERN:CODE[,CODE...]`` (comma-separated pairs;
    a bare code continues the previous pattern)."""
    out: dict[str, list[str]] = {}
    for value in values:
        pattern: str | None = None
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            if ":" in item:
                pattern, _, code = item.rpartition(":")
                pattern = pattern.strip()
                code = code.strip()
            elif pattern is None:
                raise ConfigError(
                    f"--per-file-ignores {value!r}: expected PATTERN:CODE pairs, got {item!r}"
                )
            else:
                code = item
            if not pattern:
                raise ConfigError(f"--per-file-ignores {value!r}: empty file pattern")
            out.setdefault(pattern, []).append(code)
    return list(out.items())
