"""SHP902 may-fail-for-some-values on `tests/fixtures/may_fail/`: the analyzer against the
markers, and the counterexample it reports against torch.

A bug fixture marks its line `# may-fail: SHP902`; its `_ok` twin has a guard and no marker.
- Default selection: the core reports nothing on any of them (`test_fixtures.py` checks that
  too, as for every fixture), and neither does the bridge without `may_fail`.
- With `may_fail`: exactly one SHP902 on the marked line of a bug fixture, none on a twin.
- The oracle applies the reported counterexample and sees torch raise with the innermost
  frame of the fixture on the marked line; with the defaults the program runs. Options
  (`--size`) become command-line arguments; constructor parameters go through the fixture's
  `# harness:` expression (see `tests/fixtures/README.md`), with its `# defaults:` for the run
  that must work.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from shape_lint import _core, may_fail, solver

DIR = Path(__file__).parent / "fixtures" / "may_fail"
FIXTURES = sorted(DIR.glob("*.py"))
MARK = re.compile(r"#\s*may-fail:\s*(SHP9\d\d)\b")
HARNESS = re.compile(r"^#\s*harness:\s*(.+)$", re.M)
DEFAULTS = re.compile(r"^#\s*defaults:\s*(.+)$", re.M)
DATA = re.compile(r"^#\s*data:\s*(.+)$", re.M)
#: Runs a fixture script as __main__ with torchvision importable (`torchvision_compat.py`).
RUNNER = (
    "import runpy, sys; sys.path.insert(0, %r); import torchvision_compat; torchvision_compat.load(); "
    "p = sys.argv[1]; sys.argv = sys.argv[1:]; runpy.run_path(p, run_name='__main__')" % str(Path(__file__).parent)
)
LEN = "len(dataset)"


def marked(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text().splitlines()
    return [(i, m.group(1)) for i, line in enumerate(lines, 1) if (m := MARK.search(line))]


def may_fail_findings(path: Path) -> list[dict]:
    src = path.read_text()
    return [f for f in solver.check_source(src, str(path), {"may_fail": True, "cache": False}) if f["code"].startswith("SHP9")]


BUGS = [p for p in FIXTURES if marked(p)]


def test_enough_fixtures_with_twins():
    assert len(BUGS) >= 10
    for p in BUGS:
        twin = p.with_name(p.stem + "_ok.py")
        assert twin.exists(), f"{p.name} has no guarded twin"
        assert not marked(twin)
        assert len(marked(p)) == 1, f"{p.name}: one marker per bug fixture"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_default_selection_reports_nothing(path):
    src = path.read_text()
    assert _core.check_source(src, str(path), None) == []
    assert solver.check_source(src, str(path), {"cache": False}) == []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_may_fail_reports_the_marked_line(path):
    got = [(f["row"], f["code"]) for f in may_fail_findings(path)]
    assert got == marked(path)
    for f in may_fail_findings(path):
        assert f["counterexample"] and "(fails when " in f["message"]


def innermost_line(tb, path: Path) -> int | None:
    frames = [f for f in traceback.extract_tb(tb) if Path(f.filename).resolve() == path.resolve()]
    return frames[-1].lineno if frames else None


def run_script(path: Path, values: dict[str, int], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The fixture as a script with the options among ``values`` as arguments; with a dataset
    length among them, in ``cwd`` after the fixture's ``# data:`` statement made that many
    samples there."""
    if cwd is not None:
        cwd.mkdir(parents=True, exist_ok=True)
    if LEN in values:
        assert cwd is not None
        expr = DATA.search(path.read_text())
        assert expr, f"{path.name}: a dataset length needs a `# data:` line"
        if "torchvision" in path.read_text():
            sys.path.insert(0, str(Path(__file__).parent))
            import torchvision_compat

            if torchvision_compat.load() is None:
                pytest.skip(torchvision_compat.REASON)
        with contextlib.chdir(cwd):
            ns = runpy.run_path(str(path), run_name="may_fail_fixture")
            exec(expr.group(1), {**ns, "n": values[LEN]}, {})  # noqa: S102 - our own fixture's data
    argv = [f"{k}={v}" for k, v in values.items() if k.startswith("-")]
    return subprocess.run([sys.executable, "-c", RUNNER, str(path.resolve()), *argv], capture_output=True, text=True, timeout=300, cwd=cwd)


def script_failure_line(proc: subprocess.CompletedProcess, path: Path) -> int | None:
    rows = [int(m.group(2)) for m in re.finditer(r'File "([^"]+)", line (\d+)', proc.stderr) if Path(m.group(1)).resolve() == path.resolve()]
    return rows[-1] if rows else None


def run_harness(path: Path, values: dict[str, int]) -> BaseException | None:
    text = path.read_text()
    expr = HARNESS.search(text)
    assert expr, f"{path.name}: constructor parameters need a `# harness:` line"
    ns = runpy.run_path(str(path), run_name="may_fail_fixture")
    try:
        eval(expr.group(1), {**ns, **values})  # noqa: S307 - our own fixture's harness
    except Exception as e:  # noqa: BLE001 - any exception torch raises
        return e
    return None


