//! `torch.utils.data` (TensorDataset, DataLoader, user Dataset subclasses) and torchvision
//! datasets: what one batch looks like (the transforms are in `transforms.rs`).
//!
//! A loop over a DataLoader runs one generalised iteration whose batch is the *first* batch:
//! `min(batch_size, len(dataset))` samples when the length is known, else `batch_size`
//! (a fresh symbol when unknown). The first batch is exact for every run that enters the
//! loop, so a report inside the loop body holds for every such run.
//!
//! A dataset's sample is what its transform makes of the image (`transforms.rs`: torchvision
//! transforms, and user callables run on the sample). The default collate stacks a sample into
//! a batch as torch's `default_collate` does: a tuple item by item, a list into a list of
//! batches (a user transform's two views), a dict into a dict of batches.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::models::bind;
use crate::models::registry::{self, Api, ApiKind, Decl, ParamKind};
use super::tensor::tensor_value;
use super::transforms::{apply_transform, holds_pil, is_pil, transform, user_callable};

/// A tensor value on a device.
pub(super) fn on(v: Value, device: Option<Device>) -> Value {
    match v {
        Value::Tensor(t) => Value::Tensor(Rc::new((*t).clone().on(device))),
        v => v,
    }
}
use crate::models::ctx::ModelCtx;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::shape::Poly;

/// A modelled object of `kind` (`Dataset`, `PackedSequence`, `Optimizer`) with these attributes.
pub(in crate::models::torch) fn ns(st: &mut State, kind: &str, attrs: Vec<(&str, Value)>) -> Value {
    let attrs: BTreeMap<Name, Value> = attrs.into_iter().map(|(k, v)| (Rc::from(k), v)).collect();
    Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(kind), attrs }))
}

pub(super) fn ns_attr(st: &State, v: &Value, kind: &str, attr: &str) -> Option<Value> {
    let Value::Ref(id) = v else { return None };
    match st.get(*id) {
        Obj::Namespace { kind: k, attrs } if &**k == kind => attrs.get(attr).cloned(),
        _ => None,
    }
}

pub fn is_data_ns(st: &State, v: &Value) -> bool {
    matches!(v, Value::Ref(id) if matches!(st.get(*id), Obj::Namespace { kind, .. } if matches!(&**kind, "Dataset" | "DataLoader" | "Transform")))
}

/// `len(v)` of a dataset (its number of samples) or a DataLoader (its number of batches),
/// when known.
pub fn len_of(st: &State, v: &Value) -> Option<Poly> {
    if let Some(n) = ns_attr(st, v, "Dataset", "len") {
        return n.as_int().cloned();
    }
    let ds = ns_attr(st, v, "DataLoader", "dataset")?;
    let n = len_of(st, &ds)?.as_const()?;
    let bs = ns_attr(st, v, "DataLoader", "batch_size")?.as_const_int()?;
    let drop_last = matches!(ns_attr(st, v, "DataLoader", "drop_last"), Some(Value::Bool(true)));
    if bs <= 0 {
        return None;
    }
    Some(Poly::constant(if drop_last { n / bs } else { (n + bs - 1) / bs }))
}

/// `obj.name = v` on a namespace of this family: the dataset's sample (a new
/// `target_transform`: its label) and length, the
/// loader's dataset and the transform's operation were computed from the constructor's
/// arguments, and the store may change any of them (`ds.target_transform = multi_hot`,
/// `ds.data = ds.data[:100]`, `tf.size = 64`): they become Unknown. (torch refuses a store
/// of `batch_size` or `drop_last` on a DataLoader; a loader with an Unknown dataset has no
/// modelled batch either way.) Other namespaces are left alone.
pub fn attr_stored(kind: &str, attrs: &mut BTreeMap<Name, Value>, name: &str) {
    // a new target transform changes the label only (`sample`: the image is known here)
    if (kind, name) == ("Dataset", "target_transform") {
        if let Some(Value::Tuple(item)) = attrs.get("item") {
            if item.len() == 2 {
                let img = item[0].clone();
                attrs.insert(Rc::from("item"), Value::Tuple(Rc::new(vec![img, Value::Unknown])));
                return;
            }
        }
    }
    let modelled: &[&str] = match kind {
        "Dataset" => &["item", "len", FILES],
        "DataLoader" => &["dataset", "batch_size", "drop_last"],
        "Transform" => &["name"],
        _ => return,
    };
    for k in modelled {
        attrs.insert(Rc::from(*k), Value::Unknown);
    }
}

/// The registry entry of a `torch.utils.data.*` or `torchvision.{transforms,datasets}.*` path,
/// also under the submodule that defines it (`torchvision.datasets.mnist.MNIST`,
/// `torchvision.transforms.transforms.Compose`); other spellings (`torchvision.transforms.v2`,
/// `torch.utils.data.dataloader.DataLoader`) are not modelled.
pub fn resolve(path: &str) -> Option<&'static Api> {
    let (prefix, last) = path.rsplit_once('.')?;
    if let Some(api) = registry::lookup_in(prefix, last) {
        return Some(api);
    }
    let (package, sub) = prefix.rsplit_once('.')?;
    if !matches!(package, "torchvision.transforms" | "torchvision.datasets") {
        return None;
    }
    let api = registry::lookup_in(package, last)?;
    (defining_module(api.name) == Some(sub)).then_some(api)
}

/// The submodule of `torchvision.transforms` / `torchvision.datasets` that defines an entry.
fn defining_module(name: &str) -> Option<&'static str> {
    let last = name.rsplit('.').next()?;
    Some(match last {
        "AutoAugment" | "RandAugment" | "TrivialAugmentWide" => "autoaugment",
        _ if name.starts_with("torchvision.transforms.") => "transforms",
        "FakeData" => "fakedata",
        "MNIST" | "FashionMNIST" | "KMNIST" => "mnist",
        "CIFAR10" | "CIFAR100" => "cifar",
        "SVHN" => "svhn",
        "ImageFolder" => "folder",
        _ => return None,
    })
}

