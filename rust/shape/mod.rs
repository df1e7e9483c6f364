//! Symbolic integers in a normal form (polynomials over symbols and opaque atoms), the facts a
//! path knows about them, and the core decision procedure. What it cannot decide stays
//! `Unknown`: silence, never a report.

mod poly;
pub mod smt;

pub use poly::{Atom, Poly, SymId};
pub use smt::Formula;

use std::collections::BTreeMap;

/// What the engine knows about one symbol, independent of the path.
#[derive(Debug, Clone)]
pub struct SymInfo {
    pub name: String,
    pub lo: i128,
    /// Known to be a Python int (a class index), not only assumed to be one (a missing
    /// argument may be a list): `torch.tensor` of it is a long scalar.
    pub int: bool,
    /// A truth value the program asks the environment (`torch.cuda.is_available()`): a 0/1
    /// symbol, the same one at every ask ([`Symbols::flag`]), shown in conditions as the
    /// phrase of its side (`CUDA is available`, `CUDA is not available`).
    pub phrase: Option<(&'static str, &'static str)>,
    /// A free parameter of the program (SHP902): a value the user chooses, named in their
    /// terms. `None` for every other symbol (opaque data, a count the engine made up).
    pub param: Option<Param>,
    /// A size that takes each of its values in one run: the batch of a loop over a
    /// `DataLoader`, full then last (`Symbols::fresh_every`). A branch on it is not a choice
    /// between executions: both sides run.
    pub every: bool,
}

/// What kind of free parameter a symbol stands for (see `SymInfo::param`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// An `argparse` option (`--size`), with its default as one legal value.
    Option,
    /// A constructor parameter of a module class the file does not instantiate (`heads`).
    Ctor,
    /// A size of a `forward` input (`x.shape[2]`): free, but never enough alone for a report.
    Input,
    /// The number of samples of a dataset read from files (`ImageFolder`): its last batch may
    /// be any size smaller than the batch size.
    Data,
}

/// A free parameter: the name the user knows it by and, for an option, its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub default: Option<i128>,
}

/// Three-valued truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    True,
    False,
    Unknown,
}

impl Tri {
    pub fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Unknown => Tri::Unknown,
        }
    }
    pub fn from_bool(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
    /// Three-valued `or`: true if either is, false if both are.
    pub fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::True, _) | (_, Tri::True) => Tri::True,
            (Tri::False, Tri::False) => Tri::False,
            _ => Tri::Unknown,
        }
    }
}

/// `lhs op 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rel {
    Eq,
    Ne,
    Lt,
    Le,
}

/// A condition over symbolic integers: `poly rel 0`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cond {
    pub poly: Poly,
    pub rel: Rel,
}

impl Cond {
    /// `a op b` as a condition.
    pub fn cmp(a: &Poly, rel: Rel, b: &Poly) -> Option<Cond> {
        Some(Cond { poly: a.sub(b)?, rel })
    }

    /// The truth at the symbols' values `env` (`Poly::eval`).
    pub fn eval(&self, env: &impl Fn(SymId) -> Option<i128>) -> Option<bool> {
        let v = self.poly.eval(env)?;
        Some(match self.rel {
            Rel::Eq => v == 0,
            Rel::Ne => v != 0,
            Rel::Lt => v < 0,
            Rel::Le => v <= 0,
        })
    }

    /// Whether `self` is `c.negate()`, without building it.
    pub fn is_negation_of(&self, c: &Cond) -> bool {
        match (c.rel, self.rel) {
            (Rel::Eq, Rel::Ne) | (Rel::Ne, Rel::Eq) => self.poly == c.poly,
            (Rel::Lt, Rel::Le) | (Rel::Le, Rel::Lt) => self.poly.is_neg_of(&c.poly),
            _ => false,
        }
    }

