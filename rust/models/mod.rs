//! Library models: what Python's builtins, a few stdlib modules and torch do to values and
//! shapes, and the preconditions torch enforces. An API that is not modelled returns
//! `Unknown`: never a report.
//!
//! - `builtins`: `len`, `range`, `zip`, ... and the methods of lists, dicts and strings;
//! - `stdlib`: `argparse`, `collections.OrderedDict`, `dataclasses.field`, `math`;
//! - `torch`: tensors, `nn` modules and their functional twins, losses, data, the zoo.

pub mod builtins;
pub mod numpy;
pub mod origins;
pub mod ctx;
pub mod registry;
pub mod stdlib;
pub mod text;
pub mod torch;

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::models::ctx::ModelCtx;
use crate::ir::{Name, Span};
use crate::value::*;

/// The value bound by `import a.b` / `from a import b` (as `a.b`).
pub fn import(dotted: &str) -> Value {
    let canon = match dotted {
        "torch.nn.functional" => "torch.nn.functional",
        d => d,
    };
    if canon == "numpy" || canon == "numpy.random" {
        // only what `numpy.rs` models is known (`lib_attr`); every other attribute is Unknown
        return Value::Lib(Rc::from(canon));
    }
    if let Some((path, name)) = canon.rsplit_once('.')
        && (path == "numpy" || path == "numpy.random")
    {
        return numpy::lib_attr(path, name); // `from numpy import newaxis, float32`
    }
    // (of `os`, only the `os.path` functions `stdlib::os_path` models)
    if matches!(canon, "os" | "os.path" | "posixpath") || stdlib::is_os_path(canon) {
        return Value::Lib(Rc::from(canon));
    }
    // (of `sys`, only `argv` and `sys.path`'s extension are followed: `lib_attr`)
    if canon == "sys" {
        return Value::Lib(Rc::from("sys"));
    }
    if canon == "torch" || canon.starts_with("torch.") || canon == "math" || canon.starts_with("math.") || canon == "torchvision" || canon.starts_with("torchvision.") || canon == "argparse" || canon.starts_with("argparse.") || canon == "collections" || canon == "collections.OrderedDict" || canon == "collections.Counter" || canon == "dataclasses" || canon.starts_with("dataclasses.") {
        Value::Lib(Rc::from(canon))
    } else {
        Value::Unknown
    }
}

