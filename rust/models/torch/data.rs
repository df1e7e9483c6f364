//! `torch.utils.data` (TensorDataset, DataLoader, user Dataset subclasses) and torchvision
//! datasets and transforms: what one batch looks like.
//!
//! A loop over a DataLoader runs one generalised iteration whose batch is the *first* batch:
//! `min(batch_size, len(dataset))` samples when the length is known, else `batch_size`
//! (a fresh symbol when unknown). The first batch is exact for every run that enters the
//! loop, so a report inside the loop body holds for every such run.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::models::bind;
use super::tensor::tensor_value;
use crate::models::ctx::ModelCtx;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::shape::Poly;

fn ns(st: &mut State, kind: &str, attrs: Vec<(&str, Value)>) -> Value {
    let attrs: BTreeMap<Name, Value> = attrs.into_iter().map(|(k, v)| (Rc::from(k), v)).collect();
    Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(kind), attrs }))
}

fn ns_attr(st: &State, v: &Value, kind: &str, attr: &str) -> Option<Value> {
    let Value::Ref(id) = v else { return None };
    match st.get(*id) {
        Obj::Namespace { kind: k, attrs } if &**k == kind => attrs.get(attr).cloned(),
        _ => None,
    }
}

pub fn is_data_ns(st: &State, v: &Value) -> bool {
    matches!(v, Value::Ref(id) if matches!(st.get(*id), Obj::Namespace { kind, .. } if matches!(&**kind, "Dataset" | "DataLoader" | "Transform")))
}

/// `torch.utils.data.X(...)`.
pub fn utils_data(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, _span: Span) -> Vals {
    let mut st = st;
    match f {
        "TensorDataset" => {
            let mut items = Vec::new();
            let mut len: Option<Poly> = None;
            for a in &args {
                let Value::Tensor(t) = a else { return vec![(st, Value::Unknown)] };
                let s = st.resolve(&t.shape);
                if s.prefix.is_some() || s.dims.is_empty() {
                    return vec![(st, Value::Unknown)];
                }
                if len.is_none() {
                    len = s.dims[0].v.clone();
                }
                items.push(tensor_value(Shape::known(s.dims[1..].to_vec()), t.dtype));
            }
            let item = Value::Tuple(Rc::new(items));
            let len = len.map(Value::Int).unwrap_or(Value::Unknown);
            vec![(st.clone(), ns(&mut st, "Dataset", vec![("item", item), ("len", len)]))]
                .into_iter()
                .map(|(_, v)| v)
                .map(|v| (st.clone(), v))
                .collect()
        }
        "DataLoader" => {
            let b = bind(&["dataset", "batch_size", "shuffle"], &args, &kwargs);
            let Some(ds) = b.get("dataset").cloned() else { return vec![(st, Value::Unknown)] };
            let bs = match b.get("batch_size") {
                None => Value::int(1),
                Some(Value::None) => return vec![(st, Value::Unknown)],
                Some(v) => v.clone(),
            };
            if kwargs.iter().any(|(k, _)| matches!(&**k, "collate_fn" | "batch_sampler")) {
                return vec![(st, Value::Unknown)];
            }
            let drop_last = match kwargs.iter().find(|(k, _)| &**k == "drop_last").map(|(_, v)| v) {
                None | Some(Value::Bool(false)) => Value::Bool(false),
                Some(Value::Bool(true)) => Value::Bool(true),
                Some(_) => return vec![(st, Value::Unknown)],
            };
            let v = ns(&mut st, "DataLoader", vec![("dataset", ds), ("batch_size", bs), ("drop_last", drop_last)]);
            vec![(st, v)]
        }
        "random_split" | "Subset" => vec![(st, Value::Unknown)],
        _ => {
            let _ = cx;
            vec![(st, Value::Unknown)]
        }
    }
}

