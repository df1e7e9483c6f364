"""The `--show-shapes` debug view, through the real core and the CLI."""
import subprocess
import sys
from pathlib import Path

from shape_lint import _core

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet_cifar.py"


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_core_reports_shapes_per_line():
    text = LENET.read_text()
    shapes = dict(_core.show_shapes(text, str(LENET)))
    # the script run feeds [4, 3, 32, 32] images: fc1 makes [4, 120]
    assert "x: [4, 120] float" in shapes[_line_of(text, "self.fc1(x)")]
    assert "x: [4, 400] float" in shapes[_line_of(text, "torch.flatten(x, 1)")]
    assert shapes[_line_of(text, "images = torch.randn")] == "images: [4, 3, 32, 32] float"
    # the forward entry with an unknown input shows symbolic dims
    assert "x: [N, 120]" in shapes[_line_of(text, "self.fc1(x)")]


def test_syntax_error_gives_nothing():
    assert _core.show_shapes("def f(:\n", "bad.py") == []


def test_cli_show_shapes():
    p = subprocess.run(
        [sys.executable, "-m", "shape_lint.cli", "check", "--show-shapes", str(LENET)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    assert "images: [4, 3, 32, 32] float" in p.stdout
