//! Library models: what torch (and a few stdlib modules) do to shapes, and the preconditions
//! torch enforces. Grouped like torch itself: `tensor` (creation, shape ops, elementwise,
//! matrix products, indexing), `layers` (nn modules and their functional twins).
//! An API that is not modelled returns `Unknown`: never a report.

pub mod attention;
pub mod data;
pub mod layers;
pub mod losses;
pub mod pointwise;
pub mod shape_ops;
pub mod recurrent;
pub mod resample;
pub mod tensor;
pub mod zoo;

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::engine::interp::{Ctx, Interp, Pending, Vals, Verdict, Violation};
use crate::engine::value::*;
use crate::ir::{BinOp, Name, Span};
use crate::rules::Rule;
use crate::shape::{Cond, Formula, Poly, Rel, Tri};

/// The value bound by `import a.b` / `from a import b` (as `a.b`).
pub fn import(dotted: &str) -> Value {
    let canon = match dotted {
        "torch.nn.functional" => "torch.nn.functional",
        d => d,
    };
    if canon == "torch" || canon.starts_with("torch.") || canon == "math" || canon.starts_with("math.") || canon == "torchvision" || canon.starts_with("torchvision.") || canon == "argparse" || canon.starts_with("argparse.") || canon == "collections" || canon == "collections.OrderedDict" || canon == "dataclasses" || canon.starts_with("dataclasses.") {
        Value::Lib(Rc::from(canon))
    } else {
        Value::Unknown
    }
}

/// `lib.name` for a library object.
pub fn lib_attr(path: &str, name: &str) -> Value {
    let full = format!("{path}.{name}");
    match full.as_str() {
        "math.pi" => Value::Float(Some(std::f64::consts::PI)),
        "math.e" => Value::Float(Some(std::f64::consts::E)),
        "math.inf" => Value::Float(None),
        "torch.float32" | "torch.float" => Value::Str(Some(Rc::from("<dtype:float>"))),
        "torch.float64" | "torch.double" => Value::Str(Some(Rc::from("<dtype:double>"))),
        "torch.long" | "torch.int64" => Value::Str(Some(Rc::from("<dtype:long>"))),
        "torch.int32" | "torch.int" => Value::Str(Some(Rc::from("<dtype:int>"))),
        "torch.bool" => Value::Str(Some(Rc::from("<dtype:bool>"))),
        "torch.float16" | "torch.half" => Value::Str(Some(Rc::from("<dtype:half>"))),
        "torch.bfloat16" => Value::Str(Some(Rc::from("<dtype:bfloat16>"))),
        _ => Value::Lib(Rc::from(canon_path(&full))),
    }
}

/// Normalise aliases: `torch.nn.modules.linear.Linear` → `torch.nn.Linear`, `torch.concat` → `torch.cat`.
fn canon_path(p: &str) -> String {
    if let Some(rest) = p.strip_prefix("torch.nn.modules.") {
        if let Some((_, name)) = rest.rsplit_once('.') {
            return format!("torch.nn.{name}");
        }
    }
    match p {
        "torch.concat" | "torch.concatenate" => "torch.cat".into(),
        "torch.nn.functional.F" => "torch.nn.functional".into(),
        _ => p.to_string(),
    }
}

/// Library base classes a user class may derive from and still be analysed.
pub fn is_subclassable(base: &str) -> bool {
    matches!(base, "torch.nn.Module" | "torch.utils.data.Dataset" | "torch.utils.data.dataset.Dataset")
}

/// One element of an iterable of unknown length.
pub fn element_of(interp: &mut Interp, st: &mut State, it: &Value) -> Value {
    match it {
        Value::LibMethod(inner, name) if &**name == "<repeat>" => (**inner).clone(),
        Value::Gen(..) => interp.first_yield(st, it, Span::default()).unwrap_or(Value::Unknown),
        Value::LibMethod(inner, name) if &**name == "<enumerate>" => {
            let elem = element_of(interp, st, inner);
            Value::Tuple(Rc::new(vec![Value::Unknown, elem]))
        }
        _ => data::batch_of(interp, st, it).unwrap_or(Value::Unknown),
    }
}

