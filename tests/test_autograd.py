"""Which tensors autograd records, as the core follows them (`models/torch/autograd.rs`), each
case run under torch: `backward()` on a tensor without a graph is SHP309 at its line where
torch raises ("element 0 of tensors does not require grad"), and its neighbours that torch
runs are not reported."""
import pytest

from shape_lint import _core

HEAD = "import torch\nimport torch.nn as nn\nw = torch.randn(3, requires_grad=True)\n"

RAISES = [
    "x = torch.randn(3)\ny = x.sum()\ny.backward()\n",
    "with torch.no_grad():\n    y = (w * 2).sum()\ny.backward()\n",
    "with torch.inference_mode():\n    y = (w * 2).sum()\ny.backward()\n",
    "y = (w.detach() * 2).sum()\ny.backward()\n",
    "y = w.data.sum()\ny.backward()\n",
    "y = w.argmax().float()\ny.backward()\n",
    "@torch.no_grad()\ndef f(v):\n    return (v * 2).sum()\ny = f(w)\ny.backward()\n",
    "@torch.no_grad\ndef f(v):\n    return (v * 2).sum()\ny = f(w)\ny.backward()\n",
    "torch.set_grad_enabled(False)\ny = (w * 2).sum()\ny.backward()\n",
    "m = nn.Linear(3, 1)\nwith torch.no_grad():\n    y = m(torch.randn(2, 3)).sum()\ny.backward()\n",
    "m = nn.Linear(3, 1)\ny = nn.functional.mse_loss(m(torch.randn(2, 3)).detach(), torch.zeros(2, 1))\ny.backward()\n",
    "y = torch.zeros(()).requires_grad_(False)\ny.backward()\n",
    # a DataLoader's batches of tensors made without requires_grad, and integer labels, are
    # not recorded either
    "from torch.utils.data import DataLoader, TensorDataset\nm = nn.Linear(3, 2)\nds = TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))\n"
    "for x, y in DataLoader(ds, batch_size=4):\n    loss = nn.functional.cross_entropy(m(x).data, y)\n    loss.backward()\n",
    "from torch.utils.data import DataLoader, TensorDataset\nds = TensorDataset(torch.randn(8, 3), torch.tensor([0, 1] * 4))\n"
    "for x, y in DataLoader(ds, batch_size=4):\n    loss = (x * y.unsqueeze(1)).sum()\n    loss.backward()\n",
]

RUNS = [
    "y = (w * 2).sum()\ny.backward()\n",
    "m = nn.Linear(3, 1)\ny = m(torch.randn(2, 3)).sum()\ny.backward()\n",
    "with torch.no_grad():\n    with torch.enable_grad():\n        y = (w * 2).sum()\ny.backward()\n",
    "with torch.no_grad():\n    z = w * 2\ny = (w * 3).sum()\ny.backward()\n",
    "x = torch.randn(3).requires_grad_()\ny = x.sum()\ny.backward()\n",
    "loss = torch.tensor(0.0)\nloss = loss + (w * 2).sum()\nloss.backward()\n",
    "loss = torch.zeros(())\nloss += (w * 2).sum()\nloss.backward()\n",
    "with torch.set_grad_enabled(True):\n    y = (w * 2).sum()\ny.backward()\n",
    "import random\nwith torch.set_grad_enabled(random.random() > 2):\n    y = (w * 2).sum()\nif y.requires_grad:\n    y.backward()\n",
    "@torch.no_grad()\ndef f(v):\n    return (v * 2).sum()\nz = f(w)\ny = (w * 2).sum()\ny.backward()\n",
    "torch.set_grad_enabled(False)\ntorch.set_grad_enabled(True)\ny = (w * 2).sum()\ny.backward()\n",
    "p = nn.Parameter(torch.randn(3))\ny = (p * torch.randn(3)).sum()\ny.backward()\n",
    "x = torch.randn(3)\nx.requires_grad = True\ny = x.sum()\ny.backward()\n",
    "x = torch.randn(3)\nx.requires_grad_()\ny = x.sum()\ny.backward()\n",
    "x = torch.randn(3)\nxs = [x]\nxs[0].requires_grad_(True)\ny = x.sum()\ny.backward()\n",
    # writing a tensor that requires grad into another makes it part of the graph
    "out = torch.zeros(2, 3)\nfor t in range(3):\n    out[:, t] = w[t] * 2\nout.sum().backward()\n",
    "buf = torch.zeros(3)\nbuf.copy_(w * 2)\nbuf.sum().backward()\n",
    "acc = torch.zeros(())\nxs = [acc]\nacc += (w * 2).sum()\nxs[0].backward()\n",
    "from torch.utils.data import DataLoader, TensorDataset\nm = nn.Linear(3, 2)\nds = TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))\n"
    "for x, y in DataLoader(ds, batch_size=4):\n    loss = nn.functional.cross_entropy(m(x), y)\n    loss.backward()\n",
    # `x.data = y` changes x's values only: a leaf that requires grad stays one (a false SHP309
    # found in a tutorial's manual SGD step)
    "for _ in range(2):\n    l = ((w * 2.0 - 1.0) ** 2).sum()\n    l.backward()\n    w.data = w.data - 0.01 * w.grad.item() if w.grad.numel() == 1 else w.data - 0.01 * w.grad\n    w.grad.data.zero_()\n",
    # an operand not followed (a custom autograd Function's output) may carry a graph (a false
    # SHP309 found in a tutorial)
    "class Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x.clamp(min=0)\n\n"
    "    @staticmethod\n    def backward(ctx, g):\n        x, = ctx.saved_tensors\n        return g * (x > 0)\n\n"
    "y = Clamp.apply(w * 2)\nloss = (y - torch.randn(3)).pow(2).sum()\nloss.backward()\n",
]


