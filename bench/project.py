#!/usr/bin/env python3
"""Project-size benchmark: a generated project of about ``--files`` Python files, checked cold
(no cache) and warm (the second run, from ``.shape_lint_cache``) by ``flake8 --select=SHP``.

The project is what a growing research repository looks like: packages ``pkg_K/`` of model
files (an ``nn.Module`` each, sized by module constants, with a block from the package's own
``blocks.py`` through a relative import and a head from ``common/layers.py``), each package's
``__init__.py`` re-exporting its models, and scripts ``scripts/train_K_J.py`` that parse
arguments, import a model through its package and run it. Everything is correct except two
planted bugs whose sizes come from another file, so both need the project imports:

* ``scripts/train_0_0.py`` passes ``--width`` 48 to ``pkg_0/model_0.py``, whose head expects 64:
  reported in ``pkg_0/model_0.py`` (where torch raises), found by running the script;
* ``scripts/train_0_1.py`` views the output of ``pkg_0/model_1.py`` with the wrong class count:
  reported in the script.

It prints the load average, the number of files, the cold and warm wall times with their
ratio, both runs' findings (which must be the two planted bugs, identical cold and warm: the
benchmark exits 1 otherwise), and the flake8 run without the plugin as the baseline. A third
flake8 run follows an edit of one model file outside ``pkg_0``: the results cache misses for every
file (its key holds the project stamp), but the scripts that do not load the edited file are
taken from the script results the core keeps in the same cache (``rust/engine/script_cache.rs``).

Each model file is imported (through its package's ``__init__.py``, which imports the package's
20 models) by two scripts. The core runs a script once per process for all the files it loads
(``rust/engine/scripts.rs``); the benchmark also checks every file in this process with the
core alone, with that sharing and without it (``share_scripts=False``: each file runs its
scripts itself), and prints both times, the number of script runs, and whether the findings of
every file are identical (exit 1 otherwise): the whole project costs about the sum of its files,
not files × scripts.

    python bench/project.py                  # about 1000 files
    python bench/project.py --files 120      # the quick form the tests run
    python bench/project.py --write DIR      # keep the generated project in DIR
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = '''import torch
import torch.nn as nn

from common.layers import head
from .blocks import Block

WIDTH = {width}
CLASSES = {classes}


class Model{j}(nn.Module):
    def __init__(self, in_features=32, width=WIDTH, classes=CLASSES):
        super().__init__()
        self.stem = nn.Linear(in_features, width)
        self.block = Block(width)
        self.head = head({head_in}, classes)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = self.block(x)
        return self.head(x)
'''

BLOCKS = '''import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, hidden=None):
        super().__init__()
        hidden = hidden or 2 * dim
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.down(torch.relu(self.up(x))))
'''

LAYERS = '''import torch.nn as nn


def head(features, classes, dropout=0.1):
    return nn.Sequential(nn.Dropout(dropout), nn.Linear(features, classes))
'''

SCRIPT = '''import argparse

import torch

from pkg_{k} import Model{j}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--width", type=int, default={width})
    args = parser.parse_args()
    model = Model{j}(width=args.width)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        x = torch.randn(args.batch_size, 32)
        out = model(x)
        logits = out.view(args.batch_size, {classes})
        loss = logits.logsumexp(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
'''

UTIL = '''def describe(n):
    return "item %d" % n
'''


def generate(root: Path, files: int) -> list[tuple[str, int]]:
    """Write the project; return the planted bugs as (relative path, line)."""
    (root / "pyproject.toml").write_text('[project]\nname = "generated"\n')
    (root / "common").mkdir()
    (root / "common" / "__init__.py").write_text("")
    (root / "common" / "layers.py").write_text(LAYERS)
    (root / "scripts").mkdir()
    (root / "utils").mkdir()
    (root / "utils" / "__init__.py").write_text("")
    per_pkg = 20
    n_pkgs = max(1, files // (per_pkg + 4))
    written = 4
    bugs = []
    for k in range(n_pkgs):
        pkg = root / f"pkg_{k}"
        pkg.mkdir()
        (pkg / "blocks.py").write_text(BLOCKS)
        names = []
        for j in range(per_pkg):
            width = 32 + 16 * (j % 4)
            classes = 10 + j % 3
            (pkg / f"model_{j}.py").write_text(MODEL.format(j=j, width=width, classes=classes, head_in="64" if (k, j) == (0, 0) else "width"))
            names.append(f"from .model_{j} import Model{j}")
        (pkg / "__init__.py").write_text("\n".join(names) + "\n")
        written += per_pkg + 2
        for j in range(2):
            width = 32 + 16 * (j % 4)
            if (k, j) == (0, 0):
                width = 48  # the model's head expects 64: wrong in pkg_0/model_0.py
            classes = 10 + j % 3
            if (k, j) == (0, 1):
                classes += 1  # wrong in the script
            (root / "scripts" / f"train_{k}_{j}.py").write_text(SCRIPT.format(k=k, j=j, width=width, classes=classes))
            written += 1
    i = 0
    while written < files:
        (root / "utils" / f"util_{i}.py").write_text(UTIL)
        written += 1
        i += 1
    model_line = MODEL.format(j=0, width=0, classes=0, head_in="64").splitlines().index("        return self.head(x)") + 1
    script_line = SCRIPT.splitlines().index("        logits = out.view(args.batch_size, {classes})") + 1
    bugs = [(os.path.join("pkg_0", "model_0.py"), model_line), (os.path.join("scripts", "train_0_1.py"), script_line)]
    return sorted(bugs)


FINDING = re.compile(r"^(?:\./)?(?P<path>[^:]+):(?P<row>\d+):\d+: (?P<code>[A-Z]+\d+)")


def flake8(root: Path, plugin: bool) -> tuple[float, list[tuple[str, int]], str]:
    """One flake8 run over the project: with the plugin (``--select=E,F,W,SHP``) or with the
    plugin taken out of discovery (``flake8_overhead.py``'s launcher), as the baseline."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from flake8_overhead import LAUNCHER

    mode, select = ("keep", "E,F,W,SHP") if plugin else ("drop", "E,F,W")
    args = [sys.executable, "-c", LAUNCHER, mode, f"--select={select}", "."]
    t0 = time.perf_counter()
    p = subprocess.run(args, cwd=root, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    found = sorted((m["path"], int(m["row"])) for m in map(FINDING.match, p.stdout.splitlines()) if m and m["code"].startswith("SHP"))
    return dt, found, p.stdout + p.stderr


def in_process(root: Path) -> tuple[float, float, int, int, list[str]]:
    """Every file checked by the core in this process (no cache, no solver), once with the
    scripts shared and once with each file running its scripts itself: the two times, the script
    runs of the shared pass, the files, and the files whose findings differ."""
    from shape_lint import _core

    files = sorted(p for p in root.rglob("*.py") if ".shape_lint_cache" not in p.parts)
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in files]

    def run(share: bool) -> tuple[float, int, list]:
        t0 = time.perf_counter()
        runs, out = 0, []
        for path, text in texts:
            findings, undecided, stats = _core.check_source_stats(text, path, {"share_scripts": share})
            runs += stats["script_runs"]
            out.append((findings, undecided))
        return time.perf_counter() - t0, runs, out

    shared, runs, got = run(True)
    alone, _, want = run(False)
    differ = [os.path.relpath(p, root) for (p, _), a, b in zip(texts, got, want) if a != b]
    return shared, alone, runs, len(texts), differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--write", metavar="DIR", help="generate into DIR and keep it")
    args = ap.parse_args()
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    tmp = None
    if args.write:
        root = Path(args.write)
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
    else:
        tmp = tempfile.mkdtemp(prefix="shape-lint-project-")
        root = Path(tmp)
    try:
        bugs = generate(root, args.files)
        n = sum(1 for _ in root.rglob("*.py"))
        flake8(root, plugin=False)  # warm-up: flake8's own imports and caches
        base, _, _ = flake8(root, plugin=False)
        cold, found_cold, out_cold = flake8(root, plugin=True)
        warm, found_warm, out_warm = flake8(root, plugin=True)
        # one model file edited (outside pkg_0, whose bug stays): every results-cache entry
        # misses, the scripts that do not load the file come from the script results
        edited = root / "pkg_1" / "model_1.py"
        if not edited.exists():
            edited = root / "pkg_0" / "model_2.py"
        edited.write_text(edited.read_text() + "# edited\n")
        after, found_after, out_after = flake8(root, plugin=True)
        print(f"files: {n}")
        print(f"flake8 without the plugin: {base:.2f} s (1.00x)")
        print(f"cold (no cache):          {cold:.2f} s ({cold / base:.2f}x the baseline)")
        print(f"warm (cache):             {warm:.2f} s ({warm / base:.2f}x the baseline)")
        print(f"one model file edited:    {after:.2f} s ({after / base:.2f}x the baseline, {after / cold:.2f}x cold)")
        print(f"warm / cold: {warm / cold:.3f}")
        print(f"findings cold: {found_cold}")
        print(f"findings warm: {found_warm}")
        print(f"findings after the edit: {found_after}")
        ok = found_cold == bugs and found_warm == bugs and found_after == bugs
        print(f"planted bugs {bugs}: {'found, the same cold and warm' if ok else 'NOT as expected'}")
        if not ok:
            print(out_cold[-3000:])
            print(out_warm[-3000:])
            print(out_after[-3000:])
        shared, alone, runs, checked, differ = in_process(root)
        scripts = sum(1 for _ in (root / "scripts").glob("*.py"))
        print(f"core in this process, {checked} files (no cache, no solver):")
        print(f"  scripts shared:           {shared:.2f} s, {runs} script runs ({scripts} scripts)")
        print(f"  each file runs its own:   {alone:.2f} s ({alone / shared:.2f}x)")
        same = not differ and runs <= scripts
        print(f"  findings of every file: {'identical' if not differ else 'DIFFERENT in ' + ', '.join(differ[:10])}")
        return 0 if ok and same else 1
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
