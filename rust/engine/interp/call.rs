//! Calls: evaluating the arguments, dispatching on the callee (user functions and classes,
//! modules, library functions and methods, builtins, torchvision transform objects, which
//! `models::torch::transforms::call_transform` applies), instantiating user classes and
//! dataclasses, generators (run for their first element), and running a user function's
//! body, through its call summary when one applies (`summarised.rs`).

use std::collections::BTreeMap;
use std::rc::Rc;

use super::expr::Gather;
use super::{Ctx, Flow, Interp, Vals, collect_globals, debug_enabled, merge_vals};
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::rules::events::{Event, EventKind};
use crate::value::*;

const MAX_CALL_DEPTH: usize = 48;
/// The second key of a loader's sample summary (`Interp::call_sample`).
const SAMPLE_KEY: &str = "<loader sample>";

/// A call's arguments evaluated so far on one path: the path, the positional and keyword
/// values, and whether an unknown `*args`/`**kwargs` made them unknown.
type ArgsSoFar = (State, Vec<Value>, Vec<(Name, Value)>, bool);

impl<'a> Interp<'a> {
    pub(super) fn eval_call(&mut self, func: &Expr, args: &[Arg], kwargs: &[Kwarg], st: State, ctx: &Ctx, span: Span) -> Vals {
        // `super()` with no arguments
        if let ExprKind::Name(n) = &func.kind {
            if &**n == "super" && args.is_empty() && self.lookup(&st, ctx, "super").map(|v| v == Value::Builtin("super")).unwrap_or(false) {
                return match (ctx.method_class, &ctx.self_val) {
                    (Some(c), Some(s)) => vec![(st, Value::Super(c, Box::new(s.clone())))],
                    _ => vec![(st, Value::Unknown)],
                };
            }
        }
        // `super(C, self)`: the bases of `C`, looked up on `self`
        if let ExprKind::Name(n) = &func.kind
            && &**n == "super"
            && args.len() == 2
            && kwargs.is_empty()
            && !args.iter().any(|a| a.star)
            && self.lookup(&st, ctx, "super").map(|v| v == Value::Builtin("super")).unwrap_or(false)
        {
            let mut out = Vec::new();
            for (st, c) in self.eval(&args[0].value, st, ctx) {
                for (st, me) in self.eval(&args[1].value, st, ctx) {
                    let v = match &c {
                        Value::Ref(cid) if matches!(st.get(*cid), Obj::Class { .. }) => Value::Super(*cid, Box::new(me)),
                        _ => Value::Unknown,
                    };
                    out.push((st, v));
                }
            }
            return out;
        }
        let (label, label_at) = (self.assign_label.clone(), self.label_set_at);
        self.set_label(None);
        // (a method of an unknown value stored in a variable or an attribute may change it in
        // place, and any alias of it: `taken`)
        let mut st = st;
        if let ExprKind::Attr(receiver, name) = &func.kind
            && self.unknown_receiver(receiver, name, &st, ctx)
        {
            st.taken.forget();
        }
        let funcs = self.eval_outs(func, st, ctx);
        let one_callee = funcs.len() == 1;
        let mut out = Vec::new();
        for (st, f) in funcs {
            // arguments: the values so far go to the last outcome of each argument (as a rule
            // its only one), copies to the others
            let mut acc: Gather<ArgsSoFar> = Gather::new();
            // (room for the marker keyword a construction adds to its summary's key, `construct`)
            acc.push((st, Vec::with_capacity(args.len()), Vec::with_capacity(kwargs.len() + 1), false));
            for a in args {
                let mut next = Gather::new();
                for (st, mut pos, mut kw, unk) in acc.into_items() {
                    let vals = self.eval_outs(&a.value, st, ctx);
                    let n = vals.len();
                    for (i, (mut st, v)) in vals.enumerate() {
                        let (mut pos, kw) = if i + 1 == n { (std::mem::take(&mut pos), std::mem::take(&mut kw)) } else { (pos.clone(), kw.clone()) };
                        let mut unk = unk;
                        if a.star {
                            match self.iterate(&mut st, &v, a.value.span) {
                                Some(items) => pos.extend(items),
                                None => unk = true,
                            }
                        } else {
                            pos.push(v);
                        }
                        next.push((st, pos, kw, unk));
                    }
                }
                // the outcomes of the arguments multiply: past half the path budget they are
                // joined, and past the budget the entry is abandoned, as a block's are
                let Some(joined) = self.bound_args(next, a.value.span) else {
                    return Vec::new();
                };
                acc = joined;
            }
            for k in kwargs {
                let mut next = Gather::new();
                for (st, mut pos, mut kw, unk) in acc.into_items() {
                    let vals = self.eval_outs(&k.value, st, ctx);
                    let n = vals.len();
                    for (i, (st, v)) in vals.enumerate() {
                        let (pos, mut kw) = if i + 1 == n { (std::mem::take(&mut pos), std::mem::take(&mut kw)) } else { (pos.clone(), kw.clone()) };
                        let mut unk = unk;
                        match &k.name {
                            Some(n) => kw.push((n.clone(), v)),
                            None => match &v {
                                Value::Ref(id) => match st.get(*id) {
                                    Obj::Dict(items) => {
                                        for (kk, vv) in items {
                                            match kk.as_str() {
                                                Some(s) => kw.push((Rc::from(s), vv.clone())),
                                                None => unk = true,
                                            }
                                        }
                                    }
                                    _ => unk = true,
                                },
                                _ => unk = true,
                            },
                        }
                        next.push((st, pos, kw, unk));
                    }
                }
                let Some(joined) = self.bound_args(next, k.value.span) else {
                    return Vec::new();
                };
                acc = joined;
            }
            let calls = acc.into_items();
            let one_call = one_callee && calls.len() == 1;
            for (st, pos, kw, unk) in calls {
                if unk {
                    // unknown *args/**kwargs: the call's result is unknown, its effects too
                    out.push((st, Value::Unknown));
                    continue;
                }
                // a file this path saved, loaded back (`files`)
                let mut st = st;
                if let Some(v) = self.load_saved(&f, &pos, &kw, &mut st, ctx) {
                    out.push((st, v));
                    continue;
                }
                // the call sees the label of the statement it is in, as it was set
                self.assign_label = label.clone();
                self.label_set_at = label_at;
                let saves = super::files::saves(&f).then(|| (pos.clone(), kw.clone()));
                let mut results = self.call(f.clone(), pos, kw, st, span);
                if let Some((pos, kw)) = saves {
                    for (st, _) in results.iter_mut() {
                        self.note_saved(&f, &pos, &kw, st, ctx);
                    }
                }
                self.set_label(None);
                if one_call {
                    // the only call: its outcomes are the expression's
                    return results;
                }
                out.extend(results);
            }
        }
        out
    }

