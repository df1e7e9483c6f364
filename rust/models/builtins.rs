//! Python builtins the engine models. Everything else is an unknown value.

use std::rc::Rc;

use crate::models::ctx::ModelCtx;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::shape::{Poly, Rel, Tri, UNBOUNDED};

const BUILTINS: &[&str] = &[
    "len", "range", "enumerate", "zip", "min", "max", "sum", "isinstance", "getattr", "setattr", "hasattr", "int",
    "float", "str", "bool", "list", "tuple", "dict", "print", "abs", "round", "super", "sorted", "reversed", "iter",
    "next", "any", "all", "type", "object", "set", "map", "filter", "callable", "id", "hash", "repr", "format",
    "open", "vars", "divmod", "pow", "issubclass", "frozenset", "ord", "chr",
];

pub fn lookup(name: &str) -> Option<Value> {
    match name {
        "True" => Some(Value::Bool(true)),
        "False" => Some(Value::Bool(false)),
        "None" => Some(Value::None),
        "__name__" => Some(Value::Str(Some(Rc::from("__main__")))),
        _ => BUILTINS.iter().find(|b| **b == name).map(|b| Value::Builtin(b)),
    }
}

fn list_like(cx: &mut dyn ModelCtx, st: &mut State, v: &Value) -> Option<Vec<Value>> {
    cx.iterate(st, v, Span::default())
}

/// `len(t)` of a tensor (or a NumPy array): its first dim; a dim or a rank not known (a
/// sample's length in a collate function, text encoded by `torch.tensor`) an int of its own;
/// Unknown for a scalar (which raises).
fn first_dim(cx: &mut dyn ModelCtx, st: &State, t: &Tensor) -> Value {
    let s = st.resolve(&t.shape);
    match (s.rank(), s.dims.first()) {
        (Some(r), Some(d)) if r >= 1 => d.v.clone().map(Value::Int).unwrap_or_else(|| Value::Int(cx.fresh_int_sym("n", 0))),
        // a rank not known: an int, or a raise (a 0-d tensor)
        (None, _) => Value::Int(cx.fresh_int_sym("n", 0)),
        _ => Value::Unknown,
    }
}

