//! `self.training` of a user module: true for a module the script built and never switched (as
//! torch builds every module in training mode), false after `.eval()`, not known in a
//! `forward` analysed on its own (its caller may have switched it) or after a call the analysis
//! cannot see into. Every case was run under torch 2.13: a reported line is where torch raises;
//! of the silent ones, the script calls run (the unseen call's stands for any library's).
use shape_lint::{Settings, check_source};

const MODEL: &str = "import sys\nimport torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        if self.training:\n            x = x[:, :3]\n        return self.fc(x)\n\n\n";

fn codes(script: &str) -> Vec<(usize, &'static str)> {
    let src = format!("{MODEL}{script}");
    check_source(&src, "t.py", &Settings::default()).iter().map(|f| (f.row, f.rule.code)).collect()
}

#[test]
fn a_module_built_by_the_script_is_in_training_mode_until_switched() {
    assert_eq!(codes("M()(torch.randn(2, 4))\n"), [(14, "SHP101")]);
    assert_eq!(codes("m = M()\nm.eval()\nm(torch.randn(2, 4))\n"), []);
    assert_eq!(codes("m = M()\nm.eval()\nm.train()\nm(torch.randn(2, 4))\n"), [(14, "SHP101")]);
    // switched by a call the analysis cannot see into: either mode
    assert_eq!(codes("m = M()\nsys.modules['x'].prepare(m)\nm(torch.randn(2, 4))\n"), []);
}

#[test]
fn a_forward_analysed_on_its_own_may_run_in_either_mode() {
    assert_eq!(codes(""), []);
}
