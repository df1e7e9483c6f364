"""The torch oracle of origin chains: every number in the chain a shape error's message ends with
is the size torch computes where the chain says.

A finding of a ``SHP1xx`` rule carries ``origins``, the links of the chain of each size its
message is about (``rust/models/origins.rs``): ``2304 = 64·6·6 from pool (line 9), flattened at
line 16``, then ``64 from out_channels of conv2 (line 8)``, ``6 from pool (line 9) at line 15``,
``13 from conv2 (line 8) at line 15``, ... back to ``32 from torch.randn at line 21``. Each
fixture marked with a shape error runs under torch (``oracle_runner.py``, the same run as
``test_oracle.py``'s), which records the sizes every line of it makes and the sizes its layers
were built with (``size_recorder.py``). A link is then checked by its kind:

- ``written``/``output``: a tensor that the named function (``torch.randn``) or module (``pool``,
  ``features[2]``, an unnamed ``MaxPool2d``) made on that line has that size at that position;
- ``merged``: a tensor made on that line (the flatten or view) has that size there; on the line
  that raises (a view that cannot be made), the size is the product of its factors;
- ``product``: the size is the product of its factors (the sum of its terms, concatenated);
- ``said``: the named layer was built with that size (``out_channels``, ``out_features``,
  ``hidden_size``, ``proj_size``, ``embedding_dim``; twice it for a bidirectional RNN).

A symbolic size, a place in another file and a said size of another kind are not checked; the
last test makes sure that most links are.
"""
import re
from math import prod

import oracle_reports
import pytest

from shape_lint import _core

pytest.importorskip("torch")

FIXTURES_DIR = oracle_reports.FIXTURES_DIR
SHAPE_ERROR = re.compile(r"#\s*error:\s*SHP1\d\d\b")
FIXTURES = sorted(p for p in FIXTURES_DIR.glob("*/*.py") if SHAPE_ERROR.search(p.read_text(encoding="utf-8")))
SAID = re.compile(r"^\S+ from (?:(\d+)·)?(\w+) of (.+?) \((?:line \d+|[^()]*:\d+)\)(?:, bidirectional)?$")
PRODUCT = re.compile(r"^(\d+) = ((?:\d+)(?:(?:·| \+ )\d+)*)")

#: links checked, per fixture (the last test adds them up)
CHECKED = {}


def findings_of(path):
    return [f for f in _core.check_source(path.read_text(encoding="utf-8"), str(path)) if f["code"].startswith("SHP1")]


@pytest.fixture(scope="module")
def reports(request, tmp_path_factory):
    return oracle_reports.for_module(request, __name__, tmp_path_factory.mktemp("origins"))


def names_match(name, label):
    """A module's dotted name in its model (``layer1.0.conv1``) against the analyser's label
    of it (``conv1``, ``features[2]``, ``heads.cls``): the label is the name's tail."""
    dotted = re.sub(r"\[(\w+)\]", r".\1", label)
    # (`features[2]` of `features = nn.Sequential(...)` called itself: torch's name is `2`;
    # `model = nn.Conv2d(...)` called itself: torch's name is empty)
    if name == "":
        return "." not in dotted
    return name == dotted or name.endswith("." + dotted) or dotted.endswith("." + name)


def made_by(entry, by):
    """Whether a recorded tensor was made by what a link names: a function (``torch.randn``,
    ``F.max_pool2d``, ``view``) or a module (its label, or its class for an unnamed one)."""
    if entry["kind"] == "fn":
        return entry["name"] == by.rsplit(".", 1)[-1]
    return names_match(entry["name"], by) or entry["type"] == by


def check_link(link, report, row):
    """``None`` when the link cannot be checked here, else whether torch agrees. ``row``: the
    finding's line, where torch raises."""
    value = link["value"]
    if value is None:
        return None
    kind, text = link["kind"], link["text"]
    if kind == "merged" and link["place"] == "line %d" % row:
        # the view that raises there makes nothing: its size is the product of its factors
        kind = "product"
    if kind == "product":
        m = PRODUCT.match(text)
        if not m:
            return None
        terms = m.group(2).split(" + ")
        if len(terms) > 1:  # (a concatenation: a sum)
            return sum(int(t) for t in terms) == value if all(t.isdigit() for t in terms) else None
        factors = m.group(2).split("·")
        return None if not all(f.isdigit() for f in factors) else prod(int(f) for f in factors) == value
    if kind == "said":
        m = SAID.match(text)
        if not m or m.group(2) not in ("out_channels", "out_features", "hidden_size", "proj_size", "embedding_dim"):
            return None
        times, attr, label = int(m.group(1) or 1), m.group(2), m.group(3)
        built = [sizes[attr] * times for name, sizes in report.get("modules", {}).items() if names_match(name, label) and attr in sizes]
        # (a layer the program names by a variable, `conv = nn.Conv2d(...)` appended to a
        # list, has another name in its model: not checked)
        return value in built if built else None
    place = re.fullmatch(r"line (\d+)", link["place"] or "")
    if not place:
        return None
    line, pos = int(place.group(1)), link["pos"]
    made = [e for e in report.get("sizes", []) if e["line"] == line and len(e["shape"]) >= pos >= 1]
    if kind in ("written", "output"):
        named = [e for e in made if made_by(e, link["by"])]
        # (a module the program names by a variable, `for down in self.downs: x = down(x)`,
        # has another name in its model: any module called on that line)
        made = named or [e for e in made if e["kind"] == "module" and kind == "output"]
    return any(e["shape"][-pos] == value for e in made)


@pytest.mark.parametrize("path", FIXTURES, ids=oracle_reports.fixture_id)
def test_every_number_of_a_chain_is_the_size_torch_computes(path, reports):
    links = [(link, f["row"]) for f in findings_of(path) for link in f["origins"]]
    if not links:
        CHECKED[path] = (0, 0)
        return
    report = reports[path]
    if report.get("skip"):
        pytest.skip(report["skip"])
    assert "sizes" in report, "the runner recorded no sizes: %s" % report.get("error")
    verdicts = [(link, check_link(link, report, row)) for link, row in links]
    wrong = [link["text"] for link, ok in verdicts if ok is False]
    assert not wrong, "links torch does not agree with:\n%s\nrecorded: %s" % (
        "\n".join(wrong), [(e["line"], e["kind"], e["name"] or e["type"], e["shape"]) for e in report["sizes"]][:60])
    CHECKED[path] = (sum(1 for _, ok in verdicts if ok), len(links))


def test_most_links_are_checked():
    """The test above cannot pass by checking nothing: over the fixtures it ran, most links
    are checked against torch and many fixtures have a chain."""
    if len(CHECKED) < len(FIXTURES):
        pytest.skip("runs only with the whole oracle of origins (%d of %d fixtures ran)" % (len(CHECKED), len(FIXTURES)))
    checked = sum(c for c, _ in CHECKED.values())
    total = sum(n for _, n in CHECKED.values())
    with_chain = sum(1 for _, n in CHECKED.values() if n)
    print("origin links checked against torch: %d of %d, in %d fixtures" % (checked, total, with_chain))
    assert with_chain >= 80, with_chain
    assert checked >= 0.8 * total, (checked, total)