/// Unpack a value into `n` parts (`a, b = x.shape`, `h, c = state`), when known.
pub fn unpack(interp: &mut Interp, st: &mut State, v: &Value, n: usize) -> Option<Vec<Value>> {
    match v {
        // `B, T, C = x.shape` of an unknown-rank tensor: its first use fixes the rank
        Value::LibMethod(t, name) if &**name == "<shape>" => {
            let Value::Tensor(t) = &**t else { return None };
            let s = st.resolve(&t.shape);
            let var = s.prefix?;
            if s.dims.len() > n {
                return None;
            }
            let names = ["B", "T", "C", "D", "E", "F", "G", "H"];
            let mut dims = Vec::new();
            for k in 0..(n - s.dims.len()) {
                dims.push(interp.fresh_dim(names[k.min(7)]));
            }
            st.bind_shape(var, Shape::known(dims));
            let s = st.resolve(&t.shape);
            Some(s.dims.iter().map(|d| d.v.clone().map(Value::Int).unwrap_or(Value::Unknown)).collect())
        }
        Value::Tensor(t) => {
            // unpacking iterates dim 0
            let s = st.resolve(&t.shape);
            let d0 = s.dims.first()?;
            if s.prefix.is_some() || d0.as_const()? != n as i128 {
                return None;
            }
            let rest = Shape::known(s.dims[1..].to_vec());
            Some((0..n).map(|_| tensor::tensor_value(rest.clone(), t.dtype)).collect())
        }
        _ => None,
    }
}

/// Bind positional and keyword arguments to parameter names.
pub fn bind<'p>(params: &[&'p str], args: &[Value], kwargs: &[(Name, Value)]) -> BTreeMap<&'p str, Value> {
    let mut out = BTreeMap::new();
    for (p, a) in params.iter().zip(args.iter()) {
        out.insert(*p, a.clone());
    }
    for (k, v) in kwargs {
        if let Some(p) = params.iter().find(|p| **p == &**k) {
            out.insert(*p, v.clone());
        }
    }
    out
}

impl<'a> Interp<'a> {
    /// Decide `a == b` for two dimensions.
    pub fn dim_eq(&self, st: &State, a: &Dim, b: &Dim) -> Tri {
        match (&a.v, &b.v) {
            (Some(x), Some(y)) => st.facts.compare(&self.syms, x, Rel::Eq, y),
            _ => Tri::Unknown,
        }
    }

    pub fn poly_cmp(&self, st: &State, a: &Poly, rel: Rel, b: &Poly) -> Tri {
        st.facts.compare(&self.syms, a, rel, b)
    }

    /// The formula `a == b` for two dimensions (opaque when either is unknown).
    pub fn dim_eq_f(&self, a: &Dim, b: &Dim) -> Formula {
        Formula::eq_opt(a.v.as_ref(), b.v.as_ref())
    }

    /// Record a precondition check. `violated` is whether torch raises: a decided `Tri`, or a
    /// `Formula` the facts decide. Returns false when the path ends here (torch raises).
    ///
    /// An undecided, expressible violation on a path where it would be reported (untainted,
    /// not inside a `try` with handlers) is exported with its SMT-LIB query when
    /// `Settings::export_undecided` is on.
    pub fn check(&mut self, st: &State, site: Span, violated: impl Into<Formula>, rule: &'static Rule, msg: impl FnOnce(&Interp) -> (String, Vec<String>)) -> bool {
        let violated = violated.into();
        match violated.decide(&st.facts, &self.syms) {
            Tri::False => {
                self.record(st, site, Verdict::Holds);
                true
            }
            Tri::Unknown => {
                self.record(st, site, Verdict::Undecided);
                if self.settings.export_undecided {
                    if !st.tainted && st.in_try == 0 && !(zoo::is_embedded(site) && self.user_site.is_none()) {
                        let path: Vec<&Cond> = st.branches.iter().filter_map(|b| if let Branch::Sym(c) = b { Some(c) } else { None }).collect();
                        let assumed = st.assumed.borrow();
                        if let Some(query) = crate::shape::smt::query(&self.syms, &st.facts, &path, &assumed, &violated) {
                            drop(assumed);
                            let (message, trace) = msg(self);
                            let condition = self.path_condition(st);
                            // inside the zoo: at the innermost user call, like the outcome
                            let site = self.user_span(site);
                            self.undecided.push(Pending { site, rule, message, trace, condition, query });
                        }
                    }
                    // the path goes on with the executions where the precondition held
                    if violated.expressible() {
                        Rc::make_mut(&mut st.assumed.borrow_mut()).push(violated.not());
                    }
                }
                true
            }
            Tri::True => {
                let (message, trace) = msg(self);
                self.record(st, site, Verdict::Violated(Violation { rule, message, trace }));
                false
            }
        }
    }

