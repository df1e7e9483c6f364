//! Recurrent layers: `nn.RNN/LSTM/GRU` (with `proj_size`, initial states, unbatched input) and
//! the cells `nn.RNNCell/LSTMCell/GRUCell`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::layers::{layer_name, number, require_rank, show_number, Bound, Module, Nn};
use super::tensor::tensor_value;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::Span;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch};
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};

/// Which recurrence: of a layer (`nn.LSTM`) or a cell (`nn.LSTMCell`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rnn {
    Rnn,
    Lstm,
    Gru,
}

const CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::layer_channel_mismatch::RULE];

// `bias` changes values only. `dropout` (a number in [0, 1]), `nonlinearity` ('tanh' or
// 'relu'; a layer's when built, a cell's when called) and the sizes (positive) are read for
// torch's checks. `proj_size` is keyword-only for RNN and GRU, where torch rejects it even as 0
// (a positional one is not modelled).
pub const NN: &[Nn] = &[
    Nn::module(
        Decl::module(
            "torch.nn.RNN",
            "input_size, hidden_size, num_layers=1, nonlinearity=\"tanh\", ~bias=True, batch_first=False, dropout=0.0, bidirectional=False, *, proj_size=0, ~device=None",
            "input, hx=None",
        )
        .checks(CHECKS),
        Module::Recurrent(Rnn::Rnn),
    ),
    Nn::module(
        Decl::module("torch.nn.LSTM", "input_size, hidden_size, num_layers=1, ~bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, ~device=None", "input, hx=None").checks(CHECKS),
        Module::Recurrent(Rnn::Lstm),
    ),
    Nn::module(
        Decl::module("torch.nn.GRU", "input_size, hidden_size, num_layers=1, ~bias=True, batch_first=False, dropout=0.0, bidirectional=False, *, proj_size=0, ~device=None", "input, hx=None").checks(CHECKS),
        Module::Recurrent(Rnn::Gru),
    ),
    Nn::module(Decl::module("torch.nn.RNNCell", "input_size, hidden_size, ~bias=True, nonlinearity=\"tanh\", ~device=None", "input, hx=None").checks(CHECKS), Module::Cell(Rnn::Rnn)),
    Nn::module(Decl::module("torch.nn.LSTMCell", "input_size, hidden_size, ~bias=True, ~device=None", "input, hx=None").checks(CHECKS), Module::Cell(Rnn::Lstm)),
    Nn::module(Decl::module("torch.nn.GRUCell", "input_size, hidden_size, ~bias=True, ~device=None", "input, hx=None").checks(CHECKS), Module::Cell(Rnn::Gru)),
];

/// A nonlinearity torch does not know (`'tanh'` and `'relu'` are); an unknown one is not judged.
fn check_nonlinearity(cx: &mut dyn ModelCtx, st: &State, v: Option<&Value>, what: &str, span: Span) -> bool {
    let Some(Value::Str(Some(f))) = v else { return true };
    cx.check(st, span, Tri::from_bool(!matches!(&**f, "tanh" | "relu")), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "nonlinearity".into(), value: format!("'{f}'"), should: "be 'tanh' or 'relu'".into() }, Vec::new())
    })
}