/// Bind a call's arguments to an entry's parameters (positional ones in order, then keywords),
/// as Python would; the call was checked with `Api::accepts`.
pub(in crate::models::torch) fn bind_api(api: &Api, args: &[Value], kwargs: &[(Name, Value)]) -> BTreeMap<&'static str, Value> {
    let positional: Vec<&'static str> = api.params.iter().filter(|p| p.kind == ParamKind::Positional).map(|p| p.name).collect();
    bind(&positional, args, kwargs).into_iter().chain(kwargs.iter().filter_map(|(k, v)| api.params.iter().find(|p| p.name == &**k).map(|p| (p.name, v.clone())))).collect()
}

/// `torch.utils.data.X(...)`.
pub fn utils_data(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, _span: Span) -> Vals {
    let mut st = st;
    let Some(api) = resolve(path) else { return vec![(st, Value::Unknown)] };
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let b = bind_api(api, &args, &kwargs);
    match api.short_name() {
        "TensorDataset" => {
            let mut items = Vec::new();
            // the common length of the tensors: `None` while not known (an unknown first dim)
            let mut len: Option<Poly> = None;
            let mut unknown_len = false;
            for a in &args {
                // an argument not known to be a tensor of known rank: its part of a sample is
                // Unknown (a wrong one raises here, before any batch exists)
                let Value::Tensor(t) = a else {
                    items.push(Value::Unknown);
                    continue;
                };
                let s = st.resolve(&t.shape);
                if s.dims.is_empty() && s.prefix.is_none() {
                    return vec![(st, Value::Unknown)];
                }
                if s.prefix.is_some() {
                    // a tensor of unknown rank: samples of unknown shape, of its dtype and device
                    let shape = cx.any_shape();
                    items.push(keep_untracked(on(tensor_value(shape, t.dtype), t.device), t.grad));
                    continue;
                }
                // torch refuses tensors of different lengths (Size mismatch between tensors)
                match (&len, &s.dims[0].v) {
                    (_, None) => unknown_len = true,
                    (None, Some(d)) => len = Some(d.clone()),
                    (Some(a), Some(b)) if a == b => {}
                    _ => return vec![(st, Value::Unknown)],
                }
                items.push(keep_untracked(on(tensor_value(Shape::known(s.dims[1..].to_vec()), t.dtype), t.device), t.grad));
            }
            let item = Value::Tuple(Rc::new(items));
            let len = len.filter(|_| !unknown_len).map(Value::Int).unwrap_or(Value::Unknown);
            // `ds.tensors` is the tuple of the tensors given, as torch keeps it
            let tensors = Value::Tuple(Rc::new(args.clone()));
            let v = ns(&mut st, "Dataset", vec![("item", item), ("len", len), ("tensors", tensors)]);
            vec![(st, v)]
        }
        "DataLoader" => {
            let Some(ds) = b.get("dataset").cloned() else { return vec![(st, Value::Unknown)] };
            let bs = match b.get("batch_size") {
                None => Value::int(1),
                Some(Value::None) => return vec![(st, Value::Unknown)],
                Some(v) => v.clone(),
            };
            // a sampler or batch sampler chooses how many samples a batch has
            if ["sampler", "batch_sampler"].iter().any(|k| b.contains_key(k)) {
                return vec![(st, Value::Unknown)];
            }
            // a user collate function makes the batch of a list of samples (`make_batch`)
            let collate_fn = match b.get("collate_fn") {
                None | Some(Value::None) => None,
                Some(f @ (Value::Func(_) | Value::Bound(..))) => Some(f.clone()),
                Some(_) => return vec![(st, Value::Unknown)],
            };
            let drop_last = match b.get("drop_last") {
                None | Some(Value::Bool(false)) => Value::Bool(false),
                Some(Value::Bool(true)) => Value::Bool(true),
                Some(_) => return vec![(st, Value::Unknown)],
            };
            let mut attrs = vec![("dataset", ds), ("batch_size", bs), ("drop_last", drop_last)];
            if let Some(f) = collate_fn {
                attrs.push(("collate_fn", f));
            }
            let v = ns(&mut st, "DataLoader", attrs);
            vec![(st, v)]
        }
        // the samples of another dataset: `indices` says how many
        "Subset" => {
            let (Some(ds), Some(indices)) = (b.get("dataset"), b.get("indices")) else { return vec![(st, Value::Unknown)] };
            let Some((item, n)) = sample_of(cx, &mut st, ds) else { return vec![(st, Value::Unknown)] };
            // the indices, when known: an index out of range raises when its sample is loaded
            let Some(idx) = cx.iterate(&mut st, indices, Span::default()) else { return vec![(st, Value::Unknown)] };
            if let Some(n) = n.as_ref().and_then(|n| n.as_const())
                && !idx.iter().all(|i| i.as_const_int().is_some_and(|i| -n <= i && i < n))
            {
                return vec![(st, Value::Unknown)];
            }
            let len = Value::int(idx.len() as i128);
            let v = ns(&mut st, "Dataset", vec![("item", item), ("len", len)]);
            vec![(st, v)]
        }
        // a list of Subsets of the lengths given (counts, or fractions of a known length)
        "random_split" => {
            let (Some(ds), Some(lengths)) = (b.get("dataset").cloned(), b.get("lengths").cloned()) else { return vec![(st, Value::Unknown)] };
            let Some(parts) = cx.iterate(&mut st, &lengths, Span::default()) else { return vec![(st, Value::Unknown)] };
            let mut st0 = st.clone();
            let Some((item, n)) = sample_of(cx, &mut st0, &ds) else { return vec![(st, Value::Unknown)] };
            let Some(lens) = split_lengths(&parts, n.as_ref().and_then(|n| n.as_const())) else { return vec![(st, Value::Unknown)] };
            let mut st = st0;
            let subsets = lens.into_iter().map(|l| ns(&mut st, "Dataset", vec![("item", item.clone()), ("len", l)])).collect();
            let v = Value::Ref(st.alloc(Obj::List(subsets)));
            vec![(st, v)]
        }
        // datasets one after the other: one sample that stands for each (`join_sample`)
        "ConcatDataset" => {
            let Some(dss) = b.get("datasets").and_then(|d| cx.iterate(&mut st, d, Span::default())) else { return vec![(st, Value::Unknown)] };
            let (mut item, mut len): (Option<Value>, Option<Poly>) = (None, Some(Poly::constant(0)));
            for d in &dss {
                let Some((i, l)) = sample_of(cx, &mut st, d) else { return vec![(st, Value::Unknown)] };
                item = match item {
                    None => Some(i),
                    Some(j) => match join_sample(cx, &st, &j, &i) {
                        Some(v) => Some(v),
                        None => return vec![(st, Value::Unknown)],
                    },
                };
                len = len.zip(l).and_then(|(a, b)| a.add(&b));
            }
            let Some(item) = item else { return vec![(st, Value::Unknown)] };
            let v = ns(&mut st, "Dataset", vec![("item", item), ("len", len.map(Value::Int).unwrap_or(Value::Unknown))]);
            vec![(st, v)]
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// torchvision datasets (the per-sample value after the transform) and transforms.
pub fn torchvision(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, _span: Span) -> Vals {
    let mut st = st;
    let Some(api) = resolve(path) else { return vec![(st, Value::Unknown)] };
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let name = api.short_name();
    let b = bind_api(api, &args, &kwargs);
    if api.kind == ApiKind::Module {
        return transform(cx, st, name, b);
    }
    // a target transform changes the label
    let label = match b.get("target_transform") {
        None | Some(Value::None) => Value::Str(Some(Rc::from("<label>"))),
        // FakeData hands its transform a 0-dim tensor and takes `.item()` of the result
        Some(_) if name == "FakeData" => Value::Unknown,
        Some(f) => target_of(cx, &st, f, _span),
    };
    if name == "FakeData" {
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
                apply_transform(cx, &mut st, t, pil, _span)
            }
            _ => Value::Unknown,
        };
        let item = sample(img, label, b.get("transform"));
        let v = ns(&mut st, "Dataset", vec![("item", item), ("len", size)]);
        return vec![(st, v)];
    }
    if name == "ImageFolder" {
        // RGB images of sizes the files decide (the default loader), a class index, and as
        // many samples as files: the crop or resize of the transform decides the size
        let image = Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<pil>"))), Value::int(3), Value::Unknown, Value::Unknown]));
        let img = match b.get("transform") {
            None | Some(Value::None) => Value::Unknown,
            Some(t) => apply_transform(cx, &mut st, t, image, _span),
        };
        let item = sample(img, label, b.get("transform"));
        // `.classes`: one name per class folder, as many as there are (torch finds at least one)
        let classes = Value::LibMethod(Box::new(Value::Str(None)), Rc::from("<repeat>"));
        let v = ns(&mut st, "Dataset", vec![("item", item), ("len", Value::Unknown), ("classes", classes), (FILES, Value::Bool(true))]);
        return vec![(st, v)];
    }
    let (c, h, w, train_len, test_len): (i128, i128, i128, i128, i128) = match name {
        "MNIST" | "FashionMNIST" | "KMNIST" => (1, 28, 28, 60000, 10000),
        "CIFAR10" | "CIFAR100" => (3, 32, 32, 50000, 10000),
        "SVHN" => (3, 32, 32, 73257, 26032),
        _ => return vec![(st, Value::Unknown)],
    };
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
        Some(t) => apply_transform(cx, &mut st, t, image, _span),
    };
    let item = sample(img, label, b.get("transform"));
    // (the length is the standard split's: the files on disk decide it, `SPLIT_BATCH`)
    let mut attrs = vec![("item", item), ("len", len.clone()), (SPLIT, Value::Bool(matches!(len, Value::Int(_))))];
    // the dataset's own attributes: the classes' names (`len(train_set.classes)` for a head),
    // and for the MNIST family the whole split as tensors (`.data` uint8 [N, 28, 28], `.targets`
    // [N]); CIFAR's are a numpy array and a list, not modelled (Unknown)
    let classes = match name {
        "CIFAR100" => 100,
        "SVHN" => 0,
        _ => 10,
    };
    if classes > 0 {
        let names = Value::Ref(st.alloc(Obj::List(vec![Value::Str(None); classes])));
        attrs.push(("classes", names));
    }
    if let (true, Value::Int(n)) = (name.ends_with("MNIST"), &len) {
        let n = Dim::known(n.clone(), None);
        attrs.push(("data", on(tensor_value(Shape::known(vec![n.clone(), Dim::konst(h), Dim::konst(w)]), Some(DType::Byte)), Some(Device::Cpu))));
        attrs.push(("targets", on(tensor_value(Shape::known(vec![n]), Some(DType::Long)), Some(Device::Cpu))));
    }
    let v = ns(&mut st, "Dataset", attrs);
    vec![(st, v)]
}

