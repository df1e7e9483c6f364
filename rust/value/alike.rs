//! Lists a loop appends to: per-batch outputs (`preds.append(model(x))`), per-step log
//! probabilities and rewards of a rollout (`log_probs.append(m.log_prob(a))`).
//!
//! A loop over an unknown number of items runs as one iteration that stands for all of them
//! (`engine::interp::loops`). A list that iteration only appended to holds, after the loop, an
//! unknown number of items, each what one iteration appended. When every value appended on
//! every path of that iteration has one abstraction that holds for all of them
//! ([`generalise`], [`join`]), the list becomes an *appended list*: a heap object
//! ([`appended_list`]) whose length is not known and whose every item is that value. Iterating
//! it, indexing it, `len`, `torch.cat` and `torch.stack` of it read that item
//! (`models::builtins::appended_item`); anything else makes it opaque, as before.
//!
//! The item must hold for every iteration, not only for the one the analysis ran:
//! - a tensor keeps its rank, dtype, device, whether autograd records it and the layers its
//!   graph reaches; only its dims that are constants in the expression that built them are
//!   kept (a symbolic dim may differ per iteration: the last, smaller batch, a sentence's
//!   length); what a path's condition made of a symbol is joined away with the other paths
//!   (`batch == 16` on one, `batch == 4` on the other);
//! - the graph nodes it saved and what `backward()` freed of them are dropped: each iteration
//!   made its own (SHP314 and SHP310 stay silent about the items);
//! - a tensor of unknown rank keeps its shape variable, and each read of an item gets a fresh
//!   one (`models::builtins::fresh_item`): a first use refines one item, not all;
//! - ints, floats, strings and bools are kept as they are (each read of an int not known is
//!   an int of its own), tuples item by item;
//! - a heap object (a dict per batch, a list) is not followed: the list stays opaque.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Dim, Grad, Obj, Saved, Shape, State, Tensor, Value};
use crate::ir::Name;

/// The kind of the namespace objects that are appended lists.
pub const APPENDED: &str = "<appended in a loop>";
/// Their attribute: the value each item is.
const ITEM: &str = "<item>";

/// An appended list whose every item is `item`.
pub fn appended_list(item: Value) -> Obj {
    let mut attrs = BTreeMap::new();
    attrs.insert(Name::from(ITEM), item);
    Obj::Namespace { kind: Rc::from(APPENDED), attrs }
}

/// An object a loop changed in ways not followed (an appended list given something that is no
/// item, a list the iteration replaced items of): its length and items are not known.
pub fn opaque() -> Obj {
    Obj::Namespace { kind: Rc::from("<changed in a loop>"), attrs: BTreeMap::new() }
}

/// The item of the appended list `obj`, if it is one.
pub fn item_of(obj: &Obj) -> Option<&Value> {
    match obj {
        Obj::Namespace { kind, attrs } if &**kind == APPENDED => attrs.get(ITEM),
        _ => None,
    }
}

/// The item of the appended list `v` refers to, if it is one.
pub fn appended_item(st: &State, v: &Value) -> Option<Value> {
    match v {
        Value::Ref(id) => item_of(st.get(*id)).cloned(),
        _ => None,
    }
}

/// What a value appended in one iteration is for every iteration; `None` when not followed.
pub fn generalise(v: &Value) -> Option<Value> {
    match v {
        Value::Tensor(t) => {
            let mut g = (**t).clone();
            // (a shape of unknown rank keeps its variable: each read of an item gets a fresh one,
            // `models::builtins::fresh_item`, as a first use refines it)
            g.shape = Shape { prefix: t.shape.prefix, dims: t.shape.dims.iter().map(|d| if d.as_const().is_some() { d.clone() } else { Dim::unknown() }).collect() };
            g.values = None;
            g.layout = None;
            g.saved = t.saved.as_ref().map(|s| Rc::new(Saved { layers: s.layers.clone(), layers_lost: s.layers_lost, ..Saved::default() }));
            Some(Value::Tensor(Rc::new(g)))
        }
        Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_) | Value::None | Value::Unknown => Some(v.clone()),
        Value::Tuple(items) => items.iter().map(generalise).collect::<Option<Vec<Value>>>().map(|items| Value::Tuple(Rc::new(items))),
        _ => None,
    }
}