    pub fn negate(&self) -> Option<Cond> {
        Some(match self.rel {
            Rel::Eq => Cond { poly: self.poly.clone(), rel: Rel::Ne },
            Rel::Ne => Cond { poly: self.poly.clone(), rel: Rel::Eq },
            // not (p < 0)  <=>  -p <= 0
            Rel::Lt => Cond { poly: self.poly.neg()?, rel: Rel::Le },
            // not (p <= 0) <=>  -p < 0
            Rel::Le => Cond { poly: self.poly.neg()?, rel: Rel::Lt },
        })
    }
}

/// Extended integers for interval bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ext {
    NegInf,
    Fin(i128),
    PosInf,
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    lo: Ext,
    hi: Ext,
}

impl Interval {
    fn point(c: i128) -> Interval {
        Interval { lo: Ext::Fin(c), hi: Ext::Fin(c) }
    }
    fn top() -> Interval {
        Interval { lo: Ext::NegInf, hi: Ext::PosInf }
    }
    fn add(self, o: Interval) -> Interval {
        fn add(a: Ext, b: Ext, neg: bool) -> Ext {
            match (a, b) {
                (Ext::Fin(x), Ext::Fin(y)) => x.checked_add(y).map(Ext::Fin).unwrap_or(if neg { Ext::NegInf } else { Ext::PosInf }),
                (Ext::NegInf, _) | (_, Ext::NegInf) => Ext::NegInf,
                _ => Ext::PosInf,
            }
        }
        let lo = if self.lo == Ext::PosInf || o.lo == Ext::PosInf { Ext::NegInf } else { add(self.lo, o.lo, true) };
        let hi = if self.hi == Ext::NegInf || o.hi == Ext::NegInf { Ext::PosInf } else { add(self.hi, o.hi, false) };
        Interval { lo, hi }
    }
    fn mul(self, o: Interval) -> Interval {
        fn m(a: Ext, b: Ext) -> Ext {
            match (a, b) {
                (Ext::Fin(0), _) | (_, Ext::Fin(0)) => Ext::Fin(0),
                (Ext::Fin(x), Ext::Fin(y)) => match x.checked_mul(y) {
                    Some(v) => Ext::Fin(v),
                    None => {
                        if (x < 0) == (y < 0) { Ext::PosInf } else { Ext::NegInf }
                    }
                },
                (a, b) => {
                    let neg_a = matches!(a, Ext::NegInf) || matches!(a, Ext::Fin(x) if x < 0);
                    let neg_b = matches!(b, Ext::NegInf) || matches!(b, Ext::Fin(x) if x < 0);
                    if neg_a == neg_b { Ext::PosInf } else { Ext::NegInf }
                }
            }
        }
        let c = [m(self.lo, o.lo), m(self.lo, o.hi), m(self.hi, o.lo), m(self.hi, o.hi)];
        Interval { lo: *c.iter().min().unwrap(), hi: *c.iter().max().unwrap() }
    }
}

/// The facts one path knows: equalities solved for a symbol, and symbol ranges. (The branch
/// conditions themselves are the path's `Branch::Sym` entries, in `value::State`.)
///
/// Shared until written (copy on write): a state is cloned at every fork, loop and call
/// summary, and the facts of most clones never change, so a clone is one pointer and equal
/// facts of two clones compare by it.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    inner: std::rc::Rc<FactsInner>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct FactsInner {
    subst: BTreeMap<SymId, Poly>,
    ranges: BTreeMap<SymId, (i128, Option<i128>)>,
}

impl PartialEq for Facts {
    fn eq(&self, o: &Facts) -> bool {
        std::rc::Rc::ptr_eq(&self.inner, &o.inner) || *self.inner == *o.inner
    }
}

/// The lower bound of a symbol that has none (an int of unknown value and sign).
pub const UNBOUNDED: i128 = i128::MIN;

/// The per-file symbol table.
#[derive(Debug, Default, Clone)]
pub struct Symbols {
    pub infos: Vec<SymInfo>,
}