/// The lengths `random_split` gives: the counts themselves (which torch requires to add up to
/// the dataset's length), or for fractions (adding up to 1) of a known length `n`, each
/// `floor(n * f)`, then one more for each of the first splits, round-robin, until all `n` are
/// used. `None` when torch raises or the lengths are not known.
fn split_lengths(parts: &[Value], n: Option<i128>) -> Option<Vec<Value>> {
    if parts.is_empty() {
        return None;
    }
    if parts.iter().all(|p| matches!(p, Value::Int(_))) {
        let total = parts.iter().try_fold(Poly::constant(0), |acc, p| acc.add(p.as_int()?))?;
        if let (Some(n), Some(t)) = (n, total.as_const()) {
            if n != t {
                return None;
            }
        }
        return Some(parts.to_vec());
    }
    let fracs: Vec<f64> = parts.iter().map(|p| match p {
        Value::Float(Some(f)) if (0.0..=1.0).contains(f) => Some(*f),
        _ => None,
    }).collect::<Option<_>>()?;
    let n = n?;
    if (fracs.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
        return None;
    }
    let mut lens: Vec<i128> = fracs.iter().map(|f| (n as f64 * f).floor() as i128).collect();
    let rest = n - lens.iter().sum::<i128>();
    let k = lens.len() as i128;
    for i in 0..rest.max(0) {
        lens[(i % k) as usize] += 1;
    }
    Some(lens.into_iter().map(Value::int).collect())
}

