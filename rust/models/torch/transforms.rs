//! torchvision transforms: their construction (a `Transform` namespace of the arguments that
//! decide the output) and their application to a dataset's sample (`apply_transform`), PIL
//! images being `("<pil>", C, H, W)` tuples until `ToTensor`.
//!
//! A user callable as a transform (a function, a lambda, an instance of a class with
//! `__call__`, a step of a `Compose`, `Lambda(f)`) runs once on the sample, on a copy of the
//! path (`run_user`): a PIL image is an opaque `PIL.Image` namespace to it, a transform object
//! it calls applies as the dataset would (`call_transform`, which the engine dispatches a
//! call of a `Transform` namespace to), and what it returns is the sample when it is made of
//! tensors (a tensor, or a tuple, list or dict of them); otherwise the sample is Unknown.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::data::{join_sample, keep_untracked, ns, ns_attr, on, refers_to_objects};
use super::tensor::tensor_value;
use crate::ir::{Name, Span};
use crate::models::ctx::ModelCtx;
use crate::value::*;

/// A transform's construction: the namespace `apply_transform` reads (its name, and the
/// arguments that decide its output), or Unknown for a configuration that is not modelled.
pub(super) fn transform(cx: &mut dyn ModelCtx, st: State, name: &str, b: BTreeMap<&'static str, Value>) -> Vals {
    let mut st = st;
    let mut attrs = vec![("name", Value::Str(Some(Rc::from(name))))];
    let number = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_));
    // a `fill` sequence must match the image's channels: only a number (or the default)
    let fill_ok = match b.get("fill") {
        None => true,
        Some(v) => number(v) || (matches!(name, "AutoAugment" | "RandAugment" | "TrivialAugmentWide") && matches!(v, Value::None)),
    };
    if !fill_ok {
        return vec![(st, Value::Unknown)];
    }
    match name {
        "Compose" => match b.get("transforms").and_then(|a| cx.iterate(&mut st, a, Span::default())) {
            Some(items) => attrs.push(("steps", Value::Tuple(Rc::new(items)))),
            None => return vec![(st, Value::Unknown)],
        },
        "Resize" | "CenterCrop" | "RandomCrop" | "RandomResizedCrop" => {
            let Some(size) = b.get("size") else { return vec![(st, Value::Unknown)] };
            attrs.push(("size", size.clone()));
            // `max_size` rescales a long edge (and is refused with a (h, w) size)
            if b.get("max_size").is_some_and(|m| !matches!(m, Value::None)) {
                return vec![(st, Value::Unknown)];
            }
            if name == "RandomCrop" {
                // reflect/symmetric padding needs the padding narrower than the image
                if !matches!(b.get("padding_mode").map(|m| m.as_str()), None | Some(Some("constant" | "edge"))) {
                    return vec![(st, Value::Unknown)];
                }
                match b.get("pad_if_needed") {
                    None | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) => attrs.push(("pad_if_needed", Value::Bool(true))),
                    Some(_) => return vec![(st, Value::Unknown)],
                }
                // (left, top, right, bottom)
                let pad = match b.get("padding") {
                    None | Some(Value::None) => Some(vec![Value::int(0); 4]),
                    Some(p @ Value::Int(_)) => Some(vec![p.clone(); 4]),
                    Some(p) => match cx.iterate(&mut st, p, Span::default()) {
                        Some(v) if v.len() == 1 => Some(vec![v[0].clone(); 4]),
                        Some(v) if v.len() == 2 => Some(vec![v[0].clone(), v[1].clone(), v[0].clone(), v[1].clone()]),
                        Some(v) if v.len() == 4 => Some(v),
                        _ => None,
                    },
                };
                match pad {
                    Some(p) if p.iter().all(|v| matches!(v, Value::Int(_))) => attrs.push(("padding", Value::Tuple(Rc::new(p)))),
                    _ => return vec![(st, Value::Unknown)],
                }
            }
        }
        "Normalize" => {
            // the number of values of mean and std (None: a number, which broadcasts)
            let mut counts = Vec::new();
            for key in ["mean", "std"] {
                let Some(v) = b.get(key) else { return vec![(st, Value::Unknown)] };
                let items = if number(v) { vec![v.clone()] } else { cx.iterate(&mut st, v, Span::default()).unwrap_or_default() };
                if items.is_empty() || !items.iter().all(number) {
                    return vec![(st, Value::Unknown)];
                }
                // torch refuses a std of zero
                if key == "std" && items.iter().any(|i| matches!(i, Value::Float(Some(f)) if *f == 0.0) || i.as_const_int() == Some(0)) {
                    return vec![(st, Value::Unknown)];
                }
                counts.push(Value::int(if number(v) { 1 } else { items.len() as i128 }));
            }
            attrs.push(("counts", Value::Tuple(Rc::new(counts))));
        }
        "ConvertImageDtype" => match b.get("dtype") {
            Some(d @ Value::DType(_)) => attrs.push(("dtype", d.clone())),
            _ => return vec![(st, Value::Unknown)],
        },
        "RandomRotation" => match b.get("expand") {
            // `expand=True` grows the image to hold the rotated one
            None | Some(Value::Bool(false)) => {}
            _ => return vec![(st, Value::Unknown)],
        },
        // a user function of the image (`Lambda(lambda x: x.view(-1))`)
        "Lambda" => match b.get("lambd") {
            Some(f @ (Value::Func(_) | Value::Bound(..))) => attrs.push(("lambd", f.clone())),
            _ => return vec![(st, Value::Unknown)],
        },
        "RandomErasing" => match b.get("value") {
            // a sequence must have 1 or C values; "random" is fine
            None => {}
            Some(v) if number(v) || v.as_str() == Some("random") => {}
            _ => return vec![(st, Value::Unknown)],
        },
        _ => {}
    }
    let v = ns(&mut st, "Transform", attrs);
    vec![(st, v)]
}

