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

/// The positions of a derived variable's key that hold shape variables
/// (`ModelCtx::derived_var`: a tag, then variables and numbers): `[0, parent]` (`refine_var`),
/// `[1, a, a_len, b, b_len]` (broadcasting's leading dims, `tensor::broadcast`), where
/// `u32::MAX` stands for no variable. A key of another tag: every entry after the tag.
fn var_positions(key: &[u32]) -> Vec<usize> {
    let candidates: Vec<usize> = match key.first() {
        Some(0) => vec![1],
        Some(1) => vec![1, 3],
        _ => (1..key.len()).collect(),
    };
    candidates.into_iter().filter(|&i| key.get(i).is_some_and(|&x| x != u32::MAX)).collect()
}

impl Refined {
    /// The variables of the key (not its tag, lengths or `u32::MAX` marks).
    fn key_vars(&self) -> Vec<u32> {
        match self {
            Refined::Var(key, _) => var_positions(key).into_iter().map(|i| key[i]).collect(),
            Refined::Dim((v, ..), _) => vec![*v],
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
            Refined::Var(key, v) => {
                let mut key = key.clone();
                for i in var_positions(&key) {
                    key[i] = var(key[i]);
                }
                Refined::Var(key, var(*v))
            }
            Refined::Dim((v, slot, name), p) => Refined::Dim((var(*v), *slot, name.clone()), p.rename_syms(sym)),
        }
    }

    /// The refinements `log` a call made (its shape-variable and symbol counters at its start:
    /// `vars`, `syms`), split: how many variables and symbols those a second run would find in
    /// the caches made (a refinement whose key holds only variables from before the call, or
    /// ones such a refinement made), and the others, which a replay makes again renamed (a key
    /// that holds a variable the call made anew: a second run's key holds that run's own, and
    /// finds nothing). `None` when the kept ones are not the first variables and symbols the
    /// call made, or one is no single symbol.
    pub fn split(log: &[Refined], vars: u32, syms: u32) -> Option<((u32, u32), Vec<Refined>)> {
        let (mut v, mut s) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        let mut again = Vec::new();
        for r in log {
            if r.key_vars().iter().all(|x| *x <= vars || v.contains(x)) {
                match r {
                    Refined::Var(_, x) => v.insert(*x),
                    Refined::Dim(..) => s.insert(r.sym()?),
                };
            } else {
                again.push(r.clone());
            }
        }
        let (nv, ns) = (v.len() as u32, s.len() as u32);
        (v.into_iter().eq(vars + 1..vars + 1 + nv) && s.into_iter().eq(syms..syms + ns)).then_some(((nv, ns), again))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `refine_var`'s key: `[0, parent]`.
    fn var(parent: u32, v: u32) -> Refined {
        Refined::Var(vec![0, parent], v)
    }

    /// Broadcasting's key: `[1, a, a_len, b, b_len]` (`u32::MAX`: no variable).
    fn broadcast(a: u32, b: u32, v: u32) -> Refined {
        Refined::Var(vec![1, a, 2, b, 1], v)
    }

    fn dim(parent: u32, sym: u32) -> Refined {
        Refined::Dim((parent, 0, Rc::from("B")), Poly::sym(sym))
    }

    /// Variables up to 10 and symbols below 20 existed before the call.
    #[test]
    fn refinements_of_the_callers_variables_are_kept_and_the_others_made_again() {
        // the caller's 7 refined into 11 (kept); the call's own 12 refined into 13 (made again)
        let (kept, again) = split(&[var(7, 11), var(12, 13)], 10, 20).unwrap();
        assert_eq!(kept, (1, 0));
        assert!(matches!(again.as_slice(), [Refined::Var(k, 13)] if k == &[0, 12]));
        // a refinement of what a kept one made is kept too (a second run finds both)
        let (kept, again) = split(&[var(7, 11), var(11, 12), dim(12, 20)], 10, 20).unwrap();
        assert_eq!(kept, (2, 1));
        assert!(again.is_empty());
    }

    #[test]
    fn a_key_that_holds_a_variable_the_call_made_is_made_again() {
        // 11 kept; the call made 12 itself; the broadcast of 11 with 12 into 13: a second run
        // would broadcast 11 with its own 12, a key the caches do not hold, and make it anew
        let (kept, again) = split(&[var(7, 11), broadcast(11, 12, 13)], 10, 20).unwrap();
        assert_eq!(kept, (1, 0));
        assert!(matches!(again.as_slice(), [Refined::Var(k, 13)] if k == &[1, 11, 2, 12, 1]));
        // a broadcast of the caller's variables only is found again: kept
        let (kept, again) = split(&[broadcast(7, u32::MAX, 11)], 10, 20).unwrap();
        assert_eq!(kept, (1, 0));
        assert!(again.is_empty());
    }

    #[test]
    fn renaming_moves_the_variables_of_a_key_not_its_tag_or_lengths() {
        let moved = broadcast(2, u32::MAX, 3).renamed(&|x| x + 100, &|x| x);
        assert!(matches!(moved, Refined::Var(k, 103) if k == [1, 102, 2, u32::MAX, 1]));
        let moved = var(1, 2).renamed(&|x| x + 100, &|x| x);
        assert!(matches!(moved, Refined::Var(k, 102) if k == [0, 101]));
    }

    #[test]
    fn kept_refinements_must_be_the_first_the_call_made() {
        // the call made 11 before refining the caller's 7 into 12: renaming would reorder them
        assert!(split(&[var(7, 12)], 10, 20).is_none());
        // the same for a symbol made after another of the call's own
        assert!(split(&[dim(7, 21)], 10, 20).is_none());
    }

    fn split(log: &[Refined], vars: u32, syms: u32) -> Option<((u32, u32), Vec<Refined>)> {
        Refined::split(log, vars, syms)
    }
}
