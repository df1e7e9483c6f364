"""flake8 plugin (entry point ``SHP = shape_lint.flake8_plugin:Plugin``).

The plugin analyses ``"".join(lines)`` (so stdin and editor buffers work), never the file on disk,
and leaves ``# noqa`` and code selection to flake8. The opt-in SHP9xx codes are added to flake8's
default ignore list; ``--extend-select SHP9`` turns them on.

Analysis settings come from flake8's ``--shp-*`` options (also from ``[flake8]`` config), falling
back to ``[tool.shape-lint]`` in the nearest pyproject.toml / shape-lint.toml above the file, so
flake8 and ``shape-lint check`` agree. The text is flake8's: flake8 decodes the file (BOM, PEP 263
coding line, else UTF-8) as the CLI does (``cli.decode_source``).

A configuration error (a typo in ``[tool.shape-lint]``, validated as the CLI validates it) is one
message and no findings: for the config above the paths flake8 was given, :meth:`Plugin.parse_options`
prints ``flake8: error: shape-lint configuration error: FILE: ...`` on stderr and exits 2 (flake8's
own way with a bad option); for a config file only met below them, the plugin's constructor
raises, and flake8 stops with ``FILE: "SHP" failed during execution due to ...``. An analyser bug is still one
``SHP001`` finding on the file (flake8 is never crashed by one).

Importing this module is cheap: no Z3, no threads, no analysis. Z3 is imported only for a file
that has checks the core left undecided (``shape_lint.solver``); ``--shp-no-solver`` (or
``solver = false`` in ``[tool.shape-lint]``) switches the bridge off.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping, Sequence

if TYPE_CHECKING:
    import ast

__all__ = ["Plugin"]


def _plugin_version() -> str:
    try:
        from . import _core

        return str(_core.__version__)
    except Exception:  # pragma: no cover - a broken build must not break flake8's start-up
        return "unknown"


def _check_source(source: str, filename: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The seam to the Rust core and the Z3 bridge (tests monkeypatch it)."""
    from . import solver

    return solver.check_source(source, filename, options)


# Project settings per directory: directory -> analysis options (or the ConfigError message).
_PROJECT_CACHE: dict[str, dict[str, Any] | str] = {}


def _directory_options(directory: str) -> dict[str, Any] | str:
    """Analysis options from the nearest config file above ``directory`` (cached), or the
    message of its configuration error (the CLI's validation: ``config.settings_from_table``)."""
    cached = _PROJECT_CACHE.get(directory)
    if cached is None:
        from pathlib import Path

        from . import config

        try:
            path = config.find_config_file(Path(directory))
            if path is None:
                cached = {}
            else:
                settings = config.settings_from_table(
                    config.load_config_file(path), where=str(path)
                )
                cached = {
                    "may_fail": settings.may_fail,
                    "max_paths": settings.max_paths,
                    "max_steps": settings.max_steps,
                    "timeout_ms": settings.timeout_ms,
                }
                if not settings.solver:
                    cached["solver"] = False
                if not settings.cache:
                    cached["cache"] = False
        except config.ConfigError as exc:
            cached = f"shape-lint configuration error: {exc}"
        _PROJECT_CACHE[directory] = cached
    return cached


def _project_options(filename: str) -> dict[str, Any]:
    """Analysis options from the nearest ``[tool.shape-lint]`` above ``filename`` (cached)."""
    directory = os.path.dirname(os.path.abspath(filename)) if filename else os.getcwd()
    cached = _directory_options(directory)
    if isinstance(cached, str):
        raise _ProjectConfigError(cached)
    return cached


class _ProjectConfigError(Exception):
    """A configuration error met while checking a file (a config file below the paths flake8
    was given, so not validated at start-up): raised by the plugin's constructor, so flake8 stops
    with one message, ``FILE: "SHP" failed during execution due to <this message>``."""

    def __repr__(self) -> str:
        return str(self)


def _start_directories(options: Any) -> list[str]:
    """The directories whose configuration applies to the paths flake8 was given: a directory
    argument itself, a file's directory, the current directory for ``-`` (stdin) or no path."""
    out: list[str] = []
    for name in getattr(options, "filenames", None) or ["."]:
        if name == "-":
            display = getattr(options, "stdin_display_name", "stdin") or "stdin"
            directory = os.path.dirname(os.path.abspath(display))
        else:
            path = os.path.abspath(name)
            directory = path if os.path.isdir(path) else os.path.dirname(path)
        if directory not in out:
            out.append(directory)
    return out


