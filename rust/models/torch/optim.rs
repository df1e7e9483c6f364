//! `torch.optim`: optimizers and their gradients through the training loop, and the
//! learning-rate schedulers (objects that touch no gradient).
//!
//! An optimizer is a `Namespace` object of kind [`OPTIMIZER`] (so `optimizer is not None`
//! holds) that knows the library layers whose parameters it updates (by the span that built
//! each, collected from `model.parameters()`; a parameter list the core cannot follow leaves the
//! set unknown) and the state of their gradients on the path:
//! - `none` before any backward, `zeroed` after `zero_grad()` (of the optimizer, or
//!   `model.zero_grad()` of a module whose layers it updates), `backward` after a `backward()`
//!   whose loss reaches one of its layers (`Saved::layers`), `stepped` after `step()` used them;
//! - unknown after anything the core does not follow: the optimizer handed to a library call
//!   (`scaler.step(optimizer)`), `step(f)` with an `f` that is no function of the program, a
//!   `.grad` store, a loss whose layers are not all known. `step(closure)` runs the closure
//!   (its zero_grad and backward), then steps.
//!
//! Before each change (`zero_grad()`, `step()`, clipping, the end of a loop iteration that
//! stands for all of them) the model delivers an [`Event::Gradients`] with the optimizer's
//! [`Gradients`]; the rules that judge them are its subscribers, in their rule files: a step
//! after a backward into gradients a step used (SHP301, `stale_gradients`), a step on gradients
//! zeroed after the last backward and a zeroing of gradients a step never used (SHP303,
//! `discarded_gradients`), clipping when no backward's gradients wait for a step (SHP304,
//! `clip_order`). What torch raises stays here, as the precondition of its API:
//! `LBFGS.step()` without its closure (SHP315), `ReduceLROnPlateau.step()` without its metric
//! (SHP313).
//!
//! SHP302 (an optimizer never stepped) is a question about the whole program, not a path: the
//! file's run keeps a [`Program`] record of what any path did: for each optimizer (by the span
//! that built it) the first backward in a loop that reached its layers; whether the `.step` of
//! any optimizer was read (a call, or a bound method handed on), whether any optimizer was
//! handed to code the core does not follow; and every `.step` read the run went through. At
//! the end of the script
//! ([`unstepped`], judged by `rules::training::never_stepped`) the optimizers some loop gave gradients are reported when no optimizer
//! was stepped or handed on by any path, and every `.step` written in the program's files was
//! read by the run (a step in code the analysis never reached, such as a callback a library
//! calls, keeps it silent).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::ir::{FileId, Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::rules::events::{Event, GradOp, Gradients, Grads};
use crate::rules::training::{closure_required, plateau_step_without_metric};
use crate::shape::Poly;
use crate::value::*;

/// The kind of the namespace objects that are optimizers.
pub const OPTIMIZER: &str = "Optimizer";
pub const SCHEDULER: &str = "LRScheduler";

/// The optimizer classes of `torch.optim` (torch 2.11).
const OPTIMIZERS: &[&str] = &[
    "ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD",
    "SparseAdam",
];

// the attributes of an optimizer object
const LAYERS: &str = "<layers>";
const GRADS: &str = "<grads>";
const ZEROED: &str = "<zeroed>";
const BACKWARD: &str = "<backward>";
const STEPPED: &str = "<stepped>";
const STALE: &str = "<stale>";
const AT: &str = "<at>";
// whether a `zero_grad()` ran in the loop iteration run generalised ([`begin_iteration`]): the
// place of the last one alone cannot tell, as the unrolled iterations before zeroed there too
const ZEROED_HERE: &str = "<zeroed in this iteration>";
// an optimizer whose `step` takes a closure it must call (LBFGS: SHP315)
const NEEDS_CLOSURE: &str = "<needs closure>";
// a ReduceLROnPlateau scheduler: where it was built
pub const PLATEAU: &str = "<plateau>";

/// What any path of the file's run did to the optimizers, by the span that built each
/// (SHP302: [`unstepped`]).
#[derive(Default)]
struct Program {
    /// The first backward run in a loop whose loss reached its layers.
    backward: BTreeMap<Span, Span>,
    /// The `.step` of some optimizer was read (called, or handed on as a bound method). Which
    /// optimizer is not kept: a call summary replayed for another one reads no `.step`.
    stepped: bool,
    /// Some optimizer was handed to code the core does not follow, which may step it.
    handed: bool,
    /// A scheduler was built on it (named in the message).
    scheduled: BTreeSet<Span>,
    /// Every place the run read an attribute `step` of anything.
    step_reads: BTreeSet<Span>,
    /// The backwards whose gradients a step used, by optimizer (the spans that built it and
    /// ran the backward): [`used`].
    used: BTreeSet<(Span, Span)>,
}

