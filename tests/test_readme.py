"""The README must agree with the code: the rule table, the set-up commands (and CI), the docs.

``python tests/test_readme.py`` rewrites the code table from the rule registry
(``shape_lint._core.rules()``); commit the result together with the new rule.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"

START, END = "<!-- codes:start -->", "<!-- codes:end -->"
HEADER = ["Code", "Name", "Summary", "Enabled"]

# The two set-up commands, exactly as a user copies them from the README.
INSTALL_COMMAND = (
    "python -m venv .venv && . .venv/bin/activate && pip install . "
    "&& flake8 --select=SHP examples/"
)
TEST_COMMAND = (
    ". .venv/bin/activate && pip install '.[test]' ../shared/wheels/torch-*.whl "
    "&& python -m pytest -q"
)
# The parts that set up the user's .venv; CI makes a throw-away venv of its own instead.
VENV_PARTS = {"python -m venv .venv", ". .venv/bin/activate"}


def _registry() -> list[dict]:
    from shape_lint import _core

    return [dict(r) for r in _core.rules()]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _row_of(rule: dict) -> list[str]:
    enabled = "yes" if rule["default_enabled"] else "opt-in"
    if rule["status"] != "stable":
        enabled += f" ({rule['status']})"
    return [f"[{rule['code']}](docs/rules/{rule['code']}.md)", rule["name"], rule["summary"], enabled]


def render_table(rules: list[dict]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rules:
        lines.append("| " + " | ".join(_cell(c) for c in _row_of(r)) + " |")
    return "\n".join(lines)


def _table_block(text: str) -> str:
    assert text.count(START) == 1 and text.count(END) == 1, "README needs exactly one code table"
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def parse_table(block: str) -> list[list[str]]:
    rows = []
    for line in block.strip().splitlines():
        line = line.strip()
        assert line.startswith("|") and line.endswith("|"), f"not a table row: {line!r}"
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line[1:-1])]
        cells = [re.sub(r"\\(.)", r"\1", c) for c in cells]
        rows.append(cells)
    assert rows and rows[0] == HEADER, f"table header must be {HEADER}, is {rows[:1]}"
    assert rows[1] and all(set(c) <= set("-:") and c for c in rows[1]), "missing |---| line"
    return rows[2:]


def _fenced_blocks(text: str, lang: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(rf"```{lang}\n(.*?)```", text, re.S)]


def _readme() -> str:
    return README.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------


def test_code_table_matches_the_rule_registry():
    rules = _registry()
    documented = parse_table(_table_block(_readme()))
    expected = [_row_of(r) for r in rules]
    missing = sorted({r[0] for r in expected} - {d[0] for d in documented})
    stale = sorted({d[0] for d in documented} - {r[0] for r in expected})
    assert documented == expected, (
        f"README code table is out of date (missing: {missing}, not in the registry: {stale}). "
        f"Run `python tests/test_readme.py` to rewrite it; it should read:\n\n"
        f"{START}\n{render_table(rules)}\n{END}\n"
    )


def test_every_rule_has_a_name_and_a_summary():
    for r in _registry():
        assert re.fullmatch(r"SHP\d{3}", r["code"]), r
        assert re.fullmatch(r"[a-z][a-z0-9-]*", r["name"]), r
        assert r["summary"].strip(), r


def test_setup_commands_appear_verbatim_in_the_readme():
    blocks = _fenced_blocks(_readme(), "sh")
    assert INSTALL_COMMAND in blocks, f"README lacks the install command block:\n{INSTALL_COMMAND}"
    assert TEST_COMMAND in blocks, f"README lacks the test command block:\n{TEST_COMMAND}"


@pytest.mark.parametrize("command", [INSTALL_COMMAND, TEST_COMMAND], ids=["install", "test"])
def test_ci_runs_what_the_readme_says(command):
    ci = CI.read_text(encoding="utf-8")
    code_lines = [ln.split("#", 1)[0].strip() if not ln.lstrip().startswith("#") else ""
                  for ln in ci.splitlines()]
    code = "\n".join(code_lines)
    for part in command.split(" && "):
        if part in VENV_PARTS:
            continue
        assert part in code, f".ci/run does not run the README's `{part}`"


def test_ci_runs_pytest_exactly_like_the_readme():
    ci = CI.read_text(encoding="utf-8")
    runs = re.findall(r"^\s*(python -m pytest\b.*?)(?:\s*\|\|.*)?$", ci, re.M)
    assert runs, ".ci/run does not run pytest"
    assert all(r.strip() == "python -m pytest -q" for r in runs), runs


def test_ci_script_is_strict_bash():
    ci = CI.read_text(encoding="utf-8")
    assert ci.startswith("#!/usr/bin/env bash\n") or ci.startswith("#!/bin/bash\n")
    assert "set -euo pipefail" in ci
    assert CI.stat().st_mode & 0o111, ".ci/run must be executable"


def test_configuration_example_is_valid():
    config = pytest.importorskip("shape_lint.config")
    examples = [b for b in _fenced_blocks(_readme(), "toml") if "[tool.shape-lint]" in b]
    assert examples, "README lacks a [tool.shape-lint] example"
    for block in examples:
        table = tomllib.loads(block)["tool"]["shape-lint"]
        config.settings_from_table(table, where="README")
        # SHP001 says a file was not checked: an example must not teach hiding it (issue 29)
        for key in ("ignore", "extend-ignore"):
            assert not any("SHP001".startswith(c) for c in table.get(key, [])), block
        for codes in table.get("per-file-ignores", {}).values():
            assert not any("SHP001".startswith(c) for c in codes), block


def test_ruff_external_setting_is_documented():
    blocks = _fenced_blocks(_readme(), "toml")
    ruff = [tomllib.loads(b) for b in blocks if "[tool.ruff.lint]" in b]
    assert ruff and ruff[0]["tool"]["ruff"]["lint"]["external"] == ["SHP"]
    assert "RUF100" in _readme() and "RUF102" in _readme()


def test_documented_flake8_options_exist():
    plugin_mod = pytest.importorskip("shape_lint.flake8_plugin")
    names: set[str] = set()

    class Manager:
        def add_option(self, *args, **kwargs):
            names.update(a for a in args if a.startswith("--"))

        def extend_default_ignore(self, codes):
            pass

        def extend_default_select(self, codes):
            pass

    plugin_mod.Plugin.add_options(Manager())
    documented = set(re.findall(r"--shp-[a-z-]+[a-z]", _readme()))
    assert documented, "README documents no --shp-* option"
    assert documented <= names, f"README documents unknown options: {documented - names}"
    assert names <= documented, f"README does not document: {names - documented}"


def test_documented_output_formats_exist():
    config = pytest.importorskip("shape_lint.config")
    section = _readme().split("## The `shape-lint` CLI", 1)[1].split("\n## ", 1)[0]
    bullet = section.split("**Output formats**", 1)[1].split("* **Exit codes**", 1)[0]
    documented = set(re.findall(r"`([a-z][a-z-]*)`", bullet))
    assert documented == set(config.OUTPUT_FORMATS), (documented, config.OUTPUT_FORMATS)


def test_layout_names_every_room():
    text = _readme()
    for room in ["rust/parse", "rust/ir", "rust/engine", "rust/value", "rust/shape", "rust/models",
                 "rust/rules", "rust/diagnostics", "python/shape_lint", "tests", "bench"]:
        assert f"`{room}`" in text, f"README layout lacks {room}"
        assert (ROOT / room).is_dir(), f"README names {room}, which does not exist"


def rewrite_table() -> bool:
    text = _readme()
    block = _table_block(text)
    new = render_table(_registry())
    if block == new:
        return False
    README.write_text(text.replace(f"{START}\n{block}\n{END}", f"{START}\n{new}\n{END}"),
                      encoding="utf-8")
    return True


if __name__ == "__main__":
    changed = rewrite_table()
    print("README code table " + ("rewritten" if changed else "already up to date"))
    sys.exit(0)
