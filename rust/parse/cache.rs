//! The parsed project files of this process, shared by its analyses.
//!
//! Each analysis loads the project files its file imports (`engine::project`), on a thread of
//! its own; checking a repository, most analyses import the same few packages, and parsing
//! them again was 7.5% of the CPU time on timm (315 files, each importing `timm.layers`). A
//! file's tree is kept with the text it was parsed from and is reused only for an equal text,
//! so an edited file is parsed again; it is kept only when its text parses without error (the
//! only trees a loaded module has). The cache holds at most `MAX_SOURCE_BYTES` of text (a
//! tree takes about ten times its text), dropping the least recently used first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::{ParsedFile, Tree, tree_of};

/// At most this much source text (and its trees) is kept: 16 analyses' worth of loaded modules
/// (`engine::project::MAX_LOADED_BYTES`).
pub const MAX_SOURCE_BYTES: usize = 4 << 20;

struct Entry {
    text: Arc<str>,
    tree: Arc<Tree>,
    used: u64,
}

struct Cache {
    entries: HashMap<PathBuf, Entry>,
    bytes: usize,
    budget: usize,
    clock: u64,
}

impl Cache {
    fn new(budget: usize) -> Cache {
        Cache { entries: HashMap::new(), bytes: 0, budget, clock: 0 }
    }

    /// The tree kept for `path` when it was parsed from an equal text.
    fn get(&mut self, path: &Path, source: &str) -> Option<Arc<Tree>> {
        self.clock += 1;
        let e = self.entries.get_mut(path).filter(|e| *e.text == *source)?;
        e.used = self.clock;
        Some(e.tree.clone())
    }

    /// Keep `tree`, parsed from `source`, for `path` (replacing what was kept for it), then
    /// drop the least recently used past the budget.
    fn put(&mut self, path: &Path, source: &str, tree: Arc<Tree>) {
        if source.len() > self.budget / 4 {
            return;
        }
        self.clock += 1;
        if let Some(old) = self.entries.insert(path.to_path_buf(), Entry { text: Arc::from(source), tree, used: self.clock }) {
            self.bytes -= old.text.len();
        }
        self.bytes += source.len();
        while self.bytes > self.budget {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(p, _)| p.clone()) else { break };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= e.text.len();
            }
        }
    }
}

static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();

/// The parse of `source`, the text of the project file at `path`: the tree kept for an equal
/// text, else a new parse (kept when it has no syntax error).
pub fn parse_shared<'src>(path: &Path, source: &'src str) -> ParsedFile<'src> {
    let cache = CACHE.get_or_init(|| Mutex::new(Cache::new(MAX_SOURCE_BYTES)));
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(tree) = lock().get(path, source) {
        return ParsedFile { source, tree };
    }
    // parsed without the lock: another analysis may parse the same text meanwhile (the
    // trees are equal; the last one stays)
    let parsed = ParsedFile { source, tree: Arc::new(tree_of(source)) };
    if !parsed.has_syntax_errors() {
        lock().put(path, source, parsed.tree.clone());
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(source: &str) -> Arc<Tree> {
        Arc::new(tree_of(source))
    }

    #[test]
    fn an_equal_text_shares_the_tree_and_an_edited_one_is_parsed_again() {
        let mut c = Cache::new(1000);
        let path = Path::new("a.py");
        let a = tree("x = 1\n");
        c.put(path, "x = 1\n", a.clone());
        assert!(c.get(path, "x = 1\n").is_some_and(|t| Arc::ptr_eq(&t, &a)));
        assert!(c.get(path, "x = 2\n").is_none());
        assert!(c.get(Path::new("b.py"), "x = 1\n").is_none());
        // the edit's tree replaces the first
        c.put(path, "x = 2\n", tree("x = 2\n"));
        assert!(c.get(path, "x = 1\n").is_none());
        assert_eq!((c.entries.len(), c.bytes), (1, 6));
    }

    #[test]
    fn the_least_recently_used_go_first_past_the_budget() {
        let mut c = Cache::new(20);
        let text = "x = 1";
        for name in ["a.py", "b.py", "c.py", "d.py"] {
            c.put(Path::new(name), text, tree(text));
        }
        assert_eq!((c.entries.len(), c.bytes), (4, 20));
        assert!(c.get(Path::new("a.py"), text).is_some());
        c.put(Path::new("e.py"), text, tree(text));
        // 25 bytes > 20: b, the least recently used, went
        assert!(c.get(Path::new("b.py"), text).is_none());
        for name in ["a.py", "c.py", "d.py", "e.py"] {
            assert!(c.get(Path::new(name), text).is_some(), "{name}");
        }
        assert_eq!(c.bytes, 20);
        // a text larger than a quarter of the budget is not kept
        c.put(Path::new("f.py"), "x = 12", tree("x = 12"));
        assert!(c.get(Path::new("f.py"), "x = 12").is_none());
    }

    #[test]
    fn the_shared_parse_reads_like_a_parse() {
        let path = Path::new("/nonexistent/shape-lint-test/parse_cache.py");
        let a = parse_shared(path, "x = 1\ny = 2\n");
        let b = parse_shared(path, "x = 1\ny = 2\n");
        assert_eq!((b.line_text(2), b.row(7)), ("y = 2", 2));
        assert_eq!(a.module().body.len(), b.module().body.len());
        assert!(parse_shared(path, "def f(:\n").has_syntax_errors());
    }
}
