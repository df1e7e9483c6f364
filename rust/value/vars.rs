//! The variables of a scope: a persistent sorted map from names to values (a treap whose
//! nodes are shared between the copies of a scope until one of them writes them).
//!
//! A module scope holds every global of its file. Each state that keeps an older heap (a
//! forked path, a call summary, the state at a module's first call) keeps the module scope as
//! it was, and the next global assignment copies it: with a `BTreeMap`, a copy of every
//! global, so a file of N top-level statements cost N² in time and memory. Here an
//! assignment copies the nodes on the way to its name (O(log N)).
//!
//! The tree's shape depends only on its keys (each node's priority is a fixed hash of its
//! name, ties broken by the name), so two equal maps have the same shape: equality compares
//! node by node and skips the subtrees both share. Iteration is in name order, as a
//! `BTreeMap`'s.

use std::rc::Rc;

use super::Value;
use crate::ir::Name;

type Link = Option<Rc<Node>>;

#[derive(Clone)]
struct Node {
    key: Name,
    val: Value,
    prio: u64,
    left: Link,
    right: Link,
}

/// The variables of a scope, in name order.
#[derive(Clone, Default)]
pub struct Vars {
    root: Link,
    len: usize,
}

/// A fixed hash of a name (the same on every machine): the node's priority.
fn prio(key: &str) -> u64 {
    // FNV-1a, then a final mix so that names differing in their last byte spread
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Whether `a` belongs above `b` (a total order over distinct keys).
fn above(a: &Node, b: &Node) -> bool {
    (a.prio, &*a.key) > (b.prio, &*b.key)
}

fn rotate_right(link: &mut Link) {
    let mut n = link.take().expect("rotate a node");
    let m = Rc::make_mut(&mut n);
    let mut l = m.left.take().expect("rotate right with a left child");
    let lm = Rc::make_mut(&mut l);
    m.left = lm.right.take();
    lm.right = Some(n);
    *link = Some(l);
}

fn rotate_left(link: &mut Link) {
    let mut n = link.take().expect("rotate a node");
    let m = Rc::make_mut(&mut n);
    let mut r = m.right.take().expect("rotate left with a right child");
    let rm = Rc::make_mut(&mut r);
    m.right = rm.left.take();
    rm.left = Some(n);
    *link = Some(r);
}

/// Insert under `link`; the value replaced, if any.
fn insert(link: &mut Link, key: Name, val: Value) -> Option<Value> {
    let Some(n) = link else {
        let prio = prio(&key);
        *link = Some(Rc::new(Node { key, val, prio, left: None, right: None }));
        return None;
    };
    match (*key).cmp(&*n.key) {
        std::cmp::Ordering::Equal => Some(std::mem::replace(&mut Rc::make_mut(n).val, val)),
        std::cmp::Ordering::Less => {
            let m = Rc::make_mut(n);
            let old = insert(&mut m.left, key, val);
            if old.is_none() && m.left.as_ref().is_some_and(|l| above(l, m)) {
                rotate_right(link);
            }
            old
        }
        std::cmp::Ordering::Greater => {
            let m = Rc::make_mut(n);
            let old = insert(&mut m.right, key, val);
            if old.is_none() && m.right.as_ref().is_some_and(|r| above(r, m)) {
                rotate_left(link);
            }
            old
        }
    }
}

/// The treap of the keys of `a` and then of `b` (every key of `a` below every key of `b`).
fn join(a: Link, b: Link) -> Link {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(mut a), Some(mut b)) => {
            if above(&a, &b) {
                let m = Rc::make_mut(&mut a);
                m.right = join(m.right.take(), Some(b));
                Some(a)
            } else {
                let m = Rc::make_mut(&mut b);
                m.left = join(Some(a), m.left.take());
                Some(b)
            }
        }
    }
}

fn remove(link: &mut Link, key: &str) -> Option<Value> {
    let n = link.as_mut()?;
    match key.cmp(&*n.key) {
        std::cmp::Ordering::Less => remove(&mut Rc::make_mut(n).left, key),
        std::cmp::Ordering::Greater => remove(&mut Rc::make_mut(n).right, key),
        std::cmp::Ordering::Equal => {
            let mut n = link.take().expect("the node found");
            let m = Rc::make_mut(&mut n);
            *link = join(m.left.take(), m.right.take());
            Some(std::mem::replace(&mut m.val, Value::None))
        }
    }
}

fn eq_links(a: &Link, b: &Link) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Rc::ptr_eq(x, y) || (x.key == y.key && x.val == y.val && eq_links(&x.left, &y.left) && eq_links(&x.right, &y.right)),
        _ => false,
    }
}

/// Change values in place by `f` (`Some`: the new value), in name order, copying only the
/// nodes on the way to a changed one; whether one changed.
fn update(link: &mut Link, f: &mut dyn FnMut(&Name, &Value) -> Option<Value>) -> bool {
    let Some(n) = link else { return false };
    // (the children are tried through copies of their links, a pointer each: a subtree where
    // nothing changes is not copied)
    let mut left = n.left.clone();
    let l = update(&mut left, f);
    let new_val = f(&n.key, &n.val);
    let mut right = n.right.clone();
    let r = update(&mut right, f);
    if !(l || r || new_val.is_some()) {
        return false;
    }
    let m = Rc::make_mut(n);
    if l {
        m.left = left;
    }
    if let Some(v) = new_val {
        m.val = v;
    }
    if r {
        m.right = right;
    }
    true
}

