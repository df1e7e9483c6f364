"""Source encodings end to end (issue 29): every source is decoded as Python decodes it (a UTF-8
BOM, a PEP 263 coding line on line 1 or 2, else UTF-8) by the CLI, by flake8 and by the core
for the project's other files; a file that cannot be decoded is an error (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """\
import torch
import torch.nn as nn

# caf\u00e9: a comment in the file's own encoding
LABEL = "r\u00e9seau"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(120, 84)
        self.fc2 = nn.Linear(80, 10)

    def forward(self, x):
        return self.fc2(self.fc1(x))


net = Net()
y = net(torch.randn(4, 120))
"""

LATIN1 = b"# -*- coding: latin-1 -*-\n" + PROGRAM.encode("latin-1")
BOM = b"\xef\xbb\xbf" + PROGRAM.replace("\n", "\r\n").encode("utf-8")
# the finding: fc2's call in forward, on this line of PROGRAM
ROW = PROGRAM.splitlines().index("        return self.fc2(self.fc1(x))") + 1


def shape_lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("shape-lint")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def shp_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if ": SHP" in line]


@pytest.mark.parametrize(("data", "row"), [(LATIN1, ROW + 1), (BOM, ROW)], ids=["latin-1", "bom"])
def test_cli_and_flake8_report_the_same_finding(tmp_path, data, row):
    (tmp_path / "net.py").write_bytes(data)
    cli = shape_lint("check", "--no-cache", "net.py", cwd=tmp_path)
    assert cli.returncode == 1, (cli.stdout, cli.stderr)
    assert cli.stderr == ""
    (finding,) = shp_lines(cli.stdout)
    assert finding.startswith(f"net.py:{row}:16: SHP101 fc2 ") and "[4, 84]" in finding
    f8 = flake8("--select=SHP", "--jobs=1", "net.py", cwd=tmp_path)
    assert f8.returncode == 1, (f8.stdout, f8.stderr)
    assert shp_lines(f8.stdout) == [finding]


def test_undecodable_file_is_exit_2_naming_the_file(tmp_path):
    # latin-1 bytes without a coding line: not UTF-8, so not Python source
    (tmp_path / "net.py").write_bytes(PROGRAM.encode("latin-1"))
    r = shape_lint("check", "--no-cache", "net.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert "All checks passed" not in r.stdout
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: net.py: cannot decode as utf-8: line 4: byte 0xe9")


LAYERS = PROGRAM.split("\n\nnet = Net()")[0] + "\n"
SCRIPT = "import torch\nfrom layers import Net\n\n# caf\u00e9\nnet = Net()\ny = net(torch.randn(4, 120))\n"


@pytest.mark.parametrize(
    "script",
    [
        b"# -*- coding: latin-1 -*-\n" + SCRIPT.encode("latin-1"),
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n" + SCRIPT.encode("cp1252"),
        b"\xef\xbb\xbf" + SCRIPT.encode("utf-8"),
    ],
    ids=["latin-1", "cp1252-on-line-2", "bom"],
)
def test_the_core_decodes_the_projects_other_files(tmp_path, script):
    """The core reads the scripts that import the checked file itself: they are decoded as
    Python would, so their call `net(torch.randn(4, 120))` is the entry that fixes the batch."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "layers.py").write_text(LAYERS, encoding="utf-8")
    (tmp_path / "train.py").write_bytes(script)
    r = shape_lint("check", "--no-cache", "layers.py", cwd=tmp_path)
    (finding,) = shp_lines(r.stdout)
    assert "input [4, 84]" in finding, r.stdout


def test_an_importer_the_core_cannot_decode_is_not_run(tmp_path):
    """An encoding the core does not decode (or bytes invalid in theirs): that file is not
    loaded, as an unreadable one; the checked file is still analysed on its own."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "layers.py").write_text(LAYERS, encoding="utf-8")
    (tmp_path / "train.py").write_bytes(b"# coding: shift_jis\n" + SCRIPT.replace("\u00e9", "\u65e5").encode("shift_jis"))
    r = shape_lint("check", "--no-cache", "layers.py", cwd=tmp_path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    (finding,) = shp_lines(r.stdout)
    assert "input [*, 84]" in finding, r.stdout
