"""``shape-lint summary`` (issue 14): the static torchinfo-like table, against torch.

The oracle: for every clean fixture (no ``# error:`` marker) whose script makes a model call,
the model calls the core records (model, output shape, total parameters, and the leaf layers
called with their names, types, output shapes and parameter counts) equal what torch's forward
hooks record when the script runs (``forward_hooks.py``, recorded by ``oracle_runner.py`` in
the run test_oracle.py makes anyway). A record the core marks incomplete (something it cannot
tell: never a guess) is skipped but counted; the share of scripts that agree exactly, by
fixture group, is printed at the end of the run (``conftest.py``) and must not fall.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from shape_lint import cli, summary

HERE = Path(__file__).resolve().parent
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


def test_summary_model_option_records_each_input_rank():
    # the input's rank is assumed both ways (a Conv2d takes [C, H, W] and [N, C, H, W]): one
    # record per reading, each labelled with its input rank
    calls = summary.summarise(NET, "net.py", "Net")
    assert [c["input_ranks"] for c in calls] == [[4], [3]]
    batched, unbatched = calls
    for c in calls:
        assert c["complete"], c["incomplete"]
        assert c["model"] == "Net" and c["total_params"] == 247314
        assert [(l["name"], l["type"], l["params"]) for l in c["layers"]] == [
            ("features.0", "Conv2d", 224), ("features.1", "ReLU", 0), ("features.2", "MaxPool2d", 0),
            ("fc1", "Linear", 245880), ("fc2", "Linear", 1210)]
    # the input's sizes are unknown: symbolic dims are strings
    assert batched["output_shape"] == ["N", 10] and batched["layers"][0]["output_shape"] == ["N", 8, "H", "W"]
    # unbatched, flatten(x, 1) keeps the channels: fc1 runs on [8, 120], as under torch
    assert unbatched["output_shape"] == [8, 10] and unbatched["layers"][3]["output_shape"] == [8, 120]


def test_summary_model_option_text_labels_the_rank(tmp_path, capsys):
    (tmp_path / "net.py").write_text(NET)
    assert cli.main(["summary", str(tmp_path / "net.py"), "--model", "Net"]) == 0
    out = capsys.readouterr().out
    assert "Net (line 5), input rank 4" in out and "Net (line 5), input rank 3" in out
    assert cli.main(["summary", str(tmp_path / "net.py"), "--model", "Net", "--output-format", "json"]) == 0
    assert [r["input_ranks"] for r in json.loads(capsys.readouterr().out)] == [[4], [3]]
    # a script's own calls carry no input rank
    assert cli.main(["summary", str(tmp_path / "net.py"), "--output-format", "json"]) == 0
    assert ["input_ranks" in r for r in json.loads(capsys.readouterr().out)] == [False]


def test_summary_cli_text_and_json(tmp_path, capsys):
    (tmp_path / "net.py").write_text(NET)
    assert cli.main(["summary", str(tmp_path / "net.py"), "--output-format", "json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["model"] == "Net" and rec["total_params"] == 247314
    assert cli.main(["summary", str(tmp_path / "net.py")]) == 0
    out = capsys.readouterr().out
    assert "Total params: 247,314" in out and re.search(r"\n  fc1 +Linear +\[4, 120\] +245,880\n", out)
    assert cli.main(["summary", str(tmp_path / "net.py"), "--model", "Nope"]) == 1


# What torch's hooks see, each case written for one point of `parameters()`/`named_modules()`:
# the expected records were measured under torch 2.13 (``forward_hooks.py``), and
# test_cases_agree_with_forward_hooks measures them again.
CASES = {
    # a user nn.Parameter counts, a buffer (and BatchNorm's running stats) does not, a frozen
    # weight does
    "buffers": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Norm(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(d))
                self.register_buffer("mean", torch.zeros(d))
                self.bn = nn.BatchNorm1d(d)
                self.fc = nn.Linear(d, 2)
                self.fc.weight.requires_grad_(False)

            def forward(self, x):
                return self.fc(self.bn(x - self.mean) * self.scale)


        net = Norm(6)
        print(net(torch.randn(4, 6)).shape)
        """),
    # a subclass of a library layer is a leaf of its own type; a module called twice is two
    # rows; MultiheadAttention calls no child as a module (out_proj's weight goes to the
    # functional form): no row, but its parameters count
    "subclass_attention": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Head(nn.Linear):
            def forward(self, x):
                return super().forward(x) * 2


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
                self.head = Head(8, 3)
                self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, x):
                x, _ = self.attn(x, x, x)
                return self.head(self.fc(self.fc(x)))


        net = Net()
        print(net(torch.randn(2, 5, 8)).shape)
        """),
    # a module held twice (weight sharing across two names) counts once in the total
    "shared": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Twin(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(4, 4)
                self.blocks = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
                self.out = nn.Linear(4, 1)

            def forward(self, x):
                return self.out(self.blocks(self.enc(x)))


        net = Twin()
        net.proj = net.out
        print(net(torch.randn(3, 4)).shape)
        """),
    # an empty `nn.Sequential()` (a residual block's identity shortcut) holds no module: torch's
    # hooks record it as a leaf, its output its input, no parameters
    "identity_shortcut": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, c, stride):
                super().__init__()
                self.conv = nn.Conv2d(c, c, 3, padding=1)
                self.shortcut = nn.Sequential()
                if stride != 1:
                    self.shortcut = nn.Sequential(nn.AvgPool2d(stride))

            def forward(self, x):
                return self.conv(x) + self.shortcut(x)


        net = Block(4, 1)
        print(net(torch.randn(2, 4, 6, 6)).shape)
        """),
    # a Transformer encoder in eval mode with autograd off takes torch's fast path: its layers
    # call no child as a module, the hooks see only the stack's norm (the parameters count)
    "encoder_fast_path": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))
                self.head = nn.Linear(16, 2)

            def forward(self, x):
                return self.head(self.enc(x))


        net = Net()
        net.eval()
        with torch.no_grad():
            print(net(torch.randn(3, 5, 16)).shape)
        """),
    # nn.Transformer: its encoder stack on src's shape, then its decoder stack (no fast path),
    # each layer's children as the hooks see them (norm_first order), and each stack's norm
    "transformer": textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, norm_first=True)
                self.head = nn.Linear(16, 3)

            def forward(self, src, tgt):
                return self.head(self.t(src, tgt))


        net = Net()
        print(net(torch.randn(7, 2, 16), torch.randn(5, 2, 16)).shape)
        """),
}
EXPECTED = {
    "buffers": {"model": "Norm", "output_shape": [4, 2], "total_params": 32, "layers": [
        {"name": "bn", "type": "BatchNorm1d", "output_shape": [4, 6], "params": 12},
        {"name": "fc", "type": "Linear", "output_shape": [4, 2], "params": 14}]},
    "encoder_fast_path": {"model": "Net", "output_shape": [3, 5, 2], "total_params": 4514, "layers": [
        {"name": "enc.norm", "type": "LayerNorm", "output_shape": [3, 5, 16], "params": 32},
        {"name": "head", "type": "Linear", "output_shape": [3, 5, 2], "params": 34}]},
    "transformer": {"model": "Net", "output_shape": [5, 2, 3], "total_params": 5683, "layers": [
        {"name": "t.encoder.layers.0.norm1", "type": "LayerNorm", "output_shape": [7, 2, 16], "params": 32},
        {"name": "t.encoder.layers.0.dropout1", "type": "Dropout", "output_shape": [7, 2, 16], "params": 0},
        {"name": "t.encoder.layers.0.norm2", "type": "LayerNorm", "output_shape": [7, 2, 16], "params": 32},
        {"name": "t.encoder.layers.0.linear1", "type": "Linear", "output_shape": [7, 2, 32], "params": 544},
        {"name": "t.encoder.layers.0.dropout", "type": "Dropout", "output_shape": [7, 2, 32], "params": 0},
        {"name": "t.encoder.layers.0.linear2", "type": "Linear", "output_shape": [7, 2, 16], "params": 528},
        {"name": "t.encoder.layers.0.dropout2", "type": "Dropout", "output_shape": [7, 2, 16], "params": 0},
        {"name": "t.encoder.norm", "type": "LayerNorm", "output_shape": [7, 2, 16], "params": 32},
        {"name": "t.decoder.layers.0.norm1", "type": "LayerNorm", "output_shape": [5, 2, 16], "params": 32},
        {"name": "t.decoder.layers.0.dropout1", "type": "Dropout", "output_shape": [5, 2, 16], "params": 0},
        {"name": "t.decoder.layers.0.norm2", "type": "LayerNorm", "output_shape": [5, 2, 16], "params": 32},
        {"name": "t.decoder.layers.0.dropout2", "type": "Dropout", "output_shape": [5, 2, 16], "params": 0},
        {"name": "t.decoder.layers.0.norm3", "type": "LayerNorm", "output_shape": [5, 2, 16], "params": 32},
        {"name": "t.decoder.layers.0.linear1", "type": "Linear", "output_shape": [5, 2, 32], "params": 544},
        {"name": "t.decoder.layers.0.dropout", "type": "Dropout", "output_shape": [5, 2, 32], "params": 0},
        {"name": "t.decoder.layers.0.linear2", "type": "Linear", "output_shape": [5, 2, 16], "params": 528},
        {"name": "t.decoder.layers.0.dropout3", "type": "Dropout", "output_shape": [5, 2, 16], "params": 0},
        {"name": "t.decoder.norm", "type": "LayerNorm", "output_shape": [5, 2, 16], "params": 32},
        {"name": "head", "type": "Linear", "output_shape": [5, 2, 3], "params": 51}]},
    "identity_shortcut": {"model": "Block", "output_shape": [2, 4, 6, 6], "total_params": 148, "layers": [
        {"name": "conv", "type": "Conv2d", "output_shape": [2, 4, 6, 6], "params": 148},
        {"name": "shortcut", "type": "Sequential", "output_shape": [2, 4, 6, 6], "params": 0}]},
    "subclass_attention": {"model": "Net", "output_shape": [2, 5, 3], "total_params": 387, "layers": [
        {"name": "fc", "type": "Linear", "output_shape": [2, 5, 8], "params": 72},
        {"name": "fc", "type": "Linear", "output_shape": [2, 5, 8], "params": 72},
        {"name": "head", "type": "Head", "output_shape": [2, 5, 3], "params": 27}]},
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_summary_cases(case):
    (c,) = summary.summarise(CASES[case], f"{case}.py")
    assert c["complete"], c["incomplete"]
    assert comparable([c]) == [EXPECTED[case]]


def test_summary_shared_module():
    (c,) = summary.summarise(CASES["shared"], "shared.py")
    # out and proj are one module: its 5 parameters once (20 + 20 + 5)
    assert c["total_params"] == 45
    # torch names it by its first name in registration order (`out`), which the core does not
    # keep: the row is not a guess
    assert c["layers"][-1]["params"] == 5 and not c["complete"]
    assert any("two names" in w for w in c["incomplete"])


def test_summary_unmodelled_layer_is_incomplete():
    src = CASES["buffers"].replace("nn.BatchNorm1d(d)", "nn.SyncBatchNorm(d)")
    (c,) = summary.summarise(src, "sync.py")
    assert not c["complete"] and c["total_params"] is None


def test_cases_agree_with_forward_hooks(tmp_path):
    """The cases' expected records are what torch's hooks see."""
    pytest.importorskip("torch")
    (tmp_path / "cases.json").write_text(json.dumps(CASES))
    code = textwrap.dedent("""\
        import json, sys
        sys.path.insert(0, sys.argv[1])
        import forward_hooks
        calls = forward_hooks.install()
        out = {}
        for name, src in json.load(open("cases.json")).items():
            del calls[:]
            exec(compile(src, name, "exec"), {"__name__": "__main__"})
            out[name] = list(calls)
        json.dump(out, open("out.json", "w"))
        """)
    subprocess.run([sys.executable, "-c", code, str(HERE)], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    seen = json.loads((tmp_path / "out.json").read_text())
    for case, want in EXPECTED.items():
        assert [{k: v for k, v in c.items() if k != "input_shapes"} for c in seen[case]] == [want], case
    (shared,) = seen["shared"]
    assert shared["total_params"] == 45 and shared["layers"][-1]["name"] == "out"


def clean_fixtures():
    """The clean fixtures that run without arguments: the summary describes that run (a
    fixture run with a switch, ``# oracle: argv``, has hooks of another run)."""
    return [p for p in FIXTURES if not any(m in p.read_text(encoding="utf-8") for m in ("# error:", "# oracle: argv"))]


def classify(calls, run):
    """One script's verdict: ``("agree" | "incomplete" | "differ" | None, reasons)``; None when
    torch's run says nothing (not run here, failed, or no model call on either side)."""
    if run.get("skip") or not run["ok"] or any(c.get("broken") for c in run["calls"]):
        return None, []
    if not calls:
        return (None, []) if not run["calls"] else ("incomplete", ["no model call found by the core"])
    why = [w for c in calls for w in c["incomplete"]]
    if not why and any(isinstance(d, str) for c in calls for d in (c["output_shape"] or [])):
        why.append("a symbolic output size")  # (the core says so itself: a safety net)
    if why:
        return "incomplete", list(dict.fromkeys(why))
    return ("agree" if comparable(calls) == comparable(run["calls"]) else "differ"), []


def reason_kind(why):
    """A reason without its names (`an unknown attribute `cfg``: `an unknown attribute`)."""
    return re.sub(r"\s*\(?`[^`]*`\)?", "", why)


# The share that agrees exactly, by fixture group, must not fall (measured: see the README's
# summary section). The zoo needs torchvision (see torchvision_compat.py): where it cannot be
# imported, the zoo's scripts are not run and its floor does not apply.
AGREE_FLOOR = {"constructs": 29, "conv": 23, "device": 32, "linear": 14, "may_fail": 9, "seq": 25,
               "shapeops": 16, "training": 120, "zoo": 7}
# the share, for conftest.py's terminal summary: {group: Counter of verdicts}, reasons
SHARE = {}


def test_summary_agrees_with_forward_hooks(tmp_path_factory):
    """The acceptance oracle over the clean fixtures (the zoo's included): the hooks come from
    test_oracle.py's runs of the same scripts (``oracle_reports.py``), not a second run."""
    pytest.importorskip("torch")
    import oracle_reports

    paths = clean_fixtures()
    runs = oracle_reports.reports(paths, tmp_path_factory.mktemp("oracle"))
    by_group, reasons, differ = {}, Counter(), []
    for p in paths:
        calls = summary.summarise(p.read_text(encoding="utf-8"), str(p))
        verdict, why = classify(calls, runs[p])
        if verdict is None:
            continue
        by_group.setdefault(p.parent.name, Counter())[verdict] += 1
        reasons.update({reason_kind(w) for w in why})
        if verdict == "differ":
            differ.append((oracle_reports.fixture_id(p), comparable(calls), comparable(runs[p]["calls"])))
    SHARE.update(groups=by_group, reasons=reasons)
    print("\n" + share_text(by_group, reasons))
    assert by_group, "no clean fixture with a model call ran under torch"
    assert differ == [], "shape-lint summary differs from torch's forward hooks:\n" + "\n".join(
        f"{fid}:\n  core:  {a}\n  torch: {b}" for fid, a, b in differ)
    low = {g: (by_group.get(g, Counter())["agree"], n) for g, n in AGREE_FLOOR.items()
           if g in by_group and by_group[g]["agree"] < n}
    assert not low, f"fewer scripts agree than before (group: (now, floor)): {low}"


#: `summary --model NAME --input-size ...` against the hooks of the script's own first call of
#: that model (torchinfo's input_size: the sizes of that call's inputs): how many agree, at least
INPUT_SIZE_FLOOR = 161
#: {"agree": n, "incomplete": n, "differ": n}, for conftest.py's terminal summary
INPUT_SIZE_SHARE = Counter()


def test_input_size_agrees_with_forward_hooks(tmp_path_factory):
    """torchinfo's ``summary(model, input_size=...)``: for each clean fixture's first call of a
    model class it defines, made with tensors only, ``--model NAME --input-size`` given that
    call's input sizes records what torch's hooks record for it (the instance is the one the
    script built; a record the core marks incomplete is counted, never compared)."""
    pytest.importorskip("torch")
    import oracle_reports

    paths = clean_fixtures()
    runs = oracle_reports.reports(paths, tmp_path_factory.mktemp("oracle"))
    differ = []
    for p in paths:
        text = p.read_text(encoding="utf-8")
        done = set()
        for call in runs[p].get("calls") or []:
            name, sizes = call.get("model"), call.get("input_shapes")
            if call.get("broken") or name in done or not sizes or None in sizes:
                continue
            if not re.search(rf"^class {re.escape(name)}\b", text, re.M):
                continue  # a container or an imported model: not a class the file defines
            done.add(name)
            got = summary.summarise(text, str(p), name, sizes)
            if len(got) != 1 or got[0]["incomplete"]:
                INPUT_SIZE_SHARE["incomplete"] += 1
                continue
            verdict = "agree" if comparable(got) == comparable([call]) else "differ"
            INPUT_SIZE_SHARE[verdict] += 1
            if verdict == "differ":
                differ.append((oracle_reports.fixture_id(p), name, sizes, comparable(got), comparable([call])))
    print(f"\nsummary --input-size vs forward hooks: {INPUT_SIZE_SHARE['agree']} agree, "
          f"{INPUT_SIZE_SHARE['incomplete']} incomplete, {INPUT_SIZE_SHARE['differ']} differ")
    assert differ == [], "summary --input-size differs from torch's forward hooks:\n" + "\n".join(
        f"{fid} --model {m} --input-size {s}:\n  core:  {a}\n  torch: {b}" for fid, m, s, a, b in differ)
    assert INPUT_SIZE_SHARE["agree"] >= INPUT_SIZE_FLOOR, INPUT_SIZE_SHARE


def test_input_size_option(tmp_path, capsys):
    path = tmp_path / "net.py"
    path.write_text(NET)
    code = cli.main(["summary", str(path), "--model", "Net", "--input-size", "2,3,32,32", "--output-format", "json"])
    ((c,),) = [json.loads(capsys.readouterr().out)]
    assert code == 0 and c["complete"] and c["input_ranks"] == [4]
    assert c["output_shape"] == [2, 10] and c["layers"][0]["output_shape"] == [2, 8, 32, 32]
    # the sizes decide the result: a 64x64 input gives a flatten that fc1 does not take
    code = cli.main(["summary", str(path), "--model", "Net", "--input-size", "(1, 3, 64, 64)"])
    out = capsys.readouterr().out
    assert code == 0 and "[1, 8, 32, 32]" in out and "Incomplete: the call raises" in out
    assert cli.main(["summary", str(path), "--input-size", "1,3,32,32"]) == 2
    assert "--input-size needs --model" in capsys.readouterr().err
    assert cli.main(["summary", str(path), "--model", "Net", "--input-size", "1,0"]) == 2
    assert "expected positive sizes" in capsys.readouterr().err


def share_text(by_group, reasons, top=6):
    """`N/M scripts agree exactly, K incomplete, D differ`, in all and by group, and the top
    reasons of the incomplete ones."""
    def line(c):
        n = sum(c.values())
        return f"{c['agree']}/{n} scripts agree exactly, {c['incomplete']} incomplete, {c['differ']} differ"

    total = sum(by_group.values(), Counter())
    out = [f"shape-lint summary vs forward hooks: {line(total)}"]
    out += [f"  {g:<11} {line(c)}" for g, c in sorted(by_group.items())]
    if reasons:
        out.append("  top reasons of the incomplete (scripts): " + "; ".join(f"{r} ({n})" for r, n in reasons.most_common(top)))
    return "\n".join(out)