/// The label a user `target_transform` makes of a class index (an int, at least 0, as the
/// MNIST and CIFAR datasets pass it): the
/// function is called on a copy of the path, whose changes are dropped (it runs per sample,
/// not here), so only a result that refers to no object is kept (a tensor, a number, a
/// tuple of them); anything else, or more than one outcome, is Unknown. Its checks run, and
/// report where every sample would fail.
fn target_of(cx: &mut dyn ModelCtx, st: &State, f: &Value, span: Span) -> Value {
    if !user_callable(cx, st, f) {
        return Value::Unknown;
    }
    let index = Value::Int(cx.fresh_int_sym("label", 0));
    let results = cx.call(f.clone(), vec![index], Vec::new(), st.clone(), span);
    let [(_, v)] = <[_; 1]>::try_from(results).unwrap_or_else(|_| [(State::new(), Value::Unknown)]);
    let refers = refers_to_objects(&v);
    let plain = |v: &Value| matches!(v, Value::Tensor(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_));
    match &v {
        _ if refers => Value::Unknown,
        Value::Tuple(items) if items.iter().all(plain) => v,
        v if plain(v) => v.clone(),
        _ => Value::Unknown,
    }
}

/// A dataset's `(image, label)`. A transform whose result is not modelled may raise (a tensor
/// transform on a PIL image, the wrong number of means), and then no sample exists at all: the
/// label is not known either.
fn sample(img: Value, label: Value, transform: Option<&Value>) -> Value {
    if img.is_unknown() && transform.is_some_and(|t| !matches!(t, Value::None)) {
        return Value::Unknown;
    }
    // a PIL image (no `ToTensor`): the default collate raises on it, so no batch is modelled
    if holds_pil(&img) {
        return Value::Unknown;
    }
    Value::Tuple(Rc::new(vec![img, label]))
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
    let bsv = ns_attr(st, loader, "DataLoader", "batch_size")?;
    if matches!(ns_attr(st, loader, "DataLoader", "drop_last"), Some(Value::Bool(true))) {
        return None;
    }
    let mut st0 = st.clone();
    let from_files = file_len(cx, &mut st0, &ds);
    let bs = match bsv.as_const_int() {
        Some(b) => b,
        None => return free_batches(cx, &st0, loader, &ds, bsv.as_int()?, from_files),
    };
    let (item, len) = sample_of(cx, &mut st0, &ds)?;
    let n = match len.as_ref().and_then(|l| l.as_const()) {
        Some(n) => n,
        None if from_files => return free_batches(cx, &st0, loader, &ds, &Poly::constant(bs), true),
        None => return None,
    };
    if bs <= 0 || n <= bs || n % bs == 0 {
        return None;
    }
    let last = n % bs;
    // the full batches and the last one all run: a branch on this size is not a choice
    let batch = cx.fresh_every_sym("batch", 1);
    let why = split_len(&st0, &ds).then(|| crate::value::Origin::said(SPLIT_BATCH));
    let mut out = Vec::new();
    for size in [bs, last] {
        let mut s = st0.clone();
        let cond = crate::shape::Cond::cmp(&batch, crate::shape::Rel::Eq, &Poly::constant(size))?;
        if !cx.branch(&mut s, cond) {
            continue;
        }
        let b = Dim::known(batch.clone(), why.clone());
        let v = make_batch(cx, &mut s, loader, &item, &b, Some(size));
        out.push((s, v));
    }
    Some(out)
}

/// A dataset's hidden mark: its samples are files (`ImageFolder`), so its length is what the
/// files make it (a store into the dataset clears it, `attr_stored`).
const FILES: &str = "<files>";

/// The SHP902 runs, a dataset whose length its files decide (`FILES`, length unknown): in the
/// free-parameter run its length becomes a free parameter (`ParamKind::Data`, named
/// `len(dataset)`, at least 1), in the concrete run of a counterexample that value; either is
/// stored as the dataset's length, so every later use on the path sees the same one. Whether
/// it did.
fn file_len(cx: &mut dyn ModelCtx, st: &mut State, ds: &Value) -> bool {
    const NAME: &str = "len(dataset)";
    if !matches!(ns_attr(st, ds, "Dataset", FILES), Some(Value::Bool(true))) {
        return false;
    }
    match ns_attr(st, ds, "Dataset", "len") {
        Some(Value::Unknown) => {}
        // made free by an earlier pass over the dataset on this path (a store would have
        // cleared the mark): the same length again
        Some(Value::Int(n)) => return cx.free_params() && n.as_const().is_none(),
        _ => return false,
    }
    let n = match cx.param_value(NAME) {
        Some(v) => Poly::constant(v.max(1)),
        None if cx.free_params() => {
            let s = cx.fresh_int_sym(NAME, 1);
            cx.set_param(&s, crate::shape::Param { name: NAME.to_string(), kind: crate::shape::ParamKind::Data, default: None });
            s
        }
        None => return false,
    };
    let Value::Ref(id) = ds else { return false };
    if let Obj::Namespace { attrs, .. } = st.get_mut(*id) {
        attrs.insert(Rc::from("len"), Value::Int(n));
    }
    true
}

