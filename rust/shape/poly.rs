//! Polynomials with integer coefficients over symbols and opaque atoms (`a // b`, `a % b`).
//! The representation is canonical, so equal polynomials are equal values.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::Symbols;

pub type SymId = u32;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    Sym(SymId),
    FloorDiv(Rc<Poly>, Rc<Poly>),
    Mod(Rc<Poly>, Rc<Poly>),
}

/// A sorted product of atoms (empty: the constant monomial).
type Mono = Vec<Atom>;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Poly {
    /// Shared: polynomials are copied far more often than built (every dim of every tensor
    /// copied with a path), and a copy is then a count, not a map.
    terms: Rc<BTreeMap<Mono, i128>>,
}

/// The greatest common divisor of `a` and `b` (non-negative; `gcd(0, 0) == 0`).
pub fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// Coefficients stay far from overflow: beyond this a result is unknown.
const LIMIT: i128 = 1 << 100;

fn ok(c: i128) -> Option<i128> {
    if c.abs() < LIMIT { Some(c) } else { None }
}

/// The small constants most programs use (sizes, indices, flags), each built once per thread
/// when first asked for: a copy is then a count, not two allocations.
const SMALL: std::ops::RangeInclusive<i128> = -16..=1024;

thread_local! {
    static SMALL_CONSTANTS: std::cell::RefCell<Vec<Option<Poly>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Poly {
    pub fn constant(c: i128) -> Poly {
        if SMALL.contains(&c) {
            let i = (c - SMALL.start()) as usize;
            return SMALL_CONSTANTS.with(|t| {
                let mut t = t.borrow_mut();
                if t.len() <= i {
                    t.resize(i + 1, None);
                }
                t[i].get_or_insert_with(|| Poly::build_constant(c)).clone()
            });
        }
        Poly::build_constant(c)
    }

    fn build_constant(c: i128) -> Poly {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Vec::new(), c);
        }
        Poly::of(terms)
    }

    /// `self - o` when both are constants and the difference is in range (what `sub` would
    /// give, without building it).
    pub fn const_diff(&self, o: &Poly) -> Option<i128> {
        let d = self.as_const()?.checked_sub(o.as_const()?)?;
        (d.abs() < LIMIT).then_some(d)
    }

    fn of(terms: BTreeMap<Mono, i128>) -> Poly {
        Poly { terms: Rc::new(terms) }
    }

    /// The polynomial with these terms (monomials sorted or not, equal ones added up).
    pub fn from_terms(terms: impl Iterator<Item = (Mono, i128)>) -> Poly {
        let mut out: BTreeMap<Mono, i128> = BTreeMap::new();
        for (mut m, c) in terms {
            m.sort();
            *out.entry(m).or_insert(0) += c;
        }
        out.retain(|_, c| *c != 0);
        Poly::of(out)
    }

    pub fn sym(id: SymId) -> Poly {
        Poly::atom(Atom::Sym(id))
    }

    fn atom(a: Atom) -> Poly {
        Poly::of(BTreeMap::from([(vec![a], 1)]))
    }

    pub fn terms(&self) -> impl Iterator<Item = (&Mono, &i128)> {
        self.terms.iter()
    }

    /// The value at the symbols' values `env`. `None` when a symbol has no value, on
    /// overflow, and for `a // b` or `a % b` with `b < 1` (where the SMT-LIB encoding and
    /// Python's semantics part: `shape::smt`).
    pub fn eval(&self, env: &impl Fn(SymId) -> Option<i128>) -> Option<i128> {
        let mut sum: i128 = 0;
        for (mono, coef) in self.terms.iter() {
            let mut term = *coef;
            for a in mono {
                let v = match a {
                    Atom::Sym(id) => env(*id)?,
                    Atom::FloorDiv(n, d) | Atom::Mod(n, d) => {
                        let (n, d) = (n.eval(env)?, d.eval(env)?);
                        if d < 1 {
                            return None;
                        }
                        if matches!(a, Atom::FloorDiv(..)) { n.div_euclid(d) } else { n.rem_euclid(d) }
                    }
                };
                term = ok(term.checked_mul(v)?)?;
            }
            sum = ok(sum.checked_add(term)?)?;
        }
        Some(sum)
    }

    /// The symbol when the polynomial is exactly one symbol.
    pub fn as_sym(&self) -> Option<SymId> {
        match self.terms.iter().next() {
            Some((m, 1)) if self.terms.len() == 1 => match m.as_slice() {
                [Atom::Sym(id)] => Some(*id),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn as_const(&self) -> Option<i128> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    pub fn add(&self, o: &Poly) -> Option<Poly> {
        let mut terms = (*self.terms).clone();
        for (m, c) in o.terms.iter() {
            let e = terms.entry(m.clone()).or_insert(0);
            *e = ok(*e + c)?;
            if *e == 0 {
                terms.remove(m);
            }
        }
        Some(Poly::of(terms))
    }

    pub fn add_const(&self, c: i128) -> Option<Poly> {
        self.add(&Poly::constant(c))
    }

    pub fn neg(&self) -> Option<Poly> {
        Some(Poly::of(self.terms.iter().map(|(m, c)| (m.clone(), -c)).collect()))
    }

    /// Whether `self` is `-o`, without building `-o` (a branch test asks this of every
    /// branch of a path).
    pub fn is_neg_of(&self, o: &Poly) -> bool {
        self.terms.len() == o.terms.len() && self.terms.iter().zip(o.terms.iter()).all(|((m1, c1), (m2, c2))| m1 == m2 && c2.checked_neg() == Some(*c1))
    }

    pub fn sub(&self, o: &Poly) -> Option<Poly> {
        self.add(&o.neg()?)
    }

    pub fn mul(&self, o: &Poly) -> Option<Poly> {
        if self.terms.len() * o.terms.len() > 256 {
            return None;
        }
        let mut terms: BTreeMap<Mono, i128> = BTreeMap::new();
        for (m1, c1) in self.terms.iter() {
            for (m2, c2) in o.terms.iter() {
                let mut m: Mono = m1.iter().chain(m2.iter()).cloned().collect();
                if m.len() > 16 {
                    return None;
                }
                m.sort();
                let c = ok(c1.checked_mul(*c2)?)?;
                let e = terms.entry(m.clone()).or_insert(0);
                *e = ok(*e + c)?;
                if *e == 0 {
                    terms.remove(&m);
                }
            }
        }
        Some(Poly::of(terms))
    }

    /// The gcd of the coefficients (0 for the zero polynomial).
    fn content(&self) -> i128 {
        self.terms.values().fold(0, |g, c| gcd(g, *c))
    }

    fn scale_div_exact(&self, d: i128) -> Poly {
        Poly::of(self.terms.iter().map(|(m, c)| (m.clone(), c / d)).collect())
    }

    /// Python's `//`.
    pub fn floordiv(&self, d: &Poly) -> Option<Poly> {
        if let (Some(a), Some(b)) = (self.as_const(), d.as_const()) {
            if b == 0 {
                return None;
            }
            return Some(Poly::default().fix_floor(a, b));
        }
        if let Some(b) = d.as_const() {
            if b == 0 {
                return None;
            }
            if b == 1 {
                return Some(self.clone());
            }
            if b > 0 && self.content() % b == 0 {
                return Some(self.scale_div_exact(b));
            }
            // (x // a + k) // b == (x + a*k) // (a*b) for positive ints a and b (and any x):
            // repeated strides and pools (`(h - 1) // 2 + 1`, again and again) stay one
            // division deep, not one per layer
            if b > 0
                && let Some((x, a, k)) = self.as_floordiv_plus()
                && let (Some(ak), Some(ab)) = (a.checked_mul(k).and_then(ok), a.checked_mul(b).and_then(ok))
                && let Some(q) = x.add_const(ak).and_then(|y| y.floordiv(&Poly::constant(ab)))
            {
                return Some(q);
            }
        }
        if self == d && !self.terms.is_empty() {
            // x // x == 1 for x != 0; dims are positive where this arises
            return None;
        }
        Some(Poly::atom(Atom::FloorDiv(Rc::new(self.clone()), Rc::new(d.clone()))))
    }

    /// `x // a + k` with `a` a positive constant and `k` a constant: `(x, a, k)`.
    fn as_floordiv_plus(&self) -> Option<(&Poly, i128, i128)> {
        let mut k = 0;
        let mut div = None;
        for (mono, c) in self.terms.iter() {
            match mono.as_slice() {
                [] => k = *c,
                [Atom::FloorDiv(x, a)] if *c == 1 && div.is_none() => div = Some((&**x, a.as_const().filter(|a| *a > 0)?)),
                _ => return None,
            }
        }
        div.map(|(x, a)| (x, a, k))
    }

    fn fix_floor(self, a: i128, b: i128) -> Poly {
        // exact Python floor division for constants
        let q = a / b;
        let q = if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q };
        let _ = self;
        Poly::constant(q)
    }

    /// Python's `%`.
    pub fn modulo(&self, d: &Poly) -> Option<Poly> {
        if let (Some(a), Some(b)) = (self.as_const(), d.as_const()) {
            if b == 0 {
                return None;
            }
            let r = a % b;
            let r = if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r };
            return Some(Poly::constant(r));
        }
        if let Some(b) = d.as_const() {
            if b == 0 {
                return None;
            }
            if b.abs() == 1 || (b > 0 && self.content() % b == 0) {
                return Some(Poly::constant(0));
            }
        }
        Some(Poly::atom(Atom::Mod(Rc::new(self.clone()), Rc::new(d.clone()))))
    }

    pub fn pow(&self, e: u32) -> Option<Poly> {
        let mut out = Poly::constant(1);
        for _ in 0..e.min(64) {
            out = out.mul(self)?;
        }
        Some(out)
    }

    /// Replace symbols by polynomials.
    pub fn substitute(&self, s: &BTreeMap<SymId, Poly>) -> Option<Poly> {
        let mut out = Poly::constant(0);
        for (m, c) in self.terms.iter() {
            let mut t = Poly::constant(*c);
            for a in m {
                let v = match a {
                    Atom::Sym(id) => s.get(id).cloned().unwrap_or_else(|| Poly::sym(*id)),
                    Atom::FloorDiv(n, d) => n.substitute(s)?.floordiv(&d.substitute(s)?)?,
                    Atom::Mod(n, d) => n.substitute(s)?.modulo(&d.substitute(s)?)?,
                };
                t = t.mul(&v)?;
            }
            out = out.add(&t)?;
        }
        Some(out)
    }

    /// If `self == 0` can be solved as `s = p` for a symbol `s` of coefficient ±1 that appears
    /// only in that degree-1 term, return `(s, p)`.
    pub fn solve_unit(&self) -> Option<(SymId, Poly)> {
        for (m, c) in self.terms.iter() {
            if let [Atom::Sym(id)] = m.as_slice() {
                if c.abs() != 1 {
                    continue;
                }
                let elsewhere = self.terms.keys().any(|k| k != m && k.iter().any(|a| a.mentions(*id)));
                if elsewhere {
                    continue;
                }
                let mut rest = self.clone();
                Rc::make_mut(&mut rest.terms).remove(m);
                // c*s + rest = 0  =>  s = -rest / c
                let v = if *c == 1 { rest.neg()? } else { rest };
                return Some((*id, v));
            }
        }
        None
    }

    /// `c*s + k` with a single symbol: `(s, c, k)`.
    pub fn linear_single(&self) -> Option<(SymId, i128, i128)> {
        let mut found = None;
        let mut k = 0;
        for (m, c) in self.terms.iter() {
            match m.as_slice() {
                [] => k = *c,
                [Atom::Sym(id)] if found.is_none() => found = Some((*id, *c)),
                _ => return None,
            }
        }
        found.map(|(id, c)| (id, c, k))
    }

    /// `x - y + k` (two symbols of coefficients 1 and -1, and a constant): `(x, y, k)`, so that
    /// `self == 0` is `x == y - k`.
    pub fn linear_pair(&self) -> Option<(SymId, SymId, i128)> {
        let (mut x, mut y, mut k) = (None, None, 0);
        for (m, c) in self.terms.iter() {
            match (m.as_slice(), *c) {
                ([], c) => k = c,
                ([Atom::Sym(id)], 1) if x.is_none() => x = Some(*id),
                ([Atom::Sym(id)], -1) if y.is_none() => y = Some(*id),
                _ => return None,
            }
        }
        Some((x?, y?, k))
    }

    /// Split into (positive terms, negated negative terms) for `lhs op rhs` display.
    pub fn split_signs(&self) -> (Poly, Poly) {
        let mut pos = Poly::default();
        let mut neg = Poly::default();
        for (m, c) in self.terms.iter() {
            if *c > 0 {
                Rc::make_mut(&mut pos.terms).insert(m.clone(), *c);
            } else {
                Rc::make_mut(&mut neg.terms).insert(m.clone(), -c);
            }
        }
        (pos, neg)
    }

    /// The polynomial as people write it: the expanded sum, or its factored form when that
    /// is not longer (`C*(H + 2)*(W + 2)` rather than `C*H*W + 2*C*H + 2*C*W + 4*C`).
    pub fn display(&self, syms: &Symbols) -> String {
        let sum = self.display_sum(syms);
        match self.display_factored(syms) {
            Some(f) if f.len() <= sum.len() => f,
            _ => sum,
        }
    }

    /// A sum with a common factor, shown as a product: the coefficients' gcd, the atoms every
    /// term shares, then binomials `(x + k)` split off while the rest is `x*A + k*A`.
    fn display_factored(&self, syms: &Symbols) -> Option<String> {
        if self.terms.len() < 2 {
            return None;
        }
        let gcd = |mut a: i128, mut b: i128| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a.abs()
        };
        let mut g = self.terms.values().fold(0, |acc, c| gcd(acc, *c));
        if self.terms.values().all(|c| *c < 0) {
            g = -g;
        }
        // atoms common to every term (with multiplicity)
        let mut common: Mono = self.terms.keys().next()?.clone();
        for m in self.terms.keys().skip(1) {
            let mut left = m.clone();
            common.retain(|a| match left.iter().position(|b| b == a) {
                Some(i) => {
                    left.remove(i);
                    true
                }
                None => false,
            });
        }
        let without = |m: &Mono, drop: &Mono| -> Mono {
            let mut m = m.clone();
            for a in drop {
                if let Some(i) = m.iter().position(|b| b == a) {
                    m.remove(i);
                }
            }
            m
        };
        let mut rest = Poly::of(self.terms.iter().map(|(m, c)| (without(m, &common), c / g)).collect());
        let mut binomials: Vec<Poly> = Vec::new();
        'split: while rest.terms.len() > 1 && binomials.len() < 8 {
            let atoms: Vec<Atom> = rest.terms.keys().flatten().cloned().collect();
            for x in atoms {
                if rest.terms.keys().any(|m| m.iter().filter(|a| **a == x).count() > 1) {
                    continue;
                }
                let one: Mono = vec![x.clone()];
                let a = Poly::of(rest.terms.iter().filter(|(m, _)| m.contains(&x)).map(|(m, c)| (without(m, &one), *c)).collect());
                let b = Poly::of(rest.terms.iter().filter(|(m, _)| !m.contains(&x)).map(|(m, c)| (m.clone(), *c)).collect());
                let Some((m0, a0)) = a.terms.iter().next() else { continue };
                let Some(b0) = b.terms.get(m0) else { continue };
                if b0 % a0 != 0 {
                    continue;
                }
                let k = b0 / a0;
                if b.terms.len() == a.terms.len() && a.terms.iter().all(|(m, c)| b.terms.get(m) == Some(&(c * k))) {
                    binomials.push(Poly::atom(x).add_const(k)?);
                    rest = a;
                    continue 'split;
                }
            }
            break;
        }
        if g.abs() == 1 && common.is_empty() && binomials.is_empty() {
            return None;
        }
        if rest.terms.len() == 1 && rest.terms.values().all(|c| *c < 0) {
            // `-(…)` in front rather than a negative last factor
            rest = rest.neg()?;
            g = -g;
        }
        let mut parts: Vec<String> = Vec::new();
        if g.abs() != 1 {
            parts.push(g.abs().to_string());
        }
        parts.extend(common.iter().map(|a| a.display(syms, true)));
        parts.extend(binomials.iter().map(|p| format!("({})", p.display_sum(syms))));
        match rest.as_const() {
            Some(1) => {}
            _ if rest.terms.len() == 1 => parts.push(rest.display_sum(syms)),
            _ => parts.push(format!("({})", rest.display_sum(syms))),
        }
        let sign = if g < 0 { "-" } else { "" };
        Some(format!("{sign}{}", parts.join("*")))
    }

    fn display_sum(&self, syms: &Symbols) -> String {
        if self.terms.is_empty() {
            return "0".into();
        }
        let mut out = String::new();
        // constant last, like people write `2*H + 1`
        let mut items: Vec<(&Mono, &i128)> = self.terms.iter().filter(|(m, _)| !m.is_empty()).collect();
        let empty: Mono = Vec::new();
        if let Some(c) = self.terms.get(&empty) {
            items.push((&empty, c));
        }
        for (i, (m, c)) in items.iter().enumerate() {
            let c = **c;
            if i > 0 {
                out.push_str(if c < 0 { " - " } else { " + " });
            } else if c < 0 {
                out.push('-');
            }
            let a = c.abs();
            if m.is_empty() {
                out.push_str(&a.to_string());
                continue;
            }
            if a != 1 {
                out.push_str(&a.to_string());
                out.push('*');
            }
            let parts: Vec<String> = m.iter().map(|at| at.display(syms, m.len() > 1 || a != 1)).collect();
            out.push_str(&parts.join("*"));
        }
        out
    }
}


