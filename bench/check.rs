//! Developer tool: analyse files and print findings with their traces, and engine statistics.
//! `--no-memo` / `--no-merge` switch call summaries / path merging off (to measure them);
//! `--max-steps=N`, `--max-paths=N`, `--timeout-ms=N` set the budgets; `--no-stats` runs the
//! check alone (no second run for the statistics: what a profile of it should see).
use shape_lint::{Settings, engine, ir, parse};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = Settings {
        memo: !args.iter().any(|a| a == "--no-memo"),
        prune: !args.iter().any(|a| a == "--no-merge"),
        ..Settings::default()
    };
    let flag = |name: &str| args.iter().find_map(|a| a.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok());
    let settings = Settings {
        max_steps: flag("--max-steps").unwrap_or(settings.max_steps),
        max_paths: flag("--max-paths").map_or(settings.max_paths, |n| n as usize),
        timeout_ms: flag("--timeout-ms").unwrap_or(settings.timeout_ms),
        ..settings
    };
    for path in args.iter().filter(|a| !a.starts_with("--")) {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        let t = std::time::Instant::now();
        let findings = shape_lint::check_source(&src, &path, &settings);
        let dt = t.elapsed();
        for f in &findings {
            println!("{path}:{}:{}: {} {}", f.row, f.col, f.rule.code, f.message);
            for tr in &f.trace {
                println!("    = {tr}");
            }
        }
        if args.iter().any(|a| a == "--no-stats") {
            // only the check itself (to profile it): no second run for the statistics
            println!("# {path}: {} findings, {dt:?}", findings.len());
            continue;
        }
        let parsed = parse::parse(&src);
        let module = ir::lower::lower_module(&parsed);
        let (_, stats) = engine::analyze_with_stats(&module, &parsed, &settings);
        println!(
            "# {path}: {} findings, {:?}, entries={} abandoned={} steps={} max_paths={} memo hits={} misses={} stored={} loop skips={} checks holds={} violated={} undecided={}",
            findings.len(),
            dt,
            stats.entries,
            stats.abandoned,
            stats.steps,
            stats.max_paths,
            stats.memo_hits,
            stats.memo_misses,
            stats.memo_stored,
            stats.loop_skips,
            stats.checks.holds,
            stats.checks.violated,
            stats.checks.undecided
        );
    }
}