/// The SHP902 run (`ModelCtx::free_params`), a batch size that is a free parameter, or a
/// dataset whose files decide its length (`file_len`), and a dataset of known or free length
/// `n`: the full batch (`bs <= n`) and the last one, `n % bs` samples (`n % bs != 0`), as two
/// paths.
fn free_batches(cx: &mut dyn ModelCtx, st: &State, loader: &Value, ds: &Value, bs: &Poly, files: bool) -> Option<Vals> {
    use crate::shape::{Cond, Rel, Tri};
    if !cx.free_params() || cx.poly_cmp(st, bs, Rel::Lt, &Poly::constant(1)) != Tri::False {
        return None;
    }
    let mut st0 = st.clone();
    let (item, len) = sample_of(cx, &mut st0, ds)?;
    let n = len.filter(|n| n.as_const().map_or(files, |n| n > 0))?;
    let rem = n.modulo(bs)?;
    let mut out = Vec::new();
    for (size, cond) in [(bs.clone(), Cond::cmp(bs, Rel::Le, &n)?), (rem.clone(), Cond::cmp(&rem, Rel::Ne, &Poly::constant(0))?)] {
        let mut s = st0.clone();
        if !cx.branch(&mut s, cond) {
            continue;
        }
        let v = make_batch(cx, &mut s, loader, &item, &Dim::known(size, None), None);
        out.push((s, v));
    }
    Some(out)
}

/// A standard dataset's hidden mark: its length is the standard split's (MNIST's 60,000), which
/// the files on disk decide.
const SPLIT: &str = "<split>";

/// Where a batch's size comes from when it follows from a standard split's length (`SPLIT`):
/// the checks reason on it; `shape-lint summary` does not show it as the size a run sees.
pub const SPLIT_BATCH: &str = "the batch size over the standard split's length (the files decide it)";

fn split_len(st: &State, ds: &Value) -> bool {
    matches!(ns_attr(st, ds, "Dataset", SPLIT), Some(Value::Bool(true)))
}

/// Where a batch's size comes from when the data's length is not known: the loader's batch
/// size, taken as every batch's (a dataset shorter than it, or the last batch, has fewer). The
/// checks reason on it; `shape-lint summary` does not show it as the size (`engine::summary`).
pub const FULL_BATCH_ASSUMED: &str = "the batch size (every batch taken as full: the data's length is not known)";

/// The first batch of a DataLoader, or one sample of a dataset.
pub fn batch_of(cx: &mut dyn ModelCtx, st: &mut State, loader: &Value) -> Option<Value> {
    let ds = ns_attr(st, loader, "DataLoader", "dataset")?;
    let bs = ns_attr(st, loader, "DataLoader", "batch_size")?;
    let drop_last = matches!(ns_attr(st, loader, "DataLoader", "drop_last"), Some(Value::Bool(true)));
    let (item, len) = sample_of(cx, st, &ds)?;
    if drop_last {
        // every batch is full; with fewer samples than a batch the loop never runs
        let (Value::Int(p), Some(n)) = (&bs, len.as_ref().and_then(|l| l.as_const())) else {
            // (a length not known, or symbolic: a batch the loop sees is full)
            return match &bs {
                Value::Int(p) if len.as_ref().is_none_or(|l| l.as_const().is_none()) => Some(make_batch(cx, st, loader, &item, &Dim::known(p.clone(), None), p.as_const())),
                _ => None,
            };
        };
        return match p.as_const() {
            Some(bc) if bc <= n => Some(make_batch(cx, st, loader, &item, &Dim::konst(bc), Some(bc))),
            _ => None,
        };
    }
    let b = match (&bs, len.as_ref().and_then(|l| l.as_const())) {
        // an empty dataset has no batch (a loop over it never runs)
        (_, Some(n)) if n <= 0 => return None,
        (Value::Int(p), Some(n)) => match p.as_const() {
            Some(bc) if split_len(st, &ds) => Dim::known(Poly::constant(bc.min(n)), Some(crate::value::Origin::said(SPLIT_BATCH))),
            Some(bc) => Dim::konst(bc.min(n)),
            None => Dim::known(p.clone(), Some(crate::value::Origin::said(FULL_BATCH_ASSUMED))),
        },
        (Value::Int(p), None) => Dim::known(p.clone(), Some(crate::value::Origin::said(FULL_BATCH_ASSUMED))),
        _ => cx.fresh_dim("batch"),
    };
    let count = b.as_const();
    Some(make_batch(cx, st, loader, &item, &b, count))
}

/// At most this many samples are handed to a user collate function (a longer batch is Unknown).
const MAX_COLLATED: i128 = 64;

/// The batch of `b` samples like `item` (`count` of them when that is a known number): the
/// default collation, or the loader's `collate_fn` called on a list of `count` samples. Each
/// sample in that list has the dims that every sample has (constant ones); a size that varies
/// per sample (a symbolic dim, a sequence's length) is unknown in each, as it is a different
/// number in each real sample. The collate function's one outcome is the batch; with several,
/// or a longer batch, the batch is Unknown.
fn make_batch(cx: &mut dyn ModelCtx, st: &mut State, loader: &Value, item: &Value, b: &Dim, count: Option<i128>) -> Value {
    let Some(f) = ns_attr(st, loader, "DataLoader", "collate_fn") else { return collate(cx, st, item, b) };
    let Some(n) = count.filter(|n| (1..=MAX_COLLATED).contains(n)) else { return Value::Unknown };
    let samples = (0..n).map(|_| per_sample(cx, st, item)).collect();
    let list = Value::Ref(st.alloc(Obj::List(samples)));
    match <[_; 1]>::try_from(cx.call(f, vec![list], Vec::new(), st.clone(), Span::default())) {
        Ok([(s2, v)]) => {
            *st = s2;
            v
        }
        _ => Value::Unknown,
    }
}

