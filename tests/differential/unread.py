"""The registry's promise, checked API by API: an argument the model does not read makes the result Unknown.

For a case where the core agrees with torch (a fully known shape equal to torch's, or a report
where torch raises), one argument the registry entry does not declare is added to the call of the
API under test, with Python's `ast`:
- a real torch parameter of that API that is not in the entry's params when there is one (from
  `inspect.signature`, else the aten schemas `torch._C._jit_get_schemas_for_operator`), else the
  made-up keyword `shp_unread_arg=0`;
- for a module, into the constructor call (`nn.Linear(3, 4, device=0)(x)`), and separately into the
  call of the module: a keyword (a `forward` parameter not in the entry's call params, else the
  made-up one) and, when it lands past every declared positional parameter, one more positional.
The core must then infer no fully known shape for `y` and report nothing at the call itself (a
report inside one of the call's arguments belongs to another call: `nn.TransformerEncoder(layer)`
where the layer's own arguments are wrong).
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json

from . import harness

MADE_UP = "shp_unread_arg"
SHORT = (("nn.functional.", "torch.nn.functional."), ("F.", "torch.nn.functional."), ("nn.", "torch.nn."),
         ("Tensor.", "torch.Tensor."))
MODULE_NAMES = {"torch", "nn", "F", "torchvision"}


def qualified(api: str) -> str:
    """`nn.Linear` -> `torch.nn.Linear`, `Tensor.view` -> `torch.Tensor.view`."""
    for short, full in SHORT:
        if api.startswith(short):
            return full + api[len(short):]
    return api


def registry(core) -> dict[str, dict]:
    return {a["name"]: a for a in json.loads(core.api_json())}


def registry_name(core, api: str) -> str | None:
    """The registry entry a spec's API resolves to (`torch.concat` -> `torch.cat`), or None."""
    return core.api_resolve(qualified(api))


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _resolve_object(torch, name: str):
    """The real Python object of a qualified name (`torch.nn.Linear`, `torchvision.models.resnet18`)."""
    parts = name.split(".")
    if parts[0] == "torchvision":
        import torchvision_compat

        obj = torchvision_compat.load()
    else:
        obj = torch
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def real_params(torch, name: str, call: bool = False) -> list[str]:
    """Parameter names of the real API (of its `forward` when `call`), in signature order."""
    obj = _resolve_object(torch, name)
    if obj is None:
        return []
    if call:
        obj = getattr(obj, "forward", None)
        if obj is None:
            return []
    names: list[str] = []
    try:
        sig = inspect.signature(obj)
        names = [p.name for p in sig.parameters.values()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
    except (TypeError, ValueError):
        pass
    if not names and not call:
        op = name.rsplit(".", 1)[-1]
        try:
            schemas = torch._C._jit_get_schemas_for_operator(f"aten::{op}")
        except RuntimeError:
            schemas = []
        names = [a.name for s in schemas for a in s.arguments if a.name != "self"]
    return list(dict.fromkeys(names))


def unread_keyword(declared: list[dict], real: list[str]) -> str:
    """The first real parameter the entry does not declare, else the made-up one."""
    known = {p["name"] for p in declared}
    return next((n for n in real if n not in known), MADE_UP)


@dataclasses.dataclass
class Target:
    """Where to add the argument in one case's expression."""

    variant: str  # constructor | call-keyword | call-positional | function | method
    keyword: str | None  # the keyword to add, or None for a positional
    calls: list[ast.Call]  # in the parsed expression (offsets relative to the expression)


def _calls(tree: ast.AST, spec: harness.Spec) -> list[ast.Call]:
    """The calls of the API under test: `torch.cat(...)`, `<x>.view(...)`, `nn.Linear(...)`."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if spec.kind == "method":
            f = node.func
            want = spec.api.split(".", 1)[1]
            if isinstance(f, ast.Attribute) and f.attr == want and _dotted(f.value) not in MODULE_NAMES:
                out.append(node)
        elif _dotted(node.func) == spec.api:
            out.append(node)
    return out


def inject(expr: str, spec: harness.Spec, entry: dict, torch) -> list[tuple[str, str, list[tuple[int, int]]]]:
    """The variants of `expr` with one unread argument: (variant, new expression, the spans of the
    injected calls' children, as (start, end) offsets in the new expression)."""
    out = []
    name = qualified(spec.api)
    for variant in (["constructor", "call-keyword", "call-positional"] if spec.kind == "module" else [spec.kind]):
        tree = ast.parse(expr, mode="eval")
        ctors = _calls(tree, spec)
        if not ctors:
            return []
        if variant == "constructor" or spec.kind != "module":
            if any(p["kind"] == "var_keyword" for p in entry["params"]):
                # `**kwargs` (nn.Identity's): torch takes any keyword, so no keyword is unread
                continue
            calls = ctors
            kw = unread_keyword(entry["params"], real_params(torch, name))
        else:
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.func in ctors]
            if not calls or (variant == "call-keyword" and any(p["kind"] == "var_keyword" for p in entry["call_params"])):
                continue
            kw = unread_keyword(entry["call_params"], real_params(torch, name, call=True))
            if variant == "call-positional":
                params = entry["call_params"]
                positional = sum(p["kind"] == "positional" for p in params)
                if any(p["kind"] == "var_positional" for p in params) or any(len(c.args) + 1 <= positional for c in calls):
                    continue
                kw = None
        for c in calls:
            if kw is None:
                c.args.append(ast.Constant(0))
            else:
                c.keywords.append(ast.keyword(arg=kw, value=ast.Constant(0)))
        new = ast.unparse(tree)
        # the children of each injected call, located in the new text
        reparsed = ast.parse(new, mode="eval")
        spans = []
        targets = _calls(reparsed, spec)
        if spec.kind == "module" and variant != "constructor":
            targets = [n for n in ast.walk(reparsed) if isinstance(n, ast.Call) and n.func in targets]
        for c in targets:
            kids = [c.func.value if isinstance(c.func, ast.Attribute) and spec.kind == "method" else c.func]
            kids += [a for a in c.args] + [k.value for k in c.keywords if k.arg != kw]
            if kw is None and c.args:
                kids.remove(c.args[-1])
            spans += [(k.col_offset, k.end_col_offset) for k in kids]
        out.append((variant, new, spans))
    return out


def check_case(torch, core, spec: harness.Spec, entry: dict, expr: str, inputs) -> list[str]:
    """The failures of one agreeing case, one per variant."""
    failures = []
    for variant, new, spans in inject(expr, spec, entry, torch):
        src = harness.program(new, inputs)
        findings, shown = harness.run_core(core, src)
        last = src.count("\n")
        offset = len("y = ")
        stray = [f for f in findings
                 if not (f["row"] == last == f["end_row"]
                         and any(s + offset <= f["col"] - 1 and f["end_col"] - 1 <= e + offset for s, e in spans))]
        if harness.parse_shown(shown) is not None:
            failures.append(f"{spec.api} ({variant}): `{new}` still gives {shown}")
        elif stray:
            failures.append(f"{spec.api} ({variant}): `{new}` still reports {stray[0]['code']} {stray[0]['message']}")
    return failures


def has_call(spec: harness.Spec, expr: str) -> bool:
    if "\n" in expr:  # statements before the expression (harness.split_case): not injected into
        return False
    return bool(_calls(ast.parse(expr, mode="eval"), spec))
