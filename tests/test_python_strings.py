"""Strings built from known values are known (`models/text.rs`): f-strings, `str.format`, `%`,
`os.path.join`/`basename`/`dirname`/`splitext`, `str()`, `format()` and the string methods
`join`, `upper`, `lower`, `strip`, `replace`, each rendered exactly as Python renders it, so
that a checkpoint saved to `os.path.join(save_dir, "last.pt")` is the one loaded from
`f"{save_dir}/last.pt"` (SHP312). A part not known, a float, a conversion or a spec not
modelled leave the string unknown: never a guess. Every case is run under Python too."""
import pytest

from shape_lint import _core

PRELUDE = """import os
import sys
import torch
save_dir = "checkpoints"
name = "run"
epoch = 7
flag = True
unknown = sys.argv[1]
"""

# expressions whose value shape-lint knows, and that value
KNOWN = [
    ('f"{save_dir}/last.pt"', "checkpoints/last.pt"),
    ('f"{name}_best.pth"', "run_best.pth"),
    ('f"epoch_{epoch:03d}.pt"', "epoch_007.pt"),
    ('f"{epoch:>4}|{name:^7}|{flag}|{None}"', "   7|  run  |True|None"),
    ('f"{name!r}-{name!s:.2}"', "'run'-ru"),
    ('f"{epoch:{3}}"', "  7"),
    ('f"{flag:d}"', "1"),
    ('f"{-1234:_}"', "-1_234"),
    ('"{}/last.pt".format(save_dir)', "checkpoints/last.pt"),
    ('"{0}/{n}_{1:02d}.pt".format(save_dir, epoch, n=name)', "checkpoints/run_07.pt"),
    ('"{{literal}} {}".format(name)', "{literal} run"),
    ('"%s/%s_%03d.pt" % (save_dir, name, epoch)', "checkpoints/run_007.pt"),
    ('"%s.pt" % name', "run.pt"),
    ('"%-5s|%+d|%%" % (name, epoch)', "run  |+7|%"),
    ('save_dir + "/" + name', "checkpoints/run"),
    ('os.path.join(save_dir, "last.pt")', "checkpoints/last.pt"),
    ('os.path.join(save_dir, "sub/", "x.pt")', "checkpoints/sub/x.pt"),
    ('os.path.join(save_dir, "/abs", "x.pt")', "/abs/x.pt"),
    ('os.path.join("", "x.pt")', "x.pt"),
    ('os.path.basename("a/b/last.pt")', "last.pt"),
    ('os.path.dirname("a/b/last.pt")', "a/b"),
    ('os.path.splitext("a/b/last.pt")[0]', "a/b/last"),
    ('os.path.splitext(".bashrc")[1]', ""),
    ('"_".join([name, "best", str(epoch)])', "run_best_7"),
    ('"/".join((save_dir, name))', "checkpoints/run"),
    ('"CkPt".upper() + "CkPt".lower()', "CKPTckpt"),
    ('" \\t run \\n".strip()', "run"),
    ('"xxrunxx".lstrip("x") + "|" + "xxrunxx".rstrip("x")', "runxx|xxrun"),
    ('"a.b.c".replace(".", "/")', "a/b/c"),
    ('"a.b.c".replace(".", "/", 1)', "a/b.c"),
    ('str(epoch) + str(flag) + str(None)', "7TrueNone"),
    ('format(epoch, "04d")', "0007"),
    ('repr(name)', "'run'"),
]

# expressions whose value is not known: a part not known, a float, a spec or a conversion not
# modelled, a call Python rejects
UNKNOWN = [
    'f"{save_dir}/epoch_{unknown}.pt"',
    'f"{0.5}"',
    'f"{epoch:.2f}"',
    'f"{epoch!r}"',
    'f"{epoch=}"',
    'f"{epoch:x}"',
    '"{}_{}".format(name)',
    '"{0.real}".format(epoch)',
    '"%s_%s" % (name,)',
    '"%d" % name',
    '"%.3f" % epoch',
    'os.path.join(save_dir, unknown)',
    '"_".join([name, unknown])',
    '"_".join([name, epoch])',
    '"Ünï".upper()',
    'unknown.strip()',
]