pub fn call_builtin(cx: &mut dyn ModelCtx, st: State, name: &'static str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let v = match name {
        "len" => match args.first() {
            Some(Value::Tensor(t)) => first_dim(cx, &st, t),
            Some(Value::Str(Some(s))) => Value::int(s.chars().count() as i128),
            Some(Value::Str(None)) => Value::Int(cx.fresh_int_sym("n", 0)),
            // a sequence of alike items of unknown length (an ImageFolder's classes)
            Some(Value::LibMethod(_, name)) if &**name == "<repeat>" => Value::Int(cx.fresh_int_sym("n", 0)),
            // `len(x.shape)` of a tensor of unknown rank
            Some(Value::LibMethod(t, name)) if &**name == "<shape>" => match &**t {
                Value::Tensor(t) => crate::models::torch::tensor::rank_value(cx, &st.resolve(&t.shape)),
                _ => Value::Unknown,
            },
            // a list a loop appended to (`value::alike`)
            Some(v) if crate::value::alike::appended_item(&st, v).is_some() => Value::Int(cx.fresh_int_sym("n", 0)),
            Some(v @ (Value::Ref(_) | Value::Tuple(_))) => match v {
                Value::Ref(id) => match st.get(*id) {
                    Obj::List(items) => Value::int(items.len() as i128),
                    Obj::Dict(items) if !items.iter().any(|(k, _)| k.is_unknown()) => Value::int(items.len() as i128),
                    Obj::Container { items, .. } => Value::int(items.len() as i128),
                    // a NumPy array: its first dim, as a tensor's
                    Obj::Namespace { .. } if let Some(a) = crate::models::numpy::array_of(&st, v) => first_dim(cx, &st, &a),
                    Obj::Namespace { .. } if crate::models::torch::data::is_data_ns(&st, v) => match crate::models::torch::data::len_of(&st, v) {
                        Some(n) => Value::Int(n),
                        None => Value::Int(cx.fresh_int_sym("n", 0)),
                    },
                    Obj::Instance { class, .. } => match cx.class_lookup(&st, *class, "__len__") {
                        // a user `__len__` with one outcome, an int
                        Some((_, Value::Func(f))) => {
                            let out = cx.call_closure(&f, vec![v.clone()], Vec::new(), st.clone(), span);
                            match <[_; 1]>::try_from(out) {
                                Ok([(s2, Value::Int(n))]) => {
                                    st = s2;
                                    Value::Int(n)
                                }
                                // no outcome: it raised (and said so); several: any int
                                Err(out) if out.is_empty() => return Vec::new(),
                                _ => Value::Int(cx.fresh_int_sym("n", 0)),
                            }
                        }
                        _ => Value::Int(cx.fresh_int_sym("n", 0)),
                    },
                    // `len` returns an int or raises: an int of its own, so that every use of
                    // this value is the same number (`nn.Embedding(n, d)` ... `view(-1, n)`)
                    _ => Value::Int(cx.fresh_int_sym("n", 0)),
                },
                Value::Tuple(t) => Value::int(t.len() as i128),
                _ => Value::Unknown,
            },
            Some(Value::Range(a, b, s)) => match s.as_const() {
                Some(1) => b.sub(a).map(Value::Int).unwrap_or(Value::Unknown),
                _ => Value::Unknown,
            },
            // `len` of a value not followed returns an int or raises
            Some(Value::Unknown) => Value::Int(cx.fresh_int_sym("n", 0)),
            _ => Value::Unknown,
        },
        "range" => {
            let ints: Vec<Option<Poly>> = args.iter().map(|a| a.as_int().cloned().or_else(|| a.as_const_int().map(Poly::constant))).collect();
            match ints.as_slice() {
                [Some(b)] => Value::Range(Poly::constant(0), b.clone(), Poly::constant(1)),
                [Some(a), Some(b)] => Value::Range(a.clone(), b.clone(), Poly::constant(1)),
                [Some(a), Some(b), Some(c)] => Value::Range(a.clone(), b.clone(), c.clone()),
                _ => Value::Unknown,
            }
        }
        "enumerate" => {
            let start = args.get(1).and_then(|v| v.as_const_int()).unwrap_or(0);
            match args.first().and_then(|a| list_like(cx, &mut st, a)) {
                Some(items) => Value::Tuple(Rc::new(
                    items.into_iter().enumerate().map(|(i, v)| Value::Tuple(Rc::new(vec![Value::int(i as i128 + start), v]))).collect(),
                )),
                None => match args.first() {
                    // pairs (unknown index, element), produced when iterated
                    Some(it) => Value::LibMethod(Box::new(it.clone()), Rc::from("<enumerate>")),
                    None => Value::Unknown,
                },
            }
        }
        "zip" => {
            let lists: Option<Vec<Vec<Value>>> = args.iter().map(|a| list_like(cx, &mut st, a)).collect();
            match lists {
                Some(lists) if !lists.is_empty() => {
                    let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                    Value::Tuple(Rc::new((0..n).map(|i| Value::Tuple(Rc::new(lists.iter().map(|l| l[i].clone()).collect()))).collect()))
                }
                _ => Value::Unknown,
            }
        }
        "min" | "max" => {
            let items = if args.len() == 1 { list_like(cx, &mut st, &args[0]) } else { Some(args.clone()) };
            match items {
                Some(items) if !items.is_empty() && kwargs.is_empty() => {
                    let mut best = items[0].clone();
                    let mut ok = true;
                    for it in &items[1..] {
                        match (best.as_int(), it.as_int()) {
                            (Some(a), Some(b)) => {
                                let rel = st.facts.compare(cx.syms(), b, Rel::Lt, a);
                                let take = if name == "min" { rel } else { st.facts.compare(cx.syms(), a, Rel::Lt, b) };
                                match take {
                                    Tri::True => best = it.clone(),
                                    Tri::False => {}
                                    Tri::Unknown => ok = false,
                                }
                            }
                            _ => match (&best, it) {
                                (Value::Float(Some(a)), Value::Float(Some(b))) => {
                                    if (name == "min" && b < a) || (name == "max" && b > a) {
                                        best = it.clone();
                                    }
                                }
                                _ => ok = false,
                            },
                        }
                    }
                    // of ints the facts cannot order: one of them, an int
                    let all_ints = items.iter().all(|i| i.as_int().is_some());
                    if ok {
                        best
                    } else if all_ints {
                        Value::Int(cx.fresh_int_sym("n", UNBOUNDED))
                    } else {
                        Value::Unknown
                    }
                }
                _ => Value::Unknown,
            }
        }
        "sum" => match args.first().and_then(|a| list_like(cx, &mut st, a)) {
            Some(items) => {
                let mut acc = Some(Poly::constant(args.get(1).and_then(|v| v.as_const_int()).unwrap_or(0)));
                for it in &items {
                    acc = match (acc, it.as_int()) {
                        (Some(a), Some(b)) => a.add(b),
                        _ => None,
                    };
                }
                acc.map(Value::Int).unwrap_or(Value::Unknown)
            }
            None => Value::Unknown,
        },
        "abs" => match args.first() {
            Some(Value::Int(p)) => match p.as_const() {
                Some(c) => Value::int(c.abs()),
                None => Value::Int(cx.fresh_int_sym("n", 0)),
            },
            Some(Value::Float(f)) => Value::Float(f.map(|f| f.abs())),
            Some(t @ Value::Tensor(_)) => t.clone(),
            _ => Value::Unknown,
        },
        // `int(x)` is an int or raises: of a value not known, an int of unknown value
        "int" => match args.first() {
            Some(Value::Int(p)) => Value::Int(p.clone()),
            Some(Value::Tensor(t)) if let Some(p) = t.index_value() => Value::Int(p),
            Some(Value::Bool(b)) => Value::int(*b as i128),
            Some(Value::Float(Some(f))) if f.is_finite() && f.abs() < 1e30 => Value::int(f.trunc() as i128),
            Some(Value::Str(Some(s))) => s.trim().parse::<i64>().map(|i| Value::int(i as i128)).unwrap_or(Value::Unknown),
            None => Value::int(0),
            Some(_) if args.len() == 1 && kwargs.is_empty() => Value::Int(cx.fresh_int_sym("n", UNBOUNDED)),
            _ => Value::Unknown,
        },
        "float" => match args.first() {
            Some(Value::Int(p)) => Value::Float(p.as_const().map(|c| c as f64)),
            Some(Value::Float(f)) => Value::Float(*f),
            Some(Value::Str(Some(s))) => Value::Float(s.trim().parse::<f64>().ok()),
            None => Value::Float(Some(0.0)),
            _ => Value::Float(None),
        },
        "round" => match (args.first(), args.get(1)) {
            (Some(Value::Float(Some(f))), None) if f.abs() < 1e30 => Value::int(f.round_ties_even() as i128),
            (Some(Value::Int(p)), None) => Value::Int(p.clone()),
            // `round(x)` of a float is an int
            (Some(Value::Float(None)), None) => Value::Int(cx.fresh_int_sym("n", UNBOUNDED)),
            _ => Value::Unknown,
        },
        // of a known str, int, bool or None (`repr` of a str or None; `format` with a spec
        // `text` renders exactly)
        "str" | "repr" | "format" => Value::Str(match (name, args.first(), args.get(1)) {
            _ if !kwargs.is_empty() || args.len() > 2 => None,
            ("str", Some(Value::Str(s)), None) => s.clone(),
            ("str", Some(v), None) => super::text::str_of(v).map(Rc::from),
            ("str", None, None) => Some(Rc::from("")),
            ("repr", Some(v), None) => super::text::repr_of(v).map(Rc::from),
            ("format", Some(v), None) => super::text::format_value(v, "").map(Rc::from),
            ("format", Some(v), Some(Value::Str(Some(spec)))) => super::text::format_value(v, spec).map(Rc::from),
            _ => None,
        }),
        "bool" => match args.first() {
            Some(v) => match cx.truthiness(&st, v) {
                Tri::True => Value::Bool(true),
                Tri::False => Value::Bool(false),
                Tri::Unknown => Value::Unknown,
            },
            None => Value::Bool(false),
        },
        "list" | "tuple" | "sorted" | "reversed" | "set" | "frozenset" => match args.first() {
            None => {
                if name == "tuple" {
                    Value::Tuple(Rc::new(Vec::new()))
                } else {
                    Value::Ref(st.alloc(Obj::List(Vec::new())))
                }
            }
            // of alike items of unknown number (text not known, a comprehension over it): as many
            // alike items (a set has at most as many)
            Some(a) if let Some(elem) = alike_items(&st, a) => repeat(elem),
            Some(a) => match list_like(cx, &mut st, a) {
                Some(mut items) => match name {
                    "tuple" => Value::Tuple(Rc::new(items)),
                    "list" => Value::Ref(st.alloc(Obj::List(items))),
                    "reversed" => {
                        items.reverse();
                        Value::Tuple(Rc::new(items))
                    }
                    // known strings or ints: a set keeps the first of equal ones (in the order
                    // of one run: Python's set order varies between runs), `sorted` sorts them
                    "set" | "frozenset" => match distinct(items) {
                        Some(items) => Value::Ref(st.alloc(Obj::List(items))),
                        None => Value::Unknown,
                    },
                    "sorted" if let Some(keys) = sort_keys(&items) => {
                        let mut keyed: Vec<(Value, (Option<i128>, Option<Rc<str>>))> = items.into_iter().zip(keys).collect();
                        keyed.sort_by(|a, b| a.1.cmp(&b.1));
                        Value::Ref(st.alloc(Obj::List(keyed.into_iter().map(|(v, _)| v).collect())))
                    }
                    _ => Value::Unknown,
                },
                None => Value::Unknown,
            },
        },
        "ord" if matches!(args.first(), Some(Value::Str(_))) => match args.first() {
            Some(Value::Str(Some(c))) if c.chars().count() == 1 => Value::int(c.chars().next().map_or(0, |c| c as i128)),
            _ => Value::Int(cx.fresh_int_sym("n", 0)),
        },
        "chr" => Value::Str(None),
        "dict" => {
            let mut items: Vec<(Value, Value)> = Vec::new();
            let mut ok = args.is_empty();
            if let Some(Value::Ref(id)) = args.first() {
                if let Obj::Dict(d) = st.get(*id) {
                    items = d.clone();
                    ok = true;
                }
            }
            if ok {
                for (k, v) in kwargs {
                    items.retain(|(x, _)| x.as_str() != Some(&k));
                    items.push((Value::Str(Some(k)), v));
                }
                Value::Ref(st.alloc(Obj::Dict(items)))
            } else {
                Value::Unknown
            }
        }
        "isinstance" => isinstance(cx, &st, args.first(), args.get(1)),
        "getattr" => match (args.first(), args.get(1).and_then(|v| v.as_str())) {
            (Some(o), Some(attr)) => {
                // (with a default, a missing attribute is unknown either way)
                let attr: Name = Rc::from(attr);
                return cx.get_attr(st, o.clone(), &attr, span);
            }
            _ => Value::Unknown,
        },
        "setattr" => {
            // (`taken`: an unknown object, or an unknown attribute, changed)
            if !matches!(args.first(), Some(Value::Ref(_))) || args.get(1).and_then(|v| v.as_str()).is_none() {
                st.taken.forget();
            }
            if let (Some(o), Some(attr), Some(v)) = (args.first(), args.get(1).and_then(|v| v.as_str()), args.get(2)) {
                let attr: Name = Rc::from(attr);
                cx.set_attr(&mut st, o, &attr, v.clone());
            } else if let Some(Value::Ref(id)) = args.first() {
                // unknown attribute name: forget the object's attributes
                if let Obj::Instance { attrs, .. } = st.get_mut(*id) {
                    for v in attrs.values_mut() {
                        *v = Value::Unknown;
                    }
                }
            }
            Value::None
        }
        "print" => Value::None,
        "iter" => args.first().cloned().unwrap_or(Value::Unknown),
        "next" => match args.first() {
            Some(it) => match cx.iterate(&mut st, it, span) {
                Some(items) => items.into_iter().next().unwrap_or(Value::Unknown),
                None => crate::models::element_of(cx, &mut st, it),
            },
            None => Value::Unknown,
        },
        "super" => Value::Unknown,
        "object" => Value::Unknown,
        "any" | "all" | "hasattr" | "callable" | "issubclass" => Value::Unknown,
        _ => Value::Unknown,
    };
    vec![(st, v)]
}

