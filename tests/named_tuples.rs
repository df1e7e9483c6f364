//! The named tuples torch returns (`torch.return_types`: `x.max(dim)`, `x.sort()`,
//! `x.topk(k)`, ...): `.values` and `.indices` are their two tensors. Every case was run under
//! torch 2.13: a reported line is where torch raises, a silent case runs.
use shape_lint::{Settings, check_source};

fn codes(src: &str) -> Vec<(usize, &'static str)> {
    let src = format!("import torch\nimport torch.nn as nn\n{src}");
    check_source(&src, "t.py", &Settings::default()).iter().map(|f| (f.row - 2, f.rule.code)).collect()
}

#[test]
fn values_and_indices_are_the_tuples_tensors() {
    assert_eq!(codes("x = torch.randn(8, 16, 18)\nv = x.max(dim=2).values\ny = nn.Linear(18, 2)(v)\n"), [(3, "SHP101")]);
    assert_eq!(codes("x = torch.randn(8, 16, 18)\nv = x.sort(dim=2).values\ny = nn.Linear(18, 2)(v)\n"), []);
    assert_eq!(codes("x = torch.randn(8, 16)\ni = x.topk(3, dim=1).indices\ny = i.view(25)\n"), [(3, "SHP103")]);
}
