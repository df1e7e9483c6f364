//! The train/eval mode of modules through the training loop (SHP307), and what an evaluation
//! pass needs to know of values (SHP306, SHP307).
//!
//! A module's mode is its `training` attribute (`models::set_training`: `.eval()`,
//! `.train(mode)`; absent: built in training mode on this path; unknown after code the core
//! does not follow). Two hidden attributes of the module `.eval()` was called on record the
//! history SHP307 needs: [`EVAL_AT`], the span of that `.eval()` (or `.train(False)`), and
//! [`TRAINED`], set by a `backward()` whose loss reaches the module's layers while it is in
//! training mode. A later `backward()` through it in eval mode, with both set, is training
//! that resumed after an evaluation without `model.train()`. A model put in eval mode before
//! its first training step (frozen batch statistics) never gets [`TRAINED`]: not reported.
//!
//! The evaluation pass itself (a helper whose results keep no graph) is found by the
//! interpreter (`engine::interp::call`, `EvalFrame`); this file gives it the facts it reads:
//! [`training_layer`], [`holds`].

use std::collections::BTreeSet;

use crate::ir::{FileId, Span};
use crate::models::ctx::ModelCtx;
use crate::rules::training::train_eval_mode::TrainEvalMode;
use crate::rules::violation::Violation;
use crate::shape::Poly;
use crate::value::*;

/// The span of the `.eval()` that switched a module to eval mode (hidden attribute).
pub const EVAL_AT: &str = "<eval_at>";
/// A `backward()` ran through the module in training mode (hidden attribute).
pub const TRAINED: &str = "<trained>";

fn span_value(s: Span) -> Value {
    Value::Int(Poly::constant(((s.file.0 as i128) << 64) | ((s.start as i128) << 32) | s.end as i128))
}

fn span_of(v: Option<&Value>) -> Option<Span> {
    let c = v?.as_const_int()?;
    Some(Span { file: FileId((c >> 64) as u32), start: ((c >> 32) & 0xffff_ffff) as u32, end: (c & 0xffff_ffff) as u32 })
}

/// A layer whose mode changes what it computes: dropout, or batch norm that keeps running
/// statistics (with `track_running_stats=False` it uses the batch's in both modes).
fn mode_dependent(l: &Layer) -> bool {
    let k = &*l.kind;
    k.contains("Dropout") || ((k.starts_with("BatchNorm") || k == "SyncBatchNorm") && !matches!(l.args.get("track_running_stats"), Some(Value::Bool(false))))
}

/// The library layers of a module and its submodules.
fn layers(st: &State, id: ObjId) -> Vec<ObjId> {
    let mut out = Vec::new();
    super::optim::each_layer(st, id, &mut |_| {}, &mut |id, _| out.push(id));
    out
}

/// For each object of the heap, whether its layers (`layers`: the module walk of
/// `optim::each_layer`) include one that `target` accepts: the heap's edges of that walk
/// (`optim::each_edge`) are read once, then walked back from those layers. (Asking `layers`
/// of every module was quadratic in the model's size, at every `backward()`: a tenth of a
/// vision transformer's analysis.)
fn reaching(st: &State, target: &dyn Fn(&Layer) -> bool) -> Vec<bool> {
    let n = st.heap.len();
    let mut parents: Vec<Vec<ObjId>> = vec![Vec::new(); n];
    let mut reached = vec![false; n];
    let mut todo = Vec::new();
    for id in 0..n {
        let o = st.get(id);
        if let Obj::Layer(l) = o
            && target(l)
        {
            reached[id] = true;
            todo.push(id);
        }
        super::optim::each_edge(o, &mut |c| {
            if c < n {
                parents[c].push(id);
            }
        });
    }
    while let Some(c) = todo.pop() {
        for &p in &parents[c] {
            if !reached[p] {
                reached[p] = true;
                todo.push(p);
            }
        }
    }
    reached
}

fn describe(l: &Layer) -> String {
    match &l.label {
        Some(label) => format!("{} {label}", l.kind),
        None => l.kind.to_string(),
    }
}

/// A dropout or batch-norm layer of the module `id` that is certainly in training mode
/// (`training` true, or never set: built in training mode on this path), described for
/// messages; None when it holds none.
pub fn training_layer(st: &State, id: ObjId) -> Option<String> {
    if !matches!(st.get(id), Obj::Layer(_) | Obj::Container { .. } | Obj::Instance { .. }) {
        return None;
    }
    layers(st, id).into_iter().find_map(|l| match st.get(l) {
        Obj::Layer(l) if mode_dependent(l) && matches!(l.attrs.get("training"), None | Some(Value::Bool(true))) => Some(format!("{} is in training mode", describe(l))),
        _ => None,
    })
}

/// Whether `v`, or an object it reaches, holds a tensor for which `pred` holds (true too when
/// the walk is too large to finish).
pub fn holds(st: &State, v: &Value, pred: &dyn Fn(&Tensor) -> bool) -> bool {
    walk(st, v, pred)
}