    /// Record an opt-in diagnostic (SHP9xx) at `site` without ending the path: the line runs,
    /// but is almost certainly wrong.
    pub fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        self.record(st, site, Verdict::Violated(Violation { rule, message, trace: Vec::new() }));
    }

    /// Check that a layer's input dim `got` is the size `want` the layer expects. `message`
    /// gets the input shape, `got` and `want` as text; the trace says where `got` came from,
    /// then `extra` lines. Returns false when the path ends here (torch raises).
    #[allow(clippy::too_many_arguments)]
    pub fn expect_dim(
        &mut self,
        st: &State,
        site: Span,
        rule: &'static Rule,
        input: &Shape,
        got: &Dim,
        want: &Poly,
        extra: Vec<String>,
        message: impl FnOnce(&str, &str, &str) -> String,
    ) -> bool {
        let eq = self.dim_eq_f(got, &Dim::known(want.clone(), None));
        let shown = self.show_shape(st, input);
        let (gs, ws) = (self.show_dim_in(st, got), want.display(&self.syms));
        let mut trace = Vec::new();
        if let Some(w) = &got.why {
            trace.push(format!("{gs} came from {w}"));
        }
        trace.extend(extra);
        self.check(st, site, eq.not(), rule, |_| (message(&shown, &gs, &ws), trace))
    }

    pub fn show_dim(&self, d: &Dim) -> String {
        match &d.v {
            Some(p) => p.display(&self.syms),
            None => "?".into(),
        }
    }

    /// A dim in the path's terms (facts applied).
    pub fn show_dim_in(&self, st: &State, d: &Dim) -> String {
        match &d.v {
            Some(p) => st.facts.normalize(p).display(&self.syms),
            None => "?".into(),
        }
    }

    pub fn show_shape(&self, st: &State, s: &Shape) -> String {
        let s = st.resolve(s);
        let mut parts: Vec<String> = Vec::new();
        if s.prefix.is_some() {
            parts.push("*".into());
        }
        // dims in the path's terms: `batch` is `1` on the path where `batch == 1`
        parts.extend(s.dims.iter().map(|d| match &d.v {
            Some(p) => st.facts.normalize(p).display(&self.syms),
            None => "?".into(),
        }));
        format!("[{}]", parts.join(", "))
    }

    pub fn fresh_dim(&mut self, name: &str) -> Dim {
        Dim::known(self.syms.fresh(name, 1), None)
    }
}

/// Attributes of instances of user `nn.Module` subclasses that come from `nn.Module`.
pub fn module_attr(_interp: &mut Interp, st: State, o: Value, name: &Name) -> Vals {
    let v = match &**name {
        "training" => Value::Unknown,
        "forward" => match &o {
            Value::Ref(id) => match st.get(*id) {
                Obj::Layer(_) | Obj::Container { .. } => Value::LibMethod(Box::new(o.clone()), Rc::from("__call__")),
                _ => Value::Unknown,
            },
            _ => Value::Unknown,
        },
        _ => Value::LibMethod(Box::new(o.clone()), name.clone()),
    };
    vec![(st, v)]
}

/// Attributes of library layers: constructor arguments (`fc.in_features`), parameters.
pub fn layer_attr(interp: &mut Interp, st: State, o: Value, name: &Name) -> Vals {
    let Value::Ref(id) = &o else { return vec![(st, Value::Unknown)] };
    let Obj::Layer(l) = st.get(*id).clone() else { return vec![(st, Value::Unknown)] };
    if let Some(v) = l.args.get(&**name) {
        return vec![(st, v.clone())];
    }
    let v = match &**name {
        "weight" | "bias" => layers::parameter(interp, &st, &l, name).unwrap_or(Value::Unknown),
        "training" => Value::Unknown,
        _ => Value::LibMethod(Box::new(o.clone()), name.clone()),
    };
    vec![(st, v)]
}

