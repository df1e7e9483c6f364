//! Attributes: reading and writing them on instances, classes, namespaces, layers and
//! containers, and the class hierarchy they are looked up in (`class_lookup`, `lib_base`,
//! `has_unknown_base`).

use std::rc::Rc;

use super::{Interp, Vals};
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::value::*;

impl<'a> Interp<'a> {
    pub fn get_attr(&mut self, st: State, o: Value, name: &Name, span: Span) -> Vals {
        match &o {
            Value::Ref(id) => {
                let id = *id;
                // an instance's attribute is read by name (call summaries and loop skips
                // then see only that attribute, and the class link), other objects whole
                if let Obj::Instance { class, attrs } = st.get_named(id, name) {
                    let class = *class;
                    if let Some(v) = attrs.get(name) {
                        let v = v.clone();
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
                    return match self.lib_base(&st, class) {
                        Some(_) => torch::module_attr(self, st, o.clone(), name),
                        None => vec![(st, Value::Unknown)],
                    };
                }
                match st.get(id).clone() {
                    // handled above
                    Obj::Instance { .. } => vec![(st, Value::Unknown)],
                    Obj::Class { .. } => match self.class_lookup(&st, id, name) {
                        Some((_, Value::Func(f))) if f.kind == FuncKind::ClassMethod => {
                            vec![(st, Value::Bound(Box::new(o.clone()), f))]
                        }
                        Some((_, v)) => vec![(st, v)],
                        None => vec![(st, Value::Unknown)],
                    },
                    Obj::Namespace { kind, attrs } => {
                        if &*kind == "ArgParser" {
                            return vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))];
                        }
                        let v = attrs.get(name).cloned().unwrap_or(Value::Unknown);
                        vec![(st, v)]
                    }
                    Obj::Layer(l) => {
                        if let Some(v) = l.attrs.get(name) {
                            return vec![(st, v.clone())];
                        }
                        torch::layer_attr(self, st, o.clone(), name)
                    }
                    Obj::Container { attrs, .. } => {
                        if let Some(v) = attrs.get(name) {
                            return vec![(st, v.clone())];
                        }
                        torch::module_attr(self, st, o.clone(), name)
                    }
                    Obj::List(_) | Obj::Dict(_) => vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))],
                    Obj::Scope { .. } => vec![(st, Value::Unknown)],
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
                vec![(st, Value::Unknown)]
            }
            Value::Lib(path) => vec![(st, models::lib_attr(path, name))],
            Value::Tensor(_) => torch::tensor_attr(self, st, o.clone(), name, span),
            Value::Str(_) | Value::Tuple(_) | Value::Int(_) | Value::Float(_) | Value::Range(..) => {
                vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))]
            }
            _ => vec![(st, Value::Unknown)],
        }
    }

    pub fn set_attr(&mut self, st: &mut State, o: &Value, name: &Name, v: Value) {
        if matches!(o, Value::Tensor(_)) {
            // `x.data = y` replaces x's values (in every alias)
            st.forget_values();
        }
        if let Value::Ref(id) = o {
            match st.get_mut(*id) {
                Obj::Namespace { kind, attrs } => {
                    // a store into a modelled object (a dataset's `target_transform`, a
                    // transform's `size`) may change what the model computed from it
                    torch::data::attr_stored(kind, attrs, name);
                    attrs.insert(name.clone(), v);
                }
                Obj::Instance { attrs, .. }
                | Obj::Class { attrs, .. }
                | Obj::Container { attrs, .. } => {
                    attrs.insert(name.clone(), v);
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
        let mut stack = vec![class];
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
        let mut stack = vec![class];
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

    pub fn has_unknown_base(&self, st: &State, class: ObjId) -> bool {
        let mut stack = vec![class];
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
