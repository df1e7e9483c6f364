//! Import statements. A module of the user's project (`engine::project`) runs once per path:
//! `sys.modules` is a heap object (`Interp::sys_modules`) that maps dotted names to module
//! scopes, and a module is bound there before its body runs, as in Python, so an import
//! cycle ends. The value of a module is its scope (`Value::Ref` to an `Obj::Scope`): its
//! attributes are its globals (`attr.rs`). Its scope holds `__name__` (so its
//! `if __name__ == "__main__":` block does not run), `__file__` and `__package__` (where its
//! relative imports start). Everything else is a library module (`models::import`): torch and
//! what the core models, else Unknown.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

use super::{Ctx, Flow, Interp, Paths, module_value};
use crate::engine::project::{self, Found};
use crate::ir::*;
use crate::value::*;

/// The hidden kind of the `sys.modules` object.
const SYS_MODULES: &str = "sys.modules";
/// Interpreter steps one imported module's top level may take, and all of them together in one
/// analysis; beyond, the module's remaining names (or the modules imported after) are Unknown.
const MODULE_STEPS: u64 = 2_000;
const IMPORT_STEPS: u64 = 8_000;

impl<'a> Interp<'a> {
    /// `import a.b.c` (binds `a`) and `import a.b.c as x` (binds `x` to `a.b.c`).
    pub(super) fn import_stmt(&mut self, names: &[(Name, Option<Name>)], st: State, ctx: &Ctx, span: Span) -> Paths {
        let mut states = vec![st];
        for (dotted, alias) in names {
            let mut next = Vec::new();
            for st in states {
                let found = self.project.paths.as_ref().and_then(|p| project::resolve(&p.dirs, dotted));
                let Some(chain) = found else {
                    let mut st = st;
                    match alias {
                        Some(a) => self.set_var(&mut st, ctx, a, module_value(dotted)),
                        None => {
                            let first: Name = Rc::from(dotted.split('.').next().unwrap_or(dotted));
                            self.set_var(&mut st, ctx, &first, module_value(&first));
                        }
                    }
                    next.push(st);
                    continue;
                };
                for (mut st, mods) in self.import_chain(st, &chain, span) {
                    let v = match (alias, mods.first(), mods.last()) {
                        (Some(_), _, Some(last)) => last.clone(),
                        (None, Some(first), _) => first.clone(),
                        _ => Value::Unknown,
                    };
                    let bind = alias.clone().unwrap_or_else(|| Rc::from(dotted.split('.').next().unwrap_or(dotted)));
                    self.set_var(&mut st, ctx, &bind, v);
                    next.push(st);
                }
            }
            states = next;
        }
        states.into_iter().map(|s| (s, Flow::Normal)).collect()
    }

    /// `from module import names` (`level` leading dots).
    pub(super) fn import_from_stmt(&mut self, module: Option<&Name>, level: u32, names: &[(Name, Option<Name>)], st: State, ctx: &Ctx, span: Span) -> Paths {
        let chain = self.from_chain(&st, ctx, module.map(|m| &**m), level);
        let Some(chain) = chain else {
            // a library module (or one not found): its names as the library models give them
            let mut st = st;
            for (n, alias) in names {
                let v = match (module, level) {
                    (Some(m), 0) => module_value(&format!("{m}.{n}")),
                    _ => Value::Unknown,
                };
                let bind = alias.clone().unwrap_or_else(|| n.clone());
                if &*bind != "*" {
                    self.set_var(&mut st, ctx, &bind, v);
                }
            }
            return vec![(st, Flow::Normal)];
        };
        let mut out = Vec::new();
        for (st, mods) in self.import_chain(st, &chain.1, span) {
            // `from . import x` in a package with nothing before: the package itself
            let base = match (mods.last(), &chain.0) {
                (Some(m), _) => Some(m.clone()),
                (None, Some(v)) => Some(v.clone()),
                (None, None) => None,
            };
            let mut states = vec![st];
            for (n, alias) in names {
                let mut next = Vec::new();
                for st in states {
                    if &**n == "*" {
                        let mut st = st;
                        self.bind_star(&mut st, ctx, base.as_ref());
                        next.push(st);
                        continue;
                    }
                    let bind = alias.clone().unwrap_or_else(|| n.clone());
                    for (mut st, v) in self.module_member(st, base.as_ref(), chain.2.as_ref(), n, span) {
                        self.set_var(&mut st, ctx, &bind, v);
                        next.push(st);
                    }
                }
                states = next;
            }
            out.extend(states.into_iter().map(|s| (s, Flow::Normal)));
        }
        out
    }