fn walk(st: &State, v: &Value, pred: &dyn Fn(&Tensor) -> bool) -> bool {
    let mut todo: Vec<Value> = vec![v.clone()];
    let mut seen = BTreeSet::new();
    while let Some(v) = todo.pop() {
        match v {
            Value::Tensor(t) => {
                if pred(&t) {
                    return true;
                }
            }
            Value::Tuple(items) => todo.extend(items.iter().cloned()),
            Value::Ref(id) => {
                if seen.len() > 4096 {
                    return true;
                }
                if !seen.insert(id) {
                    continue;
                }
                match st.get(id) {
                    Obj::List(items) => todo.extend(items.iter().cloned()),
                    Obj::Dict(items) => todo.extend(items.iter().flat_map(|(k, v)| [k.clone(), v.clone()])),
                    Obj::Instance { attrs, .. } | Obj::Namespace { attrs, .. } => todo.extend(attrs.values().cloned()),
                    Obj::Container { items, attrs, .. } => todo.extend(items.iter().map(|(_, v)| v.clone()).chain(attrs.values().cloned())),
                    Obj::Layer(l) => todo.extend(l.attrs.values().cloned()),
                    Obj::Class { .. } | Obj::Scope { .. } => {}
                }
            }
            _ => {}
        }
    }
    false
}

/// `.eval()`/`.train(False)` at `span` on the module `id`: remembered for SHP307.
pub fn switched_to_eval(st: &mut State, id: ObjId, span: Span) {
    match st.get_mut(id) {
        Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } => {
            attrs.insert(crate::ir::Name::from(EVAL_AT), span_value(span));
        }
        _ => {}
    }
}

/// `.train()` on the module `id`: what it does next is training again, not the training it
/// did (an evaluation loop after it is in training mode on purpose: SHP307 reads [`TRAINED`]).
pub fn switched_to_train(st: &mut State, id: ObjId) {
    if let Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } = st.get(id)
        && attrs.contains_key(TRAINED)
        && let Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } = st.get_mut(id)
    {
        attrs.remove(TRAINED);
    }
}

/// Whether the module `id` trained (a backward through it in training mode) since it was last
/// switched to training by `.train()`.
pub fn trained(st: &State, id: ObjId) -> bool {
    matches!(st.get(id), Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } if matches!(attrs.get(TRAINED), Some(Value::Bool(true))))
}

/// `loss.backward()` at `span` on a tracked loss: the modules whose layers it reaches and that
/// are in training mode have trained; one switched to eval by an `.eval()` after it trained and
/// still in eval mode trains in eval mode now: SHP307 (a warning, for each dropout or batch
/// norm it holds in eval mode, the first).
pub fn backward(cx: &mut dyn ModelCtx, st: &mut State, loss: &Tensor, span: Span) {
    let Some(saved) = &loss.saved else { return };
    if saved.layers.is_empty() {
        return;
    }
    let mut trained = Vec::new();
    crate::value::reads::note_walk();
    let reached = reaching(st, &|l| saved.layers.contains(&l.span));
    for id in 0..st.heap.len() {
        let attrs = match st.get(id) {
            Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } => attrs,
            _ => continue,
        };
        if !reached[id] {
            continue;
        }
        let mode = attrs.get("training").cloned();
        let (eval_at, was_trained) = (span_of(attrs.get(EVAL_AT)), matches!(attrs.get(TRAINED), Some(Value::Bool(true))));
        match mode {
            None | Some(Value::Bool(true)) => {
                if !was_trained {
                    trained.push(id);
                }
            }
            Some(Value::Bool(false)) if was_trained => {
                let Some(eval_at) = eval_at else { continue };
                let frozen = layers(st, id).into_iter().find_map(|l| match st.get(l) {
                    Obj::Layer(l) if mode_dependent(l) && matches!(l.attrs.get("training"), Some(Value::Bool(false))) => Some(describe(l)),
                    _ => None,
                });
                if let Some(layer) = frozen {
                    let v = TrainEvalMode::TrainInEval { layer, eval: cx.place(eval_at) };
                    cx.warn(st, span, &crate::rules::training::train_eval_mode::RULE, v.message());
                }
            }
            _ => {}
        }
    }
    for id in trained {
        if let Obj::Instance { attrs, .. } | Obj::Container { attrs, .. } = st.get_mut(id) {
            attrs.insert(crate::ir::Name::from(TRAINED), Value::Bool(true));
        }
    }
}

/// The grad mode a decorator of `def` sets for its body: `@torch.no_grad()`/`@torch.no_grad`,
/// `@torch.inference_mode()` (off), `@torch.enable_grad()` (on), with the decorator's span.
pub fn grad_decorator(def: &crate::ir::FuncDef) -> Option<(Option<bool>, crate::ir::Span)> {
    use crate::ir::ExprKind;
    def.decorators.iter().find_map(|d| {
        let (callee, called) = match &d.kind {
            ExprKind::Call { func, .. } => (&**func, true),
            _ => (d, false),
        };
        let name = match &callee.kind {
            ExprKind::Name(n) | ExprKind::Attr(_, n) => n.clone(),
            _ => return None,
        };
        let enabled = match &*name {
            "no_grad" => Some(false),
            "enable_grad" => Some(true),
            // (`inference_mode(False)` is rare: its mode is not read)
            "inference_mode" if called => match &d.kind {
                ExprKind::Call { args, .. } if args.is_empty() => Some(false),
                _ => None,
            },
            "inference_mode" => Some(false),
            _ => return None,
        };
        Some((enabled, d.span))
    })
}
