//! The text of a dim's origin chain (`value::origin`): what a message ends with, what the
//! `full` format, hover and the editor's related information show, and what the torch oracle
//! checks (`tests/test_origins.py`: every number of a chain is the size torch computes there).
//!
//! A chain is a tree of links: the cited dim first, then what it was computed from, each a
//! step deeper: the factors of a flattened dim, the input dim a layer's output came from.

use crate::models::ctx::ModelCtx;
use crate::value::{Dim, Origin, State};

/// How many links a chain shows at most (its full form).
const MAX_LINKS: usize = 16;

pub use crate::diagnostics::OriginLink as Link;

/// The origin chain of `d`, when it has one.
pub fn chain(cx: &dyn ModelCtx, st: &State, d: &Dim) -> Vec<Link> {
    let mut out = Vec::new();
    walk(cx, st, d, 0, &mut out);
    out
}

/// The text of a dim's value in the path's terms.
fn value_text(cx: &dyn ModelCtx, st: &State, d: &Dim) -> String {
    cx.dim_text(Some(st), d)
}

/// The layer's name without its defining place (`pool` of `pool (line 9)`).
fn bare(by: &str) -> String {
    by.split(" (").next().unwrap_or(by).to_string()
}

fn walk(cx: &dyn ModelCtx, st: &State, d: &Dim, depth: usize, out: &mut Vec<Link>) {
    let Some(why) = &d.why else { return };
    if out.len() >= MAX_LINKS {
        return;
    }
    let v = value_text(cx, st, d);
    let value = d.v.as_ref().map(|p| st.facts.normalize(p)).and_then(|p| p.as_const());
    let mut link = Link { text: String::new(), value, kind: "said", place: None, pos: 0, by: None, depth };
    match &**why {
        Origin::Said(t) => link.text = format!("{v} from {t}"),
        Origin::Written { by, at, pos } => {
            let place = cx.place(*at);
            link.text = format!("{v} from {by} at {place}");
            (link.kind, link.place, link.pos, link.by) = ("written", Some(place), *pos as usize, Some(bare(by)));
        }
        Origin::Output { by, at, pos, from, .. } => {
            let place = cx.place(*at);
            // a run of calls of the same layer at the same place (a helper block's conv, called
            // for each block): one link, with the run's length
            let (mut next, mut calls) = (from.as_ref(), 1);
            while let Some(Origin::Output { by: b, at: a, from: f, .. }) = next.and_then(|d| d.why.as_deref())
                && b == by
                && a == at
            {
                (next, calls) = (f.as_ref(), calls + 1);
            }
            let run = if calls > 1 { format!(", the last of {calls} calls there") } else { String::new() };
            link.text = format!("{v} from {by} at {place}{run}");
            (link.kind, link.place, link.pos, link.by) = ("output", Some(place), *pos as usize, Some(bare(by)));
            out.push(link);
            if let Some(f) = next {
                walk(cx, st, f, depth + 1, out);
            }
            return;
        }
        Origin::Merged { how, at, pos, parts, .. } => {
            let place = if how.is_empty() { String::new() } else { cx.place(*at) };
            let factors: Vec<String> = parts.iter().map(|p| value_text(cx, st, p)).collect();
            // the layer whose output was merged, when every part it made came out of it
            let makers: Vec<(&str, crate::ir::Span)> = parts
                .iter()
                .filter_map(|p| match p.why.as_deref() {
                    Some(Origin::Output { by, at, .. }) => Some((&**by, *at)),
                    _ => None,
                })
                .collect();
            let from = match makers.first() {
                Some(first) if makers.iter().all(|m| m == first) => format!(" from {}", first.0),
                _ => String::new(),
            };
            let op = if *how == "concatenated" { " + " } else { "·" };
            if how.is_empty() {
                link.text = format!("{v} = {}{from}", factors.join(op));
                link.kind = "product";
            } else {
                link.text = format!("{v} = {}{from}, {how} at {place}", factors.join(op));
                (link.kind, link.place, link.pos) = ("merged", Some(place), *pos as usize);
            }
            out.push(link);
            // each part's own chain, once for parts that tell the same
            let mut shown: Vec<String> = Vec::new();
            for p in parts {
                let mut sub = Vec::new();
                walk(cx, st, p, depth + 1, &mut sub);
                if let Some(first) = sub.first()
                    && !shown.contains(&first.text)
                {
                    shown.push(first.text.clone());
                    for l in sub {
                        if out.len() < MAX_LINKS {
                            out.push(l);
                        }
                    }
                }
            }
            return;
        }
    }
    out.push(link);
}

/// The chain's lines for a trace: each link indented by its depth.
pub fn lines(links: &[Link]) -> Vec<String> {
    links.iter().map(|l| format!("{}{}", "  ".repeat(l.depth), l.text)).collect()
}
