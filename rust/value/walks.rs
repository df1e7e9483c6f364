//! Walks over a path's whole heap: what an in-place write or an unseen call may have changed
//! through an alias is forgotten in every object, and what autograd saved is marked broken or
//! freed wherever it is held.
//!
//! A call summary (`engine::memo`) depends on what the call read. A walk reads every object,
//! so the two forgetting walks are not logged as reads: they are noted in the path's
//! `State::walked`, and a replay makes them again on the caller's objects
//! (`State::walk_again`) before it writes what the call wrote. The others still log a walk
//! (`reads::note_walk`), and a call that made one is not summarised.

use std::rc::Rc;

use super::*;

/// `State::walked`: the known values of tensors were forgotten (`State::forget_values`).
pub const FORGOT_VALUES: u8 = 1;
/// `State::walked`: which tensors autograd does not track was forgotten
/// (`State::forget_grads`).
pub const FORGOT_GRADS: u8 = 2;

thread_local! {
    /// The subtrees of heaps known to hold no tensor with known values, and none autograd is
    /// known not to track (`heap::Clean`), reset for each analysis.
    static CLEAN: std::cell::RefCell<[super::heap::Clean; 2]> = std::cell::RefCell::new(Default::default());
}

/// A new analysis: no subtree known clean.
pub fn reset_clean() {
    CLEAN.with(|c| *c.borrow_mut() = Default::default());
}

/// Whether `new` is `old` after the two forgetting walks (`State::forget_values`,
/// `State::forget_grads`): what a generalised loop iteration did to a variable it never
/// assigned by walking the heap (an in-place op in its body), which another iteration would
/// do again to the same effect.
pub fn only_walked(old: &Value, new: &Value) -> bool {
    let v = forget_in(old, &no_values).unwrap_or_else(|| old.clone());
    let v = forget_in(&v, &no_untracked).unwrap_or(v);
    v == *new
}

impl State {
    /// Forget the known values of every tensor on the heap (a write or a call the engine does
    /// not see into may have changed them through an alias). Only the objects holding such
    /// tensors are written; none is logged as read: the walk is noted in `walked` instead, and
    /// a replay of a call that made it makes it again on the caller's objects.
    pub fn forget_values(&mut self) {
        if !BOUNDED.with(|b| b.get()) {
            return;
        }
        self.walked |= FORGOT_VALUES;
        self.walk(0, &|t| t.values.is_some(), &no_values);
    }

    /// Forget which tensors are known to be outside autograd's graph, on this whole path: a
    /// tensor's `requires_grad` changed in place (`x.requires_grad_()`, `x.requires_grad =
    /// True`), and any alias of it may be the one. Noted in `walked`, as `forget_values`.
    pub fn forget_grads(&mut self) {
        self.walked |= FORGOT_GRADS;
        self.walk(1, &may_track, &no_untracked);
    }

    /// The walks `walked` (a replayed call's, `engine::memo`) made again on this path's
    /// objects, and noted.
    pub fn walk_again(&mut self, walked: u8) {
        if walked & FORGOT_VALUES != 0 {
            self.forget_values();
        }
        if walked & FORGOT_GRADS != 0 {
            self.forget_grads();
        }
    }

    /// `f` on the tensors of every object that holds one where `has` (unlogged reads), the
    /// objects found through `CLEAN[which]`: only the parts of the heap written since the last
    /// walk of any path are looked at (without it, 10% of the time on real repositories).
    fn walk(&mut self, which: usize, has: &dyn Fn(&Tensor) -> bool, f: Forget) {
        let ids = CLEAN.with(|c| self.heap.find(&mut c.borrow_mut()[which], &|o| obj_has(o, has)));
        for id in ids {
            forget_obj(Rc::make_mut(self.heap.slot_mut(id)), f);
        }
    }

    /// An in-place op at `at` changed the storage autograd saved at `saved`: every tensor of
    /// this path whose graph needs it is broken (`Saved::broken`).
    pub fn break_saved(&mut self, saved: Span, at: Span) {
        reads::note_walk();
        let f = |t: &Rc<Tensor>| {
            let s = t.saved.as_ref()?;
            (s.broken.is_none() && s.needs.contains(&saved)).then(|| Value::Tensor(Rc::new(Tensor { saved: Some(Rc::new(Saved { broken: Some((at, saved)), ..(**s).clone() })), ..(**t).clone() })))
        };
        for id in 0..self.heap.len() {
            if forget_obj(&mut self.get(id).clone(), &f) {
                forget_obj(self.get_mut(id), &f);
            }
        }
    }

    /// `backward()` at `at` freed the saved tensors of the graph nodes `keys` (each made once on
    /// this path, `State::made`): every tensor of this path whose graph goes through one is
    /// marked freed (`Saved::freed`), and the spans name no node any more.
    pub fn free_graph(&mut self, keys: &[Node], at: Span) {
        let f = |t: &Rc<Tensor>| {
            let s = t.saved.as_ref()?;
            let hit = *s.nodes.iter().find(|n| keys.contains(n))?;
            let nodes = s.nodes.iter().filter(|n| !keys.contains(n)).copied().collect();
            Some(Value::Tensor(Rc::new(Tensor { saved: Some(Rc::new(Saved { freed: s.freed.or(Some((at, hit))), nodes, ..(**s).clone() })), ..(**t).clone() })))
        };
        // (a read-only scan first: only the objects that hold such a tensor are copied. The scan
        // is not logged as reads: a call that frees nodes removes them from `made`, so neither
        // it nor a call around it is summarised, `memo::made_since`)
        let through = |t: &Tensor| t.saved.as_ref().is_some_and(|s| s.nodes.iter().any(|n| keys.contains(n)));
        for id in 0..self.heap.len() {
            if obj_has(&self.heap[id], &through) {
                forget_obj(self.get_mut(id), &f);
            }
        }
        if keys.iter().any(|k| self.made.0.contains_key(k)) {
            let made = Rc::make_mut(&mut self.made);
            for k in keys {
                made.0.remove(k);
            }
        }
    }

    /// Replace a tensor, in every alias of it on this path, by `new` (`x.data = y`,
    /// `x.set_(y)`: the tensor object changed in place).
    pub fn replace_tensor(&mut self, old: &Rc<Tensor>, new: &Value) {
        reads::note_walk();
        let f = |t: &Rc<Tensor>| Rc::ptr_eq(t, old).then(|| new.clone());
        for id in 0..self.heap.len() {
            if forget_obj(&mut self.get(id).clone(), &f) {
                forget_obj(self.get_mut(id), &f);
            }
        }
    }
}