impl Symbols {
    /// A fresh symbol with a lower bound (dimensions are >= 0; most sizes are >= 1).
    pub fn fresh(&mut self, name: &str, lo: i128) -> Poly {
        let id = self.infos.len() as SymId;
        self.infos.push(SymInfo { name: name.to_string(), lo, int: false, phrase: None, param: None, every: false });
        Poly::sym(id)
    }

    /// A fresh symbol that takes each of its values in one run (`SymInfo::every`).
    pub fn fresh_every(&mut self, name: &str, lo: i128) -> Poly {
        let p = self.fresh(name, lo);
        if let Some(i) = self.infos.last_mut() {
            i.every = true;
        }
        p
    }

    /// Whether every symbol of a condition takes each of its values in one run
    /// (`SymInfo::every`): both sides of a branch on it run.
    pub fn every_value(&self, c: &Cond) -> bool {
        let mut ids = std::collections::BTreeSet::new();
        c.poly.collect_syms(&mut ids);
        !ids.is_empty() && ids.iter().all(|id| self.infos.get(*id as usize).is_some_and(|i| i.every))
    }

    /// A fresh symbol that is known to be an int (`SymInfo::int`).
    pub fn fresh_int(&mut self, name: &str, lo: i128) -> Poly {
        let p = self.fresh(name, lo);
        if let Some(i) = self.infos.last_mut() {
            i.int = true;
        }
        p
    }

    /// Whether a polynomial is known to be an int: integer coefficients over symbols known
    /// to be ints (`fresh_int`).
    pub fn is_int(&self, p: &Poly) -> bool {
        p.terms().all(|(m, _)| m.iter().all(|a| matches!(a, poly::Atom::Sym(id) if self.infos.get(*id as usize).is_some_and(|i| i.int))))
    }

    /// The condition that the environment answers yes to a question (`phrase`: how each
    /// answer reads in a message): `s == 1` over one 0/1 symbol per question, so that the
    /// program asking twice gets the same answer on a path.
    pub fn flag(&mut self, name: &str, phrase: (&'static str, &'static str)) -> Cond {
        if let Some(c) = self.asked(phrase) {
            return c;
        }
        let p = self.fresh_int(name, 0);
        if let Some(i) = self.infos.last_mut() {
            i.phrase = Some(phrase);
        }
        Cond { poly: p.sub(&Poly::constant(1)).expect("no overflow"), rel: Rel::Eq }
    }

    /// The condition of a question the program asked already ([`Symbols::flag`]); `None`
    /// before it asked (then no path knows its answer).
    pub fn asked(&self, phrase: (&'static str, &'static str)) -> Option<Cond> {
        let id = self.infos.iter().position(|i| i.phrase == Some(phrase))? as SymId;
        Some(Cond { poly: Poly::sym(id).sub(&Poly::constant(1)).expect("no overflow"), rel: Rel::Eq })
    }

    /// Tag the symbol `p` (a fresh one) as a free parameter.
    pub fn set_param(&mut self, p: &Poly, param: Param) {
        if let Some(id) = p.as_sym() {
            if let Some(i) = self.infos.get_mut(id as usize) {
                i.param = Some(param);
            }
        }
    }

    pub fn name(&self, id: SymId) -> &str {
        self.infos.get(id as usize).map(|i| i.name.as_str()).unwrap_or("?")
    }
}

impl Facts {
    /// The facts with their symbols renamed by `f`, which keeps their order (`Poly::rename_syms`).
    pub fn rename_syms(&self, f: &dyn Fn(SymId) -> SymId) -> Facts {
        let moves = self.inner.subst.iter().any(|(k, v)| f(*k) != *k || v.any_sym(&|s| f(s) != s)) || self.inner.ranges.keys().any(|k| f(*k) != *k);
        if !moves {
            return self.clone();
        }
        let subst = self.inner.subst.iter().map(|(k, v)| (f(*k), v.rename_syms(f))).collect();
        let ranges = self.inner.ranges.iter().map(|(k, v)| (f(*k), *v)).collect();
        Facts { inner: std::rc::Rc::new(FactsInner { subst, ranges }) }
    }

