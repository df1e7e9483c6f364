//! Project imports: the other files of the user's project, found as Python finds them for
//! the checked script, loaded into the module table and run once per path.
//!
//! - **Where to look** (`ProjectPaths`): the checked file's directory first (Python's
//!   `sys.path[0]` for a script), then the project root, the nearest directory above it with
//!   `pyproject.toml`, `setup.cfg` or `.git`.
//! - **What is found** (`resolve`, `resolve_relative`): a module `a.b` is `a/b.py` or the
//!   package `a/b/__init__.py` under a search directory; a directory without `__init__.py`
//!   is a namespace package, taken only when no module or package of that name exists (as
//!   Python prefers a regular package anywhere on its path), and never for the libraries the
//!   core models (a folder named `torch` does not hide torch). Relative imports (`from .layers
//!   import Block`) start from the importing module's package.
//! - **Loading** (`Project::load`): each file is read (at most `MAX_FILE_BYTES`) and decoded
//!   as Python decodes source (`encoding.rs`: BOM, PEP 263 coding line, else UTF-8), parsed and
//!   lowered once per analysis into its own `FileId` (from `FIRST_FILE`) and function-id range
//!   (the tree is shared by the analyses of a process that load the same text: `parse::parse_shared`);
//!   at most `MAX_MODULES` files and `MAX_LOADED_BYTES` per analysis. A file that cannot be
//!   read or decoded, has syntax errors, or nests too deeply is not loaded: its import is
//!   Unknown, as for any unknown module.
//!   The checked file, imported by name from another module, is the checked IR itself.
//! - Running a module (`Interp::import_module` in `interp/stmt.rs`) binds it in `sys.modules`
//!   (a heap object, so each path has its own) before its body runs, as Python does, so cycles
//!   end; the module's value is its scope, whose attributes are its globals.

// (FxHash: paths are hashed at every import, and SipHash was 2% of an analysis)
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::ir::{self, FileId};
use crate::parse::SourceLines;

/// The first file id of project modules (below it: the checked file and the embedded roots).
pub const FIRST_FILE: u32 = 64;
/// At most this many project files, of at most `MAX_LOADED_BYTES` in all, are loaded in one
/// analysis (a library's module graph is large; a user's project far smaller).
pub const MAX_MODULES: usize = 24;
pub const MAX_LOADED_BYTES: usize = 1 << 18;
/// Larger files are not loaded (their import is Unknown).
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// Where the checked file's imports are looked up.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectPaths {
    /// The checked file, absolute.
    pub file: PathBuf,
    /// The search directories, in order: the file's directory, then the project root.
    pub dirs: Vec<PathBuf>,
    /// The project root, when a marker was found: the project's other files are scanned for
    /// scripts that import the checked one.
    pub root: Option<PathBuf>,
    /// Without a marker: the folder a script beside the file runs from (the file's directory,
    /// or the one above the packages it sits in: `app/train.py` for `app/models/net.py`). It
    /// is searched for imports, and scanned for importing scripts only when it holds at most
    /// `MAX_LOOSE_FILES` Python files (an unmarked folder of a few scripts is a project; a
    /// home or temporary folder is not).
    pub loose: Option<PathBuf>,
}

/// The most Python files an unmarked folder may hold to be scanned as a project.
pub const MAX_LOOSE_FILES: usize = 64;

impl ProjectPaths {
    /// The search path for the file at `path`, when it names a file on disk.
    pub fn for_file(path: &str) -> Option<ProjectPaths> {
        let file = std::fs::canonicalize(path).ok()?;
        if !file.is_file() {
            return None;
        }
        let dir = file.parent()?.to_path_buf();
        let mut dirs = vec![dir.clone()];
        let root = project_root(&dir);
        let loose = match root {
            Some(_) => None,
            None => dir.ancestors().find(|d| !d.join("__init__.py").is_file()).map(Path::to_path_buf),
        };
        if let Some(top) = root.as_ref().or(loose.as_ref())
            && *top != dir
        {
            dirs.push(top.clone());
        }
        Some(ProjectPaths { file, dirs, root, loose })
    }
}

thread_local! {
    /// What the filesystem said of each path probed for an import since `reset_probes` (each
    /// analysis runs on a thread of its own, and each `Interp` starts afresh): an import runs
    /// on every path and in every call of the function that holds it, and finding `a.b`
    /// probes up to three paths per part, so without this a model file's analysis asked the
    /// filesystem 40,000 times (`typing` alone 1,081 times, three paths each).
    // (keyed by the path's bytes: `Path`'s own hash walks its components, and was 1% of an
    // analysis; a path spelled two ways is asked twice, with the same answer)
    static PROBES: std::cell::RefCell<HashMap<std::ffi::OsString, Probed>> = std::cell::RefCell::new(HashMap::default());
}

