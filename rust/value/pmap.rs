//! A persistent sorted map (a treap whose nodes are shared between the copies of a map until
//! one of them writes them): the variables of a scope ([`Vars`]) and the graph nodes a path
//! made (`super::Made`).
//!
//! A module scope holds every global of its file. Each state that keeps an older heap (a
//! forked path, a call summary, the state at a module's first call) keeps the module scope as
//! it was, and the next global assignment copies it: with a `BTreeMap`, a copy of every
//! global, so a file of N top-level statements cost N² in time and memory. Here an
//! assignment copies the nodes on the way to its name (O(log N)).
//!
//! The tree's shape depends only on its keys (each node's priority is a fixed hash of its
//! key, ties broken by the key), so two equal maps have the same shape: equality compares
//! node by node and skips the subtrees both share, and so does [`PMap::diff`]. Iteration is
//! in key order, as a `BTreeMap`'s.

use std::rc::Rc;

use super::{Node as GraphNode, Value};
use crate::ir::Name;

/// A key of a [`PMap`]: ordered, with a fixed priority (the same on every machine).
pub trait Key: Ord + Clone {
    fn prio(&self) -> u64;
}

impl Key for Name {
    fn prio(&self) -> u64 {
        prio(self)
    }
}

impl Key for GraphNode {
    fn prio(&self) -> u64 {
        let (a, b) = self;
        let mut h = 0u64;
        for x in [a.file.0 as u64, a.start as u64, a.end as u64, b.file.0 as u64, b.start as u64, b.end as u64] {
            h = mix(h ^ x);
        }
        h
    }
}