/// `lib.name` for a library object.
pub fn lib_attr(path: &str, name: &str) -> Value {
    let full = format!("{path}.{name}");
    if path == "numpy" || path.starts_with("numpy.") {
        return numpy::lib_attr(path, name);
    }
    if path == "os" || path.starts_with("os.") || path == "posixpath" {
        return if full == "os.path" || stdlib::is_os_path(&full) { Value::Lib(Rc::from(full.as_str())) } else { Value::Unknown };
    }
    if path == "sys" || path.starts_with("sys.") {
        return match full.as_str() {
            // the command line: strings of unknown number
            "sys.argv" => builtins::repeat(Value::Str(None)),
            "sys.path" | "sys.path.append" | "sys.path.insert" => Value::Lib(Rc::from(full.as_str())),
            _ => Value::Unknown,
        };
    }
    match full.as_str() {
        "math.pi" | "torch.pi" => Value::Float(Some(std::f64::consts::PI)),
        "math.e" | "torch.e" => Value::Float(Some(std::f64::consts::E)),
        "math.inf" | "torch.inf" | "math.nan" | "torch.nan" => Value::Float(None),
        "torch.float32" | "torch.float" => Value::DType(DType::Float),
        "torch.float64" | "torch.double" => Value::DType(DType::Double),
        "torch.long" | "torch.int64" => Value::DType(DType::Long),
        "torch.int32" | "torch.int" => Value::DType(DType::Int),
        "torch.bool" => Value::DType(DType::Bool),
        "torch.uint8" => Value::DType(DType::Byte),
        "torch.float16" | "torch.half" => Value::DType(DType::Half),
        "torch.bfloat16" => Value::DType(DType::BFloat16),
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

/// The hidden attribute marking a user module with a forward hook: its calls are Unknown.
pub const HOOKED: &str = "<hooked>";

/// The hidden attribute under which an instance of a user subclass of a modelled layer holds
/// the layer (a name no Python code can spell; see `engine::interp::attr`).
pub const LAYER: &str = "<layer>";

/// What the instance `id` of a user subclass of a library layer runs as that layer's forward:
/// the layer it holds under [`LAYER`], or, for a subclass of `nn.Sequential`, the container it
/// holds when the instance holds nothing else `Sequential.forward` would run (a module stored
/// into `self` joins the sequence). `None` when neither is known.
pub fn held_layer(st: &State, id: ObjId) -> Option<Value> {
    let Obj::Instance { attrs, .. } = st.get(id) else { return None };
    let l @ Value::Ref(lid) = attrs.get(LAYER)? else { return None };
    match st.get(*lid) {
        Obj::Layer(_) => Some(l.clone()),
        Obj::Container { .. } if attrs.iter().all(|(k, v)| &**k == LAYER || !matches!(v, Value::Ref(_) | Value::Unknown)) => Some(l.clone()),
        _ => None,
    }
}

/// The hidden attribute listing (a tuple of strings) the names a user module registered with
/// `register_buffer`: registered tensors that are not parameters (`shape-lint summary`);
/// Unknown once something was registered under a name not known.
pub const BUFFERS: &str = "<buffers>";

/// The names a user module registered as buffers (`register_buffer`, listed under
/// [`BUFFERS`]): empty when none, `None` when one's name is not known.
pub fn buffer_names(attrs: &BTreeMap<Name, Value>) -> Option<Vec<Name>> {
    match attrs.get(BUFFERS) {
        Some(Value::Tuple(t)) => Some(t.iter().filter_map(|v| if let Value::Str(Some(s)) = v { Some(s.clone()) } else { None }).collect()),
        None => Some(Vec::new()),
        Some(_) => None,
    }
}

/// Library base classes a user class may derive from and still be analysed.
pub fn is_subclassable(base: &str) -> bool {
    matches!(base, "torch.nn.Module" | "torch.utils.data.Dataset" | "torch.utils.data.dataset.Dataset")
}

/// One element of an iterable of unknown length.
pub fn element_of(cx: &mut dyn ModelCtx, st: &mut State, it: &Value) -> Value {
    match it {
        // (ints alike but not equal: each an int of its own)
        Value::LibMethod(inner, name) if &**name == "<repeat>" => match &**inner {
            Value::Int(p) if p.as_const().is_none() => Value::Int(cx.fresh_int_sym("n", crate::shape::UNBOUNDED)),
            v => v.clone(),
        },
        // a character of a string not known
        Value::Str(_) => Value::Str(None),
        // an item of a list a loop appended to (`value::alike`)
        Value::Ref(_) if let Some(item) = crate::value::alike::appended_item(st, it) => builtins::fresh_item(cx, &item),
        // a parameter of a module: a tensor whose shape and dtype are not followed
        Value::LibMethod(_, name) if &**name == "<parameters>" => {
            let var = cx.fresh_shape_var();
            torch::tensor::tensor_value(Shape { prefix: Some(var), dims: Vec::new() }, None)
        }
        // a tuple too long to unroll whose items are all equal (the parts of a split)
        Value::Tuple(items) if !items.is_empty() && items.iter().all(|x| *x == items[0]) => items[0].clone(),
        Value::Gen(..) => cx.first_yield(st, it, Span::default()).unwrap_or(Value::Unknown),
        // the index of an `enumerate` over an unknown number of items: an int >= 0
        Value::LibMethod(inner, name) if &**name == "<enumerate>" => {
            let elem = element_of(cx, st, inner);
            Value::Tuple(Rc::new(vec![Value::Int(cx.fresh_int_sym("i", 0)), elem]))
        }
        // an item of a range too long to unroll or of a symbolic length (`range(seq_len)`) with
        // a known start and a positive step: an int of its own, at least the start and below
        // the stop (a fact of the path, not a branch: every iteration has one such index)
        Value::Range(a, b, step) if let Some(lo) = a.as_const() && step.as_const().is_some_and(|s| s > 0) => {
            let i = cx.fresh_int_sym("i", lo);
            match i.sub(b) {
                Some(below) if st.facts.assume(cx.syms(), &crate::shape::Cond { poly: below.clone(), rel: crate::shape::Rel::Lt }) => Value::Int(i),
                _ => Value::Unknown,
            }
        }
        _ => torch::data::batch_of(cx, st, it).unwrap_or(Value::Unknown),
    }
}

/// Whether a heap object is a torch module: a library layer, a container, or an instance of
/// a user class derived from `nn.Module` (or a modelled layer).
pub fn is_module(cx: &dyn ModelCtx, st: &State, id: ObjId) -> bool {
    match st.get(id) {
        Obj::Layer(_) | Obj::Container { .. } => true,
        Obj::Instance { class, .. } => is_module_class(cx, st, *class),
        _ => false,
    }
}

/// The most submodules `model.apply(fn)` runs `fn` on (a bigger model: not followed).
const MAX_APPLIED: usize = 256;

/// `fn` called on each module of the tree under `id` (children before their parent), on one
/// path: the state after, or None when some call has not exactly one outcome or the tree is
/// too big.
fn apply_each(cx: &mut dyn ModelCtx, st: &State, id: ObjId, f: &Value, span: Span) -> Option<State> {
    fn order(cx: &dyn ModelCtx, st: &State, id: ObjId, seen: &mut Vec<ObjId>, out: &mut Vec<ObjId>) -> Option<()> {
        if seen.contains(&id) {
            return Some(());
        }
        seen.push(id);
        if seen.len() > MAX_APPLIED {
            return None;
        }
        let children: Vec<ObjId> = match st.get(id) {
            Obj::Container { items, .. } => items.iter().filter_map(|(_, v)| if let Value::Ref(c) = v { Some(*c) } else { None }).collect(),
            Obj::Instance { attrs, .. } => attrs.values().filter_map(|v| if let Value::Ref(c) = v { Some(*c) } else { None }).filter(|c| is_module(cx, st, *c)).collect(),
            // (a library layer's own submodules are not followed: none the fn could tell apart)
            _ => Vec::new(),
        };
        for c in children {
            order(cx, st, c, seen, out)?;
        }
        out.push(id);
        Some(())
    }
    let mut ids = Vec::new();
    order(cx, st, id, &mut Vec::new(), &mut ids)?;
    let mut st = st.clone();
    for m in ids {
        let [(s2, _)] = <[_; 1]>::try_from(cx.call(f.clone(), vec![Value::Ref(m)], Vec::new(), st, span)).ok()?;
        st = s2;
    }
    Some(st)
}

/// Whether a user class derives from `nn.Module` (or a modelled layer).
pub fn is_module_class(cx: &dyn ModelCtx, st: &State, class: ObjId) -> bool {
    cx.layer_base(st, class).is_some() || cx.lib_base(st, class).is_some_and(|b| b.starts_with("torch.nn."))
}

/// Unpack a value into `n` parts (`a, b = x.shape`, `h, c = state`), when known.
pub fn unpack(cx: &mut dyn ModelCtx, st: &mut State, v: &Value, n: usize) -> Option<Vec<Value>> {
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
                dims.push(cx.refine_dim(var, k, names[k.min(7)]));
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
            Some((0..n).map(|_| torch::tensor::tensor_value(rest.clone(), t.dtype)).collect())
        }
        _ => None,
    }
}

