"""Record the sizes a program's lines make under torch (not a test module).

``install(fixture)`` returns the list it fills while the program runs: one entry per distinct
``[line, kind, name, shape]``, where ``line`` is the line of ``fixture`` that made the tensor:

- ``kind == "fn"``: a torch function or tensor method called on that line itself, or inside a
  model of a library that line calls (torchvision's ``resnet18``), not inside the ``forward`` of
  a ``torch.nn`` layer; ``name`` its name (``randn``, ``view``, ``flatten``, ``max_pool2d``);
- ``kind == "module"``: a module called while that line ran (its innermost line of the
  fixture), ``name`` its dotted name in the outermost module being called (``features.2``,
  ``pool``) or, for a module that model does not hold, ``""``; ``type`` its class name;
- ``shape``: the output's shape (each tensor of a tuple output is an entry).

And ``modules``: ``{dotted name: {attribute: value}}`` of the sizes a layer fixes
(``out_channels``, ``out_features``, ``hidden_size``, ``proj_size``, ``embedding_dim``) of every
module an outermost module call held. What ``test_origins.py`` checks the numbers of the
origin chains against. Recording never raises into the program; it stops after ``LIMIT``
entries.
"""
import os
import sys

LIMIT = 20000
ATTRS = ("out_channels", "out_features", "hidden_size", "proj_size", "embedding_dim")


def install(fixture):
    import torch
    from torch.nn.modules import module as mm
    from torch.overrides import TorchFunctionMode

    fixture = os.path.abspath(fixture)
    entries, seen, modules = [], set(), {}
    state = {"depth": 0, "names": {}}
    modules_dir = os.sep + os.path.join("torch", "nn", "modules") + os.sep

    def line_in_fixture(frame, stop_in_modules):
        f = frame
        while f is not None:
            name = f.f_code.co_filename
            if name == fixture:
                return f.f_lineno
            # (inside a library layer's own forward: not the program's op; `module.py` is
            # every module's call, a model of a library such as torchvision calls ops too)
            if stop_in_modules and modules_dir in name and not name.endswith("module.py"):
                return None
            f = f.f_back
        return None

    def add(line, kind, name, typ, out):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o in outs:
            if isinstance(o, torch.Tensor) and len(entries) < LIMIT:
                key = (line, kind, name, typ, tuple(o.shape))
                if key not in seen:
                    seen.add(key)
                    entries.append({"line": line, "kind": kind, "name": name, "type": typ, "shape": list(o.shape)})

    class Sizes(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            try:
                line = line_in_fixture(sys._getframe(1), True)
                if line is not None:
                    add(line, "fn", getattr(func, "__name__", ""), "", out)
            except Exception:  # noqa: BLE001 - the program's behaviour must not change
                pass
            return out

    def pre(m, args):
        try:
            if state["depth"] == 0:
                state["names"] = {id(sub): name for name, sub in m.named_modules()}
                for name, sub in m.named_modules():
                    sizes = {a: getattr(sub, a) for a in ATTRS if isinstance(getattr(sub, a, None), int)}
                    if sizes:
                        modules.setdefault(name, sizes)
            state["depth"] += 1
        except Exception:  # noqa: BLE001
            state.update(depth=0)

    def post(m, args, out):
        try:
            state["depth"] = max(0, state["depth"] - 1)
            line = line_in_fixture(sys._getframe(1), False)
            if line is not None:
                add(line, "module", state["names"].get(id(m), ""), type(m).__name__, out)
        except Exception:  # noqa: BLE001
            pass

    mm.register_module_forward_pre_hook(pre)
    mm.register_module_forward_hook(post)
    Sizes().__enter__()
    return entries, modules