impl Atom {
    fn any_sym(&self, f: &dyn Fn(SymId) -> bool) -> bool {
        match self {
            Atom::Sym(s) => f(*s),
            Atom::FloorDiv(a, b) | Atom::Mod(a, b) => a.any_sym(f) || b.any_sym(f),
        }
    }

    fn rename_syms(&self, f: &dyn Fn(SymId) -> SymId) -> Atom {
        match self {
            Atom::Sym(s) => Atom::Sym(f(*s)),
            Atom::FloorDiv(a, b) => Atom::FloorDiv(Rc::new(a.rename_syms(f)), Rc::new(b.rename_syms(f))),
            Atom::Mod(a, b) => Atom::Mod(Rc::new(a.rename_syms(f)), Rc::new(b.rename_syms(f))),
        }
    }
    fn mentions(&self, id: SymId) -> bool {
        match self {
            Atom::Sym(s) => *s == id,
            Atom::FloorDiv(a, b) | Atom::Mod(a, b) => a.mentions(id) || b.mentions(id),
        }
    }

    fn display(&self, syms: &Symbols, in_product: bool) -> String {
        let paren = |p: &Poly| {
            let s = p.display(syms);
            if p.terms.len() > 1 || s.contains('*') { format!("({s})") } else { s }
        };
        let s = match self {
            Atom::Sym(id) => return syms.name(*id).to_string(),
            Atom::FloorDiv(a, b) => format!("{} // {}", paren(a), paren(b)),
            Atom::Mod(a, b) => format!("{} % {}", paren(a), paren(b)),
        };
        if in_product { format!("({s})") } else { s }
    }
}