/// The argument at position `i`, or given by keyword `name`.
pub fn arg<'v>(args: &'v [Value], kwargs: &'v [(Name, Value)], i: usize, name: &str) -> Option<&'v Value> {
    args.get(i).or(kwargs.iter().find(|(k, _)| &**k == name).map(|(_, v)| v))
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

/// Call a library function or class by qualified name.
pub fn call_lib(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    // a loaded checkpoint handed to a library call may get keys the analysis does not see
    let mut st = st;
    for v in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
        torch::checkpoint::open(&mut st, v);
    }
    // a loaded object as the `input` of a torch function: a tensor (`torch/loaded.rs`)
    let (mut args, mut kwargs) = (args, kwargs);
    if path.starts_with("torch.")
        && let Some(api) = resolve_api(path).filter(|a| a.kind == registry::ApiKind::Function)
    {
        torch::loaded::tensor_args(cx, &mut st, &api.params, &mut args, &mut kwargs);
    }
    if path.starts_with("numpy.") {
        return numpy::call(cx, st, path, args, kwargs, span);
    }
    // `os.path.join(save_dir, "last.pt")` of known strings
    if let Some(v) = stdlib::os_path(path, &args, &kwargs) {
        return vec![(st, v)];
    }
    // the import path, extended by a known directory (`sys.path.append("../..")`)
    if matches!(path, "sys.path.append" | "sys.path.insert") {
        if let Some(Value::Str(Some(dir))) = args.last() {
            cx.extend_sys_path(dir);
        }
        return vec![(st, Value::None)];
    }
    if path.starts_with("torch.utils.data.") {
        return torch::data::utils_data(cx, st, path, args, kwargs, span);
    }
    if path.starts_with("torch.nn.utils.rnn.") {
        return torch::packed::call(cx, st, path, args, kwargs, span);
    }
    // gradient clipping (SHP304: where no backward's gradients wait for a step)
    if let Some(op) = path.strip_prefix("torch.nn.utils.").filter(|f| matches!(*f, "clip_grad_norm_" | "clip_grad_value_")) {
        if let Some(p) = args.first().or(kwargs.iter().find(|(k, _)| &**k == "parameters").map(|(_, v)| v)) {
            let limit = args.get(1).or(kwargs.iter().find(|(k, _)| matches!(&**k, "max_norm" | "clip_value")).map(|(_, v)| v));
            torch::optim::clip(cx, &st, op, p, limit, span);
        }
        return vec![(st, Value::Unknown)];
    }
    // `nn.init.normal_(m.weight, ...)` and the other in-place initialisers: they write values
    // into the tensor under no_grad and return it; shapes, modes and gradients stay as they were
    // (a tensor they reject, `xavier_uniform_` of a 1-D one, is not judged)
    // (a parameter the core does not follow: the call is still only an initialisation)
    if let Some(f) = path.strip_prefix("torch.nn.init.")
        && f.ends_with('_')
        && let Some(t) = args.first().or(kwargs.iter().find(|(k, _)| &**k == "tensor").map(|(_, v)| v))
    {
        let t = if matches!(t, Value::Tensor(_)) { t.clone() } else { Value::None };
        return vec![(st, t)];
    }
    if path.starts_with("torch.optim.") {
        let mut st = st;
        return match torch::optim::construct(&mut st, path, &args, &kwargs, span) {
            Some(v) => vec![(st, v)],
            None => vec![(st, Value::Unknown)],
        };
    }
    if path.starts_with("torchvision.models.") {
        return torch::zoo::construct(cx, st, path, args, kwargs, span);
    }
    if path.starts_with("torchvision.") {
        return torch::data::torchvision(cx, st, path, args, kwargs, span);
    }
    // `nn.Transformer.generate_square_subsequent_mask(sz, device=None, dtype=None)`: a fresh
    // `[sz, sz]` float tensor (on the CPU unless `device=` says), made as `torch.empty` makes it
    if path == "torch.nn.Transformer.generate_square_subsequent_mask" {
        return square_subsequent_mask(cx, st, args, kwargs, span);
    }
    if let Some(kind) = path.strip_prefix("torch.nn.") {
        if !kind.contains('.') {
            return torch::layers::construct(cx, st, kind, args, kwargs, span);
        }
    }
    if let Some(f) = path.strip_prefix("torch.nn.functional.") {
        return torch::device::around_function(cx, st, path, args, kwargs, span, |cx, st, args, kwargs| torch::layers::functional(cx, st, f, args, kwargs, span));
    }
    if stdlib::handles(path) {
        return stdlib::call(cx, st, path, args, kwargs, span);
    }
    if path == "torch.device" {
        return vec![(st, torch::device::construct(&args, &kwargs))];
    }
    // `Variable(t)` (torch < 0.4) is `t` itself; `requires_grad=True` makes it a leaf that does
    if path == "torch.autograd.Variable" {
        let v = match (args.as_slice(), kwargs.iter().find(|(k, _)| &**k == "requires_grad").map(|(_, v)| v)) {
            ([Value::Tensor(t)], None) if kwargs.iter().all(|(k, _)| &**k == "volatile") => Value::Tensor(t.clone()),
            ([Value::Tensor(t)], Some(Value::Bool(true))) if kwargs.len() == 1 && torch::device::follows_autograd() => Value::Tensor(Rc::new(Tensor { grad: Grad::Leaf, ..(**t).clone() })),
            _ => Value::Unknown,
        };
        return vec![(st, v)];
    }
    if let Some(v) = torch::device::is_available(cx, path) {
        return vec![(st, v)];
    }
    if let Some(f) = path.strip_prefix("torch.fft.") {
        return torch::device::around_function(cx, st, path, args, kwargs, span, |cx, st, args, kwargs| torch::fft::call(cx, st, f, args, kwargs, span));
    }
    if let Some(f) = path.strip_prefix("torch.") {
        return torch::device::around_function(cx, st, path, args, kwargs, span, |cx, st, args, kwargs| torch::tensor::torch_function(cx, st, f, args, kwargs, span));
    }
    vec![(st, Value::Unknown)]
}

