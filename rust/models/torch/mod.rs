//! Library models: what torch (and a few stdlib modules) do to shapes, and the preconditions
//! torch enforces. Grouped like torch itself: `tensor` (creation, shape ops, elementwise,
//! matrix products, indexing), `layers` (nn modules and their functional twins).
//! An API that is not modelled returns `Unknown`: never a report.

pub mod activation;
pub mod attention;
pub mod autograd;
pub mod checkpoint;
pub mod creation;
pub mod data;
pub mod device;
pub mod dtype;
pub mod fft;
pub mod indexing;
pub mod join;
pub mod layers;
pub mod layout;
pub mod loaded;
pub mod mode;
pub mod losses;
pub mod matmul;
pub mod optim;
pub mod packed;
pub mod pointwise;
pub mod shape_ops;
pub mod spectral;
pub mod recurrent;
pub mod reduce;
pub mod reshape;
pub mod resample;
pub mod tensor;
pub mod transforms;
pub mod zoo;

use crate::models::registry::Decl;

/// The API declarations of every torch family, by family (the file that models them), for
/// the registry.
pub fn families() -> Vec<(&'static str, &'static [Decl])> {
    vec![
        ("tensor", tensor::APIS),
        ("creation", creation::APIS),
        ("reshape", reshape::APIS),
        ("reduce", reduce::APIS),
        ("join", join::APIS),
        ("indexing", indexing::APIS),
        ("matmul", matmul::APIS),
        ("shape_ops", shape_ops::APIS),
        ("pointwise", pointwise::APIS),
        ("spectral", spectral::APIS),
        ("fft", fft::APIS),
        ("nn", layers::APIS),
        ("data", data::APIS),
        ("packed", packed::APIS),
        ("zoo", zoo::APIS),
    ]
}

use std::rc::Rc;

use crate::models::ctx::ModelCtx;
use crate::value::*;
use crate::ir::{BinOp, Name, Span};

/// Attributes of instances of user `nn.Module` subclasses that come from `nn.Module`.
pub fn module_attr(_cx: &mut dyn ModelCtx, st: State, o: Value, name: &Name) -> Vals {
    let v = match &**name {
        // (not among its attributes: built in training mode on this path and never switched,
        // as a layer is (`mode::training_layer`); a switch the analysis cannot see sets it
        // unknown, `models::forget_training`; in a `forward` analysed on its own, either mode)
        "training" if !device::anywhere() && matches!(&o, Value::Ref(id) if matches!(st.get(*id), Obj::Instance { .. })) => Value::Bool(true),
        "training" => Value::Unknown,
        "forward" => match &o {
            Value::Ref(id) => match st.get(*id) {
                Obj::Layer(_) | Obj::Container { .. } => Value::LibMethod(Box::new(o.clone()), Rc::from("__call__")),
                _ => Value::Unknown,
            },
            _ => Value::Unknown,
        },
        _ => Value::LibMethod(Box::new(o.clone()), name.clone()),
    };
    vec![(st, v)]
}

/// Attributes of library layers: constructor arguments (`fc.in_features`), parameters.
pub fn layer_attr(_cx: &mut dyn ModelCtx, st: State, o: Value, name: &Name) -> Vals {
    let Value::Ref(id) = &o else { return vec![(st, Value::Unknown)] };
    let obj = st.get_shared(*id);
    let Obj::Layer(l) = &*obj else { return vec![(st, Value::Unknown)] };
    // `fc.bias` is the parameter (None for `bias=False`), not the constructor's flag
    if matches!(&**name, "weight" | "bias") {
        match layers::parameter(&l, name) {
            Some(v) => return vec![(st, v)],
            None if &**name == "bias" => return vec![(st, Value::Unknown)],
            // a loss's `weight` is its argument
            None => {}
        }
    }
    if let Some(v) = layers::stored_attr(&l, name) {
        return vec![(st, v)];
    }
    if let Some(v) = l.args.get(&**name) {
        return vec![(st, v.clone())];
    }
    let v = match &**name {
        "training" => Value::Unknown,
        _ => Value::LibMethod(Box::new(o.clone()), name.clone()),
    };
    vec![(st, v)]
}