/// Constructor checks, in torch's order (`RNN.__init__`/`GRU.__init__`, then
/// `RNNBase.__init__`): `proj_size` (even 0) only for LSTM; RNN's nonlinearity; `dropout` a
/// number in [0, 1] (not a bool); `input_size`, `hidden_size`, `num_layers` greater than zero
/// (symbolic sizes: formulas the facts decide); `proj_size` at least 0 and smaller than
/// `hidden_size`.
pub fn construct_checks(cx: &mut dyn ModelCtx, st: &State, kind: &str, which: Rnn, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let proj = amap.get("proj_size");
    if which != Rnn::Lstm && proj.is_some() && !cx.check(st, span, Tri::True, |_| (InvalidShapeArgument::ProjSizeNotLstm { op: kind.into() }, Vec::new())) {
        return false;
    }
    if which == Rnn::Rnn && !check_nonlinearity(cx, st, amap.get("nonlinearity"), kind, span) {
        return false;
    }
    if let Some(d) = amap.get("dropout") {
        let bad = match d {
            Value::Bool(_) => Tri::True,
            v => match number(v) {
                Some(x) => Tri::from_bool(!(0.0..=1.0).contains(&x)),
                None => Tri::Unknown,
            },
        };
        if bad != Tri::Unknown && !cx.check(st, span, bad, |_| (InvalidShapeArgument::ArgMust { op: kind.into(), name: "dropout".into(), value: show_number(d), should: "be a number in range [0, 1]".into() }, Vec::new())) {
            return false;
        }
    }
    for key in ["input_size", "hidden_size", "num_layers"] {
        let Some(Value::Int(n)) = amap.get(key) else { continue };
        if !cx.check(st, span, Formula::cmp(n, Rel::Le, &Poly::constant(0)), |cx| {
            (InvalidShapeArgument::ArgMust { op: kind.into(), name: key.into(), value: n.display(cx.syms()), should: "be greater than zero".into() }, Vec::new())
        }) {
            return false;
        }
    }
    let Some(p) = proj.and_then(|v| v.as_const_int()) else { return true };
    if !cx.check(st, span, Tri::from_bool(p < 0), |_| (InvalidShapeArgument::ArgMust { op: kind.into(), name: "proj_size".into(), value: p.to_string(), should: "be a positive integer or zero to disable projections".into() }, Vec::new())) {
        return false;
    }
    if p == 0 {
        return true;
    }
    let Some(h) = amap.get("hidden_size").and_then(|v| v.as_const_int()) else { return true };
    cx.check(st, span, Tri::from_bool(p >= h), |_| {
        (InvalidShapeArgument::ProjSizeTooLarge { op: kind.into(), proj_size: p.to_string(), hidden_size: h.to_string() }, Vec::new())
    })
}

/// Check that a state tensor has exactly the shape `want`; `what` names it. Unknown dims and
/// ranks are not decided. Returns false when torch raises.
fn check_state(cx: &mut dyn ModelCtx, st: &State, v: &Value, want: &[Dim], what: &str, span: Span) -> bool {
    let Value::Tensor(h) = v else { return true };
    let s = st.resolve(&h.shape);
    let Some(r) = s.rank() else { return true };
    let shown = cx.show_shape(st, &s);
    let wshown = cx.show_shape(st, &Shape::known(want.to_vec()));
    let mut violated = Tri::from_bool(r != want.len());
    if violated == Tri::False {
        for (a, b) in s.dims.iter().zip(want) {
            match cx.dim_eq(st, a, b) {
                Tri::False => {
                    violated = Tri::True;
                    break;
                }
                Tri::Unknown => violated = Tri::Unknown,
                Tri::True => {}
            }
        }
    }
    // undecided, in the SHP902 run: the formula over the dims, for Z3
    let violated: crate::shape::Formula = match violated {
        Tri::Unknown if cx.free_params() => crate::shape::Formula::Or(s.dims.iter().zip(want).map(|(a, b)| crate::shape::Formula::eq_opt(a.v.as_ref(), b.v.as_ref()).not()).collect()),
        t => t.into(),
    };
    cx.check(st, span, violated, |_| (InvalidShapeArgument::StateShape { op: what.into(), want: wshown, shape: shown }, Vec::new()))
}

/// `nn.RNN/GRU/LSTM`: input `[L, N, H_in]` (`[N, L, H_in]` with batch_first) or unbatched
/// `[L, H_in]`; output `[.., D*H_out]` and the final state `[D*num_layers, N, H_out]`
/// (`H_out` is `proj_size` when set; LSTM's cell state keeps `hidden_size`). An initial state
/// must have the final state's shape.
pub fn rnn(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, which: Rnn, b: &Bound, span: Span) -> Vals {
    let Some(cfg) = Config::of(l, which) else { return vec![(st, Value::Unknown)] };
    let (who, kind) = (layer_name(l), l.kind.to_string());
    let mut out = Vec::new();
    let fixed = [(1usize, Some(cfg.input_size.clone()))];
    let names: &[&str] = if cfg.batch_first { &["B", "T", "F"] } else { &["T", "B", "F"] };
    for (st, s) in require_rank(cx, st, t, &[2, 3], names, &fixed, span, &format!("{who}{kind}: ")) {
        let batch = (s.dims.len() == 3).then(|| if cfg.batch_first { s.dims[0].clone() } else { s.dims[1].clone() });
        if let Some((st, o, h)) = run(cx, st, &cfg, l, which, &s, t.dtype, batch, b, span) {
            let v = match o {
                Some(o) => Value::Tuple(Rc::new(vec![tensor_value(o, t.dtype), h])),
                None => Value::Unknown,
            };
            out.push((st, v));
        }
    }
    out
}