impl Vars {
    pub fn new() -> Vars {
        Vars::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        let mut link = &self.root;
        while let Some(n) = link {
            match key.cmp(&*n.key) {
                std::cmp::Ordering::Less => link = &n.left,
                std::cmp::Ordering::Greater => link = &n.right,
                std::cmp::Ordering::Equal => return Some(&n.val),
            }
        }
        None
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The value of `key`, to write (the nodes on its way copied if shared).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let mut link = &mut self.root;
        loop {
            let n = Rc::make_mut(link.as_mut()?);
            match key.cmp(&*n.key) {
                std::cmp::Ordering::Less => link = &mut n.left,
                std::cmp::Ordering::Greater => link = &mut n.right,
                std::cmp::Ordering::Equal => return Some(&mut n.val),
            }
        }
    }

    pub fn insert(&mut self, key: Name, val: Value) -> Option<Value> {
        let old = insert(&mut self.root, key, val);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        // (absent: nothing is copied)
        self.get(key)?;
        let old = remove(&mut self.root, key);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Change values by `f` (`Some`: the new value), copying only what changes; whether
    /// one did.
    pub fn update(&mut self, mut f: impl FnMut(&Name, &Value) -> Option<Value>) -> bool {
        update(&mut self.root, &mut f)
    }

    /// Keep the entries for which `f` holds.
    pub fn retain(&mut self, mut f: impl FnMut(&Name, &Value) -> bool) {
        let drop: Vec<Name> = self.iter().filter(|(k, v)| !f(k, v)).map(|(k, _)| k.clone()).collect();
        for k in drop {
            self.remove(&k);
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        let mut it = Iter { stack: Vec::new(), left: self.len };
        it.descend(&self.root);
        it
    }

    pub fn keys(&self) -> impl Iterator<Item = &Name> + '_ {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        self.iter().map(|(_, v)| v)
    }
}

impl PartialEq for Vars {
    fn eq(&self, o: &Vars) -> bool {
        self.len == o.len && eq_links(&self.root, &o.root)
    }
}

impl std::fmt::Debug for Vars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(Name, Value)> for Vars {
    fn from_iter<I: IntoIterator<Item = (Name, Value)>>(it: I) -> Vars {
        let mut v = Vars::new();
        v.extend(it);
        v
    }
}

impl Extend<(Name, Value)> for Vars {
    fn extend<I: IntoIterator<Item = (Name, Value)>>(&mut self, it: I) {
        for (k, x) in it {
            self.insert(k, x);
        }
    }
}

impl<'a> IntoIterator for &'a Vars {
    type Item = (&'a Name, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The entries in name order.
pub struct Iter<'a> {
    stack: Vec<&'a Node>,
    left: usize,
}

impl<'a> Iter<'a> {
    fn descend(&mut self, mut link: &'a Link) {
        while let Some(n) = link {
            self.stack.push(n);
            link = &n.left;
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Name, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        let n = self.stack.pop()?;
        self.descend(&n.right);
        self.left -= 1;
        Some((&n.key, &n.val))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn key(i: u64) -> Name {
        Rc::from(format!("v{}", i.wrapping_mul(2_654_435_761) % 10_007))
    }

    #[test]
    fn behaves_as_a_btreemap_and_equal_maps_compare_equal() {
        let mut m = BTreeMap::new();
        let mut v = Vars::new();
        let mut snaps: Vec<(BTreeMap<Name, Value>, Vars)> = Vec::new();
        for i in 0..3000u64 {
            let k = key(i);
            let x = Value::int((i % 17) as i128);
            assert_eq!(m.insert(k.clone(), x.clone()), v.insert(k, x));
            if i % 7 == 0 {
                let k = key(i / 2);
                assert_eq!(m.remove(&k), v.remove(&k));
            }
            if i % 97 == 0 {
                snaps.push((m.clone(), v.clone()));
            }
            assert_eq!(m.len(), v.len());
        }
        assert!(m.iter().eq(v.iter()));
        for k in m.keys() {
            assert_eq!(m.get(k), v.get(k));
        }
        for (sm, sv) in &snaps {
            assert!(sm.iter().eq(sv.iter()), "a copy is not changed by writes to another");
        }
        // the same keys inserted in another order: an equal map, the same shape
        let mut w: Vars = m.iter().rev().map(|(k, x)| (k.clone(), x.clone())).collect();
        assert!(w == v);
        let changed = w.update(|k, x| (**k == *m.keys().nth(5).unwrap()).then(|| Value::int(99 + x.as_const_int().unwrap())));
        assert!(changed && w != v);
        *w.get_mut(m.keys().nth(5).unwrap()).unwrap() = m.values().nth(5).unwrap().clone();
        assert!(w == v);
        w.retain(|_, x| x.as_const_int() != Some(3));
        assert!(w.iter().eq(m.iter().filter(|(_, x)| x.as_const_int() != Some(3))));
    }
}
