"""shape-lint: finds tensor shape errors and PyTorch training bugs before the model trains."""
from ._core import __version__, check_source, rules

__all__ = ["__version__", "check_source", "rules"]