def run(body):
    """The line where torch raises running the case, or None."""
    import traceback

    torch = pytest.importorskip("torch")
    try:
        exec(compile(HEAD + body, "t.py", "exec"), {})  # noqa: S102 - a case of this file
    except Exception as e:  # noqa: BLE001
        return [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "t.py"][-1]
    finally:
        torch.set_grad_enabled(True)  # (a case may turn it off for the process)
    return None


def findings(body):
    return [(f["code"], f["row"]) for f in _core.check_source(HEAD + body, "t.py", {})]


@pytest.mark.parametrize("body", RAISES)
def test_backward_without_a_graph_is_reported_where_torch_raises(body):
    line = run(body)
    assert line is not None, f"torch runs {body!r}"
    assert findings(body) == [("SHP309", line)]


@pytest.mark.parametrize("body", RUNS)
def test_backward_torch_runs_is_not_reported(body):
    assert run(body) is None, f"torch raises on {body!r}"
    assert findings(body) == []


# SHP310: in-place ops autograd cannot undo (the line torch raises: the backward, or the in-place
# op on a leaf)
INPLACE_RAISES = [
    "h = torch.sigmoid(w * 2)\nh.mul_(2)\ny = h.sum()\ny.backward()\n",
    "h = torch.tanh(w * 2)\ng = h * 3\nh += 1\ny = g.sum()\ny.backward()\n",
    "e = torch.exp(w)\ne /= e.sum()\ny = e.sum()\ny.backward()\n",
    "p = torch.softmax(w, dim=0)\np[0] = 0\ny = p.sum()\ny.backward()\n",
    "h = torch.relu(w * 2)\nv = h.view(3, 1)\nv.add_(1)\ny = h.sum()\ny.backward()\n",
    "m = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())\nh = m(torch.randn(2, 3))\nh.clamp_(0.1, 0.9)\ny = h.sum()\ny.backward()\n",
    "h = torch.sigmoid(w)\nwith torch.no_grad():\n    h.mul_(2)\ny = h.sum()\ny.backward()\n",
    "w.add_(1)\n",
    "w += 1\n",
    "p = nn.Parameter(torch.randn(3))\np.mul_(2)\n",
    "w[0].add_(1)\n",
    "w.view(3, 1).mul_(2)\n",
]