/// Calling a module value (a library layer, a container, or a user module without forward).
pub fn call_module_value(interp: &mut Interp, st: State, m: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Value::Ref(id) = &m else { return vec![(st, Value::Unknown)] };
    match st.get(*id).clone() {
        Obj::Layer(l) => layers::call_layer(interp, st, &l, args, kwargs, span),
        Obj::Container { kind: ContainerKind::Sequential, items, .. } => {
            let mut live: Vals = vec![(st, args.into_iter().next().unwrap_or(Value::Unknown))];
            for (_, sub) in items {
                let mut next = Vec::new();
                for (st, x) in live {
                    next.extend(interp.call(sub.clone(), vec![x], Vec::new(), st, span));
                }
                live = next;
            }
            live
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// Call a library function or class by qualified name.
pub fn call_lib(interp: &mut Interp, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    if let Some(f) = path.strip_prefix("torch.utils.data.") {
        return data::utils_data(interp, st, f, args, kwargs, span);
    }
    if let Some(f) = path.strip_prefix("torchvision.models.") {
        return zoo::construct(interp, st, f, kwargs, span);
    }
    if let Some(f) = path.strip_prefix("torchvision.") {
        return data::torchvision(interp, st, f, args, kwargs, span);
    }
    if let Some(kind) = path.strip_prefix("torch.nn.") {
        if !kind.contains('.') {
            return layers::construct(interp, st, kind, args, kwargs, span);
        }
    }
    if let Some(f) = path.strip_prefix("torch.nn.functional.") {
        return layers::functional(interp, st, f, args, kwargs, span);
    }
    if path == "argparse.ArgumentParser" {
        let attrs = BTreeMap::from([(Rc::from("<defaults>"), Value::Tuple(Rc::new(Vec::new())))]);
        let mut st = st;
        let id = st.alloc(Obj::Namespace { kind: Rc::from("ArgParser"), attrs });
        return vec![(st, Value::Ref(id))];
    }
    if path.starts_with("argparse.") {
        return vec![(st, Value::Unknown)];
    }
    if path == "collections.OrderedDict" {
        // an ordered dict of known pairs, like `dict(...)`
        let mut st = st;
        let pairs = match args.first() {
            None => Some(Vec::new()),
            Some(a) => interp.iterate(&mut st, a, span).and_then(|items| {
                items
                    .into_iter()
                    .map(|p| match p {
                        Value::Tuple(t) if t.len() == 2 => Some((t[0].clone(), t[1].clone())),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
            }),
        };
        return match pairs {
            Some(mut pairs) if pairs.iter().all(|(k, _)| k.as_str().is_some() || k.as_const_int().is_some()) => {
                for (k, v) in kwargs {
                    pairs.push((Value::Str(Some(k)), v));
                }
                let id = st.alloc(Obj::Dict(pairs));
                vec![(st, Value::Ref(id))]
            }
            _ => vec![(st, Value::Unknown)],
        };
    }
    if path.starts_with("collections.") {
        return vec![(st, Value::Unknown)];
    }
    if path == "dataclasses.field" {
        let mut attrs = BTreeMap::new();
        for (k, v) in kwargs {
            if matches!(&*k, "default" | "default_factory") {
                attrs.insert(k, v);
            }
        }
        let mut st = st;
        let id = st.alloc(Obj::Namespace { kind: Rc::from("Field"), attrs });
        return vec![(st, Value::Ref(id))];
    }
    if path.starts_with("dataclasses.") {
        return vec![(st, Value::Unknown)];
    }
    if let Some(f) = path.strip_prefix("math.") {
        return vec![(st, math(f, &args))];
    }
    if let Some(f) = path.strip_prefix("torch.") {
        return tensor::torch_function(interp, st, f, args, kwargs, span);
    }
    vec![(st, Value::Unknown)]
}

fn math(f: &str, args: &[Value]) -> Value {
    let x = match args.first() {
        Some(Value::Float(Some(f))) => Some(*f),
        Some(v) => v.as_const_int().map(|c| c as f64),
        None => None,
    };
    match (f, x) {
        ("sqrt", Some(x)) if x >= 0.0 => Value::Float(Some(x.sqrt())),
        ("floor", Some(x)) if x.abs() < 1e30 => Value::int(x.floor() as i128),
        ("ceil", Some(x)) if x.abs() < 1e30 => Value::int(x.ceil() as i128),
        ("log", Some(x)) if x > 0.0 => Value::Float(Some(x.ln())),
        ("log2", Some(x)) if x > 0.0 => Value::Float(Some(x.log2())),
        ("exp", Some(x)) => Value::Float(Some(x.exp()).filter(|f| f.is_finite())),
        ("floor" | "ceil" | "gcd" | "prod" | "comb" | "factorial" | "isqrt", _) => Value::Unknown,
        _ => Value::Float(None),
    }
}

/// Methods on values: tensors, modules, lists, dicts, strings.
pub fn call_method(interp: &mut Interp, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    match &recv {
        Value::Tensor(_) => return tensor::tensor_method(interp, st, recv, name, args, kwargs, span),
        Value::Ref(id) => {
            let id = *id;
            match st.get(id).clone() {
                Obj::List(mut items) => {
                    let v = match name {
                        "append" => {
                            items.push(args.into_iter().next().unwrap_or(Value::Unknown));
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        "extend" => {
                            match args.first().and_then(|a| interp.iterate(&mut st, a, span)) {
                                Some(more) => items.extend(more),
                                None => {
                                    *st.get_mut(id) = Obj::List(vec![Value::Unknown]);
                                    return vec![(st, Value::None)];
                                }
                            }
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        "pop" => {
                            let v = items.pop().unwrap_or(Value::Unknown);
                            *st.get_mut(id) = Obj::List(items);
                            v
                        }
                        "insert" | "remove" | "clear" | "sort" | "reverse" => {
                            // not modelled precisely: the list's contents become unknown
                            let id2 = id;
                            *st.get_mut(id2) = Obj::List(Vec::new());
                            return vec![(st, Value::Unknown)];
                        }
                        _ => Value::Unknown,
                    };
                    return vec![(st, v)];
                }
                Obj::Dict(items) => {
                    let v = match name {
                        "get" => {
                            let k = args.first().cloned().unwrap_or(Value::Unknown);
                            if k.as_str().is_some() && !items.iter().any(|(kk, _)| kk.is_unknown()) {
                                items.iter().find(|(kk, _)| *kk == k).map(|(_, v)| v.clone()).unwrap_or_else(|| args.get(1).cloned().unwrap_or(Value::None))
                            } else {
                                Value::Unknown
                            }
                        }
                        "items" => {
                            if items.iter().any(|(k, _)| k.is_unknown()) {
                                Value::Unknown
                            } else {
                                Value::Tuple(Rc::new(items.iter().map(|(k, v)| Value::Tuple(Rc::new(vec![k.clone(), v.clone()]))).collect()))
                            }
                        }
                        "keys" => Value::Tuple(Rc::new(items.iter().map(|(k, _)| k.clone()).collect())),
                        "values" => Value::Tuple(Rc::new(items.iter().map(|(_, v)| v.clone()).collect())),
                        "update" | "setdefault" | "pop" => {
                            *st.get_mut(id) = Obj::Dict(vec![(Value::Unknown, Value::Unknown)]);
                            Value::Unknown
                        }
                        _ => Value::Unknown,
                    };
                    return vec![(st, v)];
                }
                Obj::Container { kind, mut items, attrs } => {
                    match name {
                        "append" | "add_module" => {
                            let v = if name == "append" { args.first() } else { args.get(1) };
                            let key = if name == "add_module" { args.first().and_then(|k| k.as_str()).map(Rc::from) } else { None };
                            items.push((key, v.cloned().unwrap_or(Value::Unknown)));
                            *st.get_mut(id) = Obj::Container { kind, items, attrs };
                            return vec![(st, Value::None)];
                        }
                        "extend" => {
                            if let Some(more) = args.first().and_then(|a| interp.iterate(&mut st, a, span)) {
                                items.extend(more.into_iter().map(|v| (None, v)));
                                *st.get_mut(id) = Obj::Container { kind, items, attrs };
                                return vec![(st, Value::None)];
                            }
                            return vec![(st, Value::Unknown)];
                        }
                        "__call__" => return call_module_value(interp, st, recv.clone(), args, kwargs, span),
                        _ => {}
                    }
                }
                Obj::Layer(_) if name == "__call__" => return call_module_value(interp, st, recv.clone(), args, kwargs, span),
                Obj::Namespace { kind, attrs } if &*kind == "ArgParser" => return argparse_method(st, id, attrs, name, args, kwargs),
                _ => {}
            }
            // nn.Module methods that set an attribute
            if matches!(name, "register_buffer" | "register_parameter" | "add_module" | "register_module") {
                if let (Some(Value::Str(Some(attr))), Some(v)) = (args.first(), args.get(1).or(kwargs.iter().find(|(k, _)| matches!(&**k, "tensor" | "param" | "module")).map(|(_, v)| v))) {
                    let attr: Name = attr.clone();
                    interp.set_attr(&mut st, &recv, &attr, v.clone());
                }
                return vec![(st, Value::None)];
            }
            // nn.Module methods that return the module itself
            if matches!(name, "to" | "cuda" | "cpu" | "train" | "eval" | "float" | "double" | "half" | "requires_grad_" | "apply") {
                return vec![(st, recv.clone())];
            }
            if name.ends_with(".__init__") || name == "__init__" {
                return vec![(st, Value::None)];
            }
            if name.ends_with(".forward") {
                return vec![(st, Value::Unknown)];
            }
            vec![(st, Value::Unknown)]
        }
        Value::Str(s) => {
            let v = match name {
                "format" | "join" | "upper" | "lower" | "strip" | "replace" => Value::Str(None),
                "startswith" | "endswith" => match (s, args.first().and_then(|a| a.as_str())) {
                    (Some(s), Some(p)) => Value::Bool(if name == "startswith" { s.starts_with(p) } else { s.ends_with(p) }),
                    _ => Value::Unknown,
                },
                _ => Value::Unknown,
            };
            vec![(st, v)]
        }
        // tuple methods (`index`, `count`) and the rest are not modelled
        _ => vec![(st, Value::Unknown)],
    }
}

/// Attribute of a tensor.
pub fn tensor_attr(interp: &mut Interp, st: State, o: Value, name: &Name, span: Span) -> Vals {
    tensor::tensor_attr(interp, st, o, name, span)
}

pub fn tensor_index(interp: &mut Interp, st: State, o: Value, i: Value, span: Span) -> Vals {
    tensor::index(interp, st, o, i, span)
}

pub fn tensor_binop(interp: &mut Interp, st: State, op: BinOp, a: Value, b: Value, span: Span, inplace: bool) -> Vals {
    tensor::binop(interp, st, op, a, b, span, inplace)
}

/// Entry point 2: analyse `forward` of a user `nn.Module` subclass.
pub fn analyze_forward(interp: &mut Interp, base: &State, class: ObjId, ctx: &Ctx) {
    let span = match base.get(class) {
        Obj::Class { def: Some(d), .. } => d.span,
        _ => Span::default(),
    };
    let Some((_, Value::Func(fwd))) = interp.class_lookup(base, class, "forward") else { return };
    // the instance: one built by the script, else a fresh one from defaults and symbols
    let existing = base.heap.iter().enumerate().find_map(|(i, o)| match &**o {
        Obj::Instance { class: c, .. } if *c == class => Some(i),
        _ => None,
    });
    let instances: Vals = match existing {
        Some(i) => vec![(base.clone(), Value::Ref(i))],
        None => {
            let mut args = Vec::new();
            if let Some((_, Value::Func(init))) = interp.class_lookup(base, class, "__init__") {
                let n_required = init.def.params.len().saturating_sub(init.defaults.len());
                for p in init.def.params.iter().take(n_required).skip(1) {
                    args.push(Value::Int(interp.syms.fresh(&p.name, 1)));
                }
            }
            interp.call(Value::Ref(class), args, Vec::new(), base.clone(), span)
        }
    };
    let _ = ctx;
    for (st, inst) in instances.into_iter().take(4) {
        if !matches!(inst, Value::Ref(_)) {
            continue;
        }
        // forward's parameters: tensors of unknown shape, or their defaults
        let n_required = fwd.def.params.len().saturating_sub(fwd.defaults.len());
        let mut args = vec![inst.clone()];
        for p in fwd.def.params.iter().take(n_required).skip(1) {
            let _ = p;
            let var = interp.fresh_shape_var();
            args.push(tensor::tensor_value(Shape { prefix: Some(var), dims: Vec::new() }, None));
        }
        let _ = interp.call_closure(&fwd, args, Vec::new(), st, span);
    }
}

/// `ArgumentParser.add_argument` records the destination and its default; `parse_args`
/// returns a namespace of the defaults (the values a run without arguments uses).
fn argparse_method(mut st: State, id: ObjId, attrs: BTreeMap<Name, Value>, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>) -> Vals {
    let Some(Value::Tuple(defaults)) = attrs.get("<defaults>").cloned() else { return vec![(st, Value::Unknown)] };
    match name {
        "add_argument" => {
            let flags: Vec<&str> = args.iter().filter_map(|a| a.as_str()).collect();
            let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v.clone());
            let dest = match kw("dest").as_ref().and_then(|d| d.as_str()) {
                Some(d) => d.to_string(),
                None => {
                    let long = flags.iter().find(|f| f.starts_with("--")).or(flags.first());
                    match long {
                        Some(f) => f.trim_start_matches('-').replace('-', "_"),
                        None => return vec![(st, Value::Unknown)],
                    }
                }
            };
            let action = kw("action");
            let default = match (kw("default"), action.as_ref().and_then(|a| a.as_str())) {
                (Some(d), _) => d,
                (None, Some("store_true")) => Value::Bool(false),
                (None, Some("store_false")) => Value::Bool(true),
                (None, _) => Value::None,
            };
            // `type=int` with a string default converts it
            let default = match (&default, kw("type")) {
                (Value::Str(Some(s)), Some(Value::Builtin("int"))) => s.parse::<i64>().map(|i| Value::int(i as i128)).unwrap_or(Value::Unknown),
                (Value::Str(Some(s)), Some(Value::Builtin("float"))) => Value::Float(s.parse::<f64>().ok()),
                (Value::Str(_), Some(_)) => Value::Unknown,
                _ => default,
            };
            let mut d = defaults.as_ref().clone();
            d.push(Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from(dest.as_str()))), default])));
            if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
                attrs.insert(Rc::from("<defaults>"), Value::Tuple(Rc::new(d)));
            }
            vec![(st, Value::Unknown)]
        }
        "parse_args" | "parse_known_args" => {
            let explicit = match args.first().or(kwargs.iter().find(|(k, _)| &**k == "args").map(|(_, v)| v)) {
                None | Some(Value::None) => false,
                Some(Value::Ref(l)) => !matches!(st.get(*l), Obj::List(items) if items.is_empty()),
                Some(Value::Tuple(t)) => !t.is_empty(),
                Some(_) => true,
            };
            if explicit {
                // an explicit, non-empty argument list: not modelled
                return vec![(st, Value::Unknown)];
            }
            let mut out = BTreeMap::new();
            for d in defaults.iter() {
                if let Value::Tuple(p) = d {
                    if let Some(k) = p[0].as_str() {
                        out.insert(Rc::from(k), p[1].clone());
                    }
                }
            }
            let ns = Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from("Namespace"), attrs: out }));
            let v = if name == "parse_known_args" { Value::Tuple(Rc::new(vec![ns, Value::Unknown])) } else { ns };
            vec![(st, v)]
        }
        "set_defaults" => {
            // overrides defaults by dest: forget them all rather than guess
            if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
                attrs.insert(Rc::from("<defaults>"), Value::Unknown);
            }
            vec![(st, Value::None)]
        }
        _ => vec![(st, Value::Unknown)],
    }
}