    /// What a `from` import names: the value of the package a relative import with nothing
    /// after its dots starts from (run already), the chain of modules to import, and the
    /// directory and dotted name of the last one's package (for submodules named after
    /// `import`). `None`: not a project module.
    #[allow(clippy::type_complexity)]
    fn from_chain(&mut self, st: &State, ctx: &Ctx, module: Option<&str>, level: u32) -> Option<(Option<Value>, Vec<Found>, Option<(String, PathBuf)>)> {
        let paths = self.project.paths.clone()?;
        if level == 0 {
            let chain = project::resolve(&paths.dirs, module?)?;
            let pkg = chain.last().and_then(|f| f.package_dir.clone().map(|d| (f.name.clone(), d)));
            return Some((None, chain, pkg));
        }
        // relative: from the importing module's package (its `__package__` and `__file__`)
        let (name, file, is_package) = self.importer(st, ctx)?;
        let (base, dir) = project::relative_base(&name, &file, is_package, level)?;
        let rest = module.unwrap_or("");
        let chain = project::resolve_in_package(&base, &dir, rest)?;
        let pkg = match chain.last() {
            Some(f) => f.package_dir.clone().map(|d| (f.name.clone(), d)),
            None => Some((base.clone(), dir.clone())),
        };
        let base_value = if chain.is_empty() { self.sys_module(st, &base) } else { None };
        if chain.is_empty() && base_value.is_none() {
            // the package itself is not loaded (an `__init__` not imported by name)
            let init = dir.join("__init__.py");
            let found = Found { name: base.clone(), file: project::is_file(&init).then_some(init), package_dir: Some(dir.clone()) };
            return Some((None, vec![found], pkg));
        }
        Some((base_value, chain, pkg))
    }

    /// The running module's name, file and whether it is a package, from its scope; for the
    /// checked file (which has none), its place in the packages around it on disk.
    fn importer(&self, st: &State, ctx: &Ctx) -> Option<(String, PathBuf, bool)> {
        let Obj::Scope { vars, .. } = st.get(ctx.module_scope) else { return None };
        let (pkg, file) = match (vars.get("__package__"), vars.get("__file__")) {
            (Some(Value::Str(Some(pkg))), Some(Value::Str(Some(file)))) => (pkg.to_string(), PathBuf::from(&**file)),
            (None, None) => {
                let file = self.project.paths.as_ref()?.file.clone();
                (project::package_of(&file)?, file)
            }
            _ => return None,
        };
        let is_package = file.file_name().is_some_and(|f| f == "__init__.py");
        // `relative_base` drops the module's own name for a module (not for a package)
        let name = if is_package { pkg } else if pkg.is_empty() { "m".to_string() } else { format!("{pkg}.m") };
        Some((name, file, is_package))
    }

    /// The module bound in `sys.modules` as `name`, if any.
    fn sys_module(&self, st: &State, name: &str) -> Option<Value> {
        let id = self.sys_modules?;
        match st.get_var(id, name) {
            Obj::Namespace { attrs, .. } => attrs.get(name).cloned(),
            _ => None,
        }
    }

