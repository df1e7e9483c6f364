//! The core's structure, checked from its sources: rooms, the direction of their
//! dependencies, the model interface, and file sizes (see docs/architecture.md).
//!
//! A room is a top-level module of the crate (`rust/<room>/` or `rust/<room>.rs`). A file
//! depends on room R when its code (comments stripped) names `crate::R` (or, inside R's
//! parent, `super::R`). The room graph must be acyclic and must follow the one direction
//! of the architecture: `parse → ir → engine ← models`, `shape` and `value` below both.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 1200;

fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new("rust"), &mut files);
    files.sort();
    files.into_iter().map(|p| (p.clone(), fs::read_to_string(&p).unwrap())).collect()
}

/// The code of a file without comments and without the contents of string literals (so a
/// doc comment or a message may name anything).
fn code_of(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b: Vec<char> = src.chars().collect();
    let mut i = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == 'r' && (b.get(i + 1) == Some(&'#') || b.get(i + 1) == Some(&'"')) && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_')) {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if b[i] == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == '\'' && b.get(i + 2) == Some(&'\'') {
            // a char literal like '"'
            out.push_str("' '");
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The room of a source file: `rust/engine/interp/call.rs` → `engine`, `rust/lib.rs` → `lib`.
fn room_of(path: &Path) -> String {
    let rel = path.strip_prefix("rust").unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

fn rooms() -> BTreeSet<String> {
    sources().iter().map(|(p, _)| room_of(p)).filter(|r| r != "lib" && r != "python").collect()
}

fn words(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
}

/// The rooms a file's code names.
fn deps_of(path: &Path, code: &str, rooms: &BTreeSet<String>) -> BTreeSet<String> {
    let own = room_of(path);
    let mut out = BTreeSet::new();
    for w in words(code) {
        if let Some(rest) = w.strip_prefix("crate::") {
            let r = rest.split("::").next().unwrap();
            if rooms.contains(r) && r != own {
                out.insert(r.to_string());
            }
        }
    }
    // `use super::X` from a room's top-level file (`rust/engine/mod.rs` is inside `engine`;
    // `super` there is the crate)
    let top = path.parent() == Some(Path::new("rust")) || path.file_name().is_some_and(|f| f == "mod.rs") && path.parent().and_then(|p| p.parent()) == Some(Path::new("rust"));
    if top {
        for w in words(code) {
            if let Some(rest) = w.strip_prefix("super::") {
                let r = rest.split("::").next().unwrap();
                if rooms.contains(r) && r != own {
                    out.insert(r.to_string());
                }
            }
        }
    }
    out
}

fn room_graph() -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let rooms = rooms();
    let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (p, src) in sources() {
        let own = room_of(&p);
        if own == "lib" || own == "python" {
            continue;
        }
        for d in deps_of(&p, &code_of(&src), &rooms) {
            g.entry(own.clone()).or_default().entry(d).or_default().push(p.display().to_string());
        }
    }
    g
}

#[test]
fn no_file_is_over_the_size_limit() {
    let big: Vec<String> = sources()
        .iter()
        .filter(|(_, s)| s.lines().count() > MAX_LINES)
        .map(|(p, s)| format!("{} ({} lines)", p.display(), s.lines().count()))
        .collect();
    assert!(big.is_empty(), "split these files along their seams (limit {MAX_LINES} lines): {big:?}");
}

#[test]
fn only_the_engine_names_the_interpreter() {
    let mut bad = Vec::new();
    for (p, src) in sources() {
        if room_of(&p) == "engine" {
            continue;
        }
        let code = code_of(&src);
        if code.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "Interp") {
            bad.push(p.display().to_string());
        }
    }
    assert!(bad.is_empty(), "these files name the interpreter type; use models::ctx::ModelCtx: {bad:?}");
}

#[test]
fn models_reach_the_engine_only_through_model_ctx() {
    let g = room_graph();
    let back: Vec<&String> = g.get("models").and_then(|d| d.get("engine")).map(|files| files.iter().collect()).unwrap_or_default();
    assert!(back.is_empty(), "models must not depend on the engine: {back:?}");
    // path bookkeeping is the engine's: models fork through ModelCtx::assume / ModelCtx::branch
    let mut bad = Vec::new();
    for (p, src) in sources() {
        if room_of(&p) != "models" {
            continue;
        }
        let code = code_of(&src);
        for field in [".branches", ".tainted", ".in_try", ".assumed", "Branch::"] {
            if code.contains(field) {
                bad.push(format!("{} uses {field}", p.display()));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_room_graph_has_no_cycle() {
    let g = room_graph();
    // depth-first search for a back edge
    fn visit(n: &str, g: &BTreeMap<String, BTreeMap<String, Vec<String>>>, state: &mut BTreeMap<String, u8>, stack: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for d in g.get(n).map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            match state.get(&d).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|x| *x == d).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(d);
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(&d, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in rooms() {
        if state.get(&n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(&n, &g, &mut state, &mut stack) {
                let witness: Vec<String> = cycle.windows(2).map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]].join(", "))).collect();
                panic!("the rooms depend on each other in a cycle:\n{}", witness.join("\n"));
            }
        }
    }
}

#[test]
fn the_pure_rooms_stay_pure() {
    let g = room_graph();
    let allowed: &[(&str, &[&str])] = &[
        ("shape", &[]),
        ("parse", &[]),
        ("ir", &["parse"]),
        ("value", &["ir", "shape"]),
        ("rules", &["ir", "shape", "value"]),
        ("diagnostics", &["rules"]),
    ];
    for (room, ok) in allowed {
        let deps: Vec<&String> = g.get(*room).map(|m| m.keys().collect()).unwrap_or_default();
        let extra: Vec<&&String> = deps.iter().filter(|d| !ok.contains(&d.as_str())).collect();
        assert!(extra.is_empty(), "{room} depends on {extra:?} ({:?})", g.get(*room));
    }
}

/// The checker of this file finds what it is meant to find (a test that cannot fail is a
/// defect).
#[test]
fn the_dependency_scan_sees_code_and_ignores_comments_and_strings() {
    let rooms: BTreeSet<String> = ["engine", "models", "value"].iter().map(|s| s.to_string()).collect();
    let p = Path::new("rust/models/torch/x.rs");
    let code = code_of("use crate::value::*;\n// crate::engine in a comment\nlet s = \"crate::engine\";\nfn f() { crate::engine::interp::Interp::new(); }\n");
    assert_eq!(deps_of(p, &code, &rooms), ["engine", "value"].iter().map(|s| s.to_string()).collect());
    let code = code_of("/// crate::engine\nlet r = r#\"crate::engine \"quoted\"\"#;\nlet c = '\"';\n");
    assert!(deps_of(p, &code, &rooms).is_empty());
}

/// Every thread-local of the core, as an analysis thread that runs one job after another
/// (`guarded` in lib.rs) must treat it: reset at each job's start by the named function, which
/// `engine::reset_thread_state` calls, or kept (a cache of what does not change, a constant).
/// A new thread-local fails this test until it is put in one list.
#[test]
fn each_thread_local_is_reset_for_each_job_or_is_a_cache() {
    // (static, file, the function that resets it)
    const RESET: &[(&str, &str, &str)] = &[
        ("INSTANCES", "rust/engine/entry.rs", "reset_instances"),
        ("PROBES", "rust/engine/project.rs", "reset_probes"),
        ("DEFAULTS", "rust/models/torch/device.rs", "reset_thread"),
        ("MODULES_ANYWHERE", "rust/models/torch/device.rs", "reset_thread"),
        ("PROGRAM", "rust/models/torch/optim.rs", "begin_program"),
        ("LOOPS", "rust/models/torch/optim.rs", "begin_program"),
        ("MADE", "rust/models/torch/optim.rs", "reset_made"),
        ("CANDIDATES", "rust/rules/training/discarded_gradients.rs", "begin_program"),
        ("LINEAGES", "rust/value/join.rs", "reset_lineages"),
        ("BOUNDED", "rust/value/mod.rs", "reset_values_tracking"),
        ("LAYOUT_BLIND", "rust/value/mod.rs", "reset_layout_blind"),
        ("TRACKER", "rust/value/reads.rs", "reset_reads"),
        ("SHAPE_VARS", "rust/value/reads.rs", "reset_reads"),
        ("WALKS", "rust/value/reads.rs", "reset_reads"),
        ("OPTIMIZER_WALKS", "rust/value/reads.rs", "reset_reads"),
        ("CLEAN", "rust/value/walks.rs", "reset_clean"),
        ("STORES", "rust/value/taken.rs", "reset_taken"),
        ("FORGETS", "rust/value/taken.rs", "reset_taken"),
        ("FLOOR", "rust/value/taken.rs", "reset_taken"),
    ];
    // (caches and constants: the same for every job)
    const KEPT: &[&str] = &["NEW", "SPARE", "LOWERED", "SMALL_CONSTANTS", "DEAD", "EMPTY", "ANALYSIS_THREAD"];
    let sources = sources();
    let mut found = BTreeSet::new();
    for (path, src) in &sources {
        let mut rest = src.as_str();
        while let Some(at) = rest.find("thread_local! {") {
            rest = &rest[at..];
            let end = rest.find("\n}").unwrap_or(rest.len());
            for line in rest[..end].lines() {
                if let Some(decl) = line.trim_start().strip_prefix("static ") {
                    let name = decl.split(':').next().unwrap().trim();
                    found.insert((name.to_string(), path.to_string_lossy().into_owned()));
                }
            }
            rest = &rest[end..];
        }
    }
    assert!(found.len() >= RESET.len() + KEPT.len(), "{found:?}");
    let source_of = |file: &str| &sources.iter().find(|(p, _)| p.to_string_lossy() == file).unwrap_or_else(|| panic!("{file}")).1;
    let body_of = |src: &str, function: &str| -> String {
        let at = src.find(&format!("fn {function}(")).unwrap_or_else(|| panic!("no fn {function}"));
        let end = src[at..].find("\n}").unwrap();
        src[at..at + end].to_string()
    };
    let reset_all = body_of(source_of("rust/engine/mod.rs"), "reset_thread_state");
    for (name, file) in &found {
        if KEPT.contains(&name.as_str()) {
            continue;
        }
        let Some((_, f, function)) = RESET.iter().find(|(n, f, _)| n == name && f == file) else {
            panic!("thread-local {name} in {file}: reset it in engine::reset_thread_state (and list it in RESET), or list it in KEPT");
        };
        assert!(body_of(source_of(f), function).contains(name.as_str()), "{function} in {f} does not reset {name}");
        assert!(reset_all.contains(&format!("{function}()")), "engine::reset_thread_state does not call {function}");
    }
}