/// torchvision datasets: the per-sample value after the transform.
pub fn torchvision(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, _span: Span) -> Vals {
    let mut st = st;
    let name = f.rsplit('.').next().unwrap_or(f);
    if f.starts_with("transforms.") {
        return transform(cx, st, name, args, kwargs);
    }
    if f == "datasets.FakeData" {
        let b = bind(&["size", "image_size", "num_classes", "transform"], &args, &kwargs);
        let size = match b.get("size") {
            None => Value::int(1000),
            Some(v) => v.clone(),
        };
        let chw: Option<Vec<Value>> = match b.get("image_size") {
            None => Some(vec![Value::int(3), Value::int(224), Value::int(224)]),
            Some(Value::Tuple(t)) if t.len() == 3 => Some(t.as_ref().clone()),
            _ => None,
        };
        let img = match (chw, b.get("transform")) {
            (Some(chw), Some(t)) if !matches!(t, Value::None) => {
                let pil = Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), chw[0].clone(), chw[1].clone(), chw[2].clone()]));
                apply_transform(cx, &st, t, pil)
            }
            _ => Value::Unknown,
        };
        let item = Value::Tuple(Rc::new(vec![img, Value::Str(Some(Rc::from("<label>")))]));
        let v = ns(&mut st, "Dataset", vec![("item", item), ("len", size)]);
        return vec![(st, v)];
    }
    let (c, h, w, train_len, test_len): (i128, i128, i128, i128, i128) = match name {
        "MNIST" | "FashionMNIST" | "KMNIST" => (1, 28, 28, 60000, 10000),
        "CIFAR10" | "CIFAR100" => (3, 32, 32, 50000, 10000),
        "SVHN" => (3, 32, 32, 73257, 26032),
        _ => return vec![(st, Value::Unknown)],
    };
    if !f.starts_with("datasets.") {
        return vec![(st, Value::Unknown)];
    }
    let b = bind(&["root", "train", "transform"], &args, &kwargs);
    let train = match b.get("train") {
        None => Some(true),
        Some(Value::Bool(t)) => Some(*t),
        _ => None,
    };
    let len = match (name, train) {
        ("SVHN", _) | (_, None) => Value::Unknown,
        (_, Some(true)) => Value::int(train_len),
        (_, Some(false)) => Value::int(test_len),
    };
    // a PIL image through the transform pipeline
    let image = Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), Value::int(c), Value::int(h), Value::int(w)]));
    let img = match b.get("transform") {
        None | Some(Value::None) => Value::Unknown,
        Some(t) => apply_transform(cx, &st, t, image),
    };
    let label = Value::int(0);
    let label = match label {
        Value::Int(_) => Value::Str(Some(Rc::from("<label>"))),
        v => v,
    };
    let item = Value::Tuple(Rc::new(vec![img, label]));
    let v = ns(&mut st, "Dataset", vec![("item", item), ("len", len)]);
    vec![(st, v)]
}

fn transform(cx: &mut dyn ModelCtx, st: State, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>) -> Vals {
    let mut st = st;
    let _ = cx;
    let steps: Vec<Value> = match name {
        "Compose" => match args.first().and_then(|a| cx.iterate(&mut st, a, Span::default())) {
            Some(items) => items,
            None => return vec![(st, Value::Unknown)],
        },
        _ => Vec::new(),
    };
    let mut attrs = vec![("name", Value::Str(Some(Rc::from(name))))];
    if name == "Compose" {
        attrs.push(("steps", Value::Tuple(Rc::new(steps))));
    }
    let b = bind(&["size"], &args, &kwargs);
    if let Some(size) = b.get("size") {
        attrs.push(("size", size.clone()));
    }
    let v = ns(&mut st, "Transform", attrs);
    vec![(st, v)]
}

