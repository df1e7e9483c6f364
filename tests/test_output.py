"""Renderers of ``shape-lint check``: concise, full, json, json-lines, github, sarif, statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shape_lint import _core, output
from shape_lint.output import Diagnostic

RULES = [
    {
        "code": "SHP101",
        "name": "matmul-shape-mismatch",
        "summary": "{op}: input {lhs} does not fit {rhs}",
        "doc": "## What it does\nChecks matmul.\n",
        "default_enabled": True,
        "status": "stable",
    },
    {
        "code": "SHP901",
        "name": "may-fail",
        "summary": "may fail",
        "doc": "## What it does\nMay fail.\n",
        "default_enabled": False,
        "status": "preview",
    },
]

RUFF_JSON_FIELDS = {
    "cell",
    "code",
    "end_location",
    "filename",
    "fix",
    "location",
    "message",
    "noqa_row",
    "url",
}

SOURCE = ["import torch", "", "def f(x):", "    y = self.fc2(x)", "\treturn y"]


def diag(**kw) -> Diagnostic:
    base = dict(
        filename="pkg/model.py",
        code="SHP101",
        name="matmul-shape-mismatch",
        message="Linear: input [B, 120] does not fit Linear(in_features=80)",
        row=4,
        col=9,
        end_row=4,
        end_col=20,
        trace=["fc1 (line 2) makes 120"],
        condition=None,
        noqa_row=4,
        abspath="/proj/pkg/model.py",
        source_lines=SOURCE,
    )
    base.update(kw)
    return Diagnostic(**base)


def test_concise_one_line_per_finding_and_summary():
    text = output.render("concise", [diag(), diag(row=1, col=1, code="SHP901", name="may-fail")])
    lines = text.splitlines()
    assert lines == [
        "pkg/model.py:1:1: SHP901 Linear: input [B, 120] does not fit Linear(in_features=80)",
        "pkg/model.py:4:9: SHP101 Linear: input [B, 120] does not fit Linear(in_features=80)",
        "Found 2 errors.",
    ]


def test_concise_no_findings():
    assert output.render("concise", []) == "All checks passed!\n"
    assert output.render("concise", [diag()]).endswith("Found 1 error.\n")


def test_sorted_by_file_row_col():
    ds = [diag(filename="b.py"), diag(filename="a.py", row=9), diag(filename="a.py", row=2, col=5),
          diag(filename="a.py", row=2, col=1)]
    lines = output.render("concise", ds).splitlines()[:-1]
    assert [ln.split(": ")[0] for ln in lines] == ["a.py:2:1", "a.py:2:5", "a.py:9:9", "b.py:4:9"]


def test_full_caret_under_range_and_notes():
    text = output.render("full", [diag(condition="x.size(0) == 1")])
    lines = text.splitlines()
    assert lines[0] == "SHP101 Linear: input [B, 120] does not fit Linear(in_features=80)"
    assert lines[1] == " --> pkg/model.py:4:9"
    assert lines[2] == "  |"
    assert lines[3] == "4 |     y = self.fc2(x)"
    caret_line = lines[4]
    # The caret spans code points 9..19 (end_col is exclusive) of the source line.
    assert caret_line == "  |         " + "^" * 11
    assert lines[3].index("s") == caret_line.index("^")
    assert "  = note: fails when x.size(0) == 1" in lines
    assert "  = note: fc1 (line 2) makes 120" in lines
    assert lines[-1] == "Found 1 error."


def test_full_expands_tabs_before_the_caret():
    text = output.render("full", [diag(row=5, col=2, end_row=5, end_col=8, trace=[])])
    src, caret = [ln for ln in text.splitlines() if ln.startswith(("5 |", "  | "))][:2]
    assert src == "5 |     return y"
    assert caret.index("^") == src.index("r")
    assert caret.count("^") == 6


def test_full_multiline_range_and_missing_source():
    text = output.render("full", [diag(row=3, col=1, end_row=4, end_col=20)])
    assert "3 | def f(x):" in text and "4 |     y = self.fc2(x)" in text
    text = output.render("full", [diag(source_lines=None)])
    assert "-->" in text and " | " not in text


def test_full_wide_line_numbers_align():
    src = ["x"] * 120
    text = output.render("full", [diag(row=100, col=1, end_row=100, end_col=2, source_lines=src, trace=[])])
    lines = text.splitlines()
    assert lines[1] == "   --> pkg/model.py:100:1"
    assert lines[3] == "100 | x"
    assert lines[4] == "    | ^"


def test_json_has_exactly_ruffs_fields():
    data = json.loads(output.render("json", [diag(noqa_row=6)]))
    assert isinstance(data, list) and len(data) == 1
    rec = data[0]
    assert set(rec) == RUFF_JSON_FIELDS
    assert rec["cell"] is None and rec["fix"] is None
    assert rec["code"] == "SHP101"
    assert rec["location"] == {"row": 4, "column": 9}
    assert rec["end_location"] == {"row": 4, "column": 20}
    assert rec["filename"] == "/proj/pkg/model.py"
    assert rec["noqa_row"] == 6
    assert rec["message"].startswith("Linear: input")
    assert rec["url"] == output.rule_url("SHP101")  # the rule's page (test_rule_docs.py), or none


def test_json_empty_and_stdin_filename():
    assert json.loads(output.render("json", [])) == []
    rec = json.loads(output.render("json", [diag(abspath=None, filename="-")]))[0]
    assert rec["filename"] == "-"


def test_json_lines():
    text = output.render("json-lines", [diag(), diag(row=1)])
    recs = [json.loads(line) for line in text.splitlines()]
    assert [r["location"]["row"] for r in recs] == [1, 4]
    assert all(set(r) == RUFF_JSON_FIELDS for r in recs)
    assert output.render("json-lines", []) == ""


def test_github_annotation():
    text = output.render("github", [diag()])
    assert text == (
        "::error title=shape-lint (SHP101),file=pkg/model.py,line=4,col=9,endLine=4,endColumn=20"
        "::SHP101 Linear: input [B, 120] does not fit Linear(in_features=80)\n"
    )


def test_github_escapes_properties_and_data():
    text = output.render("github", [diag(filename="a,b:c.py", message="50% done\nnext")])
    assert "file=a%2Cb%3Ac.py," in text
    assert text.endswith("::SHP101 50%25 done%0Anext\n")
    assert text.count("\n") == 1


def test_sarif_structure(tmp_path: Path):
    inside = diag(abspath=str(tmp_path / "pkg" / "model.py"))
    outside = diag(abspath="/elsewhere/x.py", filename="/elsewhere/x.py", code="SHP901",
                   name="may-fail", row=2)
    doc = json.loads(output.render("sarif", [inside, outside], rules=RULES, version="1.2.3",
                                   cwd=tmp_path))
    assert doc["version"] == "2.1.0"
    assert "sarif-2.1.0" in doc["$schema"]
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "shape-lint"
    assert driver["version"] == "1.2.3"
    assert driver.get("informationUri") == (f"{output.docs_base()}/README.md" if output.docs_base() else None)
    rules = {r["id"]: r for r in driver["rules"]}
    assert set(rules) == {"SHP101", "SHP901"}
    r101 = rules["SHP101"]
    assert r101["name"] == "matmul-shape-mismatch"
    assert r101["shortDescription"]["text"]
    assert r101["fullDescription"]["text"] == RULES[0]["doc"]
    assert r101["help"]["markdown"] == RULES[0]["doc"]
    results = run["results"]
    assert len(results) == 2
    for res in results:
        assert res["ruleId"] in rules
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note", "none")
        assert isinstance(res["message"]["text"], str)
        loc = res["locations"][0]["physicalLocation"]
        assert set(loc["region"]) == {"startLine", "startColumn", "endLine", "endColumn"}
        assert loc["artifactLocation"]["uri"]
    by_rule = {res["ruleId"]: res for res in results}
    art = by_rule["SHP101"]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    region = by_rule["SHP101"]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 4, "startColumn": 9, "endLine": 4, "endColumn": 20}
    assert by_rule["SHP101"]["level"] == "error"
    # Opt-in "may fail" rules are warnings.
    assert by_rule["SHP901"]["level"] == "warning"
    other = by_rule["SHP901"]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert other["uri"] == "file:///elsewhere/x.py"


def test_sarif_without_findings_is_valid():
    doc = json.loads(output.render("sarif", [], rules=RULES, version="0"))
    assert doc["runs"][0]["results"] == []
    assert doc["runs"][0]["tool"]["driver"]["rules"] == []


def test_statistics_like_ruff():
    ds = [diag(), diag(row=1), diag(code="SHP001", name="internal-error")] + [diag(row=i) for i in range(10)]
    text = output.render_statistics(ds)
    lines = text.splitlines()
    assert lines == ["12\tSHP101\t[ ] matmul-shape-mismatch", " 1\tSHP001\t[ ] internal-error"]
    assert output.render_statistics([]) == ""


def test_statistics_json():
    data = json.loads(output.render_statistics([diag(), diag()], "json"))
    assert data == [{"code": "SHP101", "name": "matmul-shape-mismatch", "count": 2, "fixable": False}]


@pytest.mark.parametrize("fmt", sorted(output.RENDERERS))
def test_every_format_renders_empty_and_nonempty(fmt):
    assert isinstance(output.render(fmt, [], rules=RULES, version="0"), str)
    text = output.render(fmt, [diag()], rules=RULES, version="0")
    assert "SHP101" in text


# A training loop that never zeroes its gradients: SHP301 runs (it raises nothing) and trains the
# wrong thing, so it is a warning, where a shape error that torch raises is an error.
LOOP = """import torch
import torch.nn as nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4)
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def test_levels_follow_the_rule_catalogue():
    rules = {r["code"]: r for r in _core.rules()}
    assert output.level(rules["SHP101"]) == "error"
    assert output.level(rules["SHP301"]) == "warning"  # runs, trains the wrong thing
    assert output.level(rules["SHP309"]) == "error"  # backward() without a graph raises
    assert output.level(rules["SHP002"]) == "note"
    assert output.level(rules["SHP001"]) == "error"
    assert output.level(rules["SHP901"]) == "warning"
    # every training-loop rule that raises nothing is a warning, every other default rule that
    # torch raises for is an error
    for code, r in rules.items():
        if r["default_enabled"] and code not in ("SHP001", "SHP002"):
            assert output.level(r) == ("error" if r["raises"] else "warning"), code


def test_a_training_loop_pattern_is_a_warning_in_sarif_and_github(tmp_path: Path):
    (tmp_path / "loop.py").write_text(LOOP)
    rules = [dict(r) for r in _core.rules()]
    diags = [
        diag(filename="loop.py", abspath=str(tmp_path / "loop.py"), **{k: f[k] for k in ("code", "name", "message", "row", "col", "end_row", "end_col")})
        for f in _core.check_source(LOOP, str(tmp_path / "loop.py"), {})
    ]
    assert [d.code for d in diags] == ["SHP301"]
    doc = json.loads(output.render("sarif", diags, rules=rules, version="0", cwd=tmp_path))
    (res,) = doc["runs"][0]["results"]
    assert res["level"] == "warning"
    assert doc["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == "warning"
    assert output.render("github", diags, rules=rules).startswith("::warning title=shape-lint (SHP301),file=loop.py,line=9,")
