//! `torch.nn.utils.rnn`: padding a list of variable-length sequences into one tensor
//! (`pad_sequence`), packing a padded batch for a recurrent layer (`pack_padded_sequence`,
//! `pack_sequence`), the recurrent layers' call on a packed batch, and unpacking it
//! (`pad_packed_sequence`).
//!
//! A PackedSequence is a `Namespace` of kind `"PackedSequence"`: `data` (the tensor torch
//! keeps, `[sum of lengths, *]`), `batch` (the number of sequences) and `max_len` (the longest
//! length, Unknown when the lengths are not known). The longest of sequences whose lengths
//! differ or are not known is a fresh dim of its own: the padded length, the same symbol
//! wherever it is used after.

use std::rc::Rc;

use super::data::{bind_api, ns};
use super::layers::Bound;
use super::recurrent::{self, Rnn};
use super::tensor::tensor_value;
use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::{self, Decl};
use crate::rules::shape::{ConcatShapeMismatch, InvalidShapeArgument};
use crate::shape::{Poly, Rel, Tri};
use crate::value::*;

const KIND: &str = "PackedSequence";

/// The APIs this family models, for the registry (`models/registry.rs`). `padding_value`
/// changes values only.
pub const APIS: &[Decl] = &[
    Decl::function("torch.nn.utils.rnn.pad_sequence", "sequences, batch_first=False, ~padding_value=0.0, padding_side=\"right\""),
    Decl::function("torch.nn.utils.rnn.pack_padded_sequence", "input, lengths, batch_first=False, enforce_sorted=True"),
    Decl::function("torch.nn.utils.rnn.pad_packed_sequence", "sequence, batch_first=False, ~padding_value=0.0, total_length=None"),
    Decl::function("torch.nn.utils.rnn.pack_sequence", "sequences, enforce_sorted=True"),
];

/// A bool argument: its default when absent, None when not known.
fn flag(b: &Bound, k: &str, default: bool) -> Option<bool> {
    match b.get(k) {
        None => Some(default),
        Some(Value::Bool(v)) => Some(*v),
        _ => None,
    }
}

/// A PackedSequence's `(data, batch, max_len)`.
pub fn of(st: &State, v: &Value) -> Option<(Rc<Tensor>, Dim, Option<Poly>)> {
    let Value::Ref(id) = v else { return None };
    let Obj::Namespace { kind, attrs } = st.get(*id) else { return None };
    if &**kind != KIND {
        return None;
    }
    let Some(Value::Tensor(data)) = attrs.get("data") else { return None };
    let batch = match attrs.get("batch") {
        Some(Value::Int(p)) => Dim::known(p.clone(), None),
        _ => Dim::unknown(),
    };
    Some((data.clone(), batch, attrs.get("max_len").and_then(|v| v.as_int()).cloned()))
}

fn packed(st: &mut State, data: Shape, dtype: Option<DType>, batch: &Dim, max_len: Option<Poly>) -> Value {
    let attrs = vec![
        ("data", tensor_value(data, dtype)),
        ("batch", batch.v.clone().map(Value::Int).unwrap_or(Value::Unknown)),
        ("max_len", max_len.map(Value::Int).unwrap_or(Value::Unknown)),
    ];
    ns(st, KIND, attrs)
}

/// The packed data's first dim: the sum of the lengths, a size of its own when one is not
/// known.
fn total(cx: &mut dyn ModelCtx, lengths: Option<&[Dim]>) -> Dim {
    match lengths.and_then(|ls| ls.iter().try_fold(Poly::constant(0), |acc, d| acc.add(d.v.as_ref()?))) {
        Some(t) => Dim::known(t, None),
        None => cx.fresh_dim("N"),
    }
}

