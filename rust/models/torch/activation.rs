//! Which tensors are probabilities a softmax or a sigmoid made (`Tensor::act`), for the losses
//! that apply that function themselves (SHP308, `rules/training/probabilities_as_logits.rs`).
//!
//! The dispatch marks the outputs of `softmax` (`F.softmax`, `torch.softmax`, `x.softmax`,
//! `nn.Softmax`) and `sigmoid` (`torch.sigmoid`, `F.sigmoid`, `x.sigmoid`, `nn.Sigmoid`), keeps
//! the mark through the ops that only move or reshape values ([`KEEPS`]), and every other op
//! makes a fresh tensor without it. `CrossEntropyLoss` then checks its input for softmax
//! probabilities, `NLLLoss` too (it takes log-probabilities), and `BCEWithLogitsLoss` for
//! sigmoid ones. The check warns on the path (the
//! line runs); the report rule reports it where every path to the loss carries the mark.

use std::rc::Rc;

use crate::ir::Span;
use crate::models::ctx::ModelCtx;
use crate::rules::training::probabilities_as_logits::{ProbabilitiesAsLogits, RULE};
use crate::rules::violation::Violation;
use crate::value::*;

/// The function a call of `name` (a `torch.`/`F.` function's or a tensor method's last name, a
/// layer's class) applies, when it makes probabilities.
pub fn of(name: &str) -> Option<Act> {
    match name {
        "softmax" | "Softmax" => Some(Act::Softmax),
        "sigmoid" | "Sigmoid" => Some(Act::Sigmoid),
        _ => None,
    }
}

/// The ops whose result holds the input's values, moved or reshaped: the mark stays.
pub const KEEPS: &[&str] = &[
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "unflatten", "contiguous", "clone", "detach", "to", "float", "double", "half", "cpu", "cuda",
    "transpose", "permute", "t", "view_as", "reshape_as", "movedim", "swapaxes", "Flatten", "Unflatten", "Identity",
];

fn stamp(out: Vals, act: Option<(Act, Span)>) -> Vals {
    if act.is_none() {
        return out;
    }
    out.into_iter()
        .map(|(st, v)| match v {
            Value::Tensor(t) if t.act != act => (st, Value::Tensor(Rc::new(Tensor { act, ..(*t).clone() }))),
            v => (st, v),
        })
        .collect()
}

/// The results of a call of `name` marked: probabilities made at `span`, or the input's mark
/// kept (`src`: the receiver, or the first argument).
pub fn after(out: Vals, name: &str, src: Option<&Value>, span: Span) -> Vals {
    if let Some(a) = of(name) {
        return stamp(out, Some((a, span)));
    }
    match src {
        Some(Value::Tensor(t)) if t.act.is_some() && KEEPS.contains(&name) => stamp(out, t.act),
        _ => out,
    }
}

/// The losses that apply a function to their input themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// `CrossEntropyLoss`: `log_softmax`.
    LogSoftmax,
    /// `BCEWithLogitsLoss`: `sigmoid`.
    Sigmoid,
    /// `NLLLoss`: none, it takes log-probabilities (`log_softmax`'s output), not probabilities.
    TakesLog,
}

/// SHP308 on this path: the input of a loss that applies softmax (sigmoid) itself is the output
/// of a softmax (sigmoid). A warning: the path goes on.
pub fn check_loss(cx: &mut dyn ModelCtx, st: &State, loss: &str, applies: Applies, input: &Tensor, span: Span) {
    let Some((act, at)) = input.act else { return };
    let (fits, act_name, applies_name) = match applies {
        Applies::LogSoftmax => (act == Act::Softmax, "a softmax", "log_softmax"),
        Applies::Sigmoid => (act == Act::Sigmoid, "a sigmoid", "sigmoid"),
        Applies::TakesLog => (act == Act::Softmax, "a softmax", ""),
    };
    if !fits {
        return;
    }
    let (shape, place) = (cx.show_shape(st, &input.shape), cx.place(at));
    let v = match applies {
        Applies::TakesLog => ProbabilitiesAsLogits::NotLog { loss: loss.into(), shape, place },
        _ => ProbabilitiesAsLogits::Twice { loss: loss.into(), shape, act: act_name.into(), place, applies: applies_name.into() },
    };
    cx.warn(st, span, &RULE, v.message());
}
