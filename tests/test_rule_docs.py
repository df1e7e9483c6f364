"""``docs/rules``: one page per rule (``SHPxxx.md``), generated from the rule units (the code,
name, documentation and message templates ``shape_lint._core.rules()`` gives), and an index. The
links of the JSON, SARIF and server outputs point at these pages (``output.rule_url``).

``python tests/test_rule_docs.py`` rewrites the pages; commit them with the rule's change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from shape_lint import cli, output

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "rules"
GENERATED = "<!-- generated from the rule unit by tests/test_rule_docs.py: do not edit -->\n\n"


def _rules() -> list[dict]:
    from shape_lint import _core

    return [dict(r) for r in _core.rules()]


def page(rule: dict) -> str:
    enabled = "on by default" if rule["default_enabled"] else "opt-in (select it by code)"
    facts = f"- Level: {output.level(rule)}\n- {enabled.capitalize()}\n- Status: {rule['status']}\n"
    body = cli._rule_markdown(rule)
    head, _, rest = body.partition("\n\n")
    return f"{GENERATED}{head}\n\n{facts}\n{rest}"


def index(rules: list[dict]) -> str:
    rows = [f"| [{r['code']}]({r['code']}.md) | {r['name']} | {output.level(r)} | "
            f"{'yes' if r['default_enabled'] else 'opt-in'} | {r['summary'].replace('|', chr(92) + '|')} |" for r in rules]
    return (f"{GENERATED}# Rules\n\nEach page is what `shape-lint rule CODE` prints. The level is the "
            "severity in SARIF, the editor and GitHub annotations.\n\n"
            "| Code | Name | Level | Enabled | Summary |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def expected() -> dict[str, str]:
    rules = _rules()
    pages = {f"{r['code']}.md": page(r) for r in rules}
    pages["README.md"] = index(rules)
    return pages


def test_the_pages_are_generated_from_the_rule_units():
    want = expected()
    have = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")}
    stale = sorted(set(have) - set(want))
    differ = sorted(n for n in want if have.get(n) != want[n])
    assert not stale and not differ, (
        f"docs/rules is out of date (stale {stale}, differ {differ}): run python tests/test_rule_docs.py"
    )


def _path(url: str) -> Path:
    parsed = urlparse(url)
    assert parsed.scheme == "file", url
    return Path(unquote(parsed.path))


def test_every_rule_link_resolves_to_its_page(monkeypatch):
    """Without configuration, a package that runs from this checkout (an editable install) links
    to the pages here, and an installed one links nowhere (never to a dead page); with the base
    set to the repository's pages, each rule's link is its page."""
    monkeypatch.delenv(output.DOCS_URL_ENV, raising=False)
    default = output.docs_base()
    assert default is None or _path(default) == DOCS
    monkeypatch.setenv(output.DOCS_URL_ENV, DOCS.as_uri())
    for r in _rules():
        url = output.rule_url(r["code"])
        assert url is not None and _path(url) == DOCS / f"{r['code']}.md"
        assert _path(url).read_text(encoding="utf-8").startswith(GENERATED)
    assert output.rule_url("") is None  # a syntax error has no page


def test_the_outputs_carry_the_links_and_the_base_is_configurable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(output.DOCS_URL_ENV, DOCS.as_uri())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("import torch\ny = torch.zeros(3, 4) @ torch.zeros(5, 6)\n")
    assert cli.main(["check", "--output-format", "json", "m.py"]) == 1
    (record,) = json.loads(capsys.readouterr().out)
    assert _path(record["url"]) == DOCS / "SHP101.md"
    assert cli.main(["check", "--output-format", "sarif", "m.py"]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert _path(run["tool"]["driver"]["rules"][0]["helpUri"]) == DOCS / "SHP101.md"
    assert _path(run["tool"]["driver"]["informationUri"]) == DOCS / "README.md"
    # a mirror of the repository: the environment, then the project's setting
    monkeypatch.setenv(output.DOCS_URL_ENV, "https://git.example.org/team/shape-lint/blob/main/docs/rules/")
    cli.main(["check", "--output-format", "json", "m.py"])
    assert json.loads(capsys.readouterr().out)[0]["url"] == "https://git.example.org/team/shape-lint/blob/main/docs/rules/SHP101.md"
    (tmp_path / "pyproject.toml").write_text('[tool.shape-lint]\ndocs-url = "https://docs.example.org/rules"\n')
    cli.main(["check", "--output-format", "json", "m.py"])
    assert json.loads(capsys.readouterr().out)[0]["url"] == "https://docs.example.org/rules/SHP101.md"
    (tmp_path / "pyproject.toml").write_text('[tool.shape-lint]\ndocs-url = "docs/rules"\n')
    assert cli.main(["check", "m.py"]) == 2
    assert "key 'docs-url': expected a URL" in capsys.readouterr().err


def test_no_link_points_at_a_dead_host():
    for path in [*(ROOT / "python" / "shape_lint").glob("*.py"), ROOT / "README.md"]:
        assert ".invalid" not in path.read_text(encoding="utf-8"), path


if __name__ == "__main__":
    DOCS.mkdir(parents=True, exist_ok=True)
    want = expected()
    for stale in set(p.name for p in DOCS.glob("*.md")) - set(want):
        (DOCS / stale).unlink()
    for name, text in want.items():
        (DOCS / name).write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {len(want)} pages to {DOCS.relative_to(ROOT)}\n")
