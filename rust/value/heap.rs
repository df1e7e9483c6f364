//! The heap of one path: a persistent vector of objects (a radix trie of 32-way nodes, each
//! shared between the states that hold it until one of them writes it).
//!
//! Paths fork, call summaries and loops keep the state they started from, and the script
//! entry keeps the state at each module's first call: every such copy is a clone of the
//! heap. A flat copy-on-write vector made each of them cost the whole heap at the next write
//! (a copy of every slot, and memory kept for it): on a file that builds many models at
//! its top level, a cost per statement that grows with the heap, so quadratic in the file.
//! Here a clone is one pointer, and a write after it copies only the nodes on the way to the
//! written slot (at most 32 slots per level). Comparing two heaps that share most nodes
//! (`Heap::all_changed`) skips every shared subtree.

use std::ops::Index;
use std::rc::Rc;

use super::Obj;

const BITS: u32 = 5;
const WIDTH: usize = 1 << BITS;
const MASK: usize = WIDTH - 1;

#[derive(Clone)]
enum Node {
    Leaf(Vec<Rc<Obj>>),
    Branch(Vec<Rc<Node>>),
}

/// A persistent vector of objects, indexed by `ObjId`.
#[derive(Clone)]
pub struct Heap {
    root: Rc<Node>,
    len: usize,
    /// Levels: the root covers `WIDTH^height` slots (a leaf is level 1).
    height: u32,
}

impl Default for Heap {
    fn default() -> Heap {
        Heap::new()
    }
}

impl std::fmt::Debug for Heap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Slots under one node of this height.
fn span_of(height: u32) -> usize {
    1usize << (BITS * height)
}

fn new_path(height: u32, o: Rc<Obj>) -> Node {
    if height == 1 {
        let mut v = Vec::with_capacity(WIDTH);
        v.push(o);
        Node::Leaf(v)
    } else {
        Node::Branch(vec![Rc::new(new_path(height - 1, o))])
    }
}

fn push_rec(node: &mut Rc<Node>, height: u32, idx: usize, o: Rc<Obj>) {
    match Rc::make_mut(node) {
        Node::Leaf(v) => v.push(o),
        Node::Branch(c) => {
            let k = (idx >> (BITS * (height - 1))) & MASK;
            if k == c.len() {
                c.push(Rc::new(new_path(height - 1, o)));
            } else {
                push_rec(&mut c[k], height - 1, idx, o);
            }
        }
    }
}

/// Keep the first `keep` of the `have` slots under `node` (`0 < keep < have`).
fn truncate_rec(node: &mut Rc<Node>, height: u32, keep: usize, have: usize) {
    match Rc::make_mut(node) {
        Node::Leaf(v) => v.truncate(keep),
        Node::Branch(c) => {
            let per = span_of(height - 1);
            let k = keep.div_ceil(per);
            let last_have = if k == c.len() { have - (k - 1) * per } else { per };
            c.truncate(k);
            let last_keep = keep - (k - 1) * per;
            if last_keep < last_have {
                truncate_rec(&mut c[k - 1], height - 1, last_keep, last_have);
            }
        }
    }
}

fn slot_rec(node: &mut Rc<Node>, height: u32, idx: usize) -> &mut Rc<Obj> {
    match Rc::make_mut(node) {
        Node::Leaf(v) => &mut v[idx & MASK],
        Node::Branch(c) => slot_rec(&mut c[(idx >> (BITS * (height - 1))) & MASK], height - 1, idx),
    }
}

/// Subtrees of heaps known to hold no object a predicate picks (`Heap::find`). Each is kept
/// alive here, so that its address names the same contents as long as it is in the set (and a
/// write through a heap that shares it copies it, as for any shared node).
#[derive(Default)]
pub struct Clean {
    set: rustc_hash::FxHashSet<*const Node>,
    keep: Vec<Rc<Node>>,
}

/// At most this many subtrees are kept known clean; past it the set starts afresh.
const CLEAN_LIMIT: usize = 1 << 16;

impl Clean {
    fn note(&mut self, node: &Rc<Node>) {
        if self.keep.len() >= CLEAN_LIMIT {
            self.set.clear();
            self.keep.clear();
        }
        self.set.insert(Rc::as_ptr(node));
        self.keep.push(node.clone());
    }
}

/// Push onto `out` the indices under `node` (of `height`, first slot `base`) whose objects
/// `has` picks, skipping the subtrees `clean` knows; whether there were none.
fn find_rec(node: &Rc<Node>, height: u32, base: usize, clean: &mut Clean, has: &dyn Fn(&Obj) -> bool, out: &mut Vec<usize>) -> bool {
    if clean.set.contains(&Rc::as_ptr(node)) {
        return true;
    }
    let before = out.len();
    match &**node {
        Node::Leaf(v) => out.extend(v.iter().enumerate().filter(|(_, o)| has(o)).map(|(i, _)| base + i)),
        Node::Branch(c) => {
            let per = span_of(height - 1);
            for (k, child) in c.iter().enumerate() {
                find_rec(child, height - 1, base + k * per, clean, has, out);
            }
        }
    }
    let none = out.len() == before;
    if none {
        clean.note(node);
    }
    none
}

