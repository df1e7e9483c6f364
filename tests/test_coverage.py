"""``shape-lint coverage``: the Unknown-cause report, end to end through the real core."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from test_cli import shape_lint

from shape_lint import coverage

TRAIN = """\
import torch
import torch.nn as nn

words = "the cat sat".split()
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
for step in range(3):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
u = x.not_a_torch_method()
v = u + 1
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_text_report_names_the_origin_with_its_site(tmp_path):
    write(tmp_path / "train.py", TRAIN)
    r = shape_lint("coverage", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("shape-lint coverage: 1 file (0 cut by a budget, 0 failed)")
    lines = r.stdout.splitlines()
    (origin,) = [ln for ln in lines if "not_a_torch_method" in ln]
    # one site, one file, an Unknown value, first at line 13 column 5
    assert origin.split()[:3] == ["1", "1", "value"]
    assert origin.endswith("train.py:13:5")
    # `u + 1` is Unknown because `u` is: not an origin
    assert not any("operator +" in ln for ln in lines)
    assert any(ln.startswith("backward  1 backward() sites: graph known 100.0%, optimizers known 100.0%") for ln in lines)


def test_json_report_adds_up_the_files(tmp_path):
    write(tmp_path / "a.py", TRAIN)
    write(tmp_path / "pkg" / "b.py", "import torch\ny = torch.randn(2).not_a_torch_method()\n")
    r = shape_lint("coverage", "--output-format", "json", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["files"] == 2
    per_file = {Path(f["path"]).name: f for f in data["per_file"]}
    assert set(per_file) == {"a.py", "b.py"}
    assert data["totals"]["exprs"] == per_file["a.py"]["exprs"] + per_file["b.py"]["exprs"]
    (o,) = [o for o in data["origins"] if o["label"] == "call Tensor.not_a_torch_method()"]
    assert (o["count"], o["files"]) == (2, 2)
    assert 0 < data["shares"]["known_values"] < 1


def test_aggregate_counts_failures_and_cut_files_apart():
    ok = {"exprs": 10, "unknown": 5, "tensors": 0, "origins": [], "incomplete": True}
    agg = coverage.aggregate([("a.py", ok), ("b.py", {"error": "panic"})])
    assert agg["failed"] == ["b.py"] and agg["incomplete"] == ["a.py"]
    assert agg["shares"]["known_values"] == 0.5
    assert agg["shares"]["tensor_rank_known"] is None
    text = coverage.render_text(agg, 10)
    assert "1 cut by a budget, 1 failed" in text and "error: b.py: the analysis failed" in text


def test_a_missing_path_is_an_error(tmp_path):
    r = shape_lint("coverage", "nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "nope.py: No such file or directory" in r.stderr
