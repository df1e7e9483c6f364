//! Convolutions: `nn.Conv{1,2,3}d`, `nn.ConvTranspose{1,2,3}d` and their twins `F.conv*`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{check_spatial, layer_name, ntuple, optional_exact, require_rank, spatial_names, Bound, Function, Module, Nn};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::ir::Span;
use crate::models::registry::Decl;
use crate::models::torch::tensor::tensor_value;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch, LayerInputRankMismatch, OutputSizeTooSmall};
use crate::rules::violation::Violation;
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

// `bias` only adds a parameter; `padding_mode` is read: only `'zeros'` is modelled (the other
// modes pad by the same amounts but have their own size limits).
const CONV: &str = "in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, ~bias=True, padding_mode=\"zeros\", ~device=None";
const CONV_T: &str = "in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, ~bias=True, dilation=1, padding_mode=\"zeros\", ~device=None";
const F_CONV: &str = "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1";
const F_CONV_T: &str = "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1";
const CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::layer_channel_mismatch::RULE, &r::output_size_too_small::RULE];

const fn conv(dims: usize, transposed: bool) -> Module {
    Module::Conv { dims, transposed }
}
const fn f_conv(dims: usize, transposed: bool) -> Function {
    Function::Conv { dims, transposed }
}

pub(super) const NN: &[Nn] = &[
    Nn::module(Decl::module("torch.nn.Conv1d", CONV, "input").twin("torch.nn.functional.conv1d").checks(CHECKS), conv(1, false)),
    Nn::module(Decl::module("torch.nn.Conv2d", CONV, "input").twin("torch.nn.functional.conv2d").checks(CHECKS), conv(2, false)),
    Nn::module(Decl::module("torch.nn.Conv3d", CONV, "input").twin("torch.nn.functional.conv3d").checks(CHECKS), conv(3, false)),
    // the call's `output_size`: within the sizes the stride allows (it sets the output padding)
    Nn::module(Decl::module("torch.nn.ConvTranspose1d", CONV_T, "input, output_size=None").twin("torch.nn.functional.conv_transpose1d").checks(CHECKS), conv(1, true)),
    Nn::module(Decl::module("torch.nn.ConvTranspose2d", CONV_T, "input, output_size=None").twin("torch.nn.functional.conv_transpose2d").checks(CHECKS), conv(2, true)),
    Nn::module(Decl::module("torch.nn.ConvTranspose3d", CONV_T, "input, output_size=None").twin("torch.nn.functional.conv_transpose3d").checks(CHECKS), conv(3, true)),
    Nn::function(Decl::function("torch.nn.functional.conv1d", F_CONV).twin("torch.nn.Conv1d").checks(CHECKS), f_conv(1, false)),
    Nn::function(Decl::function("torch.nn.functional.conv2d", F_CONV).twin("torch.nn.Conv2d").checks(CHECKS), f_conv(2, false)),
    Nn::function(Decl::function("torch.nn.functional.conv3d", F_CONV).twin("torch.nn.Conv3d").checks(CHECKS), f_conv(3, false)),
    Nn::function(Decl::function("torch.nn.functional.conv_transpose1d", F_CONV_T).twin("torch.nn.ConvTranspose1d").checks(CHECKS), f_conv(1, true)),
    Nn::function(Decl::function("torch.nn.functional.conv_transpose2d", F_CONV_T).twin("torch.nn.ConvTranspose2d").checks(CHECKS), f_conv(2, true)),
    Nn::function(Decl::function("torch.nn.functional.conv_transpose3d", F_CONV_T).twin("torch.nn.ConvTranspose3d").checks(CHECKS), f_conv(3, true)),
];

/// `out = (in + 2*pad - dil*(k-1) - 1) // stride + 1` (ceil when `ceil`).
pub(super) fn conv_out(size: &Poly, k: &Poly, s: &Poly, p: &Poly, d: &Poly, ceil: bool) -> Option<Poly> {
    let eff = d.mul(&k.add_const(-1)?)?.add_const(1)?;
    let num = size.add(&p.mul(&Poly::constant(2))?)?.sub(&eff)?;
    let num = if ceil { num.add(&s.add_const(-1)?)? } else { num };
    num.floordiv(s)?.add_const(1)
}

/// `out = (in - 1)*stride - 2*pad + dil*(k-1) + output_padding + 1`.
fn conv_transpose_out(size: &Poly, k: &Poly, s: &Poly, p: &Poly, d: &Poly, op: &Poly) -> Option<Poly> {
    size.add_const(-1)?.mul(s)?.sub(&p.mul(&Poly::constant(2))?)?.add(&d.mul(&k.add_const(-1)?)?)?.add(op)?.add_const(1)
}

