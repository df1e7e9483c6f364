//! The project's scripts that import a checked file run once per process for every file they
//! load (`engine::scripts`): checking the N model files a training script imports runs the
//! script once, gives each file what running the script inside its own analysis gives it,
//! whatever the threads and their order, and a changed file, a buffer that differs from the
//! disk, or another process (`engine::script_cache`) are handled; a script checked itself takes
//! the same run.

use std::path::{Path, PathBuf};

use shape_lint::{Finding, Settings, Undecided, check_source_stats};

/// A project in a fresh temporary directory (with a `pyproject.toml` root marker).
fn project(name: &str, files: &[(String, String)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shape-lint-shared-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pyproject.toml"), "[project]\nname = \"p\"\n").unwrap();
    for (p, text) in files {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::canonicalize(&dir).unwrap()
}

const MODELS: usize = 6;

/// Model `i`: its head is sized for the default width (a bug with the width `train.py` gives)
/// in model 3; `gpu.py` moves model 5 to CUDA and hands it a CPU batch.
fn model(i: usize) -> String {
    let head = if i == 3 { "128" } else { "hidden" };
    format!(
        "import torch
import torch.nn as nn


class Net{i}(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear({head}, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
"
    )
}

fn files() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = (0..MODELS).map(|i| (format!("models/m{i}.py"), model(i))).collect();
    out.push(("models/__init__.py".into(), String::new()));
    // train.py runs models 0 to 4, the wrong one last (its error ends the run)
    let imports: String = (0..MODELS - 1).map(|i| format!("from models.m{i} import Net{i}\n")).collect();
    let runs: String = [0, 1, 2, 4, 3].iter().map(|i| format!("    out{i} = Net{i}(hidden=64)(x)\n")).collect();
    let train = format!("import torch\n{imports}\n\ndef main():\n    x = torch.randn(8, 784)\n{runs}\n\nif __name__ == '__main__':\n    main()\n");
    out.push(("train.py".into(), train));
    let gpu = "import torch\nfrom models.m5 import Net5\n\nnet = Net5().to(torch.device('cuda'))\ny = net(torch.randn(8, 784))\n";
    out.push(("gpu.py".into(), gpu.into()));
    out
}

type Checked = (Vec<Finding>, Vec<Undecided>);

fn check_with(dir: &Path, file: &str, settings: &Settings) -> (Checked, usize) {
    let path = dir.join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    let (findings, undecided, stats) = check_source_stats(&src, path.to_str().unwrap(), settings);
    ((findings, undecided), stats.script_runs)
}

/// The findings with the project's folder taken out of their related places' paths.
fn portable(dir: &Path, (findings, undecided): Checked) -> Checked {
    let strip = |mut f: Finding| {
        for r in &mut f.related {
            r.path = r.path.take().map(|p| p.replace(&*dir.to_string_lossy(), "<dir>"));
        }
        f
    };
    (findings.into_iter().map(strip).collect(), undecided.into_iter().map(|u| Undecided { finding: strip(u.finding), ..u }).collect())
}

fn model_files() -> Vec<String> {
    (0..MODELS).map(|i| format!("models/m{i}.py")).collect()
}

#[test]
fn a_script_importing_n_model_files_runs_once_and_each_file_gets_what_its_own_run_gives() {
    let d = project("once", &files());
    let own = Settings { share_scripts: false, ..Settings::default() };
    let mut runs = 0;
    for file in model_files() {
        let ((shared, shared_u), ran) = check_with(&d, &file, &Settings::default());
        runs += ran;
        let ((alone, alone_u), _) = check_with(&d, &file, &own);
        assert_eq!(shared, alone, "{file}");
        assert_eq!(shared_u, alone_u, "{file}");
        let rows: Vec<(usize, &str)> = shared.iter().map(|f| (f.row, f.rule.code)).collect();
        let want: Vec<(usize, &str, &str)> = match file.as_str() {
            "models/m3.py" => vec![(12, "SHP101", "train.py")],
            "models/m5.py" => vec![(12, "SHP201", "gpu.py")],
            _ => vec![],
        };
        assert_eq!(rows, want.iter().map(|w| (w.0, w.1)).collect::<Vec<_>>(), "{file}: {shared:?}");
        for (f, w) in shared.iter().zip(&want) {
            assert_eq!(f.trace.last().cloned(), Some(format!("found running {}, which imports this file", w.2)), "{f:?}");
        }
    }
    assert_eq!(runs, 2, "each script ran once for all the files it imports");
    // a message names the checked file's own places as `line 9`
    let ((found, _), _) = check_with(&d, "models/m3.py", &Settings::default());
    assert!(found[0].message.contains("fc2 (line 9)"), "{}", found[0].message);
}

#[test]
fn the_shared_result_is_the_same_on_many_threads_in_any_order() {
    let one = project("threads-one", &files());
    let many = project("threads-many", &files());
    let expected: Vec<Checked> = model_files().iter().map(|f| portable(&one, check_with(&one, f, &Settings::default()).0)).collect();
    let files = model_files();
    let got: Vec<(usize, Checked, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (files, many) = (&files, &many);
                scope.spawn(move || {
                    // each thread its own order
                    let mut order: Vec<usize> = (0..files.len()).collect();
                    order.rotate_left(t);
                    if t % 2 == 1 {
                        order.reverse();
                    }
                    order
                        .into_iter()
                        .map(|i| {
                            let (c, ran) = check_with(many, &files[i], &Settings::default());
                            (i, portable(many, c), ran)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    for (i, c, _) in &got {
        assert_eq!(c, &expected[*i], "{}", files[*i]);
    }
    assert_eq!(got.iter().map(|g| g.2).sum::<usize>(), 2, "one run of each script for all the threads");
}

#[test]
fn a_changed_file_runs_the_script_again_and_a_buffer_runs_it_in_its_own_analysis() {
    let d = project("changes", &files());
    assert_eq!(check_with(&d, "models/m3.py", &Settings::default()).1, 1);
    assert_eq!(check_with(&d, "models/m2.py", &Settings::default()).1, 0);
    // m2 changed on disk: the result, which loaded m2, is stale
    std::fs::write(d.join("models/m2.py"), format!("# edited\n{}", model(2))).unwrap();
    let ((found, _), ran) = check_with(&d, "models/m3.py", &Settings::default());
    assert_eq!((found.len(), ran), (1, 1), "{found:?}");
    assert_eq!(check_with(&d, "models/m0.py", &Settings::default()).1, 0);
    // m3's bug fixed on disk
    std::fs::write(d.join("models/m3.py"), model(3).replace("nn.Linear(128, 10)", "nn.Linear(hidden, 10)")).unwrap();
    let ((found, _), ran) = check_with(&d, "models/m3.py", &Settings::default());
    assert_eq!((found.len(), ran), (0, 1), "{found:?}");
    std::fs::write(d.join("models/m3.py"), model(3)).unwrap();
    // m3 checked from a buffer with its bug fixed: the script runs with the buffer's text
    let path = d.join("models/m3.py");
    let buffer = model(3).replace("nn.Linear(128, 10)", "nn.Linear(hidden, 10)");
    let (found, _, stats) = check_source_stats(&buffer, path.to_str().unwrap(), &Settings::default());
    assert_eq!((found.len(), stats.script_runs), (0, 0), "{found:?}");
    // and a buffer with a line more gets the script's finding on its own line
    let other = format!("# edited\n{}", model(3));
    let (found, _, stats) = check_source_stats(&other, path.to_str().unwrap(), &Settings::default());
    assert_eq!(found.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), vec![(13, "SHP101")], "{found:?}");
    assert_eq!(stats.script_runs, 0);
}

#[test]
fn another_process_takes_the_result_from_the_projects_cache() {
    let d = project("disk", &files());
    let cached = Settings { script_cache: Some("test-build".into()), ..Settings::default() };
    let ((first, _), ran) = check_with(&d, "models/m3.py", &cached);
    assert_eq!(ran, 1);
    assert!(d.join(".shape_lint_cache/scripts/v1").is_dir());
    assert_eq!(std::fs::read_to_string(d.join(".shape_lint_cache/.gitignore")).unwrap(), "# created by shape-lint\n*\n");
    // a new process: nothing kept in memory
    shape_lint::engine::scripts::forget_results(&d);
    let ((again, _), ran) = check_with(&d, "models/m3.py", &cached);
    assert_eq!((&again, ran), (&first, 0));
    let ((m1, _), ran) = check_with(&d, "models/m1.py", &cached);
    assert_eq!((m1.len(), ran), (0, 0));
    // another build (salt) does not take it
    shape_lint::engine::scripts::forget_results(&d);
    let other = Settings { script_cache: Some("another-build".into()), ..Settings::default() };
    assert_eq!(check_with(&d, "models/m3.py", &other).1, 1);
    // a file the script loads changed: the entry is stale and replaced
    shape_lint::engine::scripts::forget_results(&d);
    std::fs::write(d.join("models/m0.py"), model(0).replace("784", "784 ")).unwrap();
    assert_eq!(check_with(&d, "models/m3.py", &cached).1, 1);
    shape_lint::engine::scripts::forget_results(&d);
    assert_eq!(check_with(&d, "models/m3.py", &cached).1, 0);
    // a module added to the project: what imports find may differ
    shape_lint::engine::scripts::forget_results(&d);
    std::fs::write(d.join("models/extra.py"), "x = 1\n").unwrap();
    shape_lint::engine::project::forget_projects();
    assert_eq!(check_with(&d, "models/m3.py", &cached).1, 1);
}

/// `train.py` of `a_script_checked_itself_is_its_own_shared_run`: model 0 trained on
/// probabilities (line 12) and without a step (SHP302 at its `backward()`, line 13).
const SELF_TRAIN: &str = "import torch
from models.m0 import Net0


def main():
    net = Net0(hidden=64)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()
    for step in range(10):
        opt.zero_grad()
        out = torch.softmax(net(torch.randn(8, 784)), dim=1)
        loss = criterion(out, torch.randint(0, 10, (8,)))
        loss.backward()


if __name__ == '__main__':
    main()
";

#[test]
fn a_script_checked_itself_is_its_own_shared_run() {
    let d = project("self", &[("models/__init__.py".into(), String::new()), ("models/m0.py".into(), model(0)), ("train.py".into(), SELF_TRAIN.into())]);
    let own = Settings { share_scripts: false, ..Settings::default() };
    let ((shared, shared_u), ran) = check_with(&d, "train.py", &Settings::default());
    assert_eq!(ran, 1, "train.py's findings come from its shared run");
    let ((alone, alone_u), _) = check_with(&d, "train.py", &own);
    assert_eq!(shared.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), vec![(12, "SHP308"), (13, "SHP302")], "{shared:?}");
    assert_eq!((&shared, &shared_u), (&alone, &alone_u));
    assert!(shared.iter().all(|f| !f.trace.iter().any(|t| t.starts_with("found running"))), "{shared:?}");
    // the model file takes the same run
    assert_eq!(check_with(&d, "models/m0.py", &Settings::default()).1, 0);
    // a budget that runs out: the same notice, at the script's line
    let tight = |share_scripts: bool| Settings { max_steps: 300, share_scripts, ..Settings::default() };
    shape_lint::engine::scripts::forget_results(&d);
    let ((cut, _), ran) = check_with(&d, "train.py", &tight(true));
    assert_eq!(ran, 1);
    let ((cut_alone, _), _) = check_with(&d, "train.py", &tight(false));
    assert_eq!(cut, cut_alone);
    assert_eq!(cut.iter().map(|f| f.rule.code).collect::<Vec<_>>(), vec!["SHP002"], "{cut:?}");
    assert!(cut[0].message.contains("ran out at line "), "{}", cut[0].message);
}