thread_local! {
    static PROGRAM: RefCell<Program> = RefCell::new(Program::default());
    /// How many loop bodies the path being run is in (`loops.rs`).
    static LOOPS: Cell<u32> = const { Cell::new(0) };
}

/// A new file's run begins: nothing is recorded.
pub fn begin_program() {
    PROGRAM.with(|p| *p.borrow_mut() = Program::default());
    LOOPS.with(|l| l.set(0));
}

/// A loop body starts (`true`) or ends (`false`) running.
pub fn in_loop_body(entering: bool) {
    LOOPS.with(|l| l.set(if entering { l.get() + 1 } else { l.get().saturating_sub(1) }));
}

/// The attribute `step` of `receiver` was read at `site` (`attr.rs`).
pub fn step_read(st: &State, receiver: &Value, site: Span) {
    let optimizer = matches!(receiver, Value::Ref(id) if matches!(st.get(*id), Obj::Namespace { kind, .. } if &**kind == OPTIMIZER));
    PROGRAM.with(|p| {
        let mut p = p.borrow_mut();
        p.step_reads.insert(site);
        p.stepped |= optimizer;
    });
}

/// A span as a value (an int), for the attributes of an optimizer.
fn span_value(s: Span) -> Value {
    Value::Int(Poly::constant(((s.file.0 as i128) << 64) | ((s.start as i128) << 32) | s.end as i128))
}

fn span_of(v: Option<&Value>) -> Option<Span> {
    let c = v?.as_const_int()?;
    Some(Span { file: FileId((c >> 64) as u32), start: ((c >> 32) & 0xffff_ffff) as u32, end: (c & 0xffff_ffff) as u32 })
}

/// The library layers (by the span that built them) of the modules among `v` (a module, its
/// `.parameters()`, a list of them, param-group dicts); `None` when some part is not followed.
fn layers_of(st: &State, v: &Value, out: &mut BTreeSet<Span>, depth: usize) -> Option<()> {
    if depth > 4 {
        return None;
    }
    match v {
        Value::LibMethod(m, name) if matches!(&**name, "<parameters>") => layers_of(st, m, out, depth + 1),
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => items.iter().try_for_each(|i| layers_of(st, i, out, depth + 1)),
            Obj::Dict(items) => match items.iter().find(|(k, _)| k.as_str() == Some("params")) {
                Some((_, p)) => layers_of(st, p, out, depth + 1),
                None => None,
            },
            _ => module_layers(st, *id, out),
        },
        Value::Tuple(items) => items.iter().try_for_each(|i| layers_of(st, i, out, depth + 1)),
        _ => None,
    }
}

/// The layers of a module and its submodules; `None` when it holds a parameter of its own (a raw
/// `nn.Parameter`), which no layer span names, or is no module the core follows.
fn module_layers(st: &State, id: ObjId, out: &mut BTreeSet<Span>) -> Option<()> {
    let mut own_parameter = false;
    // (a registered tensor of an instance is a parameter of its own, unless it is a buffer)
    let own = |attrs: &BTreeMap<Name, Value>| {
        let buffers = crate::models::buffer_names(attrs).unwrap_or_default();
        attrs.iter().any(|(k, v)| matches!(v, Value::Tensor(t) if t.registered) && !buffers.contains(k))
    };
    each_layer(st, id, &mut |attrs| own_parameter |= own(attrs), &mut |_, l| {
        out.insert(l.span);
    });
    (!own_parameter).then_some(())
}

/// Visit the library layers (`layer`: id and layer) of the module `id` and its submodules,
/// through containers, lists and user instances (`instance`: each instance's attributes).
pub(super) fn each_layer(st: &State, id: ObjId, instance: &mut dyn FnMut(&BTreeMap<Name, Value>), layer: &mut dyn FnMut(ObjId, &Layer)) {
    let mut todo = vec![id];
    let mut seen = BTreeSet::new();
    while let Some(id) = todo.pop() {
        if seen.len() > 4096 || !seen.insert(id) {
            continue;
        }
        let o = st.get(id);
        match o {
            Obj::Layer(l) => layer(id, l),
            Obj::Instance { attrs, .. } => instance(attrs),
            _ => {}
        }
        each_edge(o, &mut |c| todo.push(c));
    }
}

