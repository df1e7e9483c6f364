"""The flake8 plugin: unit tests with a fake engine, then end-to-end runs of real flake8."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shape_lint import flake8_plugin
from shape_lint.flake8_plugin import Plugin

MARKER = re.compile(r"(SHP\d{3})\(")


def fake_check(source, filename, options):
    """A stand-in engine: every ``SHPnnn(`` in the text is a finding of that code there."""
    out = []
    for row, line in enumerate(source.split("\n"), start=1):
        for m in MARKER.finditer(line):
            out.append(
                {
                    "code": m.group(1),
                    "name": "fake",
                    "message": f"fake {m.group(1)} finding",
                    "row": row,
                    "col": m.start() + 1,
                    "end_row": row,
                    "end_col": m.end() + 1,
                    "trace": [],
                    "condition": None,
                }
            )
    return out


@pytest.fixture(autouse=True)
def clean_state(monkeypatch):
    monkeypatch.setattr(Plugin, "_flake8_options", {})
    monkeypatch.setattr(flake8_plugin, "_PROJECT_CACHE", {})


@pytest.fixture
def engine(monkeypatch):
    calls = []

    def check(source, filename, options):
        calls.append({"source": source, "filename": filename, "options": dict(options)})
        return fake_check(source, filename, options)

    monkeypatch.setattr(flake8_plugin, "_check_source", check)
    return calls


def run_plugin(text: str, filename: str = "nowhere/m.py"):
    lines = text.splitlines(keepends=True)
    return list(Plugin(ast.parse(text), lines, filename).run())


# ---------------------------------------------------------------------------------------------
# Unit


def test_signature_makes_flake8_treat_it_as_a_tree_plugin():
    params = list(inspect.signature(Plugin).parameters)
    assert params == ["tree", "lines", "filename"]
    assert Plugin.name == "shape-lint"
    assert isinstance(Plugin.version, str) and Plugin.version


def test_run_yields_flake8_tuples_from_the_joined_lines(engine):
    text = "import torch\nx = SHP101(y)\n"
    results = run_plugin(text, filename="does/not/exist.py")
    assert results == [(2, 4, "SHP101 fake SHP101 finding", Plugin)]
    # The plugin analyses the lines flake8 gave it and never reads the (missing) file.
    assert engine[0]["source"] == text
    assert engine[0]["filename"] == "does/not/exist.py"


def test_column_is_zero_based_and_message_one_line(engine, monkeypatch):
    monkeypatch.setattr(
        flake8_plugin,
        "_check_source",
        lambda s, f, o: [{"code": "SHP101", "message": "two\nlines", "row": 3, "col": 1}],
    )
    assert run_plugin("x = 1\n") == [(3, 0, "SHP101 two lines", Plugin)]


def test_exception_becomes_one_shp001(monkeypatch):
    def boom(source, filename, options):
        raise ValueError("engine exploded\nwith detail")

    monkeypatch.setattr(flake8_plugin, "_check_source", boom)
    assert run_plugin("x = 1\n") == [
        (1, 0, "SHP001 shape-lint internal error: ValueError: engine exploded with detail", Plugin)
    ]


def test_malformed_finding_becomes_one_shp001(monkeypatch):
    monkeypatch.setattr(
        flake8_plugin,
        "_check_source",
        lambda s, f, o: [{"code": "SHP101", "message": "ok", "row": 1, "col": 1}, {"code": "SHP102"}],
    )
    (result,) = run_plugin("x = 1\n")
    assert result[:2] == (1, 0) and result[2].startswith("SHP001 shape-lint internal error: KeyError")


class FakeOptionManager:
    def __init__(self):
        self.options = {}
        self.default_ignore = []

    def add_option(self, *args, **kwargs):
        self.options[args[0]] = kwargs

    def extend_default_ignore(self, codes):
        self.default_ignore.extend(codes)


def test_add_options():
    om = FakeOptionManager()
    Plugin.add_options(om)
    assert set(om.options) == {
        "--shp-may-fail", "--shp-max-paths", "--shp-max-steps", "--shp-timeout-ms", "--shp-no-solver",
        "--shp-no-cache",
    }
    assert all(kw.get("parse_from_config") is True for kw in om.options.values())
    assert om.options["--shp-may-fail"]["action"] == "store_true"
    assert om.options["--shp-no-solver"]["action"] == "store_true"
    assert om.options["--shp-no-cache"]["action"] == "store_true"
    assert om.options["--shp-max-paths"]["type"] is int
    assert om.options["--shp-max-steps"]["type"] is int
    # the opt-in codes, and the analysis-incomplete notice, are off unless selected
    assert om.default_ignore == ["SHP9", "SHP002"]


def test_parse_options_reach_the_engine(engine):
    ns = type("NS", (), {"shp_may_fail": True, "shp_max_paths": 12, "shp_timeout_ms": None})()
    Plugin.parse_options(ns)
    run_plugin("x = 1\n")
    assert engine[0]["options"] == {"may_fail": True, "max_paths": 12}


def test_pyproject_settings_and_flake8_override(engine, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.shape-lint]\nmay-fail = true\nmax-paths = 5\ntimeout-ms = 100\n"
    )
    sub = tmp_path / "pkg" / "deep"
    sub.mkdir(parents=True)
    run_plugin("x = 1\n", filename=str(sub / "m.py"))
    assert engine[-1]["options"] == {"may_fail": True, "max_paths": 5, "timeout_ms": 100}
    ns = type("NS", (), {"shp_may_fail": None, "shp_max_paths": 40, "shp_timeout_ms": None})()
    Plugin.parse_options(ns)
    run_plugin("x = 1\n", filename=str(sub / "m.py"))
    assert engine[-1]["options"] == {"may_fail": True, "max_paths": 40, "timeout_ms": 100}


def test_solver_switch_from_flake8_and_pyproject(engine, tmp_path):
    ns = type("NS", (), {"shp_may_fail": None, "shp_max_paths": None, "shp_timeout_ms": None,
                         "shp_no_solver": True})()
    Plugin.parse_options(ns)
    run_plugin("x = 1\n")
    assert engine[-1]["options"] == {"solver": False}
    Plugin.parse_options(type("NS", (), {})())
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nsolver = false\n")
    run_plugin("x = 1\n", filename=str(tmp_path / "m.py"))
    assert engine[-1]["options"] == {"may_fail": False, "solver": False}


def test_pyproject_is_cached_per_directory(engine, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nmax-paths = 5\n")
    from shape_lint import config

    lookups = []
    real = config.find_config_file
    monkeypatch.setattr(config, "find_config_file", lambda p: lookups.append(p) or real(p))
    for name in ("a.py", "b.py", "c.py"):
        run_plugin("x = 1\n", filename=str(tmp_path / name))
    (tmp_path / "sub").mkdir()
    run_plugin("x = 1\n", filename=str(tmp_path / "sub" / "d.py"))
    assert len(lookups) == 2
    assert all(c["options"]["max_paths"] == 5 for c in engine)


def test_bad_pyproject_below_the_start_is_raised_not_shp001(engine, tmp_path):
    """A config only met while checking (below the paths flake8 was given) stops flake8 with
    one message naming the key, via flake8's PluginExecutionFailed; never SHP001 per file."""
    (tmp_path / "pyproject.toml").write_text('[tool.shape-lint]\nmax-paths = "lots"\n')
    with pytest.raises(flake8_plugin._ProjectConfigError) as info:
        run_plugin("x = SHP101(y)\n", filename=str(tmp_path / "m.py"))
    assert repr(info.value) == str(info.value)
    assert str(info.value).startswith(f"shape-lint configuration error: {tmp_path / 'pyproject.toml'}: ")
    assert "max-paths" in str(info.value)
    assert engine == []


class _Options:
    def __init__(self, filenames, stdin_display_name="stdin"):
        self.filenames = filenames
        self.stdin_display_name = stdin_display_name


def test_bad_pyproject_above_the_paths_is_one_startup_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nmax-path = 3\n")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    for filenames in (["src/m.py"], ["."], [], ["-"]):
        flake8_plugin._PROJECT_CACHE.clear()
        with pytest.raises(SystemExit) as info:
            Plugin.parse_options(_Options(filenames))
        assert info.value.code == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"flake8: error: shape-lint configuration error: {tmp_path / 'pyproject.toml'}: ")
        assert "unknown key 'max-path'" in line


