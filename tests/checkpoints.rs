//! SHP312 (`models/torch/checkpoint.rs`): a checkpoint key read that no `torch.save` of the
//! program writes, and the many ways a program may write or expect a key the rule must not
//! flag.

use std::path::PathBuf;

use shape_lint::{Settings, check_source};

/// The rows and messages of the SHP312 findings of `src`.
fn shp312(src: &str) -> Vec<(usize, String)> {
    check_source(src, "train.py", &Settings::default()).into_iter().filter(|f| f.rule.code == "SHP312").map(|f| (f.row, f.message)).collect()
}

/// A script that trains, saves `save` (an expression) to `CKPT`, then resumes through `resume`
/// (lines of `main`'s resume branch, indented by 8), with `extra` top-level code before `main`.
fn script(save: &str, resume: &str, extra: &str) -> String {
    format!(
        "import torch
import torch.nn as nn

CKPT = \"ckpt.pt\"
PRETRAINED = \"pretrained.pt\"
{extra}

def main(resume=False):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if resume:
{resume}
    for epoch in range(2):
        optimizer.zero_grad()
        model(torch.randn(3, 4)).sum().backward()
        optimizer.step()
        torch.save({save}, CKPT)


main()
main(resume=True)
"
    )
}

const SAVE: &str = "{\"model\": model.state_dict(), \"epoch\": epoch}";
const READ: &str = "        ckpt = torch.load(CKPT)\n        optimizer.load_state_dict(ckpt[\"optimizer\"])";

#[test]
fn a_key_no_save_writes_is_reported_with_the_saves() {
    let found = shp312(&script(SAVE, READ, ""));
    assert_eq!(found, vec![(13, "checkpoint key 'optimizer' is never saved: torch.save at line 18 writes 'model', 'epoch'".to_string())]);
}

#[test]
fn a_saved_key_is_not_reported_however_the_dict_is_built() {
    let both = "{\"model\": model.state_dict(), \"optimizer\": optimizer.state_dict(), \"epoch\": epoch}";
    assert_eq!(shp312(&script(both, READ, "")), vec![]);
    assert_eq!(shp312(&script("dict(model=model.state_dict(), optimizer=optimizer.state_dict())", READ, "")), vec![]);
    assert_eq!(shp312(&script("{**BASE, \"optimizer\": optimizer.state_dict()}", READ, "BASE = {\"epoch\": 0}")), vec![]);
}

#[test]
fn a_checkpoint_the_program_never_writes_is_not_judged() {
    // pretrained weights: another file than the one saved
    let read = "        state = torch.load(PRETRAINED)\n        model.load_state_dict(state[\"state_dict\"])";
    assert_eq!(shp312(&script(SAVE, read, "")), vec![]);
    // a path the core cannot tell
    let read = "        ckpt = torch.load(open(CKPT, \"rb\"))\n        optimizer.load_state_dict(ckpt[\"optimizer\"])";
    assert_eq!(shp312(&script(SAVE, read, "")), vec![]);
}

#[test]
fn a_save_the_core_cannot_follow_silences_the_rule() {
    // keys not known
    assert_eq!(shp312(&script("model.state_dict()", READ, "")), vec![]);
    // a save never run by the analysis, another saver, a library helper named like a save
    for extra in [
        "def export(model):\n    torch.save({\"optimizer\": 1}, CKPT)\n",
        "def export(img):\n    img.save(\"x.png\")\n",
        "from accelerate import save_checkpoint\nsave_checkpoint(CKPT)\n",
    ] {
        assert_eq!(shp312(&script(SAVE, READ, extra)), vec![], "{extra}");
    }
}

#[test]
fn a_key_the_program_expects_may_be_missing_is_not_reported() {
    for read in [
        "        ckpt = torch.load(CKPT)\n        if \"optimizer\" in ckpt:\n            optimizer.load_state_dict(ckpt[\"optimizer\"])",
        "        ckpt = torch.load(CKPT)\n        optimizer.load_state_dict(ckpt.get(\"optimizer\", optimizer.state_dict()))",
        "        ckpt = torch.load(CKPT)\n        try:\n            optimizer.load_state_dict(ckpt[\"optimizer\"])\n        except KeyError:\n            pass",
        "        ckpt = torch.load(CKPT)\n        ckpt[\"optimizer\"] = optimizer.state_dict()\n        optimizer.load_state_dict(ckpt[\"optimizer\"])",
        "        ckpt = torch.load(CKPT)\n        upgrade(ckpt)\n        optimizer.load_state_dict(ckpt[\"optimizer\"])",
        "        ckpt = torch.load(CKPT)\n        ckpt.update(extra_state())\n        optimizer.load_state_dict(ckpt[\"optimizer\"])",
    ] {
        let extra = "def upgrade(c):\n    c[\"optimizer\"] = {}\n\n\ndef extra_state():\n    return {}\n";
        assert_eq!(shp312(&script(SAVE, read, extra)), vec![], "{read}");
    }
}

#[test]
fn a_path_built_from_known_strings_is_followed_and_one_not_known_matches_nothing() {
    // the save writes `torch.save(..., CKPT)`: the resume loads the same file, built otherwise
    let extra = "import os\nimport sys\nDIR, NAME = \"\", \"ckpt\"\nEPOCH = int(sys.argv[1])\n";
    let read = |path: &str| format!("        ckpt = torch.load({path})\n        optimizer.load_state_dict(ckpt[\"optimizer\"])");
    for path in ["os.path.join(DIR, \"ckpt.pt\")", "f\"{NAME}.pt\"", "\"{}.pt\".format(NAME)", "\"%s.pt\" % NAME", "os.path.basename(\"runs/ckpt.pt\")"] {
        assert_eq!(shp312(&script(SAVE, &read(path), extra)).len(), 1, "{path}");
    }
    // a part the analysis cannot tell (a command-line epoch), or another file
    for path in ["f\"{NAME}{EPOCH}.pt\"", "os.path.join(DIR, f\"{EPOCH}\", \"ckpt.pt\")", "f\"{NAME}.pth\""] {
        assert_eq!(shp312(&script(SAVE, &read(path), extra)), vec![], "{path}");
    }
}

/// A project in a fresh temporary directory (with a `pyproject.toml` root marker).
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shape-lint-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pyproject.toml"), "[project]\nname = \"p\"\n").unwrap();
    for (p, text) in files {
        std::fs::write(dir.join(p), text).unwrap();
    }
    dir
}

#[test]
fn a_save_in_another_file_of_the_project_is_seen_or_silences() {
    let utils = "import torch\n\n\ndef save_checkpoint(path, model, optimizer, epoch):\n    torch.save({\"model\": model.state_dict(), \"optimizer\": optimizer.state_dict(), \"epoch\": epoch}, path)\n";
    let train = "import torch
import torch.nn as nn
from utils import save_checkpoint


def main(resume=False):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if resume:
        ckpt = torch.load(\"ckpt.pt\")
        optimizer.load_state_dict(ckpt[\"optimizer\"])
    save_checkpoint(\"ckpt.pt\", model, optimizer, 0)


main()
main(resume=True)
";
    let d = project("helper", &[("utils.py", utils), ("train.py", train)]);
    let path = d.join("train.py");
    let found = check_source(train, path.to_str().unwrap(), &Settings::default());
    assert!(found.iter().all(|f| f.rule.code != "SHP312"), "{found:?}");
}