    /// The argument lists evaluated so far, bounded as a display's items are (`bound_items`):
    /// past half the path budget they are joined when every path has the same positional count
    /// and keyword names (else left as they are); `None` past the path budget (the entry is
    /// abandoned).
    fn bound_args(&mut self, acc: Gather<ArgsSoFar>, span: Span) -> Option<Gather<ArgsSoFar>> {
        if !self.past_half_paths(acc.len()) {
            return self.within_paths(acc.len()).then_some(acc);
        }
        let items: Vec<ArgsSoFar> = acc.into_items().collect();
        let mut out = Gather::new();
        // (every path with unknown arguments, `f(*items)` of a list of unknown length, as
        // `nn.Sequential(*[Block(...) for i in range(depth)])` with an unknown depth: their
        // states join as any others do, the arguments stay unknown)
        if items.iter().all(|a| a.3) {
            let paths = items.into_iter().map(|(st, ..)| (st, None)).collect();
            for (st, _) in self.bound_items(paths, span)? {
                out.push((st, Vec::new(), Vec::new(), true));
            }
            return Some(out);
        }
        let form = |a: &ArgsSoFar| (a.1.len(), a.2.iter().map(|(n, _)| n.clone()).collect::<Vec<Name>>());
        let first = form(&items[0]);
        if items.iter().any(|a| a.3 || form(a) != first) {
            let n = items.len();
            for a in items {
                out.push(a);
            }
            return self.within_paths(n).then_some(out);
        }
        let (n_pos, names) = first;
        let paths = items.into_iter().map(|(st, pos, kw, _)| (st, Some(pos.into_iter().chain(kw.into_iter().map(|(_, v)| v)).collect::<Vec<Value>>())));
        for (st, vals) in self.bound_items(paths.collect(), span)? {
            match vals {
                Some(mut vals) => {
                    let kw: Vec<(Name, Value)> = names.iter().cloned().zip(vals.split_off(n_pos)).collect();
                    out.push((st, vals, kw, false));
                }
                None => out.push((st, Vec::new(), Vec::new(), true)),
            }
        }
        Some(out)
    }

    pub fn call(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if crate::engine::modules::is_embedded(span) {
            return self.call_inner(f, args, kwargs, st, span);
        }
        let outer = self.user_site.replace(span);
        let out = self.call_inner(f, args, kwargs, st, span);
        self.user_site = outer;
        out
    }

    fn call_inner(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        // a library call (not user code, whose checks have their own sites) reaches its site
        let user = matches!(f, Value::Func(_) | Value::Bound(..));
        let before = if user { None } else { self.reach_mark(&st, span) };
        // known tensor values (`IntBounds`) do not survive a write the engine does not see:
        // an in-place library call (`x.clamp_(...)`, `out=`, `inplace=True`) or a call whose
        // result is not modelled (it may write through any alias)
        let mutates = !user && writes_in_place(&f, &kwargs);
        // and a module handed to such a call may be switched to eval or training in it
        let objects = if user { Vec::new() } else { models::ref_args(&args, &kwargs) };
        // what an evaluation pass needs (SHP306, SHP307: `EvalFrame`)
        let probe = if self.eval_frames.is_empty() { None } else { self.eval_probe(&f, &st, &args, &kwargs, span) };
        let graph = if !user && !self.eval_frames.is_empty() { uses_graph(&f, &st, &args, &kwargs) } else { Graph::No };
        let switches = !self.eval_frames.is_empty() && matches!(&f, Value::LibMethod(recv, name) if &**name == "train" && matches!(**recv, Value::Ref(_)) && !matches!(args.first(), Some(Value::Bool(false))));
        // (a container's layers are called at its call's site: only the container is probed)
        let outer_probe = if probe.is_some() { self.eval_frames.last_mut().and_then(|fr| fr.active.replace(span)) } else { None };
        // a user function or bound method handed to library or unknown code may run later,
        // at any call the engine does not follow (a forward hook): what it writes is volatile
        let escapes = !user && args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(super::callbacks::may_hold_callable);
        let kept_args = escapes.then(|| (args.clone(), kwargs.clone()));
        if let Some(c) = self.coverage.as_mut() {
            c.callee(span, crate::engine::coverage::kind_of(&st, &f));
        }
        let mut out = self.call_dispatch(f, args, kwargs, st, span);
        if let Some((args, kwargs)) = kept_args {
            for (st, _) in out.iter_mut() {
                self.escape_callbacks(st, &args, &kwargs);
            }
        }
        if probe.is_some()
            && let Some(fr) = self.eval_frames.last_mut()
        {
            fr.active = outer_probe;
        }
        if !self.eval_frames.is_empty() {
            let unknown = out.iter().any(|(_, v)| v.is_unknown());
            let (graph, lost) = match graph {
                Graph::Used => (true, false),
                Graph::IfUnknown => (unknown, false),
                Graph::Lost => (false, unknown),
                Graph::No => (false, false),
            };
            for fr in self.eval_frames.iter_mut() {
                fr.graph_used |= graph;
                fr.lost |= lost;
                fr.set_train |= switches;
            }
            if let Some(probe) = probe {
                self.record_eval_site(span, probe, &out);
            }
        }
        if !user {
            for (st, v) in out.iter_mut() {
                if mutates || v.is_unknown() {
                    models::forget_training(self, st, &objects);
                    st.forget_values();
                    if mutates {
                        *v = std::mem::replace(v, Value::Unknown).forget_values();
                    }
                }
            }
        }
        self.reached(before, span);
        out
    }