#[derive(Clone, Copy, PartialEq)]
enum Probed {
    File,
    Dir,
    Neither,
}

/// Forget what the filesystem said (`PROBES`).
pub fn reset_probes() {
    PROBES.with(|p| p.borrow_mut().clear());
}

fn probe(path: &Path) -> Probed {
    if let Some(k) = PROBES.with(|p| p.borrow().get(path.as_os_str()).copied()) {
        return k;
    }
    let k = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Probed::File,
        Ok(m) if m.is_dir() => Probed::Dir,
        _ => Probed::Neither,
    };
    PROBES.with(|p| p.borrow_mut().insert(path.as_os_str().to_owned(), k));
    k
}

/// `path.is_file()`, asked once per analysis (`PROBES`).
pub fn is_file(path: &Path) -> bool {
    probe(path) == Probed::File
}

/// `path.is_dir()`, asked once per analysis (`PROBES`).
fn is_dir(path: &Path) -> bool {
    probe(path) == Probed::Dir
}

/// The nearest directory at or above `dir` that marks a project root.
pub fn project_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| ["pyproject.toml", "setup.cfg", ".git"].iter().any(|m| d.join(m).exists())).map(Path::to_path_buf)
}

/// A module found on the search path.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Its dotted name.
    pub name: String,
    /// Its file (`__init__.py` for a package); `None` for a namespace package.
    pub file: Option<PathBuf>,
    /// The directory of a package (regular or namespace), where its submodules are.
    pub package_dir: Option<PathBuf>,
}

