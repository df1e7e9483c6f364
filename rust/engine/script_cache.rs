//! The shared script results (`engine::scripts`) kept across processes: flake8's workers
//! (`--jobs`) and later runs of the CLI take a script's result from the disk rather than run
//! the script again.
//!
//! The Python layer turns it on with `Settings::script_cache`, the salt it keys its own results
//! cache with (the core's build), exactly when its results cache is on (not with `-n/--no-cache`
//! or `--shp-no-cache`), for a file in a project with a root marker. An entry lives in
//! `.shape_lint_cache/scripts/v1/` under the project root, one file per script and settings
//! (named by a hash of the salt, the settings, the script, the project's top folder and the
//! paths of the project's Python files: a module added or removed changes what an import
//! finds), holding the full key and the result in a plain length-prefixed text form. The result
//! carries the content hash of every file its run asked to load, and is used only while they
//! all match the files on disk, as within a process; an entry of another result is replaced
//! by the newest. Written atomically (a temporary file renamed into place), so concurrent
//! workers never read half an entry; an entry that cannot be read or written only costs the run.

use super::interp::Budget;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::scripts::{PlaceOut, ScriptResult, Seen};
use crate::diagnostics::{Edit, Finding, Fix, FreeParam, OriginLink, Undecided};

const FORMAT: &str = "shape-lint script result 3\n";

/// The file of the entry for `key` (the salt and the shared result's own key) in the project
/// at `root`.
fn entry_path(root: &Path, key: &str) -> PathBuf {
    // two hashes of the key (its `hash_of`, and that of the key reversed) name the file; the file
    // holds the key itself, so names that collide only cost a run
    let reversed: String = key.chars().rev().collect();
    let name = format!("{:016x}{:016x}", super::scripts::text_hash(key), super::scripts::text_hash(&reversed));
    root.join(".shape_lint_cache").join("scripts").join("v1").join(name)
}

/// The result kept for `key`, if its entry can be read.
pub fn load(root: &Path, key: &str) -> Option<ScriptResult> {
    let text = std::fs::read_to_string(entry_path(root, key)).ok()?;
    let mut r = Reader(text.strip_prefix(FORMAT)?);
    if r.s()? != key {
        return None;
    }
    r.result()
}

/// Keep `result` for `key` (nothing when it cannot be written).
pub fn store(root: &Path, key: &str, result: &ScriptResult) {
    let mut w = Writer(String::from(FORMAT));
    w.s(key);
    if w.result(result).is_none() {
        return;
    }
    let path = entry_path(root, key);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
    let top = root.join(".shape_lint_cache");
    if !top.exists() && std::fs::create_dir(&top).is_ok() {
        let _ = std::fs::write(top.join(".gitignore"), "# created by shape-lint\n*\n");
    }
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{}.{}.{:?}.tmp", name.to_string_lossy(), std::process::id(), std::thread::current().id()));
    if std::fs::write(&tmp, w.0.as_bytes()).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Strings as `len:text`, numbers as `n;`, in a fixed order.
struct Writer(String);

impl Writer {
    fn s(&mut self, x: &str) {
        let _ = write!(self.0, "{}:{x}", x.len());
    }
    fn n(&mut self, x: impl std::fmt::Display) {
        let _ = write!(self.0, "{x};");
    }
    fn opt_n(&mut self, x: Option<impl std::fmt::Display>) {
        match x {
            Some(x) => {
                self.n(1);
                self.n(x);
            }
            None => self.n(0),
        }
    }
    fn opt_s(&mut self, x: Option<&str>) {
        self.n(u8::from(x.is_some()));
        if let Some(x) = x {
            self.s(x);
        }
    }
    fn at(&mut self, (row, col): (usize, usize)) {
        self.n(row);
        self.n(col);
    }

    fn result(&mut self, r: &ScriptResult) -> Option<()> {
        self.n(u8::from(r.entry));
        // (the budget that abandoned it: 0 none, 1 steps, 2 paths, 3 the clock)
        self.n(r.spent.map_or(0, |b| b as u8 + 1));
        self.n(r.steps);
        self.opt_n(r.spent_at.map(|a| a.0));
        self.opt_n(r.spent_at.map(|a| a.1));
        self.n(r.files.len());
        for f in &r.files {
            self.s(f.path.to_str()?);
            self.opt_n(f.hash);
            self.n(u8::from(f.loaded));
            self.n(f.findings.len());
            f.findings.iter().for_each(|x| self.finding(x));
            self.n(f.undecided.len());
            for u in &f.undecided {
                self.finding(&u.finding);
                self.s(&u.context);
                self.s(&u.precondition);
                self.n(u.params.len());
                for p in &u.params {
                    self.s(&p.smt);
                    self.s(&p.name);
                    self.s(p.kind);
                    self.opt_n(p.default);
                }
                self.n(u8::from(u.free));
            }
        }
        self.n(r.places.len());
        for p in &r.places {
            self.opt_n(p.file);
            self.n(p.offsets.0);
            self.n(p.offsets.1);
            self.at(p.start);
            self.at(p.end);
        }
        Some(())
    }

    fn finding(&mut self, f: &Finding) {
        self.s(f.rule.code);
        self.s(&f.message);
        self.at((f.row, f.col));
        self.at((f.end_row, f.end_col));
        self.n(f.trace.len());
        f.trace.iter().for_each(|t| self.s(t));
        self.n(f.origins.len());
        for o in &f.origins {
            self.s(&o.text);
            self.opt_n(o.value);
            self.s(o.kind);
            self.opt_s(o.place.as_deref());
            self.n(o.pos);
            self.opt_s(o.by.as_deref());
            self.n(o.depth);
        }
        self.opt_s(f.condition.as_deref());
        // (`related` is found when a file takes the finding: always empty here)
        self.n(u8::from(f.fix.is_some()));
        if let Some(fix) = &f.fix {
            self.s(&fix.message);
            self.n(fix.edits.len());
            for e in &fix.edits {
                self.s(&e.content);
                self.at((e.row, e.col));
                self.at((e.end_row, e.end_col));
                self.n(e.start);
                self.n(e.end);
            }
        }
    }
}

struct Reader<'t>(&'t str);