    fn call_dispatch(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if !self.tick() {
            return Vec::new();
        }
        // `shape-lint summary` records module calls (`engine::summary`)
        let begun = if self.summary.is_some() { self.summary_begin(&st, &f, &args, &kwargs, span) } else { None };
        let out = self.call_dispatch_inner(f, args, kwargs, st, span);
        if let Some(b) = begun {
            self.summary_end(b, &out);
        }
        out
    }

    /// A library callable given a truth value (`Value::Cond`: an argparse switch,
    /// `torch.cuda.is_available()`): the call runs on each side the path may take, as an `if`
    /// on it would (`Interp::split`), with the argument that bool (`nn.LSTM(...,
    /// bidirectional=args.bi)`). None when no argument is one.
    fn split_on_conds(&mut self, f: &Value, args: &[Value], kwargs: &[(Name, Value)], st: &State, span: Span) -> Option<Vals> {
        let c = args.iter().chain(kwargs.iter().map(|(_, v)| v)).find_map(|v| if let Value::Cond(c) = v { Some(c.clone()) } else { None })?;
        let mut out = Vec::new();
        for (_, (side, st)) in self.split(Value::Cond(c.clone()), st.clone(), span) {
            let bind = |v: &Value| if matches!(v, Value::Cond(x) if *x == c) { Value::Bool(side) } else { v.clone() };
            let args: Vec<Value> = args.iter().map(bind).collect();
            let kwargs: Vec<(Name, Value)> = kwargs.iter().map(|(k, v)| (k.clone(), bind(v))).collect();
            out.extend(self.call_dispatch_inner(f.clone(), args, kwargs, st, span));
        }
        Some(out)
    }

    fn call_dispatch_inner(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if matches!(f, Value::Lib(_) | Value::LibMethod(..) | Value::Builtin(_))
            && let Some(out) = self.split_on_conds(&f, &args, &kwargs, &st, span)
        {
            return out;
        }
        match f {
            Value::Func(c) => self.call_user(&c, args, kwargs, st, span),
            Value::Bound(recv, c) => {
                let mut a = Vec::with_capacity(args.len() + 1);
                a.push(*recv);
                a.extend(args);
                self.call_user(&c, a, kwargs, st, span)
            }
            Value::Ref(id) => match Callee::of(&st, id) {
                Callee::Class => self.instantiate(id, args, kwargs, st, span),
                // a module with a forward hook (`models::HOOKED`): what it takes or returns is
                // not followed
                Callee::Instance(_) if matches!(st.get(id), Obj::Instance { attrs, .. } if attrs.contains_key(models::HOOKED)) => vec![(st, Value::Unknown)],
                Callee::Instance(class) => {
                    let name: Name = Rc::from(if self.lib_base(&st, class).is_some() && self.class_lookup(&st, class, "__call__").is_none() { "forward" } else { "__call__" });
                    if let Some(called) = &mut self.called_modules
                        && &*name == "forward"
                        && !called.contains_key(&class)
                    {
                        called.insert(class, (st.clone(), id));
                    }
                    match self.class_lookup(&st, class, &name) {
                        Some((_, Value::Func(c))) => {
                            let mut a = vec![Value::Ref(id)];
                            a.extend(args);
                            self.call_user(&c, a, kwargs, st, span)
                        }
                        _ => {
                            if !self.has_unknown_base(&st, class) && self.layer_base(&st, class).is_some() {
                                // a subclass of a layer without its own `forward`: the layer's call
                                return match models::held_layer(&st, id) {
                                    Some(l) => self.call_dispatch(l, args, kwargs, st, span),
                                    None => vec![(st, Value::Unknown)],
                                };
                            }
                            if self.has_unknown_base(&st, class) || self.lib_base(&st, class).is_none() {
                                vec![(st, Value::Unknown)]
                            } else {
                                torch::call_module_value(self, st, Value::Ref(id), args, kwargs, span)
                            }
                        }
                    }
                }
                Callee::Module => {
                    let class = match st.get(id) {
                        Obj::Layer(l) => format!("torch.nn.{}", l.kind),
                        Obj::Container { kind, .. } => format!("torch.nn.{kind:?}"),
                        _ => unreachable!(),
                    };
                    let kept = self.wants(EventKind::ApiCall).then(|| (args.clone(), kwargs.clone()));
                    let out = torch::call_module_value(self, st, Value::Ref(id), args, kwargs, span);
                    if let Some((args, kwargs)) = kept {
                        self.emit_api_call(&class, Some(&Value::Ref(id)), &args, &kwargs, &out, span);
                    }
                    out
                }
                // a torchvision transform called from user code (`self.transform(img)` in a
                // user transform or `__getitem__`)
                Callee::Other if torch::transforms::is_transform(&st, &Value::Ref(id)) => torch::transforms::call_transform(self, st, Value::Ref(id), args, kwargs, span),
                Callee::Other => vec![(st, Value::Unknown)],
            },
            Value::Lib(path) => {
                let kept = self.wants(EventKind::ApiCall).then(|| (args.clone(), kwargs.clone()));
                let out = models::call_lib(self, st, &path, args, kwargs, span);
                if let Some((args, kwargs)) = kept {
                    self.emit_api_call(&path, None, &args, &kwargs, &out, span);
                }
                out
            }
            Value::LibMethod(recv, name) => {
                let tensor_method = matches!(*recv, Value::Tensor(_));
                let backward = tensor_method && &*name == "backward" && self.wants(EventKind::Backward);
                let kept = (tensor_method && self.wants(EventKind::ApiCall)).then(|| ((*recv).clone(), args.clone(), kwargs.clone()));
                let receiver = backward.then(|| (*recv).clone());
                let out = models::call_method(self, st, *recv, &name, args, kwargs, span);
                if let Some((recv, args, kwargs)) = kept {
                    self.emit_api_call(&format!("torch.Tensor.{name}"), Some(&recv), &args, &kwargs, &out, span);
                }
                if let Some(tensor) = receiver {
                    for (st, _) in &out {
                        self.emit(&Event::Backward { tensor: &tensor, span }, st, span);
                    }
                }
                out
            }
            Value::Builtin(name) => models::builtins::call_builtin(self, st, name, args, kwargs, span),
            _ => vec![(st, Value::Unknown)],
        }
    }

