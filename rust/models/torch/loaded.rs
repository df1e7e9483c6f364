//! What `torch.load` gives back: a value of unknown type, typed where the use tells.
//!
//! `torch.load(f)` returns whatever was saved: a tensor, a dict (a state dict, a checkpoint), a
//! list or tuple of tensors, a number, a whole pickled module. The core gives a loaded object
//! (a `Namespace` of kind [`CHECKPOINT`], `checkpoint.rs`), which every use treats as a value of
//! unknown type, except a use that only a tensor allows: there it is a tensor of unknown shape
//! (a shape variable, refined by its first use, as the inputs of `forward` are), made at the
//! first such use and held under [`TENSOR`], so every later use on the path sees the same
//! tensor. The uses that tell:
//! - an attribute or method only a tensor has ([`tells`]): `x.view(...)`, `x.shape`,
//!   `x.size(0)`, `x.dim()`, `x.mean(0)`. Names that a module, a dict, a list, a tuple, a
//!   string or a number also has (`to`, `cuda`, `float`, `sort`, `split`, `real`, ...) do not,
//!   nor do the NumPy array methods whose shapes differ from torch's or whose rank
//!   requirement is looser ([`SHARED`]). A move or cast that a module and a tensor both have
//!   and that keeps the shape (`x.to(device)`, `x.float()`: [`keeps`]) gives back the loaded
//!   object itself;
//! - an operator whose other operand is a tensor (`x * w`, `x @ w`);
//! - an index only a tensor or an array takes (`x[:, 0]`, `x[None]`, `x[..., :2]`);
//! - the `input` or `target` argument of a modelled torch function, `F.*` call or layer
//!   (`model.fc(x)`, `F.relu(x)`, `torch.flatten(x, 1)`, `criterion(out, y)`).
//!
//! Calling it (a pickled module: `model(x)`), unpacking or iterating it (`x, y =
//! torch.load(p)`), subscripting it with a key (`ckpt["model"]`), its dict methods, or handing
//! it to user code or to another library call tell nothing: it stays unknown. A loaded value
//! used as a tensor on one path and as a dict on another is a tensor only on the first.

use std::rc::Rc;

use super::checkpoint::is_checkpoint;
use crate::ir::Name;
use crate::models::ctx::ModelCtx;
use crate::models::registry::{self, Param};
use crate::value::*;

pub use super::checkpoint::CHECKPOINT;

/// The hidden attribute holding the tensor a loaded object is, once a use told.
pub const TENSOR: &str = "<tensor>";

/// Tensor attributes and methods that another value `torch.load` may give back also has:
/// `nn.Module`'s `type` and `requires_grad_` (the moves and casts are [`keeps`]), a list's `sort`,
/// a string's `split`, a number's `real`, `torch.Size`'s `numel`; and the NumPy array methods
/// whose result has another shape than torch's (`repeat`, `max`/`min` with an axis, `sort` in
/// place, `data`, `dot`) or that take arrays of a rank torch refuses (`trace`, `cumsum()`
/// without an axis, `transpose()` without axes).
pub const SHARED: &[&str] = &[
    "type", "requires_grad_", "sort", "split", "real", "imag", "numel", "repeat", "max", "min", "data", "dot", "trace", "cumsum", "cumprod", "transpose",
];

/// Whether `x.name` tells that the loaded object `x` is a tensor.
pub fn tells(name: &str) -> bool {
    if SHARED.contains(&name) || keeps(name) {
        return false;
    }
    matches!(name, "shape" | "ndim" | "T" | "mT" | "mH") || registry::lookup_in("torch.Tensor", name).is_some()
}

/// The moves and casts a module and a tensor both have, which give back a value of the same
/// kind and shape (a module returns itself): `x.to(device)` of a loaded object is the loaded
/// object.
pub fn keeps(name: &str) -> bool {
    KEEPS.contains(&name)
}

/// See [`keeps`].
pub const KEEPS: &[&str] = &["to", "cuda", "cpu", "float", "half", "double", "bfloat16"];

