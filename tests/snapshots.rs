//! Snapshots of the full rendered findings: a safety net for refactoring the core.
//!
//! Every fixture program `tests/fixtures/<group>/<name>.py` and every `examples/*.py` is
//! checked with `check_source_undecided` and default settings, and the rendering of what comes
//! back (each finding's code, name, span, message, path condition and trace; each undecided
//! check exported for the Z3 bridge, with its precondition and SMT-LIB context) must equal the
//! stored snapshot: `tests/fixtures/<group>/snapshots/<name>.snap` for a fixture,
//! `tests/snapshots/examples__<name>.snap` for an example, `tests/snapshots/inline__*.snap`
//! for the small programs below that cover the rules no fixture triggers. A clean file has a
//! snapshot too ("no findings"), so a new false alarm shows up as a diff.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test snapshots`, then
//! review `git diff` and explain every changed snapshot in the commit. With `CI=true` a
//! mismatch fails and nothing is written.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use shape_lint::{Finding, Settings, Undecided, check_source_undecided};

/// One snapshot: its name, the directory it lives in, the file it renders, its text.
struct Case {
    name: String,
    dir: PathBuf,
    source: String,
    text: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `text` on one line after `label`, continuation lines indented under it.
fn field(out: &mut String, indent: &str, label: &str, text: &str) {
    let mut lines = text.split('\n');
    out.push_str(&format!("{indent}{label}{}\n", lines.next().unwrap_or("")));
    for l in lines {
        out.push_str(&format!("{indent}    {l}\n"));
    }
}

fn finding(out: &mut String, f: &Finding) {
    out.push_str(&format!("{} {} {}:{}-{}:{}\n", f.rule.code, f.rule.name, f.row, f.col, f.end_row, f.end_col));
    field(out, "  ", "message: ", &f.message);
    if let Some(c) = &f.condition {
        field(out, "  ", "when ", c);
    }
    if !f.trace.is_empty() {
        out.push_str("  trace:\n");
        for t in &f.trace {
            field(out, "    ", "- ", t);
        }
    }
}

/// The deterministic text of what the core reports for one file.
fn render(findings: &[Finding], undecided: &[Undecided]) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        out.push_str("no findings\n");
    } else {
        out.push_str(&format!("{} finding(s)\n", findings.len()));
        for f in findings {
            out.push('\n');
            finding(&mut out, f);
        }
    }
    out.push('\n');
    if undecided.is_empty() {
        out.push_str("no undecided checks\n");
    } else {
        out.push_str(&format!("{} undecided check(s), reported if the precondition is unsatisfiable in the context\n", undecided.len()));
        for u in undecided {
            out.push('\n');
            out.push_str("undecided ");
            finding(&mut out, &u.finding);
            field(&mut out, "  ", "precondition: ", &u.precondition);
            out.push_str("  context:\n");
            for l in u.context.trim_end_matches('\n').split('\n') {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

/// The analysis settings of every case: the defaults, except the wall-clock safety net (30 s
/// by default), so that no snapshot depends on the speed of the machine (a debug build on a
/// busy CI runner). The deterministic budgets (`max_steps`, `max_paths`) keep their defaults. Every
/// fixture takes well under 100 ms in a debug build, so the default budget gives the same
/// results (`tests/test_fixtures.py` runs them with the plain defaults).
fn settings() -> Settings {
    Settings { timeout_ms: 600_000, ..Settings::default() }
}

fn check_file(rel: &str, dir: PathBuf, name: String) -> Case {
    let src = std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let (findings, undecided) = check_source_undecided(&src, rel, &settings());
    Case { name, dir, source: rel.to_string(), text: render(&findings, &undecided) }
}

fn py_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "py"))
        .collect();
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_str().unwrap().to_string()
}

/// `tests/fixtures/<group>/<name>.py`, sorted, as paths relative to the crate root.
fn fixture_files() -> Vec<String> {
    let base = root().join("tests/fixtures");
    let mut groups: Vec<PathBuf> = std::fs::read_dir(&base).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    groups.sort();
    let mut out = Vec::new();
    for g in groups {
        for f in py_files(&g) {
            out.push(f.strip_prefix(root()).unwrap().to_str().unwrap().replace('\\', "/"));
        }
    }
    out
}