def test_good_pyproject_passes_startup(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nmax-paths = 3\n")
    monkeypatch.chdir(tmp_path)
    Plugin.parse_options(_Options(["."]))
    assert flake8_plugin._project_options(str(tmp_path / "m.py"))["max_paths"] == 3


def test_plugin_does_no_noqa_handling(engine):
    # flake8 applies noqa; the plugin reports everything.
    assert len(run_plugin("x = SHP101(y)  # noqa\n")) == 1


def test_import_is_cheap():
    code = textwrap.dedent(
        """
        import sys, threading
        import shape_lint.flake8_plugin
        assert "z3" not in sys.modules, "z3 imported"
        assert threading.active_count() == 1, threading.enumerate()
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ---------------------------------------------------------------------------------------------
# End to end: real flake8


def flake8(*args, cwd, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, input=stdin, capture_output=True,
        text=True, timeout=120,
    )


def patched_flake8(*args, cwd, stdin=None):
    """Real flake8 in a fresh interpreter, with the fake engine behind the plugin's seam."""
    driver = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_flake8_plugin
        from shape_lint import flake8_plugin
        flake8_plugin._check_source = test_flake8_plugin.fake_check
        from flake8.main.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", driver, *args], cwd=cwd, input=stdin, capture_output=True,
        text=True, timeout=120,
    )


def test_e2e_registered_with_flake8(tmp_path):
    r = flake8("--version", cwd=tmp_path)
    assert r.returncode == 0 and "shape-lint:" in r.stdout


def test_e2e_select_shp_and_columns(tmp_path):
    (tmp_path / "m.py").write_text("import os\nx = SHP101(1)\n")
    r = patched_flake8("--select=SHP", "--jobs=1", "m.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == ["m.py:2:5: SHP101 fake SHP101 finding"]
    # Without --select, flake8's own codes show up too (F401 for `import os`).
    r = patched_flake8("--jobs=1", "m.py", cwd=tmp_path)
    assert "F401" in r.stdout and "SHP101" in r.stdout


def test_e2e_noqa_is_handled_by_flake8(tmp_path):
    (tmp_path / "m.py").write_text(
        "a = SHP101(1)  # noqa: SHP101\nb = SHP101(1)  # noqa: SHP102\nc = SHP101(1)  # noqa\n"
        "d = SHP101(1)  # noqa: SHP1\n"
    )
    r = patched_flake8("--select=SHP", "--jobs=1", "m.py", cwd=tmp_path)
    assert r.stdout.splitlines() == ["m.py:2:5: SHP101 fake SHP101 finding"]
    r = patched_flake8("--select=SHP", "--disable-noqa", "--jobs=1", "m.py", cwd=tmp_path)
    assert len(r.stdout.splitlines()) == 4


def test_e2e_opt_in_codes_are_off_by_default(tmp_path):
    (tmp_path / "m.py").write_text("a = SHP901(1)\nb = SHP101(1)\n")
    r = patched_flake8("--jobs=1", "m.py", cwd=tmp_path)
    assert ": SHP901 " not in r.stdout and ": SHP101 " in r.stdout
    r = patched_flake8("--jobs=1", "--extend-select=SHP9", "m.py", cwd=tmp_path)
    assert "m.py:1:5: SHP901 fake SHP901 finding" in r.stdout


def test_e2e_stdin(tmp_path):
    r = patched_flake8("--select=SHP", "--stdin-display-name", "pkg/model.py", "-", cwd=tmp_path,
                       stdin="x = 1\ny = SHP101(x)\n")
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == ["pkg/model.py:2:5: SHP101 fake SHP101 finding"]


def test_e2e_options_from_flake8_config(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nshp-max-paths = 3\nshp-may-fail = true\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    driver = textwrap.dedent(
        """
        import sys
        from shape_lint import flake8_plugin
        def check(source, filename, options):
            print("OPTIONS", sorted(options.items()), file=sys.stderr)
            return []
        flake8_plugin._check_source = check
        from flake8.main.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    r = subprocess.run([sys.executable, "-c", driver, "--jobs=1", "m.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "OPTIONS [('max_paths', 3), ('may_fail', True)]" in r.stderr


def test_e2e_real_engine_on_clean_and_broken_files(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(2, 3)\n")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    r = flake8("--select=SHP", "ok.py", "broken.py", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert "SHP" not in r.stdout
    assert r.returncode == 0, (r.stdout, r.stderr)
    # The syntax error itself is flake8's E999.
    r = flake8("broken.py", cwd=tmp_path)
    assert "E999" in r.stdout and "SHP" not in r.stdout and "Traceback" not in r.stderr


def test_e2e_real_engine_stdin(tmp_path):
    r = flake8("--select=SHP", "--stdin-display-name", "x.py", "-", cwd=tmp_path,
               stdin="import torch\nx = torch.ones(4)\n")
    assert r.returncode == 0 and r.stdout == "" and "Traceback" not in r.stderr


@pytest.mark.skipif(os.cpu_count() == 1, reason="needs flake8's multiprocessing")
def test_e2e_parallel_jobs(tmp_path):
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(f"x{i} = SHP101(1)\n")
    r = patched_flake8("--select=SHP", "--jobs=2", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert len(r.stdout.splitlines()) == 6


# ---------------------------------------------------------------------------------------------
# Configuration errors end to end (issue 29): one message naming the key, never SHP001


def test_e2e_config_typo_is_one_error_naming_the_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nmax-path = 3\n")
    (tmp_path / "a.py").write_text("x = SHP101(1)\n")
    (tmp_path / "b.py").write_text("y = SHP101(2)\n")
    for args in (["a.py", "b.py"], ["."], ["--jobs=2", "."]):
        r = patched_flake8("--select=SHP", *args, cwd=tmp_path)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stdout == "" and "SHP001" not in r.stderr and "Traceback" not in r.stderr
        (line,) = r.stderr.splitlines()
        assert line.startswith("flake8: error: shape-lint configuration error: ") and "'max-path'" in line


def test_e2e_config_typo_below_the_paths_stops_flake8_once(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.shape-lint]\ntimeout_ms = 5\n")
    (tmp_path / "sub" / "m.py").write_text("x = SHP101(1)\n")
    (tmp_path / "sub" / "n.py").write_text("y = SHP101(2)\n")
    r = patched_flake8("--select=SHP", "--jobs=1", ".", cwd=tmp_path)
    assert r.returncode == 1 and "SHP001" not in r.stdout and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    (line, _verbosity) = r.stdout.splitlines()
    assert "shape-lint configuration error:" in line and "unknown key 'timeout_ms' (did you mean 'timeout-ms'?)" in line
