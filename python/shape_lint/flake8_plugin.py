"""flake8 plugin (entry point ``SHP = shape_lint.flake8_plugin:Plugin``).

The plugin analyses ``"".join(lines)`` (so stdin and editor buffers work), never the file on disk,
and leaves ``# noqa`` and code selection to flake8. The opt-in SHP9xx codes are added to flake8's
default ignore list; ``--extend-select SHP9`` turns them on.

Analysis settings come from flake8's ``--shp-*`` options (also from ``[flake8]`` config), falling
back to ``[tool.shape-lint]`` in the nearest pyproject.toml / shape-lint.toml above the file, so
flake8 and ``shape-lint check`` agree.

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


def _project_options(filename: str) -> dict[str, Any]:
    """Analysis options from the nearest ``[tool.shape-lint]`` above ``filename`` (cached)."""
    directory = os.path.dirname(os.path.abspath(filename)) if filename else os.getcwd()
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
                    "timeout_ms": settings.timeout_ms,
                }
                if not settings.solver:
                    cached["solver"] = False
                if not settings.cache:
                    cached["cache"] = False
        except config.ConfigError as exc:
            cached = f"configuration error: {exc}"
        _PROJECT_CACHE[directory] = cached
    if isinstance(cached, str):
        raise _ProjectConfigError(cached)
    return cached


class _ProjectConfigError(Exception):
    pass


class Plugin:
    """flake8 checker: one instance per file."""

    name = "shape-lint"
    version = _plugin_version()

    #: Set by :meth:`parse_options` from flake8's options; ``None`` means "not given".
    _flake8_options: ClassVar[dict[str, Any]] = {}

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # ``tree`` is required for flake8 to classify us as an AST plugin; we parse ourselves.
        self.lines = lines
        self.filename = filename

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
            "--shp-timeout-ms",
            type=int,
            default=None,
            parse_from_config=True,
            help="shape-lint: analysis time budget per file, in milliseconds",
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
        option_manager.extend_default_ignore(["SHP9"])

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls._flake8_options = {
            "may_fail": getattr(options, "shp_may_fail", None),
            "max_paths": getattr(options, "shp_max_paths", None),
            "timeout_ms": getattr(options, "shp_timeout_ms", None),
            "solver": False if getattr(options, "shp_no_solver", None) else None,
            "cache": False if getattr(options, "shp_no_cache", None) else None,
        }

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
                message = " ".join(str(f["message"]).splitlines())
                results.append(
                    (int(f["row"]), max(int(f["col"]) - 1, 0), f"{f['code']} {message}", type(self))
                )
        except Exception as exc:  # never crash flake8
            reason = " ".join(f"{type(exc).__name__}: {exc}".splitlines())
            if isinstance(exc, _ProjectConfigError):
                reason = str(exc)
            yield (1, 0, f"SHP001 shape-lint internal error: {reason}", type(self))
            return
        yield from results
