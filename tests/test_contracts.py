"""A model's input contract (issue 30, item 3, first part): ``shape-lint summary --model NAME``
lists what ``forward`` needs of its inputs' sizes (``engine/contract.rs``), and torch agrees:
the input every clean fixture really gives its model meets the contract.

Each clean fixture's first call of a model class it defines runs under torch (the oracle's run,
``oracle_reports.py``); the sizes its hooks saw are bound to the contract's symbols (a size the
contract fixes must be that size) and each condition is evaluated with them. A condition that
is not a Python expression of bound names is not checked; the last assertion keeps the test
from passing by checking nothing.
"""
import re

import pytest

from shape_lint import cli, summary

SMALL_CNN = """import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5)
        self.fc1 = nn.Linear(16 * 12 * 12, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc1(x)
"""

NAME = re.compile(r"[A-Za-z_]\w*")


def test_the_contract_of_a_small_cnn(tmp_path, capsys):
    path = tmp_path / "cnn.py"
    path.write_text(SMALL_CNN)
    [batched, unbatched] = summary.summarise(SMALL_CNN, str(path), "SmallCNN")
    assert batched["input_ranks"] == [4] and unbatched["input_ranks"] == [3]
    [k] = batched["accepts"]
    # the channel is fixed by conv1; the spatial sizes by what fc1 takes after the flatten
    assert k["inputs"] == ["[N, 1, H, W]"] and k["names"] == ["x"]
    texts = [(c["text"], c["line"]) for c in k["clauses"]]
    assert ("5 <= H", 13) in texts and ("6 <= H", 13) in texts  # conv1's kernel, then the pool's
    # the channel conv1 fixed, first: shown in the shape, a clause of its own in the JSON
    channel = k["clauses"][0]
    assert (channel["text"], channel["line"], channel["fixed"]) == ("x.size(1) == 1", 13, True)
    assert channel["counterexample"][0][1] != 1
    fc = [c for c in k["clauses"] if c["line"] == 15]
    assert [c["text"] for c in fc] == ["16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304"]
    # 28x28 meets it, 32x32 does not: the size the layer was written for
    assert holds(k, {"H": 28, "W": 28}) and not holds(k, {"H": 32, "W": 32})
    # Z3's example is square; the counterexample of fc1's clause meets conv1's and the pool's
    assert k["example"] == [[2, 1, 28, 28]]
    [ce] = fc[0]["counterexample"]
    assert ce[:2] == [2, 1] and min(ce[2:]) >= 6 and not holds(k, {"H": ce[2], "W": ce[3]})
    assert cli.main(["summary", str(path), "--model", "SmallCNN"]) == 0
    out = capsys.readouterr().out
    # (of two lower bounds of a size at one line, the text shows the higher)
    assert ("Accepts: x: [N, 1, H, W] with\n  6 <= H, 6 <= W (line 13)\n"
            "  16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304 (line 15)\n  e.g. [2, 1, 28, 28]\n") in out
    # with --input-size the sizes are given: no contract
    [given] = summary.summarise(SMALL_CNN, str(path), "SmallCNN", [[2, 1, 28, 28]])
    assert "accepts" not in given


def test_a_shape_error_inside_the_model_cites_the_condition_of_its_line(tmp_path):
    """A script that feeds the model 3 channels, then 32x32 maps: each finding ends with what
    the model accepts at that line, with an example (``summary.cite``)."""
    from shape_lint import solver

    for inputs, row, cited in [
        ("torch.randn(8, 3, 28, 28)", 13, "SmallCNN accepts x: [N, 1, H, W] with x.size(1) == 1, 6 <= H, 6 <= W at line 13, e.g. [2, 1, 28, 28]"),
        ("torch.randn(8, 1, 32, 32)", 15, "SmallCNN accepts x: [N, 1, H, W] with 16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304 at line 15, e.g. [2, 1, 28, 28]"),
    ]:
        path = tmp_path / "cnn_script.py"
        source = SMALL_CNN + f"\n\nmodel = SmallCNN()\nout = model({inputs})\n"
        path.write_text(source)
        [f] = solver.check_source(source, str(path), {"cache": False})
        assert f["row"] == row and f["message"].endswith("; " + cited), f["message"]