/// A transposed conv's output sizes must not be negative.
fn check_nonnegative(cx: &mut dyn ModelCtx, st: &State, out: &[Option<Poly>], inp: &[Dim], what: &str, span: Span) -> bool {
    for o in out.iter().flatten() {
        let violated = Formula::cmp(o, Rel::Lt, &Poly::constant(0));
        if !cx.check(st, span, violated, |cx| {
            let os = o.display(cx.syms());
            let ins: Vec<String> = inp.iter().map(|d| cx.show_dim(d)).collect();
            let ins = ins.join("x");
            (OutputSizeTooSmall::Negative { op: what.into(), input: ins, output: os }, Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// A convolution's configuration, from a module's arguments or an `F.conv*` call.
struct ConvCfg {
    /// Input channels the weight expects.
    ic: Poly,
    oc: Option<Poly>,
    k: Vec<Poly>,
    s: Vec<Poly>,
    p: Vec<Poly>,
    d: Vec<Poly>,
    op: Vec<Poly>,
    same: bool,
    transposed: bool,
    /// "out_channels of conv1 (line 3)", for traces.
    why: Option<crate::value::Why>,
    /// The layer's constructor call, where a fix of `in_channels` goes.
    at: Option<Span>,
}

impl ConvCfg {
    /// From an `nn.Conv*`/`nn.ConvTranspose*` layer's arguments.
    fn from_layer(l: &Layer, n: usize, transposed: bool) -> Option<ConvCfg> {
        let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
        match l.args.get("padding_mode") {
            None => {}
            Some(Value::Str(Some(m))) if &**m == "zeros" => {}
            Some(_) => return None,
        }
        let (same, p) = conv_padding(l.args.get("padding"), n)?;
        if transposed && l.args.get("padding").is_some_and(|v| matches!(v, Value::Str(_))) {
            return None;
        }
        Some(ConvCfg {
            ic: int("in_channels")?,
            oc: int("out_channels"),
            k: ntuple(l.args.get("kernel_size"), n, 1)?,
            s: ntuple(l.args.get("stride"), n, 1)?,
            p,
            d: ntuple(l.args.get("dilation"), n, 1)?,
            op: if transposed { ntuple(l.args.get("output_padding"), n, 0)? } else { vec![Poly::constant(0); n] },
            same,
            transposed,
            why: l.label.clone().map(|lbl| crate::value::Origin::said(format!("out_channels of {lbl}"))),
            at: Some(l.span),
        })
    }
}

/// An attribute of a convolution layer as torch stores it (`_ConvNd.__init__`): `kernel_size`,
/// `stride`, `padding` (a string kept as it is), `dilation` and `output_padding` are tuples of
/// `n` ints, `groups` and `padding_mode` have their defaults; `weight` is `[out, in/groups,
/// *k]` (transposed `[in, out/groups, *k]`), `bias` `[out]` (None for `bias=False`). `None`
/// when not known.
pub(super) fn attr(l: &Layer, name: &str, n: usize, transposed: bool) -> Option<Value> {
    let tuple = |v: Option<&Value>, default: i128| ntuple(v, n, default).map(|xs| Value::Tuple(Rc::new(xs.into_iter().map(Value::Int).collect())));
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    match name {
        "kernel_size" => tuple(Some(l.args.get("kernel_size")?), 1),
        "stride" => tuple(l.args.get("stride"), 1),
        "dilation" => tuple(l.args.get("dilation"), 1),
        "output_padding" if transposed => tuple(l.args.get("output_padding"), 0),
        "padding" => match l.args.get("padding") {
            Some(Value::Str(Some(p))) if matches!(&**p, "same" | "valid") => Some(Value::Str(Some(p.clone()))),
            Some(Value::Str(_)) => None,
            v => tuple(v, 0),
        },
        "groups" => match l.args.get("groups") {
            None => Some(Value::int(1)),
            Some(v) => v.as_int().map(|_| v.clone()),
        },
        "padding_mode" => match l.args.get("padding_mode") {
            None => Some(Value::Str(Some(Rc::from("zeros")))),
            Some(v @ Value::Str(Some(_))) => Some(v.clone()),
            Some(_) => None,
        },
        "weight" => {
            let (ic, oc) = (int("in_channels")?, int("out_channels")?);
            let g = match l.args.get("groups") {
                None => 1,
                Some(v) => v.as_const_int()?,
            };
            let (first, split) = if transposed { (ic, oc) } else { (oc, ic) };
            let per_group = if g == 1 {
                split
            } else {
                let c = split.as_const()?;
                if g <= 0 || c % g != 0 {
                    return None;
                }
                Poly::constant(c / g)
            };
            let mut dims = vec![Dim::known(first, None), Dim::known(per_group, None)];
            dims.extend(ntuple(Some(l.args.get("kernel_size")?), n, 1)?.into_iter().map(|k| Dim::known(k, None)));
            Some(tensor_value(Shape::known(dims), Some(DType::Float)))
        }
        "bias" => match l.args.get("bias") {
            None | Some(Value::Bool(true)) => Some(tensor_value(Shape::known(vec![Dim::known(int("out_channels")?, None)]), Some(DType::Float))),
            Some(Value::Bool(false)) => Some(Value::None),
            _ => None,
        },
        _ => None,
    }
}

/// `padding=`: an int or tuple, `'valid'` (0) or `'same'` (the flag).
fn conv_padding(v: Option<&Value>, n: usize) -> Option<(bool, Vec<Poly>)> {
    match v {
        Some(Value::Str(Some(p))) if &**p == "same" => Some((true, vec![Poly::constant(0); n])),
        Some(Value::Str(Some(p))) if &**p == "valid" => Some((false, vec![Poly::constant(0); n])),
        Some(Value::Str(_)) => None,
        v => Some((false, ntuple(v, n, 0)?)),
    }
}

/// Check `a % b == 0` for constant ints; false when the path ends (torch raises). `v` builds the
/// violation from `a` and `b` as text.
pub(in crate::models::torch) fn check_divisible<V: Violation>(cx: &mut dyn ModelCtx, st: &State, span: Span, a: &Poly, b: &Poly, v: impl FnOnce(String, String) -> V) -> bool {
    if b.as_const().is_some_and(|y| y <= 0) {
        return true;
    }
    // a symbolic remainder is a formula the facts (or the solver) may decide
    let Some(rem) = a.modulo(b) else { return true };
    let violated = match rem.as_const() {
        Some(c) => Formula::Const(c != 0),
        None => Formula::cmp(&rem, Rel::Ne, &Poly::constant(0)),
    };
    cx.check(st, span, violated, |cx| {
        let (x, y) = (a.display(cx.syms()), b.display(cx.syms()));
        (v(x, y), Vec::new())
    })
}

/// `groups <= 0`, which torch rejects (`_ConvNd.__init__`: "groups must be a positive
/// integer"; `F.conv*`: "non-positive groups is not supported"). A symbolic `groups` is a
/// formula the facts decide (never reported undecided). False when the path ends.
fn check_groups_positive(cx: &mut dyn ModelCtx, st: &State, span: Span, what: &str, g: &Poly) -> bool {
    cx.check(st, span, Formula::cmp(g, Rel::Le, &Poly::constant(0)), |cx| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "groups".into(), value: g.display(cx.syms()), should: "be a positive integer".into() }, Vec::new())
    })
}

/// Construction-time checks of a conv layer, in torch's order: groups positive, channels
/// divisible by groups, `'same'` padding only without stride. Returns false when torch raises.
pub(super) fn construct_checks(cx: &mut dyn ModelCtx, st: &State, kind: &str, n: usize, transposed: bool, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let int = |k: &str| amap.get(k).and_then(|v| v.as_int()).cloned();
    if let Some(g) = int("groups") {
        if !check_groups_positive(cx, st, span, kind, &g) {
            return false;
        }
        for key in ["in_channels", "out_channels"] {
            if let Some(c) = int(key)
                && !check_divisible(cx, st, span, &c, &g, |value, by| InvalidShapeArgument::NotDivisible { op: kind.into(), param: key.into(), value, by_param: "groups".into(), by }) {
                    return false;
                }
        }
    }
    if !transposed && matches!(amap.get("padding"), Some(Value::Str(Some(p))) if &**p == "same")
        && let Some(s) = ntuple(amap.get("stride"), n, 1) {
            let strided = s.iter().any(|x| x.as_const().is_some_and(|c| c != 1));
            if !cx.check(st, span, Tri::from_bool(strided), |_| (InvalidShapeArgument::SameStrided { op: kind.into() }, Vec::new())) {
                return false;
            }
        }
    true
}

/// Calling an `nn.Conv*`/`nn.ConvTranspose*` layer.
pub(super) fn call(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, transposed: bool, output_size: Option<&Value>, span: Span) -> Vals {
    let Some(mut cfg) = ConvCfg::from_layer(l, n, transposed) else { return vec![(st, Value::Unknown)] };
    let what = format!("{}{}", layer_name(l), l.kind);
    let mut st = st;
    if let Some(v) = output_size.filter(|v| !matches!(v, Value::None)) {
        match output_padding_for(cx, &mut st, t, &cfg, n, v, &what, span) {
            Err(()) => return Vec::new(),
            Ok(None) => return vec![(st, Value::Unknown)],
            Ok(Some(op)) => cfg.op = op,
        }
    }
    conv_with(cx, st, t, &cfg, n, &what, span)
}

/// `ConvTranspose(...)(input, output_size)`: torch takes the output padding from the requested
/// spatial sizes, each of which must lie in `[min, min + stride - 1]` where `min` is the size
/// without output padding (`_output_padding`, SHP109). Modelled for constant sizes and a
/// constant input of rank n+1 or n+2; `Ok(None)` otherwise, `Err` when the check failed.
#[allow(clippy::too_many_arguments)]
fn output_padding_for(cx: &mut dyn ModelCtx, st: &mut State, t: &Tensor, cfg: &ConvCfg, n: usize, v: &Value, what: &str, span: Span) -> Result<Option<Vec<Poly>>, ()> {
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank().filter(|r| *r == n + 1 || *r == n + 2) else { return Ok(None) };
    let Some(req) = cx.iterate(st, v, span).and_then(|xs| xs.iter().map(|x| x.as_const_int()).collect::<Option<Vec<i128>>>()) else { return Ok(None) };
    // the sizes of the spatial dims, or of every dim (the leading ones are dropped)
    let req: Vec<i128> = if req.len() == rank { req[rank - n..].to_vec() } else { req };
    if req.len() != n {
        return Ok(None); // torch raises a ValueError on the length (not modelled)
    }
    let spatial = &s.dims[rank - n..];
    let consts = |xs: &[Poly]| xs.iter().map(|x| x.as_const()).collect::<Option<Vec<i128>>>();
    let (Some(k), Some(stride), Some(p), Some(d)) = (consts(&cfg.k), consts(&cfg.s), consts(&cfg.p), consts(&cfg.d)) else { return Ok(None) };
    let Some(size) = spatial.iter().map(|x| x.as_const()).collect::<Option<Vec<i128>>>() else { return Ok(None) };
    let lo: Vec<i128> = (0..n).map(|i| (size[i] - 1) * stride[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1).collect();
    let hi: Vec<i128> = (0..n).map(|i| lo[i] + stride[i] - 1).collect();
    let bad = (0..n).any(|i| req[i] < lo[i] || req[i] > hi[i]);
    if !cx.check(st, span, Tri::from_bool(bad), |cx| {
        let list = |xs: &[i128]| format!("[{}]", xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
        let input = cx.show_shape(st, &s);
        (OutputSizeTooSmall::TransposeOutputSize { op: what.into(), requested: list(&req), lo: list(&lo), hi: list(&hi), input }, Vec::new())
    }) {
        return Err(());
    }
    Ok(Some((0..n).map(|i| Poly::constant(req[i] - lo[i])).collect()))
}

/// The output of a convolution with `cfg` on `t`; `what` names it in messages.
fn conv_with(cx: &mut dyn ModelCtx, st: State, t: &Tensor, cfg: &ConvCfg, n: usize, what: &str, span: Span) -> Vals {
    let ConvCfg { ic, k, s, p, d, op, .. } = cfg;
    if cfg.transposed {
        // output_padding must be smaller than either stride or dilation
        for i in 0..n {
            let (Some(o), Some(sv), Some(dv)) = (op[i].as_const(), s[i].as_const(), d[i].as_const()) else { continue };
            if !cx.check(&st, span, Tri::from_bool(o >= sv.max(dv)), |_| {
                (InvalidShapeArgument::OutputPadding { op: what.into(), output_padding: o.to_string(), stride: sv.to_string(), dilation: dv.to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
    }
    let mut out = Vec::new();
    let fixed = [(n + 1, Some(ic.clone()))];
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &fixed, span, &format!("{what}: ")) {
        let r = sh.dims.len();
        let c = sh.dims[r - n - 1].clone();
        // no fix for an input with a dim the core does not know (data it does not model, such
        // as a loaded tensor): the wrong number may as well be the one that shaped the input
        let all_known = sh.dims.iter().all(|d| d.v.is_some());
        if let (Some(at), Some(want), true) = (cfg.at, c.v.as_ref().and_then(|p| p.as_const()), all_known) {
            cx.suggest_fix(FixHint { at, alts: vec![FixAlt { pos: 0, kw: "in_channels", want }] });
        }
        if !cx.expect_dim(&st, span, &sh, &c, ic, Vec::new(), |input, channels, want| {
            LayerChannelMismatch::Channels { layer: what.into(), param: "in_channels".into(), want, input, channels }
        }) {
            continue;
        }
        let spatial = &sh.dims[r - n..];
        let outs: Vec<Option<Poly>> = (0..n)
            .map(|i| {
                if cfg.same {
                    return spatial[i].v.clone();
                }
                if cfg.transposed {
                    return conv_transpose_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], &op[i]);
                }
                conv_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], false)
            })
            .collect();
        // a transposed conv of output size 0 fails or not depending on the backend: unknown
        let outs: Vec<Option<Poly>> = if cfg.transposed {
            if !check_nonnegative(cx, &st, &outs, spatial, what, span) {
                continue;
            }
            outs.into_iter().map(|o| o.filter(|p| p.as_const() != Some(0))).collect()
        } else {
            if !check_spatial(cx, &st, &outs, spatial, what, span) {
                continue;
            }
            outs
        };
        let mut dims = sh.dims[..r - n - 1].to_vec();
        dims.push(Dim { v: cfg.oc.clone(), why: cfg.why.clone() });
        let by = super::made_by(what);
        dims.extend(outs.into_iter().enumerate().map(|(i, o)| match o {
            // (`padding="same"`: the input's size, with its origin)
            Some(o) if cfg.same => Dim { v: Some(o), why: spatial[i].why.clone() },
            Some(o) => Dim { v: Some(o), why: Some(crate::value::Origin::output(by.clone(), span, n - i, Some(&spatial[i]))) },
            None => Dim::unknown(),
        }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

/// `F.conv{n}d(input, weight, bias, stride, padding, dilation, groups)` and
/// `F.conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
/// A bias is modelled when it certainly has the output's channels.
#[allow(clippy::too_many_arguments)]
pub(super) fn functional(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, transposed: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let groups = match b.get("groups") {
        None => Some(Poly::constant(1)),
        Some(v) => v.as_int().cloned(),
    };
    // torch rejects a non-positive groups before looking at the tensors
    if let Some(g) = &groups
        && !check_groups_positive(cx, &st, span, what, g) {
            return Vec::new();
        }
    let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    if ws.rank() != Some(n + 2) {
        let bad = Tri::from_bool(ws.rank().is_some());
        cx.check(&st, span, bad, |_| (LayerInputRankMismatch::WeightRank { op: what.into(), rank: (n + 2).to_string() }, Vec::new()));
        return if bad == Tri::True { Vec::new() } else { vec![(st, Value::Unknown)] };
    }
    let (Some(groups), Some(w0), Some(w1)) = (groups, ws.dims[0].v.clone(), ws.dims[1].v.clone()) else { return vec![(st, Value::Unknown)] };
    let Some((same, p)) = conv_padding(b.get("padding"), n) else { return vec![(st, Value::Unknown)] };
    let (Some(k), Some(s), Some(d)) = (ws.dims[2..].iter().map(|d| d.v.clone()).collect::<Option<Vec<Poly>>>(), ntuple(b.get("stride"), n, 1), ntuple(b.get("dilation"), n, 1)) else {
        return vec![(st, Value::Unknown)];
    };
    let op = if transposed { ntuple(b.get("output_padding"), n, 0) } else { Some(vec![Poly::constant(0); n]) };
    let Some(op) = op else { return vec![(st, Value::Unknown)] };
    if transposed && same {
        return vec![(st, Value::Unknown)];
    }
    if same {
        let strided = s.iter().any(|x| x.as_const().is_some_and(|c| c != 1));
        if !cx.check(&st, span, Tri::from_bool(strided), |_| (InvalidShapeArgument::SameStrided { op: what.into() }, Vec::new())) {
            return Vec::new();
        }
    }
    // weight [out, in/groups, k...] (transposed: [in, out/groups, k...])
    let (ic, oc) = if transposed { (w0.clone(), w1.mul(&groups)) } else { (w1.mul(&groups).unwrap_or(w1.clone()), Some(w0.clone())) };
    let bias_ok = match &oc {
        Some(oc) => optional_exact(cx, &st, b.get("bias"), &[Dim::known(oc.clone(), None)]),
        None => matches!(b.get("bias"), None | Some(Value::None)),
    };
    if !bias_ok {
        return vec![(st, Value::Unknown)];
    }
    if !check_divisible(cx, &st, span, &w0, &groups, |size, groups| InvalidShapeArgument::WeightGroups { op: what.into(), size, groups }) {
        return Vec::new();
    }
    let cfg = ConvCfg { ic, oc, k, s, p, d, op, same, transposed, why: None, at: None };
    conv_with(cx, st, t, &cfg, n, what, span)
}