/// The top-level names the core models as libraries: a project directory of that name is
/// never taken for them.
fn modelled_library(name: &str) -> bool {
    matches!(name, "torch" | "torchvision" | "numpy" | "math" | "argparse" | "collections" | "dataclasses")
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The module `part` inside the directory `dir` (a top-level module when `dir` is a search
/// directory, a submodule when it is a package's).
fn find_in(dir: &Path, part: &str, name: String, top: bool) -> Option<Found> {
    if !is_identifier(part) {
        return None;
    }
    let pkg = dir.join(part);
    let init = pkg.join("__init__.py");
    if is_file(&init) {
        return Some(Found { name, file: Some(init), package_dir: Some(pkg) });
    }
    let file = dir.join(format!("{part}.py"));
    if is_file(&file) {
        return Some(Found { name, file: Some(file), package_dir: None });
    }
    if is_dir(&pkg) && !(top && modelled_library(part)) {
        return Some(Found { name, file: None, package_dir: Some(pkg) });
    }
    None
}

/// The module `dotted` (`a.b.c`) and each package on the way to it (`a`, `a.b`), outermost
/// first, when every part is found.
pub fn resolve(dirs: &[PathBuf], dotted: &str) -> Option<Vec<Found>> {
    let mut parts = dotted.split('.');
    let first = parts.next()?;
    // a regular module or package on any search directory beats a namespace package
    let mut found = None;
    for d in dirs {
        match find_in(d, first, first.to_string(), true) {
            Some(f) if f.file.is_some() => {
                found = Some(f);
                break;
            }
            Some(f) if found.is_none() => found = Some(f),
            _ => {}
        }
    }
    let mut chain = vec![found?];
    for part in parts {
        let last = chain.last()?;
        let dir = last.package_dir.clone()?;
        let name = format!("{}.{part}", last.name);
        chain.push(find_in(&dir, part, name, false)?);
    }
    Some(chain)
}

/// The package a relative import of `level` dots starts from, for a module named `importer`
/// (a package's `__init__` is its own package): its dotted name and directory.
pub fn relative_base(importer_name: &str, importer_file: &Path, is_package: bool, level: u32) -> Option<(String, PathBuf)> {
    let mut name: Vec<&str> = if importer_name.is_empty() { Vec::new() } else { importer_name.split('.').collect() };
    let mut dir = importer_file.parent()?.to_path_buf();
    if !is_package {
        name.pop();
    }
    for _ in 1..level {
        name.pop()?;
        dir = dir.parent()?.to_path_buf();
    }
    Some((name.join("."), dir))
}

/// The submodule `rest` (dotted, possibly empty) of the package `base` in `dir`.
pub fn resolve_in_package(base: &str, dir: &Path, rest: &str) -> Option<Vec<Found>> {
    let mut chain: Vec<Found> = Vec::new();
    let mut dir = dir.to_path_buf();
    let mut name = base.to_string();
    for part in rest.split('.').filter(|p| !p.is_empty()) {
        name = if name.is_empty() { part.to_string() } else { format!("{name}.{part}") };
        let f = find_in(&dir, part, name.clone(), false)?;
        dir = f.package_dir.clone().unwrap_or_else(|| dir.clone());
        chain.push(f);
    }
    Some(chain)
}

/// The dotted package of the module at `file`, from the directories with `__init__.py` around
/// it (`models/net.py` in a package `models`: `models`); `None` outside any package.
pub fn package_of(file: &Path) -> Option<String> {
    let mut parts = Vec::new();
    let mut dir = file.parent()?;
    while is_file(&dir.join("__init__.py")) {
        parts.push(dir.file_name()?.to_str()?.to_string());
        dir = dir.parent()?;
    }
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    Some(parts.join("."))
}

/// A loaded project module.
pub struct Loaded {
    pub name: String,
    pub path: PathBuf,
    pub file: FileId,
    pub module: Rc<ir::Module>,
    pub lines: SourceLines,
    /// Shown in messages: the path relative to the checked file's directory.
    pub display: String,
}

/// The project modules of one analysis.
#[derive(Default)]
pub struct Project {
    pub paths: Option<ProjectPaths>,
    pub loaded: Vec<Loaded>,
    by_path: HashMap<PathBuf, Option<usize>>,
    /// The `read_stamped` stamp of each file asked for, when it was read.
    stamps: HashMap<PathBuf, Option<u64>>,
    bytes: usize,
}

/// A file's bytes, unless it is too large to load (`MAX_FILE_BYTES`), and its stamp: a hash of
/// what decides how it loads (its bytes, or only its size when too large); `None`: unreadable.
pub fn read_stamped(path: &Path) -> (Option<u64>, Option<Vec<u8>>) {
    let Ok(meta) = std::fs::metadata(path) else { return (None, None) };
    if meta.len() > MAX_FILE_BYTES {
        return (Some(super::scripts::hash_of(format!("too large: {}", meta.len()).as_bytes())), None);
    }
    match std::fs::read(path) {
        Ok(b) => (Some(super::scripts::hash_of(&b)), Some(b)),
        Err(_) => (None, None),
    }
}

impl Project {
    pub fn new(paths: Option<ProjectPaths>) -> Project {
        Project { paths, ..Project::default() }
    }

    /// The loaded module of file id `file`.
    pub fn module_of(&self, file: FileId) -> Option<&Loaded> {
        let i = file.0.checked_sub(FIRST_FILE)? as usize;
        self.loaded.get(i)
    }

    /// Whether `path` is the checked file.
    pub fn is_checked(&self, path: &Path) -> bool {
        self.paths.as_ref().is_some_and(|p| p.file == path)
    }

    /// Load the file at `path` as the module `name` (once): its index in `loaded`.
    pub fn load(&mut self, path: &Path, name: &str) -> Option<usize> {
        if let Some(r) = self.by_path.get(path) {
            return *r;
        }
        let (stamp, bytes) = read_stamped(path);
        let r = bytes.and_then(|b| self.read_and_lower(path, name, &b, stamp));
        self.by_path.insert(path.to_path_buf(), r);
        self.stamps.insert(path.to_path_buf(), stamp);
        r
    }

    /// Every file this analysis asked to load, with its index in `loaded` (`None`: not
    /// loaded: unreadable, broken, or past the limits) and its `read_stamped` stamp when it was
    /// read.
    pub fn attempts(&self) -> impl Iterator<Item = (&PathBuf, Option<usize>, Option<u64>)> {
        self.by_path.iter().map(|(p, r)| (p, *r, self.stamps.get(p).copied().flatten()))
    }

    fn read_and_lower(&mut self, path: &Path, name: &str, bytes: &[u8], stamp: Option<u64>) -> Option<usize> {
        if self.loaded.len() >= MAX_MODULES {
            return None;
        }
        let source: Rc<str> = Rc::from(super::encoding::decode_python_source(bytes)?);
        if self.bytes + source.len() > MAX_LOADED_BYTES {
            return None;
        }
        self.bytes += source.len();
        let file = FileId(FIRST_FILE + self.loaded.len() as u32);
        match stamp {
            Some(hash) => crate::models::torch::device::note_file(hash, &source),
            None => crate::models::torch::device::note_source(&source),
        }
        // (the tree another analysis of this process parsed from the same text, if kept)
        let parsed = crate::parse::parse_shared(path, &source);
        if parsed.has_syntax_errors() {
            return None;
        }
        let module = ir::lower::lower_module_in(&parsed, file, file.0 << super::modules::ID_SHIFT);
        if module.max_depth > ir::lower::MAX_DEPTH {
            // as for the checked file: a pathologically deep tree is leaked, not dropped
            std::mem::forget(parsed);
            std::mem::forget(module);
            return None;
        }
        // relative to the checked file's directory, else to the project root
        let dirs = self.paths.as_ref().map(|p| p.dirs.clone()).unwrap_or_default();
        let display = match dirs.iter().find_map(|b| path.strip_prefix(b).ok()) {
            Some(rel) => rel.to_string_lossy().into_owned(),
            None => path.to_string_lossy().into_owned(),
        };
        self.loaded.push(Loaded { name: name.to_string(), path: path.to_path_buf(), file, module: Rc::new(module), lines: SourceLines::new(source.clone()), display });
        Some(self.loaded.len() - 1)
    }
}

// ----- the scripts that import the checked file --------------------------------------------

/// At most this many of the project's scripts that import the checked file run as its entries.
pub const MAX_IMPORTER_ENTRIES: usize = 3;
/// At most this many files of a project are scanned for their imports.
pub const MAX_PROJECT_FILES: usize = 4000;

/// What a file's text says without running anything: the modules it imports (with the
/// leading dots of a relative import and the names after `import`, which may be
/// submodules), and whether it is a script (a `__main__` block or top-level code).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileFacts {
    pub imports: Vec<(u32, String, Vec<String>)>,
    /// A `__main__` block, or a top-level loop, `with` or call statement.
    pub script: bool,
    /// A `__main__` block.
    pub main_block: bool,
}

/// The import statements and the script test of `text`, line by line (a parenthesised name
/// list continued on later lines gives only its first line's names).
pub fn scan(text: &str) -> FileFacts {
    let mut facts = FileFacts::default();
    for line in lines(text) {
        let top = !line.starts_with([' ', '\t']);
        // an indented line matters only as an import (most lines of a module: passed over on
        // their bytes, before the Unicode trims and the cut at a comment, which were most of
        // the time of a project's scan; other whitespace first takes the slow way)
        if !top {
            let b = line.as_bytes();
            let rest = &b[b.iter().position(|c| !matches!(c, b' ' | b'\t')).unwrap_or(b.len())..];
            if rest.first().is_some_and(|c| c.is_ascii() && !c.is_ascii_whitespace()) && !rest.starts_with(b"import ") && !rest.starts_with(b"from ") {
                continue;
            }
        }
        let t = line.trim_start();
        if !top && !t.starts_with("import ") && !t.starts_with("from ") {
            continue;
        }
        let code = t.split('#').next().unwrap_or("").trim_end();
        if let Some(rest) = code.strip_prefix("import ") {
            for part in rest.split(',') {
                let name = part.split(" as ").next().unwrap_or("").trim();
                if !name.is_empty() && name.split('.').all(is_identifier) {
                    facts.imports.push((0, name.to_string(), Vec::new()));
                }
            }
        } else if let Some(rest) = code.strip_prefix("from ")
            && let Some((module, names)) = rest.split_once(" import ")
        {
            let module = module.trim();
            let level = module.chars().take_while(|c| *c == '.').count() as u32;
            let module = module.trim_start_matches('.').to_string();
            if !(module.is_empty() || module.split('.').all(is_identifier)) {
                continue;
            }
            let names = names
                .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace() || c == '\\')
                .split(',')
                .map(|n| n.split(" as ").next().unwrap_or("").trim().trim_matches(|c: char| c == '(' || c == ')').to_string())
                .filter(|n| is_identifier(n))
                .collect();
            facts.imports.push((level, module, names));
        } else if top && !code.is_empty() {
            facts.main_block |= code.starts_with("if __name__");
            let script_line = code.starts_with("if __name__")
                || ["for ", "while ", "with "].iter().any(|k| code.starts_with(k))
                || (code.starts_with(|c: char| c.is_alphabetic() || c == '_') && {
                    // a call statement: `main()`, `train(model, loader)`, `model.fit(x)`
                    let head: String = code.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
                    code[head.len()..].starts_with('(') && !["def", "class", "print"].contains(&head.as_str())
                })
                || assigned_call(code);
            facts.script |= script_line;
        }
    }
    facts
}

