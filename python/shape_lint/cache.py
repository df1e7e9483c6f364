"""The results cache, shared by flake8's parallel workers, the CLI and later runs.

A file's findings depend on its text, the analysis options, the core's version and, since the
core runs the file's project imports and the project's scripts that import it, on the other
Python files of its project. So an entry is keyed by all of them:

- the core's version, the options, the file's absolute path and a hash of its text;
- the *project stamp*: the path, size and modification time of every ``.py`` file under the
  project root (the directory with ``pyproject.toml``, ``setup.cfg`` or ``.git`` above the
  file, the same root the core searches), walked as the core walks it (hidden, cache,
  environment and build folders skipped). It is taken once per process and root (flake8 and
  the CLI check a tree that does not change while they run; a long-lived client calls
  :func:`forget_stamps` when files change).

The project's scripts that import a checked file are analysed once for all the files they load
(``rust/engine/scripts.rs``). The core keeps those script results in the same folder, under
``scripts/v1/`` (``rust/engine/script_cache.rs``), when it is given :func:`script_salt` (the
core's version and build, as below): one entry per script and options, keyed too by the paths of
the project's Python files, and holding the content hash of every file the script's run loaded.
It is used only while all those files have the same content, so a second process (flake8's
other workers, the next run after an edit elsewhere) takes a script's result instead of running
it again, while an entry of this cache (keyed by the project stamp) would miss.

Entries live in ``.shape_lint_cache/v1/`` under the project root, one small JSON file each,
written atomically (a temporary file renamed into place), so concurrent workers never see a
half-written entry. The folder holds a ``.gitignore`` of ``*``, as ruff's ``.ruff_cache``
does. Files outside any project are not cached. A cache that cannot be read or written is
silently skipped: it only ever saves time.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

__all__ = ["CACHE_DIR", "cached", "forget_stamps", "project_root", "script_salt"]

CACHE_DIR = ".shape_lint_cache"
_VERSION_DIR = "v1"
_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")
# the folders the core's walk skips (rust/engine/project.rs, `skipped_dir`)
_SKIPPED = {"__pycache__", "node_modules", "site-packages", "venv", "env", "build", "dist", "target"}
_MAX_FILES = 4000

_stamps: dict[str, str] = {}


def project_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path``'s directory with a project marker."""
    for d in [path.parent, *path.parent.parents]:
        if any((d / m).exists() for m in _ROOT_MARKERS):
            return d
    return None


def forget_stamps() -> None:
    """Take the project stamps again on the next check (files were added or changed)."""
    _stamps.clear()


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in _SKIPPED or name.endswith(".egg-info")


def _stamp(root: Path) -> str:
    key = str(root)
    got = _stamps.get(key)
    if got is not None:
        return got
    h = hashlib.sha256()
    count = 0
    stack = [str(root)]
    while stack and count < _MAX_FILES:
        d = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if not _skipped(e.name):
                        stack.append(e.path)
                elif e.name.endswith(".py") and e.is_file():
                    st = e.stat()
                    h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                    count += 1
            except OSError:
                continue
    got = h.hexdigest()
    _stamps[key] = got
    return got


def _core_version() -> str:
    """The core's version and build (a rebuilt core of the same version must not reuse the
    old one's findings), and the Python modules that turn the core's output into findings
    (the Z3 bridge and SHP902's counterexamples: an edited ``may_fail.py`` changes messages)."""
    from . import _core

    here = Path(__file__).resolve().parent
    build = ""
    for f in (_core.__file__, here / "solver.py", here / "may_fail.py"):
        try:
            st = os.stat(f)
            build += f"{st.st_size}:{st.st_mtime_ns};"
        except (OSError, AttributeError, TypeError):
            build += "?;"
    return f"{_core.__version__}:{build}"


def script_salt() -> str:
    """What the core keys the script results it keeps in the project's cache with: the core's
    version and build (the same part of this cache's keys)."""
    return _core_version()


def cached(
    source: str,
    filename: str,
    options: Mapping[str, Any],
    run: Callable[[], Any],
    kind: type = list,
) -> Any:
    """``run()``'s findings for ``filename`` with text ``source``, from the cache when an entry
    with the same key exists, else computed and stored. ``kind`` is the type of what ``run``
    returns (``dict`` for the language server's analyses, which hold shapes too)."""
    try:
        path = Path(filename).resolve()
        if not path.is_file():
            return run()
        root = project_root(path)
    except OSError:
        return run()
    if root is None:
        return run()
    key = hashlib.sha256(
        json.dumps(
            [
                _core_version(),
                sorted((str(k), repr(v)) for k, v in options.items()),
                str(path),
                hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
                _stamp(root),
            ]
        ).encode()
    ).hexdigest()
    folder = root / CACHE_DIR / _VERSION_DIR / key[:2]
    entry = folder / f"{key}.json"
    try:
        with open(entry, encoding="utf-8") as f:
            findings = json.load(f)
        if isinstance(findings, kind):
            return findings
    except (OSError, ValueError):
        pass
    findings = run()
    _store(root, folder, entry, findings)
    return findings


def _store(root: Path, folder: Path, entry: Path, findings: Any) -> None:
    try:
        top = root / CACHE_DIR
        if not top.exists():
            top.mkdir(exist_ok=True)
            (top / ".gitignore").write_text("# created by shape-lint\n*\n", encoding="utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        import tempfile  # (with shutil and random: 5 ms at start-up, needed only to write)

        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(findings, f)
        os.replace(tmp, entry)
    except OSError:
        pass
