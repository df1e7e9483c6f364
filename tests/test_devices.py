"""Devices and dtypes as the core follows them (SHP201, SHP202): the cases a naive rule would
flag and torch runs, the condition a machine-dependent device puts in the message, and the
place a mismatch is reported. Each bug below is one a fixture in ``fixtures/device`` proves
under torch (on a simulated CUDA, ``simulated_cuda.py``); here the neighbours of each are
checked against the core alone."""
import pytest

from shape_lint import _core

HEAD = (
    "import torch\nimport torch.nn as nn\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
)


def findings(body):
    return [(f["code"], f["row"], f["message"]) for f in _core.check_source(HEAD + body, "dev.py", {})]


def codes(body):
    return [(c, r) for c, r, _ in findings(body)]


def test_a_cpu_batch_into_a_moved_model_is_reported_when_cuda_is_available():
    found = findings("model = nn.Linear(4, 2).to(device)\nout = model(torch.randn(8, 4))\n")
    assert [(c, r) for c, r, _ in found] == [("SHP201", 5)]
    assert found[0][2].endswith("(when CUDA is available)"), found


def test_asking_twice_gets_the_same_answer():
    # the second ask is the same condition: no path where the model moved and the data did not
    body = (
        "model = nn.Linear(4, 2)\n"
        "x = torch.randn(8, 4)\n"
        "if torch.cuda.is_available():\n"
        "    model = model.cuda()\n"
        "if torch.cuda.is_available():\n"
        "    x = x.cuda()\n"
        "out = model(x)\n"
    )
    assert codes(body) == []


@pytest.mark.parametrize("body", [
    # a 0-dim CPU tensor meets tensors on any device
    "x = torch.randn(8, 4, device=device)\ny = x * torch.tensor(2.0)\n",
    # DataParallel scatters CPU inputs to the module's devices
    "model = nn.DataParallel(nn.Linear(4, 2).to(device))\nout = model(torch.randn(8, 4))\n",
    # type_as takes the other tensor's device
    "w = torch.randn(4, 2, device=device)\nx = torch.randn(8, 4).type_as(w)\ny = x @ w\n",
    # a module handed to code the core does not follow may be moved there
    "import accelerate\nmodel = nn.Linear(4, 2)\nmodel = accelerate.Accelerator().prepare(model)\nout = model(torch.randn(8, 4).to(device))\n",
    # a device the core cannot tell
    "import os\nmodel = nn.Linear(4, 2).to(os.environ['DEVICE'])\nout = model(torch.randn(8, 4))\n",
    # the default device changed
    "torch.set_default_device(device)\nmodel = nn.Linear(4, 2)\nout = model(torch.randn(8, 4))\n",
    # indexing a CUDA tensor with CPU indices
    "x = torch.randn(8, 4, device=device)\ny = x[torch.tensor([0, 2])]\n",
])
def test_what_torch_runs_is_not_reported(body):
    assert codes(body) == []


@pytest.mark.parametrize("body", [
    # mixed precision casts the inputs of layers
    "model = nn.Linear(4, 2).half()\nwith torch.autocast('cpu'):\n    out = model(torch.randn(8, 4))\n",
    # integer targets for a regression loss are promoted
    "out = nn.functional.mse_loss(torch.randn(8), torch.randint(0, 3, (8,)))\n",
    # probabilities are a valid float target of cross entropy
    "out = nn.CrossEntropyLoss()(torch.randn(8, 3), torch.rand(8, 3))\n",
    # int32 indices are valid for an embedding
    "out = nn.Embedding(10, 4)(torch.randint(0, 10, (8,), dtype=torch.int32))\n",
    # a bool padding mask is not an input of attention's products
    "mha = nn.MultiheadAttention(8, 2, batch_first=True)\nq = torch.randn(2, 5, 8)\nout = mha(q, q, q, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool))\n",
    # set_default_dtype changes the parameters' dtype too
    "torch.set_default_dtype(torch.float64)\nout = nn.Linear(4, 2)(torch.randn(8, 4, dtype=torch.float64))\n",
])
def test_dtypes_torch_accepts_are_not_reported(body):
    assert codes(body) == []


def test_a_model_cast_with_half_rejects_float_inputs_and_names_both_dtypes():
    found = findings("model = nn.Linear(4, 2).double()\nout = model(torch.randn(8, 4))\n")
    assert [(c, r) for c, r, _ in found] == [("SHP202", 5)]
    assert "float32" in found[0][2] and "float64" in found[0][2], found


def test_a_mismatch_inside_forward_is_reported_where_the_cpu_tensor_entered():
    body = (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
        "net = Net().to(device)\n"
        "out = net(torch.randn(8, 4))\n"
    )
    # line 11 is `out = net(...)`: the batch to move; torch raises in forward, line 9
    assert codes(body) == [("SHP201", 11)]


@pytest.mark.parametrize("call", [
    "nn.functional.nll_loss(torch.randn(8, 3).log_softmax(1), torch.randint(0, 3, (8,)).float())",
    "nn.functional.cross_entropy(torch.randn(8, 3), torch.randint(0, 3, (8,), dtype=torch.int32))",
    "nn.functional.binary_cross_entropy_with_logits(torch.randn(8), torch.randint(0, 2, (8,)))",
    "nn.MultiheadAttention(8, 2)(*[torch.randn(5, 2, 8).double()] * 3)",
])
def test_the_functional_losses_and_attention_check_dtypes_as_the_modules(call):
    assert codes("out = " + call + "\n") == [("SHP202", 4)]
    # and torch raises there ("expected target dtype to be Long or Byte", "result type Float
    # can't be cast to the desired output type Long", "mat1 and mat2 must have the same dtype")
    torch = pytest.importorskip("torch")
    with pytest.raises((RuntimeError, ValueError)):
        eval(call, {"torch": torch, "nn": torch.nn})