impl Poly {
    /// Add every symbol this polynomial mentions (inside `//` and `%` too) to `out`.
    pub fn collect_syms(&self, out: &mut std::collections::BTreeSet<SymId>) {
        for m in self.terms.keys() {
            for a in m {
                match a {
                    Atom::Sym(id) => {
                        out.insert(*id);
                    }
                    Atom::FloorDiv(n, d) | Atom::Mod(n, d) => {
                        n.collect_syms(out);
                        d.collect_syms(out);
                    }
                }
            }
        }
    }

    fn mentions(&self, id: SymId) -> bool {
        self.terms.keys().any(|m| m.iter().any(|a| a.mentions(id)))
    }

    /// Whether some symbol of the polynomial satisfies `f`.
    pub fn any_sym(&self, f: &dyn Fn(SymId) -> bool) -> bool {
        self.terms.keys().any(|m| m.iter().any(|a| a.any_sym(f)))
    }

    /// The polynomial with its symbols renamed by `f`, which must keep their order (a call
    /// summary's fresh symbols moved past the ones made since, `engine::memo`): the terms stay
    /// sorted, so no product or sum is rebuilt.
    pub fn rename_syms(&self, f: &dyn Fn(SymId) -> SymId) -> Poly {
        if !self.any_sym(&|s| f(s) != s) {
            return self.clone();
        }
        Poly::of(self.terms.iter().map(|(m, c)| (m.iter().map(|a| a.rename_syms(f)).collect(), *c)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(p: &Poly) -> usize {
        p.terms().flat_map(|(m, _)| m.iter()).map(|a| match a {
            Atom::Sym(_) => 0,
            Atom::FloorDiv(n, d) | Atom::Mod(n, d) => 1 + depth(n).max(depth(d)),
        }).max().unwrap_or(0)
    }

    #[test]
    fn a_floor_division_of_a_floor_division_is_one_division_with_pythons_value() {
        let x = Poly::sym(0);
        for a in 1i128..6 {
            for k in -5i128..5 {
                for b in 1i128..6 {
                    let inner = x.floordiv(&Poly::constant(a)).unwrap().add_const(k).unwrap();
                    let q = inner.floordiv(&Poly::constant(b)).unwrap();
                    assert!(depth(&q) <= 1, "({a}, {k}, {b}): {q:?}");
                    for v in -40i128..40 {
                        // Python's // for a positive divisor
                        let want = (v.div_euclid(a) + k).div_euclid(b);
                        assert_eq!(q.eval(&|_| Some(v)), Some(want), "x={v}: (x // {a} + {k}) // {b}");
                    }
                }
            }
        }
        // a stride-2 output size, twenty times over, stays one division: (x - 1) // 2**20 + 1
        let mut h = x.clone();
        for _ in 0..20 {
            h = h.add_const(2 - 3).unwrap().floordiv(&Poly::constant(2)).unwrap().add_const(1).unwrap();
        }
        assert_eq!(h, x.add_const(-1).unwrap().floordiv(&Poly::constant(1 << 20)).unwrap().add_const(1).unwrap());
        // other numerators keep their division
        let two = x.mul(&x).unwrap().floordiv(&Poly::constant(2)).unwrap().mul(&Poly::constant(2)).unwrap();
        assert_eq!(depth(&two.floordiv(&Poly::constant(3)).unwrap()), 2);
    }
}