def defaults_of(path: Path) -> dict[str, int]:
    m = DEFAULTS.search(path.read_text())
    return {k.strip(): int(v) for k, v in (kv.split("=") for kv in m.group(1).split(","))} if m else {}


@pytest.mark.parametrize("path", BUGS, ids=lambda p: p.stem)
def test_counterexample_raises_at_the_line_under_torch(path, tmp_path):
    pytest.importorskip("torch")
    [(row, _)] = marked(path)
    [f] = may_fail_findings(path)
    values = f["counterexample"]
    if all(k.startswith("-") or k == LEN for k in values):
        proc = run_script(path, values, tmp_path / "counterexample")
        assert proc.returncode != 0, f"{path.name} {values} ran: {proc.stdout}"
        assert script_failure_line(proc, path) == row, proc.stderr[-2000:]
        proc = run_script(path, defaults_of(path), tmp_path / "defaults")
        assert proc.returncode == 0, proc.stderr[-2000:]
    else:
        err = run_harness(path, values)
        assert err is not None, f"{path.name} {values} ran"
        assert innermost_line(err.__traceback__, path) == row, "".join(traceback.format_exception(err))
        assert run_harness(path, defaults_of(path)) is None


@pytest.mark.parametrize("path", [p for p in FIXTURES if not marked(p) and HARNESS.search(p.read_text())], ids=lambda p: p.stem)
def test_guarded_twin_runs_with_its_defaults(path):
    pytest.importorskip("torch")
    assert run_harness(path, defaults_of(path)) is None