/// One sample as the collate function sees it: the dims of its tensors that are not constant
/// are unknown, and its ints that are not are ints of their own (they differ between samples);
/// its lists and dicts (of string keys) are objects of its own.
fn per_sample(cx: &mut dyn ModelCtx, st: &mut State, item: &Value) -> Value {
    match item {
        Value::Tensor(t) => {
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() {
                return Value::Unknown;
            }
            let dims = s.dims.iter().map(|d| if d.as_const().is_some() { d.clone() } else { Dim::unknown() }).collect();
            tensor_value(Shape::known(dims), t.dtype)
        }
        Value::Int(p) if p.as_const().is_none() => Value::Int(cx.fresh_int_sym("n", 0)),
        Value::Str(Some(s)) if &**s == "<label>" => Value::Unknown,
        Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|i| per_sample(cx, st, i)).collect())),
        Value::Ref(id) => match st.get(*id).clone() {
            Obj::List(items) => {
                let items = items.iter().map(|i| per_sample(cx, st, i)).collect();
                Value::Ref(st.alloc(Obj::List(items)))
            }
            Obj::Dict(kvs) if kvs.iter().all(|(k, _)| matches!(k, Value::Str(Some(_)))) => {
                let kvs = kvs.iter().map(|(k, v)| (k.clone(), per_sample(cx, st, v))).collect();
                Value::Ref(st.alloc(Obj::Dict(kvs)))
            }
            _ => item.clone(),
        },
        v => v.clone(),
    }
}

fn sample_of(cx: &mut dyn ModelCtx, st: &mut State, ds: &Value) -> Option<(Value, Option<Poly>)> {
    if let Some(item) = ns_attr(st, ds, "Dataset", "item") {
        let len = ns_attr(st, ds, "Dataset", "len").and_then(|l| l.as_int().cloned());
        return Some((item, len));
    }
    // a plain list (or tuple) of samples as the dataset: one sample standing for any of them
    // (`join_all`), as many as the list holds; alike items of unknown number: their item
    if let Value::LibMethod(inner, name) = ds
        && &**name == "<repeat>"
    {
        return Some(((**inner).clone(), None));
    }
    let items = match ds {
        Value::Tuple(items) => Some(items.as_ref().clone()),
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => Some(items.clone()),
            _ => None,
        },
        _ => None,
    };
    if let Some(items) = items {
        let item = join_items(cx, st, &items)?;
        return Some((item, Some(Poly::constant(items.len() as i128))));
    }
    // a user Dataset subclass: one call of __getitem__
    let Value::Ref(id) = ds else { return None };
    let Obj::Instance { class, .. } = st.get(*id) else { return None };
    let class = *class;
    let (_, Value::Func(getitem)) = cx.class_lookup(st, class, "__getitem__")? else { return None };
    // its length: `__len__`, when it gives one int on every path (its changes are not kept)
    let len = match cx.class_lookup(st, class, "__len__") {
        Some((_, Value::Func(f))) => match &cx.call_closure(&f, vec![ds.clone()], Vec::new(), st.clone(), Span::default())[..] {
            [(_, Value::Int(n))] => Some(n.clone()),
            _ => None,
        },
        _ => None,
    };
    let results = cx.call_sample(&getitem, ds.clone(), st.clone(), Span::default());
    if results.len() == 1 {
        let (s2, v) = results.into_iter().next()?;
        *st = s2;
        return Some((v, len));
    }
    // several outcomes (a random augmentation, a branch on the index): the sample that holds
    // for each of them, of plain values; their changes to the objects are not kept (they
    // happen per sample, in the loader's workers)
    let mut joined: Option<Value> = None;
    for (_, v) in &results {
        if refers_to_objects(v) {
            return None;
        }
        joined = Some(match joined {
            None => v.clone(),
            Some(j) => join_sample(cx, st, &j, v)?,
        });
    }
    Some((joined?, len))
}