/// What a recurrent layer's call reads of its constructor's arguments.
pub struct Config {
    input_size: Poly,
    hidden: Poly,
    layers: Poly,
    batch_first: bool,
    bidir: bool,
    proj: Option<Poly>,
}

impl Config {
    pub fn input_size(&self) -> &Poly {
        &self.input_size
    }

    /// None when one of them is not known.
    pub fn of(l: &Layer, which: Rnn) -> Option<Config> {
        let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
        let (input_size, hidden) = (int("input_size")?, int("hidden_size")?);
        let layers = match l.args.get("num_layers") {
            None => Poly::constant(1),
            Some(v) => v.as_int()?.clone(),
        };
        let flag = |k: &str| match l.args.get(k) {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        };
        let proj = match l.args.get("proj_size") {
            None => None,
            Some(v) => match v.as_int() {
                Some(p) if p.as_const() == Some(0) => None,
                Some(p) if which == Rnn::Lstm => Some(p.clone()),
                _ => return None,
            },
        };
        Some(Config { input_size, hidden, layers, batch_first: flag("batch_first")?, bidir: flag("bidirectional")?, proj })
    }
}

/// The recurrence over an input whose feature dim is the last of `s` and whose other dims the
/// output keeps (`[L, N, H_in]`, `[L, H_in]`, or a PackedSequence's data `[sum of lengths,
/// H_in]`), of `batch` sequences (None: unbatched). Checks the input size and the initial
/// state (`dtype`: the input's); None when torch raises. Else the output's shape (None: not modelled) and the final
/// state (LSTM's `(h, c)`).
#[allow(clippy::too_many_arguments)]
pub fn run(cx: &mut dyn ModelCtx, st: State, cfg: &Config, l: &Layer, which: Rnn, s: &Shape, dtype: Option<DType>, batch: Option<Dim>, b: &Bound, span: Span) -> Option<(State, Option<Shape>, Value)> {
    let (who, kind) = (layer_name(l), l.kind.to_string());
    // the initial state: a tensor, or LSTM's `(h0, c0)`
    let (h0, c0) = match (which, b.get("hx")) {
        (_, None | Some(Value::None)) => (None, None),
        (Rnn::Lstm, Some(hc)) => match pair(&st, hc) {
            Some((h, c)) => (Some(h), Some(c)),
            None => return Some((st, None, Value::Unknown)),
        },
        (_, Some(h)) => (Some(h.clone()), None),
    };
    let h_out = cfg.proj.clone().unwrap_or_else(|| cfg.hidden.clone());
    let d = if cfg.bidir { 2 } else { 1 };
    let r = s.dims.len();
    if !input_size_fits(cx, &st, s, &cfg.input_size, &who, &kind, span) {
        return None;
    }
    // (the output's features: both directions' hidden states, or their projections, side by side)
    let size = if cfg.proj.is_some() { "proj_size" } else { "hidden_size" };
    let said = |text: String| l.label.as_ref().map(|lbl| crate::value::Origin::said(format!("{text} of {lbl}")));
    let both = |lbl: &std::rc::Rc<str>| crate::value::Origin::said(format!("2·{size} of {lbl}, bidirectional"));
    let mut odims = s.dims[..r - 1].to_vec();
    odims.push(Dim { v: h_out.mul(&Poly::constant(d)), why: if d == 2 { l.label.as_ref().map(both) } else { said(size.to_string()) } });
    let nl = Dim { v: cfg.layers.mul(&Poly::constant(d)), why: None };
    let state = |last: &Poly, what: &str| {
        let mut v = vec![nl.clone()];
        v.extend(batch.clone());
        v.push(Dim { v: Some(last.clone()), why: said(what.to_string()) });
        v
    };
    let (hs, cs) = (state(&h_out, size), state(&cfg.hidden, "hidden_size"));
    if let Some(h) = &h0
        && !check_state(cx, &st, h, &hs, &format!("{who}{kind} initial hidden state"), span)
    {
        return None;
    }
    if let Some(c) = &c0
        && !check_state(cx, &st, c, &cs, &format!("{who}{kind} initial cell state"), span)
    {
        return None;
    }
    let h = tensor_value(Shape::known(hs), dtype);
    let hstate = if which == Rnn::Lstm { Value::Tuple(Rc::new(vec![h, tensor_value(Shape::known(cs), dtype)])) } else { h };
    Some((st, Some(Shape::known(odims)), hstate))
}