/// `torch.nn.utils.rnn.<name>(...)`.
pub fn call(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let Some((prefix, name)) = path.rsplit_once('.') else { return vec![(st, Value::Unknown)] };
    let Some(api) = registry::lookup_in(prefix, name) else { return vec![(st, Value::Unknown)] };
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let b = bind_api(api, &args, &kwargs);
    let v = match name {
        "pad_sequence" | "pack_sequence" => {
            let Some(seqs) = b.get("sequences").cloned().and_then(|s| cx.iterate(&mut st, &s, span)) else { return vec![(st, Value::Unknown)] };
            let Some(joined) = join(cx, &st, &seqs, name, span) else { return vec![(st, Value::Unknown)] };
            let Some((lengths, trailing, dtype)) = joined else { return Vec::new() };
            let batch = Dim::known(Poly::constant(seqs.len() as i128), None);
            let max_len = longest(cx, &st, &lengths);
            if name == "pack_sequence" {
                // torch's own checks of the lengths' order (enforce_sorted) are not modelled
                if flag(&b, "enforce_sorted", true) != Some(false) && !sorted(cx, &st, &lengths) {
                    return vec![(st, Value::Unknown)];
                }
                let mut data = vec![total(cx, Some(&lengths))];
                data.extend(trailing);
                packed(&mut st, Shape::known(data), dtype, &batch, max_len.v)
            } else {
                let (Some(batch_first), Some(Value::Str(Some(side)))) = (flag(&b, "batch_first", false), b.get("padding_side").cloned().or(Some(Value::Str(Some(Rc::from("right")))))) else {
                    return vec![(st, Value::Unknown)];
                };
                if !matches!(&*side, "left" | "right") {
                    return vec![(st, Value::Unknown)];
                }
                let mut dims = if batch_first { vec![batch, max_len] } else { vec![max_len, batch] };
                dims.extend(trailing);
                tensor_value(Shape::known(dims), dtype)
            }
        }
        "pack_padded_sequence" => {
            let (Some(Value::Tensor(t)), Some(lengths), Some(batch_first)) = (b.get("input"), b.get("lengths"), flag(&b, "batch_first", false)) else {
                return vec![(st, Value::Unknown)];
            };
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() || s.dims.len() < 2 {
                return vec![(st, Value::Unknown)];
            }
            let (batch, steps) = if batch_first { (s.dims[0].clone(), s.dims[1].clone()) } else { (s.dims[1].clone(), s.dims[0].clone()) };
            // the lengths: a list of ints (values known) or a 1-D tensor (values not known)
            let (count, known): (Dim, Option<Vec<Poly>>) = match lengths {
                Value::Tensor(l) => {
                    let ls = st.resolve(&l.shape);
                    if ls.prefix.is_some() || ls.dims.len() != 1 {
                        return vec![(st, Value::Unknown)];
                    }
                    (ls.dims[0].clone(), None)
                }
                v => {
                    let Some(items) = cx.iterate(&mut st, v, span) else { return vec![(st, Value::Unknown)] };
                    let ints: Option<Vec<Poly>> = items.iter().map(|i| i.as_int().cloned()).collect();
                    (Dim::known(Poly::constant(items.len() as i128), None), ints)
                }
            };
            // with enforce_sorted=False torch first reorders the batch by the lengths'
            // order (an index_select of as many sequences as lengths): fewer lengths drop
            // sequences, more index past the batch; not modelled unless they agree
            let sorted_by_torch = flag(&b, "enforce_sorted", true);
            if sorted_by_torch != Some(true) && cx.dim_eq(&st, &count, &batch) != Tri::True {
                return vec![(st, Value::Unknown)];
            }
            let shown = cx.show_shape(&st, &s);
            if !cx.check(&st, span, cx.dim_eq_f(&count, &batch).not(), |cx| {
                (InvalidShapeArgument::PackedLengths { count: cx.show_dim(&count), input: shown, batch: cx.show_dim(&batch) }, Vec::new())
            }) {
                return Vec::new();
            }
            let dims: Vec<Dim> = match &known {
                Some(ls) => ls.iter().map(|p| Dim::known(p.clone(), None)).collect(),
                None => Vec::new(),
            };
            // lengths torch refuses (not positive, not sorted under enforce_sorted, longer than
            // the padded steps): not modelled
            if let Some(ls) = &known {
                let positive = ls.iter().all(|p| cx.poly_cmp(&st, &Poly::constant(1), Rel::Le, p) == Tri::True);
                let fits = steps.v.as_ref().is_some_and(|t| ls.iter().all(|p| cx.poly_cmp(&st, p, Rel::Le, t) == Tri::True));
                if !positive || !fits || (sorted_by_torch != Some(false) && !sorted(cx, &st, &dims)) {
                    return vec![(st, Value::Unknown)];
                }
            }
            let max_len = known.as_ref().map(|_| longest(cx, &st, &dims)).and_then(|d| d.v);
            let mut data = vec![total(cx, known.as_ref().map(|_| dims.as_slice()))];
            data.extend(s.dims[2..].iter().cloned());
            packed(&mut st, Shape::known(data), t.dtype, &batch, max_len)
        }
        "pad_packed_sequence" => {
            let (Some(seq), Some(batch_first)) = (b.get("sequence"), flag(&b, "batch_first", false)) else { return vec![(st, Value::Unknown)] };
            let Some((data, batch, max_len)) = of(&st, seq) else { return vec![(st, Value::Unknown)] };
            let s = st.resolve(&data.shape);
            if s.prefix.is_some() || s.dims.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            // `total_length` (torch refuses one shorter than the longest sequence: not modelled)
            let steps = match b.get("total_length") {
                None | Some(Value::None) => match max_len {
                    Some(m) => Dim::known(m, None),
                    None => cx.fresh_dim("T"),
                },
                Some(v) => match (v.as_int(), &max_len) {
                    (Some(t), Some(m)) if cx.poly_cmp(&st, m, Rel::Le, t) == Tri::True => Dim::known(t.clone(), None),
                    _ => return vec![(st, Value::Unknown)],
                },
            };
            let mut dims = if batch_first { vec![batch.clone(), steps] } else { vec![steps, batch.clone()] };
            dims.extend(s.dims[1..].iter().cloned());
            let lengths = tensor_value(Shape::known(vec![batch]), Some(DType::Long));
            Value::Tuple(Rc::new(vec![tensor_value(Shape::known(dims), data.dtype), lengths]))
        }
        _ => Value::Unknown,
    };
    vec![(st, v)]
}