@pytest.mark.parametrize("path", [p for p in FIXTURES if not marked(p) and DATA.search(p.read_text())], ids=lambda p: p.stem)
def test_guarded_twin_runs_with_its_data(path, tmp_path):
    pytest.importorskip("torch")
    proc = run_script(path, defaults_of(path), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # and with a length the bug fixture fails for
    proc = run_script(path, {LEN: 100}, tmp_path / "odd")
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_unknown_is_silence(monkeypatch):
    monkeypatch.setattr(solver, "_solve", lambda script, **kw: {"answer": "unknown"})
    assert may_fail_findings(DIR / "head_split_option.py") == []


def test_spent_budget_is_silence():
    src = (DIR / "conv_stack_size.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"may_fail": True, "free_params": True})
    assert cands and may_fail.find(cands, set()) != []
    assert may_fail.find(cands, set(), budget_ms=0) == []
    # the deterministic budget: a number of queries, whatever the machine's load
    assert may_fail.find(cands, set(), max_queries=0) == []


def test_a_file_makes_at_most_its_query_budget(monkeypatch):
    calls = []
    real = solver._solve

    def counting(script, **kw):
        calls.append(script)
        return real(script, **kw)

    monkeypatch.setattr(solver, "_solve", counting)
    src = (DIR / "conv_stack_size.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"may_fail": True, "free_params": True})
    assert may_fail.find(cands, set()) != []
    used = len(calls)
    assert 0 < used <= may_fail.FILE_MAX_QUERIES
    calls.clear()
    may_fail.find(cands, set(), max_queries=used - 1)
    assert len(calls) == used - 1


def test_a_reported_site_is_not_reported_again():
    src = (DIR / "conv_stack_size.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"may_fail": True, "free_params": True})
    [f] = may_fail.find(cands, set())
    assert may_fail.find(cands, {(f["row"], f["col"])}) == []


def test_free_params_are_named_in_the_users_terms():
    src = (DIR / "head_split_ctor.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"free_params": True})
    names = {(p["name"], p["kind"]) for u in cands for p in u["params"]}
    assert ("heads", "ctor") in names
    src = (DIR / "conv_stack_size.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"free_params": True})
    assert {(p["name"], p["kind"], p["default"]) for u in cands for p in u["params"]} == {("--size", "option", 64)}
    # without free_params the option keeps its default: nothing to export
    assert _core.check_source_undecided(src, "m.py", {"may_fail": True})[1] == []


def test_the_message_gives_the_shapes_at_the_counterexample():
    # the core's own finding when the program runs with those values: concrete shapes, no
    # symbols of the free parameters (the symbolic run would say `(--size - 3) // 2 ...`)
    [f] = may_fail_findings(DIR / "conv_stack_size.py")
    # (with where the 2 came from: the layer before, at the counterexample's size)
    assert f["message"] == "net[6] (line 19): Conv2d: input size 2x2 gives output size 0x0, which is too small (0 < 1) (2 from net[4] (line 17) at line 22) (fails when --size=30)"
    [f] = may_fail_findings(DIR / "grouped_conv_option.py")
    assert f["message"].startswith("Conv2d: in_channels=64 must be divisible by groups=9 ")
    [f] = may_fail_findings(DIR / "last_batch_state.py")
    assert "expected shape [1, 31, 16], got [1, 51, 16]" in f["message"]


def test_a_counterexample_the_concrete_run_does_not_confirm_is_silence():
    src = (DIR / "conv_stack_size.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"may_fail": True, "free_params": True})
    seen: list[dict[str, int]] = []

    def runs_fine(values: dict[str, int]) -> list[dict]:
        seen.append(values)
        return []

    assert may_fail.find(cands, set(), concrete=runs_fine) == []
    assert seen and seen[0] == {"--size": 30}
    # a finding on another line is no confirmation either
    assert may_fail.find(cands, set(), concrete=lambda v: [{"row": 1, "code": "SHP101", "message": "m"}]) == []


def test_the_concrete_run_binds_the_values():
    src = (DIR / "conv_stack_size.py").read_text()
    assert _core.check_source(src, "m.py", None) == []
    assert [(f["row"], f["code"]) for f in _core.check_source(src, "m.py", {"param_values": {"--size": 30}})] == [(22, "SHP109")]
    # a value outside an option's choices is no legal value: the default stands
    src = (DIR / "pooled_flatten_choices.py").read_text()
    assert _core.check_source(src, "m.py", {"param_values": {"--size": 40}}) == []
    assert [g["row"] for g in _core.check_source(src, "m.py", {"param_values": {"--size": 48}})] == [14]


def test_constructor_defaults_are_free_unless_the_call_passes_them():
    src = (DIR / "ctor_default_heads.py").read_text()
    _, cands = _core.check_source_undecided(src, "m.py", {"free_params": True})
    names = {(p["name"], p["kind"], p["default"]) for u in cands for p in u["params"]}
    assert {("dim", "ctor", 72), ("heads", "ctor", 8)} <= names
    # an argument pins its parameter: `Encoder(dim=72)` leaves only heads free
    pinned = src.replace("model = Encoder()\n", "model = Encoder(dim=72)\n")
    assert pinned != src
    _, cands = _core.check_source_undecided(pinned, "m.py", {"free_params": True})
    assert "dim" not in {p["name"] for u in cands for p in u["params"]}
    assert "heads" in {p["name"] for u in cands for p in u["params"]}
    # ... and one default alone against the program's own values is no candidate (the script's
    # data meets `n_features=12` the same way: that is no bug of the class)
    assert not any(may_fail.is_candidate(u) for u in cands if u["row"] == marked(DIR / "ctor_default_heads.py")[0][0] and len(u["params"]) == 1)
    assert [f for f in solver.check_source(pinned, "m.py", {"may_fail": True, "cache": False}) if f["code"] == "SHP902"] == []
    both = src.replace("model = Encoder()\n", "model = Encoder(72, 8)\n")
    _, cands = _core.check_source_undecided(both, "m.py", {"free_params": True})
    assert not {"dim", "heads"} & {p["name"] for u in cands for p in u["params"]}
    # a block another class builds keeps its defaults (only the outermost construction frees them)
    nested = src.replace("    model = Encoder()\n", "    model = Wrapper()\n").replace(
        "model.dim", "72"
    ).replace(
        'if __name__ == "__main__":',
        "class Wrapper(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.enc = Encoder()\n\n"
        "    def forward(self, x):\n        return self.enc(x)\n\n\n"
        'if __name__ == "__main__":',
    )
    _, cands = _core.check_source_undecided(nested, "m.py", {"free_params": True})
    assert not {"dim", "heads"} & {p["name"] for u in cands for p in u["params"] if p["kind"] == "ctor"}


def test_a_folder_datasets_length_is_free_and_the_concrete_run_binds_it():
    path = DIR / "last_batch_folder.py"
    src = path.read_text()
    [(row, _)] = marked(path)
    _, cands = _core.check_source_undecided(src, "m.py", {"free_params": True})
    assert (LEN, "data") in {(p["name"], p["kind"]) for u in cands for p in u["params"]}
    # the default run does not model the last batch of a dataset of unknown length
    assert _core.check_source(src, "m.py", None) == []
    assert [f["row"] for f in _core.check_source(src, "m.py", {"param_values": {LEN: 113}})] == [row]
    assert _core.check_source(src, "m.py", {"param_values": {LEN: 64}}) == []
    # drop_last: no smaller batch, whatever the length
    twin = (DIR / "last_batch_folder_ok.py").read_text()
    assert _core.check_source(twin, "m.py", {"param_values": {LEN: 113}}) == []
    # a dataset of known length (MNIST's 60000 = 3750 * 16) is no free parameter
    mnist = src.replace('datasets.ImageFolder("images", transform=', 'datasets.MNIST("data", transform=')
    _, cands = _core.check_source_undecided(mnist, "m.py", {"free_params": True})
    assert LEN not in {p["name"] for u in cands for p in u["params"]}
