//! Conditions the core could not decide, as SMT-LIB 2 text for the Z3 bridge
//! (`python/shape_lint/solver.py`).
//!
//! A check's violation is a [`Formula`] over [`Cond`]s. The core decides it three-valued
//! (Kleene logic over `Facts::decide`); when the answer is Unknown and the formula has no
//! [`Formula::Opaque`] leaf, [`query`] writes:
//! - `context`: a QF_NIA script with one `declare-fun` per symbol, the symbols' ranges, the
//!   equalities the facts solved, the path condition (its `Branch::Sym` entries), and the
//!   preconditions of the checks left undecided earlier on the path (the executions that reach
//!   this check are those where they held: without them an earlier failure on every execution
//!   would make every later check look violated too);
//! - `precondition`: one SMT-LIB term, the negation of the violation (what torch needs).
//!
//! The bridge reports only when `context` is SAT and `context ∧ precondition` is UNSAT.
//!
//! Only the symbols connected to the precondition (through facts and path conditions that
//! mention them) are written: dropping a fact only weakens the context, which can make
//! `context ∧ precondition` SAT (silence) but never UNSAT by itself.
//!
//! `a // b` and `a % b` are written as SMT-LIB `div` and `mod` only when the facts prove
//! `b >= 1`: for a positive divisor SMT-LIB's (Euclidean) `div`/`mod` are Python's floor
//! division and modulo, whatever the sign of `a`. Otherwise the term is not encodable; a fact
//! that mentions it is left out, and a precondition that mentions it is not exported.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{Atom, Cond, Facts, Poly, Rel, SymId, Symbols, Tri};

/// A three-valued formula over conditions: what a check's violation is.
#[derive(Debug, Clone, PartialEq)]
pub enum Formula {
    Const(bool),
    /// Undecided and not expressible (an unknown dim, an overflow): never exported.
    Opaque,
    Cond(Cond),
    Not(Box<Formula>),
    And(Vec<Formula>),
    Or(Vec<Formula>),
}

impl From<Tri> for Formula {
    fn from(t: Tri) -> Formula {
        match t {
            Tri::True => Formula::Const(true),
            Tri::False => Formula::Const(false),
            Tri::Unknown => Formula::Opaque,
        }
    }
}

impl From<bool> for Formula {
    fn from(b: bool) -> Formula {
        Formula::Const(b)
    }
}

impl Formula {
    /// `a rel b`, or `Opaque` when the difference overflows.
    pub fn cmp(a: &Poly, rel: Rel, b: &Poly) -> Formula {
        match Cond::cmp(a, rel, b) {
            Some(c) => Formula::Cond(c),
            None => Formula::Opaque,
        }
    }

    /// `a == b` for optional values (`None`: an unknown dim).
    pub fn eq_opt(a: Option<&Poly>, b: Option<&Poly>) -> Formula {
        match (a, b) {
            (Some(a), Some(b)) => Formula::cmp(a, Rel::Eq, b),
            _ => Formula::Opaque,
        }
    }

    pub fn not(self) -> Formula {
        match self {
            Formula::Const(b) => Formula::Const(!b),
            Formula::Not(f) => *f,
            f => Formula::Not(Box::new(f)),
        }
    }

    /// Kleene truth under `facts`: what the core decides by itself.
    pub fn decide(&self, facts: &Facts, syms: &Symbols) -> Tri {
        match self {
            Formula::Const(b) => Tri::from_bool(*b),
            Formula::Opaque => Tri::Unknown,
            Formula::Cond(c) => facts.decide(syms, c),
            Formula::Not(f) => f.decide(facts, syms).not(),
            Formula::And(fs) => {
                let mut out = Tri::True;
                for f in fs {
                    match f.decide(facts, syms) {
                        Tri::False => return Tri::False,
                        Tri::Unknown => out = Tri::Unknown,
                        Tri::True => {}
                    }
                }
                out
            }
            Formula::Or(fs) => {
                let mut out = Tri::False;
                for f in fs {
                    match f.decide(facts, syms) {
                        Tri::True => return Tri::True,
                        Tri::Unknown => out = Tri::Unknown,
                        Tri::False => {}
                    }
                }
                out
            }
        }
    }

    /// Every leaf is expressible.
    pub fn expressible(&self) -> bool {
        match self {
            Formula::Const(_) | Formula::Cond(_) => true,
            Formula::Opaque => false,
            Formula::Not(f) => f.expressible(),
            Formula::And(fs) | Formula::Or(fs) => fs.iter().all(|f| f.expressible()),
        }
    }