fn fixture_cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let files = fixture_files();
        assert!(files.len() > 100, "only {} fixtures found", files.len());
        // two workers: the fixtures are independent
        let (a, b): (Vec<_>, Vec<_>) = files.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let run = |part: Vec<(usize, &String)>| -> Vec<(usize, Case)> {
            part.into_iter()
                .map(|(i, rel)| {
                    let p = root().join(rel);
                    (i, check_file(rel, p.parent().unwrap().join("snapshots"), stem(&p)))
                })
                .collect()
        };
        let mut all = std::thread::scope(|s| {
            let h = s.spawn(|| run(b));
            let mut all = run(a);
            all.extend(h.join().unwrap());
            all
        });
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, c)| c).collect()
    })
}

fn example_cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let files = py_files(&root().join("examples"));
        assert!(!files.is_empty(), "no examples/*.py");
        files
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(root()).unwrap().to_str().unwrap().replace('\\', "/");
                check_file(&rel, root().join("tests/snapshots"), format!("examples__{}", stem(p)))
            })
            .collect()
    })
}

/// The opt-in SHP901 (from `tests/test_may_fail.py`): `pred` is [64, 1], the targets [64].
/// A script that builds and calls a model with a loop in its `forward`, and two classes
/// (the `SHP002` cases cut it at several budgets).
const BUDGETED: &str = r#"import torch
import torch.nn as nn


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 8)

    def forward(self, x):
        for i in range(10):
            x = x * 2
        return self.l(x)


class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 2)

    def forward(self, x):
        return self.l(x)


m = A()
y = m(torch.randn(2, 4))
print(B()(y).shape)
"#;

const LOSS_BROADCAST: &str = "\
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(8, 1)
x = torch.randn(64, 8)
y = torch.randn(64)
pred = model(x)
loss = F.mse_loss(pred, y)
loss2 = nn.MSELoss()(pred.squeeze(1), y)
loss3 = nn.L1Loss()(pred, y.unsqueeze(1))
";

/// Programs for the rules that no fixture triggers.
fn inline_cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let dir = root().join("tests/snapshots");
        let mut out = Vec::new();
        let mut check = |name: &str, source: &str, src: &str, s: Settings| {
            let (findings, undecided) = check_source_undecided(src, "inline.py", &s);
            out.push(Case { name: format!("inline__{name}"), dir: dir.clone(), source: source.to_string(), text: render(&findings, &undecided) });
        };
        check("shp901_loss_target_broadcast", "LOSS_BROADCAST, may_fail: true", LOSS_BROADCAST, Settings { may_fail: true, ..settings() });
        check("shp901_off_by_default", "LOSS_BROADCAST, default settings", LOSS_BROADCAST, settings());
        // SHP002: the step budget spent in the script, then in a `forward` (the entries after it
        // not started), and not at all
        check("shp002_steps_in_script", "BUDGETED, max_steps: 40", BUDGETED, Settings { max_steps: 40, ..settings() });
        check("shp002_steps_in_forward", "BUDGETED, max_steps: 100", BUDGETED, Settings { max_steps: 100, ..settings() });
        check("shp002_within_budget", "BUDGETED, default settings", BUDGETED, settings());
        // SHP902: the candidates of the free-parameter run (options as symbols, named in the
        // user's terms) and the message form. The counterexample comes from Z3 in
        // `python/shape_lint/may_fail.py`; `tests/test_may_fail_fixtures.py` runs it under torch.
        let rel = "tests/fixtures/may_fail/head_split_option.py";
        let src = std::fs::read_to_string(root().join(rel)).unwrap();
        let (findings, undecided) = check_source_undecided(&src, rel, &Settings { may_fail: true, free_params: true, ..settings() });
        let mut text = render(&findings, &undecided);
        for u in &undecided {
            let params: Vec<String> = u.params.iter().map(|p| format!("{}={} ({}, default {:?})", p.smt, p.name, p.kind, p.default)).collect();
            text.push_str(&format!("\nparams of {}:{}: {} (all free: {})\n", u.finding.row, u.finding.col, params.join(", "), u.free));
        }
        if let Some(u) = undecided.first() {
            use shape_lint::rules::violation::Violation;
            let v = shape_lint::rules::may_fail::may_fail_for_some_values::MayFailForSomeValues::Fails { message: u.finding.message.clone(), values: "--heads=9".into() };
            let f = Finding { rule: &shape_lint::rules::may_fail::may_fail_for_some_values::RULE, message: v.message(), ..u.finding.clone() };
            text.push_str("\nas the bridge reports it (values from Z3):\n");
            finding(&mut text, &f);
        }
        out.push(Case { name: "inline__shp902_free_parameters".into(), dir: dir.clone(), source: format!("{rel}, may_fail + free_params"), text });
        // SHP001 needs a panic in the analysis, which no program causes: the same panic guard
        // and rendering, fed a reason (only the first line, at most 120 characters, is shown)
        let long = format!("index out of bounds: the len is 3 but the index is 7 {}\nsecond line\n", "x".repeat(100));
        let findings = shape_lint::internal_error_for_panic(&long);
        out.push(Case {
            name: "inline__shp001_internal_error".into(),
            dir: dir.clone(),
            source: "internal_error_for_panic(a 153-character reason + a second line)".into(),
            text: render(&findings, &[]),
        });
        out
    })
}

