//! Sliding local blocks: `nn.Unfold`/`F.unfold` (im2col: `[N, C, H, W] -> [N, C*kh*kw, L]`)
//! and `nn.Fold`/`F.fold` (col2im: `[N, C*kh*kw, L] -> [N, C, oh, ow]`), batched or not.
//!
//! Torch checks, in this order: every pair (`kernel_size`, `dilation`, `padding`, `stride`,
//! and `output_size` for `Fold`) has two entries, the kernel, dilation and stride are positive
//! and the padding is not negative; the input is 3-D or 4-D (`Fold`: 2-D or 3-D) with no zero
//! size but the batch; `Unfold`'s number of blocks per spatial dim,
//! `(size + 2*padding - dilation*(kernel - 1) - 1) // stride + 1`, is at least 1; `Fold`'s
//! channel dim is divisible by `kh*kw`, its `output_size` gives at least one block per dim and
//! exactly as many blocks as the input's last dim, and the `output_size` is positive. Integer
//! inputs pass the shape checks, then raise (not implemented): Unknown.

use super::conv::{check_divisible, conv_out};
use super::{layer_name, require_rank, Bound, Function, Module, Nn};
use crate::ir::Span;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::models::torch::tensor::tensor_value;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerInputRankMismatch, OutputSizeTooSmall};
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

const CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::output_size_too_small::RULE];

pub(super) const NN: &[Nn] = &[
    Nn::module(Decl::module("torch.nn.Unfold", "kernel_size, dilation=1, padding=0, stride=1", "input").twin("torch.nn.functional.unfold").checks(CHECKS), Module::Unfold),
    Nn::module(Decl::module("torch.nn.Fold", "output_size, kernel_size, dilation=1, padding=0, stride=1", "input").twin("torch.nn.functional.fold").checks(CHECKS), Module::Fold),
    Nn::function(Decl::function("torch.nn.functional.unfold", "input, kernel_size, dilation=1, padding=0, stride=1").twin("torch.nn.Unfold").checks(CHECKS), Function::Unfold),
    Nn::function(Decl::function("torch.nn.functional.fold", "input, output_size, kernel_size, dilation=1, padding=0, stride=1").twin("torch.nn.Fold").checks(CHECKS), Function::Fold),
];

/// An int or a pair of ints (torch's `_pair`), by the name of its parameter.
enum Pair {
    Two([Poly; 2]),
    /// A tuple of another length: torch raises.
    Len(usize),
    /// Not modelled (a list, a float, an unknown value).
    Other,
}

fn pair(v: Option<&Value>, default: i128) -> Pair {
    match v {
        None => Pair::Two([Poly::constant(default), Poly::constant(default)]),
        Some(Value::Int(p)) => Pair::Two([p.clone(), p.clone()]),
        Some(Value::Tuple(t)) if t.len() == 2 => match (t[0].as_int(), t[1].as_int()) {
            (Some(a), Some(b)) => Pair::Two([a.clone(), b.clone()]),
            _ => Pair::Other,
        },
        Some(Value::Tuple(t)) => Pair::Len(t.len()),
        _ => Pair::Other,
    }
}

/// The arguments of a fold or unfold, read and checked.
struct Blocks {
    /// `Fold`'s `output_size`.
    out: Option<[Poly; 2]>,
    k: [Poly; 2],
    d: [Poly; 2],
    p: [Poly; 2],
    s: [Poly; 2],
    /// `Unfold(kernel_size=2, stride=2)`, for messages.
    what: String,
}

fn show_pair(cx: &dyn ModelCtx, v: &[Poly; 2]) -> String {
    let (a, b) = (v[0].display(cx.syms()), v[1].display(cx.syms()));
    if a == b { a } else { format!("({a}, {b})") }
}