/// Calling a module value (a library layer, a container, or a user module without forward).
pub fn call_module_value(cx: &mut dyn ModelCtx, st: State, m: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Value::Ref(id) = &m else { return vec![(st, Value::Unknown)] };
    let obj = st.get_shared(*id);
    match &*obj {
        Obj::Layer(l) => layers::call_layer(cx, st, l, args, kwargs, span),
        Obj::Container { kind: ContainerKind::Sequential, items, .. } => {
            // the registry's gate, as for a layer: `seq(x)`
            let Some(api) = crate::models::registry::lookup_in("torch.nn", "Sequential").filter(|api| api.accepts_call(&args, &kwargs)) else { return vec![(st, Value::Unknown)] };
            let x = layers::bind(&api.call_params, &args, &kwargs).remove("input").unwrap_or(Value::Unknown);
            let mut live: Vals = vec![(st, x)];
            for (_, sub) in items {
                let mut next = Vec::new();
                for (st, x) in live {
                    next.extend(cx.call(sub.clone(), vec![x], Vec::new(), st, span));
                }
                // (bounded as a chain of statements: two outcomes per layer double them)
                live = cx.bound_vals(next, span);
            }
            live
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// Attribute of a tensor.
pub fn tensor_attr(cx: &mut dyn ModelCtx, st: State, o: Value, name: &Name, span: Span) -> Vals {
    // `x.device`: the device's string (`torch.device` values are strings here)
    if &**name == "device"
        && let Value::Tensor(t) = &o
        && let Some(d) = t.device
    {
        return vec![(st, Value::Str(Some(Rc::from(d.name()))))];
    }
    let out = tensor::tensor_attr(cx, st, o.clone(), name, span);
    // recorded by autograd as the tensor is (`x.data` is `x` detached)
    let ts: Vec<Rc<Tensor>> = if let Value::Tensor(t) = &o { vec![t.clone()] } else { Vec::new() };
    let source = if &**name == "data" { autograd::Source::Detached } else { autograd::Source::Inputs { params: false } };
    device::on_device_of(autograd::stamp(out, &ts, source, name, span), &o)
}

pub fn tensor_index(cx: &mut dyn ModelCtx, st: State, o: Value, i: Value, span: Span) -> Vals {
    // (a basic index, of ints, slices, None and `...`, is a view)
    let view = match &i {
        Value::Tuple(items) if !indexing::is_basic_item(&i) => items.iter().all(indexing::is_basic_item),
        v => indexing::is_basic_item(v),
    };
    let out = tensor::index(cx, st, o.clone(), i, span);
    let ts: Vec<Rc<Tensor>> = if let Value::Tensor(t) = &o { vec![t.clone()] } else { Vec::new() };
    device::on_device_of(autograd::stamp(out, &ts, autograd::Source::Inputs { params: false }, if view { "<basic index>" } else { "" }, span), &o)
}

/// An elementwise comparison of tensors (`x > 0.8`, `pred == y`): a bool tensor on the
/// operands' device, as an operator's result is (SHP201 when they cannot meet, as torch raises).
pub fn tensor_compare(cx: &mut dyn ModelCtx, st: State, symbol: &str, a: Value, b: Value, span: Span) -> Vals {
    let (x, y) = (a.clone(), b.clone());
    device::around_binop(cx, st, &format!("`{symbol}`"), false, &x, &y, span, |cx, st| tensor::compare(cx, st, a, b, span))
}

pub fn tensor_binop(cx: &mut dyn ModelCtx, st: State, op: BinOp, a: Value, b: Value, span: Span, inplace: bool) -> Vals {
    let (x, y) = (a.clone(), b.clone());
    device::around_binop(cx, st, &format!("`{}`", op.symbol()), op == BinOp::MatMul, &x, &y, span, |cx, st| tensor::binop(cx, st, op, a, b, span, inplace))
}