/// Assert every case's snapshot; report all mismatches, not only the first.
fn assert_cases(cases: &[Case]) {
    let mut failed = Vec::new();
    for c in cases {
        let mut s = insta::Settings::clone_current();
        s.set_snapshot_path(&c.dir);
        s.set_prepend_module_to_snapshot(false);
        s.set_omit_expression(true);
        s.set_description(c.source.clone());
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.bind(|| insta::assert_snapshot!(c.name.as_str(), c.text.as_str()))));
        if ok.is_err() {
            failed.push(format!("{} ({})", c.name, c.source));
        }
    }
    assert!(failed.is_empty(), "{} snapshot(s) differ:\n  {}", failed.len(), failed.join("\n  "));
}

#[test]
fn fixtures() {
    assert_cases(fixture_cases());
}

#[test]
fn examples() {
    assert_cases(example_cases());
}

#[test]
fn rules_without_a_fixture() {
    assert_cases(inline_cases());
}

/// The codes that head a finding (reported or undecided) in a snapshot text.
fn codes_in(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("undecided ").or(Some(l)))
        .filter_map(|l| l.split(' ').next())
        .filter(|w| w.len() == 6 && w.starts_with("SHP") && w[3..].bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

/// Every registered rule heads a finding in at least one snapshot.
#[test]
fn every_rule_has_a_snapshot() {
    let mut count = std::collections::BTreeMap::<&str, Vec<&str>>::new();
    for c in fixture_cases().iter().chain(example_cases()).chain(inline_cases()) {
        for code in codes_in(&c.text) {
            count.entry(code).or_default().push(&c.name);
        }
    }
    for (code, names) in &count {
        eprintln!("{code}: {} finding(s) in {} snapshot(s)", names.len(), { let mut n = names.clone(); n.dedup(); n.len() });
    }
    let missing: Vec<_> = shape_lint::rules::ALL.iter().filter(|r| !count.contains_key(r.code)).map(|r| format!("{} {}", r.code, r.name)).collect();
    assert!(missing.is_empty(), "rules in no snapshot (add a fixture or an inline case): {missing:?}");
    let unknown: Vec<_> = count.keys().filter(|c| shape_lint::rules::by_code(c).is_none()).collect();
    assert!(unknown.is_empty(), "snapshots name unregistered codes: {unknown:?}");
}

/// No stored snapshot without its case (a renamed or deleted fixture leaves one behind).
#[test]
fn no_stale_snapshots() {
    let mut expected: Vec<PathBuf> = fixture_files()
        .iter()
        .map(|rel| {
            let p = root().join(rel);
            p.parent().unwrap().join("snapshots").join(format!("{}.snap", stem(&p)))
        })
        .collect();
    expected.extend(example_cases().iter().chain(inline_cases()).map(|c| c.dir.join(format!("{}.snap", c.name))));
    let mut dirs: Vec<PathBuf> = expected.iter().map(|p| p.parent().unwrap().to_path_buf()).collect();
    dirs.sort();
    dirs.dedup();
    let mut stale = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "snap") && !expected.contains(&p) {
                stale.push(p.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    stale.sort();
    assert!(stale.is_empty(), "snapshots without a case (delete them): {stale:?}");
}
