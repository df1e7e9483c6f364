"""Import real torchvision for the tests that compare the zoo with it (not a test module).

The torchvision wheel that matches the shipped torch 2.13 CPU wheel (torchvision 0.28) is a CUDA
build: its compiled operators (`torchvision::nms`, ...) do not load against a CPU torch, and
`import torchvision` then fails while registering their meta kernels. The classification models
are plain Python and never call those operators, so on exactly that failure the two
registration modules are replaced by empty ones and the import is retried. `load()` returns the
module, or None with `REASON` saying why it is unavailable.
"""
import sys
import types

REASON = ""
_STUBBED = ("torchvision._meta_registrations", "torchvision._autograd_registrations")


def _forget():
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]


def load():
    global REASON
    try:
        import torchvision
        return torchvision
    except ImportError as e:
        REASON = f"torchvision is not importable ({e})"
        return None
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            REASON = f"torchvision is not importable ({e})"
            return None
    _forget()
    for name in _STUBBED:
        sys.modules[name] = types.ModuleType(name)
    try:
        import torchvision
        return torchvision
    except Exception as e:  # noqa: BLE001 - any failure means: no torchvision here
        _forget()
        REASON = f"torchvision is not importable without its compiled operators ({e})"
        return None