/// Read and check the pairs of a fold (with `output_size`) or unfold. `Err(true)`: not
/// modelled (Unknown); `Err(false)`: torch raises (recorded).
fn blocks(cx: &mut dyn ModelCtx, st: &State, fold: bool, get: impl Fn(&str) -> Option<Value>, what: &str, span: Span) -> Result<Blocks, bool> {
    // output_size and kernel_size have no default (the entry accepted the call: they are given)
    let required: &[&str] = if fold { &["output_size", "kernel_size"] } else { &["kernel_size"] };
    if required.iter().any(|n| get(n).is_none()) {
        return Err(true);
    }
    let mut vals = Vec::new();
    for (name, default) in [("output_size", 0), ("kernel_size", 0), ("dilation", 1), ("padding", 0), ("stride", 1)] {
        if name == "output_size" && !fold {
            continue;
        }
        match pair(get(name).as_ref(), default) {
            Pair::Two(p) => vals.push(p),
            Pair::Len(n) => {
                cx.check(st, span, Tri::True, |_| (InvalidShapeArgument::PairArg { op: what.into(), name: name.into(), n: n.to_string() }, Vec::new()));
                return Err(false);
            }
            Pair::Other => return Err(true),
        }
    }
    let mut it = vals.into_iter();
    let out = if fold { it.next() } else { None };
    let (Some(k), Some(d), Some(p), Some(s)) = (it.next(), it.next(), it.next(), it.next()) else { return Err(true) };
    let mut shown = vec![];
    if let Some(o) = &out {
        shown.push(format!("output_size={}", show_pair(cx, o)));
    }
    shown.push(format!("kernel_size={}", show_pair(cx, &k)));
    for (name, v, default) in [("dilation", &d, 1), ("padding", &p, 0), ("stride", &s, 1)] {
        if v.iter().any(|x| x.as_const() != Some(default)) {
            shown.push(format!("{name}={}", show_pair(cx, v)));
        }
    }
    let what = format!("{what}({})", shown.join(", "));
    // kernel, dilation and stride at least 1, padding at least 0
    for (name, v, lo, should) in [("kernel_size", &k, 1, "be positive"), ("dilation", &d, 1, "be positive"), ("padding", &p, 0, "not be negative"), ("stride", &s, 1, "be positive")] {
        let violated = Formula::Or(v.iter().map(|x| Formula::cmp(x, Rel::Lt, &Poly::constant(lo))).collect());
        if !cx.check(st, span, violated, |cx| {
            let sv = show_pair(cx, v);
            (InvalidShapeArgument::ArgMust { op: what.clone(), name: name.into(), value: sv, should: should.into() }, Vec::new())
        }) {
            return Err(false);
        }
    }
    Ok(Blocks { out, k, d, p, s, what })
}

/// The number of blocks along each spatial dim of size `sizes`; `None` where not known.
fn n_blocks(b: &Blocks, sizes: [Option<&Poly>; 2]) -> [Option<Poly>; 2] {
    let one = |i: usize| conv_out(sizes[i]?, &b.k[i], &b.s[i], &b.p[i], &b.d[i], false);
    [one(0), one(1)]
}

