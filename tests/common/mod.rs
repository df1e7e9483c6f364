//! What the loop tests (`loop_skips.rs`, `while_loops.rs`, `generalised_loops.rs`) share.

use shape_lint::{Settings, engine, ir, parse};

/// The analysis of `src` with the default settings: each finding's row and code, and the
/// engine's statistics.
pub fn analyse(src: &str) -> (Vec<(usize, &'static str)>, engine::Stats) {
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    let (findings, stats) = engine::analyze_with_stats(&module, &parsed, &Settings::default());
    (findings.iter().map(|f| (f.row, f.rule.code)).collect(), stats)
}
