"""``shape-lint summary FILE [--model NAME] [--output-format text|json]``: a torchinfo-like
table of each model call the script makes, computed by the core without running anything.

The JSON is a list with one object per model call, in call order: ``model`` (the class name),
``input_ranks`` (only with ``--model``: the rank of each ``forward`` input the record reads it
at; where the core takes the inputs at several ranks, batched or not, one record per reading),
``output_shape`` (ints, or strings for symbolic dims; ``null`` when not one tensor),
``total_params`` (``null`` when not known), ``layers`` (the leaf modules called, in call order,
each ``{"name", "type", "output_shape", "params"}``: what torch's forward hooks see),
``complete`` / ``incomplete`` (why a record may differ from torch's: never a guess) and, with
``--model`` without ``--input-size``, ``accepts``: the input contract, one object per way
through ``forward`` (``solve``): what the inputs must meet for that way to run, as far as the
core decides it (``engine/contract.rs``), with examples and counterexamples solved by Z3.
``cite`` ends a shape error inside a model with the condition of its line.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

__all__ = ["cite", "records", "render_text", "solve", "summarise"]


def summarise(
    source: str, filename: str, model: str | None = None, input_size: Sequence[Sequence[int]] | None = None,
    *, max_steps: int | None = None,
) -> list[dict[str, Any]]:
    """The core's model calls, each as the JSON object described above. ``input_size`` (with
    ``model``): torchinfo's, one size per ``forward`` input, the batch included. ``max_steps``:
    the interpreter's step budget (the core's default when ``None``)."""
    from . import _core

    sizes = None if input_size is None else [list(s) for s in input_size]
    options = None if max_steps is None else {"max_steps": max_steps}
    return records(_core.model_summary(source, filename, model, options, sizes))


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
            **({"accepts": [solve(k) for k in c["accepts"]]} if c.get("accepts") else {}),
        })
    return out


#: Z3's resource limit per query of a contract (deterministic), and its wall-clock safety net.
CONTRACT_RLIMIT = 400_000
CONTRACT_TIMEOUT_MS = 1_000
#: The largest size an example takes: first a small one (an input a test can run), then a
#: larger one (real inputs are small; Z3's first model need not be).
EXAMPLE_MAX = (64, 4096)
#: How many times an example is made smaller (its sizes' sum), at most.
SMALLER_ROUNDS = 8


def solve(k: Mapping[str, Any], pins: Mapping[tuple[int, int], int] | None = None) -> dict[str, Any]:
    """One input contract of the core (``_core.model_summary``'s ``accepts``) as the JSON
    shows it, its sizes solved by Z3 (``solver._solve``): ``inputs`` (each input's shape, a size
    the conditions fix shown as that number: ``[N, 3, 32, 32]``), ``params`` (the model's own
    sizes it names, which the inputs must match: ``in_channels``), ``clauses`` (``{"text",
    "line", "fixed", "counterexample"}``, in the order ``forward`` checks them;
    ``counterexample``: input sizes that meet the clauses before it and not this one, so that
    torch raises at its line, or ``null``) and ``example``: input sizes that meet them all, or
    ``null`` when Z3 finds none (unknown, or Z3 not installed). Examples prefer square maps and
    a batch of 2, each size at most 64, else 4096. ``pins`` (``{(input, dim): size}``) fixes
    sizes in every answer (the model's own sizes of a real run). Sizes of an input of unknown
    rank are never solved. ``names``: the names of ``forward``'s inputs."""
    dims = [None if d is None else list(d) for d in k.get("dims") or []]
    clauses = [dict(c) for c in k["clauses"]]
    # the (input, dim) positions of inputs of known rank
    cells = [(i, j) for i, d in enumerate(dims) if d is not None for j in range(len(d))]
    terms = [c.get("smt") for c in clauses]
    pinned = [f"(= in_{i}_{j} {v})" for (i, j), v in sorted((pins or {}).items())]
    out: dict[str, Any] = {"names": list(k.get("names") or []), "inputs": list(k["inputs"]), "params": list(k.get("params") or []), "clauses": [], "example": None}
    solvable = bool(k.get("smt")) and bool(cells)

    def shapes(model: Mapping[str, int]) -> list[list[int] | None] | None:
        got = [None if d is None else [model.get(f"in_{i}_{j}") for j in range(len(d))] for i, d in enumerate(dims)]
        return None if any(d is not None and None in d for d in got) else got  # type: ignore[return-value]

    def ask(asserts: Sequence[str], *, model: bool = True) -> dict[str, Any]:
        from . import solver

        script = k["smt"] + "".join(f"(assert {a})\n" for a in [*pinned, *asserts])
        return solver._solve(script, model=model, rlimit=CONTRACT_RLIMIT, timeout_ms=CONTRACT_TIMEOUT_MS)

    # the spatial sizes of [C, H, W], [N, C, H, W], [N, C, D, H, W] equal; a batch of 2
    square = [f"(= in_{i}_{j} in_{i}_{j + 1})" for i, d in enumerate(dims) if d is not None and len(d) >= 3
              for j in range(1 if len(d) == 3 else 2, len(d) - 1) if not (d[j].isdigit() or d[j + 1].isdigit())]
    batch = [f"(= in_{i}_0 2)" for i, d in enumerate(dims) if d is not None and len(d) >= 2 and not d[0].isdigit()]

    def example(asserts: Sequence[str]) -> list[list[int] | None] | None:
        for most in EXAMPLE_MAX:
            bounds = [f"(<= in_{i}_{j} {most})" for i, j in cells]
            for extra in ([*square, *batch], square, batch, []):
                got = ask([*asserts, *bounds, *extra])
                if got["answer"] == "sat":
                    # then smaller ones, while there are (28x28 rather than 29x29)
                    total = "(+ 0 " + " ".join(f"in_{i}_{j}" for i, j in cells) + ")"
                    for _ in range(SMALLER_ROUNDS):
                        s = sum(got["model"].get(f"in_{i}_{j}", 0) for i, j in cells)
                        less = ask([*asserts, *bounds, *extra, f"(< {total} {s})"])
                        if less["answer"] != "sat":
                            break
                        got = less
                    return shapes(got["model"])
                if not extra:
                    break
        return None

    if solvable and None not in terms:
        every = [t for t in terms if t]
        out["example"] = example(every)
        # a size every solution shares is that size
        if out["example"] is not None:
            for i, j in cells:
                v = out["example"][i][j]
                if not dims[i][j].isdigit() and ask([*every, f"(not (= in_{i}_{j} {v}))"], model=False)["answer"] == "unsat":
                    dims[i][j] = str(v)
            out["inputs"] = [s if d is None else "[" + ", ".join(d) + "]" for s, d in zip(out["inputs"], dims)]
    for n, c in enumerate(clauses):
        ce = None
        if solvable and None not in terms[: n + 1]:
            ce = example([*(t for t in terms[:n] if t), f"(not {terms[n]})"])
        out["clauses"].append({"text": c["text"], "line": c.get("line"), "fixed": bool(c.get("fixed")), "counterexample": ce})
    return out


#: A line that defines a class: its name (the editor's hover on it shows the contract too).
CLASS_LINE = re.compile(r"\s*class\s+([A-Za-z_]\w*)")
#: The model classes whose contract one file's findings may cite.
CITED_CLASSES = 4


def cite(findings: list[dict[str, Any]], source: str, filename: str) -> None:
    """Each shape error (SHP1xx) inside a class that a condition of the class's input contract
    names (the check at that line) ends with the contract: ``; SmallCNN accepts x: [N, 1, H, W]
    with 16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304 at line 15, e.g. [2, 1, 28, 28]``.
    The first reading of ``forward`` with such a condition is cited (the batched one first):
    what the model accepts, not a claim about the script's input. At most ``CITED_CLASSES``
    classes per file; a contract that cannot be computed is not cited."""
    wanted = [f for f in findings if str(f.get("code", "")).startswith("SHP1")]
    if not wanted:
        return
    lines = source.splitlines()
    contracts: dict[str, list[dict[str, Any]]] = {}
    for f in wanted:
        row = f.get("row")
        if not isinstance(row, int) or not 0 < row <= len(lines):
            continue
        name = _enclosing_class(lines, row)
        if name is None:
            continue
        if name not in contracts:
            if len(contracts) >= CITED_CLASSES:
                continue
            try:
                contracts[name] = summarise(source, filename, name, max_steps=CITE_MAX_STEPS)
            except Exception:  # noqa: BLE001 - a citation never breaks a check
                contracts[name] = []
        note = _cited(name, contracts[name], row)
        if note and note not in f["message"]:
            f["message"] = f"{f['message']}; {note}"


#: The work a citation may cost: the interpreter steps of the run that builds the script's
#: model and reads its ``forward`` (a count, the same on every machine). A script that needs
#: more gets no records, and is cited nothing.
CITE_MAX_STEPS = 100_000


def _enclosing_class(lines: Sequence[str], row: int) -> str | None:
    """The class whose body holds 1-based line ``row`` (the innermost), or ``None``."""
    line = lines[row - 1]
    indent = len(line) - len(line.lstrip())
    for i in range(row - 2, -1, -1):
        text = lines[i]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        depth = len(text) - len(text.lstrip())
        if depth < indent:
            m = CLASS_LINE.match(text)
            if m:
                return m[1]
            indent = depth
            if depth == 0:
                return None
    return None


def _cited(name: str, calls: Sequence[Mapping[str, Any]], row: int) -> str | None:
    for c in calls:
        for k in c.get("accepts") or []:
            at = _strongest([cl["text"] for cl in k["clauses"] if cl.get("line") == row])
            if at:
                eg = f", e.g. {_example(k)}" if k.get("example") else ""
                return f"{name} accepts {_inputs(k)} with {', '.join(at)} at line {row}{eg}"
    return None


def _example(k: Mapping[str, Any]) -> str:
    """A contract's example: ``[2, 1, 28, 28]``, one shape per input."""
    return ", ".join("?" if s is None else _shape(s) for s in k["example"])


def _inputs(k: Mapping[str, Any]) -> str:
    """``x: [N, 1, H, W]``, each input with its name when known."""
    shapes = ["?" if s is None else str(s) for s in k["inputs"]]
    names = list(k.get("names") or [])
    if len(names) == len(shapes):
        shapes = [f"{n}: {s}" for n, s in zip(names, shapes)]
    return ", ".join(shapes)


def _shape(s: Sequence[Any] | None) -> str:
    return "?" if s is None else "[" + ", ".join(str(d) for d in s) + "]"


def _count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


_LOWER = re.compile(r"(-?\d+) <= ([A-Za-z_]\w*)")


def _strongest(texts: Sequence[str]) -> list[str]:
    """The conditions of one line, of two lower bounds of one size the higher (`5 <= H`, then
    `6 <= H`: `6 <= H`)."""
    out: list[str] = []
    for text in texts:
        low = _LOWER.fullmatch(text)
        if low:
            weaker = [t for t in out if (m := _LOWER.fullmatch(t)) and m[2] == low[2]]
            if any(int(_LOWER.fullmatch(t)[1]) >= int(low[1]) for t in weaker):  # type: ignore[index]
                continue
            out = [t for t in out if t not in weaker]
        out.append(text)
    return out


def _accepts(contracts: Sequence[Mapping[str, Any]]) -> list[str]:
    """The input contract's lines: each way through ``forward``'s inputs, then the conditions
    they must meet with the line that checks each."""
    out = []
    for i, k in enumerate(contracts):
        inputs = _inputs(k)
        head = "Accepts" if i == 0 else "    or"
        shown = [cl for cl in k["clauses"] if not cl.get("fixed")]
        out.append(f"{head}: {inputs}" + (" with" if shown else ""))
        # the conditions of one line on one line: `6 <= H, 6 <= W (line 13)`
        lines: dict[Any, list[str]] = {}
        for cl in shown:
            lines.setdefault(cl.get("line"), []).append(cl["text"])
        for line, texts in lines.items():
            texts = _strongest(texts)
            where = f" (line {line})" if line is not None else ""
            out.append(f"  {', '.join(texts)}{where}")
        if k.get("example") and shown:
            out.append(f"  e.g. {_example(k)}")
    return out


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
        text += _accepts(c.get("accepts") or [])
        text.append(line)
        blocks.append("\n".join(text) + "\n")
    return "\n".join(blocks)
