"""Idioms of published example code (PyTorch's examples and tutorials, well-known tutorial
repositories) that the core once reported though torch runs them, each run under torch here and
checked silent; and the neighbours of each that torch rejects, still reported. Found by checking
the published examples as a new user would (issue 9: each false-alarm class has a regression
case the oracle runs)."""
import traceback

import pytest

from shape_lint import _core

RUNS = {
    # torch.cat skips a legacy empty 1-D tensor, wherever it is
    "cat_accumulator": "preds = torch.tensor([])\nfor _ in range(3):\n    preds = torch.cat((preds, torch.randn(4, 10)), dim=0)\nz = preds + torch.zeros(12, 10)\n",
    "cat_empty_second": "y = torch.cat([torch.randn(2, 3), torch.empty(0)], dim=1)\nz = y + torch.zeros(2, 3)\n",
    # a torch.Size given to a legacy constructor is a size
    "legacy_ctor_size": "x = torch.randn(8, 3)\nnoise = torch.FloatTensor(x.size()).normal_(0, 0.1)\ny = x + noise\n",
    "legacy_ctor_shape": "x = torch.randn(8, 3)\nn = torch.Tensor(x.shape)\nv = n[0, 0]\n",
    # x.data = y and x.set_(y): the tensor becomes y, a layer's weight too
    "data_rebind_embedding": "emb = nn.Embedding(10, 3)\nemb.weight.data = torch.randn(20, 5)\ny = emb(torch.tensor([15]))\n",
    "data_rebind_tensor": "x = torch.randn(4, 3)\nx.data = torch.randn(5, 6)\ny = x.view(30)\n",
    "set_": "x = torch.randn(4, 3)\nx.set_(torch.randn(2, 2))\ny = x.view(4)\n",
    # del seq[i], pop and insert change what a container runs
    "del_sequential_item": "clf = nn.Sequential(nn.Linear(512, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 1000))\ndel clf[3]\ny = nn.Linear(64, 10)(clf(torch.randn(2, 512)))\n",
    "pop_sequential": "clf = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 100))\nclf.pop(2)\ny = nn.Linear(16, 4)(clf(torch.randn(2, 8)))\n",
    "insert_module_list": "layers = nn.ModuleList([nn.Linear(8, 8)])\nlayers.insert(0, nn.Linear(4, 8))\nx = torch.randn(2, 4)\nfor l in layers:\n    x = l(x)\n",
    # a forward pre-hook reshapes the input
    "forward_pre_hook": "lin = nn.Linear(10, 3)\nlin.register_forward_pre_hook(lambda m, a: (a[0].flatten(1),))\ny = lin(torch.randn(4, 2, 5))\n",
    "forward_pre_hook_user_module": "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(10, 3)\n    def forward(self, x):\n        return self.fc(x)\nnet = Net()\nnet.register_forward_pre_hook(lambda m, a: (a[0].flatten(1),))\ny = net(torch.randn(4, 2, 5))\n",
    # an underscore-prefixed jaxtyping dim is not checked
    "jaxtyping_underscore": "from jaxtyping import Float, jaxtyped\nfrom beartype import beartype\nfrom torch import Tensor\n@jaxtyped(typechecker=beartype)\ndef f(x: Float[Tensor, '_n 3'], y: Float[Tensor, '_n 3']) -> Float[Tensor, '3']:\n    return x.sum(0) + y.sum(0)\nz = f(torch.randn(2, 3), torch.randn(5, 3))\n",
    # a forward analysed on its own: the module may have been moved anywhere first
    "forward_hardcoded_cuda": "class RNN(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lstm = nn.LSTM(28, 16, batch_first=True)\n    def forward(self, x):\n        h0 = torch.zeros(1, x.size(0), 16).to(x.device)\n        c0 = torch.zeros(1, x.size(0), 16).to(x.device)\n        out, _ = self.lstm(x, (h0, c0))\n        return out\ny = RNN()(torch.randn(2, 5, 28))\n",
}

RAISES = {
    "cat_zero_dim": "losses = [torch.tensor(1.0), torch.tensor(2.0)]\ny = torch.cat(losses)\n",
    "cat_ranks_without_empty": "y = torch.cat([torch.randn(2, 3), torch.randn(3)], dim=0)\n",
    "legacy_ctor_list": "n = torch.FloatTensor([8, 3])\ny = torch.randn(8, 3) + n\n",
    "variable_is_its_tensor": "from torch.autograd import Variable\ny = nn.Linear(5, 2)(Variable(torch.randn(4, 3)))\n",
    "del_leaves_the_rest": "clf = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 100))\ndel clf[1]\ny = nn.Linear(16, 4)(clf(torch.randn(2, 8)))\n",
}

HEAD = "import torch\nimport torch.nn as nn\n"


def run(src):
    pytest.importorskip("torch")
    try:
        exec(compile(src, "t.py", "exec"), {})  # noqa: S102 - a case of this file
    except Exception as e:  # noqa: BLE001
        return [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "t.py"][-1]
    return None


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_idiom_torch_runs_is_not_reported(name):
    if "jaxtyping" in name:
        pytest.importorskip("jaxtyping")
        pytest.importorskip("beartype")
    src = HEAD + RUNS[name]
    assert run(src) is None, f"{name}: torch raises"
    assert _core.check_source(src, "t.py", {}) == []


@pytest.mark.parametrize("name", sorted(RAISES))
def test_its_neighbour_torch_rejects_is_reported_where_torch_raises(name):
    src = HEAD + RAISES[name]
    line = run(src)
    assert line is not None, f"{name}: torch runs it"
    assert [f["row"] for f in _core.check_source(src, "t.py", {}) if f["code"].startswith("SHP1")] == [line]


def test_a_data_parallel_module_moved_after_wrapping_takes_cpu_batches():
    # DataParallel.forward scatters its inputs to the module's GPUs (no CUDA here to run it)
    src = HEAD + "model = nn.DataParallel(nn.Linear(3, 2)).cuda()\ny = model(torch.randn(5, 3))\n"
    assert _core.check_source(src, "t.py", {}) == []


def test_a_forward_hardcoding_cuda_is_not_checked_against_cpu_parameters():
    # (no CUDA here to run it) the forward is analysed on its own: the module may be on CUDA
    src = HEAD + (
        "class RNN(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.lstm = nn.LSTM(28, 16, batch_first=True)\n"
        "    def forward(self, x):\n        h0 = torch.zeros(1, x.size(0), 16).cuda()\n"
        "        out, _ = self.lstm(x, (h0, h0))\n        return out\n"
    )
    assert _core.check_source(src, "t.py", {}) == []
