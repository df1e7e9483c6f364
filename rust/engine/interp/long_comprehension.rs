//! A long comprehension of plain data: the items past a step budget are one generalised item.
//!
//! A comprehension over a known sequence runs item by item (`Interp::comp_level`), up to
//! `loops::UNROLL` items per level. Nested, that is a table: the sinusoid position encoding of
//! a transformer (`[[pos / 10000 ** (2 * (j // 2) / d) for j in range(d)] for pos in
//! range(200)]`) is 200 × 512 float computations, a million interpreter steps that spent the
//! whole budget of the file before its `forward` ran. The values of those items matter to no
//! check; their number does (the table's shape).
//!
//! So once one comprehension has spent [`COMP_STEPS`] steps, the element is evaluated once
//! more for an item not known (`Interp::element_of` of the sequence: an int in the range), and
//! when that gives one outcome of plain data (numbers, strings, bools, and tuples and lists of
//! them), each remaining item is a copy of it in which every int not known is a new int of its
//! own. The length stays exact; the items' values are what holds for any item. Anything else
//! (a layer built per item, a fork) runs on item by item, as before.

use std::rc::Rc;

use super::{Ctx, Interp};
use crate::ir::{Expr, Name, Span};
use crate::shape::UNBOUNDED;
use crate::value::{Obj, State, Value};

/// The steps one comprehension runs item by item before the rest of its items are generalised:
/// a loop's (`loops::LOOP_STEPS`).
pub(super) const COMP_STEPS: u64 = super::loops::LOOP_STEPS;

impl<'a> Interp<'a> {
    /// The comprehension `[elt for n in it]` at the item `done` of `total`, on its one path
    /// `st` with the items `got` so far: `Some` (the path and all `total` items) when the
    /// remaining items are one generalised plain item; `None` to run on item by item.
    pub(super) fn generalise_comprehension(&mut self, n: &Name, span: Span, elt: &Expr, it: &Value, st: &State, got: &[Value], remaining: usize, ctx: &Ctx) -> Option<(State, Vec<Value>)> {
        let mut st = st.clone();
        let elem = self.element_of(&mut st, it);
        self.assign_name(n, span, elem, &mut st, ctx);
        let mut outs = self.eval(elt, st, ctx);
        if outs.len() != 1 || !generalisable(&outs[0].0, &outs[0].1, 2) {
            return None;
        }
        let (mut st, v) = outs.pop()?;
        let mut items = got.to_vec();
        items.reserve(remaining);
        for _ in 0..remaining {
            let copy = self.fresh_copy(&mut st, &v);
            items.push(copy);
        }
        Some((st, items))
    }

    /// A copy of a generalised item for one item: every int not known is an int of its own (the
    /// items differ), every list a new list (an item's list is its own).
    fn fresh_copy(&mut self, st: &mut State, v: &Value) -> Value {
        match v {
            Value::Int(p) if p.as_const().is_none() => Value::Int(self.syms.fresh_int("n", UNBOUNDED)),
            Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|x| self.fresh_copy(st, x)).collect())),
            Value::Ref(id) => match st.get(*id).clone() {
                Obj::List(items) => {
                    let items = items.iter().map(|x| self.fresh_copy(st, x)).collect();
                    Value::Ref(st.alloc(Obj::List(items)))
                }
                _ => Value::Unknown,
            },
            other => other.clone(),
        }
    }
}

/// Plain data: a number, a string, a bool, `None`, a value not modelled, or a tuple or a list (`depth` levels deep) of them.
fn generalisable(st: &State, v: &Value, depth: usize) -> bool {
    match v {
        Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_) | Value::None | Value::Unknown => true,
        Value::Tuple(items) => depth > 0 && items.iter().all(|x| generalisable(st, x, depth - 1)),
        Value::Ref(id) => depth > 0 && matches!(st.get(*id), Obj::List(items) if items.iter().all(|x| generalisable(st, x, depth - 1))),
        _ => false,
    }
}