/// The tensor the loaded object `v` is, now that a use told: made at the first such use (a
/// fresh shape variable, unknown dtype and device), the same at every later one. `None` when
/// `v` is no loaded object, or when what it holds was forgotten (a generalised loop
/// iteration that made it).
pub fn tensor(cx: &mut dyn ModelCtx, st: &mut State, v: &Value) -> Option<Rc<Tensor>> {
    let id = is_checkpoint(st, v)?;
    let Obj::Namespace { attrs, .. } = st.get(id) else { return None };
    match attrs.get(TENSOR) {
        Some(Value::Tensor(t)) => return Some(t.clone()),
        Some(_) => return None,
        None => {}
    }
    let t = Rc::new(Tensor::new(cx.any_shape(), None));
    if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
        attrs.insert(Name::from(TENSOR), Value::Tensor(t.clone()));
    }
    Some(t)
}

/// `v` itself, or the tensor it is when it is a loaded object (`None` when what that held was
/// forgotten).
pub fn as_tensor(cx: &mut dyn ModelCtx, st: &mut State, v: Value) -> Value {
    if is_checkpoint(st, &v).is_none() {
        return v;
    }
    match tensor(cx, st, &v) {
        Some(t) => Value::Tensor(t),
        None => Value::Unknown,
    }
}

/// The parameters whose argument must be a tensor when they are named so.
const TENSOR_PARAMS: &[&str] = &["input", "target"];

/// The arguments of a call of a torch function or layer with signature `params` that are
/// loaded objects bound to its `input` or `target`: the tensors they are.
pub fn tensor_args(cx: &mut dyn ModelCtx, st: &mut State, params: &[Param], args: &mut [Value], kwargs: &mut [(Name, Value)]) {
    let positional = params.iter().filter(|p| p.kind == registry::ParamKind::Positional);
    for (p, a) in positional.zip(args.iter_mut()) {
        if TENSOR_PARAMS.contains(&p.name) {
            *a = as_tensor(cx, st, std::mem::replace(a, Value::Unknown));
        }
    }
    for (k, a) in kwargs.iter_mut() {
        if TENSOR_PARAMS.contains(&&**k) && params.iter().any(|p| p.name == &**k) {
            *a = as_tensor(cx, st, std::mem::replace(a, Value::Unknown));
        }
    }
}

/// Whether `x[i]` tells that `x` is a tensor: only a tensor or an array takes `None`, `...`, or
/// a tuple of indices with a slice, `None` or `...` in it (a list refuses a tuple, and a dict's
/// keys are not slices).
pub fn tells_index(i: &Value) -> bool {
    let slice = |v: &Value| matches!(v, Value::Tuple(t) if t.len() == 4 && t[0].as_str() == Some("<slice>"));
    let special = |v: &Value| matches!(v, Value::None) || v.as_str() == Some("<ellipsis>");
    match i {
        Value::Tuple(_) if slice(i) => false,
        Value::Tuple(items) => items.iter().any(|v| slice(v) || special(v)),
        v => special(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_no_other_loaded_value_has_tell() {
        assert!(tells("view") && tells("shape") && tells("size") && tells("dim") && tells("mean") && tells("unsqueeze"));
        // a module's, a list's, a string's, a dict's
        assert!(!tells("to") && !tells("cuda") && !tells("eval") && !tells("sort") && !tells("split") && !tells("keys") && !tells("items"));
        assert!(keeps("to") && keeps("float") && !keeps("type"));
    }

    #[test]
    fn only_tensor_indices_tell() {
        let s = Value::Str(Some(Rc::from("<slice>")));
        let slice = Value::Tuple(Rc::new(vec![s, Value::None, Value::None, Value::None]));
        assert!(!tells_index(&slice));
        assert!(!tells_index(&Value::int(0)));
        assert!(!tells_index(&Value::Str(Some(Rc::from("model")))));
        assert!(tells_index(&Value::Tuple(Rc::new(vec![slice.clone(), Value::int(0)]))));
        assert!(tells_index(&Value::None));
        assert!(!tells_index(&Value::Tuple(Rc::new(vec![Value::int(0), Value::int(1)]))));
    }
}
