"""Dtypes as the core follows them (SHP202), each case proven under torch: the expressions torch
rejects for their dtypes are reported at their line, and their neighbours that torch runs (a
cast, a dtype torch accepts there, promotion) are not. The tensors of each case:

    f float32 [4, 4]   d float64   h float16   bf bfloat16   l int64 (arange)   i32 int32
    u uint8            b bool

NumPy arrays are followed too (`models/numpy.rs`): their dtypes under NumPy's promotion rules,
checked against NumPy in `test_numpy_dtypes_follow_numpy`."""
import itertools

import pytest

from shape_lint import _core

PRELUDE = (
    "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    "f = torch.randn(4, 4)\nd = f.double()\nh = f.half()\nbf = f.bfloat16()\n"
    "l = torch.arange(16).view(4, 4)\ni32 = l.int()\nu = l.to(torch.uint8)\nb = f > 0\n"
)
LINE = PRELUDE.count("\n") + 1

RAISES = [
    # products: one dtype for every operand
    "torch.mm(f, d)", "torch.mm(f, l)", "torch.matmul(f, d)", "torch.matmul(f[0], d[0])", "torch.bmm(f[None], d[None])",
    "torch.mv(f, d[0])", "torch.dot(f[0], d[0])", "f.mm(l)", "l @ f", "torch.einsum('ij,jk->ik', f, d)",
    "torch.addmm(d, f, f)", "torch.baddbmm(d[None], f[None], f[None])", "F.linear(d, f)", "F.linear(f, f, d[0])",
    "F.conv2d(d.view(1, 1, 4, 4), torch.ones(1, 1, 2, 2))", "F.conv2d(l.view(1, 1, 4, 4), torch.ones(1, 1, 2, 2))",
    # layers: the input of the weights' dtype
    "nn.Linear(4, 2)(u)", "nn.Linear(4, 2)(b)", "nn.Linear(4, 2)(i32)", "nn.Linear(4, 2)(h)", "nn.Linear(4, 2).double()(f)",
    "nn.Conv2d(4, 2, 1)(u.view(1, 4, 2, 2))", "nn.Conv2d(4, 2, 1)(h.view(1, 4, 2, 2))", "nn.LSTM(4, 3)(d)",
    "nn.MultiheadAttention(4, 2)(d[None], d[None], d[None])",
    # norms: a floating input fitting the weights and running statistics
    "nn.BatchNorm1d(4)(d)", "nn.BatchNorm1d(4).eval()(d)", "nn.BatchNorm1d(4, affine=False)(d)", "nn.BatchNorm1d(4)(l)",
    "nn.LayerNorm(4)(d)", "nn.LayerNorm(4)(l)", "nn.LayerNorm(4, elementwise_affine=False)(l)", "nn.LayerNorm(4).half()(f)",
    "nn.GroupNorm(2, 4)(d)", "nn.GroupNorm(2, 4, affine=False)(l)", "nn.InstanceNorm1d(4, affine=True)(d.view(1, 4, 4))",
    "nn.RMSNorm(4)(l)", "nn.PReLU()(h)", "F.layer_norm(d, (4,), torch.ones(4))", "F.batch_norm(d, torch.zeros(4), torch.ones(4))",
    # indices and masks
    "f.gather(1, torch.zeros(4, 1))", "torch.gather(f, 1, torch.zeros(4, 1, dtype=torch.uint8))", "f.index_select(0, torch.zeros(2))",
    "f.scatter_add(1, torch.zeros(4, 1), f[:, :1])", "f[torch.zeros(2)]", "f[torch.tensor(1.0)]", "F.one_hot(i32[0] % 4, 4)",
    "F.one_hot(torch.zeros(3), 4)", "nn.Embedding(16, 3)(u)", "nn.Embedding(16, 3)(l.double())", "f.masked_fill(l, 0)",
    "f.masked_fill(u, 0)", "torch.masked_fill(f, f, 0)",
    # floating-only reductions and activations
    "b.mean()", "l.mean()", "torch.mean(u)", "i32.mean(0)", "l.nanmean()", "l.std(0)", "b.var()", "l.norm()",
    "torch.norm(u)", "torch.softmax(l, 1)", "F.log_softmax(b, 0)", "l.softmax(0)", "nn.Softmax(dim=1)(l)",
    # losses
    "nn.CrossEntropyLoss()(f, torch.zeros(4).float())", "F.cross_entropy(f, torch.zeros(4, dtype=torch.int32))",
    "nn.NLLLoss()(f, torch.zeros(4, dtype=torch.bool))", "nn.CrossEntropyLoss(weight=torch.ones(4).double())(f, torch.zeros(4, dtype=torch.long))",
    "nn.CrossEntropyLoss(weight=torch.ones(4))(h, torch.zeros(4, dtype=torch.long))", "F.nll_loss(l, torch.zeros(4, dtype=torch.long))",
    "nn.BCELoss()(torch.sigmoid(f), torch.rand(4, 4).double())", "F.binary_cross_entropy(torch.sigmoid(d), torch.rand(4, 4))",
    "nn.BCELoss()(torch.sigmoid(f), b)", "nn.BCEWithLogitsLoss()(f, l)", "F.binary_cross_entropy_with_logits(f, u)",
    # float16 and bfloat16 on the CPU
    "torch.fft.fft(h[0])", "torch.fft.rfft(bf[0])", "torch.fft.fft2(h)", "torch.stft(torch.randn(64).half(), 16, return_complex=True)",
    # in place: a result the tensor cannot hold
    "l.clone().add_(f)", "l.clone().mul_(0.5)", "l.clone().div_(2)", "u.clone().div_(255)", "b.clone().add_(1)",
    "l.clone().add_(torch.tensor(1.5))", "l.clone().sqrt_()", "l.clone().sigmoid_()", "l.clone().pow_(0.5)",
    # NumPy's float64 into a float32 model
    "nn.Linear(4, 2)(torch.from_numpy(np.random.rand(8, 4)))", "nn.Linear(4, 2)(torch.tensor(np.zeros((8, 4))))",
    "nn.Linear(4, 2)(torch.from_numpy(np.random.default_rng(0).normal(size=(8, 4))))",
    "nn.Linear(1, 2)(torch.from_numpy(np.linspace(0, 1, 8)).unsqueeze(1))",
    "nn.Linear(4, 2)(torch.from_numpy(np.random.rand(8, 4).astype(np.float32) * np.ones(4)))",
    "nn.CrossEntropyLoss(weight=torch.tensor(1.0 / np.array([5, 2, 3, 6])))(f, torch.zeros(4, dtype=torch.long))",
    "nn.Linear(4, 2)(torch.LongTensor([[1, 2, 3, 4]]))",
    # bitwise operators: integer and bool tensors only
    "~f", "~(b.float())", "~h", "b & f", "f | b", "d ^ l", "(f > 0) & (f < 1).float()",
    # sums of bools and integers are int64
    "b.sum(1).mean()", "nn.Linear(4, 2)(u.sum(0, keepdim=True))",
    # a bool tensor is neither subtracted nor negated (masks invert with `~`)
    "1 - b", "b - 1", "b - b", "f - b", "b - f", "1.0 - b", "b - True", "l - b", "torch.sub(b, 1)", "b.sub(1)",
    "torch.rsub(b, 1)", "torch.subtract(f, b)", "f.clone().sub_(b)", "-b", "b.neg()", "torch.neg(b)", "(f > 0).neg()",
    "f - True", "True - f", "l - False", "f.sub(True)", "torch.rsub(f, True)",
]

