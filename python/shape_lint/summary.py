"""``shape-lint summary FILE [--model NAME] [--output-format text|json]``: a torchinfo-like
table of each model call the script makes, computed by the core without running anything.

The JSON is a list with one object per model call, in call order: ``model`` (the class name),
``input_ranks`` (only with ``--model``: the rank of each ``forward`` input the record reads it
at; where the core takes the inputs at several ranks, batched or not, one record per reading),
``output_shape`` (ints, or strings for symbolic dims; ``null`` when not one tensor),
``total_params`` (``null`` when not known), ``layers`` (the leaf modules called, in call order,
each ``{"name", "type", "output_shape", "params"}``: what torch's forward hooks see) and
``complete`` / ``incomplete`` (why a record may differ from torch's: never a guess).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["records", "render_text", "summarise"]


def summarise(
    source: str, filename: str, model: str | None = None, input_size: Sequence[Sequence[int]] | None = None,
) -> list[dict[str, Any]]:
    """The core's model calls, each as the JSON object described above. ``input_size`` (with
    ``model``): torchinfo's, one size per ``forward`` input, the batch included."""
    from . import _core

    sizes = None if input_size is None else [list(s) for s in input_size]
    return records(_core.model_summary(source, filename, model, None, sizes))


def records(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in calls:
        out.append({
            "model": c["model"],
            "line": c["line"],
            **({"input_ranks": c["input_ranks"]} if c.get("input_ranks") is not None else {}),
            "output_shape": c["output_shape"],
            "total_params": c["total_params"],
            "layers": [{"name": l["name"], "type": l["type"], "output_shape": l["output_shape"],
                        "params": l["params"], "depth": l["depth"]} for l in c["layers"]],
            "complete": not c["incomplete"],
            "incomplete": list(dict.fromkeys(c["incomplete"])),
        })
    return out


def _shape(s: Sequence[Any] | None) -> str:
    return "?" if s is None else "[" + ", ".join(str(d) for d in s) + "]"


def _count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def render_text(calls: Sequence[Mapping[str, Any]], filename: str) -> str:
    """torchinfo's layout: one row per leaf layer call, indented by depth."""
    if not calls:
        return f"{filename}: no model call found\n"
    blocks = []
    readings = [c for c in calls if c.get("input_ranks") is not None]
    if len(readings) > 1 and len({c["model"] for c in readings}) == 1:
        # `--model` without `--input-size`: the forward takes its inputs at several ranks
        blocks.append(
            f"{readings[0]['model']}'s forward takes its inputs at {len(readings)} ranks, one table each; "
            "--input-size gives one (torchinfo's input_size: 1,3,32,32)\n"
        )
    for c in calls:
        where = f"cell {c['cell']}, line {c['line']}" if c.get("cell") is not None else f"line {c['line']}"
        title = f"{c['model']} ({where})"
        if c.get("input_ranks") is not None:
            ranks = ", ".join("?" if r is None else str(r) for r in c["input_ranks"])
            title += f", input rank{'s' if len(c['input_ranks']) != 1 else ''} {ranks}"
        rows = [(title, "", _shape(c["output_shape"]), "")]
        for l in c["layers"]:
            indent = "  " * max(1, l["depth"])
            rows.append((f"{indent}{l['name'] or '?'}", l["type"], _shape(l["output_shape"]), _count(l["params"])))
        head = ("Layer", "Type", "Output Shape", "Param #")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
        line = "=" * (sum(widths) + 6)

        def fmt(r: Sequence[str]) -> str:
            return f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>{widths[3]}}".rstrip()

        text = [line, fmt(head), line, *(fmt(r) for r in rows), line,
                f"Total params: {_count(c['total_params'])}"]
        if c["incomplete"]:
            text.append("Incomplete: " + "; ".join(c["incomplete"]))
        text.append(line)
        blocks.append("\n".join(text) + "\n")
    return "\n".join(blocks)