class Plugin:
    """flake8 checker: one instance per file."""

    name = "shape-lint"
    version = _plugin_version()

    #: Set by :meth:`parse_options` from flake8's options; ``None`` means "not given".
    _flake8_options: ClassVar[dict[str, Any]] = {}
    #: Whether the analysis-incomplete notice (SHP002) was selected by name (``parse_options``).
    _notices: ClassVar[bool] = False

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # ``tree`` is required for flake8 to classify us as an AST plugin; we parse ourselves.
        self.lines = lines
        self.filename = filename
        # A configuration error raised here (not from ``run``, which flake8 iterates outside its
        # guard) becomes flake8's PluginExecutionFailed: one message, flake8 stops.
        _project_options(filename)

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.add_option(
            "--shp-may-fail",
            action="store_true",
            default=None,
            parse_from_config=True,
            help="shape-lint: also report lines that fail only on some paths (SHP9xx; "
            "enable those codes with --extend-select SHP9)",
        )
        option_manager.add_option(
            "--shp-max-paths",
            type=int,
            default=None,
            parse_from_config=True,
            help="shape-lint: path budget per function",
        )
        option_manager.add_option(
            "--shp-max-steps",
            type=int,
            default=None,
            parse_from_config=True,
            help="shape-lint: work budget per file, in interpreter steps",
        )
        option_manager.add_option(
            "--shp-timeout-ms",
            type=int,
            default=None,
            parse_from_config=True,
            help="shape-lint: wall-clock safety net per file, in milliseconds",
        )
        option_manager.add_option(
            "--shp-no-solver",
            action="store_true",
            default=None,
            parse_from_config=True,
            help="shape-lint: do not let Z3 decide the checks the core leaves undecided",
        )
        option_manager.add_option(
            "--shp-no-cache",
            action="store_true",
            default=None,
            parse_from_config=True,
            help="shape-lint: neither read nor write the caches of findings and Z3 answers (.shape_lint_cache)",
        )
        # the opt-in rules, and the analysis-incomplete notice (select it to see it)
        option_manager.extend_default_ignore(["SHP9", "SHP002"])

    @classmethod
    def parse_options(cls, options: Any) -> None:
        # SHP002 (analysis incomplete) is a notice about the analysis: reported only when a
        # selector names it more precisely than the whole plugin (``--extend-select=SHP002``,
        # ``SHP0``), not by ``--select=SHP``, so that a selection of every finding is not
        # also one of notices
        chosen = list(getattr(options, "select", None) or []) + list(getattr(options, "extend_select", None) or [])
        cls._notices = any(len(c) > len("SHP") and "SHP002".startswith(c) for c in chosen)
        cls._flake8_options = {
            "may_fail": getattr(options, "shp_may_fail", None),
            "max_paths": getattr(options, "shp_max_paths", None),
            "max_steps": getattr(options, "shp_max_steps", None),
            "timeout_ms": getattr(options, "shp_timeout_ms", None),
            "solver": False if getattr(options, "shp_no_solver", None) else None,
            "cache": False if getattr(options, "shp_no_cache", None) else None,
        }
        # A broken [tool.shape-lint] is one error at start-up, as flake8 reports a bad option
        # (argparse's ``flake8: error: ...`` on stderr, exit 2), not a finding on every file.
        for directory in _start_directories(options):
            problem = _directory_options(directory)
            if isinstance(problem, str):
                import sys

                sys.stderr.write(f"flake8: error: {problem}\n")
                raise SystemExit(2)

    def _options(self) -> dict[str, Any]:
        merged = dict(_project_options(self.filename))
        for key, value in type(self)._flake8_options.items():
            if value is not None:
                merged[key] = value
        return {k: v for k, v in merged.items() if v is not None}

    def run(self) -> Iterator[tuple[int, int, str, type[Plugin]]]:
        try:
            source = "".join(self.lines)
            findings = _check_source(source, self.filename, self._options())
            results = []
            for f in findings:
                if f["code"] == "SHP002" and not type(self)._notices:
                    continue
                message = " ".join(str(f["message"]).splitlines())
                results.append(
                    (int(f["row"]), max(int(f["col"]) - 1, 0), f"{f['code']} {message}", type(self))
                )
        except Exception as exc:  # never crash flake8 on an analyser bug
            reason = " ".join(f"{type(exc).__name__}: {exc}".splitlines())
            yield (1, 0, f"SHP001 shape-lint internal error: {reason}", type(self))
            return
        yield from results
