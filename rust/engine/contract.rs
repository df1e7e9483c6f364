//! A model's input contract (`shape-lint summary --model NAME`): what its `forward` needs of
//! the sizes of its inputs, read off the paths of a run with inputs of symbolic sizes.
//!
//! A check the core cannot decide on a path (`Conv2d(in_channels=1)` on an input of unknown
//! channels) lets the path go on with the executions where it holds (`State::assumed`, when
//! undecided checks are exported). At the end of `forward`, each path that completed carries
//! those preconditions: with the facts of its branches they are what an input must satisfy
//! for that path to run. A precondition that fixes one input size (`C = 1`) is shown in the
//! input's shape (`[N, 1, H, W]`); the others are listed with the line that checked them
//! (`16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304`, line 15). A size a layer's first use
//! fixed (`ModelCtx::fixed_by`: `Conv2d(1, ...)`'s channel) is shown in the shape and is a
//! clause of its own with the line of that use (`x.size(1) == 1`). A precondition the core cannot express
//! (`Formula::Opaque`) is never assumed, so a contract may say less than torch requires: it is
//! what the core knows, never a guess.

use std::fmt::Write;

use super::interp::Interp;
use crate::ir::Span;
use crate::shape::{Cond, Formula, Rel};
use crate::value::*;

/// One input contract: the inputs' shapes (`None`: not a tensor, or of unknown rank) and the
/// other conditions, each with the line that checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// The names of `forward`'s inputs (`x`), as many as `inputs` when known (else empty).
    pub names: Vec<String>,
    pub inputs: Vec<Option<String>>,
    /// Each input's dims as shown (`None`: not a tensor, or of unknown rank).
    pub dims: Vec<Option<Vec<String>>>,
    pub clauses: Vec<Clause>,
    /// The names of the sizes it mentions that are not sizes of the inputs: the model's own
    /// (a constructor's argument, an option), which the inputs must match (`[N, in_channels,
    /// H, W]`).
    pub params: Vec<String>,
    /// The contract as SMT-LIB (`shape::smt::contract_script`): its sizes' ranges, the facts
    /// and the path condition, and `in_I_J` declared equal to the `J`th dim of input `I`
    /// (`python/shape_lint/summary.py` asks Z3 for examples and counterexamples).
    pub smt: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// `16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304`.
    pub text: String,
    /// The 1-based line of the check, in the checked file (`None`: another file).
    pub line: Option<usize>,
    /// An equation that fixes an input size, shown in the input's shape (`C == 1`: `[N, 1,
    /// H, W]`).
    pub fixed: bool,
    /// The condition as an SMT-LIB term (`None`: not encodable).
    pub smt: Option<String>,
}

/// A condition as people write it: `16*((H - 6) // 2 + 1)*((W - 6) // 2 + 1) == 2304` rather
/// than `16*((H - 6) // 2 + ((H - 6) // 2)*((W - 6) // 2) + (W - 6) // 2) == 2288`. The core
/// keeps a product of sizes expanded; when the terms without the constant are such a product
/// but for its constant `t`, the sides are shown with `t` added to both.
fn describe(syms: &crate::shape::Symbols, c: &Cond) -> String {
    // `0 <= (H - 6) // 2` is `6 <= H` (a positive divisor)
    if let [(mono, k)] = c.poly.terms().collect::<Vec<_>>()[..]
        && c.rel == Rel::Le
        && *k < 0
        && let [crate::shape::Atom::FloorDiv(n, d)] = &mono[..]
        && d.as_const().is_some_and(|d| d >= 1)
        && let Some(p) = n.neg()
    {
        return describe(syms, &Cond { poly: p, rel: Rel::Le });
    }
    let plain = crate::shape::describe_cond(syms, c);
    let shown = (|| {
        let c0 = c.poly.terms().find(|(m, _)| m.is_empty()).map_or(0, |(_, k)| *k);
        let rest = c.poly.add_const(-c0)?;
        let (top, coef) = rest.terms().max_by_key(|(m, _)| m.len())?;
        if top.len() < 2 || rest.terms().any(|(_, k)| *k <= 0) {
            return None;
        }
        // the constant of `coef * prod(a + k_a)`, each `k_a` read off the term without `a`
        let mut t = *coef;
        for i in 0..top.len() {
            let mut without = top.clone();
            without.remove(i);
            let k = rest.terms().find(|(m, _)| **m == without).map_or(0, |(_, k)| *k);
            if k % coef != 0 {
                return None;
            }
            t = t.checked_mul(k / coef)?;
        }
        let lhs = rest.add_const(t)?.display(syms);
        let op = match c.rel {
            Rel::Eq => "==",
            Rel::Ne => "!=",
            Rel::Lt => "<",
            Rel::Le => "<=",
        };
        let text = format!("{lhs} {op} {}", t.checked_sub(c0)?);
        (text.len() < plain.len()).then_some(text)
    })();
    shown.unwrap_or(plain)
}

