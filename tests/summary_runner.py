"""Run one program under torch and record its model calls as forward hooks see them.

usage: python summary_runner.py PROGRAM.py REPORT.json

The report: ``{"ok": bool, "calls": [...]}``, one call per model call (a call of a module
that is not a torch.nn library module, or is a container, made while no other such call
runs), each ``{"model", "output_shape", "total_params", "layers"}`` with ``layers`` the leaf
modules (no children) called during it, in call order: ``{"name", "type", "output_shape",
"params"}``, ``name`` from the model's ``named_modules()``. What ``shape-lint summary``
computes statically (``test_summary.py`` compares them). Not a test module itself.
"""
import json
import os
import runpy
import sys

import simulated_cuda  # tests/, next to this script
import torchvision_compat  # tests/, next to this script


def shape_of(out):
    import torch

    return list(out.shape) if isinstance(out, torch.Tensor) else None


def main():
    program, report = os.path.abspath(sys.argv[1]), sys.argv[2]
    sys.argv = [program]
    sys.path.insert(0, os.path.dirname(program))
    with open(program, encoding="utf-8") as f:
        text = f.read()
    if simulated_cuda.MARKER in text:
        simulated_cuda.enable()
    if "torchvision" in text and torchvision_compat.load() is None:
        with open(report, "w") as f:
            json.dump({"ok": False, "skip": torchvision_compat.REASON, "calls": []}, f)
        return
    import torch.nn as nn
    from torch.nn.modules import module as mm

    containers = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
    state = {"depth": 0, "open": None, "names": {}, "root": None}
    calls = []

    def is_model(m):
        return isinstance(m, containers) or not type(m).__module__.startswith("torch.nn.")

    def pre(m, args):
        if state["depth"] == 0:
            if not is_model(m):
                return
            state["open"] = {"model": type(m).__name__, "output_shape": None,
                             "total_params": sum(p.numel() for p in m.parameters()), "layers": []}
            state["names"] = {id(sub): name for name, sub in m.named_modules() if name}
            state["root"] = m
        state["depth"] += 1

    def post(m, args, out):
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

    mm.register_module_forward_pre_hook(pre)
    mm.register_module_forward_hook(post)
    ok = True
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        ok = e.code in (None, 0)
    except BaseException:  # noqa: B902 - a failure is data here
        ok = False
    with open(report, "w") as f:
        json.dump({"ok": ok, "calls": calls}, f)


if __name__ == "__main__":
    main()
