//! The branch decisions of a path, shared between the paths and the outcomes that copy them.
//!
//! A path's decisions are copied at every fork, and every check or reached site records them
//! with its outcome. A long path (a loop unrolled over opaque tests, each adding a decision)
//! made those copies the largest cost of the core: `tarfile.py` kept 350 MB of copied
//! decision lists at 200,000 steps, quadratic in the path's length. `Branches` is a persistent
//! list (each decision points to the ones before it): a copy is a pointer, a push allocates
//! one node, and the paths of a fork and the outcomes along a path share their common prefix.

use std::rc::Rc;

use super::Branch;

#[derive(Debug)]
struct Node {
    branch: Branch,
    /// The number of decisions up to this one included.
    len: usize,
    before: Option<Rc<Node>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        // a long list dropped node by node, not by recursion (the stack)
        let mut next = self.before.take();
        while let Some(n) = next {
            match Rc::try_unwrap(n) {
                Ok(mut n) => next = n.before.take(),
                Err(_) => break,
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Branches(Option<Rc<Node>>);

impl Branch {
    /// A choice the analysis cannot express (an opaque `if`, an assumption about an unknown
    /// input, the mark of a hidden taint): a path that went through one is tainted.
    pub fn is_choice(&self) -> bool {
        matches!(self, Branch::Opaque(..) | Branch::Assume(..))
    }
}

impl Branches {
    pub fn new() -> Branches {
        Branches(None)
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// A digest of the length and the last decision: equal lists have equal ones.
    pub fn digest(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        self.len().hash(&mut h);
        if let Some(n) = &self.0 {
            n.branch.hash(&mut h);
        }
        h.finish()
    }

    pub fn push(&mut self, b: Branch) {
        let len = self.len() + 1;
        self.0 = Some(Rc::new(Node { branch: b, len, before: self.0.take() }));
    }

    /// The decisions, last first.
    fn rev(&self) -> impl Iterator<Item = &Branch> + '_ {
        std::iter::successors(self.0.as_deref(), |n| n.before.as_deref()).map(|n| &n.branch)
    }

    /// Whether some decision is one `f` accepts (in no particular order: no list is built).
    pub fn any(&self, f: impl FnMut(&Branch) -> bool) -> bool {
        self.rev().any(f)
    }

    /// The decisions in order (a list of them is built: `any` and `contains` need none).
    pub fn iter(&self) -> std::iter::Rev<std::vec::IntoIter<&Branch>> {
        let v: Vec<&Branch> = self.rev().collect();
        v.into_iter().rev()
    }

    pub fn to_vec(&self) -> Vec<Branch> {
        self.iter().cloned().collect()
    }

    /// The first `n` decisions (all of them when `n` is past the end).
    pub fn prefix(&self, n: usize) -> Branches {
        let mut at = self.0.clone();
        while let Some(node) = &at {
            if node.len <= n {
                break;
            }
            at = node.before.clone();
        }
        Branches(at)
    }

    /// The decisions after the first `n`.
    pub fn suffix(&self, n: usize) -> Vec<Branch> {
        let mut v: Vec<Branch> = self.rev().take(self.len().saturating_sub(n)).cloned().collect();
        v.reverse();
        v
    }

    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            *self = self.prefix(n);
        }
    }

    /// The list with `more` pushed after it.
    pub fn extended(mut self, more: impl IntoIterator<Item = Branch>) -> Branches {
        self.extend(more);
        self
    }

    /// Whether both are the same list (not only equal ones): a pointer test.
    pub fn same(&self, o: &Branches) -> bool {
        match (&self.0, &o.0) {
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    pub fn starts_with(&self, o: &Branches) -> bool {
        o.len() <= self.len() && self.prefix(o.len()) == *o
    }

    pub fn contains(&self, b: &Branch) -> bool {
        self.any(|x| x == b)
    }

    /// The first decision, in order, that `f` maps to a value.
    pub fn find_first<T>(&self, mut f: impl FnMut(&Branch) -> Option<T>) -> Option<T> {
        // walked from the end, the last one found is the first in order
        self.rev().filter_map(&mut f).last()
    }

    /// The number of leading decisions both lists share.
    pub fn common_prefix_len(&self, o: &Branches) -> usize {
        let m = self.len().min(o.len());
        let (mut a, mut b) = (self.prefix(m).0, o.prefix(m).0);
        // walked back from the end: the common prefix ends before the earliest difference
        let mut common = m;
        while let (Some(x), Some(y)) = (&a, &b) {
            if Rc::ptr_eq(x, y) {
                break;
            }
            if x.branch != y.branch {
                common = x.len - 1;
            }
            let (nx, ny) = (x.before.clone(), y.before.clone());
            a = nx;
            b = ny;
        }
        common
    }
}

impl Extend<Branch> for Branches {
    fn extend<I: IntoIterator<Item = Branch>>(&mut self, iter: I) {
        for b in iter {
            self.push(b);
        }
    }
}

impl<'a> IntoIterator for &'a Branches {
    type Item = &'a Branch;
    type IntoIter = std::iter::Rev<std::vec::IntoIter<&'a Branch>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<Branch>> for Branches {
    fn from(v: Vec<Branch>) -> Branches {
        let mut b = Branches::new();
        b.extend(v);
        b
    }
}

impl PartialEq for Branches {
    fn eq(&self, o: &Branches) -> bool {
        if self.len() != o.len() {
            return false;
        }
        let (mut a, mut b) = (self.0.as_ref(), o.0.as_ref());
        while let (Some(x), Some(y)) = (a, b) {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            if x.branch != y.branch {
                return false;
            }
            a = x.before.as_ref();
            b = y.before.as_ref();
        }
        true
    }
}

impl PartialEq<[Branch]> for Branches {
    fn eq(&self, o: &[Branch]) -> bool {
        self.len() == o.len() && self.rev().zip(o.iter().rev()).all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{FileId, Span};

    fn op(at: u32) -> Branch {
        Branch::Opaque(Span { file: FileId(0), start: at, end: at + 1 }, 0, 2)
    }

    #[test]
    fn copies_share_their_prefix() {
        let mut a = Branches::new();
        a.extend([op(1), op(2)]);
        let mut b = a.clone();
        b.push(op(3));
        assert_eq!(a.len(), 2);
        assert_eq!(b.to_vec(), vec![op(1), op(2), op(3)]);
        assert!(b.starts_with(&a));
        assert!(!a.starts_with(&b));
        assert_eq!(b.suffix(1), vec![op(2), op(3)]);
        assert_eq!(b.prefix(1).to_vec(), vec![op(1)]);
        assert!(b.contains(&op(3)) && !a.contains(&op(3)));
        b.truncate(2);
        assert_eq!(a, b);
    }

    #[test]
    fn common_prefix_of_lists_built_apart() {
        let a = Branches::from(vec![op(1), op(2), op(3), op(4)]);
        let b = Branches::from(vec![op(1), op(2), op(9), op(4)]);
        assert_eq!(a.common_prefix_len(&b), 2);
        assert_eq!(a.common_prefix_len(&a.prefix(3)), 3);
        let c = Branches::from(vec![op(7)]);
        assert_eq!(a.common_prefix_len(&c), 0);
        assert_eq!(Branches::from(vec![op(1), op(2)]), a.prefix(2));
        assert!(a == *vec![op(1), op(2), op(3), op(4)].as_slice());
    }

    #[test]
    fn queries_without_a_list_built() {
        let a = Branches::from(vec![op(1), op(2), op(3)]);
        let at = |b: &Branch| match b {
            Branch::Opaque(s, ..) if s.start >= 2 => Some(s.start),
            _ => None,
        };
        assert_eq!(a.find_first(at), Some(2), "the first in order, not the last");
        assert!(a.any(|b| *b == op(3)) && !a.any(|b| *b == op(4)));
        assert_eq!(Branches::new().find_first(at), None);
    }

    #[test]
    fn a_long_list_drops_without_recursion() {
        let mut a = Branches::new();
        for i in 0..1_000_000 {
            a.push(op(i));
        }
        drop(a);
    }
}
