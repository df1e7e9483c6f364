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


SIMULATED = [
    # a mask or a choice made on the CPU for a tensor on the accelerator
    "x = torch.randn(4, 8, device=device)\ny = x.masked_fill(torch.zeros(4, 8).bool(), 0.0)\n",
    "x = torch.randn(4, 8, device=device)\ny = torch.where(torch.ones(4, 8).bool(), x, 0.0)\n",
    "x = torch.randn(4, 8, device=device)\ny = torch.where(x > 0, x, torch.zeros(4, 8))\n",
    # NumPy reads host memory only
    "x = torch.randn(4, 8, device=device)\ny = x.argmax(1).numpy()\n",
    "import numpy as np\nx = torch.randn(4, 8, device=device)\ny = np.asarray(x)\n",
]
SIMULATED_OK = [
    "x = torch.randn(4, 8, device=device)\ny = x.masked_fill(torch.tensor(True), 0.0)\n",
    "x = torch.randn(4, 8, device=device)\ny = x.masked_fill(x > 0, 0.0)\n",
    "x = torch.randn(4, 8, device=device)\ny = x.argmax(1).cpu().numpy()\n",
]


def _under_simulated_cuda(bodies):
    """The line where each body raises under the simulated CUDA (None: it runs), in one subprocess."""
    import json
    import pathlib
    import subprocess
    import sys

    pytest.importorskip("torch")
    runner = (
        "import json, sys, traceback\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import simulated_cuda\n"
        "simulated_cuda.enable()\n"
        "out = []\n"
        "for src in json.load(sys.stdin):\n"
        "    try:\n"
        "        exec(compile(src, 'dev.py', 'exec'), {})\n"
        "        out.append(None)\n"
        "    except Exception as e:\n"
        "        out.append([f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == 'dev.py'][-1])\n"
        "print(json.dumps(out))\n"
    )
    here = str(pathlib.Path(__file__).parent)
    proc = subprocess.run([sys.executable, "-c", runner, here], input=json.dumps([HEAD + b for b in bodies]), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_devices_that_cannot_meet_under_a_simulated_cuda_are_reported_where_torch_raises():
    lines = _under_simulated_cuda(SIMULATED + SIMULATED_OK)
    for body, line in zip(SIMULATED, lines):
        assert line is not None, f"torch runs {body!r}"
        assert codes(body) == [("SHP201", line)], body
    for body, line in zip(SIMULATED_OK, lines[len(SIMULATED):]):
        assert line is None, f"torch raises at line {line}: {body!r}"
        assert codes(body) == [], body


# A move to CUDA that the program makes whatever `torch.cuda.is_available()` answered: on the
# side where CUDA is not available torch raises at the move itself, so the path ends there and
# a mismatch after it, on a line that path never reaches, is not reported for it.
CUDA_ON_EVERY_PATH = [
    "model = nn.Linear(4, 2)\nif torch.cuda.is_available():\n    model = model.cuda()\nx = torch.randn(8, 4).cuda()\nout = model(x)\n",
    "model = nn.Linear(4, 2)\nif torch.cuda.is_available():\n    model = model.cuda()\nx = torch.randn(8, 4).to('cuda')\nout = model(x)\n",
    "model = nn.Linear(4, 2)\nif torch.cuda.is_available():\n    model = model.cuda()\nx = torch.randn(8, 4, device='cuda')\nout = model(x)\n",
    "model = nn.Linear(4, 2).cuda()\nx = torch.randn(8, 4).to(device)\nout = model(x)\n",
]


@pytest.mark.parametrize("body", CUDA_ON_EVERY_PATH)
def test_a_move_to_cuda_ends_the_path_where_cuda_is_not_available(body):
    torch = pytest.importorskip("torch")
    assert not torch.cuda.is_available()
    src = HEAD + body
    with pytest.raises((AssertionError, RuntimeError)) as raised:
        exec(compile(src, "dev.py", "exec"), {})
    import traceback
    line = [f.lineno for f in traceback.extract_tb(raised.value.__traceback__) if f.filename == "dev.py"][-1]
    assert line < len(src.splitlines()), "torch raises at the move, before the last line"
    assert codes(body) == []
