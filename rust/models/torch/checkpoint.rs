//! `torch.save` and `torch.load`: the keys of a checkpoint dict (SHP312).
//!
//! Each `torch.save(obj, f)` the analysis runs is logged (`Log::saves`, in the rule's file
//! `rules::training::checkpoint_key_never_saved`, which judges the log): its site, its file
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
//! constant string subscript of it is logged (`Log::reads`) and recorded as a candidate
//! warning at the subscript. The candidate is settled only once the entry has run
//! (`engine::report::settle_checkpoints`), when every save is known, whether it runs before or
//! after the load on the path (the rule's `missing`).
//!
//! The checkpoint object is "opened", and its reads no longer logged, when the program may
//! add keys to it: a subscript store, a method other than `get`/`keys`/`items`/`values`, or
//! handing it to a library call.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::arg;
use crate::models::ctx::ModelCtx;
use crate::rules::training::checkpoint_key_never_saved::{self as rule, CheckpointKeyNeverSaved, Read, Save};
use crate::rules::violation::Violation;
use crate::value::*;

/// The kind of the namespace objects `torch.load` gives (checkpoints, when loaded from a known
/// file).
pub const CHECKPOINT: &str = "<checkpoint>";
/// The file it was loaded from (a string).
const PATH: &str = "<path>";
/// Set when the program may have added keys to it.
const OPEN: &str = "<open>";


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