/// Blocks per dim at least 1 (`from` describes the sizes, "input size 2x5").
fn check_blocks(cx: &mut dyn ModelCtx, st: &State, nb: &[Option<Poly>; 2], from: &str, what: &str, span: Span) -> bool {
    let shown: Vec<String> = nb.iter().map(|o| o.as_ref().map(|p| p.display(cx.syms())).unwrap_or("?".into())).collect();
    let shown = shown.join("x");
    for o in nb.iter().flatten() {
        if !cx.check(st, span, Formula::cmp(o, Rel::Lt, &Poly::constant(1)), |cx| {
            let os = o.display(cx.syms());
            (OutputSizeTooSmall::Blocks { op: what.into(), from: from.into(), blocks: shown.clone(), size: os }, Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// No zero size but the batch dim (`first` is the index of the first non-batch dim).
fn check_nonzero(cx: &mut dyn ModelCtx, st: &State, sh: &Shape, first: usize, what: &str, span: Span) -> bool {
    let shown = cx.show_shape(st, sh);
    for d in sh.dims[first..].iter() {
        let Some(v) = &d.v else { continue };
        if !cx.check(st, span, Formula::cmp(v, Rel::Eq, &Poly::constant(0)), |_| {
            (LayerInputRankMismatch::ZeroSize { op: what.into(), input: shown.clone() }, Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// The result's dtype: Unknown for the integer inputs torch does not implement.
fn result(st: State, dims: Vec<Dim>, dtype: Option<DType>) -> (State, Value) {
    match dtype {
        Some(DType::Long | DType::Int | DType::Byte | DType::Other) => (st, Value::Unknown),
        _ => (st, tensor_value(Shape::known(dims), dtype)),
    }
}

fn unfold(cx: &mut dyn ModelCtx, st: State, t: &Tensor, get: impl Fn(&str) -> Option<Value>, what: &str, span: Span) -> Vals {
    let b = match blocks(cx, &st, false, get, what, span) {
        Ok(b) => b,
        Err(true) => return vec![(st, Value::Unknown)],
        Err(false) => return Vec::new(),
    };
    let mut outs = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[3, 4], &["N", "C", "H", "W"], &[], span, &format!("{}: ", b.what)) {
        let r = sh.dims.len();
        if !check_nonzero(cx, &st, &sh, r - 3, &b.what, span) {
            continue;
        }
        let (c, h, w) = (&sh.dims[r - 3], &sh.dims[r - 2], &sh.dims[r - 1]);
        let nb = n_blocks(&b, [h.v.as_ref(), w.v.as_ref()]);
        let from = format!("input size {}x{}", cx.show_dim(h), cx.show_dim(w));
        if !check_blocks(cx, &st, &nb, &from, &b.what, span) {
            continue;
        }
        let mut dims = sh.dims[..r - 3].to_vec();
        dims.push(Dim { v: c.v.as_ref().and_then(|c| c.mul(&b.k[0])?.mul(&b.k[1])), why: None });
        dims.push(Dim { v: match &nb {
            [Some(a), Some(b)] => a.mul(b),
            _ => None,
        }, why: None });
        outs.push(result(st, dims, t.dtype));
    }
    outs
}

fn fold(cx: &mut dyn ModelCtx, st: State, t: &Tensor, get: impl Fn(&str) -> Option<Value>, what: &str, span: Span) -> Vals {
    let b = match blocks(cx, &st, true, get, what, span) {
        Ok(b) => b,
        Err(true) => return vec![(st, Value::Unknown)],
        Err(false) => return Vec::new(),
    };
    let Some(o) = b.out.clone() else { return vec![(st, Value::Unknown)] };
    let mut outs = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[2, 3], &["N", "C", "L"], &[], span, &format!("{}: ", b.what)) {
        let r = sh.dims.len();
        if !check_nonzero(cx, &st, &sh, r - 2, &b.what, span) {
            continue;
        }
        let (c, l) = (&sh.dims[r - 2], &sh.dims[r - 1]);
        let shown = cx.show_shape(&st, &sh);
        let kk = b.k[0].mul(&b.k[1]);
        // the channel dim holds kh*kw values per output channel
        if let (Some(cv), Some(kk)) = (&c.v, &kk)
            && !check_divisible(cx, &st, span, cv, kk, |channels, kernel| InvalidShapeArgument::FoldChannels { op: b.what.clone(), channels, input: shown.clone(), kernel })
        {
            continue;
        }
        let nb = n_blocks(&b, [Some(&o[0]), Some(&o[1])]);
        let from = format!("output_size {}x{}", o[0].display(cx.syms()), o[1].display(cx.syms()));
        if !check_blocks(cx, &st, &nb, &from, &b.what, span) {
            continue;
        }
        // exactly as many blocks as the input's last dim
        if let [Some(a), Some(bb)] = &nb
            && let Some(total) = a.mul(bb)
        {
            if !cx.check(&st, span, cx.dim_eq_f(l, &Dim::known(total.clone(), None)).not(), |cx| {
                let (ts, ls) = (format!("{} * {} = {}", a.display(cx.syms()), bb.display(cx.syms()), total.display(cx.syms())), cx.show_dim(l));
                let ts = if a.as_const().is_some() && bb.as_const().is_some() { ts } else { total.display(cx.syms()) };
                (InvalidShapeArgument::FoldBlocks { op: b.what.clone(), want: ts, input: shown.clone(), got: ls }, Vec::new())
            }) {
                continue;
            }
        }
        let violated = Formula::Or(o.iter().map(|x| Formula::cmp(x, Rel::Lt, &Poly::constant(1))).collect());
        if !cx.check(&st, span, violated, |cx| {
            let os = show_pair(cx, &o);
            (InvalidShapeArgument::ArgMust { op: b.what.clone(), name: "output_size".into(), value: os, should: "be positive".into() }, Vec::new())
        }) {
            continue;
        }
        let mut dims = sh.dims[..r - 2].to_vec();
        dims.push(Dim { v: kk.as_ref().and_then(|kk| c.v.as_ref()?.floordiv(kk)), why: None });
        dims.push(Dim::known(o[0].clone(), None));
        dims.push(Dim::known(o[1].clone(), None));
        outs.push(result(st, dims, t.dtype));
    }
    outs
}

/// Calling an `nn.Unfold` or `nn.Fold` layer.
pub(super) fn call(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, inverse: bool, span: Span) -> Vals {
    let get = |k: &str| l.args.get(k).cloned();
    let what = format!("{}{}", layer_name(l), l.kind);
    if inverse { fold(cx, st, t, get, &what, span) } else { unfold(cx, st, t, get, &what, span) }
}

/// `F.unfold`, `F.fold`.
pub(super) fn functional(cx: &mut dyn ModelCtx, st: State, t: &Tensor, inverse: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let get = |k: &str| b.get(k).cloned();
    if inverse { fold(cx, st, t, get, what, span) } else { unfold(cx, st, t, get, what, span) }
}