/// The position `i` names in a sequence of `n` items (a negative one from the end), when known
/// and in range.
fn position(i: &Value, n: usize) -> Option<usize> {
    let k = i.as_const_int()?;
    let k = if k < 0 { k + n as i128 } else { k };
    (0..n as i128).contains(&k).then_some(k as usize)
}

/// `del o[i]`: the item is gone from a list, a dict or a module container; an index or key not
/// known leaves the object's items unknown.
pub fn delete_item(st: &mut State, o: &Value, i: &Value) {
    let Value::Ref(id) = o else {
        // (`taken`: an unknown object changed)
        st.taken.forget();
        return;
    };
    match st.get_mut(*id) {
        Obj::List(items) => match position(i, items.len()) {
            Some(k) => {
                items.remove(k);
            }
            None => forget_items(items.iter_mut()),
        },
        Obj::Dict(items) => {
            if i.as_str().is_some() || i.as_const_int().is_some() {
                items.retain(|(k, _)| k != i);
            } else {
                items.clear();
                items.push((Value::Unknown, Value::Unknown));
            }
        }
        Obj::Container { items, .. } => {
            let key = i.as_str();
            match (key, position(i, items.len())) {
                (Some(k), _) => items.retain(|(n, _)| n.as_deref() != Some(k)),
                (None, Some(k)) => {
                    items.remove(k);
                }
                // a slice or an index not known: what the container runs is not known
                (None, None) => forget_items(items.iter_mut().map(|(_, v)| v)),
            }
        }
        _ => {}
    }
}

fn forget_items<'a>(items: impl Iterator<Item = &'a mut Value>) {
    for v in items {
        *v = Value::Unknown;
    }
}

/// Record the training mode `mode` on a module and on the modules it registers, as
/// `nn.Module.train` does (`for_each_module`).
/// `module.requires_grad_(flag)` (`flag`: a bool, or Unknown): marks each library layer of the
/// module (`torch::autograd::REQUIRES_GRAD`). A tensor held by a user module (a raw
/// `nn.Parameter`) is not followed: then any parameter may be frozen (`State::params_frozen`).
pub fn set_requires_grad(cx: &dyn ModelCtx, st: &mut State, id: ObjId, flag: &Value) {
    let key: Name = Name::from(torch::autograd::REQUIRES_GRAD);
    let mut raw = false;
    let mut visited = 0usize;
    for_each_module(cx, st, id, &mut |attrs, user| {
        visited += 1;
        if user {
            raw |= attrs.values().any(|v| matches!(v, Value::Tensor(_) | Value::Unknown));
        } else {
            attrs.insert(key.clone(), flag.clone());
        }
    });
    if raw || visited == 0 || visited > 4096 {
        st.params_frozen = true;
    }
}