def test_a_script_whose_run_passes_the_citation_budget_is_cited_nothing(tmp_path):
    """The citation reruns the script to build its model (``summary.CITE_MAX_STEPS``): a
    script that needs more steps gets no records within that budget, and its finding is cited
    nothing; the same model after a short script is cited. (Before the budget, a citation cost
    a whole run without call summaries: 0.2 s per class in a seq2seq notebook.)"""
    from shape_lint import _core, solver

    # (30,000 statements before the model, four steps each: more than the citation's budget)
    busy = "".join(f"v{i % 100} = [{i}, {i + 1}]\n" for i in range(30_000))
    source = SMALL_CNN + "\n\n" + busy + "model = SmallCNN()\nout = model(torch.randn(8, 3, 28, 28))\n"
    path = tmp_path / "busy_script.py"
    [f] = solver.check_source(source, str(path), {"cache": False})
    assert f["row"] == 13 and "accepts" not in f["message"], f["message"]
    assert _core.model_summary(source, str(path), "SmallCNN", {"max_steps": summary.CITE_MAX_STEPS}, None) == []
    # (within the default budget the script's model is summarised)
    assert summary.summarise(source, str(path), "SmallCNN")
    short = SMALL_CNN + "\n\nmodel = SmallCNN()\nout = model(torch.randn(8, 3, 28, 28))\n"
    [g] = solver.check_source(short, str(path), {"cache": False})
    assert g["message"].endswith("; SmallCNN accepts x: [N, 1, H, W] with x.size(1) == 1, 6 <= H, 6 <= W at line 13, e.g. [2, 1, 28, 28]"), g["message"]


def holds(contract, env):
    """Whether every condition of the contract holds with the names bound in ``env`` (``None``
    when one cannot be evaluated)."""
    for c in contract["clauses"]:
        if c.get("fixed"):
            continue  # (shown in the shape)
        expr = c["text"]
        if not set(NAME.findall(expr)) <= set(env):
            return None
        if not eval(expr, {"__builtins__": {}}, dict(env)):  # noqa: S307 - the core's arithmetic text
            return False
    return True


def bind(contract, sizes):
    """The real sizes bound to the contract's input shapes: ``{symbol: size}``, or ``False``
    when a size the contract fixes differs, ``None`` when a shape is not comparable."""
    env = {}
    if len(contract["inputs"]) != len(sizes):
        return None
    for shape, real in zip(contract["inputs"], sizes):
        if shape is None or shape.startswith("[*"):
            return None
        dims = [d.strip() for d in shape.strip("[]").split(",")] if shape != "[]" else []
        if len(dims) != len(real):
            return False
        for d, r in zip(dims, real):
            if d.isdigit():
                if int(d) != r:
                    return False
            elif NAME.fullmatch(d):
                if env.setdefault(d, r) != r:
                    return False
            else:
                return None
    return env


_MODELS = []


def models(tmp_path_factory):
    """``(fixture, model, real input sizes, contracts of that rank, the core's contracts)`` for
    each clean fixture whose first call of a model class it defines ran under torch (computed
    once)."""
    if _MODELS:
        return _MODELS
    import oracle_reports
    from test_summary import clean_fixtures
    from shape_lint import _core

    paths = clean_fixtures()
    runs = oracle_reports.reports(paths, tmp_path_factory.mktemp("oracle"))
    for p in paths:
        text = p.read_text(encoding="utf-8")
        for call in runs[p].get("calls") or []:
            name, sizes = call.get("model"), call.get("input_shapes")
            if call.get("broken") or not sizes or None in sizes or not re.search(rf"^class {re.escape(name)}\b", text, re.M):
                continue
            ranks = [len(s) for s in sizes]
            raw = [c for c in _core.model_summary(text, str(p), name, None, None) if c.get("input_ranks") == ranks]
            raw = [k for c in raw[:1] for k in c["accepts"]]
            readings = [c for c in summary.summarise(text, str(p), name) if c.get("input_ranks") == ranks]
            _MODELS.append((p, name, sizes, [k for c in readings[:1] for k in c.get("accepts", [])], raw))
            break  # the first call of a model the file defines
    return _MODELS