/// LSTM's state `(h, c)`: any sequence of two items, a tuple or a list (torch takes both,
/// `[h0, c0]`, `[h.detach() for h in hidden]`).
fn pair(st: &State, v: &Value) -> Option<(Value, Value)> {
    let items: &[Value] = match v {
        Value::Tuple(items) => items,
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => items,
            _ => return None,
        },
        _ => return None,
    };
    match items {
        [h, c] => Some((h.clone(), c.clone())),
        _ => None,
    }
}

/// The input's last dim is the layer's `input_size` (SHP107). False: torch raises (recorded).
fn input_size_fits(cx: &mut dyn ModelCtx, st: &State, s: &Shape, input_size: &Poly, who: &str, kind: &str, span: Span) -> bool {
    let feat = s.dims[s.dims.len() - 1].clone();
    cx.expect_dim(st, span, s, &feat, input_size, Vec::new(), |shape, last, want| {
        LayerChannelMismatch::LastDim { layer: format!("{who}{kind}"), param: "input_size".into(), want, name: "input".into(), shape, last }
    })
}

/// `nn.RNNCell/GRUCell/LSTMCell`: input `[N, H_in]` or unbatched `[H_in]`; state `[N, H]`
/// (`[H]`); LSTMCell returns `(h, c)`.
pub fn cell(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, which: Rnn, b: &Bound, span: Span) -> Vals {
    let hx = b.get("hx");
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(input_size), Some(hidden)) = (int("input_size"), int("hidden_size")) else { return vec![(st, Value::Unknown)] };
    let kind = l.kind.to_string();
    let states: Vec<Value> = match (which, hx) {
        (_, None | Some(Value::None)) => Vec::new(),
        (Rnn::Lstm, Some(hc)) => match pair(&st, hc) {
            Some((h, c)) => vec![h, c],
            None => return vec![(st, Value::Unknown)],
        },
        (_, Some(h)) => vec![h.clone()],
    };
    let who = layer_name(l);
    let mut out = Vec::new();
    let fixed = [(1usize, Some(input_size.clone()))];
    for (st, s) in require_rank(cx, st, t, &[1, 2], &["B", "F"], &fixed, span, &format!("{who}{kind}: ")) {
        let r = s.dims.len();
        // RNNCell's forward picks its nonlinearity after the rank checks, before the C++ cell
        if which == Rnn::Rnn && !check_nonlinearity(cx, &st, l.args.get("nonlinearity"), &format!("{who}{kind}"), span) {
            continue;
        }
        if !input_size_fits(cx, &st, &s, &input_size, &who, &kind, span) {
            continue;
        }
        let why = l.label.clone().map(|lbl| crate::value::Origin::said(format!("hidden_size of {lbl}")));
        let mut hdims: Vec<Dim> = s.dims[..r - 1].to_vec();
        hdims.push(Dim { v: Some(hidden.clone()), why });
        let mut ok = Some(true);
        for (k, h) in states.iter().enumerate() {
            let Value::Tensor(ht) = h else { continue };
            // torch adds the batch dim to both an unbatched input and its state
            let hs = st.resolve(&ht.shape);
            let Some(hr) = hs.rank() else { continue };
            if hr + (2 - r) != 2 {
                ok = None; // not modelled: a state of another rank
                break;
            }
            if !check_state(cx, &st, h, &hdims, &format!("{who}{kind} hidden{k}"), span) {
                ok = Some(false);
                break;
            }
        }
        match ok {
            Some(false) => continue,
            None => {
                out.push((st, Value::Unknown));
                continue;
            }
            Some(true) => {}
        }
        let h = tensor_value(Shape::known(hdims.clone()), t.dtype);
        let v = if which == Rnn::Lstm { Value::Tuple(Rc::new(vec![h.clone(), h])) } else { h };
        out.push((st, v));
    }
    out
}
