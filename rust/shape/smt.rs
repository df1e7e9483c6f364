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
    let precondition = enc.formula(&violation.clone().not())?;

    // the cone of influence: symbols of the precondition, closed over facts and path conditions
    let mut pre_conds = Vec::new();
    violation.conds(&mut pre_conds);
    let mut wanted: BTreeSet<SymId> = BTreeSet::new();
    for c in &pre_conds {
        c.poly.collect_syms(&mut wanted);
    }
    // candidate constraints: (symbols, text); un-encodable ones are left out (a weaker context)
    let mut cands: Vec<(BTreeSet<SymId>, String, &'static str)> = Vec::new();
    for (id, value) in &facts.inner.subst {
        let eq = Formula::cmp(&Poly::sym(*id), Rel::Eq, value);
        if let (Formula::Cond(c), Some(text)) = (&eq, enc.formula(&eq)) {
            let mut s = BTreeSet::new();
            c.poly.collect_syms(&mut s);
            cands.push((s, text, "solved equality"));
        }
    }
    for c in path {
        if let Some(text) = enc.cond(c) {
            let mut s = BTreeSet::new();
            c.poly.collect_syms(&mut s);
            cands.push((s, text, "path condition"));
        }
    }
    for f in assumed {
        if let Some(text) = enc.formula(f) {
            let mut conds = Vec::new();
            f.conds(&mut conds);
            let mut s = BTreeSet::new();
            conds.iter().for_each(|c| c.poly.collect_syms(&mut s));
            cands.push((s, text, "earlier precondition"));
        }
    }
    let mut taken = vec![false; cands.len()];
    loop {
        let mut grew = false;
        for (i, (s, _, _)) in cands.iter().enumerate() {
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

    let mut out = String::from("(set-logic QF_NIA)\n");
    for id in &wanted {
        let _ = writeln!(out, "(declare-fun {} () Int)", sym_name(syms, *id));
    }
    for id in &wanted {
        let name = sym_name(syms, *id);
        let iv = facts.range(syms, *id);
        if let super::Ext::Fin(lo) = iv.lo
            && lo != super::UNBOUNDED
        {
            let _ = writeln!(out, "(assert (>= {name} {}))", int(lo));
        }
        if let super::Ext::Fin(hi) = iv.hi {
            let _ = writeln!(out, "(assert (<= {name} {}))", int(hi));
        }
    }
    // facts first, then the path condition, each in the engine's order
    for kind in ["solved equality", "path condition", "earlier precondition"] {
        for (i, (_, text, k)) in cands.iter().enumerate() {
            if taken[i] && *k == kind {
                let _ = writeln!(out, "(assert {text}) ; {kind}");
            }
        }
    }
    Some(Query { context: out, precondition, symbols: wanted.into_iter().collect() })
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
