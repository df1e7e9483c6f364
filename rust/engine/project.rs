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
//! - **Loading** (`Project::load`): each file is read (at most `MAX_FILE_BYTES`), parsed and
//!   lowered once per analysis into its own `FileId` (from `FIRST_FILE`) and function-id range;
//!   at most `MAX_MODULES` files per analysis. A file that cannot be read, has syntax errors, or
//!   nests too deeply is not loaded: its import is Unknown, as for any unknown module.
//!   The checked file, imported by name from another module, is the checked IR itself.
//! - Running a module (`Interp::import_module` in `interp/stmt.rs`) binds it in `sys.modules`
//!   (a heap object, so each path has its own) before its body runs, as Python does, so cycles
//!   end; the module's value is its scope, whose attributes are its globals.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::ir::{self, FileId};
use crate::parse::SourceLines;

/// The first file id of project modules (below it: the checked file and the embedded roots).
pub const FIRST_FILE: u32 = 64;
/// At most this many project files are loaded in one analysis.
pub const MAX_MODULES: usize = 128;
/// Larger files are not loaded (their import is Unknown).
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// Where the checked file's imports are looked up.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectPaths {
    /// The checked file, absolute.
    pub file: PathBuf,
    /// The search directories, in order: the file's directory, then the project root.
    pub dirs: Vec<PathBuf>,
}

impl ProjectPaths {
    /// The search path for the file at `path`, when it names a file on disk.
    pub fn for_file(path: &str) -> Option<ProjectPaths> {
        let file = std::fs::canonicalize(path).ok()?;
        if !file.is_file() {
            return None;
        }
        let dir = file.parent()?.to_path_buf();
        let mut dirs = vec![dir.clone()];
        if let Some(root) = project_root(&dir)
            && root != dir
        {
            dirs.push(root);
        }
        Some(ProjectPaths { file, dirs })
    }
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
    if init.is_file() {
        return Some(Found { name, file: Some(init), package_dir: Some(pkg) });
    }
    let file = dir.join(format!("{part}.py"));
    if file.is_file() {
        return Some(Found { name, file: Some(file), package_dir: None });
    }
    if pkg.is_dir() && !(top && modelled_library(part)) {
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
    while dir.join("__init__.py").is_file() {
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
        let r = self.read_and_lower(path, name);
        self.by_path.insert(path.to_path_buf(), r);
        r
    }

    fn read_and_lower(&mut self, path: &Path, name: &str) -> Option<usize> {
        if self.loaded.len() >= MAX_MODULES || std::fs::metadata(path).ok()?.len() > MAX_FILE_BYTES {
            return None;
        }
        let source: Rc<str> = Rc::from(std::fs::read_to_string(path).ok()?);
        let file = FileId(FIRST_FILE + self.loaded.len() as u32);
        let parsed = crate::parse::parse(&source);
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
        let base = self.paths.as_ref().and_then(|p| p.dirs.first().cloned());
        let display = match base.as_deref().and_then(|b| path.strip_prefix(b).ok()) {
            Some(rel) => rel.to_string_lossy().into_owned(),
            None => path.to_string_lossy().into_owned(),
        };
        self.loaded.push(Loaded { name: name.to_string(), path: path.to_path_buf(), file, module: Rc::new(module), lines: SourceLines::new(source.clone()), display });
        Some(self.loaded.len() - 1)
    }
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
