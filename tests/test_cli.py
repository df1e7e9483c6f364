"""``shape-lint`` CLI: in-process tests with a fake engine, then end-to-end via subprocess."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shape_lint import cli

RULES = [
    {"code": "SHP001", "name": "internal-error", "summary": "s", "doc": "## What it does\nInternal.\n",
     "default_enabled": True, "status": "stable"},
    {"code": "SHP101", "name": "matmul-shape-mismatch", "summary": "s",
     "doc": "## What it does\nChecks matmul.\n", "default_enabled": True, "status": "stable",
     "messages": ["{op}: {lhs} @ {rhs}: inner dimensions differ ({da} vs {db})",
                  "torch.bmm: {lhs} @ {rhs}: batch sizes differ"]},
    {"code": "SHP102", "name": "broadcast-mismatch", "summary": "s", "doc": "## What it does\nB.\n",
     "default_enabled": True, "status": "stable"},
    {"code": "SHP201", "name": "device-mismatch", "summary": "s", "doc": "## What it does\nD.\n",
     "default_enabled": True, "status": "stable"},
    {"code": "SHP901", "name": "may-fail", "summary": "s", "doc": "## What it does\nM.\n",
     "default_enabled": False, "status": "preview"},
]

MARKER = re.compile(r"(SHP\d{3})\(")


def fake_check(source, filename, options):
    """A stand-in engine: every ``SHPnnn(`` in the text is a finding of that code there."""
    out = []
    for row, line in enumerate(source.split("\n"), start=1):
        for m in MARKER.finditer(line):
            out.append(
                {
                    "code": m.group(1),
                    "name": next((r["name"] for r in RULES if r["code"] == m.group(1)), "x"),
                    "message": f"fake {m.group(1)} in {os.path.basename(filename)}",
                    "row": row,
                    "col": m.start() + 1,
                    "end_row": row,
                    "end_col": m.end() + 1,
                    "trace": ["made up"],
                    "condition": None,
                }
            )
    return out


@pytest.fixture
def engine(monkeypatch):
    calls = []

    def check(source, filename, options):
        calls.append({"source": source, "filename": filename, "options": dict(options)})
        return fake_check(source, filename, options)

    monkeypatch.setattr(cli, "_check_source", check)
    monkeypatch.setattr(cli, "_rules", lambda: [dict(r) for r in RULES])
    monkeypatch.delenv(cli.ENV_OUTPUT_FORMAT, raising=False)
    return calls


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def finding_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if re.search(r":\d+:\d+: SHP", ln)]


# ---------------------------------------------------------------------------------------------
# Basics and exit codes


def test_concise_output_and_exit_code(engine, proj, capsys):
    write(proj / "m.py", "x = 1\ny = SHP101(x)\n")
    code, out, err = run(capsys, "check", "m.py")
    assert code == 1
    assert finding_lines(out) == ["m.py:2:5: SHP101 fake SHP101 in m.py"]
    assert out.endswith("Found 1 error.\n")
    assert err == ""


def test_clean_exit_zero_and_exit_zero_flag(engine, proj, capsys):
    write(proj / "ok.py", "x = 1\n")
    assert run(capsys, "check", "ok.py")[:2] == (0, "All checks passed!\n")
    write(proj / "bad.py", "SHP101(x)\n")
    assert run(capsys, "check", "--exit-zero", "bad.py")[0] == 0


def test_default_path_is_cwd(engine, proj, capsys):
    write(proj / "pkg" / "a.py", "SHP101(x)\n")
    write(proj / "pkg" / "b.pyi", "SHP102(x)\n")
    write(proj / "notes.txt", "SHP101(x)\n")
    code, out, _ = run(capsys, "check")
    assert code == 1
    assert finding_lines(out) == [
        "pkg/a.py:1:1: SHP101 fake SHP101 in a.py",
        "pkg/b.pyi:1:1: SHP102 fake SHP102 in b.pyi",
    ]


def test_core_receives_absolute_filename_and_options(engine, proj, capsys):
    write(proj / "m.py", "x\n")
    run(capsys, "check", "--may-fail", "--max-paths", "7", "--timeout-ms", "30", "m.py")
    assert engine[0]["filename"] == str(proj / "m.py")
    assert engine[0]["options"] == {"may_fail": True, "max_paths": 7, "timeout_ms": 30}
    run(capsys, "check", "--no-solver", "m.py")
    assert engine[1]["options"] == {"may_fail": False, "solver": False}


def test_missing_path_is_exit_2_but_others_are_still_checked(engine, proj, capsys):
    write(proj / "m.py", "SHP101(x)\n")
    code, out, err = run(capsys, "check", "m.py", "nope.py")
    assert code == 2
    assert "error: nope.py: No such file or directory" in err
    assert "m.py:1:1: SHP101" in out


def test_usage_error_is_exit_2(engine, proj, capsys):
    code, _, err = run(capsys, "check", "--output-format", "xml")
    assert code == 2 and "xml" in err
    code, _, err = run(capsys, "check", "--select", "SHP7")
    assert code == 2 and err.startswith("error:") and "SHP7" in err
    assert run(capsys)[0] == 2


def test_engine_exception_becomes_shp001(engine, proj, capsys, monkeypatch):
    def boom(source, filename, options):
        raise RuntimeError("kaput\nsecond line")

    monkeypatch.setattr(cli, "_check_source", boom)
    write(proj / "m.py", "x = 1\n")
    code, out, _ = run(capsys, "check", "m.py")
    assert code == 1
    assert finding_lines(out) == ["m.py:1:1: SHP001 shape-lint internal error: RuntimeError: kaput"]


def test_malformed_finding_becomes_shp001(engine, proj, capsys, monkeypatch):
    monkeypatch.setattr(cli, "_check_source", lambda s, f, o: [{"code": "SHP101"}])
    write(proj / "m.py", "x = 1\n")
    code, out, _ = run(capsys, "check", "m.py")
    assert code == 1 and "SHP001 shape-lint internal error: malformed finding" in out


def test_many_files_in_parallel(engine, proj, capsys):
    for i in range(25):
        write(proj / f"f{i:02d}.py", "pass\n" * i + "SHP101(x)\n")
    code, out, _ = run(capsys, "check", ".")
    lines = finding_lines(out)
    assert code == 1 and len(lines) == 25
    assert lines == sorted(lines)
    assert lines[3] == "f03.py:4:1: SHP101 fake SHP101 in f03.py"


def test_version_and_rule(engine, capsys):
    code, out, _ = run(capsys, "version")
    assert code == 0 and re.fullmatch(r"shape-lint \S+\n", out)
    code, out, _ = run(capsys, "rule", "SHP101")
    assert code == 0
    assert out.startswith("# matmul-shape-mismatch (SHP101)\n\n## What it does\nChecks matmul.")
    code, out, _ = run(capsys, "rule", "matmul-shape-mismatch")
    assert code == 0 and "(SHP101)" in out
    code, out, _ = run(capsys, "rule", "--all")
    assert code == 0 and all(f"({r['code']})" in out for r in RULES)
    code, out, _ = run(capsys, "rule", "SHP101", "--output-format", "json")
    assert json.loads(out)["name"] == "matmul-shape-mismatch"
    code, _, err = run(capsys, "rule", "SHP999")
    assert code == 2 and "SHP999" in err


def test_rule_lists_its_message_templates_after_the_doc(engine, capsys):
    code, out, _ = run(capsys, "rule", "SHP101")
    assert code == 0
    assert out == (
        "# matmul-shape-mismatch (SHP101)\n\n## What it does\nChecks matmul.\n"
        "\n## Messages\n"
        "- `{op}: {lhs} @ {rhs}: inner dimensions differ ({da} vs {db})`\n"
        "- `torch.bmm: {lhs} @ {rhs}: batch sizes differ`\n"
        "\n## Where sizes came from\n"
        "Where the analysis knows where the size a message is about came from, the message ends with it, "
        "e.g. `(2304 = 64·6·6 from pool (line 9), flattened at line 16)`; `--output-format full` shows "
        "the whole chain, a step deeper per line.\n"
    )
    # a rule without templates has no Messages section
    code, out, _ = run(capsys, "rule", "SHP102")
    assert code == 0 and "## Messages" not in out
    code, out, _ = run(capsys, "rule", "--all")
    assert out.count("## Messages") == 1


def test_rule_messages_are_the_registry_templates(capsys):
    rules = {r["code"]: r for r in cli._rules()}
    assert all(r["messages"] for r in rules.values())
    code, out, _ = run(capsys, "rule", "SHP101")
    assert code == 0
    doc, messages = out.split("\n## Messages\n")
    messages, _, origins = messages.partition("\n## Where sizes came from\n")
    assert "2304 = 64·6·6" in origins  # (a shape error's: the origin chain it ends with)
    assert doc.rstrip("\n").endswith(rules["SHP101"]["doc"].rstrip("\n"))
    assert messages.splitlines() == [f"- `{m}`" for m in rules["SHP101"]["messages"]]
    linear = "{who}input {input} does not fit Linear(in_features={in_features}): last dim {last}"
    assert f"- `{linear} != {{in_features}}`" in messages.splitlines()


# ---------------------------------------------------------------------------------------------
# `shape-lint api`: the registry of modelled APIs


def _p(name, kind="positional", default=None, read=True):
    return {"name": name, "kind": kind, "default": default, "read": read}


APIS = [
    {"name": "torch.Tensor.view", "kind": "method", "params": [_p("shape", "var_positional")],
     "call_params": [], "twin": None, "checks": ["SHP101"]},
    {"name": "torch.cat", "kind": "function", "params": [_p("tensors"), _p("dim", default="0")],
     "call_params": [], "twin": None, "checks": []},
    {"name": "torch.nn.Linear", "kind": "module",
     "params": [_p("in_features"), _p("out_features"), _p("bias", default="True"),
                _p("device", default="None", read=False), _p("dtype", "keyword", "None")],
     "call_params": [_p("input")], "twin": "torch.nn.functional.linear", "checks": ["SHP101"]},
    {"name": "torch.nn.functional.relu", "kind": "function",
     "params": [_p("input"), _p("inplace", default="False", read=False)], "call_params": [],
     "twin": "torch.nn.ReLU", "checks": []},
    {"name": "torch.relu", "kind": "function", "params": [_p("input")], "call_params": [],
     "twin": None, "checks": []},
]


@pytest.fixture
def registry(engine, monkeypatch):
    aliases = {"torch.concat": "torch.cat", "torch.nn.modules.linear.Linear": "torch.nn.Linear"}
    monkeypatch.setattr(cli, "_apis", lambda: [dict(a) for a in APIS])
    monkeypatch.setattr(cli, "_api_resolve", aliases.get)


def test_api_prints_the_signature_ignored_params_twin_and_checks(registry, capsys):
    code, out, _ = run(capsys, "api", "nn.Linear")
    assert code == 0
    assert out.splitlines()[0] == "torch.nn.Linear (module)"
    assert "torch.nn.Linear(in_features, out_features, bias=True, ~device=None, *, dtype=None)" in out
    assert "torch.nn.Linear(...)(input)" in out
    assert re.search(r"ignored: +device ", out)
    assert re.search(r"twin: +torch.nn.functional.linear", out)
    assert re.search(r"checks: +SHP101 matmul-shape-mismatch", out)
    assert "Unknown" in out


@pytest.mark.parametrize(
    ("name", "qualified"),
    [("torch.nn.Linear", "torch.nn.Linear"), ("Linear", "torch.nn.Linear"), ("F.relu", "torch.nn.functional.relu"),
     ("Tensor.view", "torch.Tensor.view"), ("torch.cat", "torch.cat"), ("cat", "torch.cat"),
     ("nn.functional.relu", "torch.nn.functional.relu"), ("torch.concat", "torch.cat"),
     ("torch.nn.modules.linear.Linear", "torch.nn.Linear")],
)
def test_api_accepts_qualified_short_and_alias_names(registry, capsys, name, qualified):
    code, out, err = run(capsys, "api", name)
    assert code == 0, err
    assert f"{qualified} (" in out
    if name in ("torch.concat", "torch.nn.modules.linear.Linear"):
        assert out.startswith(f"({name} resolves to {qualified})\n")


def test_api_method_signature_reads_as_a_call_on_a_tensor(registry, capsys):
    code, out, _ = run(capsys, "api", "Tensor.view")
    assert code == 0 and re.search(r"method: +tensor.view\(\*shape\)", out)


def test_api_unknown_name_is_exit_1_with_suggestions(registry, capsys):
    code, out, err = run(capsys, "api", "nn.Linar")
    assert code == 1 and out == ""
    assert "nn.Linar (torch.nn.Linar) is not modelled" in err
    assert "did you mean: torch.nn.Linear?" in err
    code, _, err = run(capsys, "api", "nn.Foo")
    assert code == 1 and "not modelled" in err and "did you mean" not in err


def test_api_ambiguous_bare_name_lists_the_candidates(registry, capsys):
    code, out, err = run(capsys, "api", "relu")
    assert code == 1 and out == ""
    assert "ambiguous" in err and "torch.relu" in err and "torch.nn.functional.relu" in err


def test_api_all_lists_one_a_line_and_json(registry, capsys):
    code, out, _ = run(capsys, "api", "--all")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == len(APIS)
    assert "module    torch.nn.Linear(in_features, out_features, bias=True, ~device=None, *, dtype=None)(input)" in lines
    assert "method    torch.Tensor.view(*shape)" in lines
    code, out, _ = run(capsys, "api", "--all", "--output-format", "json")
    assert code == 0 and [a["name"] for a in json.loads(out)] == [a["name"] for a in APIS]
    code, out, _ = run(capsys, "api", "F.relu", "--output-format", "json")
    data = json.loads(out)
    assert code == 0 and [a["name"] for a in data] == ["torch.nn.functional.relu"]
    assert data[0]["params"][1] == {"name": "inplace", "kind": "positional", "default": "False", "read": False}
    code, _, err = run(capsys, "api")
    assert code == 2 and "--all" in err


# ---------------------------------------------------------------------------------------------
# Selection


def test_select_ignore_extend_select(engine, proj, capsys):
    write(proj / "m.py", "SHP101(a)\nSHP102(b)\nSHP201(c)\nSHP901(d)\n")

    def codes(*flags):
        _, out, _ = run(capsys, "check", *flags, "m.py")
        return [ln.split()[1] for ln in finding_lines(out)]

    assert codes() == ["SHP101", "SHP102", "SHP201"]
    assert codes("--select", "SHP1") == ["SHP101", "SHP102"]
    assert codes("--select", "SHP1", "--ignore", "SHP102") == ["SHP101"]
    assert codes("--select", "SHP1,SHP2", "--ignore=SHP1") == ["SHP201"]
    assert codes("--ignore", "SHP1", "--select", "SHP101") == ["SHP101"]
    assert codes("--select", "SHP") == ["SHP101", "SHP102", "SHP201"]
    assert codes("--extend-select", "SHP9") == ["SHP101", "SHP102", "SHP201", "SHP901"]
    assert codes("--select", "SHP901") == ["SHP901"]


def test_config_selection_and_cli_override(engine, proj, capsys):
    write(proj / "pyproject.toml", '[tool.shape-lint]\nselect = ["SHP2"]\nextend-select = ["SHP9"]\n')
    write(proj / "m.py", "SHP101(a)\nSHP201(c)\nSHP901(d)\n")
    _, out, _ = run(capsys, "check", "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP201", "SHP901"]
    _, out, _ = run(capsys, "check", "--select", "SHP1", "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP101"]
    _, out, _ = run(capsys, "check", "--isolated", "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP101", "SHP201"]


def test_per_file_ignores(engine, proj, capsys):
    write(proj / "pyproject.toml", '[tool.shape-lint.per-file-ignores]\n"tests/*" = ["SHP101"]\n')
    write(proj / "tests" / "t.py", "SHP101(a)\nSHP201(b)\n")
    write(proj / "src" / "s.py", "SHP101(a)\n")
    _, out, _ = run(capsys, "check", ".")
    assert finding_lines(out) == [
        "src/s.py:1:1: SHP101 fake SHP101 in s.py",
        "tests/t.py:2:1: SHP201 fake SHP201 in t.py",
    ]
    _, out, _ = run(capsys, "check", "--per-file-ignores", "src/*:SHP1", ".")
    assert [ln.split(":")[0] for ln in finding_lines(out)] == ["tests/t.py", "tests/t.py"]


def test_bad_config_exit_2(engine, proj, capsys):
    write(proj / "pyproject.toml", '[tool.shape-lint]\nmax-paths = "many"\n')
    write(proj / "m.py", "SHP101(a)\n")
    code, out, err = run(capsys, "check", "m.py")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "max-paths" in err and "pyproject.toml" in err
    assert run(capsys, "check", "--isolated", "m.py")[0] == 1


def test_config_file_and_inline_override(engine, proj, capsys):
    conf = write(proj / "ci" / "lint.toml", 'ignore = ["SHP101"]\n')
    write(proj / "m.py", "SHP101(a)\nSHP102(b)\n")
    _, out, _ = run(capsys, "check", "--config", str(conf), "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP102"]
    _, out, _ = run(capsys, "check", "--config", 'ignore = ["SHP102"]', "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP101"]
    assert run(capsys, "check", "--config", "missing.toml", "m.py")[0] == 2


# ---------------------------------------------------------------------------------------------
# noqa


@pytest.mark.parametrize(
    ("comment", "silenced"),
    [
        ("# noqa", True),
        ("# NOQA", True),
        ("# noqa:SHP101", True),
        ("# noqa: SHP101", True),
        ("# noqa: SHP101,SHP102", True),
        ("# noqa: E501 SHP101", True),
        ("# noqa: SHP1", True),  # prefix, as in flake8
        ("# noqa: SHP", True),
        ("# noqa: SHP102", False),
        ("# noqa: shp101", False),  # flake8 compares the codes case-sensitively
        ("# noqa : SHP102", True),  # not the code form: a bare noqa
        ("#noqa", False),
        ("# type: ignore", False),
    ],
)
def test_inline_noqa_like_flake8(engine, proj, capsys, comment, silenced):
    write(proj / "m.py", f"y = SHP101(x)  {comment}\n")
    code, out, _ = run(capsys, "check", "m.py")
    assert (finding_lines(out) == []) is silenced
    assert code == (0 if silenced else 1)


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "# noqa:SHP101", "# noqa: SHP1", "# noqa: shp101", "# NoQA: E1,SHP10 X", "# noqa : E1",
     "# noqa:, SHP101", "x # noqa: SHP101 because", "#noqa", "# noqa:SHP101,,SHP102"],
)
def test_is_inline_ignored_matches_flake8(comment):
    from flake8.violation import Violation

    line = f"y = f(x)  {comment}\n"
    for code in ("SHP101", "SHP102", "SHP001"):
        v = Violation(code, "m.py", 1, 1, "msg", line)
        assert cli.is_inline_ignored(code, line) == v.is_inline_ignored(False), (code, comment)


def test_noqa_line_mapping_matches_flake8():
    from flake8.processor import FileProcessor

    lines = textwrap.dedent(
        '''\
        x = f(
            1,
        )  # noqa
        s = """
        abc
        """  # noqa: SHP101
        t = (1 +
             2)
        y = 2 \\
            + 3
        '''
    ).splitlines(keepends=True)
    opts = argparse.Namespace(hang_closing=False, indent_size=4, max_line_length=79,
                              max_doc_length=None, verbose=0, disable_noqa=False)
    expected = FileProcessor("-", opts, lines=lines)._noqa_line_mapping
    ours = cli.noqa_line_mapping(lines)
    assert {k: v[0] for k, v in ours.items()} == expected
    assert ours[4][1] == 6  # noqa_row of a finding inside the string


def test_noqa_line_mapping_up_to_a_line_stops_after_its_logical_line():
    lines = ['s = """a\n', "b\n", '"""  # noqa\n', "y = 2\n", "t = '''unterminated\n"]
    assert cli.noqa_line_mapping(lines) == {}  # the tokenizer fails at the end
    head = cli.noqa_line_mapping(lines, upto=2)
    assert sorted(head) == [1, 2, 3] and head[2] == ('s = """a\nb\n"""  # noqa\n', 3)
    whole = cli.noqa_line_mapping(lines[:4])
    assert {k: v for k, v in whole.items() if k <= 3} == head and cli.noqa_line_mapping(lines[:4], upto=4) == whole


def test_noqa_covers_multiline_string_token(engine, proj, capsys):
    write(proj / "m.py", 's = """\nSHP101(\n"""  # noqa: SHP101\nSHP102(x)\n')
    _, out, _ = run(capsys, "check", "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == ["SHP102"]


def test_noqa_row_in_json_points_at_end_of_token(engine, proj, capsys):
    write(proj / "m.py", 's = """\nSHP101(\n"""\n')
    _, out, _ = run(capsys, "check", "--output-format", "json", "m.py")
    (rec,) = json.loads(out)
    assert rec["location"]["row"] == 2 and rec["noqa_row"] == 3


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("# flake8: noqa", []),
        ("  # FLAKE8=NOQA", []),
        ("# flake8: noqa: SHP102", []),  # flake8 skips the whole file regardless of codes
        ("# ruff: noqa", []),
        ("# ruff: noqa: SHP101", ["SHP102"]),
        ("# ruff: noqa: SHP101, SHP102", []),
        ("# ruff: noqa: SHP1", []),
        ("# Ruff: NoQa", []),  # any case, as flake8's pattern
        ("# fLaKe8: nOqA", []),
        ("x = 1  # flake8: noqa", ["SHP101", "SHP102"]),  # not on its own line: ignored
        ("", ["SHP101", "SHP102"]),
    ],
)
def test_file_level_noqa(engine, proj, capsys, header, expected):
    write(proj / "m.py", f"{header}\nSHP101(a)\nSHP102(b)\n")
    _, out, _ = run(capsys, "check", "m.py")
    assert [ln.split()[1] for ln in finding_lines(out)] == expected


def test_says_noqa_agrees_with_a_case_insensitive_search():
    for text in ["", "x = 1\n", "# noqa", "# NoQa: SHP1", "NOQA", "nOqA", "no qa", "noq\u0430",
                 "\u212a noqa", "s = '\u00e9'  # NOQA", "\ud800 noqa", "\ud800"]:
        assert cli._says_noqa(text) is bool(re.search("noqa", text, re.IGNORECASE)), text


def test_the_text_is_read_for_noqa_only_when_something_is_reported(engine, proj, capsys, monkeypatch):
    # most files have nothing to report and need no scan of their text; an exempt file's
    # findings and syntax errors are still dropped
    scanned = []
    says = cli._says_noqa
    monkeypatch.setattr(cli, "_says_noqa", lambda text: scanned.append(text) or says(text))
    write(proj / "clean.py", "x = 1  # noqa\n")
    write(proj / "exempt.py", "# flake8: noqa\nSHP101(a)\n")
    write(proj / "broken.py", "# flake8: noqa\ndef f(:\n")
    code, out, _ = run(capsys, "check", "--jobs", "1", "clean.py", "exempt.py", "broken.py")
    assert (code, finding_lines(out), "SyntaxError" in out) == (0, [], False)
    assert sorted(t.splitlines()[1] for t in scanned) == ["SHP101(a)", "def f(:"]
    write(proj / "broken.py", "def f(:\n")
    code, out, _ = run(capsys, "check", "broken.py")
    assert code == 1 and "SyntaxError" in out


def test_ignore_noqa(engine, proj, capsys):
    write(proj / "m.py", "# flake8: noqa\nSHP101(a)  # noqa\n")
    assert finding_lines(run(capsys, "check", "m.py")[1]) == []
    code, out, _ = run(capsys, "check", "--ignore-noqa", "m.py")
    assert code == 1 and len(finding_lines(out)) == 1


# ---------------------------------------------------------------------------------------------
# stdin


def _stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_stdin_with_filename(engine, proj, capsys, monkeypatch):
    _stdin(monkeypatch, b"x = 1\nSHP101(x)\n")
    code, out, _ = run(capsys, "check", "--stdin-filename", "pkg/mod.py", "-")
    assert code == 1
    assert finding_lines(out) == ["pkg/mod.py:2:1: SHP101 fake SHP101 in mod.py"]
    assert engine[0]["filename"] == str(proj / "pkg" / "mod.py")


def test_stdin_without_filename_and_flake8_alias(engine, proj, capsys, monkeypatch):
    _stdin(monkeypatch, b"SHP101(x)\n")
    assert finding_lines(run(capsys, "check", "-")[1]) == ["-:1:1: SHP101 fake SHP101 in -"]
    _stdin(monkeypatch, b"SHP101(x)\n")
    out = run(capsys, "check", "--stdin-display-name", "a.py", "-")[1]
    assert finding_lines(out)[0].startswith("a.py:1:1:")
    # --stdin-filename alone means stdin too.
    _stdin(monkeypatch, b"SHP101(x)\n")
    assert finding_lines(run(capsys, "check", "--stdin-filename", "b.py")[1])[0].startswith("b.py:")


def test_stdin_per_file_ignores_and_force_exclude(engine, proj, capsys, monkeypatch):
    _stdin(monkeypatch, b"SHP101(x)\n")
    code, out, _ = run(capsys, "check", "--per-file-ignores", "tests/*:SHP101",
                       "--stdin-filename", "tests/t.py", "-")
    assert code == 0 and finding_lines(out) == []
    _stdin(monkeypatch, b"SHP101(x)\n")
    code, out, _ = run(capsys, "check", "--force-exclude", "--stdin-filename", "venv/x.py", "-")
    assert code == 0 and finding_lines(out) == []


# ---------------------------------------------------------------------------------------------
# Output selection


def test_output_format_flag_env_and_config(engine, proj, capsys, monkeypatch):
    write(proj / "m.py", "SHP101(x)\n")
    out = run(capsys, "check", "--output-format", "json", "m.py")[1]
    assert json.loads(out)[0]["code"] == "SHP101"
    monkeypatch.setenv(cli.ENV_OUTPUT_FORMAT, "json-lines")
    out = run(capsys, "check", "m.py")[1]
    assert json.loads(out.splitlines()[0])["code"] == "SHP101"
    out = run(capsys, "check", "--output-format", "github", "m.py")[1]
    assert out.startswith("::error title=shape-lint (SHP101),file=m.py,line=1,col=1,")
    monkeypatch.setenv(cli.ENV_OUTPUT_FORMAT, "bogus")
    assert run(capsys, "check", "m.py")[0] == 2
    monkeypatch.delenv(cli.ENV_OUTPUT_FORMAT)
    write(proj / "pyproject.toml", '[tool.shape-lint]\noutput-format = "full"\n')
    out = run(capsys, "check", "m.py")[1]
    assert " --> m.py:1:1" in out and "^" in out


def test_json_and_sarif_from_cli(engine, proj, capsys):
    write(proj / "m.py", "y = SHP101(x)\n")
    code, out, _ = run(capsys, "check", "--output-format", "json", "m.py")
    (rec,) = json.loads(out)
    assert code == 1
    assert rec["filename"] == str(proj / "m.py")
    assert rec["location"] == {"row": 1, "column": 5}
    code, out, _ = run(capsys, "check", "--output-format", "sarif", "m.py")
    doc = json.loads(out)
    assert code == 1
    res = doc["runs"][0]["results"][0]
    assert res["ruleId"] == "SHP101"
    assert doc["runs"][0]["tool"]["driver"]["rules"][0]["fullDescription"]["text"].startswith("## What")
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.py"


def test_output_file_and_statistics(engine, proj, capsys):
    write(proj / "m.py", "SHP101(x)\nSHP101(y)\nSHP201(z)\n")
    code, out, _ = run(capsys, "check", "-o", "reports/out.txt", "m.py")
    assert code == 1 and out == ""
    assert "m.py:3:1: SHP201" in (proj / "reports" / "out.txt").read_text()
    code, out, _ = run(capsys, "check", "--statistics", "m.py")
    assert code == 1
    assert out.splitlines() == ["2\tSHP101\t[ ] matmul-shape-mismatch", "1\tSHP201\t[ ] device-mismatch"]


def test_show_shapes(engine, proj, capsys, monkeypatch):
    from shape_lint import _core

    write(proj / "m.py", "x = 1\n")
    monkeypatch.delattr(_core, "show_shapes", raising=False)
    code, _, err = run(capsys, "check", "--show-shapes", "m.py")
    assert code == 2 and "not available in this build" in err
    monkeypatch.setattr(_core, "show_shapes", lambda src, name: [(1, "x: int")], raising=False)
    code, out, _ = run(capsys, "check", "--show-shapes", "m.py")
    assert code == 0 and out == "m.py:1: x: int\n"


# ---------------------------------------------------------------------------------------------
# File discovery and reading


def test_default_excludes(engine, proj, capsys):
    for d in (".git", ".venv", "venv", "__pycache__", "build", "dist", "node_modules",
              "lib/site-packages", ".tox", ".mypy_cache"):
        write(proj / d / "x.py", "SHP101(x)\n")
    write(proj / "src" / "ok.py", "SHP101(x)\n")
    _, out, _ = run(capsys, "check", ".")
    assert [ln.split(":")[0] for ln in finding_lines(out)] == ["src/ok.py"]


def test_exclude_extend_exclude_and_force_exclude(engine, proj, capsys):
    write(proj / "gen" / "g.py", "SHP101(x)\n")
    write(proj / "a_pb2.py", "SHP101(x)\n")
    write(proj / "venv" / "v.py", "SHP101(x)\n")
    write(proj / "src.py", "SHP101(x)\n")

    def files(*flags):
        _, out, _ = run(capsys, "check", *flags)
        return sorted({ln.split(":")[0] for ln in finding_lines(out)})

    assert files(".") == ["a_pb2.py", "gen/g.py", "src.py"]
    assert files("--extend-exclude", "gen,*_pb2.py", ".") == ["src.py"]
    # --exclude replaces the defaults: venv is back.
    assert files("--exclude", "gen", ".") == ["a_pb2.py", "src.py", "venv/v.py"]
    # Named files are checked unless --force-exclude.
    assert files("venv/v.py", "gen/g.py", "--extend-exclude", "gen") == ["gen/g.py", "venv/v.py"]
    forced = files("--force-exclude", "--extend-exclude", "gen", "venv/v.py", "gen/g.py", "src.py")
    assert forced == ["src.py"]


def test_config_exclude(engine, proj, capsys):
    write(proj / "pyproject.toml", '[tool.shape-lint]\nextend-exclude = ["legacy"]\n')
    write(proj / "legacy" / "old.py", "SHP101(x)\n")
    write(proj / "new.py", "SHP101(x)\n")
    _, out, _ = run(capsys, "check")
    assert [ln.split(":")[0] for ln in finding_lines(out)] == ["new.py"]


def test_gitignore(engine, proj, capsys):
    (proj / ".git").mkdir()
    write(proj / ".gitignore", "generated/\n*_tmp.py\n")
    write(proj / "pkg" / ".gitignore", "local.py\n!keep_tmp.py\n")
    write(proj / "generated" / "g.py", "SHP101(x)\n")
    write(proj / "a_tmp.py", "SHP101(x)\n")
    write(proj / "pkg" / "local.py", "SHP101(x)\n")
    write(proj / "pkg" / "keep_tmp.py", "SHP101(x)\n")
    write(proj / "pkg" / "mod.py", "SHP101(x)\n")

    def files(*flags):
        _, out, _ = run(capsys, "check", *flags)
        return sorted({ln.split(":")[0] for ln in finding_lines(out)})

    assert files(".") == ["pkg/keep_tmp.py", "pkg/mod.py"]
    assert files("pkg") == ["pkg/keep_tmp.py", "pkg/mod.py"]
    # a directory named on the command line is checked though a .gitignore above ignores it
    # (a folder under ~/.pyenv, whose repository ignores /versions), unless --force-exclude
    assert files("generated") == ["generated/g.py"]
    assert files("--force-exclude", "generated") == []
    assert files("--no-respect-gitignore", ".") == [
        "a_tmp.py", "generated/g.py", "pkg/keep_tmp.py", "pkg/local.py", "pkg/mod.py"]
    write(proj / "pyproject.toml", "[tool.shape-lint]\nrespect-gitignore = false\n")
    assert "generated/g.py" in files(".")
    assert "generated/g.py" not in files("--respect-gitignore", ".")


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="git is not installed")
def test_gitignore_agrees_with_git(tmp_path):
    """Discovery skips what git itself leaves out (`git ls-files --others --exclude-standard`),
    for anchored, nested, `**`, class, escape and negation patterns at two depths."""
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write(root / ".gitignore", textwrap.dedent("""\
        # a comment
        /top_only.py
        build/
        *_gen.py
        !keep_gen.py
        **/cache/*.py
        a/**/deep.py
        [xy]_*.py
        ?.py
        \\#hash.py
        docs/*.py
        spaced.py   
        """))
    write(root / "pkg" / ".gitignore", "local.py\n!kept_local_gen.py\n/rooted.py\n")
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    write(root / ".git" / "info" / "exclude", "excluded_*.py\n")
    paths = [
        "top_only.py", "pkg/top_only.py", "build/b.py", "pkg/build/b.py", "x_gen.py",
        "keep_gen.py", "pkg/keep_gen.py", "cache/c.py", "pkg/cache/c.py", "pkg/cache/sub/c.py",
        "a/deep.py", "a/b/c/deep.py", "b/deep.py", "x_1.py", "z_1.py", "q.py", "qq.py",
        "#hash.py", "docs/d.py", "docs/sub/d.py", "spaced.py", "pkg/local.py",
        "pkg/sub/local.py", "pkg/kept_local_gen.py", "pkg/rooted.py", "pkg/sub/rooted.py",
        "excluded_1.py", "pkg/excluded_2.py", "plain.py", "pkg/plain.py",
    ]
    for rel in paths:
        write(root / rel, "x = 1\n")
    git = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout.split()
    expected = sorted(p for p in git if p.endswith(".py"))
    found = cli.discover([str(root)], cli.cfg.Settings(project_root=root), force_exclude=False)
    assert sorted(f.relative_to(root).as_posix() for f in found.files) == expected
    assert "plain.py" in expected and "keep_gen.py" in expected and "x_gen.py" not in expected


def test_check_start_up_imports_little(tmp_path):
    """A check of a repository imports none of the modules whose import was most of the CLI's
    start-up (`dataclasses` with `inspect`, `shutil` with `bz2` and `lzma`, `typing`, the
    `pathspec` package), nor `json` and `z3`, which only some runs need."""
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "build/\n")
    write(tmp_path / "a.py", "import torch\nx = torch.zeros(2, 3)\ny = x @ x.T\n")
    heavy = ("dataclasses", "inspect", "shutil", "typing", "pathspec", "json", "z3")
    code = ("import sys\nfrom shape_lint import cli\nrc = cli.main(['check', '-n', '.'])\n"
            f"print(rc, sorted(m for m in {heavy!r} if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "0 []", proc.stdout + proc.stderr


def test_encodings(engine, proj, capsys):
    (proj / "latin.py").write_bytes("# -*- coding: latin-1 -*-\ns = 'é'\nSHP101(s)\n".encode("latin-1"))
    (proj / "bom.py").write_bytes(b"\xef\xbb\xbfSHP101(x)\r\ny = 1\r\n")
    (proj / "broken.py").write_bytes(b"s = '\xff\xfe'\nSHP101(x)\n")
    code, out, err = run(capsys, "check", ".")
    assert code == 2  # the undecodable file is an error; the others are still checked
    assert finding_lines(out) == [
        "bom.py:1:1: SHP101 fake SHP101 in bom.py",
        "latin.py:3:1: SHP101 fake SHP101 in latin.py",
    ]
    assert err.splitlines() == [
        "error: broken.py: cannot decode as utf-8: line 1: byte 0xff: invalid start byte; "
        "save it as UTF-8 or declare its encoding (PEP 263)"
    ]
    sources = {os.path.basename(c["filename"]): c["source"] for c in engine}
    assert "s = 'é'" in sources["latin.py"]
    assert sources["bom.py"] == "SHP101(x)\ny = 1\n"
    assert "broken.py" not in sources


def test_undecodable_alone_is_exit_2_never_all_checks_passed(engine, proj, capsys):
    (proj / "broken.py").write_bytes(b"\xff\xfe\xfa\n")
    code, out, err = run(capsys, "check", "broken.py")
    assert code == 2 and out == "" and engine == []
    (line,) = err.splitlines()
    assert line.startswith("error: broken.py: cannot decode as utf-8: line 1: byte 0xff")


def test_undecodable_stdin_is_exit_2(engine, proj, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# coding: ascii\ns = '\xe9'\n")))
    code, out, err = run(capsys, "check", "--stdin-filename", "x.py", "-")
    assert code == 2 and out == ""
    assert err == "error: x.py: cannot decode as ascii: line 2: byte 0xe9: ordinal not in range(128)\n"


def test_unknown_or_contradicted_encoding_is_exit_2(engine, proj, capsys):
    (proj / "a.py").write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    (proj / "b.py").write_bytes(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    code, out, err = run(capsys, "check", "a.py", "b.py")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "error: a.py: unknown encoding: no-such-codec",
        "error: b.py: a UTF-8 BOM and a coding declaration of another encoding",
    ]


def test_unreadable_file_exit_2(engine, proj, capsys):
    if os.geteuid() == 0:
        # root reads everything; make the path a dangling symlink instead.
        (proj / "gone.py").symlink_to(proj / "nowhere.py")
        target = "."
    else:  # pragma: no cover
        p = write(proj / "gone.py", "x\n")
        p.chmod(0)
        target = "gone.py"
    write(proj / "ok.py", "x\n")
    code, _, err = run(capsys, "check", target)
    assert code == 2 and "error: gone.py" in err


# ---------------------------------------------------------------------------------------------
# --jobs


def test_jobs_one_checks_in_the_main_thread_in_order(engine, proj, capsys, monkeypatch):
    import threading

    for i in range(4):
        write(proj / f"m{i}.py", f"SHP101(x{i})\n")
    threads = []
    check = cli._check_source

    def spy(source, filename, options):
        threads.append(threading.current_thread())
        return check(source, filename, options)

    monkeypatch.setattr(cli, "_check_source", spy)
    code, sequential, _ = run(capsys, "check", "--jobs", "1", ".")
    assert code == 1 and len(finding_lines(sequential)) == 4
    assert threads == [threading.main_thread()] * 4
    assert [c["filename"] for c in engine] == [str(proj / f"m{i}.py") for i in range(4)]
    threads.clear()
    code, parallel, _ = run(capsys, "check", "--jobs", "3", ".")
    assert parallel == sequential  # the files' order, whichever thread finished first
    assert threading.main_thread() not in threads and len(set(threads)) <= 3


def test_jobs_default_is_every_core_and_largest_files_start_first(engine, proj, capsys, monkeypatch):
    import threading

    sizes = [10, 400, 50, 300, 20]
    for i, n in enumerate(sizes):
        write(proj / f"m{i}.py", "x = 1\n" + "#" * n + "\n")
    monkeypatch.setattr(cli, "default_jobs", lambda: 2)
    first_two = threading.Barrier(2, timeout=30)
    started = []
    check = cli._check_source

    def spy(source, filename, options):
        started.append((Path(filename).name, threading.current_thread()))
        if len(started) <= 2:
            first_two.wait()  # both threads hold one file: the two largest
        return check(source, filename, options)

    monkeypatch.setattr(cli, "_check_source", spy)
    assert run(capsys, "check", ".")[0] == 0
    assert {name for name, _ in started[:2]} == {"m1.py", "m3.py"}
    assert len({t for _, t in started}) == 2


def test_jobs_must_be_positive(engine, proj, capsys):
    write(proj / "m.py", "x = 1\n")
    code, _, err = run(capsys, "check", "--jobs", "0", "m.py")
    assert code == 2 and "--jobs: expected a positive integer" in err


def test_default_jobs_counts_the_usable_cores():
    assert 1 <= cli.default_jobs() <= (os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------
# End to end: the real `shape-lint` executable


def shape_lint(*args, cwd, stdin=None, env=None):
    exe = Path(sys.executable).with_name("shape-lint")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]
    return subprocess.run(
        [*cmd, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )


def patched_shape_lint(*args, cwd, stdin=None):
    """The real CLI in a fresh interpreter, with the fake engine behind the seam."""
    driver = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_cli
        from shape_lint import cli
        cli._check_source = test_cli.fake_check
        cli._rules = lambda: test_cli.RULES
        sys.exit(cli.main(sys.argv[1:]))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", driver, *args], cwd=cwd, input=stdin, capture_output=True,
        text=True, timeout=120,
    )


def test_e2e_version_and_help(tmp_path):
    r = shape_lint("version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("shape-lint ")
    r = shape_lint("check", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--output-format" in r.stdout
    r = shape_lint("rule", "SHP101", cwd=tmp_path)
    assert r.returncode == 0 and "(SHP101)" in r.stdout and "## What it does" in r.stdout


def test_e2e_api_against_the_real_registry(tmp_path):
    r = shape_lint("api", "--all", "--output-format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    apis = json.loads(r.stdout)
    assert apis and all(isinstance(a["name"], str) and isinstance(a["params"], list) for a in apis)
    assert [a["name"] for a in apis] == sorted(a["name"] for a in apis)
    r = shape_lint("api", "--all", cwd=tmp_path)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(apis)
    r = shape_lint("api", "torchvision.models.resnet.resnet18", cwd=tmp_path)
    assert r.returncode == 0 and "torchvision.models.resnet18 (module)" in r.stdout
    r = shape_lint("api", "nn.NoSuchModule", cwd=tmp_path)
    assert r.returncode == 1 and "not modelled" in r.stderr


def test_e2e_syntax_errors_and_new_syntax_do_not_crash(tmp_path):
    write(tmp_path / "broken.py", "def f(:\n    return\n")
    write(tmp_path / "pep695.py",
          "type Pair[T] = tuple[T, T]\ndef first[T](p: Pair[T]) -> T:\n    return p[0]\n")
    write(tmp_path / "fstr.py", 'x = 1\ny = f"{"nested"}{x!r:>{10}}"\n')
    r = shape_lint("check", ".", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert r.returncode in (0, 1), r.stderr
    assert "SHP001" not in r.stdout
    # the parser's errors come from the analysis's own parse, as `_core.syntax_errors` gives them
    from shape_lint import _core

    message = _core.syntax_errors("def f(:\n    return\n")[0][0]
    assert f"broken.py:1:7: SyntaxError: {message}" in r.stdout
    assert "pep695.py" not in r.stdout and "fstr.py" not in r.stdout
    r = shape_lint("check", "-", cwd=tmp_path, stdin="def broken(:\n")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.startswith("-:1:12: SyntaxError: ")


def test_e2e_json_and_sarif_parse(tmp_path):
    write(tmp_path / "m.py", "import torch\nx = torch.zeros(3, 4)\n")
    r = shape_lint("check", "--output-format", "json", "m.py", cwd=tmp_path)
    assert isinstance(json.loads(r.stdout), list)
    r = shape_lint("check", "--output-format", "sarif", ".", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert doc["version"] == "2.1.0" and doc["runs"][0]["tool"]["driver"]["name"] == "shape-lint"


def test_e2e_exit_codes_and_errors(tmp_path):
    write(tmp_path / "m.py", "x = 1\n")
    assert shape_lint("check", "m.py", cwd=tmp_path).returncode == 0
    r = shape_lint("check", "missing.py", cwd=tmp_path)
    assert r.returncode == 2 and "error:" in r.stderr
    write(tmp_path / "pyproject.toml", "[tool.shape-lint]\nselct = []\n")
    r = shape_lint("check", "m.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error:") and "selct" in r.stderr
    assert "Traceback" not in r.stderr
    r = shape_lint("check", "m.py", cwd=tmp_path, env={cli.ENV_OUTPUT_FORMAT: "nope"})
    assert r.returncode == 2


def test_e2e_findings_noqa_stdin_with_fake_engine(tmp_path):
    write(tmp_path / "m.py", "a = SHP101(x)\nb = SHP101(x)  # noqa: SHP101\nc = SHP101(x)  # noqa\n")
    r = patched_shape_lint("check", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[0] == "m.py:1:5: SHP101 fake SHP101 in m.py"
    r = patched_shape_lint("check", "--output-format", "json", "-", "--stdin-filename", "s.py",
                           cwd=tmp_path, stdin="SHP102(x)\n")
    assert r.returncode == 1
    assert [d["code"] for d in json.loads(r.stdout)] == ["SHP102"]
    r = patched_shape_lint("check", "--exit-zero", ".", cwd=tmp_path)
    assert r.returncode == 0 and "SHP101" in r.stdout


# ---------------------------------------------------------------------------------------------
# Edges a new user meets (issue 14): syntax errors, named paths under excluded folders, no files


def test_e2e_syntax_error_is_reported_like_ruff(tmp_path):
    """The parser's message, no code, exit 1 (the core has no findings for such a file)."""
    write(tmp_path / "broken.py", "import torch\nx = torch.zeros(3\n")
    r = shape_lint("check", "--no-cache", "broken.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    first = r.stdout.splitlines()[0]
    assert re.fullmatch(r"broken\.py:\d+:\d+: SyntaxError: .+", first), r.stdout
    assert "All checks passed" not in r.stdout
    r = shape_lint("check", "--no-cache", "--output-format", "json", "broken.py", cwd=tmp_path)
    (rec, *_) = json.loads(r.stdout)
    assert rec["code"] is None and rec["message"].startswith("SyntaxError: ") and rec["url"] is None


def test_syntax_errors_use_the_core_parser():
    from shape_lint import _core

    (msg, row, col, end_row, end_col), *_ = _core.syntax_errors("def f(:\n    return\n")
    assert (row, col) == (1, 7) and msg
    assert _core.syntax_errors("x = 1\n") == []
    assert _core.check_source("def f(:\n", "t.py") == []


def test_named_dot_folder_is_checked_unless_force_exclude(engine, proj, capsys):
    write(proj / ".venv" / "lib" / "m.py", "SHP101(x)\n")
    code, out, _ = run(capsys, "check", ".venv/lib")
    assert code == 1 and [ln.split(":")[0] for ln in finding_lines(out)] == [".venv/lib/m.py"]
    code, out, err = run(capsys, "check", "--force-exclude", ".venv/lib")
    assert code == 0 and finding_lines(out) == []
    assert err == "warning: No Python files found under the given path(s)\n"


def test_no_python_files_warns(engine, proj, capsys):
    write(proj / "data" / "notes.txt", "nothing\n")
    code, out, err = run(capsys, "check", "data")
    assert code == 0
    assert err == "warning: No Python files found under the given path(s)\n"
    write(proj / "data" / "m.py", "x = 1\n")
    code, out, err = run(capsys, "check", "data")
    assert code == 0 and err == ""
