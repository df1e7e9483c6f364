//! The analysis thread (`guarded` in lib.rs) runs one file after another: each file's
//! findings are those it has on a thread of its own, whatever ran before it on that thread.

use shape_lint::Settings;
use std::path::PathBuf;

/// Every eighth fixture (bugs and clean twins of every family), sorted.
fn fixtures() -> Vec<(String, String)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("tests/fixtures")
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    paths.sort();
    paths.into_iter().step_by(8).map(|p| (p.to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap())).collect()
}

fn findings(path: &str, src: &str) -> String {
    format!("{:?}", shape_lint::check_source(src, path, &Settings::default()))
}

#[test]
fn a_files_findings_do_not_depend_on_the_files_analysed_before_it_on_the_thread() {
    let files = fixtures();
    assert!(files.len() >= 40, "{}", files.len());
    // one after another on this test's analysis thread, then in the reverse order
    let forward: Vec<String> = files.iter().map(|(p, s)| findings(p, s)).collect();
    let backward: Vec<String> = files.iter().rev().map(|(p, s)| findings(p, s)).collect();
    // and each alone, on a thread of its own (a new caller: a new analysis thread)
    let alone: Vec<String> = files.iter().map(|(p, s)| std::thread::scope(|t| t.spawn(|| findings(p, s)).join().unwrap())).collect();
    let mut reported = 0;
    for (i, (path, _)) in files.iter().enumerate() {
        assert_eq!(forward[i], alone[i], "{path}: after the files before it");
        assert_eq!(backward[files.len() - 1 - i], alone[i], "{path}: after the files after it");
        reported += usize::from(alone[i] != "[]");
    }
    assert!(reported >= 10, "the sample has findings to compare: {reported}");
}
