"""The quick form of ``bench/project.py`` (the full one, about 1000 files, runs outside CI)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "project.py"


def test_a_generated_project_reports_its_two_cross_file_bugs_cold_and_warm():
    pytest.importorskip("flake8")
    import shape_lint

    # the shape_lint this test imports (installed, or the dev tree's), for the flake8 runs too
    here = str(Path(shape_lint.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(BENCH), "--files", "60"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "found, the same cold and warm" in p.stdout
    assert "warm / cold: " in p.stdout