/// Call `f` on every index below `n` whose slots differ (by pointer) under `a` and `b`, two
/// nodes of the same height whose first slot is `base`; stop when `f` says false.
fn changed_rec(a: &Rc<Node>, b: &Rc<Node>, height: u32, base: usize, n: usize, f: &mut dyn FnMut(usize) -> bool) -> bool {
    if Rc::ptr_eq(a, b) {
        return true;
    }
    match (&**a, &**b) {
        (Node::Leaf(x), Node::Leaf(y)) => {
            for (i, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                if base + i >= n {
                    break;
                }
                if !Rc::ptr_eq(p, q) && !f(base + i) {
                    return false;
                }
            }
            true
        }
        (Node::Branch(x), Node::Branch(y)) => {
            let per = span_of(height - 1);
            for (k, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                let b2 = base + k * per;
                if b2 >= n {
                    break;
                }
                if !changed_rec(p, q, height - 1, b2, n, f) {
                    return false;
                }
            }
            true
        }
        _ => unreachable!("heap nodes of one height differ in kind"),
    }
}

impl Heap {
    pub fn new() -> Heap {
        Heap { root: Rc::new(Node::Leaf(Vec::new())), len: 0, height: 1 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The very same heap (a clone neither side wrote since).
    pub fn ptr_eq(a: &Heap, b: &Heap) -> bool {
        a.len == b.len && Rc::ptr_eq(&a.root, &b.root)
    }

    pub fn get(&self, i: usize) -> Option<&Rc<Obj>> {
        if i >= self.len {
            return None;
        }
        self.leaf_at(i).first()
    }

    /// The slots from `start` on, as the leaves hold them (each slice within one leaf).
    fn leaf_at(&self, i: usize) -> &[Rc<Obj>] {
        let mut node = &*self.root;
        let mut shift = BITS * (self.height - 1);
        loop {
            match node {
                Node::Branch(c) => {
                    node = &c[(i >> shift) & MASK];
                    shift -= BITS;
                }
                Node::Leaf(v) => return &v[i & MASK..],
            }
        }
    }

    pub fn push(&mut self, o: Rc<Obj>) {
        if self.len == span_of(self.height) {
            let old = std::mem::replace(&mut self.root, Rc::new(Node::Branch(Vec::new())));
            self.root = Rc::new(Node::Branch(vec![old]));
            self.height += 1;
        }
        push_rec(&mut self.root, self.height, self.len, o);
        self.len += 1;
    }

    pub fn extend(&mut self, objs: impl IntoIterator<Item = Rc<Obj>>) {
        for o in objs {
            self.push(o);
        }
    }

    /// Keep the first `n` objects.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        if n == 0 {
            *self = Heap::new();
            return;
        }
        // the lowest height that holds `n` slots: the root's first child until then
        while self.height > 1 && n <= span_of(self.height - 1) {
            let first = match &*self.root {
                Node::Branch(c) => c[0].clone(),
                Node::Leaf(_) => unreachable!("a heap root above level 1 is a branch"),
            };
            self.root = first;
            self.height -= 1;
            self.len = self.len.min(span_of(self.height));
        }
        if n < self.len {
            truncate_rec(&mut self.root, self.height, n, self.len);
        }
        self.len = n;
    }

    /// The slot of object `i`, to write (the nodes on its way copied if shared).
    pub fn slot_mut(&mut self, i: usize) -> &mut Rc<Obj> {
        assert!(i < self.len, "heap index {i} out of bounds ({})", self.len);
        slot_rec(&mut self.root, self.height, i)
    }

    pub fn set(&mut self, i: usize, o: Rc<Obj>) {
        *self.slot_mut(i) = o;
    }

    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// The objects from `start` on.
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        Iter { heap: self, pos: start, leaf: &[] }
    }

    /// Call `f` on every index below both lengths whose objects are not the very same in
    /// `self` and `other` (in increasing order, skipping the subtrees both share), until it
    /// says false; whether it never did.
    pub fn all_changed(&self, other: &Heap, mut f: impl FnMut(usize) -> bool) -> bool {
        let n = self.len.min(other.len);
        if n == 0 {
            return true;
        }
        // the taller trie's first subtree of the other's height holds every index below `n`
        let (mut a, mut b) = (&self.root, &other.root);
        let (mut ha, mut hb) = (self.height, other.height);
        while ha > hb {
            let Node::Branch(c) = &**a else { unreachable!() };
            a = &c[0];
            ha -= 1;
        }
        while hb > ha {
            let Node::Branch(c) = &**b else { unreachable!() };
            b = &c[0];
            hb -= 1;
        }
        changed_rec(a, b, ha, 0, n, &mut f)
    }

    /// The indices whose objects `has` picks, in order. The subtrees found to hold none are
    /// remembered in `clean` (for one predicate), and skipped by the next search of any heap
    /// that shares them: a walk after a write looks only at the nodes on the way to it.
    pub fn find(&self, clean: &mut Clean, has: &dyn Fn(&Obj) -> bool) -> Vec<usize> {
        let mut out = Vec::new();
        if self.len > 0 {
            find_rec(&self.root, self.height, 0, clean, has, &mut out);
        }
        out
    }

    /// The indices below both lengths whose objects are not the very same (`all_changed`).
    pub fn changed(&self, other: &Heap) -> Vec<usize> {
        let mut out = Vec::new();
        self.all_changed(other, |i| {
            out.push(i);
            true
        });
        out
    }
}

