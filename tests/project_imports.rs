//! Project imports (`engine::project`, `interp/imports.rs`): the checked file's imports of
//! other files of its project are run, and each file reports only its own sites.

use std::path::PathBuf;

use shape_lint::{Finding, Settings, check_source};

/// A project in a fresh temporary directory (with a `pyproject.toml` root marker).
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shape-lint-imports-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pyproject.toml"), "[project]\nname = \"p\"\n").unwrap();
    for (p, text) in files {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn check(dir: &PathBuf, file: &str) -> Vec<Finding> {
    let path = dir.join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    check_source(&src, path.to_str().unwrap(), &Settings::default())
}

fn rows(findings: &[Finding]) -> Vec<(usize, &'static str)> {
    findings.iter().map(|f| (f.row, f.rule.code)).collect()
}

const NET: &str = "import torch
import torch.nn as nn
from .layers import head


class Net(nn.Module):
    def __init__(self, hidden=84):
        super().__init__()
        self.fc1 = nn.Linear(120, hidden)
        self.fc2 = head(hidden, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
";

const LAYERS: &str = "import torch.nn as nn


def head(features, classes):
    return nn.Linear(features, classes)
";

#[test]
fn a_script_sees_the_shapes_of_a_package_it_imports() {
    let d = project(
        "package",
        &[
            ("models/__init__.py", "from .net import Net\n"),
            ("models/net.py", NET),
            ("models/layers.py", LAYERS),
            ("config.py", "BATCH = 64\nHIDDEN = 80\nif __name__ == \"__main__\":\n    BATCH = 3\n"),
            ("train.py", "import torch\nfrom models import Net\nimport config\n\nnet = Net(config.HIDDEN)\nout = net(torch.randn(config.BATCH, 120))\ny = out.view(config.BATCH, 11)\n"),
        ],
    );
    let found = check(&d, "train.py");
    assert_eq!(rows(&found), vec![(7, "SHP103")], "{found:?}");
    assert!(found[0].message.contains("[64, 10]"), "{}", found[0].message);
}

#[test]
fn a_bug_inside_an_imported_file_is_that_files_report() {
    let bad_net = NET.replace("head(hidden, 10)", "head(80, 10)");
    let d = project(
        "own-sites",
        &[
            ("models/__init__.py", "from .net import Net\n"),
            ("models/net.py", &bad_net),
            ("models/layers.py", LAYERS),
            ("train.py", "import torch\nfrom models import Net\n\nnet = Net()\nprint(net(torch.randn(8, 120)).shape)\n"),
        ],
    );
    // the failing layer call is in models/net.py: reported there (its forward entry, with the
    // relative import resolved from the package around it), not in train.py
    assert_eq!(rows(&check(&d, "train.py")), vec![]);
    let found = check(&d, "models/net.py");
    assert_eq!(rows(&found), vec![(13, "SHP101")], "{found:?}");
    assert!(found[0].message.contains("layers.py:5"), "the layer is named where it is built: {}", found[0].message);
}

#[test]
fn import_forms_bind_as_python_binds_them() {
    let d = project(
        "forms",
        &[
            ("pkg/__init__.py", "WIDTH = 6\n"),
            ("pkg/sub/__init__.py", ""),
            ("pkg/sub/dims.py", "__all__ = ['D']\nD = 5\n_HIDDEN = 1\n"),
            ("star.py", "from pkg.sub.dims import *\n"),
            (
                "main.py",
                "import torch
import pkg.sub.dims
import pkg.sub.dims as dims
from pkg.sub import dims as d2
from pkg import WIDTH
from star import *
a = torch.randn(pkg.sub.dims.D, dims.D)
b = torch.randn(d2.D, WIDTH)
c = a @ b
e = torch.randn(D, 2) @ torch.randn(3, 2)
",
            ),
        ],
    );
    let found = check(&d, "main.py");
    // `a @ b` is [5, 5] @ [5, 6]: fine; the star import binds D (and only what __all__ lists)
    assert_eq!(rows(&found), vec![(10, "SHP101")], "{found:?}");
}

#[test]
fn cycles_missing_modules_and_library_names_are_harmless() {
    let d = project(
        "cycles",
        &[
            ("a.py", "import b\nX = 4\n"),
            ("b.py", "import a\nY = 3\n"),
            ("torch/notes.txt", "a data folder named like a library\n"),
            ("broken.py", "def f(:\n"),
            (
                "main.py",
                "import torch
import a
import broken
import not_installed_anywhere
from b import Y
x = torch.randn(a.X, Y)
y = broken.f(x) + not_installed_anywhere.g(x)
z = torch.randn(2, 2) @ torch.randn(3, 3)
",
            ),
        ],
    );
    let found = check(&d, "main.py");
    assert_eq!(rows(&found), vec![(8, "SHP101")], "{found:?}");
}

#[test]
fn a_module_global_set_from_the_script_is_seen_by_the_module() {
    let d = project(
        "globals",
        &[
            ("cfg.py", "WIDTH = 8\n\ndef make():\n    import torch.nn as nn\n    return nn.Linear(WIDTH, 2)\n"),
            ("main.py", "import torch\nimport cfg\n\ncfg.WIDTH = 4\nlayer = cfg.make()\nlayer(torch.randn(3, 8))\n"),
        ],
    );
    assert_eq!(rows(&check(&d, "main.py")), vec![(6, "SHP101")]);
}

/// A model correct with its defaults whose head is sized for `hidden=128`: any other `hidden`
/// a script gives it fails at `self.fc2(x)` (line 12).
const NET_HEAD_SIZED_FOR_128: &str = "import torch.nn as nn


class Net(nn.Module):
    def __init__(self, in_dim=784, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.fc1(x.flatten(1)).relu()
        return self.fc2(x)
";

#[test]
fn a_script_that_imports_the_checked_file_runs_as_its_entry() {
    // correct with its defaults, wrong with the sizes train.py gives it: reported in model.py
    // (where torch raises) when model.py is checked, and not in train.py
    let model = NET_HEAD_SIZED_FOR_128;
    let train = "import argparse
import torch
from model import Net


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--hidden', type=int, default=64)
    args = parser.parse_args()
    net = Net(hidden=args.hidden)
    for _ in range(2):
        out = net(torch.randn(32, 1, 28, 28))


if __name__ == '__main__':
    main()
";
    let d = project("importer", &[("model.py", model), ("train.py", train), ("notes.py", "from model import Net\n")]);
    let found = check(&d, "model.py");
    assert_eq!(rows(&found), vec![(12, "SHP101")], "{found:?}");
    assert!(found[0].message.contains("[32, 64]"), "{}", found[0].message);
    assert!(found[0].trace.iter().any(|t| t == "found running train.py, which imports this file"), "{:?}", found[0].trace);
    assert_eq!(rows(&check(&d, "train.py")), vec![]);
    // the same model with a consistent head is clean from every entry
    std::fs::write(d.join("model.py"), model.replace("nn.Linear(128, 10)", "nn.Linear(hidden, 10)")).unwrap();
    assert_eq!(rows(&check(&d, "model.py")), vec![]);
}

#[test]
fn a_scripts_imports_resolve_from_its_own_folder_and_its_sys_path() {
    // `app/train.py` imports the package beside it (`nets`), as Python does from the script's
    // folder; `tools/run.py` extends `sys.path` to reach `app`. Checking the model file runs
    // both as its entries, and the sizes they give it fail in its forward.
    let model = NET_HEAD_SIZED_FOR_128;
    let train = "import torch
from nets.model import Net

net = Net(hidden=64)
out = net(torch.randn(8, 784))
";
    let run = "import sys
sys.path.append('../app')
import torch
from nets.model import Net

out = Net(hidden=32)(torch.randn(8, 784))
";
    let d = project("own-folder", &[("app/nets/__init__.py", ""), ("app/nets/model.py", model), ("app/train.py", train), ("tools/run.py", run)]);
    let found = check(&d, "app/nets/model.py");
    assert_eq!(rows(&found), vec![(12, "SHP101")], "{found:?}");
    let traces: Vec<&String> = found[0].trace.iter().filter(|t| t.starts_with("found running")).collect();
    assert!(!traces.is_empty(), "{:?}", found[0].trace);
    // the script beside the package on its own: nothing of its own to report
    assert_eq!(rows(&check(&d, "app/train.py")), vec![]);
    // the script that reaches the package through `sys.path`, checked itself: its import is
    // followed (the layer it builds has the size it gives)
    let probe = run.replace("out = Net(hidden=32)(torch.randn(8, 784))", "h = Net(hidden=32).fc1(torch.randn(8, 784))");
    std::fs::write(d.join("tools/run.py"), &probe).unwrap();
    let shapes = shape_lint::show_shapes(&probe, d.join("tools/run.py").to_str().unwrap(), &Settings::default());
    assert_eq!(shapes, vec![(6, "h: [8, 32] float".to_string())]);
    let unreached = probe.replace("sys.path.append('../app')", "sys.path.append('../missing')");
    assert_eq!(shape_lint::show_shapes(&unreached, d.join("tools/run.py").to_str().unwrap(), &Settings::default()), vec![]);
}

#[test]
fn an_unmarked_folder_of_a_few_scripts_is_a_project() {
    // no pyproject.toml, setup.cfg or .git: the folder the file sits in (above its packages) is
    // scanned for importing scripts when it holds at most MAX_LOOSE_FILES Python files
    let model = "import torch.nn as nn


class Net(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())
";
    let train = "import torch
from models.net import Net

net = Net(hidden=64)
out = net(torch.randn(8, 784))
";
    let d = project("unmarked", &[("models/__init__.py", ""), ("models/net.py", model), ("train.py", train)]);
    std::fs::remove_file(d.join("pyproject.toml")).unwrap();
    let found = check(&d, "models/net.py");
    assert_eq!(rows(&found), vec![(11, "SHP101")], "{found:?}");
    assert!(found[0].trace.iter().any(|t| t.contains("found running train.py")), "{:?}", found[0].trace);
    // a folder of more Python files than that is no project (a home or temporary folder)
    let big = project("unmarked-big", &[("models/__init__.py", ""), ("models/net.py", model), ("train.py", train)]);
    std::fs::remove_file(big.join("pyproject.toml")).unwrap();
    for i in 0..shape_lint::engine::project::MAX_LOOSE_FILES {
        std::fs::write(big.join(format!("other_{i}.py")), "x = 1\n").unwrap();
    }
    assert_eq!(rows(&check(&big, "models/net.py")), vec![]);
    // and the script reports none of the imported file's sites
    assert_eq!(rows(&check(&big, "train.py")), vec![]);
}
