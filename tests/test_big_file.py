"""The quick form of ``bench/big_file.py`` (the full one goes to 20,000 lines, outside CI).

A file of many small models built and called in turn at its top level must cost about linearly
in its length: before the heap and the scopes were persistent, every state kept aside (a call
summary, the state at a module's first call) made the next global assignment copy the whole
heap and module scope, and 20,000 lines took 1.3 GB. Only counted quantities are compared
(interpreter steps, peak RSS), with generous margins; never times.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "big_file.py"


def test_a_long_file_of_small_models_reports_its_last_line_at_a_linear_cost():
    import shape_lint

    here = str(Path(shape_lint.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(BENCH), "--sizes", "2000", "8000", "--runs", "1", "--json"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    small, big = (json.loads(line) for line in p.stdout.splitlines())
    assert 3.5 < big["lines"] / small["lines"] < 4.5
    for row in (small, big):
        # the bug on the last line, nothing before it, with big budgets and with the defaults
        assert row["found"] and not row["extra_findings"], row
        assert row["default_found"], row
        assert row["abandoned"] == 0, row
    # steps: the same work per unit (exactly linear but for the file's fixed part)
    assert big["steps_growth"] < 1.1, big
    # memory of the analysis itself (peak RSS less the interpreter's): near-linear. It was 1.9
    # from 2,000 to 5,000 lines, 3.5 to 10,000, before the persistent heap and scopes.
    assert big["mem_net_growth"] < 1.5, big