def test_the_real_input_of_every_clean_fixture_meets_its_contract(tmp_path_factory):
    pytest.importorskip("torch")
    import oracle_reports

    checked, broken = 0, []
    for p, name, sizes, contracts, _ in models(tmp_path_factory):
        verdicts = []
        for k in contracts:
            env = bind(k, sizes)
            verdicts.append(None if env is None else False if env is False else holds(k, env))
            # Z3's example meets the contract too
            if k["example"] is not None and k["inputs"] and None not in k["inputs"]:
                assert bind(k, k["example"]) not in (None, False) and holds(k, bind(k, k["example"])) is not False, (p, k)
        if True in verdicts:
            checked += 1
        elif verdicts and all(v is False for v in verdicts):
            broken.append((oracle_reports.fixture_id(p), name, sizes, contracts))
    print(f"\ninput contracts met by the real input: {checked} models")
    assert broken == [], "the real input does not meet the contract:\n" + "\n".join(map(str, broken))
    assert checked >= 50, checked


def test_a_size_outside_the_contract_raises_under_torch_at_the_line_it_names(tmp_path_factory):
    """Each clause's counterexample (input sizes that meet the clauses before it, not this one,
    solved by Z3) replaces the model's real input in the fixture's run: torch must raise, and
    at the clause's line for at least 20 models. Per model, the first clause of each line is
    run. The model's own sizes a contract names (``[N, in_channels, H, W]``) are pinned to the
    real run's; a contract that names one no input size shows is not run. A run that raises
    at another line (a check the core does not model, so that no clause names it, or another
    way through ``forward``) is counted apart; one that runs through is a wrong contract."""
    pytest.importorskip("torch")
    import oracle_reports

    base = tmp_path_factory.mktemp("outside")
    jobs = []
    for p, name, sizes, contracts, raw in models(tmp_path_factory):
        named = {c["line"] for k in contracts for c in k["clauses"]}
        for shown, k in zip(contracts, raw):
            pins = {(i, j): sizes[i][j] for i, d in enumerate(k["dims"]) if d for j, t in enumerate(d) if t in k["params"]}
            pinned = {k["dims"][i][j] for i, j in pins}
            if set(k["params"]) - pinned:
                continue
            seen = set()
            for c in summary.solve(k, pins)["clauses"]:
                if c["line"] is None or c["line"] in seen or c["counterexample"] is None:
                    continue
                seen.add(c["line"])
                jobs.append((p, name, c["line"], c["text"], c["counterexample"], named))

    def one(n_job):
        n, job = n_job
        p, name, line = job[:3]
        work = base / f"{n}_{oracle_reports.fixture_id(p).replace('/', '__')[:-3]}_{line}"
        return job, oracle_reports.run_fixture(p, work, {"model": name, "shapes": job[4]})

    from concurrent.futures import ThreadPoolExecutor
    import os

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(one, enumerate(jobs)))
    there, other, wrong = [], [], []
    for (p, name, line, text, shapes, named), run in results:
        if run.get("skip"):
            continue
        where = [l for f, l in run["frames"] if f == str(p)]
        tag = (oracle_reports.fixture_id(p), name, line, text, shapes, run.get("error"), where[:1])
        if run["ok"] and run.get("replaced"):
            wrong.append(("ran", *tag))
        elif not run.get("replaced"):
            other.append(("not called", *tag))
        elif where and where[0] == line:
            there.append(tag)
        else:
            other.append(("another line a clause names" if where and where[0] in named else "another line", *tag))
    models_there = {(t[0], t[1]) for t in there}
    print(f"\noutside the contract: {len(there)} runs raised at the clause's line ({len(models_there)} models), "
          f"{len(other)} elsewhere, {len(wrong)} ran, of {len(results)} runs")
    for t in other:
        print("  ", t)
    assert wrong == [], "\n".join(map(str, wrong))
    assert len(models_there) >= 20, models_there
