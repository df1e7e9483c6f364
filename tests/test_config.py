"""Configuration files, validation and ruff-style rule selection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shape_lint import config
from shape_lint.config import ConfigError, RuleSelection, Settings

KNOWN = ["SHP001", "SHP101", "SHP102", "SHP201", "SHP901", "SHP902"]
RULES = [{"code": c, "default_enabled": not c.startswith("SHP9")} for c in KNOWN]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, **kw) -> Settings:
    return config.load_settings(cwd=tmp_path, known_codes=KNOWN, **kw)


# ---------------------------------------------------------------------------------------------
# Discovery


def test_pyproject_section_found_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nselect = ["SHP1"]\nmax-paths = 9\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    s = load(sub)
    assert s.select == ("SHP1",)
    assert s.max_paths == 9
    assert s.source == tmp_path / "pyproject.toml"
    assert s.project_root == tmp_path


def test_pyproject_without_section_is_skipped(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nignore = ["SHP101"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    assert config.find_config_file(tmp_path / "sub") == tmp_path / "pyproject.toml"
    assert load(tmp_path / "sub").ignore == ("SHP101",)


def test_nearest_file_wins_and_dotfile_first(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nignore = ["SHP101"]\n')
    write(tmp_path / "sub" / "shape-lint.toml", 'ignore = ["SHP102"]\n')
    assert load(tmp_path / "sub").ignore == ("SHP102",)
    write(tmp_path / "sub" / ".shape-lint.toml", 'ignore = ["SHP201"]\n')
    assert load(tmp_path / "sub").ignore == ("SHP201",)
    write(tmp_path / "sub" / "pyproject.toml", '[tool.shape-lint]\nignore = ["SHP001"]\n')
    assert load(tmp_path / "sub").ignore == ("SHP201",)


def test_standalone_file_has_no_tool_prefix(tmp_path):
    write(tmp_path / "shape-lint.toml", '[tool.shape-lint]\nselect = ["SHP1"]\n')
    with pytest.raises(ConfigError, match="unknown key 'tool'"):
        load(tmp_path)


def test_no_config_gives_defaults(tmp_path):
    s = load(tmp_path)
    assert s.select is None and s.ignore == () and s.source is None
    assert s.respect_gitignore is True and s.may_fail is False
    assert ".git" in s.all_excludes and "venv" in s.all_excludes and "__pycache__" in s.all_excludes


def test_explicit_config_path_and_isolated(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nignore = ["SHP101"]\n')
    other = write(tmp_path / "conf" / "custom.toml", 'ignore = ["SHP102"]\nmay-fail = true\n')
    s = load(tmp_path, config=str(other))
    assert s.ignore == ("SHP102",) and s.may_fail is True
    assert s.project_root == other.parent
    assert load(tmp_path, isolated=True).ignore == ()
    with pytest.raises(ConfigError, match="no such file"):
        load(tmp_path, config=str(tmp_path / "missing.toml"))


def test_explicit_pyproject_reads_tool_table(tmp_path):
    p = write(tmp_path / "x" / "pyproject.toml", '[tool.shape-lint]\nmay-fail = true\n')
    assert load(tmp_path, config=str(p)).may_fail is True


def test_inline_overrides(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nmax-paths = 3\n')
    s = load(tmp_path, overrides=["max-paths = 50", 'output-format = "json"'])
    assert s.max_paths == 50 and s.output_format == "json"
    with pytest.raises(ConfigError, match="--config"):
        load(tmp_path, overrides=["max-paths = = 5"])


def test_all_keys(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        """
[tool.shape-lint]
select = ["SHP1", "SHP001"]
ignore = ["SHP102"]
extend-select = ["SHP901"]
exclude = ["gen"]
extend-exclude = ["*_pb2.py"]
respect-gitignore = false
may-fail = true
max-paths = 64
timeout-ms = 0
output-format = "sarif"