/// Apply a transform to a sample: PIL images are `("<pil>", C, H, W)` tuples until `ToTensor`.
/// A user callable (a step of a `Compose` included) runs on it (`run_user`).
pub(super) fn apply_transform(cx: &mut dyn ModelCtx, st: &mut State, t: &Value, x: Value, span: Span) -> Value {
    let Some(Value::Str(Some(name))) = ns_attr(st, t, "Transform", "name") else { return run_user(cx, st, t, x, span) };
    let pil = |v: &Value| -> Option<(Value, Value, Value)> {
        match v {
            Value::Tuple(p) if p.len() == 4 && p[0].as_str() == Some("<pil>") => Some((p[1].clone(), p[2].clone(), p[3].clone())),
            _ => None,
        }
    };
    let float_tensor = |v: &Value| matches!(v, Value::Tensor(t) if t.dtype.is_some_and(DType::is_floating));
    match &*name {
        "Compose" => {
            let Some(Value::Tuple(steps)) = ns_attr(st, t, "Transform", "steps") else { return Value::Unknown };
            let mut x = x;
            for s in steps.iter() {
                x = apply_transform(cx, st, s, x, span);
            }
            x
        }
        "ToTensor" | "PILToTensor" => match pil(&x) {
            Some((c, h, w)) => {
                let dims = [c, h, w].iter().map(|v| v.as_int().map(|p| Dim::known(p.clone(), None)).unwrap_or_else(Dim::unknown)).collect();
                on(tensor_value(Shape::known(dims), Some(if &*name == "ToTensor" { DType::Float } else { DType::Byte })), Some(Device::Cpu))
            }
            None => Value::Unknown,
        },
        "Resize" | "CenterCrop" | "RandomCrop" | "RandomResizedCrop" => {
            let size = ns_attr(st, t, "Transform", "size");
            let hw = match &size {
                Some(Value::Int(p)) => {
                    if &*name == "Resize" {
                        // Resize(int) keeps the aspect ratio: only square inputs of a known
                        // size are exact; others become an image of unknown size
                        match pil(&x) {
                            Some((_, h, w)) if h == w && h.as_int().is_some() => Some((Value::Int(p.clone()), Value::Int(p.clone()))),
                            Some(_) => Some((Value::Unknown, Value::Unknown)),
                            None => None,
                        }
                    } else {
                        Some((Value::Int(p.clone()), Value::Int(p.clone())))
                    }
                }
                Some(Value::Tuple(items)) if items.len() == 2 => Some((items[0].clone(), items[1].clone())),
                _ => None,
            };
            match (pil(&x), hw) {
                (Some((c, h, w)), Some((th, tw))) => {
                    if &*name == "RandomCrop" && !random_crop_fits(st, t, &h, &w, &th, &tw) {
                        // torch raises: the crop is larger than the (padded) image
                        return Value::Unknown;
                    }
                    Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), c, th, tw]))
                }
                _ => Value::Unknown,
            }
        }
        "Grayscale" => match pil(&x) {
            Some((_, h, w)) => Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), Value::int(1), h, w])),
            None => Value::Unknown,
        },
        // a float tensor image [..., C, H, W] whose C matches the number of means and stds (or 1)
        "Normalize" => {
            let (Value::Tensor(tt), Some(Value::Tuple(counts))) = (&x, ns_attr(st, t, "Transform", "counts")) else { return Value::Unknown };
            let s = st.resolve(&tt.shape);
            if !float_tensor(&x) || s.prefix.is_some() || s.dims.len() < 3 {
                return Value::Unknown;
            }
            let Some(c) = s.dims[s.dims.len() - 3].as_const() else { return Value::Unknown };
            if counts.iter().all(|n| matches!(n.as_const_int(), Some(n) if n == 1 || n == c)) {
                x
            } else {
                Value::Unknown
            }
        }
        "ConvertImageDtype" => match (&x, ns_attr(st, t, "Transform", "dtype")) {
            // to a floating dtype (from a float one, or a known integer one)
            (Value::Tensor(tt), Some(Value::DType(d))) if tt.dtype.is_some() && d.is_floating() => on(tensor_value(tt.shape.clone(), Some(d)), tt.device),
            _ => Value::Unknown,
        },
        // the user function, as a user callable given as the transform runs (`run_user`)
        "Lambda" => match ns_attr(st, t, "Transform", "lambd") {
            Some(f) => run_user(cx, st, &f, x, span),
            None => Value::Unknown,
        },
        // tensors only (a PIL image is a TypeError)
        "RandomErasing" => match x {
            Value::Tensor(_) => x,
            _ => Value::Unknown,
        },
        // PIL images only here: on a float tensor some of their operations raise
        "AutoAugment" | "RandAugment" | "TrivialAugmentWide" => match pil(&x) {
            Some(_) => x,
            None => Value::Unknown,
        },
        "RandomHorizontalFlip" | "RandomVerticalFlip" | "ColorJitter" | "RandomRotation" | "RandomAffine" => match (&x, pil(&x)) {
            (Value::Tensor(_), _) | (_, Some(_)) => x,
            _ => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}