INPLACE_RUNS = [
    "lin = nn.Linear(3, 3)\nh = lin(torch.randn(2, 3))\nh.relu_()\ny = h.sum()\ny.backward()\n",
    "h = torch.sigmoid(w)\nh = h * 2\nh.add_(1)\ny = h.sum()\ny.backward()\n",
    "h = torch.tanh(w)\nh2 = h.clone()\nh2.mul_(2)\ny = (h + h2).sum()\ny.backward()\n",
    "with torch.no_grad():\n    w.add_(1)\ny = (w * 2).sum()\ny.backward()\n",
    "w.data.add_(1)\ny = (w * 2).sum()\ny.backward()\n",
    "x = torch.randn(3)\nh = torch.sigmoid(x)\nh.mul_(2)\ny = (h * w).sum()\ny.backward()\n",
    "h = torch.sigmoid(w)\ny = h.sum()\ny.backward()\nh.mul_(2)\n",
    "h = torch.exp(w)\nother = torch.exp(w * 2)\nother += 1\ny = h.sum()\ny.backward()\n",
]


@pytest.mark.parametrize("body", INPLACE_RAISES)
def test_an_in_place_op_autograd_cannot_undo_is_reported_where_torch_raises(body):
    line = run(body)
    assert line is not None, f"torch runs {body!r}"
    assert findings(body) == [("SHP310", line)]


@pytest.mark.parametrize("body", INPLACE_RUNS)
def test_an_in_place_op_torch_runs_is_not_reported(body):
    assert run(body) is None, f"torch raises on {body!r}"
    assert findings(body) == []


# Autograd is followed only in a program that calls backward or sets requires_grad: elsewhere
# no tensor is a leaf either, so an initialisation through `.data` (which would detach it) is
# never taken for an in-place op on a parameter (a false SHP310 found in torch_geometric).
UNFOLLOWED_RUNS = [
    "import torch\nimport torch.nn as nn\n\n\nclass Pool(nn.Module):\n    def __init__(self, c):\n"
    "        super().__init__()\n        self.p = nn.Parameter(torch.empty(c))\n        self.reset_parameters()\n\n"
    "    def reset_parameters(self):\n        self.p.data.fill_(1)\n\n    def forward(self, x):\n        return x * self.p\n\n\n"
    "Pool(4)(torch.randn(2, 4))\n",
    "import torch\nq = torch.nn.Parameter(torch.zeros(1, 3, 8))\nq.data.normal_(mean=0.0, std=1.0)\n",
]


@pytest.mark.parametrize("body", UNFOLLOWED_RUNS)
def test_a_program_without_backward_follows_no_leaf(body):
    import subprocess
    import sys

    assert subprocess.run([sys.executable, "-c", body]).returncode == 0, f"torch raises on {body!r}"
    assert "backward" not in body and "requires_grad" not in body
    assert [(f["code"], f["row"]) for f in _core.check_source(body, "t.py", {})] == []