    /// A call of a user function from user code: its body, and for a function whose
    /// jaxtyping annotations a runtime checker checks (`annotations::runtime_checked`), the
    /// checker's verdict at this call on the tensor arguments and on each returned tensor
    /// (SHP113; a contradiction raises, so the path ends).
    fn call_user(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if !crate::engine::annotations::runtime_checked(&c.def) {
            return self.call_closure(c, args, kwargs, st, span);
        }
        let def = c.def.clone();
        let func = def.name.to_string();
        let mut bound = BTreeMap::new();
        let mut given: Vec<(&Param, &Value)> = def.params.iter().zip(args.iter()).collect();
        for (k, v) in &kwargs {
            if let Some(p) = def.params.iter().chain(def.kwonly.iter()).find(|p| p.name == *k) {
                given.push((p, v));
            }
        }
        for (p, v) in given {
            let Some(ann) = &p.annotation else { continue };
            if let Some((spec, why)) = crate::engine::annotations::contradiction(self, &st, ann, v, &mut bound) {
                self.annotation_violation(&st, span, &func, &format!("argument {}", p.name), v, spec, why);
                return Vec::new();
            }
        }
        let out = self.call_closure(c, args, kwargs, st, span);
        let Some(ret) = &def.returns else { return out };
        let mut kept = Vec::with_capacity(out.len());
        for (st, v) in out {
            let mut bound = bound.clone();
            match crate::engine::annotations::contradiction(self, &st, ret, &v, &mut bound) {
                Some((spec, why)) => self.annotation_violation(&st, span, &func, "return value", &v, spec, why),
                None => kept.push((st, v)),
            }
        }
        kept
    }

    #[allow(clippy::too_many_arguments)]
    fn annotation_violation(&mut self, st: &State, span: Span, func: &str, what: &str, v: &Value, spec: String, why: String) {
        let (func, what) = (func.to_string(), what.to_string());
        crate::models::ctx::ModelCtxExt::check(self, st, span, crate::shape::Tri::True, |cx| {
            // (shown while the message renders: its dims' origins end it)
            let shape = match v {
                Value::Tensor(t) => cx.show_shape(st, &st.resolve(&t.shape)),
                _ => String::new(),
            };
            (crate::rules::shape::AnnotationShapeMismatch::Mismatch { func, what, shape, spec, why }, Vec::new())
        });
    }

