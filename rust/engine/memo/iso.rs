//! Structural matching up to renaming (`engine::memo`): whether what a call (or a loop's
//! iteration) read of one heap is the same in another up to a renaming of object ids, and of
//! the shape variables that start tensors' shapes (`VarMap`), and that renaming.

use std::collections::BTreeMap;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use super::{Read, plain, plain_same};
use crate::ir::Name;
use crate::value::*;

/// Whether what was read of `old` (`reads`, sorted) is the same in `new` up to a renaming of
/// object ids that keeps each of `roots` (the objects code reaches first: its scopes) in
/// place: the renaming, from `old`'s ids to `new`'s, when it is. Used by loops, whose next
/// item is matched against an earlier one this way (`interp::loops`).
pub fn same_reads(old: &State, new: &State, reads: &[Read], roots: &[ObjId]) -> Option<IdMap> {
    let mut iso = Iso::new(&old.heap, &new.heap, reads);
    (roots.iter().all(|r| iso.id(*r, *r)) && iso.drain()).then(|| iso.take_map())
}

/// What a successful `same_reads` leaves for the next one against the same `old`
/// (`same_reads_again`): the objects it kept in place, each with the object it found at that
/// id in both heaps, when it was the same one (held as `old` holds it: the new heap is not
/// held, so a write to it copies nothing).
pub struct Matched {
    kept: Vec<(ObjId, Option<Rc<Obj>>)>,
}

/// `same_reads`, for a `new` state that is mostly the one `last` matched (the next item of a
/// loop: only the loop variable and what it names differ). The objects the last match kept
/// in place are kept again; of those it found the same object in both heaps, the ones still
/// that object in `new` need no new look (everything they refer to was kept in place too),
/// the others are compared again, with the objects they lead to. The result is a renaming
/// under which everything read matches; when this finds none, `same_reads` itself decides,
/// so the answer is the same. `last` becomes this match.
pub fn same_reads_again(old: &State, new: &State, reads: &[Read], roots: &[ObjId], last: &mut Option<Matched>) -> Option<IdMap> {
    let seeded = last.as_ref().and_then(|m| {
        let mut iso = Iso::new(&old.heap, &new.heap, reads);
        // the kept ids are distinct (a renaming's): no pair to check them against
        for (x, same) in &m.kept {
            let x = *x;
            if x >= old.heap.len() || x >= new.heap.len() {
                return None;
            }
            iso.fwd.insert(x, x);
            let unchanged = same.as_ref().is_some_and(|o| Rc::ptr_eq(o, &new.heap[x]) && Rc::ptr_eq(o, &old.heap[x]));
            if !unchanged {
                let range = iso.reads_of(x);
                if !range.is_empty() {
                    iso.pending.push((x, x, range));
                }
            }
        }
        (roots.iter().all(|r| iso.id(*r, *r)) && iso.drain()).then(|| iso.take_map())
    });
    let map = seeded.or_else(|| same_reads(old, new, reads, roots))?;
    let m = last.get_or_insert_with(|| Matched { kept: Vec::new() });
    m.kept.clear();
    for (a, b) in map.iter() {
        if a == b {
            let same = Rc::ptr_eq(&old.heap[a], &new.heap[a]).then(|| old.heap[a].clone());
            m.kept.push((a, same));
        }
    }
    Some(map)
}

/// `same_reads` for another path (`old`, `new`) of the states whose first path (`old0`,
/// `new0`) matched with the renaming `map0`: the paths share most objects, so `map0` is
/// taken as it is and only its pairs whose objects differ between the paths are compared
/// again (with the objects they lead to). A shared pair was compared under `map0`, which
/// the result extends, so the result is a renaming under which everything read matches.
/// `None` does not mean that none exists (a pair of `map0` this path no longer reaches may
/// stand in the way): the caller then tries `same_reads`.
pub fn same_reads_beside(old: &State, new: &State, reads: &[Read], old0: &State, new0: &State, map0: &IdMap) -> Option<IdMap> {
    let mut iso = Iso::new(&old.heap, &new.heap, reads);
    for (a, b) in map0.iter() {
        if a >= old.heap.len() || b >= new.heap.len() || a >= old0.heap.len() || b >= new0.heap.len() {
            return None;
        }
        iso.fwd.insert(a, b);
        if !(Rc::ptr_eq(&old.heap[a], &old0.heap[a]) && Rc::ptr_eq(&new.heap[b], &new0.heap[b])) {
            let range = iso.reads_of(a);
            if !range.is_empty() {
                iso.pending.push((a, b, range));
            }
        }
    }
    iso.drain().then(|| iso.take_map())
}

