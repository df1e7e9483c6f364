"""``shape-lint coverage``: the Unknown-cause report.

For a file or a tree: how much of the code the analysis followed (the share of expressions
whose value it knew; of tensor expressions, the share with a known rank, dtype and device; of
``backward()`` calls, the share whose graph and optimizers it knew), and the constructs that
made values Unknown, each with its number of sites and a first example. The core records it
(``engine/coverage.rs``); this module adds the files up and renders them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import notebook

COUNTS = (
    "exprs", "unknown", "tensors", "rank_known", "dtype_known", "device_known",
    "backward", "backward_graph_known", "backward_optimizer_known", "findings",
)


def coverage_of(source: str, filename: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from . import _core

    return dict(_core.coverage_source(source, filename, dict(options)))


def _cell(origin: Mapping[str, Any]) -> str:
    """``cell K:`` of an origin in a notebook (``path:cell K:row:col``, as ``check`` writes it)."""
    return f"cell {origin['cell']}:" if origin.get("cell") is not None else ""


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def aggregate(results: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The files' reports added up: totals, shares, and the origins merged by (kind, label)
    with their sites summed and the first file's first site as the example."""
    totals = dict.fromkeys(COUNTS, 0)
    origins: dict[tuple[str, str], dict[str, Any]] = {}
    incomplete: list[str] = []
    failed: list[str] = []
    for path, r in results:
        if "error" in r:
            failed.append(path)
            continue
        for k in COUNTS:
            totals[k] += int(r.get(k, 0))
        if r.get("incomplete"):
            incomplete.append(path)
        for o in r.get("origins", []):
            key = (o["kind"], o["label"])
            cur = origins.get(key)
            if cur is None:
                origins[key] = {"kind": o["kind"], "label": o["label"], "count": o["count"], "files": 1,
                                "example": f"{path}:{_cell(o)}{o['row']}:{o['col']}"}
            else:
                cur["count"] += o["count"]
                cur["files"] += 1
    shares = {
        "known_values": _ratio(totals["exprs"] - totals["unknown"], totals["exprs"]),
        "tensor_rank_known": _ratio(totals["rank_known"], totals["tensors"]),
        "tensor_dtype_known": _ratio(totals["dtype_known"], totals["tensors"]),
        "tensor_device_known": _ratio(totals["device_known"], totals["tensors"]),
        "backward_graph_known": _ratio(totals["backward_graph_known"], totals["backward"]),
        "backward_optimizer_known": _ratio(totals["backward_optimizer_known"], totals["backward"]),
    }
    ranked = sorted(origins.values(), key=lambda o: (-o["count"], o["kind"], o["label"]))
    return {
        "files": len(results),
        "failed": failed,
        "incomplete": incomplete,
        "totals": totals,
        "shares": shares,
        "origins": ranked,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def render_text(agg: Mapping[str, Any], top: int) -> str:
    t = agg["totals"]
    lines = [
        f"shape-lint coverage: {agg['files']} file{'s' if agg['files'] != 1 else ''}"
        f" ({len(agg['incomplete'])} cut by a budget, {len(agg['failed'])} failed)",
        "",
        f"values    {t['exprs']} expressions evaluated: {_pct(t['exprs'] - t['unknown'], t['exprs'])} known"
        f" ({t['unknown']} Unknown on some path)",
        f"tensors   {t['tensors']} tensor expressions: rank {_pct(t['rank_known'], t['tensors'])},"
        f" dtype {_pct(t['dtype_known'], t['tensors'])}, device {_pct(t['device_known'], t['tensors'])} known",
        f"backward  {t['backward']} backward() sites: graph known {_pct(t['backward_graph_known'], t['backward'])},"
        f" optimizers known {_pct(t['backward_optimizer_known'], t['backward'])}",
    ]
    origins = agg["origins"][:top]
    if origins:
        lines += ["", "What made values imprecise (sites, files, kind, construct, first site):"]
        w = max(len(str(o["count"])) for o in origins)
        lw = max(len(o["label"]) for o in origins)
        for o in origins:
            lines.append(f"  {o['count']:>{w}}  {o['files']:>3}  {o['kind']:<5}  {o['label']:<{lw}}  {o['example']}")
    for p in agg["incomplete"]:
        lines.append(f"note: {p}: an entry point was cut by a budget; its figures cover what ran")
    for p in agg["failed"]:
        lines.append(f"error: {p}: the analysis failed")
    return "\n".join(lines) + "\n"


def run(files: Iterable[tuple[Path, str]], options: Mapping[str, Any], read: Any) -> list[tuple[str, dict[str, Any]]]:
    """Each (path, display name) analysed with ``read(path) -> source or None`` (unreadable
    files are skipped), on every core, in the order given."""
    items = list(files)

    def one(item: tuple[Path, str]) -> tuple[str, dict[str, Any]] | None:
        path, display = item
        source = read(path)
        if source is None:
            return None
        nb = None
        if notebook.is_notebook(str(path)):
            try:
                nb = notebook.parse(source)
            except notebook.NotebookError as exc:
                return display, {"error": str(exc)}
            source = nb.source
        report = coverage_of(source, os.path.abspath(path), options)
        for o in report.get("origins", []) if nb is not None else ():
            o["cell"], o["row"] = nb.locate(int(o["row"]))  # in a notebook: the cell, the line in it
        return display, report

    if len(items) <= 1:
        out = [one(i) for i in items]
    else:
        with ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 1) + 1, len(items))) as pool:
            out = list(pool.map(one, items))
    return [r for r in out if r is not None]


def render_json(agg: Mapping[str, Any], per_file: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    data = dict(agg)
    data["per_file"] = [dict(r, path=p) for p, r in per_file]
    return json.dumps(data, indent=2) + "\n"