    fn instantiate(&mut self, class: ObjId, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        let mut st = st;
        if self.has_unknown_base(&st, class) {
            // a base class we cannot see: an object we know nothing about
            return vec![(st, Value::Unknown)];
        }
        let layer = self.layer_base(&st, class);
        if let Some(base) = self.lib_base(&st, class) {
            if !models::is_subclassable(&base) && layer.is_none() {
                return vec![(st, Value::Unknown)];
            }
        }
        if let Some(kind) = layer {
            return self.instantiate_layer(class, kind, args, kwargs, st, span);
        }
        if let Some((_, Value::Func(init))) = self.class_lookup(&st, class, "__init__") {
            return self.construct(class, &init, args, kwargs, st, span);
        }
        let obj = st.alloc(Obj::Instance { class, attrs: BTreeMap::new() });
        let me = Value::Ref(obj);
        let is_dataclass = self.class_lookup(&st, class, "__dataclass__").is_some();
        match self.class_lookup(&st, class, "__init__") {
            Some(_) => vec![(st, Value::Unknown)],
            None if is_dataclass => {
                let fields = self.dataclass_fields(&st, class);
                let mut attrs = BTreeMap::new();
                let mut pos = args.into_iter();
                for (name, default) in fields {
                    let given = pos.next().or_else(|| kwargs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()));
                    let v = match (given, default) {
                        (Some(v), _) => v,
                        // `field(default=...)` / `field(default_factory=...)`
                        (None, Some(d @ Value::Ref(_))) => match self.field_default(&mut st, &d, span) {
                            Some(v) => v,
                            None => d,
                        },
                        (None, Some(d)) => d,
                        (None, None) => Value::Unknown,
                    };
                    attrs.insert(name, v);
                }
                if let Obj::Instance { attrs: a, .. } = st.get_mut(obj) {
                    *a = attrs;
                }
                vec![(st, me)]
            }
            None => vec![(st, me)],
        }
    }

    /// A new instance of `class` built by its `__init__`. Building an instance writes only
    /// the new object: the whole construction is summarised (100 equal blocks are built once),
    /// keyed by `__init__` with the arguments and a marker no Python call can pass (a keyword
    /// that is no identifier).
    fn construct(&mut self, class: ObjId, init: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        let mut kwargs = kwargs;
        if self.constructing == 0 {
            kwargs.extend(self.free_defaults(&st, class, init, args.len(), &kwargs));
        }
        let init2 = init.clone();
        let build = move |me: &mut Self, mut st: State, args: &[Value], kwargs: &[(Name, Value)]| -> Vals {
            let obj = st.alloc(Obj::Instance { class, attrs: BTreeMap::new() });
            let this = Value::Ref(obj);
            let mut a = Vec::with_capacity(args.len() + 1);
            a.push(this.clone());
            a.extend(args.iter().cloned());
            me.constructing += 1;
            let out = me.call_closure(&init2, a, kwargs.to_vec(), st, span).into_iter().map(|(s, _)| (s, this.clone())).collect();
            me.constructing -= 1;
            out
        };
        if !(self.settings.memo && init.kind == FuncKind::Plain) {
            return build(self, st, &args, &kwargs);
        }
        // the key: the arguments and the marker, which the construction leaves out
        let mut kw = kwargs;
        kw.push((new_marker(), Value::Ref(class)));
        self.memoised(init, args, kw, st, span, move |me, st, args, kwargs| build(me, st, args, &kwargs[..kwargs.len().saturating_sub(1)]))
    }

    /// The SHP902 run (`Settings::free_params`): the parameters of a module class of the
    /// checked file that its outermost construction (`Net()`, not a block another class
    /// builds) leaves at an int default of at least 1 are free parameters (`size=32`), given as
    /// keywords: a fresh symbol per name tagged `ParamKind::Ctor` with the default, or the value
    /// of the concrete run of a counterexample (`Settings::param_values`). An argument the call
    /// passes pins its parameter.
    fn free_defaults(&mut self, st: &State, class: ObjId, init: &Rc<Closure>, n_args: usize, kwargs: &[(Name, Value)]) -> Vec<(Name, Value)> {
        if !self.settings.free_params && self.settings.param_values.is_empty() {
            return Vec::new();
        }
        let mine = matches!(st.get(class), Obj::Class { def: Some(d), .. } if d.span.file == crate::ir::FileId::MAIN);
        if !mine || self.lib_base(st, class).as_deref() != Some("torch.nn.Module") {
            return Vec::new();
        }
        let def = &init.def;
        let first_default = def.params.len() - init.defaults.len();
        // (`params[0]` is `self`: parameter i is filled by position when i <= n_args)
        let positional = def.params.iter().enumerate().filter(|(i, _)| *i >= first_default.max(1) && *i > n_args).map(|(i, p)| (p, Some(init.defaults[i - first_default].clone())));
        let kwonly = def.kwonly.iter().zip(init.kw_defaults.iter().cloned());
        let mut out = Vec::new();
        for (p, d) in positional.chain(kwonly) {
            let Some(Value::Int(d)) = d else { continue };
            let Some(default) = d.as_const().filter(|d| *d >= 1) else { continue };
            if kwargs.iter().any(|(k, _)| *k == p.name) {
                continue;
            }
            let v = match self.settings.param_value(&p.name) {
                Some(v) => Value::int(v.max(1)),
                None if self.settings.free_params => {
                    let name = p.name.to_string();
                    let sym = match self.ctor_syms.get(&name) {
                        Some(s) => s.clone(),
                        None => {
                            let s = self.syms.fresh_int(&name, 1);
                            self.syms.set_param(&s, crate::shape::Param { name: name.clone(), kind: crate::shape::ParamKind::Ctor, default: Some(default) });
                            self.ctor_syms.insert(name, s.clone());
                            s
                        }
                    };
                    Value::Int(sym)
                }
                None => continue,
            };
            out.push((p.name.clone(), v));
        }
        out
    }

    /// An instance of a user subclass of the library layer `kind` (`class MyLinear(nn.Linear)`):
    /// its `__init__` builds the layer through `super().__init__(...)`
    /// (`models::call_method`); without an `__init__`, the class's arguments build it. The
    /// layer is kept under the instance's hidden `attr::LAYER` and labelled by the statement
    /// that builds the instance (`self.proj = MyLinear(..)`: "proj (line 12)"), not by the
    /// `super().__init__(...)` inside.
    fn instantiate_layer(&mut self, class: ObjId, kind: &'static str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        let label = self.label().map(|n| Rc::from(format!("{n} ({})", self.place(span))));
        let built = match self.class_lookup(&st, class, "__init__") {
            Some((_, Value::Func(init))) => self.construct(class, &init, args, kwargs, st, span),
            Some(_) => return vec![(st, Value::Unknown)],
            None => {
                // `class L(nn.Linear): pass` then `L(3, 4)`: the layer's own construction
                let mut st = st;
                let obj = st.alloc(Obj::Instance { class, attrs: BTreeMap::new() });
                let path = format!("torch.nn.{kind}");
                let mut out = Vec::new();
                for (mut st, layer) in models::call_lib(self, st, &path, args, kwargs, span) {
                    if let Obj::Instance { attrs, .. } = st.get_mut(obj) {
                        attrs.insert(Name::from(super::attr::LAYER), layer);
                    }
                    out.push((st, Value::Ref(obj)));
                }
                out
            }
        };
        built
            .into_iter()
            .map(|(mut st, inst)| {
                if let Value::Ref(obj) = &inst
                    && let Obj::Instance { attrs, .. } = st.get(*obj)
                    && let Some(Value::Ref(lid)) = attrs.get(super::attr::LAYER)
                    && matches!(st.get(*lid), Obj::Layer(_))
                {
                    let lid = *lid;
                    if let Obj::Layer(l) = st.get_mut(lid) {
                        l.label = label.clone();
                    }
                }
                (st, inst)
            })
            .collect()
    }

    /// The default a `dataclasses.field(...)` gives, calling its factory (`None`: not a field).
    fn field_default(&mut self, st: &mut State, f: &Value, span: Span) -> Option<Value> {
        let Value::Ref(id) = f else { return None };
        let Obj::Namespace { kind, attrs } = st.get(*id).clone() else { return None };
        if &*kind != "Field" {
            return None;
        }
        if let Some(d) = attrs.get("default") {
            return Some(d.clone());
        }
        let factory = attrs.get("default_factory")?.clone();
        let results = self.call(factory, Vec::new(), Vec::new(), st.clone(), span);
        match <[_; 1]>::try_from(results) {
            Ok([(s, v)]) => {
                *st = s;
                Some(v)
            }
            Err(_) => Some(Value::Unknown),
        }
    }

    fn dataclass_fields(&self, st: &State, class: ObjId) -> Vec<(Name, Option<Value>)> {
        let Obj::Class { def: Some(def), attrs, .. } = st.get(class) else { return Vec::new() };
        let mut out = Vec::new();
        for s in &def.body {
            if let StmtKind::AnnAssign { target: Target::Name(n, _), value, .. } = &s.kind {
                let default = if value.is_some() {
                    match attrs.get(n) {
                        // `field(default_factory=...)` etc. is not modelled
                        Some(Value::Unknown) | None => Some(Value::Unknown),
                        Some(v) => Some(v.clone()),
                    }
                } else {
                    None
                };
                out.push((n.clone(), default));
            }
        }
        out
    }

    pub fn call_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if c.def.is_generator {
            // calling a generator function runs nothing yet
            return vec![(st, Value::Gen(c.clone(), Rc::new(args), Rc::new(kwargs)))];
        }
        // `@torch.no_grad()` and its kin: the body runs in that grad mode (`autograd.rs`)
        if let Some((enabled, at)) = torch::mode::grad_decorator(&c.def) {
            let mut st = st;
            let before = st.grad_mode;
            st.grad_mode = crate::models::torch::autograd::mode(enabled, at);
            let mut out = self.run_closure(c, args, kwargs, st, span, false);
            for (st, _) in out.iter_mut() {
                st.grad_mode = before;
            }
            return out;
        }
        self.run_closure(c, args, kwargs, st, span, false)
    }

    /// Whether a call of `c` is too deep or too recursive to run (counted as a cut): the caller
    /// gives up on its result and keeps the path.
    fn cut_deep(&mut self, c: &Closure) -> bool {
        let cut = self.call_depth >= MAX_CALL_DEPTH || self.stack.iter().filter(|d| **d == c.def.id).count() >= 3;
        self.cuts += u64::from(cut);
        cut
    }

    /// A dataset's `__getitem__(ds, idx)` called by a loader for one sample, with an index of
    /// its own (`idx`, a fresh symbol made inside the call). The call is summarised on the
    /// dataset alone: the loader fetches a sample on every `next()`, and a replay makes fresh
    /// symbols for the index and for every size the call made, as a run would, so that two
    /// samples of one path never share a size they need not share.
    pub fn call_sample(&mut self, c: &Rc<Closure>, ds: Value, st: State, span: Span) -> Vals {
        if self.cut_deep(c) {
            return vec![(st, Value::Unknown)];
        }
        let run = move |me: &mut Self, st: State, args: &[Value], _: &[(Name, Value)]| {
            let idx = Value::Int(me.syms.fresh("idx", 0));
            me.run_closure_body(c, vec![args[0].clone(), idx], Vec::new(), st, span, false)
        };
        if !self.settings.memo {
            return run(self, st, &[ds], &[]);
        }
        // (the key: the dataset and a marker no call of `__getitem__` in the program passes, so
        // that its summaries are never taken for a call with an index the program gave)
        self.memoised(c, vec![ds, Value::Str(Some(SAMPLE_KEY.into()))], Vec::new(), st, span, run)
    }

    /// The first element of a generator, when every path that yields agrees on it.
    pub fn first_yield(&mut self, st: &mut State, g: &Value, span: Span) -> Option<Value> {
        let Value::Gen(c, args, kwargs) = g else { return None };
        let results = self.run_closure(c, args.as_ref().clone(), kwargs.as_ref().clone(), st.clone(), span, true);
        let mut merged = results.into_iter();
        let (s, v) = merged.next()?;
        if merged.next().is_some() {
            return Some(Value::Unknown);
        }
        *st = s;
        Some(v)
    }

    fn run_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span, first_yield: bool) -> Vals {
        if self.cut_deep(c) {
            return vec![(st, Value::Unknown)];
        }
        if !self.settings.memo || first_yield {
            return self.run_closure_body(c, args, kwargs, st, span, first_yield);
        }
        // the arguments are the summary's key: a run takes copies (a replay none)
        self.memoised(c, args, kwargs, st, span, move |me, st, args, kwargs| me.run_closure_body(c, args.to_vec(), kwargs.to_vec(), st, span, false))
    }

    /// Bind the arguments and run the body of a user function.
    fn run_closure_body(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span, first_yield: bool) -> Vals {
        let def = c.def.clone();
        let mut st = st;
        let before = st.heap.clone();
        let scope = st.alloc(Obj::Scope { vars: Vars::new(), parent: Some(c.scope) });
        // bind parameters
        let mut vars = Vars::new();
        let n_params = def.params.len();
        let n_defaults = c.defaults.len();
        let mut extra = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            if i < n_params {
                vars.insert(def.params[i].name.clone(), a);
            } else {
                extra.push(a);
            }
        }
        let mut extra_kw = Vec::new();
        let mut type_error = !extra.is_empty() && def.vararg.is_none();
        for (k, v) in kwargs {
            if let Some(p) = def.params[def.posonly.min(n_params)..].iter().find(|p| p.name == k) {
                // a keyword for a parameter a positional argument filled: a TypeError
                type_error |= vars.contains_key(&p.name);
                vars.insert(p.name.clone(), v);
            } else if def.kwonly.iter().any(|p| p.name == k) {
                vars.insert(k.clone(), v);
            } else {
                extra_kw.push((k, v));
            }
        }
        type_error |= !extra_kw.is_empty() && def.kwarg.is_none();
        if type_error {
            // Python raises a TypeError before the body runs (too many positional arguments, an
            // unexpected keyword, or one given twice): nothing the body would do happens
            return vec![(st, Value::Unknown)];
        }
        for (i, p) in def.params.iter().enumerate() {
            if !vars.contains_key(&p.name) {
                let first_default = n_params - n_defaults;
                if i >= first_default {
                    vars.insert(p.name.clone(), c.defaults[i - first_default].clone());
                } else {
                    // missing argument: a TypeError in Python; be silent
                    vars.insert(p.name.clone(), Value::Unknown);
                }
            }
        }
        for (p, d) in def.kwonly.iter().zip(c.kw_defaults.iter()) {
            if !vars.contains_key(&p.name) {
                vars.insert(p.name.clone(), d.clone().unwrap_or(Value::Unknown));
            }
        }
        if let Some(va) = &def.vararg {
            vars.insert(va.clone(), Value::Tuple(Rc::new(extra)));
        }
        if let Some(kw) = &def.kwarg {
            let items = extra_kw.into_iter().map(|(k, v)| (Value::Str(Some(k)), v)).collect();
            let id = st.alloc(Obj::Dict(items));
            vars.insert(kw.clone(), Value::Ref(id));
        }
        let self_val = def.params.first().and_then(|p| vars.get(&p.name).cloned());
        // (what an evaluation pass could store a graph into: its arguments, and the names of
        // the scopes around it, the module's globals among them; gathered only if its check
        // gets that far, `arg_values`)
        let entry_vars = (!first_yield && crate::models::torch::device::follows_autograd()).then(|| vars.clone());
        let handed: Vec<Rc<Tensor>> = vars.values().filter_map(|v| if let Value::Tensor(t) = v { Some(t.clone()) } else { None }).collect();
        if let Obj::Scope { vars: v, .. } = st.get_mut(scope) {
            *v = vars;
        }
        let mut globals = Vec::new();
        collect_globals(&def.body, &mut globals);
        let module_scope = self.module_scope_of(&st, c.scope);
        let ctx = Ctx {
            scope,
            module_scope,
            class_body: None,
            method_class: c.class,
            self_val,
            globals: Rc::new(globals),
        };
        self.call_depth += 1;
        self.stack.push(def.id);
        let outer_calls = self.calls.clone();
        self.calls = outer_calls.iter().copied().chain([span]).collect();
        self.arg_tensors.push(handed);
        self.gen_frames.push(first_yield);
        let framed = !first_yield && crate::models::torch::device::follows_autograd();
        if framed {
            // (a function defined in the body of a module class: `c.class`)
            let module_method = c.class.is_some_and(|class| models::is_module_class(self, &st, class));
            let in_model = module_method || matches!(&*def.name, "forward" | "__call__") || self.eval_frames.last().is_some_and(|f| f.in_model);
            self.eval_frames.push(EvalFrame { def: def.span, flagged: self.flagged, in_model, ..Default::default() });
        }
        let paths = self.block(&def.body, st, &ctx);
        let mut frame = if framed { self.eval_frames.pop() } else { None };
        if let Some(fr) = frame.as_mut() {
            // (a violation recorded while it ran may have ended the paths that used the graph)
            fr.graph_used |= fr.flagged != self.flagged;
        }
        if let Some(fr) = &frame {
            if fr.graph_used {
                self.graph_defs.insert(def.id);
            }
            if fr.set_train {
                self.train_defs.insert(def.id);
            }
            if fr.lost {
                self.lost_defs.insert(def.id);
            }
        }
        self.gen_frames.pop();
        self.arg_tensors.pop();
        self.calls = outer_calls;
        self.stack.pop();
        self.call_depth -= 1;
        let mut out: Vals = Vec::new();
        for (st, flow) in paths {
            let v = match (first_yield, flow) {
                (true, Flow::Yield(v)) => v,
                // a generator path that ends without yielding has no first element
                (true, _) => continue,
                (false, Flow::Return(v)) => v,
                (false, _) => Value::None,
            };
            if let Some(fr) = &frame {
                let (heap0, vars0, scope0) = (&before, entry_vars.as_ref(), c.scope);
                self.check_eval_pass(fr, &def.name, &st, &v, &|| arg_values(heap0, vars0, scope0));
            }
            if !first_yield && self.wants(EventKind::FunctionExit) {
                self.emit(&Event::FunctionExit { function: &def.name, returned: &v, span: def.span }, &st, def.span);
            }
            let mut st = st;
            if self.settings.prune {
                // the frame and the temporaries only it saw are dead: paths that differ only
                // in them merge
                st.collect_dead(&before, &v);
            }
            out.push((st, v));
        }
        merge_vals(out, self.settings.prune)
    }
}