/// The conditions of a formula the path assumed, as conditions (a conjunction is its parts; a
/// disjunction is not one condition: `None`).
fn conds(f: &Formula, out: &mut Vec<Cond>) -> Option<()> {
    match f {
        Formula::Cond(c) => out.push(c.clone()),
        Formula::Not(g) => match &**g {
            Formula::Cond(c) => out.push(c.negate()?),
            Formula::Or(gs) => {
                for g in gs {
                    conds(&g.clone().not(), out)?;
                }
            }
            _ => return None,
        },
        Formula::And(gs) => {
            for g in gs {
                conds(g, out)?;
            }
        }
        Formula::Const(true) => {}
        _ => return None,
    }
    Some(())
}

impl Interp<'_> {
    /// The contract of one completed path of a `forward` called with `inputs`; `None` when a
    /// precondition it assumed is not a conjunction of conditions.
    /// `before`: how many preconditions the path had assumed when `forward` was called (the
    /// script's own, before: not the contract's).
    /// `input_names`: `forward`'s parameters after `self`.
    pub fn contract(&self, st: &State, inputs: &[Value], before: usize, input_names: &[String]) -> Option<Contract> {
        // the inputs' dims (`None`: not a tensor; `Some((prefix, dims))`)
        let shapes: Vec<Option<(bool, Vec<Option<crate::shape::Poly>>)>> = inputs
            .iter()
            .map(|v| match v {
                Value::Tensor(t) => {
                    let s = st.resolve(&t.shape);
                    Some((s.prefix.is_some(), s.dims.iter().map(|d| d.v.clone()).collect()))
                }
                _ => None,
            })
            .collect();
        // a leading size read before the input's rank was known (`B = x.size(0)`) is the
        // input's dim there, on a path that learnt its rank
        let mut base = st.facts.clone();
        for (v, s) in inputs.iter().zip(&shapes) {
            if let (Value::Tensor(t), Some((false, dims))) = (v, s)
                && t.shape.dims.is_empty()
                && let Some(var) = t.shape.prefix
            {
                crate::value::reads::note_pinned_var(var);
                for (d, dim) in dims.iter().enumerate().take(8) {
                    let key = crate::models::torch::tensor::leading_size_key(var, d);
                    if let (Some(b), Some(dim)) = (self.refined_dims.get(&key), dim)
                        && let Some(c) = Cond::cmp(b, Rel::Eq, dim)
                    {
                        base.assume(&self.syms, &c);
                    }
                }
            }
        }
        let normal = |facts: &crate::shape::Facts| -> Vec<Option<Vec<Option<crate::shape::Poly>>>> {
            shapes.iter().map(|s| s.as_ref().map(|(_, dims)| dims.iter().map(|d| d.as_ref().map(|p| facts.normalize(p))).collect())).collect()
        };
        let mut facts = base.clone();
        // (condition, where, fixed)
        let mut listed: Vec<(Cond, Span, bool)> = Vec::new();
        for f in st.assumed.borrow().iter().skip(before) {
            let at = self.assumed_at.iter().find(|(g, _)| g == f).map(|(_, s)| *s).unwrap_or_default();
            let mut cs = Vec::new();
            conds(f, &mut cs)?;
            for c in cs {
                if c.rel == Rel::Eq {
                    // an equation that fixes an input size shows in the input's shape
                    let before = normal(&facts);
                    let mut with = facts.clone();
                    if with.assume(&self.syms, &c) && normal(&with) != before {
                        facts = with;
                        listed.push((c, at, true));
                        continue;
                    }
                }
                listed.push((c, at, false));
            }
        }
        let dims = normal(&facts);
        let mut conds_left: Vec<(Cond, Span, bool)> = Vec::new();
        for (c, at, fixed) in listed {
            if fixed {
                conds_left.push((c, at, true));
                continue;
            }
            let c = Cond { poly: facts.normalize(&c.poly), rel: c.rel };
            if facts.decide(&self.syms, &c) != crate::shape::Tri::True {
                conds_left.push((c, at, false));
            }
        }
        // two sizes of one name (`B` for the batch and for the length) are told apart: `B_2`
        let mut used = std::collections::BTreeSet::new();
        for p in dims.iter().flatten().flatten().flatten() {
            p.collect_syms(&mut used);
        }
        for (c, _, fixed) in &conds_left {
            if !fixed {
                c.poly.collect_syms(&mut used);
            }
        }
        let mut names = self.syms.clone();
        let mut taken: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        for id in used {
            let name = self.syms.name(id).to_string();
            let n = taken.entry(name.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                names.infos[id as usize].name = format!("{name}_{n}");
            }
        }
        let shown_inputs = shapes
            .iter()
            .zip(&dims)
            .map(|(s, d)| {
                let (prefix, _) = s.as_ref()?;
                let dims: Vec<String> = d.as_ref()?.iter().map(|p| p.as_ref().map_or_else(|| "?".into(), |p| p.display(&names))).collect();
                Some(match (prefix, dims.is_empty()) {
                    (true, true) => "[*]".to_string(),
                    (true, false) => format!("[*, {}]", dims.join(", ")),
                    (false, _) => format!("[{}]", dims.join(", ")),
                })
            })
            .collect();
        // the dims of inputs of known rank, shown and as SMT-LIB names (these under the path's
        // own facts: the fixed sizes are clauses of the script, to be negated)
        let raw = normal(&base);
        let mut named: Vec<(String, crate::shape::Poly)> = Vec::new();
        // sizes a first use fixed to what it needs (`Conv2d(1, ...)`'s channel, at the line of
        // its call): a clause each, first (the first use is the input's first check)
        let mut used_fixed: Vec<(usize, usize, i128, Span)> = Vec::new();
        let shown: Vec<Option<Vec<String>>> = shapes
            .iter()
            .zip(dims.iter().zip(&raw))
            .enumerate()
            .map(|(i, (s, (d, r)))| {
                if s.as_ref()?.0 {
                    return None;
                }
                let d = d.as_ref()?;
                let var = match &inputs[i] {
                    Value::Tensor(t) if t.shape.dims.is_empty() => t.shape.prefix,
                    _ => None,
                };
                for (j, p) in r.as_ref()?.iter().enumerate() {
                    let at = var.and_then(|v| self.fixed_at.iter().find(|(w, k, _)| *w == v && *k == j)).map(|f| f.2);
                    match (p, at) {
                        (Some(p), Some(at)) if let Some(v) = p.as_const() => used_fixed.push((i, j, v, at)),
                        (Some(p), _) => named.push((format!("in_{i}_{j}"), p.clone())),
                        (None, _) => {}
                    }
                }
                Some(d.iter().map(|p| p.as_ref().map_or_else(|| "?".into(), |p| p.display(&names))).collect())
            })
            .collect();
        let mut clauses: Vec<Clause> = Vec::new();
        let formulas: Vec<Formula> = conds_left.iter().map(|(c, _, _)| Formula::Cond(c.clone())).collect();
        let path: Vec<&Cond> = st.branches.iter().filter_map(|b| if let crate::value::Branch::Sym(c) = b { Some(c) } else { None }).collect();
        let (mut smt, terms) = crate::shape::smt::contract_script(&self.syms, &base, &path, &named, &formulas);
        // the line of a check in the checked file
        let line_of = |at: Span| (at.file == crate::ir::FileId::MAIN && at != Span::default()).then(|| self.line(at));
        for &(i, j, v, at) in &used_fixed {
            // `in_I_J` free in the script, the clause fixing it
            let var = format!("in_{i}_{j}");
            let _ = writeln!(smt, "(declare-fun {var} () Int)\n(assert (>= {var} 1))");
            let input = input_names.get(i).cloned().unwrap_or_else(|| format!("input {i}"));
            clauses.push(Clause { text: format!("{input}.size({j}) == {v}"), line: line_of(at), fixed: true, smt: Some(format!("(= {var} {v})")) });
        }
        for ((c, at, fixed), term) in conds_left.iter().zip(terms) {
            let text = describe(&names, c);
            if !clauses.iter().any(|k| k.text == text) {
                clauses.push(Clause { text, line: line_of(*at), fixed: *fixed, smt: term });
            }
        }
        let mut mentioned = std::collections::BTreeSet::new();
        for p in dims.iter().flatten().flatten().flatten() {
            p.collect_syms(&mut mentioned);
        }
        for (c, _, _) in &conds_left {
            c.poly.collect_syms(&mut mentioned);
        }
        let params = mentioned
            .into_iter()
            .filter(|id| !matches!(self.syms.infos[*id as usize].param, Some(crate::shape::Param { kind: crate::shape::ParamKind::Input, .. })))
            .map(|id| names.name(id).to_string())
            .collect();
        let names = input_names.iter().take(inputs.len()).cloned().collect();
        Some(Contract { names, inputs: shown_inputs, dims: shown, clauses, params, smt })
    }
}
