//! Strides (`Tensor::layout`), for `view` on a non-contiguous tensor (SHP112).
//!
//! A tensor's layout is known only where it is proven against torch: `None` (the default of
//! `tensor()`) means "not known" and is never reported. Known layouts are permutations of a
//! contiguous tensor:
//! - contiguous (the identity): the fresh results of creation functions, `nn.Linear`/`F.linear`,
//!   matrix products of operands of rank >= 2, `.contiguous()`, a convolution or pooling of a
//!   contiguous input, `view`/`reshape` of a contiguous tensor, a `reshape` that must copy;
//! - permuted: `transpose`/`swapaxes`/`swapdims`, `permute`, `t()`, `.T`, `.mT`, `movedim`/
//!   `moveaxis` of a tensor whose layout is known (composed with it), and the unary pointwise
//!   ops of [`KEEPS_STRIDES`] (torch's TensorIterator gives the output the input's strides);
//! - sliced: a basic slice or `narrow` keeps its input's strides, so its dims keep their order,
//!   and one that cuts a dim may leave gaps (`Layout::gaps`, `indexing::sliced_layout`): a
//!   `view` the order says fails fails with any gaps, one it lets pass is Unknown unless it
//!   keeps the dims.
//!
//! A model that hands back its input unchanged (dropout, softmax, `Identity`, ...) does not
//! always keep the strides (softmax returns a contiguous tensor): [`forget_permuted`] drops a
//! permuted layout from such results at the dispatchers; a contiguous one stays (these ops give
//! a contiguous tensor for a contiguous input).

use std::rc::Rc;

use crate::models::ctx::ModelCtx;
use crate::ir::Span;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

/// Unary pointwise ops whose result has the input's strides (checked with torch 2.13's `stride()`
/// on 40 random permuted inputs each, comparing the strides of the dims of size > 1; `softmax`
/// and `roll` were found not to keep them, hence [`forget_permuted`]).
pub const KEEPS_STRIDES: &[&str] = &[
    "abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "square", "clone", "detach", "sign",
    "floor", "ceil", "round", "trunc", "reciprocal", "erf", "exp2", "expm1", "log1p", "log2", "log10",
];

/// The results of a model with the layout `f` gives each tensor of known rank.
pub fn set(vals: Vals, f: impl Fn(&Tensor) -> Option<Layout>) -> Vals {
    vals.into_iter()
        .map(|(st, v)| match v {
            Value::Tensor(t) if t.shape.prefix.is_none() => match f(&t) {
                Some(l) if l.perm.len() == t.shape.dims.len() => (st, Value::Tensor(Rc::new((*t).clone().with_layout(Some(l))))),
                _ => (st, Value::Tensor(t)),
            },
            v => (st, v),
        })
        .collect()
}

/// The results of a model, all contiguous.
pub fn contiguous(vals: Vals) -> Vals {
    set(vals, |t| Some(Layout::contiguous(t.shape.dims.len())))
}

/// The results of a model, contiguous when `input` is known to be.
pub fn contiguous_if(vals: Vals, input: &Tensor) -> Vals {
    if input.layout.as_ref().is_some_and(|l| l.is_contiguous()) { contiguous(vals) } else { vals }
}

/// `input`'s layout permuted: dim `i` of the result is dim `perm[i]` of `input`. `None` when
/// `input`'s layout is not known.
pub fn permuted(input: &Tensor, perm: &[usize], op: &'static str, span: Span) -> Option<Layout> {
    let l = input.layout.as_ref()?;
    if l.perm.len() != perm.len() {
        return None;
    }
    let p: Rc<[u8]> = perm.iter().map(|&i| l.perm[i]).collect();
    let mut out = Layout { perm: p, origin: None, gaps: l.gaps };
    if !out.is_contiguous() {
        // a permute that only moves size-1 dims keeps the tensor contiguous in torch's sense, but
        // the view check below ignores size-1 dims anyway: the op is named as the origin
        out.origin = if perm.iter().enumerate().all(|(i, &j)| i == j) { l.origin } else { Some((op, span)) };
    }
    Some(out)
}

/// The results of a permuting op on `input` with the layout `permuted` gives.
pub fn permute_results(vals: Vals, input: &Tensor, perm: &[usize], op: &'static str, span: Span) -> Vals {
    match permuted(input, perm, op, span) {
        Some(l) => set(vals, |_| Some(l.clone())),
        None => vals,
    }
}