    /// Apply the known equalities.
    pub fn normalize(&self, p: &Poly) -> Poly {
        if self.inner.subst.is_empty() {
            return p.clone();
        }
        p.substitute(&self.inner.subst).unwrap_or_else(|| p.clone())
    }

    fn range(&self, syms: &Symbols, id: SymId) -> Interval {
        let base = syms.infos.get(id as usize).map(|i| i.lo).unwrap_or(i128::MIN);
        let (lo, hi) = self.inner.ranges.get(&id).copied().unwrap_or((base, None));
        Interval { lo: Ext::Fin(lo.max(base)), hi: hi.map(Ext::Fin).unwrap_or(Ext::PosInf) }
    }

    fn atom_interval(&self, syms: &Symbols, a: &Atom) -> Interval {
        match a {
            Atom::Sym(id) => self.range(syms, *id),
            Atom::FloorDiv(n, d) => {
                // (M*n') // (M*d') == n' // d' for the positive factors M both share
                let (_, n, d) = self.cancel(syms, n, d);
                if let Some(q) = n.floordiv(&d).and_then(|q| q.as_const()) {
                    return Interval::point(q);
                }
                let n = self.interval(syms, &n);
                let d = self.interval(syms, &d);
                match (n.lo, n.hi, d.lo, d.hi) {
                    (Ext::Fin(nl), nh, Ext::Fin(dl), dh) if nl >= 0 && dl >= 1 => {
                        let lo = match dh {
                            Ext::Fin(dh) => Ext::Fin(nl / dh),
                            _ => Ext::Fin(0),
                        };
                        let hi = match nh {
                            Ext::Fin(nh) => Ext::Fin(nh / dl),
                            _ => Ext::PosInf,
                        };
                        Interval { lo, hi }
                    }
                    _ => Interval::top(),
                }
            }
            Atom::Mod(n, d) => {
                // (M*n') % (M*d') == M * (n' % d') for the positive factors M both share
                let (m, n, d) = self.cancel(syms, n, d);
                if let Some(r) = n.modulo(&d).and_then(|r| r.as_const()) {
                    return self.interval(syms, &m).mul(Interval::point(r));
                }
                let d = self.interval(syms, &d);
                let m = self.interval(syms, &m);
                let r = match (d.lo, d.hi) {
                    (Ext::Fin(dl), Ext::Fin(dh)) if dl >= 1 => Interval { lo: Ext::Fin(0), hi: Ext::Fin(dh - 1) },
                    (Ext::Fin(dl), _) if dl >= 1 => Interval { lo: Ext::Fin(0), hi: Ext::PosInf },
                    _ => return Interval::top(),
                };
                m.mul(r)
            }
        }
    }

    /// `n` and `d` without the factors every term of both shares that are positive (symbols of
    /// positive range, and the gcd of all coefficients), and their product `M`.
    fn cancel(&self, syms: &Symbols, n: &Poly, d: &Poly) -> (Poly, Poly, Poly) {
        let mut nt: Vec<(Vec<poly::Atom>, i128)> = n.terms().map(|(m, c)| (m.clone(), *c)).collect();
        let mut dt: Vec<(Vec<poly::Atom>, i128)> = d.terms().map(|(m, c)| (m.clone(), *c)).collect();
        let mut factor = Poly::constant(1);
        if nt.is_empty() || dt.is_empty() {
            return (factor, n.clone(), d.clone());
        }
        loop {
            let common = nt[0].0.iter().find(|a| {
                matches!(a, poly::Atom::Sym(_))
                    && nt.iter().chain(dt.iter()).all(|(m, _)| m.contains(a))
                    && self.atom_interval(syms, a).lo >= Ext::Fin(1)
            });
            let Some(a) = common.cloned() else { break };
            for (m, _) in nt.iter_mut().chain(dt.iter_mut()) {
                if let Some(i) = m.iter().position(|x| *x == a) {
                    m.remove(i);
                }
            }
            let poly::Atom::Sym(id) = a else { break };
            match factor.mul(&Poly::sym(id)) {
                Some(f) => factor = f,
                None => return (Poly::constant(1), n.clone(), d.clone()),
            }
        }
        let g = nt.iter().chain(dt.iter()).fold(0, |g, (_, c)| poly::gcd(g, *c));
        if g <= 1 && factor.as_const() == Some(1) {
            // nothing to cancel: the polynomials as they are
            return (factor, n.clone(), d.clone());
        }
        let rebuild = |t: &[(Vec<poly::Atom>, i128)], g: i128| Poly::from_terms(t.iter().map(|(m, c)| (m.clone(), c / g)));
        let g = g.max(1);
        match factor.mul(&Poly::constant(g)) {
            Some(f) => (f, rebuild(&nt, g), rebuild(&dt, g)),
            None => (Poly::constant(1), n.clone(), d.clone()),
        }
    }