/// The kind of the namespace that stands for a PIL image inside user code (a transform's
/// argument): its only attribute is the hidden [`PIL_IMAGE`], the `("<pil>", C, H, W)` tuple
/// the transforms read, so any attribute, index or method of it in user code is Unknown.
const PIL: &str = "PIL.Image";
const PIL_IMAGE: &str = "<pil>";

pub(super) fn is_pil(v: &Value) -> bool {
    matches!(v, Value::Tuple(p) if p.len() == 4 && p[0].as_str() == Some("<pil>"))
}

/// Whether `v` holds a PIL image anywhere (the default collate refuses one).
pub(super) fn holds_pil(v: &Value) -> bool {
    match v {
        Value::Tuple(items) => is_pil(v) || items.iter().any(holds_pil),
        _ => false,
    }
}

/// Whether `f` is a user callable a dataset may run as a transform: a function, lambda or
/// bound method, or an instance of a user class that defines `__call__` (or an `nn.Module`'s
/// `forward`), with no base the engine does not see.
pub(super) fn user_callable(cx: &dyn ModelCtx, st: &State, f: &Value) -> bool {
    match f {
        Value::Func(_) | Value::Bound(..) => true,
        Value::Ref(id) => match st.get(*id) {
            Obj::Instance { class, .. } => {
                let class = *class;
                if cx.has_unknown_base(st, class) {
                    return false;
                }
                let defines = |name: &str| matches!(cx.class_lookup(st, class, name), Some((_, Value::Func(_))));
                defines("__call__") || (cx.lib_base(st, class).is_some() && defines("forward"))
            }
            _ => false,
        },
        _ => false,
    }
}

/// At most this many outcomes of a user transform are joined into one sample.
const MAX_OUTCOMES: usize = 8;

/// A user callable given as a transform (`transform=TwoCrop(tf)`, a function, a lambda, a step
/// of a `Compose`, `Lambda(f)`), run once on the sample `x` (a tensor, or a PIL image it sees as
/// an opaque object: `PIL`) on a copy of the path whose changes are dropped (it runs per
/// sample, in the loader). Its checks run, and report where every sample would fail. What it
/// returns is the sample when it is made of tensors (or PIL images, for the next step of a
/// `Compose`): a tensor, or a tuple, list or dict (of string keys) of them, copied into `st`
/// (`carry`). Several outcomes (a random choice) join as the outcomes of a `__getitem__` do,
/// when they hold no list or dict; anything else, or no outcome (it raises), is Unknown.
fn run_user(cx: &mut dyn ModelCtx, st: &mut State, f: &Value, x: Value, span: Span) -> Value {
    if !user_callable(cx, st, f) {
        return Value::Unknown;
    }
    let mut inner = st.clone();
    let arg = match &x {
        Value::Tensor(_) => x.clone(),
        v if is_pil(v) => {
            let attrs = BTreeMap::from([(Rc::from(PIL_IMAGE), x.clone())]);
            Value::Ref(inner.alloc(Obj::Namespace { kind: Rc::from(PIL), attrs }))
        }
        _ => return Value::Unknown,
    };
    let results = cx.call(f.clone(), vec![arg], Vec::new(), inner, span);
    if results.is_empty() || results.len() > MAX_OUTCOMES {
        return Value::Unknown;
    }
    if let [(from, v)] = &results[..] {
        return carry(from, st, v, 0).unwrap_or(Value::Unknown);
    }
    let mut joined: Option<Value> = None;
    for (from, v) in &results {
        let mut scratch = st.clone();
        let Some(v) = carry(from, &mut scratch, v, 0) else { return Value::Unknown };
        if refers_to_objects(&v) {
            return Value::Unknown;
        }
        joined = match joined {
            None => Some(v),
            Some(j) => match join_sample(cx, st, &j, &v) {
                Some(v) => Some(v),
                None => return Value::Unknown,
            },
        };
    }
    joined.unwrap_or(Value::Unknown)
}