RUNS = [
    "torch.mm(l, l)", "torch.mm(bf, bf)", "torch.outer(f[0], d[0])", "torch.addmm(f, f, f, beta=0.5)", "F.linear(l, l)",
    "F.conv2d(l.view(1, 1, 4, 4), torch.ones(1, 1, 2, 2, dtype=torch.long))", "f @ f.t()",
    "nn.Linear(4, 2).half()(h)", "nn.Linear(4, 2)(f.float())", "nn.Conv2d(4, 2, 1).half()(h.view(1, 4, 2, 2))",
    "nn.BatchNorm1d(4)(h)", "nn.BatchNorm1d(4)(bf)", "nn.BatchNorm1d(4, affine=False, track_running_stats=False)(d)",
    "nn.LayerNorm(4, elementwise_affine=False)(d)", "nn.LayerNorm(4)(h)", "nn.GroupNorm(2, 4, affine=False)(d)",
    "nn.InstanceNorm1d(4)(d.view(1, 4, 4))", "nn.InstanceNorm1d(4, track_running_stats=True)(d.view(1, 4, 4))", "nn.RMSNorm(4)(d)",
    "f.gather(1, torch.zeros(4, 1, dtype=torch.int32))", "f[torch.zeros(4, dtype=torch.uint8)]", "f[b]", "f[i32[0] % 4]",
    "f.index_select(0, torch.zeros(2, dtype=torch.int32))", "F.one_hot(l[0] % 4, 4)", "nn.Embedding(16, 3)(i32)",
    "f.masked_fill(b, 0)", "f.masked_fill(l == 0, 0)",
    "l.mean(dtype=torch.float)", "torch.softmax(l, 1, dtype=torch.float)", "h.softmax(0)", "b.sum()", "l.float().mean()",
    "nn.CrossEntropyLoss()(h, torch.zeros(4, dtype=torch.long))", "nn.CrossEntropyLoss()(f, torch.zeros(4, dtype=torch.uint8))",
    "nn.CrossEntropyLoss()(f, torch.rand(4, 4).double())", "nn.CrossEntropyLoss(weight=torch.ones(4).double())(f, torch.rand(4, 4))",
    "nn.CrossEntropyLoss()(d, torch.zeros(4, dtype=torch.long))", "nn.BCEWithLogitsLoss()(f, d)", "nn.BCELoss(weight=torch.ones(4).double())(torch.sigmoid(f), torch.rand(4, 4))",
    "nn.MSELoss()(f, l)", "nn.MSELoss()(f, d)",
    "torch.fft.fftshift(h)", "torch.fft.rfft(f[0])", "torch.stft(torch.randn(64), 16, return_complex=True)",
    "l.clone().add_(1)", "l.clone().mul_(b)", "f.clone().add_(d)", "h.clone().add_(f)", "b.clone().add_(True)", "l.clone().copy_(f)",
    "f.clone().add_(torch.tensor(1.5, dtype=torch.float64))", "u / 255", "l.clone().div_(2, rounding_mode='floor')", "l.clone().relu_()",
    "nn.Linear(4, 2)(torch.from_numpy(np.random.rand(8, 4).astype(np.float32)))", "nn.Linear(4, 2)(torch.tensor(np.zeros((8, 4)), dtype=torch.float32))",
    "nn.Linear(4, 2)(torch.FloatTensor(np.random.rand(8, 4)))", "nn.Linear(4, 2)(torch.Tensor(np.random.rand(8, 4)))",
    "nn.Linear(4, 2)(torch.from_numpy(np.zeros((8, 4), dtype=np.float32)))", "nn.Embedding(10, 3)(torch.from_numpy(np.arange(10)))",
    "nn.Linear(4, 2)(torch.from_numpy(np.random.rand(8, 4).astype(np.float32) * 2.5))",
    "nn.CrossEntropyLoss(weight=torch.tensor(1.0 / np.array([5, 2, 3, 6]), dtype=torch.float32))(f, torch.zeros(4, dtype=torch.long))",
    "nn.Linear(4, 2)(torch.LongTensor([[1, 2, 3, 4]]).float())",
    "~b", "~l", "~u", "b & (f < 1)", "l | i32", "b ^ b",
    "b.logical_not()", "1 - b.long()", "1 - l", "f - b.float()", "-l", "-f", "b + b", "b * 2", "f + True", "f - 1",
    # sums of bools and integers are int64: indices
    "nn.Embedding(16, 3)(b.sum(0))", "F.one_hot(b.sum(1) % 4, 4)", "F.one_hot(u.sum(1) % 4, 4)", "f[b.sum(1) % 4]",
    # a cast to a dtype the core does not know: the dtype is unknown, not kept
    "nn.Linear(4, 2).half()(f.to(next(nn.Linear(4, 2).half().parameters()).dtype))",
    "nn.Linear(4, 2).half()(f.to(dtype=next(nn.Linear(4, 2).half().parameters()).dtype))",
]


