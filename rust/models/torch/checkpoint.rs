//! `torch.save` and `torch.load`: the keys of a checkpoint dict (SHP312).
//!
//! Each `torch.save(obj, f)` the analysis runs is logged ([`Log::saves`]): its site, its file
//! when `f` is a known string, and the keys of `obj` when it is a dict whose keys are all known
//! strings (a literal, `dict(...)`, `{**base, ...}`, keys stored one by one: the core follows
//! the dict). The file is known when the program builds it from known values (`models::text`):
//! a constant, a variable or an argparse default, `+`, an f-string (`f"{save_dir}/last.pt"`,
//! `f"epoch_{epoch:03d}.pt"` of a known epoch), `str.format`, `%`, `os.path.join` and the
//! string methods `join`, `replace`, `strip`, `upper`, `lower`. A part not known (an epoch the
//! analysis cannot tell, a float, a spec not modelled) leaves the whole file unknown: no save
//! or load is matched by a guess.
//!
//! `torch.load(f)` gives a `Namespace` object of kind [`CHECKPOINT`], a value of unknown type
//! until a use tells it is a tensor (`loaded.rs`). When `f` is a known string, a
//! constant string subscript of it is logged ([`Log::reads`]) and recorded as a candidate
//! warning at the subscript. The candidate is settled only once the entry has run
//! (`engine::report::settle_checkpoints`), when every save is known, whether it runs before or
//! after the load on the path: see [`missing`].
//!
//! The checkpoint object is "opened", and its reads no longer logged, when the program may
//! add keys to it: a subscript store, a method other than `get`/`keys`/`items`/`values`, or
//! handing it to a library call.

use std::rc::Rc;

use crate::ir::{FileId, Name, Span};
use crate::models::ctx::ModelCtx;
use crate::rules::training::checkpoint_key_never_saved::{self as rule, CheckpointKeyNeverSaved};
use crate::rules::violation::Violation;
use crate::value::*;

/// The kind of the namespace objects `torch.load` gives (checkpoints, when loaded from a known
/// file).
pub const CHECKPOINT: &str = "<checkpoint>";
/// The file it was loaded from (a string).
const PATH: &str = "<path>";
/// Set when the program may have added keys to it.
const OPEN: &str = "<open>";

/// One `torch.save` the analysis ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    pub site: Span,
    /// The file, when a known string.
    pub path: Option<Rc<str>>,
    /// The keys of the saved dict; `None` when it is not a dict with known string keys.
    pub keys: Option<Vec<Rc<str>>>,
}

/// `ckpt["key"]` on a checkpoint loaded from `path`.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub site: Span,
    pub path: Rc<str>,
    pub key: Rc<str>,
}

/// What the analysis saw of checkpoints, over all its entries.
#[derive(Debug, Default)]
pub struct Log {
    pub saves: Vec<Save>,
    pub reads: Vec<Read>,
}

fn arg<'v>(args: &'v [Value], kwargs: &'v [(Name, Value)], i: usize, name: &str) -> Option<&'v Value> {
    args.get(i).or(kwargs.iter().find(|(k, _)| &**k == name).map(|(_, v)| v))
}

/// `torch.save(obj, f)`: logged; returns None.
pub fn save(cx: &mut dyn ModelCtx, st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let path = arg(args, kwargs, 1, "f").and_then(|v| v.as_str()).map(Rc::from);
    let keys = match arg(args, kwargs, 0, "obj") {
        Some(Value::Ref(id)) => match st.get(*id) {
            Obj::Dict(items) => items.iter().map(|(k, _)| k.as_str().map(Rc::from)).collect::<Option<Vec<Rc<str>>>>(),
            _ => None,
        },
        _ => None,
    };
    let s = Save { site: span, path, keys };
    let log = cx.checkpoints();
    if !log.saves.contains(&s) {
        log.saves.push(s);
    }
    vec![(st, Value::None)]
}

