#!/usr/bin/env python3
"""Scaling benchmark: per-file analysis time of ``shape_lint._core.check_source``.

Two measurements, printed as ratios next to the times they come from:

1. every ``tests/fixtures/*/*.py``: the median, p90 and max over the fixtures of each file's
   median time over ``--reps`` runs, as ms and as a multiple of the median;
2. generated model files of growing size (default 500, 1000, 2000, 5000 lines): correct
   PyTorch programs built from repeated, varied units (Conv2d/BatchNorm2d/Linear/BatchNorm1d
   stacks in ``nn.Module`` classes, ``forward`` methods with branches and ``ModuleList``
   loops, helper functions, a training step, and a ``__main__`` that builds and calls every
   model). The table shows lines, the median ms of ``--runs`` runs, ms per 1000 lines, and the
   growth ratio ``(t / t_smallest) / (lines / lines_smallest)``: about 1.0 means time grows
   linearly with file size, 2.0 means twice as fast as linear.

The engine stops a file's analysis when a budget is spent: ``max_steps`` (interpreter steps,
counted) and ``max_paths``, with ``timeout_ms`` (30 s) only as a safety net. A cut analysis
says so (the ``SHP002`` notice), but the bugs past the cut are not reported. So the timed runs
lift the step budget and the clock (``BIG_BUDGET``), and two checks keep the numbers honest:

* the clean file must give zero findings (the generated code is correct; a finding is a
  false alarm and stops the benchmark);
* a *probe* twin of each file (the same file plus two definite bugs placed where the engine
  reaches them last: at the end of ``__main__`` and in the ``forward`` of the last
  ``nn.Module`` class, which nothing instantiates) must report both bugs. If it does not, the
  analysis of that size was cut short by a budget and its time is not the real cost; the
  table says so.

The probe is run again with the default options: the "default budget" column says whether
the default budgets cut the analysis short (a probe bug missing, or the ``SHP002`` notice).

    python bench/scale.py                       # fixtures + 500/1000/2000/5000 lines
    python bench/scale.py --sizes 500 1000 --runs 3
    python bench/scale.py --write /tmp/gen      # also write the generated files (to run them
                                                # under torch: python /tmp/gen/model_500.py)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from shape_lint import _core

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = REPO / "tests" / "fixtures"

BIG_BUDGET = {"timeout_ms": 60_000, "max_steps": 100_000_000}
NOTICE = "SHP002"  # the analysis-incomplete notice a cut analysis gives


# --------------------------------------------------------------------------------------------
# Generated model files

HEADER = '''\
"""Generated model zoo: {units} units of CNN and MLP classifiers (bench/scale.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
'''


def unit(k: int) -> str:
    """One unit of about 125 lines: helpers, three nn.Module classes, a train step, a runner.

    Widths, image sizes, depths, pooling and residual switches vary with ``k`` so the units
    are not copies of each other. Every unit is correct PyTorch code.
    """
    in_ch = (3, 1, 3, 4)[k % 4]
    width = (8, 12, 16, 6, 10)[k % 5]
    size = (16, 24, 32, 20)[k % 4]
    classes = 3 + k % 7
    hidden = (32, 48, 64)[k % 3]
    depth = 1 + k % 3
    use_pool = k % 3 != 0
    pool = "nn.MaxPool2d(2)" if k % 2 == 0 else "nn.AvgPool2d(2)"
    n_in = 10 + (k * 7) % 23
    h1 = (64, 32, 48, 24)[k % 4]
    h2 = (16, 24, 32)[k % 3]
    n_out = 2 + k % 5
    residual = k % 2 == 1
    return f'''

# ---------------------------------------------------------------------------- unit {k}


def conv_bn_{k}(cin, cout, stride=1):
    """3x3 convolution, batch norm and ReLU."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


def conv_out_{k}(size, kernel, stride=1, padding=0):
    """Spatial size after a convolution or pooling layer."""
    return (size + 2 * padding - kernel) // stride + 1


class ConvBlock{k}(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.body = conv_bn_{k}(cin, cout, stride)
        self.conv = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                nn.BatchNorm2d(cout),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = self.bn(self.conv(self.body(x)))
        return F.relu(out + self.shortcut(x))


class Classifier{k}(nn.Module):
    def __init__(self, in_ch={in_ch}, width={width}, num_classes={classes}, image_size={size},
                 depth={depth}, use_pool={use_pool}):
        super().__init__()
        self.stem = conv_bn_{k}(in_ch, width)
        self.down = ConvBlock{k}(width, width * 2, stride=2)
        self.blocks = nn.ModuleList([ConvBlock{k}(width * 2, width * 2) for _ in range(depth)])
        self.use_pool = use_pool
        spatial = conv_out_{k}(image_size, 3, stride=2, padding=1)
        if use_pool:
            self.pool = {pool}
            spatial = conv_out_{k}(spatial, 2, stride=2)
        features = width * 2 * spatial * spatial
        self.head = nn.Sequential(
            nn.Linear(features, {hidden}),
            nn.BatchNorm1d({hidden}),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear({hidden}, num_classes),
        )

    def forward(self, x):
        x = self.stem(x)
        x = self.down(x)
        for block in self.blocks:
            x = block(x)
        if self.use_pool:
            x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.head(x)


class MLP{k}(nn.Module):
    def __init__(self, n_in={n_in}, hidden=({h1}, {h2}), n_out={n_out}, residual={residual}):
        super().__init__()
        layers = []
        prev = n_in
        for h in hidden:
            layers.append(nn.Linear(prev, h))
            layers.append(nn.BatchNorm1d(h))
            layers.append(nn.ReLU())
            prev = h
        self.body = nn.Sequential(*layers)
        self.residual = residual
        self.skip = nn.Linear(n_in, prev)
        self.out = nn.Linear(prev, n_out)

    def forward(self, x):
        h = self.body(x)
        if self.residual:
            h = h + self.skip(x)
        if self.training:
            h = F.dropout(h, 0.1)
        return self.out(h)


class Ensemble{k}(nn.Module):
    def __init__(self, cnn, mlp, num_classes):
        super().__init__()
        self.cnn = cnn
        self.mlp = mlp
        self.proj = nn.Linear(num_classes + {n_out}, num_classes)

    def forward(self, image, feats):
        a = self.cnn(image)
        b = self.mlp(feats)
        return self.proj(torch.cat([a, b], dim=1))


def train_step_{k}(model, opt, inputs, y):
    model.train()
    logits = model(*inputs)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def run_{k}():
    torch.manual_seed({k})
    cnn = Classifier{k}()
    x = torch.randn(BATCH, {in_ch}, {size}, {size})
    y = torch.randint(0, {classes}, (BATCH,))
    opt = torch.optim.SGD(cnn.parameters(), lr=0.01, momentum=0.9)
    total = train_step_{k}(cnn, opt, (x,), y)
    mlp = MLP{k}()
    feats = torch.randn(BATCH, {n_in})
    labels = torch.randint(0, {n_out}, (BATCH,))
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
    total += train_step_{k}(mlp, opt, (feats,), labels)
    model = Ensemble{k}(cnn, mlp, {classes})
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total += train_step_{k}(model, opt, (x, feats), y)
    model.eval()
    with torch.no_grad():
        preds = model(x, feats).argmax(dim=1)
    assert preds.shape == (BATCH,)
    return total
'''


# Probe bugs: definite shape errors the engine must report if it analysed the whole file.
PROBE_CLASS = '''

class ProbeHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(torch.zeros(2, 8))  # probe: Linear(16, 4) on [2, 8]
'''
PROBE_MAIN = "    probe = torch.zeros(2, 3) @ torch.zeros(4, 5)  # probe: [2, 3] @ [4, 5]\n"


def build(n_units: int, probe: bool = False) -> str:
    """A correct model file of ``n_units`` units (the probe twin adds two definite bugs)."""
    parts = [HEADER.format(units=n_units), *(unit(k) for k in range(n_units))]
    if probe:
        parts.append(PROBE_CLASS)
    parts.append('\n\nif __name__ == "__main__":\n    total = 0.0\n')
    parts.extend(f"    total += run_{k}()\n" for k in range(n_units))
    parts.append("    print(total)\n")
    if probe:
        parts.append(PROBE_MAIN)
    return "".join(parts)


def units_for(target_lines: int) -> int:
    """The number of units whose file is closest to ``target_lines`` lines (at least 1)."""
    n = 1
    while abs(count_lines(build(n + 1)) - target_lines) < abs(count_lines(build(n)) - target_lines):
        n += 1
    return n


def probe_rows(src: str) -> set[int]:
    return {i for i, line in enumerate(src.splitlines(), 1) if "# probe:" in line}


# --------------------------------------------------------------------------------------------
# Timing


def time_check(src: str, name: str, options: dict | None) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    findings = _core.check_source(src, name, options)
    return time.perf_counter() - t0, findings


def timed_runs(src: str, name: str, options: dict | None, runs: int,
               min_seconds: float = 0.0, max_runs: int = 50) -> tuple[list[float], list[dict]]:
    """``runs`` timed runs after one warm-up, more (up to ``max_runs``) until ``min_seconds``."""
    time_check(src, name, options)  # warm-up (page faults, allocator), not counted
    times: list[float] = []
    findings: list[dict] = []
    while len(times) < runs or (sum(times) < min_seconds and len(times) < max_runs):
        t, findings = time_check(src, name, options)
        times.append(t)
    return times, findings


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * q // 100) - 1))
    return s[int(k)]


def count_lines(src: str) -> int:
    return src.count("\n") + (0 if src.endswith("\n") or not src else 1)


def bench_fixtures(reps: int) -> float | None:
    """Print the fixture table; return the fixtures' time per line (None without fixtures)."""
    files = sorted(FIXTURES.glob("*/*.py"))
    if not files:
        print("no fixtures found under", FIXTURES)
        return None
    per_file: list[tuple[float, int, str]] = []
    default_changes = []
    for path in files:
        src = path.read_text(encoding="utf-8")
        times, findings = timed_runs(src, str(path), BIG_BUDGET, reps)
        t = statistics.median(times)
        per_file.append((t, count_lines(src), path.relative_to(FIXTURES).as_posix()))
        default = _core.check_source(src, str(path))
        if [(f["row"], f["code"]) for f in default] != [(f["row"], f["code"]) for f in findings]:
            default_changes.append(path.name)
    times = [t for t, _, _ in per_file]
    lines = sum(n for _, n, _ in per_file)
    med, p90, mx = statistics.median(times), percentile(times, 90), max(times)
    slowest = max(per_file)
    print(f"== fixtures: {len(files)} files, {lines} lines, each the median of {reps} runs "
          f"(budgets lifted) ==")
    print(f"{'':8} {'ms/file':>9} {'x median':>9}")
    for label, v in (("median", med), ("p90", p90), ("max", mx)):
        print(f"{label:8} {v * 1e3:9.3f} {v / med:9.2f}")
    print(f"slowest: {slowest[2]} ({slowest[1]} lines, {slowest[0] / med:.1f} x the median)")
    if default_changes:
        print(f"default budget changes the findings of: {', '.join(default_changes)}")
    else:
        print("default options give the same findings on every fixture (budget not hit)")
    print()
    return sum(times) / lines


def bench_generated(sizes: list[int], runs: int, write: Path | None,
                    fixture_per_line: float | None) -> bool:
    print(f"== generated model files: median of >= {runs} runs each (more for small files, "
          f"up to 2 s per size; budgets lifted) ==")
    print(f"{'lines':>6} {'units':>5} {'runs':>4} {'ms':>9} {'min ms':>9} {'ms/kline':>9} "
          f"{'growth':>7} {'g(min)':>7} {'probe':>6} {'default budget':>15}")
    base: tuple[int, float, float] | None = None
    ok = True
    for target in sizes:
        units = units_for(target)
        src = build(units)
        probe = build(units, probe=True)
        name = f"model_{target}.py"
        if write is not None:
            write.mkdir(parents=True, exist_ok=True)
            (write / name).write_text(src, encoding="utf-8")
            (write / f"probe_{target}.py").write_text(probe, encoding="utf-8")
        lines = count_lines(src)
        times, findings = timed_runs(src, name, BIG_BUDGET, runs, min_seconds=2.0)
        t, t_min = statistics.median(times), min(times)
        if findings:
            print(f"FALSE ALARM on generated correct code ({lines} lines):", file=sys.stderr)
            for f in findings:
                print(f"  {name}:{f['row']}:{f['col']}: {f['code']} {f['message']}",
                      file=sys.stderr)
            return False
        want = probe_rows(probe)
        _, got = time_check(probe, name, BIG_BUDGET)
        complete = want <= {f["row"] for f in got}
        _, got_default = time_check(probe, name, None)
        cut = not want <= {f["row"] for f in got_default} or any(f["code"] == NOTICE for f in got_default)
        if base is None:
            base = (lines, t, t_min)
        growth = (t / base[1]) / (lines / base[0])
        growth_min = (t_min / base[2]) / (lines / base[0])
        budget = "CUT" if cut else "ok"
        print(f"{lines:6d} {units:5d} {len(times):4d} {t * 1e3:9.2f} {t_min * 1e3:9.2f} "
              f"{t * 1e6 / lines:9.2f} {growth:7.2f} {growth_min:7.2f} "
              f"{'both' if complete else 'MISS':>6} {budget:>15}")
        ok = ok and complete
    print("growth = (ms / ms of the smallest) / (lines / lines of the smallest), from the "
          "medians; g(min) the same from the minima (less sensitive to other load). "
          "1.0 = linear, > 1 = time grows faster than size")
    if fixture_per_line is not None and base is not None:
        per_line = base[1] / base[0]
        print(f"fixtures: {fixture_per_line * 1e6:.2f} ms/kline (sum of per-file medians / lines) "
              f"= {fixture_per_line / per_line:.2f} x the smallest generated file's ms/kline")
    print("probe = both probe bugs reported with the budgets lifted (MISS: a budget still cut "
          "the analysis short, so the time is not the full cost)")
    print("default budget = CUT when the probe run with the default options lost a bug or "
          "gave the SHP002 notice")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000],
                    help="target line counts of the generated files")
    ap.add_argument("--runs", type=int, default=5,
                    help="minimum timed runs per generated file (default 5)")
    ap.add_argument("--reps", type=int, default=15, help="timed runs per fixture (default 15)")
    ap.add_argument("--write", type=Path, metavar="DIR",
                    help="also write the generated files (clean and probe) to DIR")
    ap.add_argument("--no-fixtures", action="store_true", help="skip the fixture measurement")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.reps < 1 or min(args.sizes) < 1:
        ap.error("--runs, --reps and --sizes must be positive")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"shape_lint._core {_core.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load} (times are noisy under load)")
    print()
    fixture_per_line = None if args.no_fixtures else bench_fixtures(args.reps)
    ok = bench_generated(sorted(args.sizes), args.runs, args.write, fixture_per_line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
