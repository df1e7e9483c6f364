"""Mine the errors torch raises from torch's own installed sources (issue 9, item 3).

Two sources, both read from the installed wheel, never from memory:

- **Python-level checks**: every `raise <Error>(<message>)` (and every `torch._check*(cond,
  lambda: <message>)`) in `torch/nn/functional.py`, `torch/functional.py` and
  `torch/nn/modules/*.py` (plus `torch/nn/_reduction.py`, which checks every loss's reduction
  string, and `torch/utils/data/dataset.py` for TensorDataset), parsed with `ast`, with the
  function or class (`Class.method`) it is in and its message as a template: literal text kept,
  every f-string hole, `%`/`.format` argument or concatenated non-literal replaced by `{}`.
- **C++ checks** (`TORCH_CHECK` and friends): no C++ sources ship in the wheel, but the literal
  pieces of every check message are strings in `torch/lib/libtorch_cpu.so` (and, for the Python
  bindings such as `torch.tensor`, `libtorch_python.so`); `in_binary(fragment)` searches their
  bytes (memory-mapped).

The checked-in catalogue (`catalogue.py`) names, per error family, one literal fragment of the
message (`Family.mined`); `tests/test_catalogue.py` proves each fragment occurs in the mined
Python templates of the family's origin function, or in the binary for a C++ family.

Run it to list the mined Python raises (to review new torch versions or extend the catalogue):

    /work/main/.venv/bin/python tests/differential/mine_catalogue.py [FUNC_SUBSTRING]
    /work/main/.venv/bin/python tests/differential/mine_catalogue.py --binary "appears multiple times"
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import mmap
import os
import sys

WILD = "{}"
PY_FILES = ("nn/functional.py", "functional.py", "nn/_reduction.py", "utils/data/dataset.py")  # plus nn/modules/*.py


@dataclasses.dataclass(frozen=True)
class Raise:
    file: str  # relative to the torch package: nn/functional.py
    func: str  # the enclosing function, `Class.method`, or `<module>`
    line: int
    error: str  # ValueError, RuntimeError, ...
    template: str  # the message, holes as `{}`

    @property
    def origin(self) -> str:
        return f"{self.file}:{self.func}"


def torch_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise RuntimeError("torch is not installed")
    return os.path.dirname(spec.origin)


def _template(node: ast.AST | None) -> str:
    """The literal text of a message expression, every non-literal part as `{}`."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else WILD
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else WILD for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left) + _template(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):  # "..%s.." % args
        left = _template(node.left)
        for spec in ("%s", "%d", "%r", "%i", "%f"):
            left = left.replace(spec, WILD)
        return left
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        import re

        return re.sub(r"\{[^{}]*\}", WILD, _template(node.func.value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str",) and node.args:
        return WILD
    return WILD


def _error_name(node: ast.AST) -> tuple[str, ast.AST | None]:
    """(exception name, message node) of `raise E(msg)`, `raise E`, `raise mod.E(msg)`."""
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call else node
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "?")
    return name, (call.args[0] if call and call.args else None)


_CHECKS = {"_check": "RuntimeError", "_check_value": "ValueError", "_check_index": "IndexError",
           "_check_type": "TypeError", "_check_not_implemented": "NotImplementedError"}


def _torch_check(node: ast.AST) -> tuple[str, str] | None:
    """(error, template) of `torch._check(cond, lambda: f"...")` and its siblings, and of
    `torch._check_with(Error, cond, lambda: ...)`: the Python-level checks that are not a `raise`."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return None
    name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    args = list(node.args)
    if name == "_check_with" and args:
        err, args = _error_name(args[0])[0], args[1:]
    elif name in _CHECKS:
        err = _CHECKS[name]
    else:
        return None
    msg = args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg == "message"), None)
    if isinstance(msg, ast.Lambda):
        msg = msg.body
    return err, _template(msg)


def mine_file(path: str, rel: str) -> list[Raise]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    out: list[Raise] = []

    def visit(node: ast.AST, scope: list[str], names: dict[str, ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name], {})
                continue
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
                names = {**names, child.targets[0].id: child.value}  # `msg = f"..."; raise E(msg)`
            check = _torch_check(child)
            if check is not None:
                out.append(Raise(rel, ".".join(scope) or "<module>", child.lineno, *check))
            if isinstance(child, ast.Raise) and child.exc is not None:
                err, msg = _error_name(child.exc)
                if isinstance(msg, ast.Name) and msg.id in names:
                    msg = names[msg.id]
                out.append(Raise(rel, ".".join(scope) or "<module>", child.lineno, err, _template(msg)))
            visit(child, scope, names)

    visit(tree, [], {})
    return out


@functools.lru_cache(maxsize=1)
def python_raises() -> tuple[Raise, ...]:
    root = torch_dir()
    rels = list(PY_FILES) + sorted(
        f"nn/modules/{f}" for f in os.listdir(os.path.join(root, "nn", "modules")) if f.endswith(".py"))
    return tuple(r for rel in rels for r in mine_file(os.path.join(root, rel), rel))


BINARIES = ("libtorch_cpu.so", "libtorch_python.so")  # the ATen kernels; the Python bindings (torch.tensor)


@functools.lru_cache(maxsize=None)
def _binary(name: str = BINARIES[0]) -> mmap.mmap:
    path = os.path.join(torch_dir(), "lib", name)
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def in_binary(fragment: str) -> bool:
    """Whether this literal text occurs in libtorch_cpu.so or libtorch_python.so (the pieces of C++
    check messages); `CPython:<text>` searches the interpreter's binary instead."""
    if fragment.startswith("CPython:"):  # an error of the interpreter itself (tuple unpacking)
        return _python_binary().find(fragment.removeprefix("CPython:").encode()) >= 0
    return any(_binary(b).find(fragment.encode()) >= 0 for b in BINARIES)


@functools.lru_cache(maxsize=1)
def _python_binary() -> bytes:
    """The interpreter's own binary (libpython, or the executable when it is linked statically)."""
    import sysconfig

    lib = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or "")
    path = lib if os.path.isfile(lib) and lib.endswith(".so") or ".so." in lib else os.path.realpath(sys.executable)
    with open(path, "rb") as fh:
        return fh.read()