/// `torch.load(f, ...)`: a loaded object, which is a value of unknown type until a use tells
/// it is a tensor (`loaded.rs`); when `f` is a known string, a checkpoint whose key reads are
/// logged.
pub fn load(st: State, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let mut st = st;
    let mut attrs = std::collections::BTreeMap::new();
    if let Some(path) = arg(args, kwargs, 0, "f").and_then(|v| v.as_str()) {
        attrs.insert(Name::from(PATH), Value::Str(Some(Rc::from(path))));
    }
    let id = st.alloc(Obj::Namespace { kind: Rc::from(CHECKPOINT), attrs });
    vec![(st, Value::Ref(id))]
}

/// Whether `v` is a loaded checkpoint object.
pub fn is_checkpoint(st: &State, v: &Value) -> Option<ObjId> {
    match v {
        Value::Ref(id) => matches!(st.get(*id), Obj::Namespace { kind, .. } if &**kind == CHECKPOINT).then_some(*id),
        _ => None,
    }
}

/// The program may add keys to the checkpoint `v` (a store, a mutating method, a library
/// call that receives it): its later reads are not judged.
pub fn open(st: &mut State, v: &Value) {
    if let Some(id) = is_checkpoint(st, v) {
        if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
            attrs.insert(Name::from(OPEN), Value::Bool(true));
        }
    }
}

/// The methods of a checkpoint dict that add no key.
pub fn reads_only(method: &str) -> bool {
    matches!(method, "get" | "keys" | "items" | "values" | "__contains__" | "__getitem__")
}

/// `ckpt[key]` on the loaded object `id`: Unknown; a constant string key is logged and
/// recorded as a candidate warning, settled when the entry has run. An index only a tensor
/// takes (`x[:, 0]`) tells it is a tensor (`loaded.rs`).
pub fn subscript(cx: &mut dyn ModelCtx, st: State, id: ObjId, key: &Value, span: Span) -> Vals {
    if super::loaded::tells_index(key) {
        let mut st = st;
        return match super::loaded::tensor(cx, &mut st, &Value::Ref(id)) {
            Some(t) => super::tensor_index(cx, st, Value::Tensor(t), key.clone(), span),
            None => vec![(st, Value::Unknown)],
        };
    }
    if let (Obj::Namespace { attrs, .. }, Some(k)) = (st.get(id), key.as_str()) {
        if let (Some(Value::Str(Some(path))), None) = (attrs.get(PATH), attrs.get(OPEN)) {
            let r = Read { site: span, path: path.clone(), key: Rc::from(k) };
            let log = cx.checkpoints();
            if !log.reads.contains(&r) {
                log.reads.push(r);
            }
            let v = CheckpointKeyNeverSaved::Missing { key: k.to_string(), saves: String::new() };
            cx.warn(&st, span, &rule::RULE, v.message());
        }
    }
    vec![(st, Value::Unknown)]
}