# SHP314: backward() through a graph an earlier backward() freed (torch raises "Trying to
# backward through the graph a second time"), one case per kind of node that saves tensors
# (`autograd::SAVES_TENSORS`): a layer, an operator, a function, a method, a loss, a recurrent
# layer, the members of an nn.Sequential; and the ways a freed graph is reached again.
TWICE = "y.backward()\ny.backward()\n"
FREED_RAISES = [
    "m = nn.Linear(3, 2)\ny = m(torch.randn(4, 3)).sum()\n" + TWICE,
    "y = (w * torch.randn(3)).sum()\n" + TWICE,
    "y = (w / 2).sum()\n" + TWICE,
    "y = (w ** 2).sum()\n" + TWICE,
    "y = (w @ torch.randn(3, 2)).sum()\n" + TWICE,
    "y = torch.matmul(w, torch.randn(3))\n" + TWICE,
    "y = torch.exp(w).sum()\n" + TWICE,
    "y = w.sigmoid().sum()\n" + TWICE,
    "y = w.abs().sqrt().sum()\n" + TWICE,
    "y = nn.functional.relu(w).sum()\n" + TWICE,
    "y = nn.functional.mse_loss(w, torch.zeros(3))\n" + TWICE,
    "y = nn.functional.cross_entropy(w.unsqueeze(0), torch.tensor([1]))\n" + TWICE,
    "y = nn.MSELoss()(w, torch.zeros(3))\n" + TWICE,
    "c = nn.Conv1d(1, 2, 2)\ny = c(w.view(1, 1, 3)).sum()\n" + TWICE,
    "e = nn.Embedding(5, 3)\ny = e(torch.tensor([1, 2])).sum()\n" + TWICE,
    "r = nn.LSTM(3, 4)\ny = r(w.view(1, 1, 3))[0].sum()\n" + TWICE,
    "s = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))\ny = s(torch.randn(2, 3)).sum()\n" + TWICE,
    "y = (w * w).sum()\ny.backward(retain_graph=False)\ny.backward()\n",
    # a loss reused after its backward
    "loss = (w * w).sum()\nloss.backward()\nloss = loss + (w * 3).sum()\nloss.backward()\n",
    "loss = (w * w).sum()\nloss.backward()\nloss += (w * 3).sum()\nloss.backward()\n",
    # a generator's output not detached for the discriminator's loss
    "g = nn.Linear(2, 3)\nd = nn.Linear(3, 1)\nfake = g(torch.randn(4, 2))\nd(fake).mean().backward()\n(-d(fake).mean()).backward()\n",
    # a hidden state carried into the next iteration
    "rnn = nn.RNN(3, 4)\nh = None\nfor _ in range(2):\n    out, h = rnn(torch.randn(1, 1, 3), h)\n    out.sum().backward()\n",
    "lstm = nn.LSTM(3, 4)\nstate = (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))\nfor _ in range(3):\n    out, state = lstm(torch.randn(5, 1, 3), state)\n    out.pow(2).mean().backward()\n",
]

FREED_RUNS = [
    # nodes that save no tensor
    "y = (w + 1).sum()\n" + TWICE,
    "y = torch.cat([w, -w]).mean()\n" + TWICE,
    "y = w.view(3, 1)[1:].sum()\n" + TWICE,
    # retained
    "y = (w * w).sum()\ny.backward(retain_graph=True)\ny.backward()\n",
    "y = (w * w).sum()\ny.backward(create_graph=True)\ny.backward()\n",
    # distinct graphs made by one line
    "m = nn.Linear(3, 1)\nys = [m(torch.randn(2, 3)).sum() for _ in range(2)]\nys[0].backward()\nys[1].backward()\n",
    "def f(v):\n    return (v * v).sum()\na = f(w)\nb = f(w)\na.backward()\nb.backward()\n",
    "m = nn.Linear(3, 1)\nout = m(torch.randn(2, 3))\nout.sum().backward()\nout = m(torch.randn(2, 3))\nout.sum().backward()\n",
    "m = nn.Linear(3, 1)\na = m(torch.randn(2, 3)).sum()\nb = m(torch.randn(2, 3)).sum()\na.backward()\nb.backward()\n",
    # detached before the next use
    "g = nn.Linear(2, 3)\nd = nn.Linear(3, 1)\nfake = g(torch.randn(4, 2))\nd(fake.detach()).mean().backward()\n(-d(fake).mean()).backward()\n",
    "rnn = nn.RNN(3, 4)\nh = None\nfor _ in range(2):\n    out, h = rnn(torch.randn(1, 1, 3), h)\n    h = h.detach()\n    out.sum().backward()\n",
    "rnn = nn.RNN(3, 4)\nh = None\nfor _ in range(2):\n    out, h = rnn(torch.randn(1, 1, 3), h)\n    out.sum().backward()\n    h = h.data\n",
    # a graph reused before it is freed
    "y = (w * w).sum()\nz = y * 2\n(y + z).backward()\n",
]


@pytest.mark.parametrize("body", FREED_RAISES)
def test_backward_through_a_freed_graph_is_reported_where_torch_raises(body):
    line = run(body)
    assert line is not None, f"torch runs {body!r}"
    assert findings(body) == [("SHP314", line)]


@pytest.mark.parametrize("body", FREED_RUNS)
def test_backward_torch_runs_twice_is_not_reported(body):
    assert run(body) is None, f"torch raises on {body!r}"
    assert findings(body) == []
