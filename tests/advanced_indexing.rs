//! Advanced indexing with several integer index tensors of one shape (`x[:, rows, cols]`):
//! their shape once, where the first stands when they are side by side, else first. Index
//! tensors of different shapes (which broadcast) stay Unknown. Every case was run under torch
//! 2.13: a reported line is where torch raises, a silent case runs.
use shape_lint::{Settings, check_source};

fn codes(src: &str) -> Vec<(usize, &'static str)> {
    let src = format!("import torch\n{src}");
    check_source(&src, "t.py", &Settings::default()).iter().map(|f| (f.row - 1, f.rule.code)).collect()
}

#[test]
fn index_tensors_of_one_shape_index_together() {
    // the pairs of an upper triangle: [2, 15]
    let pairs = |n: u32| format!("x = torch.randn(2, 6, 6)\niu = torch.triu_indices(6, 6, offset=1)\ny = x[:, iu[0], iu[1]].view(2, {n})\n");
    assert_eq!(codes(&pairs(16)), [(3, "SHP103")]);
    assert_eq!(codes(&pairs(15)), []);
    let x = "x = torch.randn(4, 5, 6)\na = torch.arange(3)\n";
    // apart: their shape first, [3, 5]
    assert_eq!(codes(&format!("{x}y = x[a, :, a].view(14)\n")), [(3, "SHP103")]);
    assert_eq!(codes(&format!("{x}y = x[a, :, a].view(15)\n")), []);
    // side by side after a new axis, [1, 3, 6]; after `...`, [4, 3]
    assert_eq!(codes(&format!("{x}y = x[None, a, a].view(19)\n")), [(3, "SHP103")]);
    assert_eq!(codes(&format!("{x}y = x[None, a, a].view(18)\n")), []);
    assert_eq!(codes(&format!("{x}y = x[..., a, a].view(13)\n")), [(3, "SHP103")]);
    assert_eq!(codes(&format!("{x}y = x[..., a, a].view(12)\n")), []);
    // shapes that broadcast ([3] and [1]): not modelled
    assert_eq!(codes(&format!("{x}y = x[a, torch.arange(1)].view(17)\n")), []);
}