pub fn set_training(cx: &dyn ModelCtx, st: &mut State, id: ObjId, mode: &Value) {
    let key: Name = Name::from("training");
    for_each_module_where(cx, st, id, &|attrs| attrs.get(&key) != Some(mode), &mut |attrs, _| {
        attrs.insert(key.clone(), mode.clone());
    });
}

/// Apply `f` to the attributes of a module and of the modules it registers, as
/// `nn.Module.apply` walks them: a library layer or container and its items, a user module and
/// the modules among its attributes (a plain list of layers is not registered: not followed).
/// Each object once (a layer shared by two parents, a cycle through `self`). `f` also learns
/// whether the object is an instance of a user class (whose plain attributes are not the
/// module's parameters or buffers).
pub fn for_each_module(cx: &dyn ModelCtx, st: &mut State, id: ObjId, f: &mut dyn FnMut(&mut BTreeMap<Name, Value>, bool)) {
    for_each_module_where(cx, st, id, &|_| true, f)
}

/// [`for_each_module`], `f` applied only to the modules whose attributes `needs` accepts (those
/// it would change): the others are read, not copied for a write (a walk that sets what is
/// set already, at each call that may switch a model's mode, copied every module).
pub fn for_each_module_where(cx: &dyn ModelCtx, st: &mut State, id: ObjId, needs: &dyn Fn(&BTreeMap<Name, Value>) -> bool, f: &mut dyn FnMut(&mut BTreeMap<Name, Value>, bool)) {
    let mut todo = vec![id];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(id) = todo.pop() {
        if seen.len() > 4096 || !is_module(cx, st, id) || !seen.insert(id) {
            continue;
        }
        let needed = match st.get(id) {
            Obj::Layer(l) => needs(&l.attrs),
            Obj::Container { attrs, .. } | Obj::Instance { attrs, .. } => needs(attrs),
            _ => false,
        };
        if needed {
            match st.get_mut(id) {
                Obj::Layer(l) => f(&mut l.attrs, false),
                Obj::Container { attrs, .. } => f(attrs, false),
                Obj::Instance { attrs, .. } => f(attrs, true),
                _ => {}
            }
        }
        let refs = |vs: &mut dyn Iterator<Item = &Value>| -> Vec<ObjId> { vs.filter_map(|v| if let Value::Ref(c) = v { Some(*c) } else { None }).collect() };
        let children = match st.get(id) {
            // the modules it was built from (`nn.TransformerEncoder(layer, n)` runs copies of
            // `layer`, which the model runs as `layer` itself)
            Obj::Layer(l) => refs(&mut l.args.values().chain(l.attrs.values())),
            Obj::Container { items, .. } => refs(&mut items.iter().map(|(_, v)| v)),
            Obj::Instance { attrs, .. } => refs(&mut attrs.values()),
            _ => Vec::new(),
        };
        todo.extend(children);
    }
}

/// The objects among a library call's arguments (`freeze_bn(model)`, `accelerator.prepare(model)`):
/// a call whose result is not modelled may switch the modules among them to another mode
/// (`forget_training`, which keeps to the modules: taken only when that happens).
pub fn ref_args(args: &[Value], kwargs: &[(Name, Value)]) -> Vec<ObjId> {
    args.iter().chain(kwargs.iter().map(|(_, v)| v)).filter_map(|v| if let Value::Ref(id) = v { Some(*id) } else { None }).collect()
}

/// The training mode of these objects that are modules is no longer known.
pub fn forget_training(cx: &dyn ModelCtx, st: &mut State, ids: &[ObjId]) {
    // (and an optimizer handed to it may have stepped or zeroed: `scaler.step(optimizer)`)
    torch::optim::forget(st, Some(ids));
    // (a module forgotten already is left as it is)
    let needs = |attrs: &BTreeMap<Name, Value>| {
        ["training", torch::device::DEVICE_ATTR, torch::device::DTYPE_ATTR].iter().any(|k| !matches!(attrs.get(*k), Some(Value::Unknown)))
            || attrs.values().any(|v| matches!(v, Value::Tensor(t) if t.device.is_some() || t.dtype.is_some()))
    };
    for &id in ids {
        for_each_module_where(cx, st, id, &needs, &mut |attrs, _| {
            attrs.insert(Name::from("training"), Value::Unknown);
            // (`accelerator.prepare(model)` moves it too)
            attrs.insert(Name::from(torch::device::DEVICE_ATTR), Value::Unknown);
            attrs.insert(Name::from(torch::device::DTYPE_ATTR), Value::Unknown);
            for v in attrs.values_mut() {
                if let Value::Tensor(t) = v {
                    *v = Value::Tensor(Rc::new(Tensor { device: None, dtype: None, ..(**t).clone() }));
                }
            }
        });
    }
}