    /// The truth at the symbols' values `env`; `None` where a leaf has none (`Poly::eval`).
    pub fn eval(&self, env: &impl Fn(SymId) -> Option<i128>) -> Option<bool> {
        Some(match self {
            Formula::Const(b) => *b,
            Formula::Opaque => return None,
            Formula::Cond(c) => c.eval(env)?,
            Formula::Not(f) => !f.eval(env)?,
            Formula::And(fs) => {
                for f in fs {
                    if !f.eval(env)? {
                        return Some(false);
                    }
                }
                true
            }
            Formula::Or(fs) => {
                for f in fs {
                    if f.eval(env)? {
                        return Some(true);
                    }
                }
                false
            }
        })
    }

    fn conds<'f>(&'f self, out: &mut Vec<&'f Cond>) {
        match self {
            Formula::Cond(c) => out.push(c),
            Formula::Not(f) => f.conds(out),
            Formula::And(fs) | Formula::Or(fs) => fs.iter().for_each(|f| f.conds(out)),
            Formula::Const(_) | Formula::Opaque => {}
        }
    }
}

/// An undecided check as SMT-LIB 2 text (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Declarations, ranges, solved equalities and the path condition.
    pub context: String,
    /// The term that must hold for the call not to raise.
    pub precondition: String,
    /// The declared symbols, in order (their SMT-LIB names are `sym_name`).
    pub symbols: Vec<SymId>,
    /// Values of the symbols that satisfy `context ∧ precondition` (see [`witness`]): the
    /// Z3 bridge would answer SAT, so the check does not fail on every execution.
    pub witness: Option<Vec<(SymId, i128)>>,
}

/// The SMT-LIB query for a check whose violation is `violation`, on a path with `facts`,
/// symbolic branch conditions `path` and the preconditions `assumed` of earlier undecided
/// checks. `None` when the violation is not expressible or a term of it is not encodable
/// soundly.
pub fn query(syms: &Symbols, facts: &Facts, path: &[&Cond], assumed: &[Formula], violation: &Formula) -> Option<Query> {
    if !violation.expressible() {
        return None;
    }
    let enc = Encoder { syms, facts };
    let must_hold = violation.clone().not();
    let precondition = enc.formula(&must_hold)?;
    let mut pre_conds = Vec::new();
    violation.conds(&mut pre_conds);
    let mut seeds: BTreeSet<SymId> = BTreeSet::new();
    for c in &pre_conds {
        c.poly.collect_syms(&mut seeds);
    }
    let ctx = Context::new(&enc, path, assumed, seeds);
    let constraints: Vec<&Formula> = ctx.cands.iter().zip(&ctx.taken).filter(|(_, t)| **t).map(|(c, _)| &c.3).collect();
    let witness = witness(&ctx.ranges, &facts.inner.subst, &constraints, &must_hold);
    let out = ctx.text(syms);
    Some(Query { context: out, precondition, symbols: ctx.wanted.into_iter().collect(), witness })
}

/// A model's input contract as SMT-LIB text (`engine::contract`): the context of the symbols
/// of `named` and `clauses` (as [`query`] writes it, without earlier preconditions: the
/// clauses are those), then each of `named` declared and asserted equal to its term (an input's
/// dim: its value in a model is the size). Also each clause's term, `None` when it is not
/// encodable (and a named term that is not encodable is left out).
pub fn contract_script(syms: &Symbols, facts: &Facts, path: &[&Cond], named: &[(String, Poly)], clauses: &[Formula]) -> (String, Vec<Option<String>>) {
    let enc = Encoder { syms, facts };
    let mut seeds: BTreeSet<SymId> = BTreeSet::new();
    for (_, p) in named {
        p.collect_syms(&mut seeds);
    }
    for f in clauses {
        let mut conds = Vec::new();
        f.conds(&mut conds);
        conds.iter().for_each(|c| c.poly.collect_syms(&mut seeds));
    }
    let ctx = Context::new(&enc, path, &[], seeds);
    let mut out = ctx.text(syms);
    for (name, p) in named {
        if let Some(t) = enc.poly(p) {
            let _ = writeln!(out, "(declare-fun {name} () Int)\n(assert (= {name} {t}))");
        }
    }
    (out, clauses.iter().map(|f| enc.formula(f)).collect())
}

