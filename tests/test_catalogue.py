"""The precondition catalogue (tests/differential/catalogue.py, issue 9 item 3).

- every family's `mined` text occurs where its origin says: in a Python-level raise/check of that
  torch function, or in torch's C++ binary (or the interpreter's, for CPython): mined, not invented;
- every family is provoked at least once by the differential suite (its fixed PROVOKE cases and
  generated cases), and no provoked case disagrees with torch.
The per-API family counts and the gap list (families provoked but never detected by the core) are
printed in the coverage table (tests/conftest.py). Skipped when torch is absent.
"""
from __future__ import annotations

import collections

import pytest

from differential import catalogue, harness

torch = pytest.importorskip("torch")
from differential import mine_catalogue  # noqa: E402 - needs torch installed

FAMILIES = catalogue.FAMILIES


def test_family_ids_are_unique():
    ids = collections.Counter(f.id for f in FAMILIES)
    assert not [i for i, n in ids.items() if n > 1]


@pytest.mark.parametrize("fam", FAMILIES, ids=[f.id for f in FAMILIES])
def test_family_is_mined_from_torch(fam):
    if fam.kind == "python":
        assert mine_catalogue.in_python(fam.mined, fam.origin), f"{fam.mined!r} is not in a raise of {fam.origin}"
    else:
        assert mine_catalogue.in_binary(fam.mined), f"{fam.mined!r} is not in the {fam.origin} binary"


def test_python_origins_exist():
    origins = {r.origin for r in mine_catalogue.python_raises()}
    missing = sorted({f.origin for f in FAMILIES if f.kind == "python"} - origins)
    # an origin may also be a function whose message is a string constant passed to a checker
    missing = [o for o in missing if not mine_catalogue.function_strings(o)]
    assert not missing, f"origins not found in torch's sources: {missing}"


def test_every_family_is_provoked():
    """Runs the specs whose results the differential test did not leave in TALLIES (a -k selection)."""
    import test_differential_api as diff
    from shape_lint import _core

    tallies = {api: t for api, (_, t) in diff.TALLIES.items()}
    for spec in diff.SPECS:
        if spec.api not in tallies:
            tallies[spec.api] = harness.run_spec(torch, _core, spec)
            diff.TALLIES[spec.api] = (spec.kind, tallies[spec.api])
    provoked = collections.Counter()
    disagree = []
    for api, t in tallies.items():
        for fid, verdicts in t.families.items():
            provoked[fid] += sum(verdicts.values())
            if verdicts["disagree"]:
                disagree.append(f"{api}: {fid}")
    unprovoked = [f.id for f in FAMILIES if not provoked[f.id]]
    assert not unprovoked, f"{len(unprovoked)} catalogued families never provoked: {', '.join(unprovoked)}"
    assert not disagree, f"provoked cases that disagree: {disagree}"


def test_classify_uses_the_api_families():
    assert catalogue.classify("F.interpolate", "Got 4D input, but linear mode needs 3D input") == "interpolate.mode_rank"
    assert catalogue.classify("torch.cat", "Got 4D input, but linear mode needs 3D input") is None
    assert catalogue.classify("nn.Sequential", "Expected more than 1 value per channel when training, got input size [1, 3]") == "batch_norm.one_value"
    assert catalogue.classify("torch.chunk", "not enough values to unpack (expected 3, got 2)") == "unpack.count"