/// A partial bijection of object ids, from an old heap's to a new one's. It is small in
/// practice (the objects one call reads), so it is a list scanned linearly, with hash maps
/// built once it grows past `SMALL` pairs.
#[derive(Default)]
pub struct IdMap {
    pairs: Vec<(ObjId, ObjId)>,
    fwd: HashMap<ObjId, ObjId>,
    back: HashMap<ObjId, ObjId>,
}

impl IdMap {
    pub(super) const SMALL: usize = 24;

    /// How many ids it renames.
    pub(super) fn len(&self) -> usize {
        self.pairs.len()
    }

    /// The id `a` is renamed to.
    pub fn get(&self, a: ObjId) -> Option<ObjId> {
        if self.pairs.len() <= Self::SMALL { self.pairs.iter().find(|p| p.0 == a).map(|p| p.1) } else { self.fwd.get(&a).copied() }
    }

    pub(super) fn has_target(&self, b: ObjId) -> bool {
        if self.pairs.len() <= Self::SMALL { self.pairs.iter().any(|p| p.1 == b) } else { self.back.contains_key(&b) }
    }

    pub(super) fn insert(&mut self, a: ObjId, b: ObjId) {
        self.pairs.push((a, b));
        if self.pairs.len() == Self::SMALL + 1 {
            self.fwd = self.pairs.iter().copied().collect();
            self.back = self.pairs.iter().map(|&(a, b)| (b, a)).collect();
        } else if self.pairs.len() > Self::SMALL {
            self.fwd.insert(a, b);
            self.back.insert(b, a);
        }
    }

    /// Every (old, new) pair, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (ObjId, ObjId)> + '_ {
        self.pairs.iter().copied()
    }
}

/// At most this many spare buffers of each kind are kept (`SPARE`).
const SPARES: usize = 8;

type Pending = (ObjId, ObjId, std::ops::Range<usize>);

/// Spare `IdMap` pairs and `Iso` work lists.
type Spares = (Vec<Vec<(ObjId, ObjId)>>, Vec<Vec<Pending>>);

thread_local! {
    /// The buffers of finished matchings (`IdMap` pairs, `Iso` work lists), for the next
    /// ones: a loop skip or a summary lookup then allocates nothing.
    static SPARE: std::cell::RefCell<Spares> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Keep the buffer `buf` of a finished matching for the next one, emptied, in the spares
/// `kind` picks (one of `SPARE`'s), when it is not too large and there is room.
fn give_back<T>(mut buf: Vec<T>, kind: impl FnOnce(&mut Spares) -> &mut Vec<Vec<T>>) {
    if buf.capacity() > 0 && buf.capacity() <= 1024 {
        buf.clear();
        let _ = SPARE.try_with(|s| {
            let mut s = s.borrow_mut();
            let spares = kind(&mut s);
            if spares.len() < SPARES {
                spares.push(buf);
            }
        });
    }
}

impl Drop for IdMap {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.pairs), |s| &mut s.0);
    }
}

impl Drop for Iso<'_> {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.pending), |s| &mut s.1);
    }
}

/// Whether each dimension of two tensors of as many came from the same place (`Dim::why`).
fn same_why(x: &crate::value::Tensor, y: &crate::value::Tensor) -> bool {
    x.shape.dims.iter().zip(&y.shape.dims).all(|(d, e)| d.why == e.why)
}

/// Whether two tensors are equal but for the variable their shapes start with.
fn equal_but_prefix(x: &crate::value::Tensor, y: &crate::value::Tensor) -> bool {
    let crate::value::Tensor { shape, dtype, device, layout, values, registered, act, grad, saved } = x;
    shape.dims == y.shape.dims && *dtype == y.dtype && *device == y.device && *layout == y.layout && *values == y.values && *registered == y.registered && *act == y.act && *grad == y.grad && *saved == y.saved
}