/// The keyword that marks the key of a whole construction's summary (`construct`): no
/// identifier, so no Python call passes it.
fn new_marker() -> Name {
    thread_local! {
        static NEW: Name = Name::from("<new>");
    }
    NEW.with(|n| n.clone())
}

/// A library call that writes into one of its tensors: an in-place method or function
/// (`x.add_(1)`, `torch.relu_(x)`, `nn.init.zeros_(w)`), or one given `out=` or `inplace=True`.
fn writes_in_place(f: &Value, kwargs: &[(Name, Value)]) -> bool {
    let name: &str = match f {
        Value::Lib(path) => path.rsplit('.').next().unwrap_or(path),
        Value::LibMethod(_, name) => name,
        _ => "",
    };
    let in_place_name = name.ends_with('_') && !name.ends_with("__") && name != "requires_grad_";
    in_place_name
        || kwargs.iter().any(|(k, v)| match &**k {
            "out" => !matches!(v, Value::None),
            "inplace" => !matches!(v, Value::Bool(false) | Value::None),
            _ => false,
        })
}

/// What a called object is, read as far as the call depends on it: an instance only by its
/// class link (call summaries and loop skips then need no more of it), other objects whole.
enum Callee {
    Class,
    Instance(ObjId),
    Module,
    Other,
}