/// The violation at the subscript `site` of the checked file `source`, if every read logged
/// there is of a key no save wrote (`place` shows a save's site):
/// - the program saves something, and every save writes a dict with known string keys;
/// - every call in `source` whose name says it saves (`torch.save`, `save_checkpoint`,
///   `accelerator.save`, `img.save`, ...) ran as a `torch.save` the log holds, or calls a
///   function `source` defines (whose own saves are then in the log);
/// - the read spells its key as a string constant at the subscript (`ckpt["optimizer"]`, not
///   a key the program builds);
/// - some save wrote the file the read loaded (the same known string, however it was built):
///   a checkpoint the program never writes (pretrained weights) is not judged;
/// - the key is none of the keys any save wrote;
/// - the key appears in `source` only as a subscript read (`ckpt["key"]`) or a dict literal
///   key: a test (`"key" in ckpt`), a `.get("key")`, a store, a list of keys, all mean the
///   program expects it may be missing.
pub fn missing(log: &Log, source: &str, site: Span, place: &dyn Fn(Span) -> String) -> Option<CheckpointKeyNeverSaved> {
    let reads: Vec<&Read> = log.reads.iter().filter(|r| r.site == site).collect();
    let first = reads.first()?;
    if log.saves.is_empty() || log.saves.iter().any(|s| s.keys.is_none()) {
        return None;
    }
    let observed: Vec<(u32, u32)> = log.saves.iter().filter(|s| s.site.file == FileId::MAIN).map(|s| (s.site.start, s.site.end)).collect();
    if unobserved_save_call(source, &observed) {
        return None;
    }
    for r in &reads {
        if r.site.file == FileId::MAIN && !literal_at(source, r.site, &r.key) {
            return None;
        }
        if !log.saves.iter().any(|s| s.path.as_deref() == Some(&*r.path)) {
            return None;
        }
        if log.saves.iter().any(|s| s.keys.as_ref().is_some_and(|ks| ks.iter().any(|k| **k == *r.key))) {
            return None;
        }
        if !only_read_or_written(source, &r.key) {
            return None;
        }
    }
    // one line per save site, its keys in the order they were written
    let mut sites: Vec<(Span, Vec<Rc<str>>)> = Vec::new();
    for s in &log.saves {
        let keys = s.keys.clone().unwrap_or_default();
        match sites.iter_mut().find(|(at, _)| *at == s.site) {
            Some((_, ks)) => keys.into_iter().for_each(|k| {
                if !ks.contains(&k) {
                    ks.push(k)
                }
            }),
            None => sites.push((s.site, keys)),
        }
    }
    sites.sort_by_key(|(s, _)| (s.file.0, s.start));
    let saves = sites
        .iter()
        .map(|(at, ks)| {
            let ks: Vec<String> = ks.iter().map(|k| format!("'{k}'")).collect();
            let what = if ks.is_empty() { "an empty dict".to_string() } else { ks.join(", ") };
            format!("torch.save at {} writes {what}", place(*at))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(CheckpointKeyNeverSaved::Missing { key: first.key.to_string(), saves })
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `source` has a call whose name contains `save` that is none of the `observed`
/// `torch.save` sites (byte ranges) and no call of a function `source` defines.
fn unobserved_save_call(source: &str, observed: &[(u32, u32)]) -> bool {
    let b = source.as_bytes();
    let lower = source.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("save").map(|i| i + from) {
        // the whole identifier around it
        let mut s = i;
        while s > 0 && is_ident(b[s - 1]) {
            s -= 1;
        }
        let mut e = i + 4;
        while e < b.len() && is_ident(b[e]) {
            e += 1;
        }
        from = e;
        let mut j = e;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j >= b.len() || b[j] != b'(' {
            continue;
        }
        let name = &source[s..e];
        let before = source[..s].trim_end();
        if before.ends_with("def") && before[..before.len() - 3].chars().last().is_none_or(|c| !c.is_alphanumeric() && c != '_') {
            continue;
        }
        if defines(source, name) {
            continue;
        }
        if observed.iter().any(|(a, z)| (*a as usize) <= s && e <= (*z as usize)) {
            continue;
        }
        return true;
    }
    false
}

/// Whether `source` defines a function `name` (`def name(`).
fn defines(source: &str, name: &str) -> bool {
    source.match_indices(name).any(|(i, _)| {
        let before = source[..i].trim_end_matches([' ', '\t']);
        let after = source[i + name.len()..].trim_start_matches([' ', '\t']);
        before.ends_with("def") && (i == 0 || !is_ident(source.as_bytes()[i - 1])) && after.starts_with('(')
    })
}

/// Whether the subscript at `site` spells `key` as a plain string constant (`ckpt["key"]`): a
/// key the program builds (`ckpt[f"{prefix}optimizer"]`, `ckpt[name]`) is not judged, as
/// [`only_read_or_written`] could not find its tests and stores in the text.
fn literal_at(source: &str, site: Span, key: &str) -> bool {
    let Some(text) = source.get(site.start as usize..site.end as usize) else { return false };
    ["\"", "'"].iter().any(|q| {
        let quoted = format!("{q}{key}{q}");
        text.match_indices(&quoted).any(|(i, _)| i == 0 || !is_ident(text.as_bytes()[i - 1]))
    })
}

/// Whether every quoted occurrence of `key` in `source` is a subscript read (`x["key"]` not
/// followed by `=`) or a dict literal's key (`{"key": ...}`, `, "key": ...`).
fn only_read_or_written(source: &str, key: &str) -> bool {
    let b = source.as_bytes();
    for q in ["\"", "'"] {
        let quoted = format!("{q}{key}{q}");
        for (i, _) in source.match_indices(&quoted) {
            let prev = source[..i].trim_end().bytes().last();
            let rest = source[i + quoted.len()..].trim_start();
            let next = rest.bytes().next();
            let subscript_read = prev == Some(b'[') && next == Some(b']') && {
                let after = rest[1..].trim_start();
                !(after.starts_with('=') && !after.starts_with("==")) && !after.starts_with(":=")
                    && !["+=", "-=", "*=", "/=", "|=", "&="].iter().any(|op| after.starts_with(op))
            };
            let dict_key = matches!(prev, Some(b'{') | Some(b',')) && next == Some(b':');
            // a prefix (`f"key"`, `b"key"`, `r"key"`): not a plain string constant
            let prefixed = i > 0 && is_ident(b[i - 1]);
            if prefixed || !(subscript_read || dict_key) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_calls_are_torch_saves_or_calls_of_local_functions() {
        let src = "def save_checkpoint(s, p):\n    torch.save(s, p)\nsave_checkpoint({}, 'a')\n";
        let at = src.find("torch.save").unwrap() as u32;
        assert!(!unobserved_save_call(src, &[(at, at + 16)]));
        assert!(unobserved_save_call(src, &[]));
        assert!(unobserved_save_call("img.save('x.png')\n", &[]));
        assert!(!unobserved_save_call("saved = 1\nprint(saved)\n", &[]));
    }

    #[test]
    fn only_a_key_spelled_at_the_read_is_judged() {
        let src = "a = ck['optimizer']\nb = ck[f'optimizer']\nc = ck[key]\nd = ck[\"sched\"]\n";
        let site = |line: &str| {
            let start = src.find(line).unwrap() + 4;
            Span { file: FileId::MAIN, start: start as u32, end: (start + line.len() - 4) as u32 }
        };
        assert!(literal_at(src, site("a = ck['optimizer']"), "optimizer"));
        assert!(!literal_at(src, site("b = ck[f'optimizer']"), "optimizer"));
        assert!(!literal_at(src, site("c = ck[key]"), "optimizer"));
        assert!(literal_at(src, site("d = ck[\"sched\"]"), "sched"));
        assert!(!literal_at(src, site("d = ck[\"sched\"]"), "sch"));
    }

    #[test]
    fn a_key_tested_fetched_with_get_or_stored_is_expected_missing() {
        assert!(only_read_or_written("c = {'model': 1}\nopt(ck['optimizer'])\n", "optimizer"));
        assert!(only_read_or_written("torch.save({\n  \"model\": m,\n  \"optimizer\": o}, p)\n", "optimizer"));
        assert!(!only_read_or_written("if 'optimizer' in ck:\n    opt(ck['optimizer'])\n", "optimizer"));
        assert!(!only_read_or_written("ck.get('optimizer')\n", "optimizer"));
        assert!(!only_read_or_written("ck['optimizer'] = {}\n", "optimizer"));
        assert!(!only_read_or_written("for k in ('model', 'optimizer'): pass\n", "optimizer"));
        assert!(only_read_or_written("ck['optimizer'] == 1\n", "optimizer"));
    }
}
