"""Record a program's model calls as torch's forward hooks see them (not a test module).

``install()`` registers global module hooks (``torch.nn.modules.module``'s
``register_module_forward_pre_hook`` / ``register_module_forward_hook``) and returns the list
they fill while the program runs: one entry per *model call* (a call of a module that is not a
``torch.nn`` library module or a torchvision/torchaudio data transform, or is a container,
made while no other such call runs), each
``{"model", "output_shape", "total_params", "layers"}``:

- ``total_params``: ``sum(p.numel() for p in model.parameters())`` (a parameter shared by two
  modules once, buffers not at all, frozen parameters included);
- ``layers``: the leaf modules (no children) called during it, in call order, each
  ``{"name", "type", "output_shape", "params"}``, ``name`` from the model's
  ``named_modules()`` (``None`` for a module the model does not hold), ``params`` its own
  ``parameters(recurse=False)``;
- an output shape is a list of ints, or ``None`` when the output is not one tensor;
- ``input_shapes``: the shape of each positional input of the model call (``None`` for one that
  is not a tensor), what ``shape-lint summary --input-size`` is given in ``test_summary.py``.

What ``shape-lint summary`` computes statically: ``oracle_runner.py`` records it beside the
traceback of every fixture run, and ``test_summary.py`` compares the two. The hooks never raise
into the program (a failure inside them drops the record: ``broken`` is set).
"""


DATA_TRANSFORMS = ("torchvision.transforms", "torchaudio.transforms")


def install():
    import torch
    import torch.nn as nn
    from torch.nn.modules import module as mm

    containers = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
    state = {"depth": 0, "open": None, "names": {}, "root": None}
    calls = []

    def shape_of(out):
        return list(out.shape) if isinstance(out, torch.Tensor) else None

    def is_model(m):
        # A data transform that happens to be a module (torchvision's ``Resize`` in an
        # ImageFolder pipeline) is not a model call.
        owner = type(m).__module__
        if owner.startswith(DATA_TRANSFORMS):
            return False
        return isinstance(m, containers) or not owner.startswith("torch.nn.")

    def pre(m, args):
        try:
            if state["depth"] == 0:
                if not is_model(m):
                    return
                state["open"] = {"model": type(m).__name__, "output_shape": None,
                                 "total_params": sum(p.numel() for p in m.parameters()), "layers": [],
                                 # what torchinfo's input_size would be (`summary --input-size`)
                                 "input_shapes": [shape_of(a) for a in args]}
                state["names"] = {id(sub): name for name, sub in m.named_modules() if name}
                state["root"] = m
            state["depth"] += 1
        except Exception:  # noqa: BLE001 - the program's behaviour must not change
            state.update(depth=0, open=None)
            calls.append({"broken": True})

    def post(m, args, out):
        try:
            if state["depth"] == 0:
                return
            state["depth"] -= 1
            rec = state["open"]
            if not any(True for _ in m.children()) and m is not state["root"]:
                rec["layers"].append({"name": state["names"].get(id(m)), "type": type(m).__name__,
                                      "output_shape": shape_of(out),
                                      "params": sum(p.numel() for p in m.parameters(recurse=False))})
            if state["depth"] == 0:
                rec["output_shape"] = shape_of(out)
                calls.append(rec)
                state["open"] = None
        except Exception:  # noqa: BLE001 - the program's behaviour must not change
            state.update(depth=0, open=None)
            calls.append({"broken": True})

    mm.register_module_forward_pre_hook(pre)
    mm.register_module_forward_hook(post)
    return calls