def run_torch(expr):
    torch = pytest.importorskip("torch")
    pytest.importorskip("numpy")
    env = {}
    exec(PRELUDE, env)  # noqa: S102 - the test's own prelude
    try:
        eval(expr, env)  # noqa: S307 - a case of this file
    except Exception as e:  # noqa: BLE001 - any error counts as "raises"
        return e
    return torch  # (ran)


def findings(expr):
    return [(f["code"], f["row"]) for f in _core.check_source(PRELUDE + f"y = {expr}\n", "t.py", {})]


@pytest.mark.parametrize("expr", RAISES)
def test_a_dtype_torch_rejects_is_reported_at_its_line(expr):
    assert isinstance(run_torch(expr), Exception), f"{expr}: torch runs it"
    assert findings(expr) == [("SHP202", LINE)]


@pytest.mark.parametrize("expr", RUNS)
def test_what_torch_runs_is_not_reported(expr):
    assert not isinstance(run_torch(expr), Exception), f"{expr}: torch raises {run_torch(expr)!r}"
    assert findings(expr) == []


ARRAYS = {
    "f64": "np.random.rand(3, 2)", "f32": "np.zeros((3, 2), dtype=np.float32)", "f16": "np.ones((3, 2), dtype=np.float16)",
    "i64": "np.random.randint(0, 5, size=(3, 2))", "i32": "np.ones((3, 2), dtype=np.int32)", "u8": "np.full((3, 2), 7, dtype=np.uint8)",
    "b": "(np.random.rand(3, 2) > 0.5)",
}
OPERANDS = list(ARRAYS) + ["1", "2.5", "True"]
NUMPY_CASES = (
    [f"{ARRAYS[a]} {op} {ARRAYS.get(b, b)}" for a, b in itertools.product(ARRAYS, OPERANDS) for op in ("+", "*", "/")]
    + [f"({ARRAYS[a]}).{red}(axis=1)" for a in ARRAYS for red in ("sum", "mean", "max", "std")]
    + [f"({ARRAYS[a]}).astype(np.{t})" for a in ("f64", "b") for t in ("float32", "int64", "uint8")]
    + ["np.array([1, 2, 3])", "np.array([[1.0, 2], [3, 4]])", "np.array([True, False])", "np.arange(5)", "np.arange(0, 1, 0.25)",
       "np.linspace(0, 1, 7)", "np.eye(3)", "np.zeros_like(np.ones((2, 3), dtype=np.int32))", "np.random.randn(2, 3)[1:]",
       "np.random.randn(4, 3)[2]", "np.random.default_rng(0).integers(0, 3, size=(2, 2))", "np.random.rand(2, 3) @ np.random.rand(3)",
       "np.asarray(torch.zeros(2, 3))"]
    # elementwise functions of one array, clip, dtype= of linspace and of a Generator's draws,
    # and basic indexing with new axes, slices and `...`
    + [f"np.{u}({ARRAYS[a]})" for a in ARRAYS for u in ("sin", "exp", "sqrt", "fabs", "abs", "square") if (a, u) != ("b", "square")]
    + [f"np.floor({ARRAYS[a]})" for a in ("f64", "f32", "f16")]
    + [f"np.clip({ARRAYS[a]}, 0, 1)" for a in ARRAYS] + [f"np.clip({ARRAYS[a]}, 0.5, None)" for a in ("f64", "f32", "i64")]
    + ["np.linspace(0, 1, 7, dtype=np.float32)", "np.linspace(0, 1, num=4, endpoint=False, dtype=np.float16)",
       "np.random.default_rng(0).random((2, 3), dtype=np.float32)", "np.random.default_rng(0).random((2, 3), np.float32)",
       "np.random.default_rng(0).random(size=4)", "np.random.default_rng(0).standard_normal((2, 2), dtype=np.float32)",
       "np.random.default_rng(0).integers(0, 3, size=(2, 2), dtype=np.int32)", "np.random.default_rng(0).integers(0, 3, (4,), np.uint8)",
       "np.random.RandomState(0).randn(3, 2)", "np.random.RandomState(1).randint(0, 4, size=(5,))",
       "np.random.RandomState(2).uniform(0, 1, size=(2, 3))", "np.random.RandomState(3).rand(4).astype(np.float32)",
       "np.linspace(0, 1, 5)[:, None]", "np.zeros((3, 4, 5))[..., 1:3]", "np.zeros((3, 4))[None, :, 0]",
       "np.zeros((3, 4), dtype=np.float32)[1:, None, :2]", "np.zeros((2, 3, 4))[0, ..., None]",
       "np.stack([np.ones(6, dtype=np.int64) for _ in range(4)])", "np.stack([np.zeros((2, 3)), np.ones((2, 3))], axis=-1)",
       "np.concatenate([np.zeros((2, 3)), np.zeros((4, 3))])", "np.concatenate((np.zeros((2, 3), dtype=np.float32), np.zeros((2, 1), dtype=np.float32)), axis=1)",
       "np.vstack([np.zeros(3), np.zeros(3)])", "np.hstack([np.zeros((2, 3)), np.zeros((2, 1))])", "np.hstack([np.zeros(3), np.zeros(2)])",
       # NumPy scalars (an element, a reduction over everything) promote as 0-d arrays;
       # broadcasting; a list of arrays; np.pi; a single slice
       "np.arange(6) * np.pi", "np.random.rand(3, 2).sum()", "np.ones((3, 2), dtype=np.float32).max()",
       "np.random.rand(3, 2) - np.random.rand(3, 2).min(axis=0)", "np.ones((3, 1)) + np.ones((1, 4))",
       "np.ones((2, 3), dtype=np.float32) * np.ones(3, dtype=np.float32)",
       "np.array([np.ones(3), np.zeros(3)])", "np.array([np.ones(3, dtype=np.float32)[0], np.ones(3, dtype=np.float32)[1]])",
       "np.ones(5, dtype=np.float32)[2] * np.ones(3)", "np.ones(5, dtype=np.float32)[2] * 2.0",
       "np.ones((4, 2), dtype=np.float32)[1:3]", "np.arange(10)[2:7]",
       # a minibatch of rows by an integer array
       "np.ones((5, 3), dtype=np.float32)[np.random.randint(0, 5, size=4)]", "np.zeros(10)[np.arange(3)]",
       "np.zeros((6, 2, 2))[np.random.randint(0, 6, size=(2, 3))]",
       # advanced indexing with a list or a mask among the items: an array of the dtype
       "np.ones((4, 3), dtype=np.float32)[:, [-1]]", "np.arange(12)[[0, 2]]",
       "np.zeros((5, 2), dtype=np.float16)[np.zeros(5) > 1]",
       # layouts (torch's reshape, flatten and permute of the same dims) and np.where
       "np.zeros((2, 3, 4), dtype=np.float32).reshape(6, 4)", "np.arange(12).reshape(-1, 3)", "np.zeros((2, 3)).reshape((3, 2))",
       "np.zeros((2, 3), dtype=np.int32).flatten()", "np.ones((4, 2, 2), dtype=np.uint8).ravel()",
       "np.zeros((64, 48, 3), dtype=np.float32).transpose(2, 0, 1)", "np.zeros((2, 3, 4)).transpose()",
       "np.zeros((2, 3, 4)).transpose((1, 0, 2))",
       "np.where(np.random.rand(5) > 0.5, 1.0, 0.0)", "np.where(np.random.rand(5) > 0.5, 1, 0)",
       "np.where(np.zeros((3, 1)) > 0, np.ones((3, 4), dtype=np.float32), 0.0)",
       "np.where(np.zeros(4) > 0, np.ones(4, dtype=np.int32), np.zeros(4, dtype=np.int64))"]
)


