//! `analyze_source` (the language server's one run per edit) against `check_source_undecided`
//! (the CLI's and flake8's): over every fixture and example, the same findings (with their
//! related places) and the same undecided checks. Recording the shapes of every span only
//! observes. And every recorded span lies inside the file, with at least one tensor.

use std::path::{Path, PathBuf};

use shape_lint::{Settings, analyze_source, check_source_undecided};

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn analyze_source_reports_what_check_source_reports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    python_files(&root.join("tests/fixtures"), &mut files);
    python_files(&root.join("examples"), &mut files);
    files.sort();
    assert!(files.len() > 100, "fixtures not found: {}", files.len());
    let settings = Settings::default();
    let mut spans = 0;
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.to_string_lossy();
        let (findings, undecided) = check_source_undecided(&source, &name, &settings);
        let (f2, u2, shapes) = analyze_source(&source, &name, &settings);
        assert_eq!(findings, f2, "{name}: findings differ");
        assert_eq!(undecided, u2, "{name}: undecided checks differ");
        let rows = source.lines().count().max(1);
        for s in &shapes {
            assert!(!s.views.is_empty(), "{name}: a span without a tensor");
            assert!((s.row, s.col) < (s.end_row, s.end_col) && s.end_row <= rows + 1, "{name}: span {s:?}");
        }
        spans += shapes.len();
    }
    assert!(spans > 1000, "hardly any shapes recorded: {spans}");
}