    fn interval(&self, syms: &Symbols, p: &Poly) -> Interval {
        let mut total = Interval::point(0);
        for (mono, coef) in p.terms() {
            let mut iv = Interval::point(*coef);
            for a in mono {
                iv = iv.mul(self.atom_interval(syms, a));
            }
            total = total.add(iv);
        }
        total
    }

    /// Decide `cond` under these facts.
    pub fn decide(&self, syms: &Symbols, cond: &Cond) -> Tri {
        let p = self.normalize(&cond.poly);
        let iv = self.interval(syms, &p);
        let zero = Ext::Fin(0);
        match cond.rel {
            Rel::Eq => {
                if iv.lo == zero && iv.hi == zero {
                    Tri::True
                } else if iv.lo > zero || iv.hi < zero || !self.integer_solvable(syms, &p) {
                    Tri::False
                } else {
                    Tri::Unknown
                }
            }
            Rel::Ne => self.decide(syms, &Cond { poly: p, rel: Rel::Eq }).not(),
            Rel::Lt => {
                if iv.hi < zero {
                    Tri::True
                } else if iv.lo >= zero {
                    Tri::False
                } else {
                    Tri::Unknown
                }
            }
            Rel::Le => {
                if iv.hi <= zero {
                    Tri::True
                } else if iv.lo > zero {
                    Tri::False
                } else {
                    Tri::Unknown
                }
            }
        }
    }

    /// Whether `p == 0` has an integer solution as far as divisibility tells, after dividing
    /// out the factors every term shares that cannot be 0 (`N*32*h*w - N*784`: `N >= 1`, so
    /// `32*h*w == 784`, which has none).
    fn integer_solvable(&self, syms: &Symbols, p: &Poly) -> bool {
        let mut terms: Vec<(Vec<poly::Atom>, i128)> = p.terms().map(|(m, c)| (m.clone(), *c)).collect();
        loop {
            let Some(first) = terms.first() else { return true };
            let common = first.0.iter().find(|a| {
                terms.iter().all(|(m, _)| m.contains(a)) && {
                    let iv = self.atom_interval(syms, a);
                    iv.lo > Ext::Fin(0) || iv.hi < Ext::Fin(0)
                }
            });
            let Some(a) = common.cloned() else { break };
            for (m, _) in terms.iter_mut() {
                if let Some(i) = m.iter().position(|x| *x == a) {
                    m.remove(i);
                }
            }
        }
        gcd_divides(&terms)
    }

    /// Decide `a op b`.
    pub fn compare(&self, syms: &Symbols, a: &Poly, rel: Rel, b: &Poly) -> Tri {
        match Cond::cmp(a, rel, b) {
            Some(c) => self.decide(syms, &c),
            None => Tri::Unknown,
        }
    }