impl Callee {
    fn of(st: &State, id: ObjId) -> Callee {
        // the empty name is no attribute: this reads only the class link
        if let Obj::Instance { class, .. } = st.get_named(id, &crate::value::reads::link_name()) {
            return Callee::Instance(*class);
        }
        match st.get(id) {
            Obj::Class { .. } => Callee::Class,
            Obj::Layer(_) | Obj::Container { .. } => Callee::Module,
            _ => Callee::Other,
        }
    }
}

/// A user function running, for the evaluation passes (SHP306, SHP307): the model calls its own
/// body makes, and whether anything that needs a graph, or switches a module to training,
/// runs while it runs (in it or in a function it calls). An evaluation pass is a function in
/// which nothing needs a graph, that returns no tensor (metrics: Python numbers), is no part
/// of a model's run (`in_model`), and stores no tensor with a graph into its arguments: a model call in its body that builds a graph
/// every time is SHP306; one that runs dropout or batch norm in training mode every time, in
/// a function that switches no module to training and returns a value (not None), is SHP307.
#[derive(Debug, Default)]
pub struct EvalFrame {
    /// The function's definition (the model calls of its own body are within it).
    pub def: Span,
    /// A `backward()`, a `torch.autograd` call, or a call the core does not follow that is
    /// handed a tensor with a graph ran.
    pub graph_used: bool,
    /// A `.train()` ran (a helper that recalibrates batch norm on purpose).
    pub set_train: bool,
    /// A torch op on a tensor with a graph has a result the core does not follow (it may
    /// carry the graph): a value not known may be such a tensor.
    pub lost: bool,
    /// `Interp::flagged` when it started: a violation recorded while it runs (an error that
    /// ends the paths through a loss, say) leaves it unjudged.
    pub flagged: u64,
    /// The site of the model call being probed (the calls inside it at the same site are not).
    pub active: Option<Span>,
    /// Part of a model's run: a `forward`, a method of a module (a helper its forward calls:
    /// DenseNet's `bn_function`, a window attention's `_shifted_window_attn`), or a function
    /// one of them called. Never an evaluation pass (its result may be a tensor the core lost).
    pub in_model: bool,
    pub sites: Vec<EvalSite>,
    /// A generalised loop run in it forgot names that held a tensor with a graph at the end of
    /// its iteration (`loops::generalised_iteration`): the code after it may read that graph.
    pub forgot: Vec<Name>,
    /// ... or forgot an object that came to hold one.
    pub forgot_obj: bool,
}