/// Methods on values: tensors, modules, lists, dicts, strings.
/// `nn.Transformer.generate_square_subsequent_mask(sz, device=None, dtype=None)` (a static
/// method, also called on an instance).
fn square_subsequent_mask(cx: &mut dyn ModelCtx, st: State, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    if args.len() > 3 || kwargs.iter().any(|(k, _)| !matches!(&**k, "sz" | "device" | "dtype")) {
        return vec![(st, Value::Unknown)];
    }
    let b = bind(&["sz", "device", "dtype"], &args, &kwargs);
    let Some(sz) = b.get("sz").filter(|v| v.as_int().is_some()).cloned() else { return vec![(st, Value::Unknown)] };
    let kw: Vec<(Name, Value)> = ["device", "dtype"].iter().filter_map(|k| b.get(*k).filter(|v| !matches!(v, Value::None)).map(|v| (Name::from(*k), v.clone()))).collect();
    call_lib(cx, st, "torch.empty", vec![sz.clone(), sz], kw, span)
}

pub fn call_method(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    // `loss.backward()` on a value the core does not follow (`scaler.scale(loss).backward()`,
    // `accelerator.backward(loss)`): it may give any optimizer gradients (`optim.rs`)
    if name == "backward" && !matches!(recv, Value::Tensor(_)) {
        torch::optim::forget(&mut st, None);
    }
    match &recv {
        // `x.set_(y)`, `x.resize_(...)`: the tensor object changes, in every alias
        Value::Tensor(t) if matches!(name, "set_" | "resize_" | "resize_as_") => {
            let new = match (name, args.first()) {
                ("set_", Some(v @ Value::Tensor(_))) => v.clone(),
                _ => Value::Unknown,
            };
            let t = t.clone();
            torch::layers::tensor_replaced(&mut st, &t, &new);
            return vec![(st, new)];
        }
        Value::Tensor(_) => return torch::device::around_method(cx, st, recv, name, args, kwargs, span, |cx, st, recv, args, kwargs| torch::tensor::tensor_method(cx, st, recv, name, args, kwargs, span)),
        // alike items of unknown number (a vocabulary of text not known): a position or a count
        Value::LibMethod(_, n) if &**n == "<repeat>" && matches!(name, "index" | "count") && args.len() == 1 => {
            return vec![(st, Value::Int(cx.fresh_int_sym("n", 0)))];
        }
        Value::Ref(id) => {
            let id = *id;
            match st.get(id).clone() {
                Obj::List(_) | Obj::Dict(_) => return builtins::collection_method(cx, st, id, name, args, span),
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
                            if let Some(more) = args.first().and_then(|a| cx.iterate(&mut st, a, span)) {
                                items.extend(more.into_iter().map(|v| (None, v)));
                                *st.get_mut(id) = Obj::Container { kind, items, attrs };
                                return vec![(st, Value::None)];
                            }
                            return vec![(st, Value::Unknown)];
                        }
                        "__call__" => return torch::call_module_value(cx, st, recv.clone(), args, kwargs, span),
                        // `layers.insert(0, m)`, `layers.pop()`, `layers.pop(2)`
                        "insert" => {
                            let (Some(i), Some(m)) = (args.first(), args.get(1)) else { return vec![(st, Value::Unknown)] };
                            match i.as_const_int().map(|k| if k < 0 { (k + items.len() as i128).max(0) } else { k.min(items.len() as i128) }) {
                                Some(k) => items.insert(k as usize, (None, m.clone())),
                                None => forget_items(items.iter_mut().map(|(_, v)| v)),
                            }
                            *st.get_mut(id) = Obj::Container { kind, items, attrs };
                            return vec![(st, Value::None)];
                        }
                        "pop" => {
                            let i = args.first().cloned().unwrap_or(Value::int(-1));
                            let (out, items) = match position(&i, items.len()) {
                                Some(k) => {
                                    let mut items = items;
                                    let (_, v) = items.remove(k);
                                    (v, items)
                                }
                                None => {
                                    let mut items = items;
                                    forget_items(items.iter_mut().map(|(_, v)| v));
                                    (Value::Unknown, items)
                                }
                            };
                            *st.get_mut(id) = Obj::Container { kind, items, attrs };
                            return vec![(st, out)];
                        }
                        _ => {}
                    }
                }
                Obj::Layer(_) if name == "__call__" => return torch::call_module_value(cx, st, recv.clone(), args, kwargs, span),
                Obj::Layer(l) if name == "generate_square_subsequent_mask" && &*l.kind == "Transformer" => return square_subsequent_mask(cx, st, args, kwargs, span),
                Obj::Namespace { kind, attrs } if &*kind == "ArgParser" => return stdlib::argparse_method(cx, st, id, attrs, name, args, kwargs, span),
                Obj::Namespace { kind, .. } if kind.starts_with("numpy.") => return numpy::method(cx, st, id, name, args, kwargs, span),
                Obj::Namespace { kind, .. } if &*kind == torch::optim::OPTIMIZER || &*kind == torch::optim::SCHEDULER => return torch::optim::method(cx, st, id, name, &args, &kwargs, span),
                Obj::Namespace { kind, .. } if &*kind == crate::value::alike::APPENDED => return builtins::appended_method(cx, st, id, name, args, span),
                // `x.to(device)` of a loaded object: the object (a module returns itself, a
                // tensor one of its shape: `loaded.rs`)
                Obj::Namespace { kind, .. } if &*kind == torch::checkpoint::CHECKPOINT && torch::loaded::keeps(name) => return vec![(st, recv.clone())],
                _ => {}
            }
            // a forward hook may change what a module takes or returns: its calls are no longer
            // modelled
            if matches!(name, "register_forward_pre_hook" | "register_forward_hook") {
                match st.get_mut(id) {
                    Obj::Layer(l) => torch::layers::mark_modified(l),
                    Obj::Container { items, .. } => forget_items(items.iter_mut().map(|(_, v)| v)),
                    Obj::Instance { attrs, .. } => {
                        attrs.insert(Name::from(HOOKED), Value::Bool(true));
                    }
                    _ => {}
                }
                return vec![(st, Value::Unknown)];
            }
            // nn.Module methods that set an attribute
            if matches!(name, "register_buffer" | "register_parameter" | "add_module" | "register_module") {
                if let (Some(Value::Str(Some(attr))), Some(v)) = (args.first(), args.get(1).or(kwargs.iter().find(|(k, _)| matches!(&**k, "tensor" | "param" | "module")).map(|(_, v)| v))) {
                    let attr: Name = attr.clone();
                    // a buffer or a parameter moves with the module
                    let v = match v {
                        Value::Tensor(t) if name != "add_module" && name != "register_module" => Value::Tensor(Rc::new((**t).clone().registered())),
                        v => v.clone(),
                    };
                    cx.set_attr(&mut st, &recv, &attr, v);
                    if name == "register_buffer"
                        && let Obj::Instance { attrs, .. } = st.get_mut(id)
                    {
                        let mut names = match attrs.get(BUFFERS) {
                            Some(Value::Tuple(t)) => (**t).clone(),
                            _ => Vec::new(),
                        };
                        let v = Value::Str(Some(attr.clone()));
                        if !names.contains(&v) {
                            names.push(v);
                        }
                        attrs.insert(Name::from(BUFFERS), Value::Tuple(Rc::new(names)));
                    }
                } else if let Obj::Instance { attrs, .. } = st.get_mut(id) {
                    // registered under a name not known: which tensors are parameters is not known
                    attrs.insert(Name::from(BUFFERS), Value::Unknown);
                }
                return vec![(st, Value::None)];
            }
            // `.eval()`/`.train(mode)` of a module: its mode, and its children's (the checks of
            // batch statistics and of the attention masks that only training mode makes)
            if matches!(name, "eval" | "train") && is_module(cx, &st, id) {
                let mode = match (name, args.first().or(kwargs.iter().find(|(k, _)| &**k == "mode").map(|(_, v)| v))) {
                    ("eval", _) => Value::Bool(false),
                    (_, None) => Value::Bool(true),
                    (_, Some(Value::Bool(b))) => Value::Bool(*b),
                    _ => Value::Unknown,
                };
                set_training(cx, &mut st, id, &mode);
                if matches!(mode, Value::Bool(false)) {
                    torch::mode::switched_to_eval(&mut st, id, span);
                } else {
                    torch::mode::switched_to_train(&mut st, id);
                }
                return vec![(st, recv.clone())];
            }
            // `model.apply(fn)` with a function of the program: `fn` on each submodule, children
            // first, then the module itself, as torch does (`_init_weights` reads each layer's
            // type and initialises its weights); one path, else as below
            if name == "apply"
                && let [f @ (Value::Func(_) | Value::Bound(..))] = &args[..]
                && kwargs.is_empty()
                && is_module(cx, &st, id)
                && let Some(st2) = apply_each(cx, &st, id, f, span)
            {
                return vec![(st2, recv.clone())];
            }
            // what is done with the submodules that `modules()`/`children()`/`apply(fn)` hand out
            // is not followed (`for m in model.modules(): m.eval()`): their mode is no longer known
            if matches!(name, "modules" | "children" | "named_modules" | "named_children" | "apply") && is_module(cx, &st, id) {
                forget_training(cx, &mut st, &[id]);
            }
            // `model.parameters()`: an iterator over the module's parameters, of shapes not
            // followed here; `next(...)` of it (the idiom that takes the weights' dtype and
            // device for a new state) is a tensor of unknown shape (`element_of`)
            if name == "parameters" && args.is_empty() && kwargs.is_empty() && is_module(cx, &st, id) {
                return vec![(st, Value::LibMethod(Box::new(recv.clone()), Rc::from("<parameters>")))];
            }
            // `model.to(device)`, `.cuda()`, `.half()`: its parameters and buffers move (`device.rs`)
            if is_module(cx, &st, id)
                && let Some(mv) = torch::device::move_of(name, &args, &kwargs)
            {
                if torch::device::unreachable_device(cx, &st, mv.0.flatten()) {
                    return Vec::new();
                }
                torch::device::move_module(cx, &mut st, id, mv);
                return vec![(st, recv.clone())];
            }
            // `model.zero_grad()`: the gradients of the optimizers of its layers (`optim.rs`)
            if name == "zero_grad" && is_module(cx, &st, id) {
                torch::optim::zero_module(cx, &mut st, id, span);
                return vec![(st, Value::None)];
            }
            // `model.requires_grad_(flag)`: the parameters of its layers (`autograd::REQUIRES_GRAD`);
            // a parameter of its own (an instance's tensor attribute) or a module not followed
            // may be any: then any parameter may be frozen
            if name == "requires_grad_" && is_module(cx, &st, id) {
                let flag = match args.first().or(kwargs.iter().find(|(k, _)| &**k == "requires_grad").map(|(_, v)| v)) {
                    None => Value::Bool(true),
                    Some(Value::Bool(b)) => Value::Bool(*b),
                    Some(_) => Value::Unknown,
                };
                set_requires_grad(cx, &mut st, id, &flag);
            } else if name == "requires_grad_" {
                st.params_frozen = true;
            }
            // nn.Module methods that return the module itself
            if matches!(name, "to" | "cuda" | "cpu" | "train" | "eval" | "float" | "double" | "half" | "requires_grad_" | "apply") {
                return vec![(st, recv.clone())];
            }
            // `super().__init__(...)` and `super().forward(...)` in a user subclass of a
            // modelled layer (`class MyLinear(nn.Linear)`): build the layer the instance holds
            // (`engine::interp::attr::LAYER`), call it
            if let Some((kind, method)) = name.strip_prefix("torch.nn.").and_then(|r| r.split_once('.'))
                && let Obj::Instance { class, attrs } = st.get(id).clone()
                && cx.layer_base(&st, class) == Some(kind)
            {
                match method {
                    "__init__" => {
                        // an attribute of the layer's set before it is built (which torch's
                        // `__init__` may overwrite): not modelled, the layer and the attribute
                        if attrs.keys().any(|k| torch::layers::is_layer_name(k)) {
                            if let Obj::Instance { attrs, .. } = st.get_mut(id) {
                                for (k, v) in attrs.iter_mut() {
                                    if torch::layers::is_layer_name(k) {
                                        *v = Value::Unknown;
                                    }
                                }
                                attrs.insert(Name::from(LAYER), Value::Unknown);
                            }
                            return vec![(st, Value::None)];
                        }
                        let mut out = Vec::new();
                        for (mut st, layer) in torch::layers::construct(cx, st, kind, args, kwargs, span) {
                            if let Obj::Instance { attrs, .. } = st.get_mut(id) {
                                attrs.insert(Name::from(LAYER), layer);
                            }
                            out.push((st, Value::None));
                        }
                        return out;
                    }
                    "forward" => {
                        return match held_layer(&st, id) {
                            Some(l) => cx.call(l, args, kwargs, st, span),
                            None => vec![(st, Value::Unknown)],
                        };
                    }
                    // any other method of a `Sequential` (`self.append(m)`, `add_module`) may
                    // change the modules it runs: its container is no longer followed
                    _ if kind == "Sequential" => {
                        let mut st = st;
                        if let Obj::Instance { attrs, .. } = st.get_mut(id) {
                            attrs.insert(Name::from(LAYER), Value::Unknown);
                        }
                        return vec![(st, Value::Unknown)];
                    }
                    _ => {}
                }
            }
            if name.ends_with(".__init__") || name == "__init__" {
                return vec![(st, Value::None)];
            }
            if name.ends_with(".forward") {
                return vec![(st, Value::Unknown)];
            }
            vec![(st, Value::Unknown)]
        }
        Value::Str(Some(text)) if name == "split" && kwargs.is_empty() => {
            let mut st = st;
            let v = match builtins::split(text, &args) {
                Some(parts) => Value::Ref(st.alloc(Obj::List(parts))),
                None => Value::Unknown,
            };
            vec![(st, v)]
        }
        // of a string not known: parts, positions and counts of unknown number and value
        Value::Str(None) if matches!(name, "split" | "splitlines" | "rsplit") && kwargs.is_empty() => vec![(st, builtins::repeat(Value::Str(None)))],
        Value::Str(_) if matches!(name, "find" | "rfind" | "count" | "index" | "rindex") && !args.is_empty() => {
            let lo = if matches!(name, "find" | "rfind") { -1 } else { 0 };
            vec![(st, Value::Int(cx.fresh_int_sym("n", lo)))]
        }
        Value::Str(s) => {
            let v = builtins::str_method(&st, s, name, &args, &kwargs);
            vec![(st, v)]
        }
        // tuple methods (`index`, `count`) and the rest are not modelled
        _ => vec![(st, Value::Unknown)],
    }
}


/// The registry entry a call of the library path `path` resolves to, through the aliases the
/// dispatchers accept (`torch.nn.modules.linear.Linear`, `torch.concat`,
/// `torchvision.models.resnet.resnet18`); `None` when the path is not modelled.
pub fn resolve_api(path: &str) -> Option<&'static registry::Api> {
    if path.starts_with("torchvision.models.") {
        return torch::zoo::resolve(path);
    }
    if path.starts_with("torchvision.") || path.starts_with("torch.utils.data.") {
        return torch::data::resolve(path);
    }
    registry::lookup(&canon_path(path))
}