/// The sequences' lengths (dim 0 of each), the dims after it (which must agree) and the first
/// one's dtype (torch's result). None: not modelled (a sequence that is not a tensor of known
/// rank, a 0-dim one, no sequence at all, a trailing dim not decided). `Some(None)`: torch
/// raises (recorded).
#[allow(clippy::type_complexity)]
fn join(cx: &mut dyn ModelCtx, st: &State, seqs: &[Value], name: &str, span: Span) -> Option<Option<(Vec<Dim>, Vec<Dim>, Option<DType>)>> {
    let mut shapes = Vec::with_capacity(seqs.len());
    for v in seqs {
        let Value::Tensor(t) = v else { return None };
        let s = st.resolve(&t.shape);
        if s.prefix.is_some() || s.dims.is_empty() {
            return None;
        }
        shapes.push(s);
    }
    let first = shapes.first()?.clone();
    let mut trailing = first.dims[1..].to_vec();
    for (k, s) in shapes.iter().enumerate().skip(1) {
        // torch copies each sequence into its slice of a tensor shaped after the first one,
        // which broadcasts: a dim of 1 (or fewer dims) is not modelled; unequal sizes that are
        // not 1 raise
        if s.dims.len() != first.dims.len() {
            return None;
        }
        let mut violated = false;
        for (a, b) in first.dims[1..].iter().zip(&s.dims[1..]) {
            match cx.dim_eq(st, a, b) {
                Tri::True => {}
                Tri::False if b.as_const().is_some_and(|c| c != 1) => violated = true,
                _ => return None,
            }
        }
        if violated {
            let op = format!("torch.nn.utils.rnn.{name}");
            cx.check(st, span, Tri::True, |cx| {
                (ConcatShapeMismatch::Padded { op, first: cx.show_shape(st, &first), index: k.to_string(), other: cx.show_shape(st, s) }, Vec::new())
            });
            return Some(None);
        }
        // a dim the two agree on but only one of them names
        for (d, o) in trailing.iter_mut().zip(&s.dims[1..]) {
            if d.why.is_none() {
                d.why = o.why.clone();
            }
        }
    }
    let dtype = match &seqs[0] {
        Value::Tensor(t) => t.dtype,
        _ => None,
    };
    Some(Some((shapes.iter().map(|s| s.dims[0].clone()).collect(), trailing, dtype)))
}