/// A partial bijection between the first call's object ids and the current ones; objects
/// the first call read are compared by content (from a work list, so deep heaps recurse not).
pub(super) struct Iso<'a> {
    old: &'a Heap,
    new: &'a Heap,
    reads: &'a [Read],
    pub(super) fwd: IdMap,
    /// Pairs whose contents are still to compare, with the range of `reads` of the old one.
    pending: Vec<Pending>,
    /// The renaming of shape variables, when one is allowed (a summary lookup; `None`: a loop's
    /// match, where a tensor must equal the other): every variable met at the start of a
    /// tensor's shape, with the one it stands for (itself, or another, not pinned), one to one.
    pub(super) vars: Option<VarMap<'a>>,
}

/// The shape variables a summary lookup met (`Iso::vars`).
pub(super) struct VarMap<'a> {
    /// `Summary::pinned`: those that stand for themselves only.
    pub(super) pinned: &'a [u32],
    pub(super) pairs: Vec<(u32, u32)>,
}

impl VarMap<'_> {
    /// Whether `a` may stand for `b`, one to one with the pairs met so far (noted when new).
    pub(super) fn pair(&mut self, a: u32, b: u32) -> bool {
        if a != b && self.pinned.binary_search(&a).is_ok() {
            return false;
        }
        for &(x, y) in &self.pairs {
            if x == a || y == b {
                return x == a && y == b;
            }
        }
        self.pairs.push((a, b));
        true
    }

    /// Whether `v`, when no tensor compared showed it, may stand for itself: no other variable
    /// stands for it (then it is noted as itself). One that was met is already paired.
    pub(super) fn stands_for_itself(&mut self, v: u32) -> bool {
        self.pairs.iter().any(|p| p.0 == v) || self.pair(v, v)
    }

    /// The pairs of different variables (the renaming a replay applies), sorted.
    pub(super) fn renamed(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = self.pairs.iter().copied().filter(|(a, b)| a != b).collect();
        out.sort_unstable();
        out
    }
}