@pytest.mark.parametrize("expr", NUMPY_CASES)
def test_numpy_dtypes_follow_numpy(expr):
    """The array the core follows has NumPy's dtype (and shape, where it names one)."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    want = torch.from_numpy(np.ascontiguousarray(eval(expr, {"np": np, "torch": torch})))  # noqa: S307
    src = "import numpy as np\nimport torch\ny = torch.from_numpy(" + expr + ")\n"
    shown = dict(_core.show_shapes(src, "t.py")).get(3)
    names = {torch.float32: "float", torch.float64: "double", torch.float16: "half", torch.int64: "long",
             torch.int32: "int", torch.uint8: "byte", torch.bool: "bool"}
    assert shown is not None, f"{expr}: the core follows no array"
    dims, _, dtype = shown.removeprefix("y: ").partition("] ")
    if want.dtype in names:
        assert dtype == names[want.dtype], f"{expr}: numpy gives {want.dtype}, the core {shown}"
    else:
        assert dtype in ("", "other"), f"{expr}: numpy gives {want.dtype}, the core {shown}"
    known = dims.lstrip("[").split(", ")
    if all(k.isdigit() for k in known):
        assert tuple(int(k) for k in known) == tuple(want.shape), f"{expr}: numpy gives {tuple(want.shape)}, the core {shown}"


@pytest.mark.parametrize("call, dtype", [
    ("np.loadtxt(PATH, delimiter=',')", "double"),
    ("np.loadtxt(PATH, delimiter=',', dtype=np.float32)", "float"),
    ("np.loadtxt(PATH, delimiter=',', dtype=np.int64)", "long"),
    ("np.genfromtxt(PATH, delimiter=',', dtype=np.float32)", "float"),
    ("np.loadtxt(PATH, delimiter=',', dtype='float32', skiprows=1)", "float"),
])
def test_loadtxt_dtype_follows_numpy(tmp_path, call, dtype):
    """A text file's numbers: float64, or the dtype= given (the file decides the shape)."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    path = tmp_path / "data.csv"
    path.write_text("1,2,3\n4,5,6\n7,8,9\n")
    expr = call.replace("PATH", repr(str(path)))
    want = torch.from_numpy(eval(expr, {"np": np}))  # noqa: S307
    names = {torch.float32: "float", torch.float64: "double", torch.int64: "long"}
    assert names[want.dtype] == dtype
    shown = dict(_core.show_shapes(f"import numpy as np\nimport torch\ny = torch.from_numpy({expr})\n", "t.py")).get(3)
    assert shown == f"y: [*] {dtype}", shown


def test_from_numpy_of_an_array_not_followed_is_a_tensor_of_unknown_dtype():
    src = "import numpy as np\nimport torch\nimport pickle\ny = torch.from_numpy(pickle.load(open('a.pkl', 'rb')))\nz = y.float()\n"
    shown = dict(_core.show_shapes(src, "t.py"))
    assert shown.get(4) == "y: [*]" and shown.get(5) == "z: [*] float", shown