/// splitmix64's finaliser.
fn mix(mut h: u64) -> u64 {
    h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

type Link<K, V> = Option<Rc<Node<K, V>>>;

#[derive(Clone)]
struct Node<K, V> {
    key: K,
    val: V,
    prio: u64,
    left: Link<K, V>,
    right: Link<K, V>,
}

/// A persistent map, in key order.
#[derive(Clone)]
pub struct PMap<K, V> {
    root: Link<K, V>,
    len: usize,
}

/// The variables of a scope, in name order.
pub type Vars = PMap<Name, Value>;

impl<K, V> Default for PMap<K, V> {
    fn default() -> Self {
        PMap { root: None, len: 0 }
    }
}

/// A fixed hash of a name (the same on every machine): its node's priority.
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
fn above<K: Ord, V>(a: &Node<K, V>, b: &Node<K, V>) -> bool {
    (a.prio, &a.key) > (b.prio, &b.key)
}

fn rotate_right<K: Clone, V: Clone>(link: &mut Link<K, V>) {
    let mut n = link.take().expect("rotate a node");
    let m = Rc::make_mut(&mut n);
    let mut l = m.left.take().expect("rotate right with a left child");
    let lm = Rc::make_mut(&mut l);
    m.left = lm.right.take();
    lm.right = Some(n);
    *link = Some(l);
}

fn rotate_left<K: Clone, V: Clone>(link: &mut Link<K, V>) {
    let mut n = link.take().expect("rotate a node");
    let m = Rc::make_mut(&mut n);
    let mut r = m.right.take().expect("rotate left with a right child");
    let rm = Rc::make_mut(&mut r);
    m.right = rm.left.take();
    rm.left = Some(n);
    *link = Some(r);
}

/// Insert under `link`; the value replaced, if any.
fn insert<K: Key, V: Clone>(link: &mut Link<K, V>, key: K, val: V) -> Option<V> {
    let Some(n) = link else {
        let prio = key.prio();
        *link = Some(Rc::new(Node { key, val, prio, left: None, right: None }));
        return None;
    };
    match key.cmp(&n.key) {
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
fn join<K: Key, V: Clone>(a: Link<K, V>, b: Link<K, V>) -> Link<K, V> {
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

fn remove<K: Key, V: Clone, Q: Ord + ?Sized>(link: &mut Link<K, V>, key: &Q) -> Option<V>
where
    K: std::borrow::Borrow<Q>,
{
    let n = link.as_mut()?;
    match key.cmp(n.key.borrow()) {
        std::cmp::Ordering::Less => remove(&mut Rc::make_mut(n).left, key),
        std::cmp::Ordering::Greater => remove(&mut Rc::make_mut(n).right, key),
        std::cmp::Ordering::Equal => {
            let mut n = link.take().expect("the node found");
            let m = Rc::make_mut(&mut n);
            *link = join(m.left.take(), m.right.take());
            Some(m.val.clone())
        }
    }
}

fn eq_links<K: PartialEq, V: PartialEq>(a: &Link<K, V>, b: &Link<K, V>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Rc::ptr_eq(x, y) || (x.key == y.key && x.val == y.val && eq_links(&x.left, &y.left) && eq_links(&x.right, &y.right)),
        _ => false,
    }
}

/// Change values in place by `f` (`Some`: the new value), in name order, copying only the
/// nodes on the way to a changed one; whether one changed.
fn update<K: Clone, V: Clone>(link: &mut Link<K, V>, f: &mut dyn FnMut(&K, &V) -> Option<V>) -> bool {
    let Some(n) = link else { return false };
    // a node this map alone holds: changed in place
    if let Some(m) = Rc::get_mut(n) {
        let l = update(&mut m.left, f);
        let new_val = f(&m.key, &m.val);
        let changed = new_val.is_some();
        if let Some(v) = new_val {
            m.val = v;
        }
        let r = update(&mut m.right, f);
        return l || changed || r;
    }
    // a shared one: its children are tried through copies of their links (a pointer each), so
    // that a subtree where nothing changes is not copied
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

/// Call `f` on the keys whose values differ between `a` and `b` (absent on one side: `None`),
/// in key order, until it says false; whether it never did. Where both sides have the same key
/// at the top of a subtree, the two are compared part by part (a subtree both share is
/// skipped); elsewhere (a key one side added or removed) the two subtrees are merged in order.
#[allow(clippy::type_complexity)]
fn diff_rec<K: Ord, V: PartialEq>(a: &Link<K, V>, b: &Link<K, V>, f: &mut dyn FnMut(&K, Option<&V>, Option<&V>) -> bool) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) if Rc::ptr_eq(x, y) => true,
        (Some(x), Some(y)) if x.key == y.key => {
            diff_rec(&x.left, &y.left, f) && (x.val == y.val || f(&x.key, Some(&x.val), Some(&y.val))) && diff_rec(&x.right, &y.right, f)
        }
        _ => {
            let (mut p, mut q) = (Iter::of(a, None), Iter::of(b, None));
            let (mut x, mut y) = (p.next(), q.next());
            loop {
                let go_on = match (x, y) {
                    (None, None) => return true,
                    (Some((k, v)), None) => {
                        x = p.next();
                        f(k, Some(v), None)
                    }
                    (None, Some((k, w))) => {
                        y = q.next();
                        f(k, None, Some(w))
                    }
                    (Some((k, v)), Some((l, w))) => match k.cmp(l) {
                        std::cmp::Ordering::Less => {
                            x = p.next();
                            f(k, Some(v), None)
                        }
                        std::cmp::Ordering::Greater => {
                            y = q.next();
                            f(l, None, Some(w))
                        }
                        std::cmp::Ordering::Equal => {
                            x = p.next();
                            y = q.next();
                            v == w || f(k, Some(v), Some(w))
                        }
                    },
                };
                if !go_on {
                    return false;
                }
            }
        }
    }
}

impl<K: Key, V: Clone> PMap<K, V> {
    pub fn new() -> Self {
        PMap { root: None, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        let mut link = &self.root;
        while let Some(n) = link {
            match key.cmp(n.key.borrow()) {
                std::cmp::Ordering::Less => link = &n.left,
                std::cmp::Ordering::Greater => link = &n.right,
                std::cmp::Ordering::Equal => return Some(&n.val),
            }
        }
        None
    }

    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
    {
        self.get(key).is_some()
    }

    /// The value of `key`, to write (the nodes on its way copied if shared).
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
    {
        // (absent: nothing is copied)
        self.get(key)?;
        let mut link = &mut self.root;
        loop {
            let n = Rc::make_mut(link.as_mut()?);
            match key.cmp(n.key.borrow()) {
                std::cmp::Ordering::Less => link = &mut n.left,
                std::cmp::Ordering::Greater => link = &mut n.right,
                std::cmp::Ordering::Equal => return Some(&mut n.val),
            }
        }
    }

    pub fn insert(&mut self, key: K, val: V) -> Option<V> {
        let old = insert(&mut self.root, key, val);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
    {
        // (absent: nothing is copied)
        self.get(key)?;
        let old = remove(&mut self.root, key);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Change values by `f` (`Some`: the new value), in key order, copying only what changes;
    /// whether one did.
    pub fn update(&mut self, mut f: impl FnMut(&K, &V) -> Option<V>) -> bool {
        update(&mut self.root, &mut f)
    }

    /// Keep the entries for which `f` holds.
    pub fn retain(&mut self, mut f: impl FnMut(&K, &V) -> bool) {
        let drop: Vec<K> = self.iter().filter(|(k, v)| !f(k, v)).map(|(k, _)| k.clone()).collect();
        for k in drop {
            self.remove(&k);
        }
    }

    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter::of(&self.root, Some(self.len))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Whether the two maps are the very same (a copy neither side wrote since).
    pub fn ptr_eq(&self, o: &Self) -> bool {
        match (&self.root, &o.root) {
            (None, None) => true,
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Call `f` on every key whose values differ between `self` and `o` (`None`: absent on that
    /// side), in key order, until it says false (the subtrees both share are skipped); whether
    /// it never did.
    pub fn diff(&self, o: &Self, mut f: impl FnMut(&K, Option<&V>, Option<&V>) -> bool) -> bool
    where
        V: PartialEq,
    {
        diff_rec(&self.root, &o.root, &mut f)
    }
}

impl<K: PartialEq, V: PartialEq> PartialEq for PMap<K, V> {
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && eq_links(&self.root, &o.root)
    }
}

impl<K: Eq, V: Eq> Eq for PMap<K, V> {}

impl<K: std::fmt::Debug + Key, V: std::fmt::Debug + Clone> std::fmt::Debug for PMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Key, V: Clone> FromIterator<(K, V)> for PMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(it: I) -> Self {
        let mut v = PMap::new();
        v.extend(it);
        v
    }
}

impl<K: Key, V: Clone> Extend<(K, V)> for PMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, it: I) {
        for (k, x) in it {
            self.insert(k, x);
        }
    }
}

impl<'a, K: Key, V: Clone> IntoIterator for &'a PMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;
    fn into_iter(self) -> Iter<'a, K, V> {
        self.iter()
    }
}

/// The entries in key order.
pub struct Iter<'a, K, V> {
    stack: Vec<&'a Node<K, V>>,
    /// The entries left, when known.
    left: Option<usize>,
}