/// One sample standing for each of the items of a list used as a dataset: tensors, numbers and
/// tuples join as `join_all` joins them; dicts of the same string keys join key by key, into a
/// new dict. None when the list is empty or its items do not join.
fn join_items(cx: &mut dyn ModelCtx, st: &mut State, items: &[Value]) -> Option<Value> {
    let dicts: Option<Vec<Vec<(Value, Value)>>> = items
        .iter()
        .map(|v| match v {
            Value::Ref(id) => match st.get(*id) {
                Obj::Dict(kvs) if kvs.iter().all(|(k, _)| matches!(k, Value::Str(Some(_)))) => Some(kvs.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    match dicts {
        Some(ds) if !ds.is_empty() => {
            let keys: Vec<Value> = ds[0].iter().map(|(k, _)| k.clone()).collect();
            if ds.iter().any(|d| d.len() != keys.len() || d.iter().zip(&keys).any(|((k, _), k0)| k != k0)) {
                return None;
            }
            let mut joined = Vec::new();
            for (i, k) in keys.into_iter().enumerate() {
                let vals: Vec<Value> = ds.iter().map(|d| d[i].1.clone()).collect();
                if vals.iter().any(refers_to_objects) {
                    return None;
                }
                joined.push((k, join_all(cx, st, &vals)?));
            }
            Some(Value::Ref(st.alloc(Obj::Dict(joined))))
        }
        _ => {
            if items.is_empty() || items.iter().any(refers_to_objects) {
                return None;
            }
            join_all(cx, st, items)
        }
    }
}

pub(super) fn refers_to_objects(v: &Value) -> bool {
    let mut refers = false;
    crate::value::gc::value_ids(v, &mut |_| refers = true);
    refers
}

/// One value that stands for any of `items` (a list indexed by an index not known: one of
/// them): [`join_sample`] over all of them, a dim that is not the same in every tensor a size
/// of its own. None when they do not join.
pub fn join_all(cx: &mut dyn ModelCtx, st: &State, items: &[Value]) -> Option<Value> {
    let (first, rest) = items.split_first()?;
    if rest.is_empty() {
        return Some(first.clone());
    }
    if let Value::Tensor(t0) = first {
        let s0 = st.resolve(&t0.shape);
        if s0.prefix.is_some() || t0.dtype.is_none() {
            return None;
        }
        let mut dims: Vec<Option<Dim>> = s0.dims.iter().map(|d| d.v.is_some().then(|| d.clone())).collect();
        for v in rest {
            let Value::Tensor(t) = v else { return None };
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() || s.dims.len() != s0.dims.len() || t.dtype != t0.dtype {
                return None;
            }
            for (d, e) in dims.iter_mut().zip(&s.dims) {
                if d.as_ref().is_some_and(|d| d.v != e.v) {
                    *d = None;
                }
            }
        }
        let dims = dims.into_iter().map(|d| d.unwrap_or_else(|| cx.fresh_dim("n"))).collect();
        let device = if rest.iter().all(|v| matches!(v, Value::Tensor(t) if t.device == t0.device)) { t0.device } else { None };
        return Some(on(tensor_value(Shape::known(dims), t0.dtype), device));
    }
    // ints: an int of its own, at least the least of them when all are known (labels)
    if items.iter().all(|v| matches!(v, Value::Int(_))) {
        if items.iter().all(|v| v == first) {
            return Some(first.clone());
        }
        let consts: Option<Vec<i128>> = items.iter().map(|v| v.as_const_int()).collect();
        let lo = consts.and_then(|cs| cs.into_iter().min()).unwrap_or(crate::shape::UNBOUNDED);
        return Some(Value::Int(cx.fresh_int_sym("label", lo)));
    }
    rest.iter().try_fold(first.clone(), |acc, v| join_sample(cx, st, &acc, v))
}

/// One sample that stands for two outcomes of `__getitem__`: equal values stay; tensors of one
/// rank and dtype keep the dims they agree on (the others are sizes of their own); two ints
/// are an int; tuples join item by item. `None` when they differ otherwise (a tensor against
/// a number, different ranks, dtypes or lengths): the batch is Unknown.
pub(super) fn join_sample(cx: &mut dyn ModelCtx, st: &State, a: &Value, b: &Value) -> Option<Value> {
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (Value::Tensor(_), Value::Tensor(_)) => join_all(cx, st, &[a.clone(), b.clone()]),
        // two known ints: an int at least the smaller (a label)
        (Value::Int(_), Value::Int(_)) => join_all(cx, st, &[a.clone(), b.clone()]),
        (Value::Float(_), Value::Float(_)) => Some(Value::Float(None)),
        (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => {
            let items = xs.iter().zip(ys.iter()).map(|(x, y)| join_sample(cx, st, x, y)).collect::<Option<Vec<_>>>()?;
            Some(Value::Tuple(Rc::new(items)))
        }
        _ => None,
    }
}

/// Stack samples into a batch of `b`, as the default collate function does.
fn collate(cx: &mut dyn ModelCtx, st: &mut State, item: &Value, b: &Dim) -> Value {
    match item {
        Value::Tensor(t) => {
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() {
                // samples of unknown rank: a batch of unknown shape, of their dtype and device
                return keep_untracked(on(tensor_value(cx.any_shape(), t.dtype), t.device), t.grad);
            }
            let mut dims = vec![b.clone()];
            dims.extend(s.dims);
            keep_untracked(on(tensor_value(Shape::known(dims), t.dtype), t.device), t.grad)
        }
        // numbers collate into CPU tensors
        Value::Int(_) | Value::Bool(_) => keep_untracked(on(tensor_value(Shape::known(vec![b.clone()]), Some(DType::Long)), Some(Device::Cpu)), Grad::Unknown),
        Value::Str(Some(s)) if &**s == "<label>" => keep_untracked(on(tensor_value(Shape::known(vec![b.clone()]), Some(DType::Long)), Some(Device::Cpu)), Grad::Unknown),
        Value::Float(_) => on(tensor_value(Shape::known(vec![b.clone()]), Some(DType::Double)), Some(Device::Cpu)),
        // a PIL image: the default collate raises
        v if is_pil(v) => Value::Unknown,
        Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|i| collate(cx, st, i, b)).collect())),
        // a list (a user transform's views `[v1, v2]`) becomes a list of batches, item by item
        Value::Ref(id) if matches!(st.get(*id), Obj::List(_)) => {
            let Obj::List(items) = st.get(*id).clone() else { return Value::Unknown };
            let batched = items.iter().map(|v| collate(cx, st, v, b)).collect();
            Value::Ref(st.alloc(Obj::List(batched)))
        }
        // a dict of string keys becomes a dict of batches, key by key (a new dict: each batch
        // is its own object)
        Value::Ref(id) if matches!(st.get(*id), Obj::Dict(items) if items.iter().all(|(k, _)| matches!(k, Value::Str(Some(_))))) => {
            let Obj::Dict(items) = st.get(*id).clone() else { return Value::Unknown };
            let batched = items.iter().map(|(k, v)| (k.clone(), collate(cx, st, v, b))).collect();
            Value::Ref(st.alloc(Obj::Dict(batched)))
        }
        // a NumPy array becomes a tensor of its dtype, then stacks
        Value::Ref(_) => match crate::models::numpy::array_of(st, item) {
            Some(a) => collate(cx, st, &on(Value::Tensor(a), Some(Device::Cpu)), b),
            None => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}

/// A sample or a batch stacked from tensors autograd does not record (a dataset's tensors made
/// without `requires_grad`; any integer tensor) is not recorded either (SHP309).
pub(super) fn keep_untracked(v: Value, from: Grad) -> Value {
    match v {
        Value::Tensor(t) => {
            let g = match (t.dtype, from) {
                (Some(d), _) if !d.is_floating() => Grad::Untracked(NoGrad::Constant, Span::default()),
                (_, g @ Grad::Untracked(..)) => g,
                _ => return Value::Tensor(t),
            };
            Value::Tensor(Rc::new(Tensor { grad: g, ..(*t).clone() }))
        }
        v => v,
    }
}

/// The APIs this family models, for the registry (`models/registry.rs`).
///
/// Parameters marked `~` cannot change a sample or a batch: the order of the samples
/// (`shuffle`, `generator`), how they are loaded (`num_workers`, `pin_memory`, `timeout`,
/// `worker_init_fn`, `multiprocessing_context`, `prefetch_factor`, `persistent_workers`,
/// `in_order`, `root`, `download`), random parameters of a transform that keeps the image's
/// size (`p`, `degrees`, `scale`, `brightness`, ...), and the interpolation. Some of them are
/// validated when the object is constructed (a negative `num_workers`, `prefetch_factor`
/// without workers, a negative `degrees`, a missing dataset without `download`): that
/// ValueError ends the run before any sample exists, so no batch the model gives is wrong.
pub const APIS: &[Decl] = &[
    Decl::function("torch.utils.data.TensorDataset", "*tensors"),
    Decl::function("torch.utils.data.Subset", "dataset, indices"),
    Decl::function("torch.utils.data.random_split", "dataset, lengths, ~generator=None"),
    Decl::function("torch.utils.data.ConcatDataset", "datasets"),
    Decl::function(
        "torch.utils.data.DataLoader",
        "dataset, batch_size=1, ~shuffle=None, sampler=None, batch_sampler=None, ~num_workers=0, collate_fn=None, ~pin_memory=False, drop_last=False, ~timeout=0, ~worker_init_fn=None, ~multiprocessing_context=None, ~generator=None, *, ~prefetch_factor=None, ~persistent_workers=False, ~pin_memory_device=\"\", ~in_order=True",
    ),
    // datasets: one sample (image after `transform`, label) and the length
    Decl::function("torchvision.datasets.FakeData", "size=1000, image_size=(3, 224, 224), ~num_classes=10, transform=None, target_transform=None, ~random_offset=0"),
    Decl::function("torchvision.datasets.MNIST", "~root, train=True, transform=None, target_transform=None, ~download=False"),
    Decl::function("torchvision.datasets.FashionMNIST", "~root, train=True, transform=None, target_transform=None, ~download=False"),
    Decl::function("torchvision.datasets.KMNIST", "~root, train=True, transform=None, target_transform=None, ~download=False"),
    Decl::function("torchvision.datasets.CIFAR10", "~root, train=True, transform=None, target_transform=None, ~download=False"),
    Decl::function("torchvision.datasets.CIFAR100", "~root, train=True, transform=None, target_transform=None, ~download=False"),
    // the length of a split is not modelled (Unknown for every split)
    Decl::function("torchvision.datasets.SVHN", "~root, ~split=\"train\", transform=None, target_transform=None, ~download=False"),
    // the default loader's RGB images (a custom `loader` is not modelled); the number of files
    // is not known
    Decl::function("torchvision.datasets.ImageFolder", "~root, transform=None, target_transform=None, ~is_valid_file=None, ~allow_empty=False"),
    // transforms: applied to a dataset's PIL image (a direct call is not modelled)
    Decl::module("torchvision.transforms.Compose", "transforms", "img"),
    Decl::module("torchvision.transforms.ToTensor", "", "pic"),
    Decl::module("torchvision.transforms.PILToTensor", "", "pic"),
    Decl::module("torchvision.transforms.Normalize", "mean, std, ~inplace=False", "tensor"),
    // `max_size` is read: only its default is modelled
    Decl::module("torchvision.transforms.Resize", "size, ~interpolation=InterpolationMode.BILINEAR, max_size=None, ~antialias=True", "img"),
    Decl::module("torchvision.transforms.CenterCrop", "size", "img"),
    Decl::module("torchvision.transforms.RandomCrop", "size, padding=None, pad_if_needed=False, fill=0, padding_mode=\"constant\"", "img"),
    Decl::module("torchvision.transforms.RandomResizedCrop", "size, ~scale=(0.08, 1.0), ~ratio=(0.75, 1.3333333333333333), ~interpolation=InterpolationMode.BILINEAR, ~antialias=True", "img"),
    // `num_output_channels` other than 1 is not modelled
    Decl::module("torchvision.transforms.Grayscale", "", "img"),
    Decl::module("torchvision.transforms.RandomHorizontalFlip", "~p=0.5", "img"),
    Decl::module("torchvision.transforms.RandomVerticalFlip", "~p=0.5", "img"),
    Decl::module("torchvision.transforms.ColorJitter", "~brightness=0, ~contrast=0, ~saturation=0, ~hue=0", "img"),
    Decl::module("torchvision.transforms.RandomRotation", "~degrees, ~interpolation=InterpolationMode.NEAREST, expand=False, ~center=None, fill=0", "img"),
    Decl::module("torchvision.transforms.RandomErasing", "~p=0.5, ~scale=(0.02, 0.33), ~ratio=(0.3, 3.3), value=0, ~inplace=False", "img"),
    Decl::module("torchvision.transforms.ConvertImageDtype", "dtype", "image"),
    Decl::module("torchvision.transforms.Lambda", "lambd", "img"),
    Decl::module("torchvision.transforms.RandomAffine", "~degrees, ~translate=None, ~scale=None, ~shear=None, ~interpolation=InterpolationMode.NEAREST, fill=0, ~center=None", "img"),
    Decl::module("torchvision.transforms.AutoAugment", "~policy=AutoAugmentPolicy.IMAGENET, ~interpolation=InterpolationMode.NEAREST, fill=None", "img"),
    Decl::module("torchvision.transforms.RandAugment", "~num_ops=2, ~magnitude=9, ~num_magnitude_bins=31, ~interpolation=InterpolationMode.NEAREST, fill=None", "img"),
    Decl::module("torchvision.transforms.TrivialAugmentWide", "~num_magnitude_bins=31, ~interpolation=InterpolationMode.NEAREST, fill=None", "img"),
];