impl Reader<'_> {
    fn s(&mut self) -> Option<String> {
        let (len, rest) = self.0.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let text = rest.get(..len)?;
        self.0 = &rest[len..];
        Some(text.to_string())
    }
    fn n<T: std::str::FromStr>(&mut self) -> Option<T> {
        let (x, rest) = self.0.split_once(';')?;
        self.0 = rest;
        x.parse().ok()
    }
    fn flag(&mut self) -> Option<bool> {
        Some(self.n::<u8>()? != 0)
    }
    fn opt_n<T: std::str::FromStr>(&mut self) -> Option<Option<T>> {
        Some(if self.flag()? { Some(self.n()?) } else { None })
    }
    fn opt_s(&mut self) -> Option<Option<String>> {
        Some(if self.flag()? { Some(self.s()?) } else { None })
    }
    fn at(&mut self) -> Option<(usize, usize)> {
        Some((self.n()?, self.n()?))
    }
    /// A count of items, each at least a few bytes: bounded by what is left to read.
    fn count(&mut self) -> Option<usize> {
        let n: usize = self.n()?;
        (n <= self.0.len()).then_some(n)
    }

    fn result(&mut self) -> Option<ScriptResult> {
        let entry = self.flag()?;
        let spent = match self.n::<u8>()? {
            0 => None,
            2 => Some(Budget::Paths),
            3 => Some(Budget::Clock),
            _ => Some(Budget::Steps),
        };
        let steps = self.n()?;
        let spent_at = self.opt_n()?.zip(self.opt_n()?);
        let mut r = ScriptResult { entry, spent, spent_at, steps, ..ScriptResult::default() };
        for _ in 0..self.count()? {
            let path = PathBuf::from(self.s()?);
            let hash = self.opt_n()?;
            let loaded = self.flag()?;
            let findings = (0..self.count()?).map(|_| self.finding()).collect::<Option<Vec<_>>>()?;
            let mut undecided = Vec::new();
            for _ in 0..self.count()? {
                let finding = self.finding()?;
                let (context, precondition) = (self.s()?, self.s()?);
                let mut params = Vec::new();
                for _ in 0..self.count()? {
                    let (smt, name, kind) = (self.s()?, self.s()?, self.s()?);
                    let kind = ["option", "ctor", "input", "data"].into_iter().find(|k| *k == kind)?;
                    params.push(FreeParam { smt, name, kind, default: self.opt_n()? });
                }
                undecided.push(Undecided { finding, context, precondition, params, free: self.flag()? });
            }
            r.files.push(Seen { path, hash, loaded, findings, undecided });
        }
        for _ in 0..self.count()? {
            let file: Option<usize> = self.opt_n()?;
            if file.is_some_and(|i| i >= r.files.len()) {
                return None;
            }
            r.places.push(PlaceOut { file, offsets: (self.n()?, self.n()?), start: self.at()?, end: self.at()? });
        }
        self.0.is_empty().then_some(r)
    }

    fn finding(&mut self) -> Option<Finding> {
        let rule = crate::rules::by_code(&self.s()?)?;
        let message = self.s()?;
        let ((row, col), (end_row, end_col)) = (self.at()?, self.at()?);
        let trace = (0..self.count()?).map(|_| self.s()).collect::<Option<Vec<_>>>()?;
        let mut origins = Vec::new();
        for _ in 0..self.count()? {
            let text = self.s()?;
            let value = self.opt_n()?;
            let kind = self.s()?;
            let kind = *OriginLink::KINDS.iter().find(|k| **k == kind)?;
            let place = self.opt_s()?;
            let pos = self.n()?;
            let by = self.opt_s()?;
            origins.push(OriginLink { text, value, kind, place, pos, by, depth: self.n()? });
        }
        let condition = self.opt_s()?;
        let fix = if self.flag()? {
            let message = self.s()?;
            let mut edits = Vec::new();
            for _ in 0..self.count()? {
                let content = self.s()?;
                let ((row, col), (end_row, end_col)) = (self.at()?, self.at()?);
                edits.push(Edit { content, row, col, end_row, end_col, start: self.n()?, end: self.n()? });
            }
            Some(Fix { message, edits })
        } else {
            None
        };
        Some(Finding { rule, message, row, col, end_row, end_col, trace, origins, condition, related: Vec::new(), fix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_back_as_it_was_written() {
        let rule = crate::rules::ALL[0];
        let finding = Finding {
            rule,
            message: "bad: 3:x; \u{E000}0\u{E001}".into(),
            row: 3,
            col: 4,
            end_row: 3,
            end_col: 9,
            trace: vec!["a".into(), "".into()],
            origins: vec![
                OriginLink { text: "2304 = 64·6·6, flattened at \u{E000}1\u{E001}".into(), value: Some(2304), kind: "merged", place: Some("\u{E000}1\u{E001}".into()), pos: 1, by: None, depth: 0 },
                OriginLink { text: "64 from out_channels of conv2 (line 8)".into(), value: None, kind: "said", place: None, pos: 0, by: Some("conv2".into()), depth: 1 },
            ],
            condition: Some("n < 2".into()),
            related: Vec::new(),
            fix: Some(Fix { message: "use 8".into(), edits: vec![Edit { content: "8".into(), row: 3, col: 5, end_row: 3, end_col: 6, start: 40, end: 41 }] }),
        };
        let undecided = Undecided {
            finding: Finding { fix: None, condition: None, ..finding.clone() },
            context: "(declare-fun n_1 () Int)\n".into(),
            precondition: "(= n_1 2)".into(),
            params: vec![FreeParam { smt: "n_1".into(), name: "--n".into(), kind: "option", default: Some(-3) }],
            free: true,
        };
        let r = ScriptResult {
            files: vec![
                Seen { path: "/p/train.py".into(), hash: Some(u64::MAX), loaded: true, findings: vec![finding], undecided: vec![undecided] },
                Seen { path: "/p/bad é.py".into(), hash: None, loaded: false, findings: Vec::new(), undecided: Vec::new() },
            ],
            places: vec![PlaceOut { file: Some(0), offsets: (1, 2), start: (1, 2), end: (1, 3) }, PlaceOut { file: None, offsets: (0, 0), start: (0, 0), end: (0, 0) }],
            entry: true,
            spent: Some(Budget::Steps),
            spent_at: Some((17, 29)),
            steps: 1234,
            timed_out: false,
        };
        let mut w = Writer(String::new());
        w.result(&r).unwrap();
        let back = Reader(&w.0).result().unwrap();
        assert_eq!(format!("{back:?}"), format!("{r:?}"));
        // a truncated entry reads as none
        assert!(Reader(&w.0[..w.0.len() - 3]).result().is_none());
    }
}