/// `text.lines()`, its line ends found by memchr's vectorised search (`str::lines` was a
/// third of a project's scan).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', text.as_bytes()).map(Some).chain([None]).filter_map(move |end| {
        let line = match end {
            Some(e) => {
                let line = &text[start..e];
                line.strip_suffix('\r').unwrap_or(line)
            }
            // (the last line, unless the text ends with its line end)
            None if start < text.len() => &text[start..],
            None => return None,
        };
        start = end.map_or(text.len(), |e| e + 1);
        Some(line)
    })
}

/// A top-level assignment of a call's result (`out = lm(x)`, `model, opt = build(cfg)`), the
/// way short scripts run their model; not the module set-up that library modules do at import
/// (`logger = logging.getLogger(__name__)`, `T = TypeVar("T")`, a compiled regex, a path).
fn assigned_call(code: &str) -> bool {
    const SET_UP: &[&str] = &[
        "logging.getLogger", "getLogger", "get_logger", "TypeVar", "NewType", "namedtuple", "collections.namedtuple", "re.compile", "os.getenv",
        "os.environ.get", "Path", "pathlib.Path", "field", "dataclasses.field", "object", "set", "dict", "list", "tuple", "frozenset", "str", "int",
        "float", "bool", "partial", "functools.partial", "warnings.filterwarnings",
    ];
    let Some((targets, value)) = code.split_once('=') else { return false };
    if value.starts_with('=') || targets.ends_with(['!', '<', '>', ':', '+', '-', '*', '/', '%', '&', '|', '^']) {
        return false;
    }
    let targets_ok = targets.split(',').all(|t| {
        let t = t.trim();
        !t.is_empty() && t.split('.').all(is_identifier)
    });
    let value = value.trim_start();
    let callee: String = value.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
    targets_ok && !callee.is_empty() && value[callee.len()..].starts_with('(') && !SET_UP.contains(&callee.as_str())
}