/// The constraints of a query's context: the symbols connected to its seeds (through facts,
/// path conditions and earlier preconditions that mention them), their ranges, and those
/// constraints.
struct Context {
    wanted: BTreeSet<SymId>,
    /// (symbols, text, kind, formula); un-encodable ones are left out (a weaker context).
    cands: Vec<(BTreeSet<SymId>, String, &'static str, Formula)>,
    taken: Vec<bool>,
    ranges: Vec<(SymId, Option<i128>, Option<i128>)>,
}

impl Context {
    fn new(enc: &Encoder<'_>, path: &[&Cond], assumed: &[Formula], mut wanted: BTreeSet<SymId>) -> Context {
        let (syms, facts) = (enc.syms, enc.facts);
        let mut cands: Vec<(BTreeSet<SymId>, String, &'static str, Formula)> = Vec::new();
        for (id, value) in &facts.inner.subst {
            let eq = Formula::cmp(&Poly::sym(*id), Rel::Eq, value);
            if let (Formula::Cond(c), Some(text)) = (&eq, enc.formula(&eq)) {
                let mut s = BTreeSet::new();
                c.poly.collect_syms(&mut s);
                cands.push((s, text, "solved equality", eq.clone()));
            }
        }
        for c in path {
            if let Some(text) = enc.cond(c) {
                let mut s = BTreeSet::new();
                c.poly.collect_syms(&mut s);
                cands.push((s, text, "path condition", Formula::Cond((*c).clone())));
            }
        }
        for f in assumed {
            if let Some(text) = enc.formula(f) {
                let mut conds = Vec::new();
                f.conds(&mut conds);
                let mut s = BTreeSet::new();
                conds.iter().for_each(|c| c.poly.collect_syms(&mut s));
                cands.push((s, text, "earlier precondition", f.clone()));
            }
        }
        let mut taken = vec![false; cands.len()];
        loop {
            let mut grew = false;
            for (i, (s, _, _, _)) in cands.iter().enumerate() {
                if !taken[i] && s.iter().any(|id| wanted.contains(id)) {
                    taken[i] = true;
                    wanted.extend(s.iter().copied());
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        // each symbol's bounds, as the context asserts them
        let ranges: Vec<(SymId, Option<i128>, Option<i128>)> = wanted
            .iter()
            .map(|id| {
                let iv = facts.range(syms, *id);
                let lo = match iv.lo {
                    super::Ext::Fin(lo) if lo != super::UNBOUNDED => Some(lo),
                    _ => None,
                };
                let hi = match iv.hi {
                    super::Ext::Fin(hi) => Some(hi),
                    _ => None,
                };
                (*id, lo, hi)
            })
            .collect();
        Context { wanted, cands, taken, ranges }
    }

    /// The declarations, ranges and constraints, facts first, then the path condition, each in
    /// the engine's order.
    fn text(&self, syms: &Symbols) -> String {
        let mut out = String::from("(set-logic QF_NIA)\n");
        for id in &self.wanted {
            let _ = writeln!(out, "(declare-fun {} () Int)", sym_name(syms, *id));
        }
        for (id, lo, hi) in &self.ranges {
            let name = sym_name(syms, *id);
            if let Some(lo) = lo {
                let _ = writeln!(out, "(assert (>= {name} {}))", int(*lo));
            }
            if let Some(hi) = hi {
                let _ = writeln!(out, "(assert (<= {name} {}))", int(*hi));
            }
        }
        for kind in ["solved equality", "path condition", "earlier precondition"] {
            for (i, (_, text, k, _)) in self.cands.iter().enumerate() {
                if self.taken[i] && *k == kind {
                    let _ = writeln!(out, "(assert {text}) ; {kind}");
                }
            }
        }
        out
    }
}

/// The values [`witness`] tries: every symbol at one of these (the `i`th of `n` symbols, in
/// id order, at `base + step * i`, or at `base + step * (n - 1 - i)` when descending), each
/// clamped into the symbol's range.
const WITNESS_VALUES: [(i128, i128, bool); 14] = [
    (1, 0, false),
    (2, 0, false),
    (3, 0, false),
    (4, 0, false),
    (8, 0, false),
    (16, 0, false),
    (64, 0, false),
    (128, 0, false),
    (256, 0, false),
    (1024, 0, false),
    (1, 1, false),
    (1, 1, true),
    (8, 8, false),
    (8, 8, true),
];

/// Then every symbol at `base * 2**i` (`i` as above, ascending or descending), with the ties
/// when there are any: sizes that divide one another (`hidden // heads` with
/// `heads * (hidden // heads) == hidden`), which the linear values rarely are.
const GEOMETRIC_VALUES: [(i128, bool); 4] = [(1, true), (1, false), (8, true), (8, false)];

/// Values of the symbols `ranges` (each with its bounds) under which every constraint of a
/// query's context and its precondition hold: then `context ∧ precondition` is SAT, which is
/// what the Z3 bridge would answer (or `unknown`), and the check is not one that fails on every
/// execution. Tried: each of `WITNESS_VALUES` for the symbols that `subst` does not solve
/// (clamped into their ranges), the solved ones at their solution's value; then the same with
/// each symbol that an equation `a*x + c == 0` of the query mentions at its root, then with each
/// that an equation `x == y + k` ties to another at that one's value plus k; then
/// `GEOMETRIC_VALUES`. Evaluation is exact
/// (`Poly::eval`): a witness found is a model of the script the bridge would get, never a guess;
/// none found says nothing.
fn witness(ranges: &[(SymId, Option<i128>, Option<i128>)], subst: &std::collections::BTreeMap<SymId, Poly>, constraints: &[&Formula], precondition: &Formula) -> Option<Vec<(SymId, i128)>> {
    let index = |id: SymId| ranges.binary_search_by_key(&id, |r| r.0).ok();
    let n = ranges.len() as i128;
    // a symbol that an equation `a*x + c == 0` fixes takes its value, when one is tried with hints
    let mut hints: std::collections::BTreeMap<SymId, i128> = std::collections::BTreeMap::new();
    let mut conds = Vec::new();
    constraints.iter().for_each(|f| f.conds(&mut conds));
    precondition.conds(&mut conds);
    for c in conds.iter().filter(|c| c.rel == Rel::Eq) {
        if let Some((x, a, k)) = c.poly.linear_single()
            && k % a == 0
        {
            hints.entry(x).or_insert(-k / a);
        }
    }
    // and one that an equation `x == y + k` ties to another takes that one's value plus k, when
    // one is tried with ties (`C == hidden_size` and `hidden_size != hidden_size_output`: the
    // tried values make every symbol different, or all equal)
    let ties: Vec<(SymId, SymId, i128)> = conds.iter().filter(|c| c.rel == Rel::Eq).filter_map(|c| c.poly.linear_pair()).collect();
    let tries = WITNESS_VALUES
        .iter()
        .map(|t| (*t, false, false, false))
        .chain(WITNESS_VALUES.iter().filter(|_| !hints.is_empty()).map(|t| (*t, true, false, false)))
        .chain(WITNESS_VALUES.iter().filter(|_| !ties.is_empty()).map(|t| (*t, false, true, false)))
        .chain(GEOMETRIC_VALUES.iter().map(|&(base, descending)| ((base, 0, descending), false, !ties.is_empty(), true)));
    for ((base, step, descending), hinted, tied, geometric) in tries {
        let mut vals: Vec<Option<i128>> = ranges
            .iter()
            .enumerate()
            .map(|(i, (id, lo, hi))| {
                let i = if descending { n - 1 - i as i128 } else { i as i128 };
                let v = match hints.get(id) {
                    Some(h) if hinted => *h,
                    _ if geometric => base << i.min(62),
                    _ => base + step * i,
                };
                let clamped = hi.map_or(v, |hi| v.min(hi));
                let clamped = lo.map_or(clamped, |lo| clamped.max(lo));
                (!subst.contains_key(id)).then_some(clamped)
            })
            .collect();
        if tied {
            for &(x, y, k) in &ties {
                if let (Some(i), Some(j)) = (index(x), index(y))
                    && let (Some(_), Some(v)) = (vals[i], vals[j])
                {
                    vals[i] = Some(v - k);
                }
            }
        }
        // the solved symbols, from the others (a solution may mention another solved symbol)
        for _ in 0..ranges.len() {
            let mut open = false;
            for (i, (id, _, _)) in ranges.iter().enumerate() {
                if vals[i].is_none() {
                    let env = |s: SymId| index(s).and_then(|j| vals[j]);
                    vals[i] = subst.get(id).and_then(|p| p.eval(&env));
                    open |= vals[i].is_none();
                }
            }
            if !open {
                break;
            }
        }
        let Some(vals): Option<Vec<i128>> = vals.into_iter().collect() else { continue };
        if ranges.iter().zip(&vals).any(|((_, lo, hi), v)| lo.is_some_and(|lo| *v < lo) || hi.is_some_and(|hi| *v > hi)) {
            continue;
        }
        let env = |s: SymId| index(s).map(|j| vals[j]);
        if constraints.iter().all(|f| f.eval(&env) == Some(true)) && precondition.eval(&env) == Some(true) {
            return Some(ranges.iter().map(|r| r.0).zip(vals).collect());
        }
    }
    None
}

/// The SMT-LIB name of a symbol: its name made a simple symbol, then `_` and its id.
pub fn sym_name(syms: &Symbols, id: SymId) -> String {
    let raw = syms.name(id);
    let mut s: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 's');
    }
    format!("{s}_{id}")
}

fn int(c: i128) -> String {
    if c < 0 { format!("(- {})", c.unsigned_abs()) } else { c.to_string() }
}

struct Encoder<'e> {
    syms: &'e Symbols,
    facts: &'e Facts,
}

impl Encoder<'_> {
    fn formula(&self, f: &Formula) -> Option<String> {
        Some(match f {
            Formula::Const(b) => b.to_string(),
            Formula::Opaque => return None,
            Formula::Cond(c) => self.cond(c)?,
            // not (p != 0) is p == 0
            Formula::Not(g) => match &**g {
                Formula::Cond(c) if c.rel == Rel::Ne => self.cond(&Cond { poly: c.poly.clone(), rel: Rel::Eq })?,
                g => format!("(not {})", self.formula(g)?),
            },
            Formula::And(fs) | Formula::Or(fs) => {
                let op = if matches!(f, Formula::And(_)) { "and" } else { "or" };
                if fs.is_empty() {
                    return Some((op == "and").to_string());
                }
                let parts: Option<Vec<String>> = fs.iter().map(|g| self.formula(g)).collect();
                let parts = parts?;
                if parts.len() == 1 { parts.into_iter().next()? } else { format!("({op} {})", parts.join(" ")) }
            }
        })
    }

