//! The refinements a call made (`Interp::refined_vars`, `Interp::refined_dims`: the unknowns a
//! first use of a shape variable introduces, the same on every path). A summarised call's are
//! made again by its replays when each refined a variable the call itself made: a second run
//! would make a new variable and refine it anew, so the replay adds the same entry renamed as
//! the rest of its result. A refinement of a variable from before the call a second run would
//! find in the caches: a replay keeps what the first run made for it (`Shift::keep`), when those
//! were the first variables and symbols the call made (else the call is not summarised).

use std::rc::Rc;

use crate::shape::Poly;

/// One entry added to a refinement cache.
#[derive(Clone, Debug)]
pub enum Refined {
    /// `refined_vars`: the variables of the key, and the variable made for it.
    Var(Vec<u32>, u32),
    /// `refined_dims`: the variable, position and name of the key, and the symbol made for it.
    Dim((u32, usize, Rc<str>), Poly),
}

impl Refined {
    /// Whether every variable of the key was made after `before` (the shape-variable counter
    /// at the call's start).
    pub fn fresh(&self, before: u32) -> bool {
        match self {
            Refined::Var(key, _) => key.iter().all(|v| *v > before),
            Refined::Dim((v, ..), _) => *v > before,
        }
    }

    /// The variable made for a key of variables.
    pub fn var(&self) -> Option<u32> {
        match self {
            Refined::Var(_, v) => Some(*v),
            Refined::Dim(..) => None,
        }
    }

    /// The symbol made for a dimension.
    pub fn sym(&self) -> Option<u32> {
        match self {
            Refined::Dim(_, p) => p.as_sym(),
            Refined::Var(..) => None,
        }
    }

    /// Renamed: the variables by `var`, the symbols by `sym`.
    pub fn renamed(&self, var: &dyn Fn(u32) -> u32, sym: &dyn Fn(u32) -> u32) -> Refined {
        match self {
            Refined::Var(key, v) => Refined::Var(key.iter().map(|x| var(*x)).collect(), var(*v)),
            Refined::Dim((v, slot, name), p) => Refined::Dim((var(*v), *slot, name.clone()), p.rename_syms(sym)),
        }
    }

    /// Of the refinements `log` a call made (its shape-variable and symbol counters at its
    /// start: `vars`, `syms`), how many variables and symbols those of variables from before
    /// it made, when they are the first ones the call made (`None` otherwise, or when one is
    /// no single symbol).
    pub fn kept(log: &[Refined], vars: u32, syms: u32) -> Option<(u32, u32)> {
        let (mut v, mut s) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for r in log.iter().filter(|r| !r.fresh(vars)) {
            match r {
                Refined::Var(_, x) => v.insert(*x),
                Refined::Dim(..) => s.insert(r.sym()?),
            };
        }
        let (nv, ns) = (v.len() as u32, s.len() as u32);
        (v.into_iter().eq(vars + 1..vars + 1 + nv) && s.into_iter().eq(syms..syms + ns)).then_some((nv, ns))
    }
}