/// The directories a walk of the project skips: hidden ones, caches, environments, builds.
fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "__pycache__" | "node_modules" | "site-packages" | "venv" | "env" | "build" | "dist" | "target") || name.ends_with(".egg-info")
}

/// The `.py` files under `root`, sorted, at most `MAX_PROJECT_FILES`.
pub fn project_files(root: &Path) -> Vec<PathBuf> {
    project_files_upto(root, MAX_PROJECT_FILES)
}

/// The `.py` files under `root`, sorted, at most `max`.
fn project_files_upto(root: &Path, max: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !skipped_dir(&name) {
                    stack.push(e.path());
                }
            } else if kind.is_file() && name.ends_with(".py") {
                out.push(e.path());
                if out.len() >= max {
                    out.sort();
                    return out;
                }
            }
        }
    }
    out.sort();
    out
}

/// The facts of the file at `path` and the project files it imports (`imported_files`),
/// kept per process and made again when its size or modification time changes (flake8
/// checks many files of one project in each process). A module added since is seen by the
/// next process.
pub fn facts_of(path: &Path, root: &Path) -> Option<std::sync::Arc<(FileFacts, Vec<PathBuf>)>> {
    use std::sync::{Arc, Mutex, OnceLock};
    type Index = HashMap<(PathBuf, PathBuf), (std::time::SystemTime, u64, Arc<(FileFacts, Vec<PathBuf>)>)>;
    static INDEX: OnceLock<Mutex<Index>> = OnceLock::new();
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let stamp = (meta.modified().ok()?, meta.len());
    let index = INDEX.get_or_init(|| Mutex::new(HashMap::default()));
    let key = (path.to_path_buf(), root.to_path_buf());
    if let Ok(map) = index.lock()
        && let Some((t, n, f)) = map.get(&key)
        && (*t, *n) == stamp
    {
        return Some(f.clone());
    }
    let facts = scan(&super::encoding::read_python_source(path)?);
    let deps = imported_files(path, &facts, root);
    let entry = Arc::new((facts, deps));
    if let Ok(mut map) = index.lock() {
        map.insert(key, (stamp.0, stamp.1, entry.clone()));
    }
    Some(entry)
}