    /// Import each module of `chain` (outermost first), binding each in its parent: per path,
    /// the modules' values. A path on which a module's body fails everywhere ends there.
    fn import_chain(&mut self, st: State, chain: &[Found], span: Span) -> Vec<(State, Vec<Value>)> {
        let mut acc = vec![(st, Vec::<Value>::new())];
        for (i, f) in chain.iter().enumerate() {
            // a package on the way to the module imported is bound, its `__init__` not run
            // (libraries' `__init__`s import everything they have; what a submodule needs of
            // its package it imports itself), unless it ran already
            let run_body = i + 1 == chain.len() || f.package_dir.is_none();
            let mut next = Vec::new();
            for (st, mods) in acc {
                for (mut st, v) in self.import_module(st, f, run_body, span) {
                    if let (Some(Value::Ref(parent)), Value::Ref(_)) = (mods.last(), &v) {
                        let short: Name = Rc::from(f.name.rsplit('.').next().unwrap_or(&f.name));
                        if let Obj::Scope { vars, .. } = st.get_mut_var(*parent, &short) {
                            vars.insert(short, v.clone());
                        }
                    }
                    let mut mods = mods.clone();
                    mods.push(v);
                    next.push((st, mods));
                }
            }
            acc = next;
        }
        acc
    }