impl Index<usize> for Heap {
    type Output = Rc<Obj>;
    fn index(&self, i: usize) -> &Rc<Obj> {
        match self.get(i) {
            Some(o) => o,
            None => panic!("heap index {i} out of bounds ({})", self.len),
        }
    }
}

/// The objects of a heap in order, a leaf at a time.
pub struct Iter<'a> {
    heap: &'a Heap,
    pos: usize,
    leaf: &'a [Rc<Obj>],
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Rc<Obj>;
    fn next(&mut self) -> Option<&'a Rc<Obj>> {
        if self.leaf.is_empty() {
            if self.pos >= self.heap.len {
                return None;
            }
            self.leaf = self.heap.leaf_at(self.pos);
        }
        let (first, rest) = self.leaf.split_first()?;
        self.leaf = rest;
        self.pos += 1;
        Some(first)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.heap.len.saturating_sub(self.pos);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Heap {
    type Item = &'a Rc<Obj>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(i: usize) -> Rc<Obj> {
        Rc::new(Obj::List(vec![super::super::Value::int(i as i128)]))
    }

    #[test]
    fn a_search_skips_clean_subtrees_and_sees_every_write() {
        let picked = |o: &Obj| matches!(o, Obj::List(v) if v.len() == 2);
        let pair = || Rc::new(Obj::List(vec![crate::value::Value::None, crate::value::Value::None]));
        let mut h = Heap::new();
        for i in 0..2000 {
            h.push(if i % 700 == 3 { pair() } else { obj(i) });
        }
        let mut clean = Clean::default();
        assert_eq!(h.find(&mut clean, &picked), vec![3, 703, 1403]);
        let known = clean.keep.len();
        assert!(known > 0);
        // a copy written at one slot: the write is found, the subtrees it shares are skipped
        let mut h2 = h.clone();
        h2.set(1999, pair());
        h2.set(703, obj(703));
        h2.push(pair());
        assert_eq!(h2.find(&mut clean, &picked), vec![3, 1403, 1999, 2000]);
        // the original is unchanged
        assert_eq!(h.find(&mut clean, &picked), vec![3, 703, 1403]);
        assert!(clean.keep.len() < 2 * known);
    }

    fn id(o: &Obj) -> i128 {
        match o {
            Obj::List(v) => v[0].as_const_int().unwrap(),
            _ => -1,
        }
    }

    #[test]
    fn push_get_truncate_and_share() {
        for n in [0usize, 1, 31, 32, 33, 1023, 1024, 1025, 3000, 40_000] {
            let mut h = Heap::new();
            let mut v = Vec::new();
            for i in 0..n {
                h.push(obj(i));
                v.push(i);
            }
            assert_eq!(h.len(), n);
            assert!(h.iter().map(|o| id(o)).eq(v.iter().map(|&i| i as i128)));
            for &i in &[0, n / 3, n / 2, n.saturating_sub(1)] {
                if i < n {
                    assert_eq!(id(&h[i]), i as i128);
                    assert_eq!(h.iter_from(i).count(), n - i);
                }
            }
            let snap = h.clone();
            for keep in [n, n.saturating_sub(1), n / 2, 33, 32, 1, 0] {
                let mut t = snap.clone();
                t.truncate(keep);
                let keep = keep.min(n);
                assert_eq!(t.len(), keep);
                assert!(t.iter().map(|o| id(o)).eq((0..keep).map(|i| i as i128)));
                t.push(obj(7777));
                assert_eq!(id(&t[keep]), 7777);
                assert!(snap.iter().map(|o| id(o)).eq((0..n).map(|i| i as i128)), "a clone is not changed by writes to another");
            }
            if n > 0 {
                let mut w = snap.clone();
                w.set(n / 2, obj(9999));
                assert_eq!(w.changed(&snap), vec![n / 2]);
                assert_eq!(id(&snap[n / 2]), (n / 2) as i128);
                let mut grown = snap.clone();
                for i in 0..2000 {
                    grown.push(obj(n + i));
                }
                grown.set(0, obj(1));
                assert_eq!(grown.changed(&snap), vec![0]);
                assert_eq!(snap.changed(&grown), vec![0]);
            }
        }
    }
}