/// The project files the file at `file` imports (every module on the way: a package's
/// `__init__.py` too), resolved from its own directory and `root`.
pub fn imported_files(file: &Path, facts: &FileFacts, root: &Path) -> Vec<PathBuf> {
    let Some(dir) = file.parent() else { return Vec::new() };
    let dirs: Vec<PathBuf> = if dir == root { vec![dir.to_path_buf()] } else { vec![dir.to_path_buf(), root.to_path_buf()] };
    let mut out = Vec::new();
    let mut add = |chain: Option<Vec<Found>>| {
        for f in chain.into_iter().flatten() {
            if let Some(p) = f.file {
                out.push(p);
            }
        }
    };
    for (level, module, names) in &facts.imports {
        if *level == 0 {
            add(resolve(&dirs, module));
            for n in names {
                add(resolve(&dirs, &format!("{module}.{n}")));
            }
        } else {
            let is_package = file.file_name().is_some_and(|f| f == "__init__.py");
            let pkg = package_of(file).unwrap_or_default();
            let name = if is_package { pkg } else if pkg.is_empty() { "m".to_string() } else { format!("{pkg}.m") };
            if let Some((base, bdir)) = relative_base(&name, file, is_package, *level) {
                add(resolve_in_package(&base, &bdir, module));
                let sub = if module.is_empty() { String::new() } else { format!("{module}.") };
                for n in names {
                    add(resolve_in_package(&base, &bdir, &format!("{sub}{n}")));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Each project's graph, made by the first analysis that asks while the others that ask for the
/// same one wait for it (two threads starting together made it twice).
type Graphs = std::sync::Mutex<HashMap<PathBuf, std::sync::Arc<std::sync::OnceLock<std::sync::Arc<Graph>>>>>;
static GRAPHS: std::sync::OnceLock<Graphs> = std::sync::OnceLock::new();

/// Forget the import graphs (and so the file lists) of every project (files were added or removed; a
/// long-lived client such as a language server calls this when the workspace changes).
pub fn forget_projects() {
    if let Some(g) = GRAPHS.get()
        && let Ok(mut g) = g.lock()
    {
        g.clear();
    }
}

/// A project's import graph: who imports each file, and which files are scripts.
struct Graph {
    users: HashMap<PathBuf, Vec<PathBuf>>,
    /// Every scanned file: whether it is a script (a `__main__` block, or top-level code
    /// outside a package: a package's modules run code at import time, registries and logging
    /// set-up, and are no scripts).
    scripts: HashMap<PathBuf, bool>,
    /// A hash of the sorted paths of the scanned files: which modules exist to be imported.
    listing: u64,
}

/// The import graph of the project at `root`, made once per process (flake8 and the CLI check
/// a tree that does not change while they run).
fn graph_of(root: &Path, loose: bool) -> std::sync::Arc<Graph> {
    use std::sync::Mutex;
    let graphs = GRAPHS.get_or_init(|| Mutex::new(HashMap::default()));
    let cell = match graphs.lock() {
        Ok(mut map) => map.entry(root.to_path_buf()).or_default().clone(),
        Err(_) => return make_graph(root, loose),
    };
    cell.get_or_init(|| make_graph(root, loose)).clone()
}

/// The import graph of the project at `root` (`graph_of`), scanned now.
fn make_graph(root: &Path, loose: bool) -> std::sync::Arc<Graph> {
    let mut users: HashMap<PathBuf, Vec<PathBuf>> = HashMap::default();
    let mut scripts = HashMap::default();
    let files = if loose {
        // an unmarked folder of more than MAX_LOOSE_FILES files is no project: nothing scanned
        let files = project_files_upto(root, MAX_LOOSE_FILES + 1);
        if files.len() > MAX_LOOSE_FILES { Vec::new() } else { files }
    } else {
        project_files(root)
    };
    for (f, x) in files.iter().zip(facts_of_all(&files, root)) {
        let Some(x) = x else { continue };
        for dep in &x.1 {
            if dep != f {
                users.entry(dep.clone()).or_default().push(f.clone());
            }
        }
        scripts.insert(f.clone(), x.0.main_block || (x.0.script && package_of(f).is_none()));
    }
    let listing = super::scripts::text_hash(&files.iter().map(|f| f.to_string_lossy()).collect::<Vec<_>>().join("\0"));
    std::sync::Arc::new(Graph { users, scripts, listing })
}

/// `facts_of` each file, in order, on every core when there are many (the first analysis of a
/// project waits for its graph: the others too, when they check files of the same project).
#[allow(clippy::type_complexity)]
fn facts_of_all(files: &[PathBuf], root: &Path) -> Vec<Option<std::sync::Arc<(FileFacts, Vec<PathBuf>)>>> {
    /// Files per thread, at least (a thread costs about as much as scanning this many).
    const PER_THREAD: usize = 64;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len() / PER_THREAD).max(1);
    if threads == 1 {
        return files.iter().map(|f| facts_of(f, root)).collect();
    }
    std::thread::scope(|s| {
        let parts: Vec<_> = files.chunks(files.len().div_ceil(threads)).map(|part| (part.len(), s.spawn(move || part.iter().map(|f| facts_of(f, root)).collect::<Vec<_>>()))).collect();
        // (a part whose thread failed: none of its files scanned, as for unreadable ones)
        parts.into_iter().flat_map(|(n, h)| h.join().unwrap_or_else(|_| vec![None; n])).collect()
    })
}

/// A hash of the paths of the project's Python files (as scanned once per process): a
/// shared script result kept across processes (`engine::script_cache`) is keyed by it, since
/// a module added or removed changes what an import finds.
pub fn listing_hash(paths: &ProjectPaths) -> Option<u64> {
    Some(project_graph(paths)?.listing)
}

/// The import graph of the checked file's project (`graph_of`): of its root, else of its
/// loose folder; `None` outside both.
fn project_graph(paths: &ProjectPaths) -> Option<std::sync::Arc<Graph>> {
    match (&paths.root, &paths.loose) {
        (Some(r), _) => Some(graph_of(r, false)),
        (None, Some(l)) => Some(graph_of(l, true)),
        (None, None) => None,
    }
}

/// Whether the checked file is one of its project's scripts: those `importer_scripts` runs for
/// the files they import (a `__main__` block, or top-level code outside a package).
pub fn is_script(paths: &ProjectPaths) -> bool {
    project_graph(paths).is_some_and(|g| g.scripts.get(&paths.file).copied().unwrap_or(false))
}

/// The project's scripts that import the checked file, directly or through other project
/// modules, nearest first (then by path), at most `MAX_IMPORTER_ENTRIES`: they run as entries
/// of the checked file, so that a bug in it that only the script's concrete sizes show is
/// reported where torch raises.
pub fn importer_scripts(paths: &ProjectPaths) -> Vec<PathBuf> {
    let Some(graph) = project_graph(paths) else { return Vec::new() };
    if !graph.scripts.contains_key(&paths.file) {
        return Vec::new();
    }
    let users = &graph.users;
    // breadth first over "is imported by", from the checked file
    let mut seen = std::collections::HashSet::from([paths.file.clone()]);
    let mut level = vec![paths.file.clone()];
    let mut out = Vec::new();
    while !level.is_empty() && out.len() < MAX_IMPORTER_ENTRIES {
        let mut next = Vec::new();
        for f in &level {
            for u in users.get(f).into_iter().flatten() {
                if seen.insert(u.clone()) {
                    next.push(u.clone());
                }
            }
        }
        next.sort();
        for u in &next {
            // a script: a `__main__` block, or top-level code outside a package (a package's
            // modules run code at import time: registries, logging set-up)
            let script = graph.scripts.get(u).copied().unwrap_or(false);
            if out.len() < MAX_IMPORTER_ENTRIES && script {
                out.push(u.clone());
            }
        }
        level = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("shape-lint-project-{}-{}", std::process::id(), files.len() * 7919 + files.iter().map(|f| f.0.len()).sum::<usize>()));
        let _ = std::fs::remove_dir_all(&dir);
        for (p, text) in files {
            let p = dir.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        std::fs::canonicalize(&dir).unwrap()
    }

    #[test]
    fn modules_packages_and_namespace_packages_resolve_as_python_does() {
        let d = tree(&[("pyproject.toml", ""), ("app/train.py", ""), ("app/model.py", ""), ("pkg/__init__.py", ""), ("pkg/sub/__init__.py", ""), ("pkg/sub/m.py", ""), ("ns/x.py", ""), ("torch/readme.txt", "")]);
        let paths = ProjectPaths::for_file(d.join("app/train.py").to_str().unwrap()).unwrap();
        assert_eq!(paths.dirs, vec![d.join("app"), d.clone()]);
        let names = |c: Vec<Found>| c.into_iter().map(|f| (f.name, f.file.map(|p| p.strip_prefix(&d).unwrap().to_string_lossy().into_owned()))).collect::<Vec<_>>();
        assert_eq!(names(resolve(&paths.dirs, "model").unwrap()), vec![("model".into(), Some("app/model.py".into()))]);
        assert_eq!(
            names(resolve(&paths.dirs, "pkg.sub.m").unwrap()),
            vec![("pkg".into(), Some("pkg/__init__.py".into())), ("pkg.sub".into(), Some("pkg/sub/__init__.py".into())), ("pkg.sub.m".into(), Some("pkg/sub/m.py".into()))]
        );
        assert_eq!(names(resolve(&paths.dirs, "ns.x").unwrap()), vec![("ns".into(), None), ("ns.x".into(), Some("ns/x.py".into()))]);
        assert!(resolve(&paths.dirs, "torch").is_none(), "a folder named torch does not hide torch");
        assert!(resolve(&paths.dirs, "missing").is_none());
        assert!(resolve(&paths.dirs, "pkg.missing").is_none());
    }

    #[test]
    fn the_filesystem_is_asked_once_per_analysis() {
        let d = tree(&[("pyproject.toml", ""), ("app/train.py", "")]);
        let dirs = vec![d.join("app")];
        reset_probes();
        assert!(resolve(&dirs, "late").is_none());
        std::fs::write(d.join("app/late.py"), "").unwrap();
        // the same analysis keeps what it was told (an import runs on every path)
        assert!(resolve(&dirs, "late").is_none());
        // the next one asks again
        reset_probes();
        assert_eq!(resolve(&dirs, "late").unwrap()[0].file, Some(d.join("app/late.py")));
    }

    #[test]
    fn relative_imports_start_at_the_importing_package() {
        let d = tree(&[("setup.cfg", ""), ("models/__init__.py", ""), ("models/resnet.py", ""), ("models/layers.py", "")]);
        let (base, dir) = relative_base("models.resnet", &d.join("models/resnet.py"), false, 1).unwrap();
        assert_eq!((base.as_str(), dir.clone()), ("models", d.join("models")));
        let chain = resolve_in_package(&base, &dir, "layers").unwrap();
        assert_eq!(chain[0].name, "models.layers");
        // `from . import layers` in the package's __init__
        let (base, dir) = relative_base("models", &d.join("models/__init__.py"), true, 1).unwrap();
        assert_eq!(base, "models");
        assert_eq!(resolve_in_package(&base, &dir, "resnet").unwrap()[0].file, Some(d.join("models/resnet.py")));
        // beyond the top package
        assert!(relative_base("models.resnet", &d.join("models/resnet.py"), false, 3).is_none());
    }

    #[test]
    fn lines_are_those_of_str_lines() {
        for text in ["", "\n", "a", "a\n", "a\r\nb", "a\r\n\r\nb\n", "a\rb\n\r", "x\r", "\r\n", "é\nü\r\n€", "\n\nimport os\n  x = 1"] {
            assert_eq!(lines(text).collect::<Vec<_>>(), text.lines().collect::<Vec<_>>(), "{text:?}");
        }
    }

    #[test]
    fn imports_and_scripts_are_read_from_the_text() {
        let f = scan("import os, torch.nn as nn\nfrom .layers import (Block,\n    Head)\nfrom .. import utils as u\nfrom models.net import Net  # the model\n\ndef main():\n    from data import load\n\nX = 3\nprint(X)\n");
        assert_eq!(
            f.imports,
            vec![
                (0, "os".into(), vec![]),
                (0, "torch.nn".into(), vec![]),
                (1, "layers".into(), vec!["Block".into()]),
                (2, "".into(), vec!["utils".into()]),
                (0, "models.net".into(), vec!["Net".into()]),
                (0, "data".into(), vec!["load".into()]),
            ]
        );
        assert!(!f.script, "definitions, constants and a print are not a script");
        assert!(scan("def main():\n    pass\n\nif __name__ == \"__main__\":\n    main()\n").script);
        assert!(scan("import torch\nmodel = make()\nfor x in data:\n    model(x)\n").script);
        assert!(scan("train(model)\n").script);
        // a script that only assigns: `out = lm(x)`
        assert!(scan("import torch\nfrom model import LM\nlm = LM(100)\nout = lm(torch.zeros(2, 5, dtype=torch.long))\n").script);
        assert!(scan("model, opt = build(cfg)\n").script);
        // module set-up is not
        let setup = "import logging\nimport re\nfrom typing import TypeVar\nlogger = logging.getLogger(__name__)\nT = TypeVar(\"T\")\nPAT = re.compile(\"x\")\nX == f(1)\nY: int = 3\nZ += g(2)\n";
        assert!(!scan(setup).script, "set-up assignments, a comparison and augmented assignments are not a script");
        // indented imports under tabs, a form feed or deep blocks are found; indented code
        // that only looks like one is not, and indented calls make no script
        let nested = "def f():\n\tif x:\n\t\timport a.b\n    \x0cfrom c import d\n    imports = 1\n    fromage()\n    # import e\n";
        let f = scan(nested);
        assert_eq!(f.imports, vec![(0, "a.b".into(), vec![]), (0, "c".into(), vec!["d".into()])]);
        assert!(!f.script);
    }

    #[test]
    fn the_scripts_importing_a_file_are_found_through_packages() {
        let d = tree(&[
            ("pyproject.toml", ""),
            ("models/__init__.py", "from .net import Net\n"),
            ("models/net.py", "import torch\nfrom .layers import head\n"),
            ("models/layers.py", ""),
            ("train.py", "from models import Net\nif __name__ == '__main__':\n    pass\n"),
            ("tools/eval.py", "import models.net\nmodels.net.run()\n"),
            ("lib.py", "from models import Net\n"),
            (".venv/x.py", "from models import Net\nmain()\n"),
        ]);
        let paths = ProjectPaths::for_file(d.join("models/layers.py").to_str().unwrap()).unwrap();
        let found: Vec<String> = importer_scripts(&paths).iter().map(|p| p.strip_prefix(&d).unwrap().to_string_lossy().into_owned()).collect();
        // train.py reaches layers.py through models/__init__.py and models/net.py; tools/eval.py
        // through models.net; lib.py is no script; hidden folders are not the project's
        assert_eq!(found, vec!["tools/eval.py".to_string(), "train.py".to_string()]);
    }

    #[test]
    fn a_module_is_loaded_once_and_broken_files_not_at_all() {
        let d = tree(&[(".git/HEAD", ""), ("a.py", "x = 1\n"), ("bad.py", "def f(:\n")]);
        let mut p = Project::new(ProjectPaths::for_file(d.join("a.py").to_str().unwrap()));
        let i = p.load(&d.join("a.py"), "a").unwrap();
        assert_eq!(p.load(&d.join("a.py"), "a"), Some(i));
        assert_eq!(p.loaded.len(), 1);
        assert_eq!(p.loaded[i].file, FileId(FIRST_FILE));
        assert!(p.module_of(FileId(FIRST_FILE)).is_some());
        assert!(p.load(&d.join("bad.py"), "bad").is_none());
        assert!(p.load(&d.join("nope.py"), "nope").is_none());
    }
}