/// The longest of these lengths: the one all are equal to, the largest when all are known
/// numbers, else a fresh dim.
fn longest(cx: &mut dyn ModelCtx, st: &State, lengths: &[Dim]) -> Dim {
    let Some(first) = lengths.first() else { return cx.fresh_dim("L") };
    if lengths.iter().all(|d| cx.dim_eq(st, d, first) == Tri::True) {
        return first.clone();
    }
    match lengths.iter().map(|d| d.as_const()).collect::<Option<Vec<i128>>>() {
        Some(cs) => Dim::known(Poly::constant(cs.into_iter().max().unwrap_or(0)), None),
        None => cx.fresh_dim("L"),
    }
}

/// Are these lengths certainly in decreasing order (what `enforce_sorted` asks)?
fn sorted(cx: &dyn ModelCtx, st: &State, lengths: &[Dim]) -> bool {
    lengths.windows(2).all(|w| match (&w[0].v, &w[1].v) {
        (Some(a), Some(b)) => cx.poly_cmp(st, b, Rel::Le, a) == Tri::True,
        _ => false,
    })
}

/// A recurrent layer (`nn.LSTM`, `nn.GRU`, `nn.RNN`) called on a PackedSequence: the data
/// `[sum of lengths, input_size]` runs through the layer; the output is a PackedSequence of
/// the same batch (data `[sum of lengths, D*H_out]`), the final state `[D*num_layers, batch,
/// H_out]`.
pub fn rnn(cx: &mut dyn ModelCtx, st: State, l: &Layer, which: Rnn, b: &Bound, span: Span) -> Vals {
    let Some(input) = b.get("input") else { return vec![(st, Value::Unknown)] };
    let Some((data, batch, max_len)) = of(&st, input) else { return vec![(st, Value::Unknown)] };
    let Some(cfg) = recurrent::Config::of(l, which) else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&data.shape);
    if s.prefix.is_some() || s.dims.len() != 2 {
        return vec![(st, Value::Unknown)];
    }
    // RNN and GRU check a packed input and its state as they check a tensor (the state's
    // batch is the number of sequences); LSTM checks neither, its kernels fail in their own
    // ways (or not at all): modelled only where it fits
    if which == Rnn::Lstm
        && (cx.dim_eq(&st, &s.dims[1], &Dim::known(cfg.input_size().clone(), None)) != Tri::True || !matches!(b.get("hx"), None | Some(Value::None)))
    {
        return vec![(st, Value::Unknown)];
    }
    let Some((mut st, out, h)) = recurrent::run(cx, st, &cfg, l, which, &s, data.dtype, Some(batch.clone()), b, span) else { return Vec::new() };
    let v = match out {
        Some(o) => Value::Tuple(Rc::new(vec![packed(&mut st, o, data.dtype, &batch, max_len), h])),
        None => Value::Unknown,
    };
    vec![(st, v)]
}