[tool.shape-lint.per-file-ignores]
"tests/*" = ["SHP1"]
"__init__.py" = ["SHP001", "SHP201"]
""",
    )
    s = load(tmp_path)
    assert s.select == ("SHP1", "SHP001")
    assert s.ignore == ("SHP102",)
    assert s.extend_select == ("SHP901",)
    assert s.exclude == ("gen",)
    assert s.all_excludes == ("gen", "*_pb2.py")
    assert s.respect_gitignore is False
    assert s.may_fail is True and s.max_paths == 64 and s.timeout_ms == 0
    assert s.output_format == "sarif"
    assert dict(s.per_file_ignores) == {"tests/*": ("SHP1",), "__init__.py": ("SHP001", "SHP201")}
    assert s.core_options() == {"may_fail": True, "max_paths": 64, "timeout_ms": 0}


def test_solver_switch(tmp_path):
    assert load(tmp_path).solver is True
    write(tmp_path / "pyproject.toml", "[tool.shape-lint]\nsolver = false\n")
    s = load(tmp_path)
    assert s.solver is False
    assert s.core_options() == {"may_fail": False, "solver": False}
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nsolver = "off"\n')
    with pytest.raises(ConfigError, match="'solver'.*boolean"):
        load(tmp_path)


# ---------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ("selct = []", ["unknown key 'selct'"]),
        ("may_fail = true", ["unknown key 'may_fail'", "did you mean 'may-fail'"]),
        ('select = "SHP1"', ["'select'", "array"]),
        ("select = [1]", ["'select'", "code prefix"]),
        ('select = ["SHP7"]', ["'select'", "SHP7"]),
        ('ignore = ["E501"]', ["'ignore'", "E501"]),
        ('extend-select = ["shp1"]', ["'extend-select'", "shp1"]),
        ('ignore = ["SHP1011"]', ["SHP1011"]),
        ('may-fail = "yes"', ["'may-fail'", "boolean"]),
        ("respect-gitignore = 1", ["'respect-gitignore'", "boolean"]),
        ("max-paths = 0", ["'max-paths'", "positive"]),
        ("max-paths = true", ["'max-paths'", "integer"]),
        ('max-paths = "5"', ["'max-paths'", "integer"]),
        ("timeout-ms = -1", ["'timeout-ms'", "non-negative"]),
        ("timeout-ms = 1.5", ["'timeout-ms'", "integer"]),
        ('output-format = "xml"', ["'output-format'", "xml", "concise"]),
        ('exclude = "build"', ["'exclude'", "array of strings"]),
        ('per-file-ignores = ["a"]', ["'per-file-ignores'", "table"]),
        ('per-file-ignores = {"a.py" = "SHP1"}', ["'per-file-ignores'", "a.py", "array"]),
        ('per-file-ignores = {"a.py" = ["X1"]}', ["'per-file-ignores'", "X1"]),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path, body, needles):
    path = write(tmp_path / "pyproject.toml", f"[tool.shape-lint]\n{body}\n")
    with pytest.raises(ConfigError) as info:
        load(tmp_path)
    msg = str(info.value)
    assert str(path) in msg
    for needle in needles:
        assert needle in msg


def test_invalid_toml(tmp_path):
    path = write(tmp_path / "shape-lint.toml", "select = [\n")
    with pytest.raises(ConfigError, match="invalid TOML") as info:
        load(tmp_path)
    assert str(path) in str(info.value)


def test_selector_validation_uses_the_registry_by_default():
    # The real registry knows SHP101; a made-up family does not exist.
    assert config.validate_selector("SHP101", config._known_codes(None), "x") == "SHP101"
    with pytest.raises(ConfigError):
        config.validate_selector("SHP8", config._known_codes(None), "x")


# ---------------------------------------------------------------------------------------------
# Selection semantics (ruff's)


def enabled(settings: Settings, **cli) -> set[str]:
    sel = RuleSelection.from_settings(settings, rules=RULES, **cli)
    return {c for c in KNOWN if sel.is_enabled(c)}


def S(**kw) -> Settings:
    return Settings(**kw)


def test_default_is_everything_but_opt_in():
    assert enabled(S()) == {"SHP001", "SHP101", "SHP102", "SHP201"}


def test_select_prefix():
    assert enabled(S(select=("SHP1",))) == {"SHP101", "SHP102"}
    assert enabled(S(select=("SHP101", "SHP2"))) == {"SHP101", "SHP201"}


def test_ignore_beats_select_at_equal_specificity():
    assert enabled(S(select=("SHP1",), ignore=("SHP1",))) == set()
    assert enabled(S(select=("SHP101",), ignore=("SHP101",))) == set()


def test_most_specific_wins():
    assert enabled(S(select=("SHP101",), ignore=("SHP1",))) == {"SHP101"}
    assert enabled(S(select=("SHP1",), ignore=("SHP101",))) == {"SHP102"}
    assert enabled(S(select=("SHP",), ignore=("SHP10",))) == {"SHP001", "SHP201"}


def test_extend_select_adds():
    assert enabled(S(select=("SHP1",), extend_select=("SHP201",))) == {"SHP101", "SHP102", "SHP201"}
    assert enabled(S(extend_select=("SHP2",))) == {"SHP001", "SHP101", "SHP102", "SHP201"}


def test_opt_in_needs_an_explicit_shp9_selector():
    assert "SHP901" not in enabled(S(select=("SHP",)))
    assert "SHP901" not in enabled(S(select=("ALL",)))
    assert {"SHP901", "SHP902"} <= enabled(S(extend_select=("SHP9",)))
    assert enabled(S(select=("SHP901",))) == {"SHP901"}
    assert enabled(S(extend_select=("SHP9",), ignore=("SHP902",))) >= {"SHP901"}
    assert "SHP902" not in enabled(S(extend_select=("SHP9",), ignore=("SHP902",)))


def test_cli_layer_over_config():
    base = S(select=("SHP1",), ignore=("SHP102",))
    # --select replaces the config's selection (and starts afresh).
    assert enabled(base, cli_select=["SHP2"]) == {"SHP201"}
    # --ignore applies on top of the config's selection.
    assert enabled(base, cli_ignore=["SHP101"]) == set()
    # --extend-select adds to it; the config's ignore (an earlier layer) is overridden.
    assert enabled(base, cli_extend_select=["SHP102"]) == {"SHP101", "SHP102"}


def test_unknown_codes_follow_prefixes():
    sel = RuleSelection.from_settings(S(select=("SHP1",)), rules=RULES)
    assert sel.is_enabled("SHP150")
    assert not sel.is_enabled("SHP250")
    assert not RuleSelection.from_settings(S(), rules=RULES).is_enabled("SHP950")


def test_per_file_ignores(tmp_path):
    s = S(
        per_file_ignores=(("tests/*", ("SHP1",)), ("__init__.py", ("SHP001",))),
        project_root=tmp_path,
    )
    sel = RuleSelection.from_settings(s, rules=RULES)
    assert not sel.enabled_for(tmp_path / "tests" / "test_a.py", "SHP101")
    assert sel.enabled_for(tmp_path / "tests" / "test_a.py", "SHP201")
    assert sel.enabled_for(tmp_path / "src" / "a.py", "SHP101")
    assert not sel.enabled_for(tmp_path / "deep" / "pkg" / "__init__.py", "SHP001")
    assert sel.enabled_for(tmp_path / "deep" / "pkg" / "mod.py", "SHP001")
    # The command line replaces the config's per-file-ignores.
    sel2 = RuleSelection.from_settings(s, rules=RULES, cli_per_file_ignores=[("*.py", ["SHP2"])])
    assert sel2.enabled_for(tmp_path / "tests" / "test_a.py", "SHP101")
    assert not sel2.enabled_for(tmp_path / "tests" / "test_a.py", "SHP201")


def test_matches_any(tmp_path):
    root = tmp_path
    assert config.matches_any(root / "a" / "venv", ["venv"], root)
    assert config.matches_any(root / "a" / "x_pb2.py", ["*_pb2.py"], root)
    assert config.matches_any(root / "gen" / "x.py", ["gen/*"], root)
    assert not config.matches_any(root / "src" / "gen" / "x.py", ["gen/*"], root)
    assert config.matches_any(root / "src" / "gen" / "x.py", ["*/gen/*"], root)
    assert config.matches_any(root / "x.py", [str(root / "*.py")], root)
    assert not config.matches_any(root / "x.py", ["y.py"], root)


def test_parse_per_file_ignores_arg():
    assert config.parse_per_file_ignores_arg(["tests/*:SHP101,SHP102", "a.py:SHP2"]) == [
        ("tests/*", ["SHP101", "SHP102"]),
        ("a.py", ["SHP2"]),
    ]
    assert config.parse_per_file_ignores_arg(["a.py:SHP1,b.py:SHP2"]) == [
        ("a.py", ["SHP1"]),
        ("b.py", ["SHP2"]),
    ]
    with pytest.raises(ConfigError):
        config.parse_per_file_ignores_arg(["SHP101"])


def test_relative_cwd_is_absolutised(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.shape-lint]\nmay-fail = true\n')
    monkeypatch.chdir(tmp_path)
    assert config.load_settings(cwd=Path("."), known_codes=KNOWN).project_root == Path(
        os.path.abspath(tmp_path)
    )
