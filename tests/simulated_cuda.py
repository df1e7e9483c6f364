"""A CUDA device simulated on PyTorch's ``meta`` device, for the oracle of the device fixtures.

A CPU machine has no second device, but tensors on ``meta`` meet CPU tensors the way CUDA
tensors do in the ops the device fixtures use (layers with parameters, RNN hidden states,
pointwise ops, losses): torch raises ``Tensor on device meta is not on the expected device
cpu!``. A fixture whose source has the line ``# oracle: simulated-cuda`` runs with
``torch.cuda.is_available()`` true and every ``"cuda"`` device (``device=``, ``.to(...)``,
``.cuda()``) mapped to ``meta``. Reading values off a simulated tensor (``.item()``,
``.cpu()``, ``.tolist()``, ``bool``) gives zeros on the CPU: the clean twins run to the end.
Handing one to NumPy (``.numpy()``, ``np.asarray``) raises CUDA's ``TypeError``.

Where meta does not check devices (a convolution, ``@``, ``nn.Embedding`` accept a CPU input
with meta weights), a fixture cannot be proven this way; the device fixtures avoid those ops
at the marked line.
"""
import torch
from torch.overrides import TorchFunctionMode

MARKER = "# oracle: simulated-cuda"


def _meta(d):
    if isinstance(d, torch.device) and d.type == "cuda":
        return torch.device("meta")
    if isinstance(d, str) and d.split(":")[0] == "cuda":
        return "meta"
    if isinstance(d, int) and not isinstance(d, bool):
        return "meta"  # `.to(0)`: a CUDA index
    return d


class SimulatedCuda(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if "device" in kwargs:
            kwargs["device"] = _meta(kwargs["device"])
        if name == "cuda":
            return args[0].to("meta")
        if name == "to":
            args = (args[0],) + tuple(_meta(a) for a in args[1:])
            src = args[0]
            dev = kwargs.get("device", args[1] if len(args) > 1 else None)
            if isinstance(src, torch.Tensor) and src.is_meta and (dev == "cpu" or getattr(dev, "type", None) == "cpu"):
                return torch.zeros(src.shape, dtype=src.dtype)
        if name in ("numpy", "__array__") and args and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            # as CUDA: NumPy reads host memory only
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
        if name in ("cpu", "tolist", "item", "__bool__", "__float__", "__int__", "__index__") and args and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            zeros = torch.zeros(args[0].shape, dtype=args[0].dtype)
            if name == "cpu":
                return zeros
            # (the mode is off inside its own handler)
            return getattr(zeros, name)()
        return func(*args, **kwargs)


def enable():
    """Make CUDA available, on meta, for the rest of this process."""
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    mode = SimulatedCuda()
    mode.__enter__()
    return mode