def value_shape(expr, expected):
    src = PRELUDE + f"t = torch.zeros(7 if ({expr}) == {expected!r} else 9)\n"
    return dict(_core.show_shapes(src, "strings.py", {})).get(src.count("\n"))


@pytest.mark.parametrize("expr,value", KNOWN)
def test_a_string_of_known_values_is_known(expr, value):
    assert value_shape(expr, value) == "t: [7] float"


@pytest.mark.parametrize("expr", UNKNOWN)
def test_a_string_with_a_part_not_modelled_stays_unknown(expr):
    assert value_shape(expr, "") == "t: [7] float | t: [9] float"


@pytest.mark.parametrize("expr,value", KNOWN)
def test_python_gives_the_same_value(expr, value):
    scope = {}
    exec(PRELUDE.replace("sys.argv[1]", "'?'").replace("import torch\n", ""), scope)
    assert eval(expr, scope) == value


@pytest.mark.parametrize("expr", UNKNOWN)
def test_python_gives_some_other_value_or_raises(expr):
    """The unknown cases are not all errors: most give a value the model does not render."""
    scope = {}
    exec(PRELUDE.replace("sys.argv[1]", "'?'").replace("import torch\n", ""), scope)
    try:
        eval(expr, scope)
    except (TypeError, IndexError, AttributeError, ValueError):
        pass


CKPT = """import os
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
save_dir = "checkpoints"
os.makedirs(save_dir, exist_ok=True)
torch.save({{"model": model.state_dict(), "epoch": 3}}, {save})
ckpt = torch.load({load})
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])
"""


def shp312(src):
    return [f["row"] for f in _core.check_source(src, "train.py", {}) if f["code"] == "SHP312"]


@pytest.mark.parametrize("save,load", [
    ('os.path.join(save_dir, "last.pt")', 'os.path.join(save_dir, "last.pt")'),
    ('f"{save_dir}/last.pt"', 'f"{save_dir}/last.pt"'),
    ('"{}/last.pt".format(save_dir)', '"{}/last.pt".format(save_dir)'),
    ('os.path.join(save_dir, "last.pt")', 'f"{save_dir}/last.pt"'),
    ('"%s/last_%02d.pt" % (save_dir, 3)', 'os.path.join(save_dir, "last_03.pt")'),
])
def test_a_checkpoint_saved_and_loaded_through_built_paths_is_followed(save, load, tmp_path, monkeypatch):
    src = CKPT.format(save=save, load=load)
    assert shp312(src) == [12]
    # and torch raises there
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyError, match="optimizer"):
        exec(compile(src, "train.py", "exec"), {})


def test_a_path_with_a_part_not_known_matches_nothing():
    # the epoch of each save is not known: no save is known to write the file loaded
    src = CKPT.replace('save_dir = "checkpoints"', 'save_dir = "checkpoints"\nimport sys\nepoch = int(sys.argv[1])')
    assert shp312(src.format(save='f"{save_dir}/epoch_{epoch}.pt"', load='f"{save_dir}/epoch_{epoch}.pt"')) == []
    assert shp312(src.format(save='f"{save_dir}/epoch_{epoch}.pt"', load='f"{save_dir}/epoch_3.pt"')) == []


def test_a_file_saved_under_another_name_is_not_judged():
    assert shp312(CKPT.format(save='os.path.join(save_dir, "last.pt")', load='os.path.join(save_dir, "best.pt")')) == []


def test_a_key_the_program_builds_is_not_judged():
    # `key in ckpt` tests it: its text is not `"optimizer"`, so the rule does not look for it
    src = CKPT.replace('optimizer.load_state_dict(ckpt["optimizer"])', 'part = "optim"\nkey = f"{{part}}izer"\nif key in ckpt:\n    optimizer.load_state_dict(ckpt[key])')
    assert shp312(src.format(save='"last.pt"', load='"last.pt"')) == []