fn isinstance(cx: &dyn ModelCtx, st: &State, v: Option<&Value>, cls: Option<&Value>) -> Value {
    let (Some(v), Some(cls)) = (v, cls) else { return Value::Unknown };
    let classes: Vec<Value> = match cls {
        Value::Tuple(t) => t.as_ref().clone(),
        c => vec![c.clone()],
    };
    let mut any_unknown = false;
    for c in &classes {
        let r = match (v, c) {
            (Value::Int(_), Value::Builtin("int")) => Some(true),
            (Value::Bool(_), Value::Builtin("int" | "bool")) => Some(true),
            (Value::Float(_), Value::Builtin("float")) => Some(true),
            (Value::Str(_), Value::Builtin("str")) => Some(true),
            (Value::Tuple(_), Value::Builtin("tuple")) => Some(true),
            (Value::None, Value::Builtin(_)) => Some(false),
            (Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Tuple(_), Value::Builtin(_)) => Some(false),
            (Value::Ref(id), Value::Builtin(b)) => match st.get(*id) {
                Obj::List(_) => Some(*b == "list"),
                Obj::Dict(_) => Some(*b == "dict"),
                _ => None,
            },
            (Value::Tensor(_), Value::Lib(p)) => Some(&**p == "torch.Tensor"),
            (Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::None | Value::Bool(_) | Value::Tuple(_), Value::Lib(_)) => Some(false),
            (Value::Ref(id), Value::Ref(cid)) => match st.get(*id) {
                Obj::Instance { class, .. } => {
                    if cx.has_unknown_base(st, *class) {
                        None
                    } else {
                        Some(class_derives(st, *class, *cid))
                    }
                }
                Obj::Layer(_) | Obj::List(_) | Obj::Dict(_) => Some(false),
                _ => None,
            },
            (Value::Ref(id), Value::Lib(p)) => match st.get(*id) {
                Obj::Layer(l) => Some(p.ends_with(&format!(".{}", l.kind)) || &**p == "torch.nn.Module"),
                Obj::Instance { class, .. } => match cx.lib_base(st, *class) {
                    Some(b) if &*b == &**p => Some(true),
                    // every torch module is an `nn.Module`; a class derived from `nn.Module`
                    // itself (and from no base the core does not know) is no other library
                    // module (`isinstance(self, nn.Linear)` in an `_init_weights` applied to it)
                    Some(b) if &**p == "torch.nn.Module" && b.starts_with("torch.nn.") => Some(true),
                    Some(b) if &*b == "torch.nn.Module" && p.starts_with("torch.nn.") && !cx.has_unknown_base(st, *class) => Some(false),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        match r {
            Some(true) => return Value::Bool(true),
            Some(false) => {}
            None => any_unknown = true,
        }
    }
    if any_unknown { Value::Unknown } else { Value::Bool(false) }
}

fn class_derives(st: &State, class: ObjId, target: ObjId) -> bool {
    let mut stack = vec![class];
    let mut seen = 0;
    while let Some(c) = stack.pop() {
        if c == target {
            return true;
        }
        seen += 1;
        if seen > 64 {
            return false;
        }
        if let Obj::Class { bases, .. } = st.get(c) {
            for b in bases {
                if let Value::Ref(b) = b {
                    stack.push(*b);
                }
            }
        }
    }
    false
}

/// Methods of lists and dicts (`append`, `extend`, `get`, `items`, ...) on heap object `id`.
pub fn collection_method(cx: &mut dyn ModelCtx, st: State, id: ObjId, name: &str, args: Vec<Value>, span: Span) -> Vals {
    let mut st = st;
    match st.get(id).clone() {
                Obj::List(mut items) => {
                    let v = match name {
                        "append" => {
                            items.push(args.into_iter().next().unwrap_or(Value::Unknown));
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        "extend" => {
                            match args.first().and_then(|a| cx.iterate(&mut st, a, span)) {
                                Some(more) => items.extend(more),
                                None => {
                                    *st.get_mut(id) = Obj::List(vec![Value::Unknown]);
                                    return vec![(st, Value::None)];
                                }
                            }
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        "pop" => {
                            let v = items.pop().unwrap_or(Value::Unknown);
                            *st.get_mut(id) = Obj::List(items);
                            v
                        }
                        "clear" => {
                            *st.get_mut(id) = Obj::List(Vec::new());
                            Value::None
                        }
                        "reverse" => {
                            items.reverse();
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        // `layers.insert(0, stem)` at a known index (Python clamps it)
                        "insert" if args.len() == 2 && args[0].as_const_int().is_some() => {
                            let n = items.len() as i128;
                            let i = args[0].as_const_int().unwrap_or(0);
                            let at = if i < 0 { (n + i).max(0) } else { i.min(n) } as usize;
                            items.insert(at, args[1].clone());
                            *st.get_mut(id) = Obj::List(items);
                            Value::None
                        }
                        // `xs.index(x)` and `xs.count(x)` are ints at least 0 (or raise)
                        "index" | "count" if args.len() == 1 && items.iter().all(|v| matches!(v, Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_))) => match (name, seq_position(&items, &args[0])) {
                            ("index", Some(Some(i))) => Value::int(i as i128),
                            // (not there: a ValueError)
                            ("index", Some(None)) => return Vec::new(),
                            _ => Value::Int(cx.fresh_int_sym("n", 0)),
                        },
                        _ if matches!(name, "insert" | "remove" | "sort") => {
                            // not modelled precisely: the list's contents become unknown
                            *st.get_mut(id) = Obj::List(vec![Value::Unknown]);
                            return vec![(st, Value::Unknown)];
                        }
                        _ => Value::Unknown,
                    };
                    return vec![(st, v)];
                }
                Obj::Dict(items) => {
                    let v = match name {
                        "get" => {
                            let k = args.first().cloned().unwrap_or(Value::Unknown);
                            if k.as_str().is_some() && !items.iter().any(|(kk, _)| kk.is_unknown()) {
                                items.iter().find(|(kk, _)| *kk == k).map(|(_, v)| v.clone()).unwrap_or_else(|| args.get(1).cloned().unwrap_or(Value::None))
                            } else if let Some(d) = args.get(1)
                                && (!matches!(k, Value::Str(Some(_))) || items.iter().any(|(kk, _)| kk.is_unknown()))
                                && let Some(v) = some_int_of(cx, &items.iter().map(|(_, v)| v).chain([d]).collect::<Vec<_>>())
                            {
                                // a vocabulary's id of a word not known, or the default
                                v
                            } else {
                                Value::Unknown
                            }
                        }
                        "items" => {
                            if items.iter().any(|(k, _)| k.is_unknown()) {
                                Value::Unknown
                            } else {
                                Value::Tuple(Rc::new(items.iter().map(|(k, v)| Value::Tuple(Rc::new(vec![k.clone(), v.clone()]))).collect()))
                            }
                        }
                        // (a dict whose keys are not known has an unknown number of them)
                        "keys" | "values" if items.iter().any(|(k, _)| k.is_unknown()) => Value::Unknown,
                        "keys" => Value::Tuple(Rc::new(items.iter().map(|(k, _)| k.clone()).collect())),
                        "values" => Value::Tuple(Rc::new(items.iter().map(|(_, v)| v.clone()).collect())),
                        // `kwargs.update(more)` with a dict of known keys (`**kwargs` of a
                        // DataLoader stays modelled)
                        "update" if known_keys(&items) && args.len() == 1 && update_from(&st, &args[0]).is_some() => {
                            let mut items = items;
                            for (k, v) in update_from(&st, &args[0]).unwrap_or_default() {
                                match items.iter_mut().find(|(kk, _)| *kk == k) {
                                    Some((_, old)) => *old = v,
                                    None => items.push((k, v)),
                                }
                            }
                            *st.get_mut(id) = Obj::Dict(items);
                            Value::None
                        }
                        "pop" | "setdefault" if known_keys(&items) && matches!(args.first(), Some(Value::Str(Some(_)))) && args.len() <= 2 => {
                            let mut items = items;
                            let k = args[0].clone();
                            let at = items.iter().position(|(kk, _)| *kk == k);
                            let v = match (name, at, args.get(1)) {
                                ("pop", Some(i), _) => items.remove(i).1,
                                ("pop", None, Some(d)) => d.clone(),
                                // a `KeyError`: not followed
                                ("pop", None, None) => Value::Unknown,
                                (_, Some(i), _) => items[i].1.clone(),
                                (_, None, d) => {
                                    let d = d.cloned().unwrap_or(Value::None);
                                    items.push((k, d.clone()));
                                    d
                                }
                            };
                            *st.get_mut(id) = Obj::Dict(items);
                            v
                        }
                        "update" | "setdefault" | "pop" | "popitem" | "clear" => {
                            *st.get_mut(id) = Obj::Dict(vec![(Value::Unknown, Value::Unknown)]);
                            Value::Unknown
                        }
                        _ => Value::Unknown,
                    };
                    return vec![(st, v)];
                }
        _ => vec![(st, Value::Unknown)],
    }
}

/// The value of a sequence of alike items of unknown number, as `<repeat>` holds it.
pub fn repeat(elem: Value) -> Value {
    Value::LibMethod(Box::new(elem), Rc::from("<repeat>"))
}

/// The item of a sequence of alike items of unknown number: a `<repeat>`'s, a character of a
/// string not known.
pub fn alike_items(st: &State, v: &Value) -> Option<Value> {
    match v {
        Value::LibMethod(elem, name) if &**name == "<repeat>" => Some((**elem).clone()),
        Value::Str(None) => Some(Value::Str(None)),
        // a list a loop appended to (`value::alike`)
        Value::Ref(_) => crate::value::alike::appended_item(st, v),
        _ => None,
    }
}

/// One read of an item of a list a loop appended to (`value::alike`): an int not known is an
/// int of its own, and a tensor of unknown rank a shape of its own (each item is its own value).
pub fn fresh_item(cx: &mut dyn ModelCtx, item: &Value) -> Value {
    match item {
        Value::Int(p) if p.as_const().is_none() => Value::Int(cx.fresh_int_sym("n", UNBOUNDED)),
        Value::Tensor(t) if t.shape.prefix.is_some() => {
            let mut t = (**t).clone();
            t.shape.prefix = Some(cx.fresh_shape_var());
            Value::Tensor(Rc::new(t))
        }
        Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|i| fresh_item(cx, i)).collect())),
        v => v.clone(),
    }
}

/// Methods of a list a loop appended to (`value::alike`) on heap object `id`: what adds items
/// joins them with its item, what removes or reorders them keeps it; anything else makes it
/// opaque.
pub fn appended_method(cx: &mut dyn ModelCtx, st: State, id: ObjId, name: &str, args: Vec<Value>, span: Span) -> Vals {
    use crate::value::alike;
    let mut st = st;
    let Some(item) = alike::item_of(st.get(id)).cloned() else { return vec![(st, Value::Unknown)] };
    let added: Option<Vec<Value>> = match (name, args.as_slice()) {
        ("append", [v]) | ("insert", [_, v]) => Some(vec![v.clone()]),
        ("extend", [more]) => match alike_items(&st, more) {
            Some(i) => Some(vec![i]),
            None => cx.iterate(&mut st, more, span),
        },
        _ => None,
    };
    let result = match name {
        "append" | "insert" | "extend" => match added.and_then(|vs| vs.iter().map(alike::generalise).collect::<Option<Vec<Value>>>()) {
            Some(vs) => {
                let joined = vs.iter().fold(item, |i, v| alike::join(&i, v));
                *st.get_mut(id) = alike::appended_list(joined);
                Value::None
            }
            None => {
                *st.get_mut(id) = alike::opaque();
                Value::None
            }
        },
        "clear" => {
            *st.get_mut(id) = Obj::List(Vec::new());
            Value::None
        }
        "reverse" | "sort" | "remove" => Value::None,
        // (an empty list raises: a path that goes on got an item)
        "pop" => fresh_item(cx, &item),
        "copy" => Value::Ref(st.alloc(alike::appended_list(item))),
        "index" | "count" => Value::Int(cx.fresh_int_sym("n", 0)),
        _ => {
            *st.get_mut(id) = alike::opaque();
            Value::Unknown
        }
    };
    vec![(st, result)]
}

/// The order of known strings or ints (`None` for any other item).
/// The items of a set built from these (`set(xs)`, `{x for ...}`, `{a, b}`), when each is a
/// known string or int: the first of equal ones kept, in the order of one run (Python's set
/// order varies between runs; what is read of it here is its length and members). `None`
/// when an item is not known.
pub fn distinct(items: Vec<Value>) -> Option<Vec<Value>> {
    let keys = sort_keys(&items)?;
    let mut seen: Vec<(Value, (Option<i128>, Option<Rc<str>>))> = Vec::new();
    for (v, k) in items.into_iter().zip(keys) {
        if !seen.iter().any(|(_, s)| *s == k) {
            seen.push((v, k));
        }
    }
    Some(seen.into_iter().map(|(v, _)| v).collect())
}

fn sort_keys(items: &[Value]) -> Option<Vec<(Option<i128>, Option<Rc<str>>)>> {
    let strs = items.iter().all(|v| matches!(v, Value::Str(Some(_))));
    let ints = items.iter().all(|v| v.as_const_int().is_some() && matches!(v, Value::Int(_)));
    if !(strs || ints) || items.len() > 4096 {
        return None;
    }
    Some(items.iter().map(|v| (if ints { v.as_const_int() } else { None }, v.as_str().map(Rc::from))).collect())
}

/// An int of unknown value among these values when all are ints (a dict's values read by a
/// key not known): at least the least of them when all are known.
fn some_int_of(cx: &mut dyn ModelCtx, values: &[&Value]) -> Option<Value> {
    if values.is_empty() || !values.iter().all(|v| matches!(v, Value::Int(_))) {
        return None;
    }
    let lo = values.iter().map(|v| v.as_const_int()).collect::<Option<Vec<_>>>().and_then(|c| c.into_iter().min()).unwrap_or(UNBOUNDED);
    Some(Value::Int(cx.fresh_int_sym("n", lo)))
}

/// `d[k]` of a dict whose values are all ints, by a key not known: one of them, or a KeyError.
pub fn dict_int_by_unknown_key(cx: &mut dyn ModelCtx, items: &[(Value, Value)], key: &Value) -> Option<Value> {
    if !matches!(key, Value::Unknown | Value::Str(None)) && !matches!(key, Value::Int(p) if p.as_const().is_none()) {
        return None;
    }
    some_int_of(cx, &items.iter().map(|(_, v)| v).collect::<Vec<_>>())
}

/// Where a known value is in a list of known values (`Some(None)`: not there); `None` when
/// some item or the value is not known.
fn seq_position(items: &[Value], x: &Value) -> Option<Option<usize>> {
    let known = |v: &Value| matches!(v, Value::Str(Some(_))) || (matches!(v, Value::Int(_)) && v.as_const_int().is_some());
    if !known(x) || !items.iter().all(known) {
        return None;
    }
    Some(items.iter().position(|v| v == x))
}

/// Whether every key of a dict is a known string.
fn known_keys(items: &[(Value, Value)]) -> bool {
    items.iter().all(|(k, _)| matches!(k, Value::Str(Some(_))))
}

/// The items `d.update(other)` adds, when `other` is a dict whose keys are known strings.
fn update_from(st: &State, other: &Value) -> Option<Vec<(Value, Value)>> {
    match other {
        Value::Ref(o) => match st.get(*o) {
            Obj::Dict(more) if known_keys(more) => Some(more.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `text.split()` (runs of whitespace, as Python counts it: also `\x1c`-`\x1f`) or
/// `text.split(sep)` for a known, non-empty separator: the parts, when at most 512.
pub fn split(text: &str, args: &[Value]) -> Option<Vec<Value>> {
    let parts: Vec<&str> = match args {
        [] | [Value::None] => text.split(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)).filter(|p| !p.is_empty()).collect(),
        [Value::Str(Some(sep))] if !sep.is_empty() => text.split(&**sep).collect(),
        _ => return None,
    };
    (parts.len() <= 512).then(|| parts.into_iter().map(|p| Value::Str(Some(Rc::from(p)))).collect())
}

/// The known strings of a tuple or a list (`sep.join(items)`).
fn known_strs<'v>(st: &'v State, v: &'v Value) -> Option<Vec<&'v str>> {
    let items: &[Value] = match v {
        Value::Tuple(items) => items,
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => items,
            _ => return None,
        },
        _ => return None,
    };
    items.iter().map(|i| i.as_str()).collect()
}

/// Methods of strings: the few whose result is decided. Of a known string, with known
/// arguments: `format` (`text::str_format`), `join` of a tuple or list of known strings,
/// `upper`/`lower` (ASCII text), `strip`/`lstrip`/`rstrip`, `replace`, `startswith`/`endswith`.
pub fn str_method(st: &State, s: &Option<Rc<str>>, name: &str, args: &[Value], kwargs: &[(Name, Value)]) -> Value {
    use super::text;
    let known = |t: Option<String>| Value::Str(t.map(Rc::from));
    let text = s.as_deref();
    let plain = kwargs.is_empty();
    match name {
        "format" => known(text.and_then(|t| text::str_format(t, args, kwargs))),
        "join" => known(match (text, args) {
            (Some(sep), [items]) if plain => known_strs(st, items).map(|items| items.join(sep)),
            _ => None,
        }),
        "upper" | "lower" => known(match text {
            Some(t) if plain && args.is_empty() && t.is_ascii() => Some(if name == "upper" { t.to_ascii_uppercase() } else { t.to_ascii_lowercase() }),
            _ => None,
        }),
        "strip" | "lstrip" | "rstrip" => known(match (text, args) {
            (Some(t), [] | [Value::None]) if plain => text::strip(t, name, None),
            (Some(t), [Value::Str(Some(chars))]) if plain => text::strip(t, name, Some(chars)),
            _ => None,
        }),
        "replace" => known(match (text, args) {
            (Some(t), [Value::Str(Some(old)), Value::Str(Some(new))]) if plain => Some(t.replace(&**old, new)),
            (Some(t), [Value::Str(Some(old)), Value::Str(Some(new)), count]) if plain => match count.as_const_int() {
                Some(n) if n < 0 => Some(t.replace(&**old, new)),
                Some(n) => Some(t.replacen(&**old, new, n.min(usize::MAX as i128) as usize)),
                None => None,
            },
            _ => None,
        }),
        "startswith" | "endswith" => match (s, args.first().and_then(|a| a.as_str())) {
            (Some(s), Some(p)) => Value::Bool(if name == "startswith" { s.starts_with(p) } else { s.ends_with(p) }),
            _ => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}