    /// `lhs op rhs` with the negative terms moved to the right, as people write it.
    fn cond(&self, c: &Cond) -> Option<String> {
        let (lhs, rhs) = c.poly.split_signs();
        let (l, r) = (self.poly(&lhs)?, self.poly(&rhs)?);
        Some(match c.rel {
            Rel::Eq => format!("(= {l} {r})"),
            Rel::Ne => format!("(not (= {l} {r}))"),
            Rel::Lt => format!("(< {l} {r})"),
            Rel::Le => format!("(<= {l} {r})"),
        })
    }

    fn poly(&self, p: &Poly) -> Option<String> {
        let mut terms = Vec::new();
        for (mono, coef) in p.terms() {
            let mut factors = Vec::new();
            if *coef != 1 || mono.is_empty() {
                factors.push(int(*coef));
            }
            for a in mono {
                factors.push(self.atom(a)?);
            }
            terms.push(if factors.len() == 1 { factors.pop()? } else { format!("(* {})", factors.join(" ")) });
        }
        Some(match terms.len() {
            0 => "0".to_string(),
            1 => terms.pop()?,
            _ => format!("(+ {})", terms.join(" ")),
        })
    }

    fn atom(&self, a: &Atom) -> Option<String> {
        match a {
            Atom::Sym(id) => Some(sym_name(self.syms, *id)),
            Atom::FloorDiv(n, d) | Atom::Mod(n, d) => {
                // SMT-LIB div/mod are Python's // and % when the divisor is positive
                let positive = Cond::cmp(&Poly::constant(0), Rel::Lt, d)?;
                if self.facts.decide(self.syms, &positive) != Tri::True {
                    return None;
                }
                let op = if matches!(a, Atom::FloorDiv(..)) { "div" } else { "mod" };
                Some(format!("({op} {} {})", self.poly(n)?, self.poly(d)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(a: &Poly, rel: Rel, b: &Poly) -> Cond {
        Cond::cmp(a, rel, b).unwrap()
    }

    #[test]
    fn kleene_decide_matches_the_core() {
        let mut syms = Symbols::default();
        let b = syms.fresh("B", 1);
        let f = Facts::default();
        let one = Poly::constant(1);
        // B == 0 is false, B == 1 unknown
        let v = Formula::And(vec![Formula::cmp(&b, Rel::Eq, &Poly::constant(0)).not(), Formula::cmp(&b, Rel::Eq, &one).not()]);
        assert_eq!(v.decide(&f, &syms), Tri::Unknown);
        let v = Formula::Or(vec![Formula::cmp(&b, Rel::Eq, &Poly::constant(0)), Formula::cmp(&b, Rel::Lt, &one)]);
        assert_eq!(v.decide(&f, &syms), Tri::False);
        assert_eq!(Formula::from(Tri::Unknown).decide(&f, &syms), Tri::Unknown);
        assert!(!Formula::Or(vec![Formula::Opaque, Formula::Const(false)]).expressible());
    }

    #[test]
    fn nonlinear_reshape_query_text() {
        // view(B, T*(T-1)//2) of a [B, T, T] tensor: B*T*T elements vs B*((T*T - T) // 2)
        let mut syms = Symbols::default();
        let b = syms.fresh("B", 1);
        let t = syms.fresh("T", 1);
        let total = b.mul(&t).unwrap().mul(&t).unwrap();
        let pairs = t.mul(&t).unwrap().sub(&t).unwrap().floordiv(&Poly::constant(2)).unwrap();
        let target = b.mul(&pairs).unwrap();
        let facts = Facts::default();
        let violation = Formula::cmp(&total, Rel::Eq, &target).not();
        assert_eq!(violation.decide(&facts, &syms), Tri::Unknown);
        let q = query(&syms, &facts, &[], &[], &violation).unwrap();
        assert_eq!(
            q.context,
            "(set-logic QF_NIA)\n(declare-fun B_0 () Int)\n(declare-fun T_1 () Int)\n(assert (>= B_0 1))\n(assert (>= T_1 1))\n"
        );
        assert_eq!(q.precondition, "(= (* B_0 T_1 T_1) (* B_0 (div (+ (* (- 1) T_1) (* T_1 T_1)) 2)))");
        // T*T == (T*T - T) // 2 has no solution with T >= 1
        assert_eq!(q.witness, None);
    }

    #[test]
    fn path_condition_facts_and_cone_of_influence() {
        let mut syms = Symbols::default();
        let b = syms.fresh("batch", 1);
        let n = syms.fresh("n.hidden", 1);
        let other = syms.fresh("2x", 0);
        let mut facts = Facts::default();
        let pc1 = c(&b, Rel::Eq, &Poly::constant(3));
        assert!(facts.assume(&syms, &pc1));
        let pc2 = c(&other, Rel::Lt, &Poly::constant(5));
        assert!(facts.assume(&syms, &pc2));
        // n*n == batch*n + 1: decided neither way by intervals
        let lhs = n.mul(&n).unwrap();
        let rhs = b.mul(&n).unwrap().add_const(1).unwrap();
        let violation = Formula::cmp(&lhs, Rel::Eq, &rhs).not();
        let q = query(&syms, &facts, &[&pc1, &pc2], &[], &violation).unwrap();
        // `2x` is not connected to the check: left out; names are made simple symbols
        assert!(!q.context.contains("s2x_2"), "{}", q.context);
        assert!(q.context.contains("(declare-fun n_hidden_1 () Int)"), "{}", q.context);
        assert!(q.context.contains("(assert (= batch_0 3)) ; solved equality"), "{}", q.context);
        assert!(q.context.contains("(assert (= batch_0 3)) ; path condition"), "{}", q.context);
        assert_eq!(q.precondition, "(= (* n_hidden_1 n_hidden_1) (+ 1 (* batch_0 n_hidden_1)))");
        assert_eq!(sym_name(&syms, 2), "s2x_2");
    }

    #[test]
    fn ranges_and_negative_constants() {
        let mut syms = Symbols::default();
        let k = syms.fresh("k", 0);
        let mut facts = Facts::default();
        assert!(facts.assume(&syms, &c(&k, Rel::Le, &Poly::constant(7))));
        let violation = Formula::cmp(&k.mul(&k).unwrap(), Rel::Lt, &k.add_const(-3).unwrap());
        let q = query(&syms, &facts, &[], &[], &violation).unwrap();
        assert!(q.context.contains("(assert (>= k_0 0))\n(assert (<= k_0 7))\n"), "{}", q.context);
        assert_eq!(q.precondition, "(not (< (+ 3 (* k_0 k_0)) k_0))");
    }

    #[test]
    fn earlier_preconditions_join_the_context_when_connected() {
        let mut syms = Symbols::default();
        let b = syms.fresh("B", 1);
        let t = syms.fresh("T", 1);
        let u = syms.fresh("U", 1);
        // earlier: T % 4 == 0 was needed (view(..., 4, -1)); unrelated: U == 3
        let earlier = Formula::cmp(&t.modulo(&Poly::constant(4)).unwrap(), Rel::Ne, &Poly::constant(0)).not();
        let unrelated = Formula::cmp(&u, Rel::Eq, &Poly::constant(3));
        let violation = Formula::cmp(&b.mul(&t).unwrap(), Rel::Eq, &b.mul(&Poly::constant(6)).unwrap()).not();
        let q = query(&syms, &Facts::default(), &[], &[earlier, unrelated], &violation).unwrap();
        assert!(q.context.ends_with("(assert (= (mod T_1 4) 0)) ; earlier precondition\n"), "{}", q.context);
        assert!(!q.context.contains("U_2"), "{}", q.context);
        assert_eq!(q.precondition, "(= (* B_0 T_1) (* 6 B_0))");
        // T == 6 passes the check but not the earlier precondition: every execution fails
        assert_eq!(q.witness, None);
    }

    /// A witness is a model of the script the bridge would get: the check passes, and every
    /// range, solved equality, path condition and earlier precondition of the context holds.
    #[test]
    fn witnesses_satisfy_the_whole_context() {
        let mut syms = Symbols::default();
        let n = syms.fresh("num_embeddings", 1);
        let p = syms.fresh("padding_idx", 1);
        // Embedding(n, padding_idx=p) needs p < n: found by descending values
        let violation = Formula::cmp(&n, Rel::Le, &p);
        let q = query(&syms, &Facts::default(), &[], &[], &violation).unwrap();
        let w = q.witness.expect("n > p has a model");
        assert!(w[0].1 > w[1].1, "{w:?}");
        // `C == 768` for a free `C`: the equation's root
        let c768 = syms.fresh("C", 1);
        let violation = Formula::cmp(&c768, Rel::Eq, &Poly::constant(768)).not();
        let q = query(&syms, &Facts::default(), &[], &[], &violation).unwrap();
        assert_eq!(q.witness, Some(vec![(2, 768)]));
        // ... unless a range excludes it
        let mut facts = Facts::default();
        assert!(facts.assume(&syms, &c(&c768, Rel::Le, &Poly::constant(512))));
        let q = query(&syms, &facts, &[], &[], &violation).unwrap();
        assert_eq!(q.witness, None);
        // a path condition `C % 4 == 0` and the precondition `C == 6`: none
        let four = c768.modulo(&Poly::constant(4)).unwrap();
        let pc = c(&four, Rel::Eq, &Poly::constant(0));
        let violation = Formula::cmp(&c768, Rel::Eq, &Poly::constant(6)).not();
        let q = query(&syms, &Facts::default(), &[&pc], &[], &violation).unwrap();
        assert!(q.context.contains("path condition"), "{}", q.context);
        assert_eq!(q.witness, None);
        // a solved symbol takes its solution's value: h == 2*w, and the check needs h == 8
        let wd = syms.fresh("w", 1);
        let h = syms.fresh("h", 1);
        let mut facts = Facts::default();
        assert!(facts.assume(&syms, &c(&h, Rel::Eq, &wd.mul(&Poly::constant(2)).unwrap())));
        let violation = Formula::cmp(&h, Rel::Eq, &Poly::constant(8)).not();
        let q = query(&syms, &facts, &[], &[], &violation).unwrap();
        let w = q.witness.expect("w == 4 gives h == 8");
        assert!(w.iter().all(|(id, v)| (*id == 3 && *v == 4) || (*id == 4 && *v == 8)), "{w:?}");
        // and h == 7 has no model (h is even)
        let violation = Formula::cmp(&h, Rel::Eq, &Poly::constant(7)).not();
        assert_eq!(query(&syms, &facts, &[], &[], &violation).unwrap().witness, None);
    }

    /// `C == hidden_size` needed on a path where `hidden_size != hidden_size_output` (a block
    /// whose projection exists only then): the tried values make all three different or all
    /// equal; tied, `C` takes `hidden_size`'s value (hiera's LayerNorm, exported to Z3 before).
    #[test]
    fn a_symbol_tied_to_another_by_the_precondition_takes_its_value() {
        let mut syms = Symbols::default();
        let hs = syms.fresh("hidden_size", 1);
        let hso = syms.fresh("hidden_size_output", 1);
        let cc = syms.fresh("C", 1);
        let pc = c(&hs, Rel::Ne, &hso);
        let violation = Formula::cmp(&cc, Rel::Eq, &hs).not();
        let q = query(&syms, &Facts::default(), &[&pc], &[], &violation).unwrap();
        let w = q.witness.expect("C == hidden_size != hidden_size_output has a model");
        assert!(w[2].1 == w[0].1 && w[0].1 != w[1].1, "{w:?}");
        // tied with an offset: C == hidden_size + 2
        let violation = Formula::cmp(&cc, Rel::Eq, &hs.add_const(2).unwrap()).not();
        let q = query(&syms, &Facts::default(), &[&pc], &[], &violation).unwrap();
        let w = q.witness.expect("C == hidden_size + 2 has a model");
        assert_eq!(w[2].1, w[0].1 + 2, "{w:?}");
        // and a tie the context contradicts has none: C == hidden_size with C != hidden_size
        let apart = c(&cc, Rel::Ne, &hs);
        let violation = Formula::cmp(&cc, Rel::Eq, &hs).not();
        assert_eq!(query(&syms, &Facts::default(), &[&pc, &apart], &[], &violation).unwrap().witness, None);
    }

    /// hiera's reshape: `heads * (out // heads) == out` needed where `size != out` and an
    /// earlier check needed `C == size`. Sizes that divide one another (powers of two, the
    /// larger first, `C` tied to `size`) are a model; none of the linear values is.
    #[test]
    fn sizes_that_divide_one_another_are_a_witness() {
        let mut syms = Symbols::default();
        let size = syms.fresh("hidden_size", 1);
        let out = syms.fresh("hidden_size_output", 1);
        let heads = syms.fresh("num_heads", 1);
        let cc = syms.fresh("C", 1);
        let pc = c(&size, Rel::Ne, &out);
        let earlier = Formula::cmp(&cc, Rel::Eq, &size);
        let violation = Formula::cmp(&heads.mul(&out.floordiv(&heads).unwrap()).unwrap(), Rel::Eq, &out).not();
        let q = query(&syms, &Facts::default(), &[&pc], &[earlier], &violation).unwrap();
        let w = q.witness.expect("hidden_size_output divisible by num_heads has a model");
        let v = |id: u32| w.iter().find(|(s, _)| *s == id).unwrap().1;
        assert!(v(1) % v(2) == 0 && v(0) != v(1) && v(3) == v(0), "{w:?}");
    }

    #[test]
    fn floordiv_by_an_unproven_divisor_is_not_exported() {
        let mut syms = Symbols::default();
        let a = syms.fresh("a", 1);
        let d = syms.fresh("d", 0); // may be 0
        let q = a.floordiv(&d).unwrap();
        let violation = Formula::cmp(&q, Rel::Eq, &a);
        assert!(query(&syms, &Facts::default(), &[], &[], &violation).is_none());
        // with d >= 1 known, div is exact
        let mut facts = Facts::default();
        assert!(facts.assume(&syms, &c(&Poly::constant(1), Rel::Le, &d)));
        let out = query(&syms, &facts, &[], &[], &violation).unwrap();
        assert_eq!(out.precondition, "(not (= (div a_0 d_1) a_0))");
        let m = a.modulo(&Poly::constant(3)).unwrap();
        let out = query(&syms, &facts, &[], &[], &Formula::cmp(&m, Rel::Eq, &Poly::constant(1))).unwrap();
        assert_eq!(out.precondition, "(not (= (mod a_0 3) 1))");
        // a divisibility violation `a % 3 != 0` gives the precondition `a % 3 == 0`
        let out = query(&syms, &facts, &[], &[], &Formula::cmp(&m, Rel::Ne, &Poly::constant(0))).unwrap();
        assert_eq!(out.precondition, "(= (mod a_0 3) 0)");
        // an opaque leaf is never exported
        assert!(query(&syms, &facts, &[], &[], &Formula::Or(vec![violation, Formula::Opaque])).is_none());
    }
}