def binary_context(fragment: str, width: int = 120) -> str:
    """The NUL-delimited string of the binary that contains `fragment` (for review)."""
    data = next((d for d in map(_binary, BINARIES) if d.find(fragment.encode()) >= 0), None)
    if data is None:
        return ""
    at = data.find(fragment.encode())
    lo, hi = data.rfind(b"\0", max(0, at - width), at) + 1, data.find(b"\0", at, at + width + len(fragment))
    return data[lo: hi if hi >= 0 else at + width].decode("utf-8", "replace")


def in_python(fragment: str, origin: str | None = None) -> bool:
    """Whether a mined Python raise (of `origin`, `nn/functional.py:func`, when given) has this
    literal text, or, for a message built before the raise (`msg="Expected hidden size {}, got {}"`
    passed to a checker), a string constant of that function has it."""
    if any(fragment in r.template and (origin is None or r.origin == origin) for r in python_raises()):
        return True
    return origin is not None and any(fragment in c for c in function_strings(origin))


@functools.lru_cache(maxsize=None)
def function_strings(origin: str) -> tuple[str, ...]:
    """The string constants (f-string literal parts included) of one function, `file:Class.func`."""
    rel, _, qual = origin.partition(":")
    with open(os.path.join(torch_dir(), rel), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    node: ast.AST = tree
    for part in qual.split("."):
        node = next((c for c in ast.iter_child_nodes(node)
                     if isinstance(c, (ast.FunctionDef, ast.ClassDef)) and c.name == part), None)
        if node is None:
            return ()
    return tuple(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--binary"]:
        for frag in argv[1:]:
            print(f"{frag!r}: {binary_context(frag) or '<not found>'!r}")
        return 0
    needle = argv[0] if argv else ""
    for r in python_raises():
        if needle in r.origin:
            print(f"{r.file}:{r.line} {r.func} {r.error}: {r.template}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