impl<'a> Iso<'a> {
    pub(super) fn new(old: &'a Heap, new: &'a Heap, reads: &'a [Read]) -> Iso<'a> {
        // room for the few objects a call or an iteration reads, as a rule (one allocation each)
        let (pairs, pending) = SPARE.with(|s| {
            let mut s = s.borrow_mut();
            (s.0.pop().unwrap_or_else(|| Vec::with_capacity(16)), s.1.pop().unwrap_or_else(|| Vec::with_capacity(8)))
        });
        Iso { old, new, reads, fwd: IdMap { pairs, fwd: HashMap::default(), back: HashMap::default() }, pending, vars: Option::None }
    }

    /// The renaming found (the matching is over).
    pub(super) fn take_map(&mut self) -> IdMap {
        std::mem::take(&mut self.fwd)
    }

    pub(super) fn id(&mut self, a: ObjId, b: ObjId) -> bool {
        if let Some(x) = self.fwd.get(a) {
            return x == b;
        }
        if a >= self.old.len() || b >= self.new.len() || self.fwd.has_target(b) {
            return false;
        }
        self.fwd.insert(a, b);
        let range = self.reads_of(a);
        if !range.is_empty() {
            self.pending.push((a, b, range));
        }
        true
    }

    /// Where in `reads` the first call's reads of object `a` are (`None` first: all of it).
    fn reads_of(&self, a: ObjId) -> std::ops::Range<usize> {
        let lo = self.reads.partition_point(|r| r.0 < a);
        let hi = lo + self.reads[lo..].partition_point(|r| r.0 <= a);
        lo..hi
    }

    pub(super) fn drain(&mut self) -> bool {
        while let Some((a, b, range)) = self.pending.pop() {
            let (old, new) = (self.old, self.new);
            let reads: &'a [Read] = &self.reads[range];
            let whole = reads[0].1.is_none();
            let names = || reads.iter().filter_map(|r| r.1.as_ref());
            let ok = if Rc::ptr_eq(&old[a], &new[b]) {
                // the same object (a heap shared since, or a summary's object shared by its
                // replays): equal contents, so only the objects it refers to must map to
                // themselves
                let mut ok = true;
                match (whole, &*old[a]) {
                    (false, Obj::Scope { vars, parent }) => {
                        ok = self.opt_id(*parent, *parent);
                        for n in names() {
                            if let Some(v) = vars.get(n) {
                                crate::value::gc::value_ids(v, &mut |x| ok = ok && self.id(x, x));
                            }
                        }
                    }
                    (false, Obj::Instance { class, attrs }) => {
                        ok = self.id(*class, *class);
                        for n in names() {
                            if let Some(v) = attrs.get(n) {
                                crate::value::gc::value_ids(v, &mut |x| ok = ok && self.id(x, x));
                            }
                        }
                    }
                    (true, o) => crate::value::gc::obj_ids(o, &mut |x| ok = ok && self.id(x, x)),
                    _ => ok = false,
                }
                ok
            } else if whole {
                self.obj(&old[a], &new[b])
            } else {
                // only some variables of a scope (those, and the way to its parent) or some
                // attributes of an instance (those, and its class)
                let some = |me: &mut Self, get1: &dyn Fn(&Name) -> Option<&'a Value>, get2: &dyn Fn(&Name) -> Option<&'a Value>| {
                    names().all(|n| match (get1(n), get2(n)) {
                        (Some(x), Some(y)) => me.value(x, y),
                        (None, None) => true,
                        _ => false,
                    })
                };
                match (&*old[a], &*new[b]) {
                    (Obj::Scope { vars: v1, parent: p1 }, Obj::Scope { vars: v2, parent: p2 }) => self.opt_id(*p1, *p2) && some(self, &|n| v1.get(n), &|n| v2.get(n)),
                    (Obj::Instance { class: c1, attrs: v1 }, Obj::Instance { class: c2, attrs: v2 }) => self.id(*c1, *c2) && some(self, &|n| v1.get(n), &|n| v2.get(n)),
                    _ => false,
                }
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn opt_id(&mut self, a: Option<ObjId>, b: Option<ObjId>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => self.id(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    fn values(&mut self, a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.value(x, y))
    }

    fn map<K: PartialEq>(&mut self, a: &BTreeMap<K, Value>, b: &BTreeMap<K, Value>) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|((k1, x), (k2, y))| k1 == k2 && self.value(x, y))
    }

    pub(super) fn closure(&mut self, a: &Closure, b: &Closure) -> bool {
        Rc::ptr_eq(&a.def, &b.def)
            && a.kind == b.kind
            && self.id(a.scope, b.scope)
            && self.opt_id(a.class, b.class)
            && self.values(&a.defaults, &b.defaults)
            && a.kw_defaults.len() == b.kw_defaults.len()
            && a.kw_defaults.iter().zip(&b.kw_defaults).all(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => self.value(x, y),
                (None, None) => true,
                _ => false,
            })
    }

    /// Equal values up to the renaming; tensor dims must also agree on where they came from
    /// (the text messages show).
    pub(super) fn value(&mut self, a: &Value, b: &Value) -> bool {
        use Value::*;
        match (a, b) {
            (Ref(x), Ref(y)) => self.id(*x, *y),
            // (the other plain values: by equality, `plain_same`)
            _ if plain(a) => plain_same(a, b),
            (Tuple(x), Tuple(y)) => self.values(x, y),
            (Tensor(x), Tensor(y)) => {
                let Some(vars) = self.vars.as_mut() else {
                    return Rc::ptr_eq(x, y) || (x == y && same_why(x, y));
                };
                match (x.shape.prefix, y.shape.prefix) {
                    (Some(a), Some(b)) => vars.pair(a, b) && (Rc::ptr_eq(x, y) || (if a == b { x == y } else { equal_but_prefix(x, y) }) && same_why(x, y)),
                    _ => Rc::ptr_eq(x, y) || (x == y && same_why(x, y)),
                }
            }
            (Func(x), Func(y)) => self.closure(x, y),
            (Bound(r1, c1), Bound(r2, c2)) => self.value(r1, r2) && self.closure(c1, c2),
            (LibMethod(r1, n1), LibMethod(r2, n2)) => n1 == n2 && self.value(r1, r2),
            (Super(c1, v1), Super(c2, v2)) => self.id(*c1, *c2) && self.value(v1, v2),
            (Gen(c1, a1, k1), Gen(c2, a2, k2)) => {
                self.closure(c1, c2)
                    && self.values(a1, a2)
                    && k1.len() == k2.len()
                    && k1.iter().zip(k2.iter()).all(|((n1, x), (n2, y))| n1 == n2 && self.value(x, y))
            }
            (Cond(x), Cond(y)) => x == y,
            (Range(a1, b1, c1), Range(a2, b2, c2)) => a1 == a2 && b1 == b2 && c1 == c2,
            _ => false,
        }
    }

    fn obj(&mut self, a: &Obj, b: &Obj) -> bool {
        use Obj::*;
        match (a, b) {
            (List(x), List(y)) => self.values(x, y),
            (Dict(x), Dict(y)) => x.len() == y.len() && x.iter().zip(y).all(|((k1, v1), (k2, v2))| self.value(k1, k2) && self.value(v1, v2)),
            (Instance { class: c1, attrs: a1 }, Instance { class: c2, attrs: a2 }) => self.id(*c1, *c2) && self.map(a1, a2),
            (Class { name: n1, def: d1, bases: b1, attrs: a1 }, Class { name: n2, def: d2, bases: b2, attrs: a2 }) => {
                n1 == n2
                    && match (d1, d2) {
                        (Some(x), Some(y)) => Rc::ptr_eq(x, y),
                        (Option::None, Option::None) => true,
                        _ => false,
                    }
                    && self.values(b1, b2)
                    && self.map(a1, a2)
            }
            (Layer(x), Layer(y)) => {
                x.kind == y.kind && x.label == y.label && x.span == y.span && self.map(&x.args, &y.args) && self.map(&x.attrs, &y.attrs)
            }
            (Container { kind: k1, items: i1, attrs: a1 }, Container { kind: k2, items: i2, attrs: a2 }) => {
                k1 == k2 && i1.len() == i2.len() && i1.iter().zip(i2).all(|((n1, x), (n2, y))| n1 == n2 && self.value(x, y)) && self.map(a1, a2)
            }
            (Scope { vars: v1, parent: p1 }, Scope { vars: v2, parent: p2 }) => {
                v1.len() == v2.len() && v1.iter().zip(v2.iter()).all(|((k1, x), (k2, y))| k1 == k2 && self.value(x, y)) && self.opt_id(*p1, *p2)
            }
            (Namespace { kind: k1, attrs: a1 }, Namespace { kind: k2, attrs: a2 }) => k1 == k2 && self.map(a1, a2),
            _ => false,
        }
    }
}

#[cfg(test)]
mod var_map_tests {
    use super::VarMap;

    #[test]
    fn variables_pair_one_to_one() {
        let mut m = VarMap { pinned: &[], pairs: Vec::new() };
        assert!(m.pair(3, 7));
        assert!(m.pair(3, 7), "met again as the same pair");
        assert!(!m.pair(3, 8), "one variable stands for one");
        assert!(!m.pair(4, 7), "two variables do not stand for one");
        assert!(m.pair(5, 5));
        assert!(!m.pair(6, 5), "nor for one that stands for itself");
        assert_eq!(m.renamed(), vec![(3, 7)]);
    }

    #[test]
    fn a_pinned_variable_stands_for_itself_only() {
        let mut m = VarMap { pinned: &[2, 9], pairs: Vec::new() };
        assert!(!m.pair(2, 4));
        assert!(m.pair(9, 9));
        assert!(m.renamed().is_empty());
    }

    #[test]
    fn a_variable_not_met_keeps_others_from_standing_for_it() {
        let mut m = VarMap { pinned: &[], pairs: Vec::new() };
        assert!(m.pair(3, 7));
        // the call looked up 7 (not shown by a tensor compared): 3 may not stand for it
        assert!(!m.stands_for_itself(7));
        // 3 was met: it stands for 7, as paired
        assert!(m.stands_for_itself(3));
        assert!(m.stands_for_itself(11));
        assert!(!m.pair(12, 11));
    }
}