/// Apply a transform to a sample: PIL images are `("<pil>", C, H, W)` tuples until `ToTensor`.
fn apply_transform(cx: &dyn ModelCtx, st: &State, t: &Value, x: Value) -> Value {
    let Some(Value::Str(Some(name))) = ns_attr(st, t, "Transform", "name") else { return Value::Unknown };
    let pil = |v: &Value| -> Option<(Value, Value, Value)> {
        match v {
            Value::Tuple(p) if p.len() == 4 && p[0].as_str() == Some("<pil>") => Some((p[1].clone(), p[2].clone(), p[3].clone())),
            _ => None,
        }
    };
    match &*name {
        "Compose" => {
            let Some(Value::Tuple(steps)) = ns_attr(st, t, "Transform", "steps") else { return Value::Unknown };
            let mut x = x;
            for s in steps.iter() {
                x = apply_transform(cx, st, s, x);
            }
            x
        }
        "ToTensor" | "PILToTensor" => match pil(&x) {
            Some((c, h, w)) => {
                let dims = [c, h, w].iter().map(|v| v.as_int().map(|p| Dim::known(p.clone(), None)).unwrap_or_else(Dim::unknown)).collect();
                tensor_value(Shape::known(dims), Some(if &*name == "ToTensor" { DType::Float } else { DType::Other }))
            }
            None => Value::Unknown,
        },
        "Resize" | "CenterCrop" | "RandomCrop" | "RandomResizedCrop" => {
            let size = ns_attr(st, t, "Transform", "size");
            let hw = match &size {
                Some(Value::Int(p)) if &*name != "Resize" || true => {
                    if &*name == "Resize" {
                        // Resize(int) keeps the aspect ratio: only square inputs are exact
                        match pil(&x) {
                            Some((_, h, w)) if h == w => Some((Value::Int(p.clone()), Value::Int(p.clone()))),
                            _ => None,
                        }
                    } else {
                        Some((Value::Int(p.clone()), Value::Int(p.clone())))
                    }
                }
                Some(Value::Tuple(items)) if items.len() == 2 => Some((items[0].clone(), items[1].clone())),
                _ => None,
            };
            match (pil(&x), hw) {
                (Some((c, _, _)), Some((h, w))) => Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), c, h, w])),
                (None, _) if matches!(x, Value::Tensor(_)) => Value::Unknown,
                _ => Value::Unknown,
            }
        }
        "Grayscale" => match pil(&x) {
            Some((_, h, w)) => Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), Value::int(1), h, w])),
            None => Value::Unknown,
        },
        "Normalize" | "RandomHorizontalFlip" | "RandomVerticalFlip" | "ColorJitter" | "RandomRotation" | "RandomErasing" | "ConvertImageDtype"
        | "RandomAffine" | "AutoAugment" | "RandAugment" | "TrivialAugmentWide" => x,
        _ => Value::Unknown,
    }
}

/// The batches a full pass over a DataLoader sees: the full batch and, when the dataset's
/// length is not a multiple of the batch size (and `drop_last` is off), the last, smaller
/// batch, as a second path with the expressible condition `batch == last size`. `None` when
/// this is not a DataLoader or there is nothing to split.
pub fn batches_of(cx: &mut dyn ModelCtx, st: &State, loader: &Value, full_run: bool) -> Option<Vals> {
    if !full_run {
        return None;
    }
    if let Value::LibMethod(inner, name) = loader {
        if &**name == "<enumerate>" {
            let vals = batches_of(cx, st, inner, full_run)?;
            return Some(vals.into_iter().map(|(s, v)| (s, Value::Tuple(Rc::new(vec![Value::Unknown, v])))).collect());
        }
    }
    let ds = ns_attr(st, loader, "DataLoader", "dataset")?;
    let bs = ns_attr(st, loader, "DataLoader", "batch_size")?.as_const_int()?;
    if matches!(ns_attr(st, loader, "DataLoader", "drop_last"), Some(Value::Bool(true))) {
        return None;
    }
    let mut st0 = st.clone();
    let (item, len) = sample_of(cx, &mut st0, &ds)?;
    let n = len.as_ref().and_then(|l| l.as_const())?;
    if bs <= 0 || n <= bs || n % bs == 0 {
        return None;
    }
    let last = n % bs;
    let batch = cx.fresh_sym("batch", 1);
    let mut out = Vec::new();
    for size in [bs, last] {
        let mut s = st0.clone();
        let cond = crate::shape::Cond::cmp(&batch, crate::shape::Rel::Eq, &Poly::constant(size))?;
        if !cx.branch(&mut s, cond) {
            continue;
        }
        let b = Dim::known(batch.clone(), None);
        let v = collate(&s, &item, &b);
        out.push((s, v));
    }
    Some(out)
}

