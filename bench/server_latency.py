#!/usr/bin/env python3
"""Edit-to-diagnostics latency of ``shape-lint server``, through the real server over stdio.

A pygls client starts ``python -m shape_lint.cli server``, opens a generated, correct model
file of 300 lines (``scale.py``'s units, padded with comments), then makes ``--edits`` edits
one after another. Each edit replaces the last comment line with a definite bug
(``torch.zeros(2, 3) @ torch.zeros(4, 5)``) or back, so every edit changes the findings and
the benchmark can tell that the diagnostics it waits for are those of that edit: the time is
from sending ``didChange`` to receiving the ``publishDiagnostics`` of that document version
with the expected finding count (a wrong count stops the benchmark). It includes the server's
debounce (25 ms by default), the analysis (core + Z3 bridge + settings and noqa) and the
transport.

It prints the load average, the file's size, the median, p95 and min latency, each as ms and
as a ratio to the 100 ms target (below 1.0 meets it), and the core's own time on the same
text (``_core.analyze_source``, the median of as many runs) as a share of the median latency.

    python bench/server_latency.py                 # 40 edits
    python bench/server_latency.py --edits 6       # the quick form (tests/test_server_bench.py)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import build, units_for  # noqa: E402

TARGET_MS = 100.0
LINES = 300
BUG = "_edit_probe = torch.zeros(2, 3) @ torch.zeros(4, 5)\n"


def model_file(lines: int = LINES) -> str:
    src = build(units_for(lines))
    pad = max(1, lines - src.count("\n"))
    return src + "# padding\n" * pad


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


async def measure(edits: int, debounce_ms: int | None) -> tuple[list[float], str]:
    clean = model_file()
    buggy = clean[: clean.rindex("# padding\n")] + BUG
    published: dict[int | None, list[types.Diagnostic]] = {}
    arrived = asyncio.Event()
    client = LanguageClient("shape-lint-bench", "1")

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published[params.version] = list(params.diagnostics)
        arrived.set()

    async def wait_for(version: int, timeout: float = 60.0) -> list[types.Diagnostic]:
        deadline = time.perf_counter() + timeout
        while version not in published:
            arrived.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for version {version}")
            try:
                await asyncio.wait_for(arrived.wait(), left)
            except asyncio.TimeoutError:
                pass
        return published[version]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        path = root / "model.py"
        path.write_text(clean)
        uri = path.as_uri()
        await client.start_io(sys.executable, "-m", "shape_lint.cli", "server")
        options = {"debounceMs": debounce_ms} if debounce_ms is not None else None
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri(), initialization_options=options)
        )
        client.initialized(types.InitializedParams())
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=clean))
        )
        first = await wait_for(1)
        if first:
            raise SystemExit(f"the generated file is correct, yet the server reports: {[d.message for d in first]}")
        times = []
        for i in range(edits):
            version = i + 2
            text = buggy if i % 2 == 0 else clean
            t0 = time.perf_counter()
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            diags = await wait_for(version)
            times.append((time.perf_counter() - t0) * 1000)
            want = 1 if text is buggy else 0
            if len(diags) != want:
                raise SystemExit(f"edit {i}: expected {want} finding(s), got {[d.message for d in diags]}")
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return times, buggy


def core_ms(text: str, runs: int) -> float:
    from shape_lint import _core

    got = []
    for _ in range(runs):
        t0 = time.perf_counter()
        _core.analyze_source(text, "model.py")
        got.append((time.perf_counter() - t0) * 1000)
    return statistics.median(got)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--debounce-ms", type=int, default=None, help="the server's debounceMs (default: its own)")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    times, buggy = asyncio.run(measure(args.edits, args.debounce_ms))
    med, q95, low = statistics.median(times), p95(times), min(times)
    core = core_ms(buggy, max(3, min(args.edits, 15)))
    print(f"{LINES}-line model file, {len(times)} edits, each changing the findings (edit -> publishDiagnostics)")
    print(f"  median {med:7.1f} ms = {med / TARGET_MS:5.2f} x the {TARGET_MS:.0f} ms target")
    print(f"  p95    {q95:7.1f} ms = {q95 / TARGET_MS:5.2f} x target")
    print(f"  min    {low:7.1f} ms = {low / TARGET_MS:5.2f} x target")
    print(f"  the core alone (analyze_source): {core:.1f} ms = {core / med:.2f} of the median latency")
    print("target met (p95 below 100 ms)" if q95 < TARGET_MS else "target NOT met (p95 at or above 100 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
