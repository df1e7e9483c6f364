"""What `torch.load` gives back is typed where the use tells (`rust/models/torch/loaded.rs`).

A use tells that the loaded value is a tensor only when no other value `torch.load` gives back
(a module, a dict, a list, a tuple, a string, a number, a `torch.Size`) has that name too. The
core decides by its registry of tensor methods, minus the names listed in `SHARED` and `KEEPS`.
These tests hold those lists to the real classes, so a tensor method added to the registry that
a module or a dict also has cannot silently start telling. (The behaviour itself is in
`tests/loaded.rs` and the fixtures `*cached*`, `pretokenized_*`, `loaded_model_and_pairs_ok`.)
"""
import collections
import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
core = pytest.importorskip("shape_lint._core")

SOURCE = Path(__file__).resolve().parent.parent / "rust" / "models" / "torch" / "loaded.rs"
# the tensor attributes `loaded::tells` names besides the registry's methods
ATTRIBUTES = {"shape", "ndim", "T", "mT", "mH"}


def rust_list(name):
    m = re.search(r"pub const %s: &\[&str\] = &\[(.*?)\];" % name, SOURCE.read_text(), re.S)
    assert m, "no const %s in %s" % (name, SOURCE)
    return set(re.findall(r'"([^"]+)"', m.group(1)))


def public(cls):
    return {n for n in dir(cls) if not n.startswith("_")}


def test_no_name_another_loaded_value_has_tells():
    declared = {a["name"][len("torch.Tensor."):] for a in json.loads(core.api_json()) if a["name"].startswith("torch.Tensor.")}
    telling = (declared | ATTRIBUTES) - rust_list("SHARED") - rust_list("KEEPS")
    others = {
        "nn.Module": public(torch.nn.Module), "dict": public(dict), "OrderedDict": public(collections.OrderedDict),
        "list": public(list), "tuple": public(tuple), "str": public(str), "int": public(int),
        "float": public(float), "bool": public(bool), "torch.Size": public(torch.Size),
    }
    shared = sorted("%s (%s)" % (n, kind) for kind, names in others.items() for n in telling & names)
    assert not shared, "names that tell a loaded value is a tensor, but another value has them: %s" % shared
    # and every telling name is a real tensor attribute
    assert telling <= public(torch.Tensor), sorted(telling - public(torch.Tensor))


def test_keeps_are_moves_a_module_and_a_tensor_both_have_that_keep_what_it_is():
    model = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    for name in sorted(rust_list("KEEPS")):
        assert hasattr(torch.nn.Module, name) and hasattr(torch.Tensor, name), name
        if name == "cuda":
            continue  # (no CUDA here: a module's `cuda()` returns it, as the others do)
        args = ("cpu",) if name == "to" else ()
        assert getattr(model, name)(*args) is model, name
        assert getattr(x, name)(*args).shape == x.shape, name