/// A value a user transform returned on the path `from`, made of tensors and PIL images (the
/// namespace `run_user` handed in, back to its tuple), in tuples, lists and dicts of string
/// keys: the same value on the path `to`, its lists and dicts new objects there and its
/// tensors of their shapes as `from` resolves them (what else a tensor carries, its graph and
/// provenance, stays behind). `None` for anything else.
fn carry(from: &State, to: &mut State, v: &Value, depth: usize) -> Option<Value> {
    if depth > 4 {
        return None;
    }
    match v {
        Value::Tensor(t) => {
            let shape = from.resolve(&t.shape);
            Some(keep_untracked(on(tensor_value(shape, t.dtype), t.device), t.grad.clone()))
        }
        Value::Tuple(items) => {
            let items = items.iter().map(|i| carry(from, to, i, depth + 1)).collect::<Option<Vec<_>>>()?;
            Some(Value::Tuple(Rc::new(items)))
        }
        Value::Ref(id) => match from.get(*id).clone() {
            Obj::Namespace { kind, attrs } if &*kind == PIL => attrs.get(PIL_IMAGE).filter(|p| is_pil(p)).cloned(),
            Obj::List(items) if !items.is_empty() => {
                let items = items.iter().map(|i| carry(from, to, i, depth + 1)).collect::<Option<Vec<_>>>()?;
                Some(Value::Ref(to.alloc(Obj::List(items))))
            }
            Obj::Dict(kvs) if !kvs.is_empty() && kvs.iter().all(|(k, _)| matches!(k, Value::Str(Some(_)))) => {
                let kvs = kvs.iter().map(|(k, v)| Some((k.clone(), carry(from, to, v, depth + 1)?))).collect::<Option<Vec<_>>>()?;
                Some(Value::Ref(to.alloc(Obj::Dict(kvs))))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A call of a transform object from user code (`self.transform(x)` in a user transform or a
/// `__getitem__`): on a PIL image (the namespace `run_user` handed in) or a tensor, as the
/// dataset would apply it (`apply_transform`); a PIL image it returns is again such a
/// namespace. Anything else, or other arguments, is Unknown.
pub fn call_transform(cx: &mut dyn ModelCtx, st: State, t: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let ([x], true) = (&args[..], kwargs.is_empty()) else { return vec![(st, Value::Unknown)] };
    let x = match x {
        Value::Tensor(_) => x.clone(),
        Value::Ref(id) => match st.get(*id) {
            Obj::Namespace { kind, attrs } if &**kind == PIL => match attrs.get(PIL_IMAGE) {
                Some(p) if is_pil(p) => p.clone(),
                _ => return vec![(st, Value::Unknown)],
            },
            _ => return vec![(st, Value::Unknown)],
        },
        _ => return vec![(st, Value::Unknown)],
    };
    let v = match apply_transform(cx, &mut st, &t, x, span) {
        p if is_pil(&p) => {
            let attrs = BTreeMap::from([(Rc::from(PIL_IMAGE), p)]);
            Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(PIL), attrs }))
        }
        v => v,
    };
    vec![(st, v)]
}

/// Whether `v` is a transform object (`torchvision.transforms.*`) the model built.
pub fn is_transform(st: &State, v: &Value) -> bool {
    matches!(v, Value::Ref(id) if matches!(st.get(*id), Obj::Namespace { kind, .. } if &**kind == "Transform"))
}

/// Whether `RandomCrop` of `(th, tw)` fits the image `h x w` after its padding (or pads as needed).
fn random_crop_fits(st: &State, t: &Value, h: &Value, w: &Value, th: &Value, tw: &Value) -> bool {
    if matches!(ns_attr(st, t, "Transform", "pad_if_needed"), Some(Value::Bool(true))) {
        return true;
    }
    let Some(Value::Tuple(p)) = ns_attr(st, t, "Transform", "padding") else { return false };
    let k = |v: &Value| v.as_const_int();
    match (k(h), k(w), k(th), k(tw), k(&p[0]), k(&p[1]), k(&p[2]), k(&p[3])) {
        (Some(h), Some(w), Some(th), Some(tw), Some(l), Some(tp), Some(r), Some(bt)) => h + tp + bt >= th && w + l + r >= tw,
        _ => false,
    }
}