#[derive(Debug)]
pub struct EvalSite {
    pub span: Span,
    /// Every run of the call had gradients on and returned a tensor with a graph.
    pub grad: bool,
    /// A dropout or batch norm certainly in training mode at every run of the call.
    pub training: Option<String>,
    /// The module had trained (and no `.train()` ran since) at every run of the call.
    pub trained: bool,
}

/// What a library call may do with the graph of a tensor it is handed.
enum Graph {
    /// runs it (a backward, `torch.autograd`)
    Used,
    /// runs it when its result is not modelled (a call the core does not follow)
    IfUnknown,
    /// a torch op on a tensor with a graph: a result not modelled may carry it
    Lost,
    No,
}

fn uses_graph(f: &Value, st: &State, args: &[Value], kwargs: &[(Name, Value)]) -> Graph {
    let tracked = |t: &Tensor| matches!(t.grad, Grad::Tracked);
    let handed = || args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| torch::mode::holds(st, v, &tracked));
    match f {
        Value::Lib(path) if path.starts_with("torch.autograd") || path.starts_with("torch.func") || path.ends_with("backward") => Graph::Used,
        Value::LibMethod(_, name) if name.contains("backward") || matches!(&**name, "register_hook" | "retain_grad" | "grad") => Graph::Used,
        // torch's functions, tensor methods, module calls and builtins record or read values
        Value::Lib(path) if path.starts_with("torch.") => if handed() { Graph::Lost } else { Graph::No },
        Value::LibMethod(recv, _) if matches!(**recv, Value::Tensor(_)) => if handed() || torch::mode::holds(st, recv, &tracked) { Graph::Lost } else { Graph::No },
        Value::Ref(_) | Value::Builtin(_) => if handed() { Graph::Lost } else { Graph::No },
        // a library call the core does not follow (a metrics object, `accelerator.backward`)
        // may run the graph of a tensor it is handed
        _ => if handed() { Graph::IfUnknown } else { Graph::No },
    }
}

impl<'a> Interp<'a> {
    fn record_eval_site(&mut self, span: Span, (grad_on, training, trained): (bool, Option<String>, bool), out: &Vals) {
        let tracked = |t: &Tensor| matches!(t.grad, Grad::Tracked);
        let grad = grad_on && !out.is_empty() && out.iter().all(|(st, v)| torch::mode::holds(st, v, &tracked));
        let Some(fr) = self.eval_frames.last_mut() else { return };
        match fr.sites.iter_mut().find(|s| s.span == span) {
            Some(s) => {
                s.grad &= grad;
                s.trained &= trained;
                if training.is_none() {
                    s.training = None;
                }
            }
            None => fr.sites.push(EvalSite { span, grad, training, trained }),
        }
    }

    /// At the return of a function on one path: its model calls, if it is an evaluation pass.
    fn check_eval_pass(&mut self, fr: &EvalFrame, function: &str, st: &State, returned: &Value, args: &dyn Fn() -> Vec<Value>) {
        if debug_enabled() {
            eprintln!("[shape-lint debug] eval pass {function}: {fr:?} returned {returned:?}");
        }
        // (a graph the core lost track of may be kept anywhere)
        if fr.graph_used || fr.lost || fr.sites.is_empty() {
            return;
        }
        // its results are metrics: it returns no tensor (a module's forward returns its
        // outputs), and stores none with a graph where its caller can reach it
        let returns_tensor = torch::mode::holds(st, returned, &|_| true);
        if fr.in_model || returns_tensor || args().iter().any(|a| torch::mode::holds(st, a, &|t: &Tensor| matches!(t.grad, Grad::Tracked))) {
            return;
        }
        use crate::rules::violation::Violation;
        for s in &fr.sites {
            if s.grad {
                let v = crate::rules::training::eval_with_grad::EvalWithGrad::Call { function: function.to_string() };
                self.warn(st, s.span, &crate::rules::training::eval_with_grad::RULE, v.message());
            }
        }
        if fr.set_train || matches!(returned, Value::None) {
            return;
        }
        for s in &fr.sites {
            if let Some(layer) = &s.training {
                let v = crate::rules::training::train_eval_mode::TrainEvalMode::EvalInTraining { function: function.to_string(), layer: layer.clone() };
                self.warn(st, s.span, &crate::rules::training::train_eval_mode::RULE, v.message());
            }
        }
    }
}

/// What an evaluation pass could store a graph into (`check_eval_pass`): the values of its
/// parameters `vars` and of the scopes around it from `scope` (at most about 4096), as they
/// were when it was called (`heap`). The scopes are read (for call summaries) only here, when
/// the check needs them: every call of a file that trains read the module's whole scope
/// before.
fn arg_values(heap: &Heap, vars: Option<&Vars>, scope: ObjId) -> Vec<Value> {
    let Some(vars) = vars else { return Vec::new() };
    let mut out: Vec<Value> = vars.values().cloned().collect();
    let mut scope = Some(scope);
    while let Some(id) = scope.filter(|_| out.len() < 4096) {
        crate::value::reads::note_read(id);
        scope = match heap.get(id).map(|o| &**o) {
            Some(Obj::Scope { vars, parent }) => {
                out.extend(vars.values().cloned());
                *parent
            }
            _ => None,
        };
    }
    out
}
