"""``shape-lint summary`` (issue 14): the static torchinfo-like table, against torch.

The oracle: for every clean fixture (no ``# error:`` marker) whose script makes a model call,
the model calls the core records (model, output shape, total parameters, and the leaf layers
called with their names, types, output shapes and parameter counts) equal what torch's forward
hooks record when the script runs (``summary_runner.py``). A record the core marks incomplete
(something it cannot tell: never a guess) is skipped but counted; the share of scripts that
agree exactly is printed (``-s``) and must not fall.
"""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shape_lint import cli, summary

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "summary_runner.py"
FIXTURES = sorted((HERE / "fixtures").glob("*/*.py"))

NET = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            self.fc1 = nn.Linear(8 * 16 * 16, 120)
            self.fc2 = nn.Linear(120, 10)

        def forward(self, x):
            x = self.features(x)
            x = torch.flatten(x, 1)
            return self.fc2(torch.relu(self.fc1(x)))


    net = Net()
    print(net(torch.randn(4, 3, 32, 32)).shape)
    """)


def comparable(calls):
    """The records as torch's hooks give them, each distinct one once, in first-call order."""
    out = []
    for c in calls:
        rec = {
            "model": c["model"], "output_shape": c["output_shape"], "total_params": c["total_params"],
            "layers": [{k: l[k] for k in ("name", "type", "output_shape", "params")} for l in c["layers"]],
        }
        if rec not in out:
            out.append(rec)
    return out


def test_summary_of_a_small_net():
    (c,) = summary.summarise(NET, "net.py")
    assert c["complete"], c["incomplete"]
    assert c["model"] == "Net" and c["output_shape"] == [4, 10]
    assert c["total_params"] == (8 * 3 * 9 + 8) + (2048 * 120 + 120) + (120 * 10 + 10)
    assert [(l["name"], l["type"], l["output_shape"], l["params"]) for l in c["layers"]] == [
        ("features.0", "Conv2d", [4, 8, 32, 32], 224),
        ("features.1", "ReLU", [4, 8, 32, 32], 0),
        ("features.2", "MaxPool2d", [4, 8, 16, 16], 0),
        ("fc1", "Linear", [4, 120], 245880),
        ("fc2", "Linear", [4, 10], 1210),
    ]


def test_summary_model_option_has_symbolic_inputs():
    (c,) = summary.summarise(NET, "net.py", "Net")
    assert c["model"] == "Net" and c["total_params"] == 247314
    first = c["layers"][0]
    assert (first["name"], first["type"], first["params"]) == ("features.0", "Conv2d", 224)
    # the input's sizes are unknown: symbolic dims are strings
    assert any(isinstance(d, str) for l in c["layers"] for d in (l["output_shape"] or []))
    # the input's rank is assumed both ways (batched or not): not one record torch would see
    assert not c["complete"]


def test_summary_cli_text_and_json(tmp_path, capsys):
    (tmp_path / "net.py").write_text(NET)
    assert cli.main(["summary", str(tmp_path / "net.py"), "--output-format", "json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["model"] == "Net" and rec["total_params"] == 247314
    assert cli.main(["summary", str(tmp_path / "net.py")]) == 0
    out = capsys.readouterr().out
    assert "Total params: 247,314" in out and re.search(r"\n  fc1 +Linear +\[4, 120\] +245,880\n", out)
    assert cli.main(["summary", str(tmp_path / "net.py"), "--model", "Nope"]) == 1


def hooks(path: Path, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    report = work / "report.json"
    try:
        subprocess.run([sys.executable, str(RUNNER), str(path), str(report)], cwd=work,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return {"ok": False, "calls": []}
    if not report.exists():
        return {"ok": False, "calls": []}
    return json.loads(report.read_text())


def clean_fixtures():
    return [p for p in FIXTURES if "# error:" not in p.read_text(encoding="utf-8")]


def test_summary_agrees_with_forward_hooks(tmp_path):
    """The acceptance oracle over the clean fixtures (the zoo's included)."""
    pytest.importorskip("torch")
    static = {}
    for p in clean_fixtures():
        calls = summary.summarise(p.read_text(encoding="utf-8"), str(p))
        if calls:
            static[p] = calls
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(static, pool.map(lambda p: hooks(p, tmp_path / p.parent.name / p.stem), static)))
    agree, incomplete, differ = [], [], []
    for p, calls in static.items():
        run = runs[p]
        if run.get("skip") or not run["ok"]:
            continue
        if not all(c["complete"] for c in calls) or any(
                isinstance(d, str) for c in calls for d in (c["output_shape"] or [])):
            incomplete.append(p.name)
            continue
        (agree if comparable(calls) == comparable(run["calls"]) else differ).append(p.name)
    total = len(agree) + len(incomplete) + len(differ)
    print(f"\nsummary vs forward hooks: {len(agree)}/{total} scripts agree exactly, "
          f"{len(incomplete)} incomplete (skipped), {len(differ)} differ: {differ}")
    assert total > 0
    assert differ == [], differ
    assert len(agree) >= 20
