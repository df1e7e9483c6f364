//! Joining paths past the path budget. Where paths multiply faster than they merge (an `if`
//! on a value not known in each of a hundred epochs, a `break` on an unknown `done` in each
//! step of a rollout), the paths left are joined into one state that stands for all of them:
//! what they agree on is kept, what they disagree on is Unknown (an object changed in
//! different ways becomes an opaque object, as a loop's forgotten writes do,
//! `interp::loops::forget_changes`). Every value the joined state holds is the value on each of
//! its paths, so a check that fails on it fails on each of them: a report stays a proof. The
//! path condition is their common prefix (`State::absorb`), and the facts those they share.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Branch, Heap, Obj, State, Value, Vars, join_layouts, layout_blind, same_def};
use crate::ir::Name;

/// A value on two paths: itself where equal (or equal but for what only adds precision to a
/// rule, `join_layouts`), else Unknown.
fn join_value(a: &Value, b: &Value) -> Value {
    if a == b {
        return a.clone();
    }
    if layout_blind(|| a == b)
        && let Some(j) = join_layouts(a, b)
    {
        return j;
    }
    Value::Unknown
}

/// Entries of two maps: the same keys, their values joined; a key on one side only is Unknown
/// (bound on some paths).
fn join_entries(a: &BTreeMap<Name, Value>, b: &BTreeMap<Name, Value>) -> BTreeMap<Name, Value> {
    let mut out = a.clone();
    for (k, v) in out.iter_mut() {
        *v = match b.get(k) {
            Some(w) => join_value(v, w),
            None => Value::Unknown,
        };
    }
    for k in b.keys() {
        out.entry(k.clone()).or_insert(Value::Unknown);
    }
    out
}

/// [`join_entries`] for the variables of a scope: only the entries that differ are written.
fn join_vars(a: &Vars, b: &Vars) -> Vars {
    let mut out = a.clone();
    out.update(|k, v| match b.get(k) {
        Some(w) if w == v => None,
        Some(w) => Some(join_value(v, w)),
        None => Some(Value::Unknown),
    });
    for (k, _) in b.iter() {
        if !out.contains_key(k) {
            out.insert(k.clone(), Value::Unknown);
        }
    }
    out
}

/// An object on two paths: maps of names joined entry by entry; a list, dict or container of
/// the same items (but for layouts) joined item by item; anything else they disagree on is an
/// opaque object.
fn join_obj(a: &Obj, b: &Obj) -> Obj {
    use Obj::*;
    match (a, b) {
        (Scope { vars: x, parent: p }, Scope { vars: y, parent: q }) if p == q => Scope { vars: join_vars(x, y), parent: *p },
        (Instance { class: c, attrs: x }, Instance { class: d, attrs: y }) if c == d => Instance { class: *c, attrs: join_entries(x, y) },
        (Namespace { kind: k, attrs: x }, Namespace { kind: l, attrs: y }) if k == l => Namespace { kind: k.clone(), attrs: join_entries(x, y) },
        (Class { name, def, bases, attrs: x }, Class { name: n2, def: d2, bases: b2, attrs: y }) if name == n2 && same_def(def, d2) && bases == b2 => {
            Class { name: name.clone(), def: def.clone(), bases: bases.clone(), attrs: join_entries(x, y) }
        }
        (Layer(x), Layer(y)) if x.kind == y.kind && x.span == y.span => {
            let mut l = x.clone();
            l.args = join_entries(&x.args, &y.args);
            l.attrs = join_entries(&x.attrs, &y.attrs);
            Layer(l)
        }
        (List(x), List(y)) if x.len() == y.len() => List(x.iter().zip(y).map(|(v, w)| join_value(v, w)).collect()),
        (Container { kind: k, items: x, attrs: p }, Container { kind: l, items: y, attrs: q })
            if k == l && x.len() == y.len() && x.iter().zip(y).all(|(i, j)| i.0 == j.0) =>
        {
            Container { kind: *k, items: x.iter().zip(y).map(|(i, j)| (i.0.clone(), join_value(&i.1, &j.1))).collect(), attrs: join_entries(p, q) }
        }
        _ => Namespace { kind: Rc::from("<joined paths disagree>"), attrs: Default::default() },
    }
}

impl State {
    /// Whether `o` can be joined into this state: the same `try` depth and grad mode (what a
    /// path's checks read besides its heap, facts and shape bindings).
    pub fn joinable(&self, o: &State) -> bool {
        self.in_try == o.in_try && self.grad_mode == o.grad_mode
    }