/// The objects `each_layer` goes on to from `o`, in order: a layer's arguments and
/// attributes, a container's items, an instance's attributes, a list's items.
pub(super) fn each_edge(o: &Obj, f: &mut dyn FnMut(ObjId)) {
    let mut refs = |vals: &mut dyn Iterator<Item = &Value>| {
        for v in vals {
            if let Value::Ref(c) = v {
                f(*c);
            }
        }
    };
    match o {
        Obj::Layer(l) => refs(&mut l.args.values().chain(l.attrs.values())),
        Obj::Container { items, .. } => refs(&mut items.iter().map(|(_, v)| v)),
        Obj::Instance { attrs, .. } => refs(&mut attrs.values()),
        Obj::List(items) => refs(&mut items.iter()),
        _ => {}
    }
}

/// `torch.optim.<Class>(params, ...)`: an optimizer object over the layers of `params`; a
/// learning-rate scheduler (`torch.optim.lr_scheduler.<Class>`): an object that touches no
/// gradient. None when `path` is neither.
pub fn construct(st: &mut State, path: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Option<Value> {
    if path.starts_with("torch.optim.lr_scheduler.") {
        if let Some(Value::Ref(id)) = args.first().or(kwargs.iter().find(|(k, _)| &**k == "optimizer").map(|(_, v)| v))
            && let Obj::Namespace { kind, attrs } = st.get(*id)
            && &**kind == OPTIMIZER
            && let Some(at) = span_of(attrs.get(AT))
        {
            PROGRAM.with(|p| p.borrow_mut().scheduled.insert(at));
        }
        // (a plateau scheduler's `step` takes the metric it monitors: SHP313)
        let plateau = path == "torch.optim.lr_scheduler.ReduceLROnPlateau";
        return Some(super::data::ns(st, SCHEDULER, if plateau { vec![(PLATEAU, span_value(span))] } else { Vec::new() }));
    }
    let name = path.strip_prefix("torch.optim.")?;
    if !OPTIMIZERS.contains(&name) {
        return None;
    }
    let params = args.first().or(kwargs.iter().find(|(k, _)| &**k == "params").map(|(_, v)| v));
    let mut layers = BTreeSet::new();
    let layers = match params.and_then(|p| layers_of(st, p, &mut layers, 0)) {
        Some(()) if !layers.is_empty() => Value::Tuple(Rc::new(layers.into_iter().map(span_value).collect())),
        _ => Value::Unknown,
    };
    let grads = if name == "LBFGS" { Value::Unknown } else { Value::Str(Some(Rc::from("none"))) };
    let mut attrs = vec![(LAYERS, layers), (GRADS, grads), (AT, span_value(span))];
    if name == "LBFGS" {
        attrs.push((NEEDS_CLOSURE, Value::Bool(true)));
    }
    MADE.with(|m| m.set(true));
    Some(super::data::ns(st, OPTIMIZER, attrs))
}

thread_local! {
    /// Whether an optimizer was built in this analysis (`any_made`).
    static MADE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether an optimizer was built in this analysis: until then `forget(st, None)` is a no-op
/// that reads nothing, so call summaries recorded before must not be replayed after
/// (`engine::memo::EntryFacts`).
pub fn any_made() -> bool {
    MADE.with(|m| m.get())
}

/// A new analysis: no optimizer yet.
pub fn reset_made() {
    MADE.with(|m| m.set(false));
}

fn grads(attrs: &std::collections::BTreeMap<Name, Value>) -> Option<&str> {
    attrs.get(GRADS).and_then(|v| v.as_str())
}

fn set(st: &mut State, id: ObjId, kvs: &[(&str, Value)]) {
    if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
        for (k, v) in kvs {
            attrs.insert(Name::from(*k), v.clone());
        }
    }
}

/// The gradients of an optimizer object's attributes, as the rules see them.
fn gradients(attrs: &BTreeMap<Name, Value>) -> Gradients {
    Gradients {
        built: span_of(attrs.get(AT)),
        grads: match grads(attrs) {
            Some("none") => Some(Grads::None),
            Some("zeroed") => Some(Grads::Zeroed),
            Some("backward") => Some(Grads::Backward),
            Some("stepped") => Some(Grads::Stepped),
            _ => None,
        },
        zeroed: span_of(attrs.get(ZEROED)),
        backward: span_of(attrs.get(BACKWARD)),
        stepped: span_of(attrs.get(STEPPED)),
        stale: span_of(attrs.get(STALE)),
    }
}

/// Tell the rules what is about to happen to the gradients of the optimizer with `attrs`.
fn notify(cx: &mut dyn ModelCtx, st: &State, attrs: &BTreeMap<Name, Value>, op: GradOp, span: Span) {
    cx.emit(&Event::Gradients { op, optimizer: &gradients(attrs), span }, st, span);
}

/// The optimizers on the path. Each one found is read; which others exist is a dependency of
/// its own (`reads::note_optimizer_walk`: a summary keeps the optimizers at its start).
fn optimizers(st: &State) -> Vec<ObjId> {
    if !any_made() {
        return Vec::new();
    }
    crate::value::reads::note_optimizer_walk();
    let ids = optimizer_ids(st);
    ids.iter().for_each(|&id| crate::value::reads::note_read(id));
    ids
}

/// The optimizers on the path, without noting any read (`engine::memo` compares summaries by
/// them).
pub fn optimizer_ids(st: &State) -> Vec<ObjId> {
    if !any_made() {
        return Vec::new();
    }
    (0..st.heap.len()).filter(|&id| is_optimizer_obj(&st.heap[id])).collect()
}

/// Whether the optimizer updates one of `layers` (`Some(false)`: certainly none; `None`: not
/// known, its layers or the loss's are not all known).
fn reaches(attrs: &std::collections::BTreeMap<Name, Value>, layers: &[Span], lost: bool) -> Option<bool> {
    let Some(Value::Tuple(own)) = attrs.get(LAYERS) else { return None };
    let hit = own.iter().any(|v| span_of(Some(v)).is_some_and(|s| layers.contains(&s)));
    if hit {
        Some(true)
    } else if lost {
        None
    } else {
        Some(false)
    }
}

/// A method of an optimizer or a scheduler (`optimizer.zero_grad()`, `optimizer.step()`).
pub fn method(cx: &mut dyn ModelCtx, st: State, id: ObjId, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let Obj::Namespace { kind, attrs } = st.get(id).clone() else { return vec![(st, Value::Unknown)] };
    // SHP313: `ReduceLROnPlateau.step()` without its metric raises TypeError
    if &*kind == SCHEDULER {
        if name == "step"
            && args.is_empty()
            && kwargs.is_empty()
            && let Some(at) = span_of(attrs.get(PLATEAU))
        {
            let v = plateau_step_without_metric::PlateauStepWithoutMetric::Step { at: cx.place(at) };
            cx.check(&st, span, crate::shape::Tri::True, |_| (v, Vec::new()));
            return Vec::new();
        }
        return vec![(st, Value::Unknown)];
    }
    if &*kind != OPTIMIZER {
        return vec![(st, Value::Unknown)];
    }
    match name {
        "zero_grad" => {
            notify(cx, &st, &attrs, GradOp::ZeroGrad, span);
            set(&mut st, id, &[(GRADS, Value::Str(Some(Rc::from("zeroed")))), (ZEROED, span_value(span)), (STALE, Value::None)]);
            mark_zeroed(&mut st, id);
            vec![(st, Value::None)]
        }
        // SHP315: `LBFGS.step()` without its closure raises TypeError
        "step" if args.is_empty() && kwargs.is_empty() && matches!(attrs.get(NEEDS_CLOSURE), Some(Value::Bool(true))) => {
            let at = span_of(attrs.get(AT)).map(|s| cx.place(s)).unwrap_or_else(|| "?".into());
            let v = closure_required::ClosureRequired::Step { at };
            cx.check(&st, span, crate::shape::Tri::True, |_| (v, Vec::new()));
            Vec::new()
        }
        "step" if args.is_empty() && kwargs.is_empty() => {
            apply_step(cx, &mut st, id, &attrs, span);
            vec![(st, Value::None)]
        }
        // `step(closure)`: the optimizer calls the closure with gradients on (its zero_grad and
        // backward), then steps with the gradients it left; it returns the closure's loss
        // (LBFGS calls it again while it searches: the first call is the one that can fail)
        "step" => {
            let closure = args.first().or(kwargs.iter().find(|(k, _)| &**k == "closure").map(|(_, v)| v));
            let Some(c @ (Value::Func(_) | Value::Bound(..))) = closure.cloned() else {
                set(&mut st, id, &[(GRADS, Value::Unknown)]);
                return vec![(st, Value::Unknown)];
            };
            let mode = st.grad_mode;
            st.grad_mode = GradMode::On;
            let mut out = Vec::new();
            for (mut st, loss) in cx.call(c, Vec::new(), Vec::new(), st, span) {
                st.grad_mode = mode;
                if let Obj::Namespace { kind, attrs } = st.get(id)
                    && &**kind == OPTIMIZER
                {
                    let attrs = attrs.clone();
                    apply_step(cx, &mut st, id, &attrs, span);
                }
                out.push((st, loss));
            }
            out
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// Whether some step of the optimizer built at `built`, on any path or iteration of the run so
/// far, used the gradients of the backward at `backward`.
pub fn used(built: Span, backward: Span) -> bool {
    PROGRAM.with(|p| p.borrow().used.contains(&(built, backward)))
}

/// `step()` with the gradients on the path: the rules judge them, then the gradients are the
/// step's.
fn apply_step(cx: &mut dyn ModelCtx, st: &mut State, id: ObjId, attrs: &BTreeMap<Name, Value>, span: Span) {
    notify(cx, st, attrs, GradOp::Step, span);
    // (this step used the gradients of the last backward: [`used`])
    if grads(attrs) == Some("backward")
        && let (Some(at), Some(b)) = (span_of(attrs.get(AT)), span_of(attrs.get(BACKWARD)))
    {
        PROGRAM.with(|p| p.borrow_mut().used.insert((at, b)));
    }
    let after = match grads(attrs) {
        Some("backward" | "stepped") => Value::Str(Some(Rc::from("stepped"))),
        Some(g) => Value::Str(Some(Rc::from(g))),
        None => Value::Unknown,
    };
    set(st, id, &[(GRADS, after), (STEPPED, span_value(span)), (STALE, Value::None)]);
}

/// `loss.backward()` on a tracked loss: the gradients of the optimizers whose layers it reaches
/// grow. One that still holds the gradients a step used becomes stale from this backward on:
/// SHP301 when it steps before any zeroing.
pub fn backward(st: &mut State, loss: &Tensor, span: Span) {
    let (layers, lost) = match &loss.saved {
        Some(s) => (s.layers.clone(), s.layers_lost),
        None => (Vec::new(), false),
    };
    // (not summarised: it notes program-wide, in `PROGRAM.backward`, what depends on whether
    // a loop runs it, which no summary keys)
    crate::value::reads::note_walk();
    for id in optimizers(st) {
        let Obj::Namespace { attrs, .. } = st.get(id).clone() else { continue };
        match reaches(&attrs, &layers, lost) {
            Some(true) => {
                if LOOPS.with(|l| l.get()) > 0
                    && let Some(at) = span_of(attrs.get(AT))
                {
                    PROGRAM.with(|p| {
                        p.borrow_mut().backward.entry(at).or_insert(span);
                    });
                }
                if grads(&attrs) == Some("stepped") && !matches!(attrs.get(STALE), Some(Value::Int(_))) {
                    set(st, id, &[(STALE, span_value(span))]);
                }
                set(st, id, &[(GRADS, Value::Str(Some(Rc::from("backward")))), (BACKWARD, span_value(span))]);
            }
            Some(false) => {}
            None => set(st, id, &[(GRADS, Value::Unknown)]),
        }
    }
}

/// (coverage) Whether, on this path, the graph of `x` in `x.backward()` is known (tracked, a
/// leaf or certainly untracked), and whether the optimizers its gradients reach are (no
/// optimizer's reach is left undecided).
pub fn backward_known(st: &State, x: &Value) -> (bool, bool) {
    let Value::Tensor(t) = x else { return (false, false) };
    match t.grad {
        Grad::Unknown => (false, false),
        Grad::Untracked(..) => (true, true),
        Grad::Tracked | Grad::Leaf => {
            let (layers, lost) = match &t.saved {
                Some(s) => (s.layers.clone(), s.layers_lost),
                None => (Vec::new(), false),
            };
            let known = optimizers(st).into_iter().all(|id| match st.get(id) {
                Obj::Namespace { attrs, .. } => reaches(attrs, &layers, lost).is_some() && grads(attrs).is_some(),
                _ => false,
            });
            (true, known && !layers.is_empty())
        }
    }
}

/// `model.zero_grad()`: the optimizers whose layers are all the module's, or among them, have
/// zeroed gradients; the others that share a layer with it are no longer known.
pub fn zero_module(cx: &mut dyn ModelCtx, st: &mut State, module: ObjId, span: Span) {
    let mut layers = BTreeSet::new();
    let known = module_layers(st, module, &mut layers).is_some();
    let layers: Vec<Span> = layers.into_iter().collect();
    for id in optimizers(st) {
        let Obj::Namespace { attrs, .. } = st.get(id).clone() else { continue };
        match (known, attrs.get(LAYERS)) {
            (true, Some(Value::Tuple(own))) if own.iter().all(|v| span_of(Some(v)).is_some_and(|s| layers.contains(&s))) => {
                notify(cx, st, &attrs, GradOp::ZeroGrad, span);
                set(st, id, &[(GRADS, Value::Str(Some(Rc::from("zeroed")))), (ZEROED, span_value(span)), (STALE, Value::None)]);
                mark_zeroed(st, id);
            }
            (true, Some(Value::Tuple(own))) if !own.iter().any(|v| span_of(Some(v)).is_some_and(|s| layers.contains(&s))) => {}
            _ => set(st, id, &[(GRADS, Value::Unknown)]),
        }
    }
}

/// Anything the core does not follow may have changed the gradients of these optimizers (all of
/// them with `None`): a library call they were handed to, a `.grad` store.
pub fn forget(st: &mut State, ids: Option<&[ObjId]>) {
    let handed = ids.is_some();
    let all = match ids {
        // (only those objects: no walk over the heap, no read of the others)
        Some(ids) => {
            let mut own: Vec<ObjId> = ids.iter().copied().filter(|&id| is_optimizer(st, id)).collect();
            own.sort_unstable();
            own.dedup();
            own
        }
        // (none until an optimizer is built: `optimizers`)
        None => optimizers(st),
    };
    for id in all {
        // (handed to a library call, which may step it: SHP302 keeps silent about it)
        if handed {
            PROGRAM.with(|p| p.borrow_mut().handed = true);
        }
        set(st, id, &[(GRADS, Value::Unknown)]);
    }
}

fn is_optimizer(st: &State, id: ObjId) -> bool {
    id < st.heap.len() && is_optimizer_obj(st.get(id))
}

fn is_optimizer_obj(o: &Obj) -> bool {
    matches!(o, Obj::Namespace { kind, .. } if &**kind == OPTIMIZER)
}

/// `torch.nn.utils.clip_grad_norm_(params, ...)`/`clip_grad_value_` at a finite limit: the rules
/// judge the gradients of the optimizers of exactly those layers (SHP304).
pub fn clip(cx: &mut dyn ModelCtx, st: &State, op: &str, params: &Value, limit: Option<&Value>, span: Span) {
    // (a clip at an infinite or unknown limit may only measure the norm)
    if !matches!(limit, Some(Value::Int(p)) if p.as_const().is_some()) && !matches!(limit, Some(Value::Float(Some(f))) if f.is_finite()) {
        return;
    }
    let mut layers = BTreeSet::new();
    if layers_of(st, params, &mut layers, 0).is_none() || layers.is_empty() {
        return;
    }
    for id in optimizers(st) {
        let Obj::Namespace { attrs, .. } = st.get(id).clone() else { continue };
        let Some(Value::Tuple(own)) = attrs.get(LAYERS) else { continue };
        let own: BTreeSet<Span> = own.iter().filter_map(|v| span_of(Some(v))).collect();
        if own == layers {
            notify(cx, st, &attrs, GradOp::Clip { op }, span);
        }
    }
}

/// The optimizers that every path of an iteration (`ends`, the paths that go on to the next
/// one) zeroed at one and the same place, with that place.
pub fn zeroed_each_iteration(before: &State, ends: &[&State]) -> Vec<(ObjId, Span)> {
    let Some(first) = ends.first() else { return Vec::new() };
    let zeroed_at = |st: &State, id: ObjId| -> Option<Span> {
        let Obj::Namespace { attrs, kind } = st.get(id) else { return None };
        if &**kind != OPTIMIZER || attrs.get(ZEROED_HERE) != Some(&Value::Bool(true)) {
            return None;
        }
        span_of(attrs.get(ZEROED))
    };
    optimizers(before)
        .into_iter()
        .filter(|id| *id < first.heap.len())
        .filter_map(|id| {
            let z = zeroed_at(first, id)?;
            ends.iter().all(|st| id < st.heap.len() && zeroed_at(st, id) == Some(z)).then_some((id, z))
        })
        .collect()
}

/// A loop iteration run generalised begins on `st`: no optimizer was zeroed in it yet. Gives
/// back what an enclosing iteration knew, for [`end_iteration`].
pub fn begin_iteration(st: &mut State) -> Vec<(ObjId, Option<Value>)> {
    let mut saved = Vec::new();
    for id in optimizers(st) {
        if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
            saved.push((id, attrs.insert(Name::from(ZEROED_HERE), Value::Bool(false))));
        }
    }
    saved
}

/// `zero_grad()` zeroed the optimizer `id` in the loop iteration run generalised, if one is.
fn mark_zeroed(st: &mut State, id: ObjId) {
    if let Obj::Namespace { attrs, .. } = st.get_mut(id)
        && let Some(v) = attrs.get_mut(ZEROED_HERE)
    {
        *v = Value::Bool(true);
    }
}

/// The loop iteration [`begin_iteration`] began ends on `st`: the enclosing iteration, if any,
/// zeroed what this one did.
pub fn end_iteration(st: &mut State, saved: &[(ObjId, Option<Value>)]) {
    for (id, outer) in saved {
        if *id >= st.heap.len() {
            continue;
        }
        if let Obj::Namespace { attrs, kind } = st.get_mut(*id)
            && &**kind == OPTIMIZER
        {
            let here = attrs.remove(ZEROED_HERE);
            match (outer, here) {
                (None, _) => {}
                (Some(Value::Bool(false)), Some(h)) => {
                    attrs.insert(Name::from(ZEROED_HERE), h);
                }
                (Some(o), _) => {
                    attrs.insert(Name::from(ZEROED_HERE), o.clone());
                }
            }
        }
    }
}

/// After one iteration of a loop over an unknown number of items (`for x, y in loader`), run
/// once for all of them, on a path that goes round: the rules judge what each optimizer that
/// existed before it carries into the next iteration ([`GradOp::Iteration`], with the place
/// `zeroed` where every path of the iteration zeroed it: [`zeroed_each_iteration`]). `span`:
/// the loop body's first statement.
pub fn generic_iteration(cx: &mut dyn ModelCtx, before: &State, after: &State, zeroed: &[(ObjId, Span)], span: Span) {
    for id in optimizers(after) {
        let (Some(Obj::Namespace { attrs: old, kind }), Obj::Namespace { attrs: new, .. }) = ((id < before.heap.len()).then(|| before.get(id)), after.get(id)) else { continue };
        if &**kind != OPTIMIZER {
            continue;
        }
        let zeroed_each = zeroed.iter().find(|(z, _)| *z == id).map(|(_, s)| *s);
        // (a mark the paths disagreed on: some path may have zeroed it)
        let zeroed_here = new.get(ZEROED_HERE) != Some(&Value::Bool(false));
        notify(cx, after, new, GradOp::Iteration { began: &gradients(old), zeroed_here, zeroed_each }, span);
    }
}


/// Whether `unstepped` can list anything: a `backward()` ran while the program neither
/// stepped nor handed an optimizer away. When not, the program's `step`/`grad` sites need not
/// be collected (a walk of every loaded module's tree).
pub fn may_be_unstepped() -> bool {
    PROGRAM.with(|p| {
        let p = p.borrow();
        !(p.stepped || p.handed || p.backward.is_empty())
    })
}

/// At the end of the script's run (`entry.rs`): the optimizers (where each was built) that a
/// backward in a loop gave gradients, with the first such backward and whether a scheduler was
/// built on it, when no path read the `.step` of any optimizer or handed one on, and the run
/// read every `.step` written in the program's files (`written_steps`: the attribute's places).
/// A call summary replayed for another optimizer reads no `.step`: which optimizer a `.step`
/// stepped is not known for sure, so one stepped or handed on anywhere is enough for none.
pub fn unstepped(written_steps: &[Span]) -> Vec<(Span, Span, bool)> {
    PROGRAM.with(|p| {
        let p = p.borrow();
        if p.stepped || p.handed || written_steps.iter().any(|s| !p.step_reads.contains(s)) {
            return Vec::new();
        }
        p.backward.iter().map(|(at, b)| (*at, *b, p.scheduled.contains(at))).collect()
    })
}
