//! Path explosion (issue 9): for each block kind of `bench/block_kinds.rs`, a model of 100
//! blocks keeps at most 4 live paths under the default budget, is not abandoned, and the
//! planted head bug after the blocks is reported at its line. Before paths joined on abstract
//! values (dead frames collected, first-use refinements shared across paths), the
//! identity-return kind had 101 paths at 100 blocks and the scaling kind lost the bug.

use shape_lint::{Settings, engine, ir, parse};

#[path = "../bench/block_kinds.rs"]
mod block_kinds;

#[test]
fn every_block_kind_joins_its_paths_and_reports_the_head_bug() {
    for (kind, body) in block_kinds::KINDS {
        for blocks in [1, 24, 100] {
            let src = block_kinds::model(body, blocks);
            let parsed = parse::parse(&src);
            let module = ir::lower::lower_module(&parsed);
            let (findings, stats) = engine::analyze_with_stats(&module, &parsed, &Settings::default());
            let line = block_kinds::bug_line(&src);
            assert!(line > 0);
            let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
            assert_eq!(codes, vec![(line, "SHP101")], "{kind} x{blocks}: the head bug, and nothing else");
            assert!(stats.max_paths <= 4, "{kind} x{blocks}: {} live paths", stats.max_paths);
            assert_eq!(stats.abandoned, 0, "{kind} x{blocks}: abandoned");
        }
    }
}