    /// Join `o` into this state (`joinable`): the objects both have, joined; the objects only
    /// the longer heap has, kept (only values the two disagree on reach them, and those are
    /// Unknown now); the path condition, their common prefix.
    pub fn join(&mut self, o: &State) {
        if !Heap::ptr_eq(&self.heap, &o.heap) {
            let n = self.heap.len().min(o.heap.len());
            let mut changed: Vec<(usize, Obj)> = Vec::new();
            self.heap.all_changed(&o.heap, |i| {
                if self.heap[i] != o.heap[i] {
                    changed.push((i, join_obj(&self.heap[i], &o.heap[i])));
                }
                true
            });
            for (i, j) in changed {
                self.heap.set(i, Rc::new(j));
            }
            if o.heap.len() > self.heap.len() {
                self.heap.extend(o.heap.iter_from(n).cloned());
            }
        }
        // the shape variables both paths bound alike stay bound; the others are unknown again
        // (a tensor whose leading dims only one path had seen has them unknown)
        if !Rc::ptr_eq(&self.shapes, &o.shapes) && self.shapes != o.shapes {
            let common: BTreeMap<u32, _> = self.shapes.iter().filter(|(k, v)| o.shapes.get(k) == Some(v)).map(|(k, v)| (*k, v.clone())).collect();
            self.shapes = Rc::new(common);
        }
        self.params_frozen |= o.params_frozen;
        // (graph nodes: the most made on either, as `join_layouts` counts them)
        self.join_layouts_made(o);
        self.absorb(o);
    }
}

/// The mark of a taint from a lossy merge, which the path's branches no longer show
/// (`State::absorb`): an opaque "choice" of one side, at no place.
pub fn hidden_taint() -> Branch {
    Branch::Opaque(crate::ir::Span::default(), 0, 1)
}

/// Join paths into as few states as their `try` depths and grad modes allow.
pub fn join_all(paths: Vec<State>) -> Vec<State> {
    join_with_values(paths.into_iter().map(|s| (s, Value::None)).collect()).into_iter().map(|(s, _)| s).collect()
}

/// [`join_all`] for paths that are every execution reaching the point (the paths that go round
/// a loop none has left yet, `Interp::bound_loop_paths`). When they join into one state, that
/// state stands for all of them: it is tainted only where their common prefix is, as for two
/// complementary sides of one opaque choice (`State::absorb`). Not when a path was tainted
/// beyond what its own branches show (a lossy merge before), or took an assumption about an
/// unknown input past that prefix: the report rule weighs an assumption's alternatives itself.
pub fn join_covering(paths: Vec<State>) -> Vec<State> {
    use super::Branch;
    let explained = paths.iter().all(|p| p.tainted == p.branches.any(|b| b.is_choice() && *b != hidden_taint()));
    let prefix = paths.iter().map(|p| p.branches.common_prefix_len(&paths[0].branches)).min().unwrap_or(0);
    let assumed = paths.iter().any(|p| p.branches.suffix(prefix).iter().any(|b| matches!(b, Branch::Assume(..))));
    let prefix_tainted = paths.first().is_some_and(|p| p.branches.prefix(prefix).any(Branch::is_choice));
    let mut out = join_all(paths);
    if let [one] = out.as_mut_slice()
        && explained
        && !assumed
    {
        one.tainted = prefix_tainted;
        // (no mark of a hidden taint past the prefix: `absorb`)
        one.branches.truncate(prefix);
    }
    out
}

/// [`join_all`] for paths that each carry a value (what a function returns on it): the values
/// of the paths joined together are joined too.
pub fn join_with_values(paths: Vec<(State, Value)>) -> Vec<(State, Value)> {
    // (the objects all paths have: what a joined state built past them, only a value they
    // disagreed on may have reached)
    let l0 = paths.iter().map(|p| p.0.heap.len()).min().unwrap_or(0);
    let mut out: Vec<(State, Value)> = Vec::new();
    'next: for (p, v) in paths {
        for (q, w) in out.iter_mut() {
            if q.joinable(&p) {
                q.join(&p);
                *w = join_value(w, &v);
                continue 'next;
            }
        }
        out.push((p, v));
    }
    for (s, v) in out.iter_mut() {
        s.collect_dead_past(l0, v);
    }
    out
}

/// [`join_with_values`] for paths that each carry a list of values being built (the items of a
/// list display or a comprehension so far): the lists of the paths joined together are joined
/// item by item; lists of different lengths, or a path whose list is already unknown (`None`),
/// give `None`.
pub fn join_with_items(paths: Vec<(State, Option<Vec<Value>>)>) -> Vec<(State, Option<Vec<Value>>)> {
    let l0 = paths.iter().map(|p| p.0.heap.len()).min().unwrap_or(0);
    let mut out: Vec<(State, Option<Vec<Value>>)> = Vec::new();
    'next: for (p, v) in paths {
        for (q, w) in out.iter_mut() {
            if q.joinable(&p) {
                q.join(&p);
                *w = match (w.take(), &v) {
                    (Some(a), Some(b)) if a.len() == b.len() => Some(a.iter().zip(b).map(|(x, y)| join_value(x, y)).collect()),
                    _ => None,
                };
                continue 'next;
            }
        }
        out.push((p, v));
    }
    for (s, v) in out.iter_mut() {
        let keep = Value::Tuple(Rc::new(v.clone().unwrap_or_default()));
        s.collect_dead_past(l0, &keep);
    }
    out
}

