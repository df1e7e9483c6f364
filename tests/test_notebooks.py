"""Jupyter notebooks: the CLI checks their code cells as one program and reports cell and line.

The notebook fixtures (``tests/fixtures/notebooks``) are a bug notebook and its clean ``_ok``
twin per fixture family, with the markers of ``fixtures/README.md`` in their cells. Under torch
(``oracle_runner.py`` runs the code cells as one program, IPython syntax doing nothing) each bug
notebook raises at its marked cell and line and each clean one runs; the CLI must report exactly
the markers, by cell and line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import oracle_reports
import pytest
from shape_lint import cli, notebook

HERE = Path(__file__).resolve().parent
NOTEBOOKS = sorted((HERE / "fixtures" / "notebooks").glob("*.ipynb"))
FAMILIES = ("linear", "conv", "seq", "shapeops", "constructs", "zoo", "device", "training")
MARKER = re.compile(r"#\s*(error|warning):\s*(SHP\d{3})\b")


def markers(path: Path, kind: str | None = None) -> set[tuple[int, int, str]]:
    """``{(cell, line, code)}`` of the markers in a notebook's code cells."""
    nb = notebook.parse(path.read_text(encoding="utf-8"))
    found = set()
    for number, lines in enumerate(nb.cells, 1):
        for row, line in enumerate(lines, 1):
            m = MARKER.search(line)
            if m and kind in (None, m.group(1)):
                found.add((number, row, m.group(2)))
    return found


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_notebook(path: Path, cells: list[str], kinds: list[str] | None = None, language: str = "python") -> Path:
    kinds = kinds or ["code"] * len(cells)
    doc = {
        "cells": [
            {"cell_type": k, "metadata": {}, "source": src.splitlines(keepends=True),
             **({"execution_count": None, "outputs": []} if k == "code" else {})}
            for k, src in zip(kinds, cells)
        ],
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def nb_id(path: Path) -> str:
    return path.stem


# ----- the fixture set ------------------------------------------------------------------------


def test_every_family_has_a_bug_notebook_and_its_clean_twin():
    bugs = [p for p in NOTEBOOKS if not p.stem.endswith("_ok")]
    problems = []
    for family in FAMILIES:
        if not any(p.stem.startswith(family + "_") for p in bugs):
            problems.append(f"no notebook of family {family}")
    for p in bugs:
        if len(markers(p)) != 1:
            problems.append(f"{p.name}: exactly one marker per bug notebook, got {sorted(markers(p))}")
        if not p.with_name(p.stem + "_ok.ipynb").exists():
            problems.append(f"{p.name}: no _ok twin")
    for p in NOTEBOOKS:
        if p.stem.endswith("_ok") and markers(p):
            problems.append(f"{p.name}: a clean twin with markers")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_cli_reports_the_markers_by_cell(path, capsys):
    code, out, err = run(capsys, "check", "--output-format", "json", str(path))
    got = {(d["cell"], d["location"]["row"], d["code"]) for d in json.loads(out)}
    assert got == markers(path), err
    assert code == (1 if got else 0)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    pytest.importorskip("torch")
    return oracle_reports.reports(NOTEBOOKS, tmp_path_factory.mktemp("notebook-oracle"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_notebook_behaves_under_torch_as_marked(path, reports):
    report = reports[path]
    if report.get("skip"):
        pytest.skip(f"{path.name}: {report['skip']}")
    errors = markers(path, "error")
    if not errors:
        assert report["ok"], f"{path.name} failed under torch: {report.get('error')}\n{report.get('output', '')[-1500:]}"
        return
    assert not report["ok"], f"{path.name} ran to completion, but {sorted(errors)} is marked"
    nb = notebook.parse(path.read_text(encoding="utf-8"))
    program = Path(report["program"]).resolve()
    in_program = [line for f, line in report["frames"] if Path(f).resolve() == program]
    assert in_program, f"{path.name} failed outside its cells: {report.get('error')}"
    cell, row = nb.locate(in_program[0])
    ((want_cell, want_row, _),) = errors
    assert (cell, row) == (want_cell, want_row), f"{path.name}: torch raised at cell {cell}, line {row}: {report.get('error')}"


# ----- the CLI --------------------------------------------------------------------------------

BUG = """import torch
import torch.nn as nn
fc1 = nn.Linear(120, 84)
fc2 = nn.Linear(80, 10)
"""
CALL = "x = torch.randn(64, 120)\ny = fc2(fc1(x))\n"


def test_concise_and_full_formats_name_the_cell(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nb.ipynb", ["# Title\n", "%matplotlib inline\n" + BUG, "!nvidia-smi\n" + CALL],
                   ["markdown", "code", "code"])
    code, out, _ = run(capsys, "check", "nb.ipynb")
    assert code == 1
    # markdown cells are not counted: the call is in the second code cell, on its third line
    assert out.startswith("nb.ipynb:cell 2:3:5: SHP101 fc2 (cell 1, line 5): input [64, 84]"), out
    code, out, _ = run(capsys, "check", "--output-format", "full", "nb.ipynb")
    assert " --> nb.ipynb:cell 2:3:5" in out
    assert "3 | y = fc2(fc1(x))" in out  # the cell's own line in the snippet
    assert "84 from out_features of fc1 (cell 1, line 4)" in out


def test_machine_formats_carry_the_cell(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nb.ipynb", [BUG, CALL])
    _, out, _ = run(capsys, "check", "--output-format", "sarif", "nb.ipynb")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["properties"] == {"cell": 2}
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    _, out, _ = run(capsys, "check", "--output-format", "github", "nb.ipynb")
    assert "line=2," in out and "::cell 2: SHP101" in out
    _, out, _ = run(capsys, "check", "--output-format", "json-lines", "nb.ipynb")
    assert json.loads(out)["cell"] == 2


def test_a_directory_run_picks_up_notebooks_and_skips_checkpoints(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nb.ipynb", [BUG, CALL])
    (tmp_path / ".ipynb_checkpoints").mkdir()
    write_notebook(tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb", [BUG, CALL])
    code, out, _ = run(capsys, "check", ".")
    assert code == 1
    assert out.splitlines()[0].startswith("nb.ipynb:cell 2:2:5: SHP101")
    assert "checkpoint" not in out


def test_noqa_in_a_cell(tmp_path, capsys):
    path = write_notebook(tmp_path / "nb.ipynb", [BUG, CALL.replace("fc1(x))\n", "fc1(x))  # noqa: SHP101\n")])
    assert run(capsys, "check", str(path))[:2] == (0, "All checks passed!\n")
    path = write_notebook(tmp_path / "nb.ipynb", [BUG, CALL.replace("fc1(x))\n", "fc1(x))  # noqa: SHP102\n")])
    assert run(capsys, "check", str(path))[0] == 1
    path = write_notebook(tmp_path / "nb.ipynb", ["# ruff: noqa: SHP101\n" + BUG, CALL])
    assert run(capsys, "check", str(path))[0] == 0
    path = write_notebook(tmp_path / "nb.ipynb", [BUG, CALL])
    assert run(capsys, "check", "--ignore-noqa", str(path))[0] == 1


def test_stdin_with_a_notebook_name(tmp_path, capsys, monkeypatch):
    path = write_notebook(tmp_path / "nb.ipynb", [BUG, CALL])
    monkeypatch.setattr(cli, "_read_stdin", lambda: path.read_bytes())
    code, out, _ = run(capsys, "check", "--stdin-filename", "pasted.ipynb", "-")
    assert code == 1 and out.startswith("pasted.ipynb:cell 2:2:5: SHP101")


def test_a_file_that_is_not_a_notebook_is_an_error(tmp_path, capsys):
    (tmp_path / "broken.ipynb").write_text("{\"cells\": [", encoding="utf-8")
    code, out, err = run(capsys, "check", str(tmp_path / "broken.ipynb"))
    assert code == 2 and "broken.ipynb: not a notebook (invalid JSON" in err
    assert "All checks passed" not in out


@pytest.mark.parametrize(
    "text",
    ['{"cells": [{"cell_type": "code", "source": [1, 2]}]}', '{"cells": [{"cell_type": "code", "source": null}]}',
     '{"cells": 3}', "[1, 2]", "[" * 100_000 + "]" * 100_000, "\x00\xff"],
)
def test_a_hostile_notebook_is_one_clear_error(tmp_path, capsys, text):
    (tmp_path / "bad.ipynb").write_text(text, encoding="utf-8", errors="surrogateescape")
    code, out, err = run(capsys, "check", str(tmp_path / "bad.ipynb"))
    assert code == 2 and "bad.ipynb: not a notebook" in err and "Traceback" not in err


def test_a_notebook_of_another_language_has_no_python(tmp_path, capsys):
    path = write_notebook(tmp_path / "r.ipynb", ["x <- c(1, 2)\n"], language="R")
    assert run(capsys, "check", str(path))[:2] == (0, "All checks passed!\n")


def test_nbformat_3_worksheets(tmp_path, capsys):
    doc = {"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": BUG.splitlines(keepends=True), "language": "python", "outputs": []},
        {"cell_type": "heading", "source": "x", "level": 1},
        {"cell_type": "code", "input": CALL, "language": "python", "outputs": []},
    ]}]}
    (tmp_path / "old.ipynb").write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = run(capsys, "check", str(tmp_path / "old.ipynb"))
    assert code == 1 and ":cell 2:2:5: SHP101" in out


def test_summary_show_shapes_and_coverage_read_the_cells(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = "import torch\nimport torch.nn as nn\nnet = nn.Sequential(nn.Linear(16, 120), nn.ReLU(), nn.Linear(120, 10))\n"
    write_notebook(tmp_path / "nb.ipynb", ["%load_ext autoreload\n" + model, "x = torch.randn(4, 16)\ny = net(x)\n"])
    code, out, _ = run(capsys, "summary", "nb.ipynb")
    assert code == 0 and "Sequential (cell 2, line 2)" in out and "Total params: 3,250" in out
    code, out, _ = run(capsys, "summary", "--output-format", "json", "nb.ipynb")
    ((call,),) = [json.loads(out)]
    assert (call["cell"], call["line"], call["output_shape"]) == (2, 2, [4, 10])
    code, out, _ = run(capsys, "check", "--show-shapes", "nb.ipynb")
    assert "nb.ipynb:cell 2:1: x: [4, 16]" in out.splitlines()[0]
    write_notebook(tmp_path / "nb.ipynb", ["import torch\nx = torch.randn(4, undefined_size)\n"])
    code, out, _ = run(capsys, "coverage", "nb.ipynb")
    assert code == 0 and "nb.ipynb:cell 1:2:" in out


# ----- flake8 through nbQA -------------------------------------------------------------------


def test_flake8_users_check_notebooks_through_nbqa():
    """flake8 reads no notebook; ``nbqa flake8`` (the README's way) runs the plugin on the code
    cells and reports the same cells and lines."""
    pytest.importorskip("nbqa", reason="nbQA is not installed (pip install '.[test]')")
    proc = subprocess.run(
        [sys.executable, "-m", "nbqa", "flake8", "--select=SHP", *map(str, NOTEBOOKS)],
        capture_output=True, text=True, cwd=HERE.parent, timeout=600,
    )
    got = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"(.+\.ipynb):cell_(\d+):(\d+):\d+: (SHP\d{3}) ", line)
        assert m, proc.stdout + proc.stderr
        got.add((Path(m.group(1)).name, int(m.group(2)), int(m.group(3)), m.group(4)))
    want = {(p.name, *mark) for p in NOTEBOOKS for mark in markers(p)}
    assert got == want, proc.stdout + proc.stderr
    assert proc.returncode == 1


# ----- IPython syntax -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "program"),
    [
        # line magics, shell lines and help, at any indentation: a call the analyser does not see into
        ("%matplotlib inline\nimport torch", "get_ipython()\nimport torch"),
        ("!pip install torch\nx = 1", "get_ipython()\nx = 1"),
        ("if True:\n    !ls\n    %time f()", "if True:\n    get_ipython()\n    get_ipython()"),
        ("model?\nnp.zeros??\n?torch.cat", "get_ipython()\nget_ipython()\nget_ipython()"),
        # assigned from a magic: an unknown value
        ("files = !ls\na, b = %sx echo 1 2", "files = get_ipython()\na, b = get_ipython()"),
        # a magic continued on the next line
        ("!pip install \\\n   torch\nx = 1", "get_ipython()\n\nx = 1"),
        # a cell magic with a Python body keeps the body; another leaves the cell out
        ("%%time\nx = f()\nx?", "\nx = f()\nget_ipython()"),
        ("%%bash\nls (\necho hi", "\n\n"),
        ("%%writefile m.py\nimport os", "\n"),
        # Python that looks like IPython is left alone: an operator continuing an expression,
        # a string, a comment, a `?` inside a string
        ("x = (a\n     % b)\ny = [\n!c]", "x = (a\n     % b)\ny = [\n!c]"),
        ('s = """\n%d items\n!done\n"""', 's = """\n%d items\n!done\n"""'),
        ("# what?\nprint('why?')", "# what?\nprint('why?')"),
        ("x = 1 \\\n  % 2", "x = 1 \\\n  % 2"),
    ],
)
def test_ipython_syntax_is_rewritten_on_its_own_line(cell, program):
    assert "\n".join(notebook.python_lines(cell.split("\n"))) == program


def test_cells_are_numbered_among_code_cells_and_lines_map_back(tmp_path):
    path = write_notebook(tmp_path / "nb.ipynb", ["# md\n", "a = 1\nb = 2", "", "c = 3\n"], ["markdown", "code", "code", "code"])
    nb = notebook.parse(path.read_text())
    assert nb.source == "a = 1\nb = 2\n\nc = 3\n"
    assert [nb.locate(r) for r in range(1, 5)] == [(1, 1), (1, 2), (2, 1), (3, 1)]
    assert notebook.relabel("from fc1 (line 4), at line 2", nb) == "from fc1 (cell 3, line 1), at cell 1, line 2"
