"""The cache of Z3 answers: every query ``solver._solve`` sends, keyed by a hash of what decides
its answer.

A Z3 answer is a function of the query's SMT-LIB text, its deterministic resource limit
(``rlimit``), whether a model was asked for, and the Z3 build. The key is a SHA-256 of exactly
these (:func:`key`). The wall-clock timeout is not in it: a ``sat`` or ``unsat`` answer is true
whatever time it took, and an answer the timeout cut short is never stored (below).

Two layers:

- **In-process memo**: every answer of this process, for any caller (flake8 worker, CLI,
  language server, direct ``solver.decide``), at most :data:`MEMO_MAX` entries (oldest dropped).
- **On disk**, while :func:`project` is active for a file inside a project (the root the
  results cache uses, ``cache.project_root``): ``.shape_lint_cache/z3/v1/<xx>.json`` under the
  project root, 256 shard files by the key's first two hex digits, each a JSON object
  ``{key: answer}``. A shard keeps its newest :data:`SHARD_MAX` entries (so at most 65,536
  answers, a few MB, per project). A shard is written atomically (a temporary file renamed into
  place, as ``cache.py`` does), after reading it again, so concurrent flake8 workers never see a
  half-written file; two workers adding to one shard at the same moment may lose one of the two
  entries, which only costs that query again. Files outside any project get the memo only: a
  checker that litters ``$HOME`` or ``/tmp`` with caches for throw-away files is not what a user
  asks for (the results cache does the same). ``--no-cache`` (``cache = false``) turns the disk
  layer off; the memo stays (it lives as long as the process).

**What is stored.** ``sat`` and ``unsat`` (with the model when one was asked for), and an
``unknown`` that the deterministic ``rlimit`` or Z3 itself produced (a resource limit, an
incomplete theory, a script Z3 cannot parse): asked again, Z3 gives the same answer, so a
pathological query costs its limit once, not on every run. An ``unknown`` from the wall-clock
timeout (Z3's reason says ``timeout``, or the query ran for at least half its timeout) is
never stored: on a loaded machine it says nothing about the query, and pinning it would keep
a decidable check silent for good. A cache that cannot be read or written is skipped: it only
ever saves time, and it never changes an answer Z3 would give for the same key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Iterator

__all__ = ["MEMO_MAX", "SHARD_MAX", "forget", "get", "key", "project", "put", "z3_version"]

#: Answers kept in memory per process.
MEMO_MAX = 20_000
#: Answers kept per shard file on disk (256 shards per project).
SHARD_MAX = 256
_DIR = ("z3", "v1")

_lock = threading.Lock()
_memo: dict[str, dict[str, Any]] = {}
# shard path -> its entries as last read or written by this process
_shards: dict[Path, dict[str, Any]] = {}
_local = threading.local()
_version: list[str] = []


def z3_version() -> str | None:
    """The installed Z3's version, without importing it (importing z3 costs 150-500 ms, and a
    run answered from the cache must not pay it); None when Z3 is not available."""
    if _version:
        return _version[0] or None
    import sys

    if "z3" in sys.modules and sys.modules["z3"] is None:  # blocked, as tests do
        return None
    got = ""
    try:
        from importlib import metadata

        got = metadata.version("z3-solver")
    except Exception:
        try:
            import z3

            got = z3.get_version_string()
        except Exception:
            got = ""
    _version.append(got)
    return got or None


def key(script: str, *, model: bool, rlimit: int) -> str | None:
    """The cache key of a query, or None when Z3 is not installed."""
    version = z3_version()
    if version is None:
        return None
    blob = json.dumps(["z3-answer-1", version, int(rlimit), bool(model), script])
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def forget() -> None:
    """Drop the in-process memo and the shards read so far (tests; a client whose cache folder
    was removed)."""
    with _lock:
        _memo.clear()
        _shards.clear()


@contextlib.contextmanager
def project(filename: str, enabled: bool = True) -> Iterator[None]:
    """While active on this thread, answers are also read from and written to the disk cache of
    ``filename``'s project (nothing on disk for a file outside any project or when not
    ``enabled``)."""
    folder = _folder(filename) if enabled else None
    prev = getattr(_local, "folder", None)
    _local.folder = folder
    try:
        yield
    finally:
        _local.folder = prev


def _folder(filename: str) -> Path | None:
    from .cache import CACHE_DIR, project_root

    try:
        path = Path(filename).resolve()
        if not path.is_file():
            return None
        root = project_root(path)
    except OSError:
        return None
    return None if root is None else root / CACHE_DIR


def get(k: str) -> dict[str, Any] | None:
    """The stored answer for key ``k``, from the memo or the active project's disk cache."""
    with _lock:
        got = _memo.get(k)
        if got is not None:
            return got
        folder = getattr(_local, "folder", None)
        if folder is None:
            return None
        shard = _shard_path(folder, k)
        entries = _shards.get(shard)
        if entries is None:
            entries = _read(shard)
            _shards[shard] = entries
        got = entries.get(k)
        if isinstance(got, dict) and got.get("answer") in ("sat", "unsat", "unknown"):
            _remember(k, got)
            return got
        return None


def put(k: str, answer: dict[str, Any]) -> None:
    """Store ``answer`` (a deterministic one: see the module doc) under key ``k``."""
    with _lock:
        _remember(k, answer)
        folder = getattr(_local, "folder", None)
        if folder is None:
            return
        shard = _shard_path(folder, k)
        entries = _read(shard)  # again: another worker may have added to it
        entries.pop(k, None)
        entries[k] = answer
        while len(entries) > SHARD_MAX:
            del entries[next(iter(entries))]  # the oldest
        _shards[shard] = entries
        _write(folder, shard, entries)


def _remember(k: str, answer: dict[str, Any]) -> None:
    _memo[k] = answer
    while len(_memo) > MEMO_MAX:
        del _memo[next(iter(_memo))]


def _shard_path(folder: Path, k: str) -> Path:
    return folder.joinpath(*_DIR, f"{k[:2]}.json")


def _read(shard: Path) -> dict[str, Any]:
    try:
        with open(shard, encoding="utf-8") as f:
            got = json.load(f)
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(top: Path, shard: Path, entries: dict[str, Any]) -> None:
    try:
        if not top.exists():
            top.mkdir(exist_ok=True)
            (top / ".gitignore").write_text("# created by shape-lint\n*\n", encoding="utf-8")
        shard.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # (with shutil and random: 5 ms at start-up, needed only to write)

        fd, tmp = tempfile.mkstemp(dir=shard.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entries, f, separators=(",", ":"))
            os.replace(tmp, shard)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass
