//! Attributes: reading and writing them on instances, classes, namespaces, layers and
//! containers, and the class hierarchy they are looked up in (`class_lookup`, `lib_base`,
//! `has_unknown_base`, `layer_base`).
//!
//! An instance of a user subclass of a modelled library layer (`class MyLinear(nn.Linear)`)
//! holds the layer its `super().__init__(...)` (or, without `__init__`, its construction)
//! built, under the hidden attribute [`LAYER`]: the layer's attributes (`self.weight`,
//! `self.in_features`) are read from it and stores of them go to it; the user's own
//! attributes and methods come first. Without that layer (not built, or built from arguments
//! the model does not understand) they are Unknown.

use std::rc::Rc;

use super::{Interp, Vals};
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::value::*;

pub use crate::models::LAYER;

/// Does a name a user class defines replace one torch's layer code reads or calls? A private
/// name (not the harmless dunders), or one of the layer's own.
fn overrides_layer(name: &str) -> bool {
    let harmless = matches!(name, "__init__" | "__doc__" | "__module__" | "__qualname__" | "__annotations__" | "__repr__" | "__str__" | "__constants__" | "__slots__" | "forward" | "extra_repr");
    !harmless && (name.starts_with('_') || torch::layers::is_layer_name(name))
}

impl<'a> Interp<'a> {
    pub fn get_attr(&mut self, st: State, o: Value, name: &Name, span: Span) -> Vals {
        // (a method that may change an unknown object in place may change any test a path
        // remembers: `taken`)
        let mut st = st;
        if o.is_unknown() && crate::value::taken::mutator(name) {
            st.taken.forget();
        }
        // (every `.step` the run reads, of an optimizer or anything else: SHP302, `optim.rs`)
        if &**name == "step" {
            torch::optim::step_read(&st, &o, span);
        }
        if &**name == "backward"
            && let Some(c) = self.coverage.as_mut()
        {
            let (graph, optimizers) = torch::optim::backward_known(&st, &o);
            c.backward(span, graph, optimizers);
        }
        match &o {
            Value::Ref(id) => {
                let id = *id;
                // an instance's attribute is read by name (call summaries and loop skips
                // then see only that attribute, and the class link), other objects whole
                if let Obj::Instance { class, attrs } = st.get_named(id, name) {
                    let class = *class;
                    if let Some(v) = attrs.get(name) {
                        // (a buffer of a module that may have been moved anywhere: device not known)
                        let v = match v {
                            Value::Tensor(t) => torch::device::read_off_module(t).map(Value::Tensor).unwrap_or_else(|| v.clone()),
                            _ => v.clone(),
                        };
                        return vec![(st, v)];
                    }
                    if let Some((_, v)) = self.class_lookup(&st, class, name) {
                        return match v {
                            Value::Func(f) => match f.kind {
                                FuncKind::Static => vec![(st, Value::Func(f))],
                                FuncKind::Property => self.call_closure(&f, vec![o.clone()], Vec::new(), st, span),
                                FuncKind::ClassMethod => vec![(st, Value::Bound(Box::new(Value::Ref(class)), f))],
                                FuncKind::Plain => vec![(st, Value::Bound(Box::new(o.clone()), f))],
                            },
                            other => vec![(st, other)],
                        };
                    }
                    if self.has_unknown_base(&st, class) {
                        return vec![(st, Value::Unknown)];
                    }
                    if self.layer_base(&st, class).is_some() {
                        // the library layer it holds (read by its hidden name)
                        let layer = match st.get_var(id, LAYER) {
                            Obj::Instance { attrs, .. } => attrs.get(LAYER).cloned(),
                            _ => None,
                        };
                        return match layer {
                            Some(Value::Ref(lid)) if matches!(st.get(lid), Obj::Layer(_)) => {
                                if torch::layers::is_layer_name(name) {
                                    self.get_attr(st, Value::Ref(lid), name, span)
                                } else {
                                    // the methods `nn.Module` gives it (`self.parameters()`)
                                    torch::module_attr(self, st, o.clone(), name)
                                }
                            }
                            // a subclass of `nn.Sequential`: `nn.Module`'s and the container's
                            // methods, as for any module
                            Some(Value::Ref(lid)) if matches!(st.get(lid), Obj::Container { .. }) => torch::module_attr(self, st, o.clone(), name),
                            _ => vec![(st, Value::Unknown)],
                        };
                    }
                    return match self.lib_base(&st, class) {
                        Some(_) => torch::module_attr(self, st, o.clone(), name),
                        None => vec![(st, Value::Unknown)],
                    };
                }
                // what the object says, taken while it is borrowed (cloning the object to
                // match on it copied a namespace's or a module's attributes at every access)
                enum Kind {
                    Instance,
                    Class,
                    Checkpoint,
                    Method,
                    Value(Value),
                    LayerAttr,
                    ModuleAttr,
                    Scope,
                }
                let kind = match st.get(id) {
                    // handled above
                    Obj::Instance { .. } => Kind::Instance,
                    Obj::Class { .. } => Kind::Class,
                    Obj::Namespace { kind, .. } if &**kind == torch::checkpoint::CHECKPOINT => Kind::Checkpoint,
                    Obj::Namespace { kind, attrs } => {
                        if &**kind == "ArgParser"
                            || (&**kind == crate::models::numpy::ARRAY && crate::models::numpy::is_array_method(name))
                            || crate::models::numpy::is_generator_method(kind, name)
                            || (&**kind == torch::optim::OPTIMIZER && matches!(&**name, "zero_grad" | "step"))
                            || (&**kind == torch::optim::SCHEDULER && &**name == "step" && attrs.contains_key(torch::optim::PLATEAU))
                        {
                            Kind::Method
                        } else {
                            Kind::Value(attrs.get(name).cloned().unwrap_or(Value::Unknown))
                        }
                    }
                    Obj::Layer(l) => l.attrs.get(name).map_or(Kind::LayerAttr, |v| Kind::Value(v.clone())),
                    Obj::Container { attrs, .. } => attrs.get(name).map_or(Kind::ModuleAttr, |v| Kind::Value(v.clone())),
                    Obj::List(_) | Obj::Dict(_) => Kind::Method,
                    Obj::Scope { .. } => Kind::Scope,
                };
                match kind {
                    Kind::Instance => vec![(st, Value::Unknown)],
                    Kind::Class => match self.class_lookup(&st, id, name) {
                        Some((_, Value::Func(f))) if f.kind == FuncKind::ClassMethod => {
                            vec![(st, Value::Bound(Box::new(o.clone()), f))]
                        }
                        Some((_, v)) => vec![(st, v)],
                        None => vec![(st, Value::Unknown)],
                    },
                    Kind::Checkpoint => {
                        // a method that may add keys: later reads are not judged (SHP312)
                        let mut st = st;
                        if !torch::checkpoint::reads_only(name) {
                            torch::checkpoint::open(&mut st, &o);
                        }
                        // a name only a tensor has: the loaded object is one (`loaded.rs`)
                        if torch::loaded::tells(name) {
                            return match torch::loaded::tensor(self, &mut st, &o) {
                                Some(t) => self.get_attr(st, Value::Tensor(t), name, span),
                                None => vec![(st, Value::Unknown)],
                            };
                        }
                        // a move or cast a module and a tensor both have: the object itself
                        if torch::loaded::keeps(name) {
                            return vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))];
                        }
                        vec![(st, Value::Unknown)]
                    }
                    Kind::Method => vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))],
                    Kind::Value(v) => vec![(st, v)],
                    Kind::LayerAttr => torch::layer_attr(self, st, o.clone(), name),
                    Kind::ModuleAttr => torch::module_attr(self, st, o.clone(), name),
                    // a module (`interp::imports`): its global
                    Kind::Scope => {
                        let v = match st.get_named(id, name) {
                            Obj::Scope { vars, .. } => vars.get(name).cloned(),
                            _ => None,
                        };
                        vec![(st, v.unwrap_or(Value::Unknown))]
                    }
                }
            }
            Value::Super(class, recv) => {
                // look the name up in the bases of `class`
                let bases = match st.get(*class) {
                    Obj::Class { bases, .. } => bases.clone(),
                    _ => Vec::new(),
                };
                for b in &bases {
                    match b {
                        Value::Ref(bid) => {
                            if let Some((_, v)) = self.class_lookup(&st, *bid, name) {
                                return match v {
                                    Value::Func(f) if f.kind == FuncKind::Plain => vec![(st, Value::Bound(recv.clone(), f))],
                                    Value::Func(f) if f.kind == FuncKind::Property => self.call_closure(&f, vec![(**recv).clone()], Vec::new(), st, span),
                                    v => vec![(st, v)],
                                };
                            }
                        }
                        Value::Lib(p) => {
                            return vec![(st, Value::LibMethod(recv.clone(), Rc::from(format!("{p}.{name}"))))];
                        }
                        _ => return vec![(st, Value::Unknown)],
                    }
                }
                // not defined by a user base: the library base's (`super().__init__(...)` in
                // a subclass of a user class that derives from `nn.Linear` without one)
                if !self.has_unknown_base(&st, *class)
                    && let Some(p) = self.lib_base(&st, *class)
                {
                    return vec![(st, Value::LibMethod(recv.clone(), Rc::from(format!("{p}.{name}"))))];
                }
                vec![(st, Value::Unknown)]
            }
            Value::Lib(path) => vec![(st, models::lib_attr(path, name))],
            // `x.dtype.is_floating_point`
            Value::DType(d) if *d != DType::Other && &**name == "is_floating_point" => vec![(st, Value::Bool(d.is_floating()))],
            Value::Tensor(_) => torch::tensor_attr(self, st, o.clone(), name, span),
            // the named tuple of `x.max(dim)`, `x.sort()`, `x.topk(k)`, ... (`torch.return_types`)
            Value::Tuple(items) if items.len() == 2 && items.iter().all(|v| matches!(v, Value::Tensor(_))) && matches!(&**name, "values" | "indices") => {
                vec![(st, items[usize::from(&**name == "indices")].clone())]
            }
            Value::Str(_) | Value::Tuple(_) | Value::Int(_) | Value::Float(_) | Value::Range(..) => {
                vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))]
            }
            // a method of alike items of unknown number (`models::call_method`)
            Value::LibMethod(_, n) if &**n == "<repeat>" && matches!(&**name, "index" | "count") => {
                vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))]
            }
            // `loss.backward()` of a value not followed still reaches the optimizers (`optim.rs`)
            Value::Unknown if &**name == "backward" => vec![(st, Value::LibMethod(Box::new(Value::Unknown), name.clone()))],
            _ => vec![(st, Value::Unknown)],
        }
    }

    pub fn set_attr(&mut self, st: &mut State, o: &Value, name: &Name, v: Value) {
        // (a store into an unknown object may change any test a path remembers: `taken`)
        if o.is_unknown() {
            st.taken.forget();
        }
        if matches!(o, Value::Tensor(_)) {
            // `x.data = y` replaces x's values (in every alias)
            st.forget_values();
            // `x.requires_grad = True` changes whether autograd records it (in every alias)
            if &**name == "requires_grad" {
                st.forget_grads();
                // (`for p in model.parameters(): p.requires_grad = False`)
                st.params_frozen = true;
            }
            // `p.grad = None` clears gradients the optimizers hold (`optim.rs`): not followed
            if &**name == "grad" {
                torch::optim::forget(st, None);
            }
            // `x.data = y` makes x hold y's values (in every alias), of y's shape; x stays what
            // autograd made it (a leaf that requires grad stays one, with its graph facts)
            if &**name == "data"
                && let Value::Tensor(old) = o
            {
                let v = match &v {
                    Value::Tensor(new) => Value::Tensor(std::rc::Rc::new(Tensor { grad: old.grad, saved: old.saved.clone(), registered: old.registered, ..(**new).clone() })),
                    v => v.clone(),
                };
                torch::layers::tensor_replaced(st, old, &v);
            }
        }
        if let Value::Ref(id) = o {
            // a layer's attribute stored into an instance of a subclass of it goes to the layer
            // (`self.weight = nn.Parameter(w)`, `self.stride = (2, 2)`)
            if let Obj::Instance { attrs, .. } = st.get(*id)
                && let Some(Value::Ref(lid)) = attrs.get(LAYER)
                && matches!(st.get(*lid), Obj::Layer(_))
                && torch::layers::is_layer_name(name)
            {
                let lid = *lid;
                return self.set_attr(st, &Value::Ref(lid), name, v);
            }
            // (a modelled object's store may change its other attributes: `data::attr_stored`)
            let obj = if matches!(&*st.heap[*id], Obj::Namespace { .. }) { st.get_mut(*id) } else { st.get_mut_storing(*id, name) };
            match obj {
                Obj::Namespace { kind, attrs } => {
                    // a store into a modelled object (a dataset's `target_transform`, a
                    // transform's `size`) may change what the model computed from it
                    torch::data::attr_stored(kind, attrs, name);
                    attrs.insert(name.clone(), v);
                }
                Obj::Instance { attrs, .. } => {
                    // a callback the engine does not follow may overwrite it (`callbacks.rs`)
                    let v = if super::callbacks::is_volatile(attrs, name) { Value::Unknown } else { v };
                    // a tensor stored over a buffer updates the buffer (`nn.Module.__setattr__`)
                    let v = match (attrs.get(name), v) {
                        (Some(Value::Tensor(old)), Value::Tensor(new)) if old.registered && !new.registered => Value::Tensor(Rc::new((*new).clone().registered())),
                        (_, v) => v,
                    };
                    attrs.insert(name.clone(), v);
                }
                Obj::Class { attrs, .. } | Obj::Container { attrs, .. } => {
                    attrs.insert(name.clone(), v);
                }
                // a module's global (`config.batch_size = 32`)
                Obj::Scope { vars, .. } => {
                    vars.insert(name.clone(), v);
                }
                Obj::Layer(_) => {
                    let snapshot = st.clone();
                    if let Obj::Layer(l) = st.get_mut(*id) {
                        torch::layers::attr_stored(&snapshot, l, name, &v);
                        l.attrs.insert(name.clone(), v);
                    }
                }
                _ => {}
            }
        }
    }

    pub fn class_lookup(&self, st: &State, class: ObjId, name: &str) -> Option<(ObjId, Value)> {
        let mut stack = ClassStack::new(class);
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            if let Obj::Class { attrs, bases, .. } = st.get(c) {
                if let Some(v) = attrs.get(name) {
                    return Some((c, v.clone()));
                }
                for b in bases.iter().rev() {
                    if let Value::Ref(bid) = b {
                        stack.push(*bid);
                    }
                }
            }
        }
        None
    }

    /// Does the class derive from a library class (e.g. `torch.nn.Module`)?
    pub fn lib_base(&self, st: &State, class: ObjId) -> Option<Rc<str>> {
        let mut stack = ClassStack::new(class);
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            if let Obj::Class { bases, .. } = st.get(c) {
                for b in bases {
                    match b {
                        Value::Ref(bid) => stack.push(*bid),
                        Value::Lib(p) => return Some(p.clone()),
                        _ => {}
                    }
                }
            }
        }
        None
    }

    /// The modelled library layer a user class derives from and keeps the model of: the
    /// layer's short name (`Linear` for `class MyLinear(nn.Linear)`, also through user bases),
    /// when every library base is that layer or `nn.Module`, every other base is a user class,
    /// and no user class of the hierarchy defines a name torch's layer has or may call
    /// (`torch::layers::LAYER_NAMES`: `reset_parameters`, `weight`, `check_input`, ...) or a
    /// private one (`_conv_forward`): torch's code would run the user's instead. Else `None`
    /// (an instance is then Unknown, as for any library base that is not modelled).
    pub fn layer_base(&self, st: &State, class: ObjId) -> Option<&'static str> {
        let mut stack = ClassStack::new(class);
        let mut seen = 0;
        let mut kind = None;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                return None;
            }
            let Obj::Class { bases, attrs, .. } = st.get(c) else { return None };
            if attrs.keys().any(|n| overrides_layer(n)) {
                return None;
            }
            for b in bases {
                match b {
                    Value::Ref(bid) => stack.push(*bid),
                    Value::Lib(p) if &**p == "torch.nn.Module" => {}
                    Value::Lib(p) => {
                        let k = torch::layers::subclassable_layer(p)?;
                        if kind.is_some_and(|x| x != k) {
                            return None;
                        }
                        kind = Some(k);
                    }
                    _ => return None,
                }
            }
        }
        kind
    }

    pub fn has_unknown_base(&self, st: &State, class: ObjId) -> bool {
        let mut stack = ClassStack::new(class);
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                return true;
            }
            if let Obj::Class { bases, .. } = st.get(c) {
                for b in bases {
                    match b {
                        Value::Ref(bid) => stack.push(*bid),
                        Value::Lib(_) => {}
                        _ => return true,
                    }
                }
            }
        }
        false
    }
}

/// The work list of a walk over a class and its bases: a stack whose top is kept apart, so a
/// walk up a single line of bases (the rule) allocates nothing.
struct ClassStack {
    top: Option<ObjId>,
    rest: Vec<ObjId>,
}

impl ClassStack {
    fn new(class: ObjId) -> ClassStack {
        ClassStack { top: Some(class), rest: Vec::new() }
    }

    fn push(&mut self, c: ObjId) {
        if let Some(t) = self.top.replace(c) {
            self.rest.push(t);
        }
    }

    fn pop(&mut self) -> Option<ObjId> {
        self.top.take().or_else(|| self.rest.pop())
    }
}