/// One value for two generalised items: what they share.
pub fn join(a: &Value, b: &Value) -> Value {
    if a == b {
        return a.clone();
    }
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) if x.shape.dims.len() == y.shape.dims.len() && x.shape.prefix.is_some() == y.shape.prefix.is_some() => Value::Tensor(Rc::new(join_tensors(x, y))),
        (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => Value::Tuple(Rc::new(xs.iter().zip(ys.iter()).map(|(x, y)| join(x, y)).collect())),
        (Value::Str(_), Value::Str(_)) => Value::Str(None),
        (Value::Float(_), Value::Float(_)) => Value::Float(None),
        _ => Value::Unknown,
    }
}

fn join_tensors(x: &Tensor, y: &Tensor) -> Tensor {
    let mut t = x.clone();
    t.shape = Shape { prefix: x.shape.prefix, dims: x.shape.dims.iter().zip(&y.shape.dims).map(|(a, b)| if a == b { a.clone() } else { Dim::unknown() }).collect() };
    if x.dtype != y.dtype {
        t.dtype = None;
    }
    if x.device != y.device {
        t.device = None;
    }
    if x.act != y.act {
        t.act = None;
    }
    if x.grad != y.grad {
        t.grad = Grad::Unknown;
    }
    t.registered = x.registered && y.registered;
    if x.saved != y.saved {
        // the layers every item's graph reaches; whether it reaches others is not known
        t.saved = match (&x.saved, &y.saved) {
            (Some(a), Some(b)) => Some(Rc::new(Saved { layers: a.layers.iter().filter(|l| b.layers.contains(l)).copied().collect(), layers_lost: true, ..Saved::default() })),
            _ => None,
        };
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{FileId, Span};
    use crate::shape::Poly;
    use crate::value::DType;

    fn span(at: u32) -> Span {
        Span { file: FileId(0), start: at, end: at + 1 }
    }

    fn tensor(dims: Vec<Dim>) -> Tensor {
        Tensor::new(Shape::known(dims), Some(DType::Float))
    }

    #[test]
    fn an_item_keeps_constant_dims_and_the_layers_its_graph_reaches_but_not_its_nodes() {
        let mut t = tensor(vec![Dim::known(Poly::sym(0), None), Dim::konst(3)]);
        t.grad = Grad::Tracked;
        t.saved = Some(Rc::new(Saved { layers: vec![span(1)], nodes: vec![(span(2), span(1))], freed: Some((span(3), (span(2), span(1)))), ..Saved::default() }));
        let Some(Value::Tensor(g)) = generalise(&Value::Tensor(Rc::new(t))) else { panic!() };
        assert_eq!(g.shape, Shape::known(vec![Dim::unknown(), Dim::konst(3)]));
        assert_eq!(g.grad, Grad::Tracked);
        let saved = g.saved.as_ref().unwrap();
        assert_eq!(saved.layers, vec![span(1)]);
        assert!(saved.nodes.is_empty() && saved.freed.is_none());
    }

    #[test]
    fn items_join_to_what_they_share_and_a_heap_object_is_not_followed() {
        let a = Value::Tuple(Rc::new(vec![Value::Float(Some(1.0)), Value::Tensor(Rc::new(tensor(vec![Dim::konst(16), Dim::konst(3)])))]));
        let b = Value::Tuple(Rc::new(vec![Value::Float(Some(0.0)), Value::Tensor(Rc::new(tensor(vec![Dim::konst(4), Dim::konst(3)])))]));
        let Value::Tuple(j) = join(&a, &b) else { panic!() };
        assert_eq!(j[0], Value::Float(None));
        assert!(matches!(&j[1], Value::Tensor(t) if t.shape == Shape::known(vec![Dim::unknown(), Dim::konst(3)])));
        // a rank that differs: nothing shared
        let c = Value::Tensor(Rc::new(tensor(vec![Dim::konst(3)])));
        assert_eq!(join(&a, &c), Value::Unknown);
        assert_eq!(generalise(&Value::Ref(0)), None);
    }
}