thread_local! {
    static LINEAGES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A new analysis: lineages count from 1 again (the same numbers on every run).
pub fn reset_lineages() {
    LINEAGES.with(|l| l.set(0));
}

fn fresh_lineage() -> u32 {
    LINEAGES.with(|l| {
        l.set(l.get().wrapping_add(1));
        l.get()
    })
}

impl State {
    /// [`State::same_state`], and on the way, where an object (or the shape bindings, or the
    /// graph nodes made) of `o` is a copy of this state's, equal but not shared, `o` takes this
    /// state's: states are immutable values, so nothing changes but that the next comparison of
    /// the two (merging compares each path with the others after every statement) is a
    /// pointer's. Called blind to layouts, as `same_state` is; a copy shares only where it is
    /// equal with the layouts too.
    pub fn same_state_sharing(&self, o: &mut State) -> bool {
        let blind = super::is_layout_blind();
        let made_eq = Rc::ptr_eq(&self.made, &o.made) || self.made == o.made;
        let shapes_eq = Rc::ptr_eq(&self.shapes, &o.shapes) || self.shapes == o.shapes;
        let mut same: Vec<usize> = Vec::new();
        let r = (made_eq || blind)
            && shapes_eq
            && self.same_heap_noting(o, |i| {
                if !blind || super::with_layout_blind(false, || self.heap[i] == o.heap[i]) {
                    same.push(i);
                }
            });
        if made_eq {
            o.made = self.made.clone();
        }
        if shapes_eq {
            o.shapes = self.shapes.clone();
        }
        for i in same {
            o.heap.set(i, self.heap[i].clone());
        }
        r
    }

    /// [`State::same_state_sharing`], or the same heap whose shape bindings differ only on
    /// variables that no tensor on it names, directly or through the bindings of those it
    /// names: the refinements of a tensor of unknown rank that is gone (a training loop's
    /// batches, each refined on its own path). Such bindings cannot change what either path
    /// does; the ones that differ are dropped from this state, as a join drops them
    /// (`State::join`), so that a value held outside the heap that names one sees it unbound,
    /// not bound as on one path only. Dropping a binding only forgets: the merge is sound.
    pub fn same_state_live(&mut self, o: &mut State) -> bool {
        if self.same_state_sharing(o) {
            return true;
        }
        if Rc::ptr_eq(&self.shapes, &o.shapes) || self.shapes == o.shapes {
            return false;
        }
        let made_eq = Rc::ptr_eq(&self.made, &o.made) || self.made == o.made;
        if !(made_eq || super::is_layout_blind()) || !self.same_heap_noting(o, |_| {}) {
            return false;
        }
        let differ: Vec<u32> = self.shapes.keys().chain(o.shapes.keys()).copied().filter(|v| self.shapes.get(v) != o.shapes.get(v)).collect();
        let live = self.live_shape_vars();
        if differ.iter().any(|v| live.contains(v)) {
            return false;
        }
        let shapes = Rc::make_mut(&mut self.shapes);
        for v in differ {
            shapes.remove(&v);
        }
        true
    }

    /// The shape variables the tensors on the heap name (their prefixes of unknown rank), and
    /// those the bindings of these name in turn.
    fn live_shape_vars(&self) -> std::collections::BTreeSet<u32> {
        let found = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let note = |t: &super::Tensor| {
            if let Some(v) = t.shape.prefix {
                found.borrow_mut().insert(v);
            }
            false
        };
        for obj in self.heap.iter() {
            super::obj_has(obj, &note);
        }
        let mut live = found.into_inner();
        let mut todo: Vec<u32> = live.iter().copied().collect();
        while let Some(v) = todo.pop() {
            if let Some(p) = self.shapes.get(&v).and_then(|s| s.prefix)
                && live.insert(p)
            {
                todo.push(p);
            }
        }
        live
    }

    /// Merge a path with the same program state into this one: the path condition becomes
    /// the common prefix of both (the union of both paths' executions, over-approximated).
    pub fn absorb(&mut self, o: &State) {
        self.walked |= o.walked;
        self.taken.meet(&o.taken);
        let n = self.branches.common_prefix_len(&o.branches);
        let a_rest = &self.branches.suffix(n)[..];
        let b_rest = &o.branches.suffix(n)[..];
        let complementary = a_rest.len() == 1
            && b_rest.len() == 1
            && match (&a_rest[0], &b_rest[0]) {
                (Branch::Opaque(s1, x, 2), Branch::Opaque(s2, y, 2)) => s1 == s2 && x != y,
                (Branch::Sym(c1), Branch::Sym(c2)) => c2.is_negation_of(c1),
                _ => false,
            };
        let opaque_rest = a_rest.iter().chain(b_rest).any(Branch::is_choice);
        let prefix_tainted = self.branches.prefix(n).any(Branch::is_choice);
        self.tainted = if complementary {
            prefix_tainted || (self.tainted && o.tainted && !opaque_rest)
        } else {
            self.tainted || o.tainted || opaque_rest
        };
        self.branches.truncate(n);
        // a taint the prefix no longer shows (the choices that caused it were cut off) is kept
        // in it as a mark, so that a later merge of the two sides of one choice sees it in the
        // prefix and does not take the path before the choice for an untainted one
        if self.tainted && !self.branches.any(Branch::is_choice) {
            self.branches.push(hidden_taint());
        }
        // (a merge of the two sides of one choice is the path before it; any other merge is a
        // path of its own: `lineage`)
        let same_path = (complementary || (a_rest.is_empty() && b_rest.is_empty())) && self.lineage == o.lineage;
        if !same_path {
            self.lineage = fresh_lineage();
        }
        // the preconditions both sides assumed: their common prefix
        {
            let mut mine = self.assumed.borrow_mut();
            let theirs = o.assumed.borrow();
            if !Rc::ptr_eq(&mine, &theirs) {
                let k = mine.iter().zip(theirs.iter()).take_while(|(a, b)| a == b).count();
                if k < mine.len() {
                    Rc::make_mut(&mut mine).truncate(k);
                }
            }
        }
        // keep only the facts both sides share
        if self.facts != o.facts {
            self.facts = self.facts.common(&o.facts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{FileId, Span};
    use crate::value::Branch;

    fn path(choices: &[(u32, u32)], assume: bool) -> State {
        let mut st = State::new();
        for &(at, side) in choices {
            st.branches.push(Branch::Opaque(Span { file: FileId(0), start: at, end: at + 1 }, side, 2));
            st.tainted = true;
        }
        if assume {
            st.branches.push(Branch::Assume(Span { file: FileId(0), start: 99, end: 100 }, 1, 2));
            st.tainted = true;
        }
        st
    }

    #[test]
    fn comparing_two_paths_shares_their_equal_copies() {
        let list = |n: i128| Obj::List(vec![Value::int(n)]);
        let mut a = State::new();
        let mut b = State::new();
        for n in [1, 2, 3] {
            a.heap.push(Rc::new(list(n)));
            b.heap.push(Rc::new(list(if n == 2 { 5 } else { n })));
        }
        assert!(!layout_blind(|| a.same_state_sharing(&mut b)));
        // the equal copy before the first difference is now the very same object
        assert!(Rc::ptr_eq(&a.heap[0], &b.heap[0]));
        assert!(!Rc::ptr_eq(&a.heap[1], &b.heap[1]) && b.heap[1] == Rc::new(list(5)));
        b.heap.set(1, Rc::new(list(2)));
        assert!(layout_blind(|| a.same_state_sharing(&mut b)));
        assert!((0..3).all(|i| Rc::ptr_eq(&a.heap[i], &b.heap[i])));
    }

    #[test]
    fn every_execution_joined_is_untainted_but_for_its_prefix() {
        // two opaque choices in a loop iteration, all four combinations
        let all = vec![path(&[(1, 0), (2, 0)], false), path(&[(1, 0), (2, 1)], false), path(&[(1, 1), (2, 0)], false), path(&[(1, 1), (2, 1)], false)];
        let joined = join_covering(all.clone());
        assert_eq!(joined.len(), 1);
        assert!(!joined[0].tainted && joined[0].branches.is_empty());
        // pairwise, as any join: tainted
        assert!(join_all(all)[0].tainted);
        // a choice before the loop stays in the prefix, and taints
        let inside = vec![path(&[(0, 1), (1, 0)], false), path(&[(0, 1), (1, 1)], false), path(&[(0, 1), (2, 0)], false)];
        assert!(join_covering(inside)[0].tainted);
        // an assumption about an unknown input is weighed by the report rule, not here
        let assumed = vec![path(&[(1, 0)], true), path(&[(1, 1)], false)];
        assert!(join_covering(assumed)[0].tainted);
        // a path tainted by an earlier lossy merge, its choices gone from its branches
        let mut hidden = path(&[], false);
        hidden.tainted = true;
        assert!(join_covering(vec![hidden, path(&[(1, 1)], false)])[0].tainted);
    }
}