/// Results that are `input` itself lose a permuted layout (see the module doc).
pub fn forget_permuted(vals: Vals, input: &Rc<Tensor>) -> Vals {
    if input.layout.as_ref().is_none_or(|l| l.is_contiguous()) {
        return vals;
    }
    let forget = |v: Value| match v {
        Value::Tensor(t) if Rc::ptr_eq(&t, input) => Value::Tensor(Rc::new((*t).clone().with_layout(None))),
        v => v,
    };
    vals.into_iter()
        .map(|(st, v)| match v {
            Value::Tuple(items) if items.iter().any(|x| matches!(x, Value::Tensor(t) if Rc::ptr_eq(t, input))) => {
                (st, Value::Tuple(Rc::new(items.iter().cloned().map(forget).collect())))
            }
            v => (st, forget(v)),
        })
        .collect()
}

/// Whether `view(target)` of a tensor of shape `dims` with `layout` raises in torch: the
/// formula of the failure (`at::detail::computeStride`), or `None` when it cannot be decided
/// for every value of the dims (a dim that may be 1 or 0, an unknown dim or size).
///
/// computeStride walks the input's dims from the last, in chunks of dims that lie contiguously
/// in memory (dim `i` and the next dim of size > 1, `i'`, are in one chunk when
/// `stride[i] == size[i'] * stride[i']`), and needs the view's dims, from the last, to
/// multiply up to each chunk exactly. Size-1 dims never end a chunk; for a permuted
/// contiguous tensor (all sizes >= 1) two dims of size > 1 are in one chunk exactly when their
/// base dims are consecutive once the base's size-1 dims are left out. So the view fails when
/// the product of the dims of some trailing run of chunks is none of the products of the
/// view's trailing dims.
pub fn view_fails(cx: &dyn ModelCtx, st: &State, dims: &[Dim], layout: &Layout, target: &[Dim]) -> Option<Formula> {
    if layout.perm.len() != dims.len() || layout.is_identity() {
        return None;
    }
    let one = Poly::constant(1);
    // each dim: its size and whether it is 1 (decided on this path)
    let mut big = vec![false; dims.len()];
    for (i, d) in dims.iter().enumerate() {
        let p = d.v.as_ref()?;
        if cx.poly_cmp(st, &one, Rel::Le, p) != Tri::True {
            return None; // may be 0: a tensor without elements views into anything
        }
        big[i] = match cx.poly_cmp(st, p, Rel::Eq, &one) {
            Tri::True => false,
            Tri::False => true,
            Tri::Unknown => return None,
        };
    }
    // base dims of size > 1, numbered in order
    let mut base_big = vec![false; dims.len()];
    for (i, &p) in layout.perm.iter().enumerate() {
        base_big[p as usize] = big[i];
    }
    let rank_of = |b: usize| base_big[..b].iter().filter(|x| **x).count();
    // chunks of the input's dims of size > 1, in order: their products
    let mut chunks: Vec<Poly> = Vec::new();
    let mut prev: Option<usize> = None;
    for (i, &p) in layout.perm.iter().enumerate() {
        if !big[i] {
            continue;
        }
        let r = rank_of(p as usize);
        let size = dims[i].v.clone()?;
        match (prev, chunks.last_mut()) {
            (Some(q), Some(last)) if r == q + 1 => *last = last.mul(&size)?,
            _ => chunks.push(size),
        }
        prev = Some(r);
    }
    if chunks.len() < 2 {
        return None;
    }
    // the products of the trailing runs of chunks but the whole
    let mut runs = Vec::new();
    let mut acc = one.clone();
    for c in chunks.iter().skip(1).rev() {
        acc = acc.mul(c)?;
        runs.push(acc.clone());
    }
    // the products of the view's trailing dims
    let mut tails = Vec::new();
    let mut acc = one.clone();
    for d in target.iter().rev() {
        acc = acc.mul(d.v.as_ref()?)?;
        tails.push(acc.clone());
    }
    Some(Formula::Or(runs.iter().map(|r| Formula::And(tails.iter().map(|t| Formula::cmp(r, Rel::Ne, t)).collect())).collect()))
}
