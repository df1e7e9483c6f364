"""``shape-lint server`` with Neovim as the client (headless, ``tests/nvim/quickfix.lua``): it
opens a buggy file, reads the diagnostic, applies a code action and sees the diagnostic clear.

Neovim is the Debian package ``neovim`` (0.7 in bookworm: its built-in client,
``vim.lsp.start_client``). ``.ci/run`` installs it when apt is available; without ``nvim`` on
the PATH these tests skip and say so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_buffers import BUGGY, CALL, FC2

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim)")
SCRIPT = Path(__file__).parent / "nvim" / "quickfix.lua"


def run_nvim(tmp_path: Path, text: str, action: str) -> dict:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "net.py"
    path.write_text(text)
    out = tmp_path / "out.json"
    env = {
        "SHAPE_LINT_CMD": json.dumps([sys.executable, "-m", "shape_lint.cli", "server"]),
        "SHAPE_LINT_FILE": str(path),
        "SHAPE_LINT_OUT": str(out),
        "SHAPE_LINT_ACTION": action,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(
        [str(NVIM), "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    return json.loads(out.read_text())


def test_nvim_reads_the_diagnostic_adds_noqa_and_sees_it_clear(tmp_path: Path) -> None:
    got = run_nvim(tmp_path, BUGGY, "noqa")
    assert "error" not in got, got
    assert got["diagnostic"]["code"] == "SHP101"
    assert got["diagnostic"]["lnum"] == CALL and got["diagnostic"]["source"] == "shape-lint"
    assert "120 != 80" in got["diagnostic"]["message"]
    assert got["applied"] == "Add `# noqa: SHP101`"
    assert got["cleared"] is True
    assert got["lines"][CALL] == "        return self.fc2(h)  # noqa: SHP101"


def test_nvim_applies_the_quick_fix_and_sees_the_diagnostic_clear(tmp_path: Path) -> None:
    got = run_nvim(tmp_path, BUGGY, "preferred")
    assert "error" not in got, got
    assert got["applied"] == "use nn.Linear(120, 84)"
    assert got["cleared"] is True
    assert got["lines"][FC2] == "        self.fc2 = nn.Linear(120, 84)"


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_snippet() -> str:
    """The README's Neovim configuration, exactly as a user copies it."""
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- nvim-snippet:start -->", 1)[1].split("<!-- nvim-snippet:end -->", 1)[0]
    return block.strip().removeprefix("```lua").removesuffix("```").strip() + "\n"


def test_the_readme_snippet_attaches_the_server(tmp_path: Path) -> None:
    """Debian's Neovim (0.7) with the README's snippet in its configuration: opening a Python
    file of a project starts `shape-lint server` from the PATH and shows its diagnostic."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "proj" / "net.py"
    path.write_text(BUGGY)
    snippet = tmp_path / "init.lua"
    snippet.write_text(readme_snippet())
    out = tmp_path / "out.json"
    env = {
        "SHAPE_LINT_SNIPPET": str(snippet),
        "SHAPE_LINT_FILE": str(path),
        "SHAPE_LINT_OUT": str(out),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        # `shape-lint` as the user has it: the environment's scripts
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    }
    proc = subprocess.run(
        [str(NVIM), "--headless", "--clean", "-n", "-c", f"luafile {Path(__file__).parent / 'nvim' / 'readme_snippet.lua'}"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    got = json.loads(out.read_text())
    assert "error" not in got, got
    assert got["clients"] == ["shape-lint"]
    ((d,),) = [got["diagnostics"]]
    assert d["lnum"] == CALL and d["source"] == "shape-lint" and "120 != 80" in d["message"]