/// The first batch of a DataLoader, or one sample of a dataset.
pub fn batch_of(cx: &mut dyn ModelCtx, st: &mut State, loader: &Value) -> Option<Value> {
    let ds = ns_attr(st, loader, "DataLoader", "dataset")?;
    let bs = ns_attr(st, loader, "DataLoader", "batch_size")?;
    let drop_last = matches!(ns_attr(st, loader, "DataLoader", "drop_last"), Some(Value::Bool(true)));
    let (item, len) = sample_of(cx, st, &ds)?;
    if drop_last {
        // every batch is full; with fewer samples than a batch the loop never runs
        let (Value::Int(p), Some(n)) = (&bs, len.as_ref().and_then(|l| l.as_const())) else {
            return match &bs {
                Value::Int(p) if len.is_none() => Some(collate(st, &item, &Dim::known(p.clone(), None))),
                _ => None,
            };
        };
        return match p.as_const() {
            Some(bc) if bc <= n => Some(collate(st, &item, &Dim::konst(bc))),
            _ => None,
        };
    }
    let b = match (&bs, len.as_ref().and_then(|l| l.as_const())) {
        (Value::Int(p), Some(n)) => match p.as_const() {
            Some(bc) => Dim::konst(bc.min(n)),
            None => Dim::known(p.clone(), None),
        },
        (Value::Int(p), None) => Dim::known(p.clone(), None),
        _ => cx.fresh_dim("batch"),
    };
    Some(collate(st, &item, &b))
}

fn sample_of(cx: &mut dyn ModelCtx, st: &mut State, ds: &Value) -> Option<(Value, Option<Poly>)> {
    if let Some(item) = ns_attr(st, ds, "Dataset", "item") {
        let len = ns_attr(st, ds, "Dataset", "len").and_then(|l| l.as_int().cloned());
        return Some((item, len));
    }
    // a user Dataset subclass: one call of __getitem__
    let Value::Ref(id) = ds else { return None };
    let Obj::Instance { class, .. } = st.get(*id) else { return None };
    let class = *class;
    let (_, Value::Func(getitem)) = cx.class_lookup(st, class, "__getitem__")? else { return None };
    let idx = Value::Int(cx.fresh_sym("idx", 0));
    let results = cx.call_closure(&getitem, vec![ds.clone(), idx], Vec::new(), st.clone(), Span::default());
    if results.len() != 1 {
        return None;
    }
    let (s2, v) = results.into_iter().next()?;
    *st = s2;
    Some((v, None))
}

/// Stack samples into a batch of `b`, as the default collate function does.
fn collate(st: &State, item: &Value, b: &Dim) -> Value {
    match item {
        Value::Tensor(t) => {
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() {
                return Value::Unknown;
            }
            let mut dims = vec![b.clone()];
            dims.extend(s.dims);
            tensor_value(Shape::known(dims), t.dtype)
        }
        Value::Int(_) | Value::Bool(_) => tensor_value(Shape::known(vec![b.clone()]), Some(DType::Long)),
        Value::Str(Some(s)) if &**s == "<label>" => tensor_value(Shape::known(vec![b.clone()]), Some(DType::Long)),
        Value::Float(_) => tensor_value(Shape::known(vec![b.clone()]), Some(DType::Double)),
        Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|i| collate(st, i, b)).collect())),
        _ => Value::Unknown,
    }
}

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[crate::models::registry::Decl] = &[];
