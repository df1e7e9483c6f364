//! Dead objects at a call's exit. A call's frame scope, its comprehension scopes and the
//! temporaries it built are unreachable once it returns, unless the result or an object the
//! call changed refers to them. Two paths through a call that differ only in such dead objects
//! (one path built a local `mask` the other did not) are the same program state, and must
//! merge: [`State::collect_dead`] drops the dead objects at the end of the heap and replaces
//! the others by one canonical dead object, so that [`State::same_state`] sees equal heaps.

use std::rc::Rc;

use super::{Closure, Heap, Obj, ObjId, State, Value};

/// What a dead object becomes: equal on every path, referring to nothing.
fn tombstone() -> Rc<Obj> {
    thread_local! {
        static DEAD: Rc<Obj> = Rc::new(Obj::Namespace { kind: Rc::from("<dead>"), attrs: Default::default() });
    }
    DEAD.with(|d| d.clone())
}

/// Every object id `v` refers to directly.
pub fn value_ids(v: &Value, f: &mut dyn FnMut(ObjId)) {
    match v {
        Value::Ref(id) => f(*id),
        Value::Tuple(xs) => xs.iter().for_each(|x| value_ids(x, f)),
        Value::Func(c) => closure_ids(c, f),
        Value::Bound(r, c) => {
            value_ids(r, f);
            closure_ids(c, f);
        }
        Value::LibMethod(r, _) => value_ids(r, f),
        Value::Super(c, r) => {
            f(*c);
            value_ids(r, f);
        }
        Value::Gen(c, a, k) => {
            closure_ids(c, f);
            a.iter().for_each(|x| value_ids(x, f));
            k.iter().for_each(|(_, x)| value_ids(x, f));
        }
        Value::None
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Tensor(_)
        | Value::Lib(_)
        | Value::Builtin(_)
        | Value::Cond(_)
        | Value::Range(..)
        | Value::DType(_)
        | Value::Unknown => {}
    }
}

fn closure_ids(c: &Closure, f: &mut dyn FnMut(ObjId)) {
    f(c.scope);
    if let Some(k) = c.class {
        f(k);
    }
    c.defaults.iter().for_each(|x| value_ids(x, f));
    c.kw_defaults.iter().flatten().for_each(|x| value_ids(x, f));
}

/// Every object id `o` refers to directly.
pub fn obj_ids(o: &Obj, f: &mut dyn FnMut(ObjId)) {
    match o {
        Obj::List(xs) => xs.iter().for_each(|x| value_ids(x, f)),
        Obj::Dict(xs) => xs.iter().for_each(|(k, v)| {
            value_ids(k, f);
            value_ids(v, f);
        }),
        Obj::Instance { class, attrs } => {
            f(*class);
            attrs.values().for_each(|x| value_ids(x, f));
        }
        Obj::Class { bases, attrs, .. } => {
            bases.iter().for_each(|x| value_ids(x, f));
            attrs.values().for_each(|x| value_ids(x, f));
        }
        Obj::Layer(l) => {
            l.args.values().for_each(|x| value_ids(x, f));
            l.attrs.values().for_each(|x| value_ids(x, f));
        }
        Obj::Container { items, attrs, .. } => {
            items.iter().for_each(|(_, x)| value_ids(x, f));
            attrs.values().for_each(|x| value_ids(x, f));
        }
        Obj::Scope { vars, parent } => {
            vars.values().for_each(|x| value_ids(x, f));
            if let Some(p) = parent {
                f(*p);
            }
        }
        Obj::Namespace { attrs, .. } => attrs.values().for_each(|x| value_ids(x, f)),
    }
}

/// Mark object `id` reachable, if it is one of the call's new objects (`l0..`) not yet marked.
fn mark(live: &mut [bool], stack: &mut Vec<ObjId>, l0: usize, id: ObjId) {
    if let Some(l) = id.checked_sub(l0).and_then(|i| live.get_mut(i))
        && !*l
    {
        *l = true;
        stack.push(id);
    }
}

impl State {
    /// At a call's exit: `before` is the heap when the call started. The objects the call
    /// allocated that neither `result` nor an object the call changed can reach are dead.
    pub fn collect_dead(&mut self, before: &Heap, result: &Value) {
        let l0 = before.len();
        let n = self.heap.len();
        if n <= l0 {
            return;
        }
        // `live[i]`: object `l0 + i` is reachable; `stack`: reachable, not yet scanned
        let mut live = vec![false; n - l0];
        let mut stack: Vec<ObjId> = Vec::new();
        let heap = &self.heap;
        // the roots: the result, and the objects the call changed
        value_ids(result, &mut |id| mark(&mut live, &mut stack, l0, id));
        // (only the objects not shared with `before`: the subtrees both heaps share are skipped)
        heap.all_changed(before, |i| {
            obj_ids(&heap[i], &mut |id| mark(&mut live, &mut stack, l0, id));
            true
        });
        self.sweep(l0, live, stack);
    }

    /// After paths were joined (`super::join`): the objects past the first `l0` that neither
    /// an object before them nor `result` (the joined value the paths carry) reaches are dead
    /// (a path's allocations that only values the paths disagreed on, now Unknown, referred
    /// to).
    pub fn collect_dead_past(&mut self, l0: usize, result: &Value) {
        let n = self.heap.len();
        if n <= l0 {
            return;
        }
        let mut live = vec![false; n - l0];
        let mut stack: Vec<ObjId> = Vec::new();
        value_ids(result, &mut |id| mark(&mut live, &mut stack, l0, id));
        for obj in self.heap.iter().take(l0) {
            obj_ids(obj, &mut |id| mark(&mut live, &mut stack, l0, id));
        }
        self.sweep(l0, live, stack);
    }

    /// Mark what the `stack`'s objects reach, then drop the dead objects at the end of the
    /// heap and replace the others by the tombstone.
    fn sweep(&mut self, l0: usize, mut live: Vec<bool>, mut stack: Vec<ObjId>) {
        let heap = &self.heap;
        while let Some(id) = stack.pop() {
            obj_ids(&heap[id], &mut |j| mark(&mut live, &mut stack, l0, j));
        }
        if live.iter().all(|l| *l) {
            return;
        }
        let end = l0 + live.iter().rposition(|l| *l).map_or(0, |i| i + 1);
        self.taken.dropped(l0, |id| id >= end || !live[id - l0]);
        self.heap.truncate(end);
        let dead = tombstone();
        for i in l0..end {
            if !live[i - l0] && !Rc::ptr_eq(&self.heap[i], &dead) {
                self.heap.set(i, dead.clone());
            }
        }
    }
}