impl<'a, K, V> Iter<'a, K, V> {
    /// The entries under `link`, of which there are `len` when known.
    fn of(link: &'a Link<K, V>, len: Option<usize>) -> Self {
        let mut it = Iter { stack: Vec::new(), left: len };
        it.descend(link);
        it
    }

    fn descend(&mut self, mut link: &'a Link<K, V>) {
        while let Some(n) = link {
            self.stack.push(n);
            link = &n.left;
        }
    }
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        let n = self.stack.pop()?;
        self.descend(&n.right);
        self.left = self.left.map(|n| n.saturating_sub(1));
        Some((&n.key, &n.val))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.left {
            Some(n) => (n, Some(n)),
            None => (self.stack.len(), None),
        }
    }
}

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
        let changed = w.update(|k, x| (*k == *m.keys().nth(5).unwrap()).then(|| Value::int(99 + x.as_const_int().unwrap())));
        assert!(changed && w != v);
        *w.get_mut(m.keys().nth(5).unwrap()).unwrap() = m.values().nth(5).unwrap().clone();
        assert!(w == v);
        w.retain(|_, x| x.as_const_int() != Some(3));
        assert!(w.iter().eq(m.iter().filter(|(_, x)| x.as_const_int() != Some(3))));
        // `diff` against every earlier copy: the keys whose values differ, as two BTreeMaps say
        for (sm, sv) in &snaps {
            let mut got = Vec::new();
            v.diff(sv, |k, a, b| {
                got.push((k.clone(), a.cloned(), b.cloned()));
                true
            });
            let keys: std::collections::BTreeSet<&Name> = m.keys().chain(sm.keys()).collect();
            let want: Vec<_> = keys.into_iter().filter(|k| m.get(*k) != sm.get(*k)).map(|k| ((*k).clone(), m.get(k).cloned(), sm.get(k).cloned())).collect();
            assert_eq!(got, want);
        }
    }
}