    /// Add `cond` to the facts. Returns false when the facts become contradictory (the path is
    /// infeasible). The caller has checked that `cond` is not decided false.
    pub fn assume(&mut self, syms: &Symbols, cond: &Cond) -> bool {
        let p = self.normalize(&cond.poly);
        let cond = Cond { poly: p.clone(), rel: cond.rel };
        match self.decide(syms, &cond) {
            Tri::False => return false,
            Tri::True => return true,
            Tri::Unknown => {}
        }
        match cond.rel {
            Rel::Eq => {
                if let Some((id, value)) = p.solve_unit() {
                    // keep the substitution idempotent
                    let one = BTreeMap::from([(id, value.clone())]);
                    let inner = std::rc::Rc::make_mut(&mut self.inner);
                    for v in inner.subst.values_mut() {
                        if let Some(nv) = v.substitute(&one) {
                            *v = nv;
                        }
                    }
                    let iv = self.interval(syms, &value);
                    let r = self.range(syms, id);
                    if iv.hi < r.lo || iv.lo > r.hi {
                        return false;
                    }
                    std::rc::Rc::make_mut(&mut self.inner).subst.insert(id, value);
                }
                true
            }
            Rel::Ne => true,
            Rel::Lt => self.bound(syms, &p.add_const(1).unwrap_or(p.clone())),
            Rel::Le => self.bound(syms, &p),
        }
    }

    /// `p <= 0` where `p = c*s + k`: refine the range of `s`.
    fn bound(&mut self, syms: &Symbols, p: &Poly) -> bool {
        let Some((id, c, k)) = p.linear_single() else { return true };
        let base = syms.infos.get(id as usize).map(|i| i.lo).unwrap_or(i128::MIN);
        let (mut lo, mut hi) = self.inner.ranges.get(&id).copied().unwrap_or((base, None));
        if c > 0 {
            // s <= floor(-k / c)
            let b = (-k).div_euclid(c);
            hi = Some(hi.map_or(b, |h| h.min(b)));
        } else {
            // c*s <= -k with c < 0  <=>  s >= ceil(k / -c)
            let c = -c;
            let b = -((-k).div_euclid(c));
            lo = lo.max(b);
        }
        if let Some(h) = hi {
            if h < lo {
                return false;
            }
        }
        if self.inner.ranges.get(&id) != Some(&(lo, hi)) {
            std::rc::Rc::make_mut(&mut self.inner).ranges.insert(id, (lo, hi));
        }
        true
    }

    /// The facts both `self` and `o` imply (for merging paths).
    pub fn common(&self, o: &Facts) -> Facts {
        if self == o {
            return self.clone();
        }
        let subst = self.inner.subst.iter().filter(|(k, v)| o.inner.subst.get(k) == Some(v)).map(|(k, v)| (*k, v.clone())).collect();
        let ranges = self
            .inner
            .ranges
            .iter()
            .filter_map(|(k, (lo, hi))| {
                let (lo2, hi2) = o.inner.ranges.get(k)?;
                let hi = match (hi, hi2) {
                    (Some(a), Some(b)) => Some(*a.max(b)),
                    _ => None,
                };
                Some((*k, (*lo.min(lo2), hi)))
            })
            .collect();
        Facts { inner: std::rc::Rc::new(FactsInner { subst, ranges }) }
    }
}

/// `a == b` style text for a condition, moving negative terms to the right.
pub fn describe_cond(syms: &Symbols, c: &Cond) -> String {
    // an answer of the environment (`Symbols::flag`): `s == 1` or `s != 1`
    if matches!(c.rel, Rel::Eq | Rel::Ne) {
        for (id, info) in syms.infos.iter().enumerate() {
            let Some(phrase) = info.phrase else { continue };
            let one = Poly::sym(id as SymId).sub(&Poly::constant(1)).expect("no overflow");
            if c.poly == one || c.poly.neg().is_some_and(|p| p == one) {
                return (if c.rel == Rel::Eq { phrase.0 } else { phrase.1 }).to_string();
            }
        }
    }
    let (lhs, rhs) = c.poly.split_signs();
    let op = match c.rel {
        Rel::Eq => "==",
        Rel::Ne => "!=",
        Rel::Lt => "<",
        Rel::Le => "<=",
    };
    format!("{} {} {}", lhs.display(syms), op, rhs.display(syms))
}