    /// Import one project module on this path: the one in `sys.modules`, or a new scope in
    /// which its body runs (the checked file's own IR when another module imports it). Without
    /// `run_body` (a package passed through), an empty package scope that `sys.modules` does
    /// not keep.
    fn import_module(&mut self, mut st: State, f: &Found, run_body: bool, _span: Span) -> Vals {
        if let Some(v) = self.sys_module(&st, &f.name) {
            return vec![(st, v)];
        }
        if self.import_steps > IMPORT_STEPS {
            return vec![(st, Value::Unknown)];
        }
        if !run_body {
            let scope = module_scope(&mut st, Some(&f.name), &f.name, None);
            return vec![(st, Value::Ref(scope))];
        }
        let main = self.main_module;
        let loaded: Option<Rc<Module>>;
        let body: Option<&Module> = match &f.file {
            None => None,
            Some(path) if self.project.is_checked(path) => match main {
                Some(m) => Some(m),
                None => return vec![(st, Value::Unknown)],
            },
            Some(path) => match self.project.load(path, &f.name) {
                Some(i) => {
                    loaded = Some(self.project.loaded[i].module.clone());
                    loaded.as_deref()
                }
                None => return vec![(st, Value::Unknown)],
            },
        };
        let package = if f.package_dir.is_some() { f.name.clone() } else { f.name.rsplit_once('.').map(|(p, _)| p.to_string()).unwrap_or_default() };
        let scope = module_scope(&mut st, Some(&f.name), &package, f.file.as_deref());
        let v = Value::Ref(scope);
        let modules = self.sys_modules_of(&mut st);
        let key: Name = Rc::from(f.name.as_str());
        if let Obj::Namespace { attrs, .. } = st.get_mut_var(modules, &key) {
            attrs.insert(key, v.clone());
        }
        let Some(body) = body else { return vec![(st, v)] };
        let mctx = Ctx { scope, module_scope: scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
        self.run_module_body(&body.body, st, &mctx)
            .into_iter()
            .filter(|(_, flow)| *flow == Flow::Normal)
            .map(|(s, _)| (s, v.clone()))
            .collect()
    }

    /// A module's top level, statement by statement, within the import budgets: once the module
    /// has spent `MODULE_STEPS`, or all imports `IMPORT_STEPS`, the names the rest would bind
    /// are Unknown (a library's module can build large tables at import time).
    fn run_module_body(&mut self, body: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let start = self.steps;
        let mut live = vec![st];
        for (i, s) in body.iter().enumerate() {
            let spent = self.steps - start;
            if spent > MODULE_STEPS || self.import_steps + spent > IMPORT_STEPS {
                let mut rest = Vec::new();
                super::assigned_names(&body[i..], &mut rest);
                for st in live.iter_mut() {
                    for n in &rest {
                        self.set_var(st, ctx, n, Value::Unknown);
                    }
                }
                break;
            }
            let mut next = Vec::new();
            for st in live {
                for (st, flow) in self.block(std::slice::from_ref(s), st, ctx) {
                    if flow == Flow::Normal {
                        next.push(st);
                    }
                }
            }
            live = next;
            if live.is_empty() || self.abandoned {
                break;
            }
        }
        self.import_steps += self.steps - start;
        live.into_iter().map(|s| (s, Flow::Normal)).collect()
    }

    /// The `sys.modules` object (made on first use when the entry did not make it).
    fn sys_modules_of(&mut self, st: &mut State) -> ObjId {
        match self.sys_modules {
            Some(id) if id < st.heap.len() && matches!(st.get(id), Obj::Namespace { kind, .. } if &**kind == SYS_MODULES) => id,
            _ => {
                let id = st.alloc(Obj::Namespace { kind: Rc::from(SYS_MODULES), attrs: BTreeMap::new() });
                self.sys_modules = Some(id);
                id
            }
        }
    }

    /// Allocate `sys.modules` at the start of an entry, before any path forks.
    pub fn begin_sys_modules(&mut self, st: &mut State) {
        self.sys_modules = None;
        self.sys_modules_of(st);
    }

    /// `from m import n`: the module's global `n`, else its submodule `n` (imported), else
    /// Unknown.
    fn module_member(&mut self, st: State, module: Option<&Value>, pkg: Option<&(String, PathBuf)>, n: &Name, span: Span) -> Vals {
        if let Some(Value::Ref(id)) = module
            && let Obj::Scope { vars, .. } = st.get_named(*id, n)
            && let Some(v) = vars.get(n)
        {
            let v = v.clone();
            return vec![(st, v)];
        }
        if let Some((base, dir)) = pkg
            && let Some(chain) = project::resolve_in_package(base, dir, n)
            && let Some(f) = chain.last()
        {
            let f = f.clone();
            let mut out = Vec::new();
            for (mut st, v) in self.import_module(st, &f, true, span) {
                if let (Some(Value::Ref(parent)), Value::Ref(_)) = (module, &v)
                    && let Obj::Scope { vars, .. } = st.get_mut_var(*parent, n)
                {
                    vars.insert(n.clone(), v.clone());
                }
                out.push((st, v));
            }
            return out;
        }
        vec![(st, Value::Unknown)]
    }

    /// `from m import *`: `m.__all__` when it is a list of strings, else every global not
    /// starting with an underscore.
    fn bind_star(&mut self, st: &mut State, ctx: &Ctx, module: Option<&Value>) {
        let Some(Value::Ref(id)) = module else { return };
        let Obj::Scope { vars, .. } = st.get(*id).clone() else { return };
        let all: Option<Vec<Name>> = match vars.get("__all__") {
            Some(Value::Ref(l)) => match st.get(*l) {
                Obj::List(items) => items.iter().map(|v| if let Value::Str(Some(s)) = v { Some(s.clone()) } else { None }).collect(),
                _ => None,
            },
            Some(Value::Tuple(items)) => items.iter().map(|v| if let Value::Str(Some(s)) = v { Some(s.clone()) } else { None }).collect(),
            _ => None,
        };
        let names: Vec<Name> = all.unwrap_or_else(|| vars.keys().filter(|k| !k.starts_with('_')).cloned().collect());
        for n in names {
            let v = vars.get(&n).cloned().unwrap_or(Value::Unknown);
            self.set_var(st, ctx, &n, v);
        }
    }
}

/// A new module scope: its `__name__` (none for a script run as `__main__`: the builtin then
/// answers), `__package__` and `__file__`, which its relative imports start from (`importer`).
pub fn module_scope(st: &mut State, name: Option<&str>, package: &str, file: Option<&std::path::Path>) -> ObjId {
    let text = |s: &str| Value::Str(Some(Rc::from(s)));
    let mut vars = Vars::new();
    if let Some(n) = name {
        vars.insert(Name::from("__name__"), text(n));
    }
    vars.insert(Name::from("__package__"), text(package));
    if let Some(p) = file {
        vars.insert(Name::from("__file__"), text(&p.to_string_lossy()));
    }
    st.alloc(Obj::Scope { vars, parent: None })
}