/// Whether `c0 + sum(c_i * m_i) == 0` can hold for integer monomials `m_i` (symbols are dims
/// and ints, `//` and `%` atoms are integers): the gcd of the `c_i` must divide `c0`
/// (`32*H*W == 784` cannot hold: 784 is not a multiple of 32).
fn gcd_divides(terms: &[(Vec<poly::Atom>, i128)]) -> bool {
    let mut g = 0i128;
    let mut c0 = 0i128;
    for (mono, coef) in terms {
        if mono.is_empty() {
            c0 += *coef;
        } else {
            g = poly::gcd(g, *coef);
        }
    }
    g == 0 || c0 % g == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negation_is_recognised_without_building_it() {
        let mut syms = Symbols::default();
        let h = syms.fresh("H", 1);
        let w = syms.fresh("W", 1);
        for rel in [Rel::Eq, Rel::Ne, Rel::Lt, Rel::Le] {
            let c = Cond::cmp(&h, rel, &w.add_const(3).unwrap()).unwrap();
            let neg = c.negate().unwrap();
            assert!(neg.is_negation_of(&c) && c.is_negation_of(&neg), "{rel:?}");
            assert!(!c.is_negation_of(&c), "{rel:?}");
            // the same relation over another polynomial is not its negation
            let other = Cond::cmp(&h, rel, &w.add_const(4).unwrap()).unwrap().negate().unwrap();
            assert!(!other.is_negation_of(&c), "{rel:?}");
        }
    }

    #[test]
    fn an_equation_without_integer_solutions_is_false() {
        let mut syms = Symbols::default();
        let h = syms.fresh("H", 1);
        let w = syms.fresh("W", 1);
        let f = Facts::default();
        let lhs = Poly::constant(32).mul(&h).unwrap().mul(&w).unwrap();
        assert_eq!(f.compare(&syms, &lhs, Rel::Eq, &Poly::constant(784)), Tri::False, "784 / 32 is not an integer");
        assert_eq!(f.compare(&syms, &lhs, Rel::Eq, &Poly::constant(1568)), Tri::Unknown, "H*W = 49 may hold");
        let n = syms.fresh("N", 1);
        let nlhs = lhs.mul(&n).unwrap();
        assert_eq!(f.compare(&syms, &nlhs, Rel::Eq, &Poly::constant(784).mul(&n).unwrap()), Tri::False, "N >= 1 divides out");
        // shared positive factors cancel in `//` and `%`: (50*H*W) // (4*H*W) is 12, the
        // remainder 2*H*W
        let hw = h.mul(&w).unwrap();
        let (n50, d4) = (Poly::constant(50).mul(&hw).unwrap(), Poly::constant(4).mul(&hw).unwrap());
        assert_eq!(f.compare(&syms, &n50.floordiv(&d4).unwrap(), Rel::Eq, &Poly::constant(12)), Tri::True);
        assert_eq!(f.compare(&syms, &n50.modulo(&d4).unwrap(), Rel::Eq, &Poly::constant(0)), Tri::False);
        let two_h = Poly::constant(2).mul(&h).unwrap();
        assert_eq!(f.compare(&syms, &two_h.add(&Poly::constant(4).mul(&w).unwrap()).unwrap(), Rel::Eq, &Poly::constant(7)), Tri::False);
    }

    #[test]
    fn decides_linear_facts() {
        let mut syms = Symbols::default();
        let b = syms.fresh("B", 1);
        let f = Facts::default();
        let c120 = Poly::constant(120);
        // B*120 vs 120*B
        let x = b.mul(&c120).unwrap();
        let y = c120.mul(&b).unwrap();
        assert_eq!(f.compare(&syms, &x, Rel::Eq, &y), Tri::True);
        // B >= 1 so B + 1 != 0 and B*4 != 0
        assert_eq!(f.compare(&syms, &b.add_const(1).unwrap(), Rel::Eq, &Poly::constant(0)), Tri::False);
        assert_eq!(f.compare(&syms, &b, Rel::Eq, &Poly::constant(5)), Tri::Unknown);
        // assume B == 5: now decided
        let mut g = f.clone();
        assert!(g.assume(&syms, &Cond::cmp(&b, Rel::Eq, &Poly::constant(5)).unwrap()));
        assert_eq!(g.compare(&syms, &b.mul(&Poly::constant(2)).unwrap(), Rel::Eq, &Poly::constant(10)), Tri::True);
        // B < 3 then B > 4 is infeasible
        let mut h = f.clone();
        assert!(h.assume(&syms, &Cond::cmp(&b, Rel::Lt, &Poly::constant(3)).unwrap()));
        let gt4 = Cond::cmp(&Poly::constant(4), Rel::Lt, &b).unwrap();
        assert_eq!(h.decide(&syms, &gt4), Tri::False);
        assert_eq!(describe_cond(&syms, &Cond::cmp(&b, Rel::Eq, &Poly::constant(1)).unwrap()), "B == 1");
    }

    #[test]
    fn floordiv_and_mod_normalise() {
        let mut syms = Symbols::default();
        let h = syms.fresh("H", 1);
        let four_h = h.mul(&Poly::constant(4)).unwrap();
        assert_eq!(four_h.floordiv(&Poly::constant(2)).unwrap(), h.mul(&Poly::constant(2)).unwrap());
        assert_eq!(four_h.modulo(&Poly::constant(2)).unwrap(), Poly::constant(0));
        assert_eq!(Poly::constant(-7).floordiv(&Poly::constant(2)).unwrap(), Poly::constant(-4));
        assert_eq!(Poly::constant(-7).modulo(&Poly::constant(2)).unwrap(), Poly::constant(1));
        let f = Facts::default();
        // (H + 1) // 2 >= 0
        let q = h.add_const(1).unwrap().floordiv(&Poly::constant(2)).unwrap();
        assert_eq!(f.compare(&syms, &q, Rel::Lt, &Poly::constant(0)), Tri::False);
    }

    /// Products of sums are shown factored when that is not longer than the expanded sum.
    #[test]
    fn display_factors_common_products() {
        let mut syms = Symbols::default();
        let [b, c, h, w] = ["B", "C", "H", "W"].map(|n| syms.fresh(n, 1));
        let p = |x: &Poly, y: &Poly| x.mul(y).unwrap();
        let plus = |x: &Poly, k: i128| x.add_const(k).unwrap();
        let show = |x: &Poly| x.display(&syms);
        // a plain product stays a product
        assert_eq!(show(&p(&p(&b, &c), &p(&h, &w))), "B*C*H*W");
        // C*(H + 2)*(W + 2), expanded internally into four terms
        let padded = p(&p(&c, &plus(&h, 2)), &plus(&w, 2));
        assert_eq!(show(&padded), "C*(H + 2)*(W + 2)");
        // B*C*(H*W + 1): a common factor, then a sum that does not split
        let hw1 = plus(&p(&h, &w), 1);
        assert_eq!(show(&p(&p(&b, &c), &hw1)), "B*C*(H*W + 1)");
        // 4*(H - 3)*(W - 3) with a common coefficient and negative offsets
        let conv = p(&p(&Poly::constant(4), &plus(&h, -3)), &plus(&w, -3));
        assert_eq!(show(&conv), "4*(H - 3)*(W - 3)");
        // short sums stay expanded, and all-negative sums keep one sign in front
        assert_eq!(show(&p(&Poly::constant(2), &plus(&h, 1))), "2*H + 2");
        assert_eq!(show(&p(&Poly::constant(-1), &p(&c, &plus(&h, 2)))), "-C*(H + 2)");
        assert_eq!(show(&p(&p(&Poly::constant(-3), &c), &p(&plus(&h, 2), &plus(&w, 1)))), "-3*C*(H + 2)*(W + 1)");
        assert_eq!(show(&Poly::constant(0)), "0");
    }
}
