//! Operators on Python values: binary operators, comparisons and subscripts (the tensor
//! cases go to the torch models).

use std::rc::Rc;

use super::{Interp, UNROLL, Vals};
use crate::ir::*;
use crate::models::torch;
use crate::shape::{Cond, Poly, Rel, Tri, UNBOUNDED};
use crate::value::*;

impl<'a> Interp<'a> {
    pub fn binop(&mut self, op: BinOp, a: Value, b: Value, st: State, span: Span, inplace: bool) -> Vals {
        // (`taken`: an unknown object may change in place)
        let mut st = st;
        if inplace && a.is_unknown() {
            st.taken.forget();
        }
        let before = self.reach_mark(&st, span);
        let out = self.binop_inner(op, a, b, st, span, inplace);
        self.reached(before, span);
        out
    }

    fn binop_inner(&mut self, op: BinOp, a: Value, b: Value, st: State, span: Span, inplace: bool) -> Vals {
        // a loaded object with a tensor: a tensor too (`models/torch/loaded.rs`)
        let mut st = st;
        let (a, b) = match (&a, &b) {
            (Value::Tensor(_), _) => (a, torch::loaded::as_tensor(self, &mut st, b)),
            (_, Value::Tensor(_)) => (torch::loaded::as_tensor(self, &mut st, a), b),
            _ => (a, b),
        };
        if matches!(a, Value::Tensor(_)) || matches!(b, Value::Tensor(_)) {
            let writes = inplace && matches!(a, Value::Tensor(_));
            // `x += y` writes into x: a leaf that requires grad raises, a tensor autograd saved
            // breaks the graphs that need it (SHP310)
            let mut st = st;
            let written = match &a {
                Value::Tensor(t) if writes => match torch::autograd::in_place(self, &mut st, &format!("`{}=`", op.symbol()), t, span) {
                    Some(w) => Some(w),
                    None => return Vec::new(),
                },
                _ => None,
            };
            let mut out = torch::tensor_binop(self, st, op, a, b, span, inplace);
            if let Some(w) = written {
                out = torch::autograd::written(out, &w);
            }
            if writes {
                // `x += k` writes into x and every view of it: known values are stale, and which
                // of them autograd records may have changed
                for (st, v) in out.iter_mut() {
                    st.forget_values();
                    st.forget_grads();
                    *v = std::mem::replace(v, Value::Unknown).forget_values();
                }
            }
            return out;
        }
        if crate::models::numpy::involves_array(&st, &a, &b) {
            return crate::models::numpy::binop(self, st, op, &a, &b);
        }
        let int_of = |v: &Value| -> Option<Poly> {
            match v {
                Value::Int(p) => Some(p.clone()),
                Value::Bool(b) => Some(Poly::constant(*b as i128)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (int_of(&a), int_of(&b)) {
            let r = match op {
                BinOp::Add => x.add(&y),
                BinOp::Sub => x.sub(&y),
                BinOp::Mul => x.mul(&y),
                BinOp::FloorDiv => {
                    if y.as_const() == Some(0) {
                        return Vec::new(); // ZeroDivisionError
                    }
                    x.floordiv(&y)
                }
                BinOp::Mod => {
                    if y.as_const() == Some(0) {
                        return Vec::new();
                    }
                    x.modulo(&y)
                }
                BinOp::Pow => match y.as_const() {
                    Some(e) if (0..=64).contains(&e) => x.pow(e as u32),
                    _ => None,
                },
                BinOp::Div => {
                    let v = match (x.as_const(), y.as_const()) {
                        (Some(p), Some(q)) if q != 0 => Value::Float(Some(p as f64 / q as f64)),
                        _ => Value::Float(None),
                    };
                    return vec![(st, v)];
                }
                BinOp::LShift => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) if (0..64).contains(&q) && p.abs() < (1 << 60) => p.checked_shl(q as u32).map(Poly::constant),
                    _ => None,
                },
                BinOp::RShift => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) if (0..127).contains(&q) => Some(Poly::constant(p >> q)),
                    _ => None,
                },
                BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) => Some(Poly::constant(match op {
                        BinOp::BitAnd => p & q,
                        BinOp::BitOr => p | q,
                        _ => p ^ q,
                    })),
                    _ => None,
                },
                BinOp::MatMul => None,
            };
            // an int of unknown value is still an int (`//`, `%`, shifts and bitwise ops of ints
            // give one, or raise); `**` of an exponent not known may be a float
            let int_op = !matches!(op, BinOp::MatMul | BinOp::Pow);
            return vec![(st, r.map(Value::Int).unwrap_or_else(|| if int_op { Value::Int(self.syms.fresh_int("n", UNBOUNDED)) } else { Value::Unknown }))];
        }
        let float_of = |v: &Value| -> Option<Option<f64>> {
            match v {
                Value::Float(f) => Some(*f),
                Value::Int(p) => Some(p.as_const().map(|c| c as f64)),
                Value::Bool(b) => Some(Some(*b as i64 as f64)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (float_of(&a), float_of(&b)) {
            if matches!(a, Value::Float(_)) || matches!(b, Value::Float(_)) {
                let r = match (x, y) {
                    (Some(x), Some(y)) => match op {
                        BinOp::Add => Some(x + y),
                        BinOp::Sub => Some(x - y),
                        BinOp::Mul => Some(x * y),
                        BinOp::Div if y != 0.0 => Some(x / y),
                        BinOp::Pow => Some(x.powf(y)),
                        BinOp::FloorDiv if y != 0.0 => Some((x / y).floor()),
                        _ => None,
                    },
                    _ => None,
                };
                return vec![(st, Value::Float(r.filter(|f| f.is_finite())))];
            }
        }
        let mut st = st;
        match (op, &a, &b) {
            (BinOp::Add, Value::Str(Some(x)), Value::Str(Some(y))) => {
                return vec![(st, Value::Str(Some(Rc::from(format!("{x}{y}")))))];
            }
            // `"%s_%d.pt" % (name, epoch)`: a tuple's items, or the one value on the right (a
            // mapping or another object, whose `%` differs, is not followed)
            (BinOp::Mod, Value::Str(Some(template)), rhs) => {
                let args = match rhs {
                    Value::Tuple(items) => Some(items.to_vec()),
                    Value::Str(Some(_)) | Value::Int(_) | Value::Bool(_) | Value::None => Some(vec![rhs.clone()]),
                    _ => None,
                };
                let text = args.and_then(|a| crate::models::text::percent_format(template, &a));
                return vec![(st, Value::Str(text.map(Rc::from)))];
            }
            (BinOp::Add, Value::Str(_), Value::Str(_)) | (BinOp::Mod, Value::Str(_), _) => return vec![(st, Value::Str(None))],
            (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
                let mut v = x.as_ref().clone();
                v.extend(y.iter().cloned());
                return vec![(st, Value::Tuple(Rc::new(v)))];
            }
            (BinOp::Add, Value::Ref(x), Value::Ref(y)) => {
                if let (Obj::List(p), Obj::List(q)) = (st.get(*x).clone(), st.get(*y).clone()) {
                    let mut v = p;
                    v.extend(q);
                    let id = st.alloc(Obj::List(v));
                    return vec![(st, Value::Ref(id))];
                }
            }
            (BinOp::Mul, Value::Ref(x), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Ref(x)) => {
                if let (Obj::List(p), Some(n)) = (st.get(*x).clone(), n.as_const()) {
                    if (0..=UNROLL as i128).contains(&n) && p.len() * (n as usize) <= 4 * UNROLL {
                        let v: Vec<Value> = (0..n).flat_map(|_| p.iter().cloned()).collect();
                        let id = st.alloc(Obj::List(v));
                        return vec![(st, Value::Ref(id))];
                    }
                }
            }
            (BinOp::Mul, Value::Tuple(p), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Tuple(p)) => {
                if let Some(n) = n.as_const() {
                    if (0..=UNROLL as i128).contains(&n) && p.len() * (n as usize) <= 4 * UNROLL {
                        let v: Vec<Value> = (0..n).flat_map(|_| p.iter().cloned()).collect();
                        return vec![(st, Value::Tuple(Rc::new(v)))];
                    }
                }
            }
            _ => {}
        }
        vec![(st, Value::Unknown)]
    }

    pub fn cmp(&self, st: &State, op: CmpOp, a: &Value, b: &Value) -> Value {
        if let Some(v) = self.cmp_float_int(st, op, a, b) {
            return v;
        }
        let ints = |v: &Value| -> Option<Poly> {
            match v {
                Value::Int(p) => Some(p.clone()),
                Value::Bool(b) => Some(Poly::constant(*b as i128)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (ints(a), ints(b)) {
            let (rel, l, r) = match op {
                CmpOp::Eq | CmpOp::Is => (Rel::Eq, x, y),
                CmpOp::NotEq | CmpOp::IsNot => (Rel::Ne, x, y),
                CmpOp::Lt => (Rel::Lt, x, y),
                CmpOp::LtE => (Rel::Le, x, y),
                CmpOp::Gt => (Rel::Lt, y, x),
                CmpOp::GtE => (Rel::Le, y, x),
                _ => return Value::Unknown,
            };
            // two constants: what deciding `l - r rel 0` gives, without building it
            if let Some(d) = l.const_diff(&r) {
                return Value::Bool(match rel {
                    Rel::Eq => d == 0,
                    Rel::Ne => d != 0,
                    Rel::Lt => d < 0,
                    Rel::Le => d <= 0,
                });
            }
            let Some(c) = Cond::cmp(&l, rel, &r) else { return Value::Unknown };
            return match st.facts.decide(&self.syms, &c) {
                Tri::True => Value::Bool(true),
                Tri::False => Value::Bool(false),
                Tri::Unknown => Value::Cond(c),
            };
        }
        match op {
            CmpOp::Is | CmpOp::IsNot => {
                // (`torch.load` gives back None when None was saved)
                let loaded = |v: &Value| torch::checkpoint::is_checkpoint(st, v).is_some();
                let same = match (a, b) {
                    (Value::None, Value::None) => Some(true),
                    (Value::None, Value::Unknown) | (Value::Unknown, Value::None) => None,
                    (Value::None, v) | (v, Value::None) if loaded(v) => None,
                    (Value::None, _) | (_, Value::None) => Some(false),
                    (Value::Bool(x), Value::Bool(y)) => Some(x == y),
                    (Value::Ref(x), Value::Ref(y)) => Some(x == y),
                    _ => None,
                };
                match same {
                    Some(s) => Value::Bool(if op == CmpOp::Is { s } else { !s }),
                    None => Value::Unknown,
                }
            }
            // a shape of unknown rank (`[*, 16]`) against a shape: unequal when a pair of their
            // last dims differs (equal sequences agree at every position from the end)
            CmpOp::Eq | CmpOp::NotEq
                if matches!((a, b), (Value::Tuple(_) | Value::LibMethod(..), Value::Tuple(_) | Value::LibMethod(..)))
                    && !matches!((a, b), (Value::Tuple(_), Value::Tuple(_))) =>
            {
                let (Some(x), Some(y)) = (shape_suffix(st, a), shape_suffix(st, b)) else { return Value::Unknown };
                let differ = x.iter().rev().zip(y.iter().rev()).any(|(p, q)| self.cmp(st, CmpOp::Eq, p, q) == Value::Bool(false));
                match (differ, op) {
                    (true, CmpOp::Eq) => Value::Bool(false),
                    (true, _) => Value::Bool(true),
                    _ => Value::Unknown,
                }
            }
            CmpOp::Eq | CmpOp::NotEq if matches!((a, b), (Value::Tuple(_), Value::Tuple(_))) => {
                // two shapes (`a.shape == b.shape`) or tuples: unequal when their lengths or any
                // pair of items differ, equal when every pair is; one undecided pair (and the
                // rest equal) is that pair's condition, so the branch refines the path
                let (Value::Tuple(x), Value::Tuple(y)) = (a, b) else { unreachable!() };
                let eq = if x.len() != y.len() {
                    Value::Bool(false)
                } else {
                    let mut open: Option<Value> = None;
                    let mut undecided = 0;
                    let mut verdict = Some(true);
                    for (p, q) in x.iter().zip(y.iter()) {
                        match self.cmp(st, CmpOp::Eq, p, q) {
                            Value::Bool(true) => {}
                            Value::Bool(false) => {
                                verdict = Some(false);
                                break;
                            }
                            other => {
                                undecided += 1;
                                open = Some(other);
                                verdict = None;
                            }
                        }
                    }
                    match verdict {
                        Some(v) => Value::Bool(v),
                        None if undecided == 1 => match open {
                            Some(Value::Cond(c)) => Value::Cond(c),
                            _ => Value::Unknown,
                        },
                        None => Value::Unknown,
                    }
                };
                match (op, eq) {
                    (CmpOp::Eq, v) => v,
                    (_, Value::Bool(v)) => Value::Bool(!v),
                    (_, Value::Cond(c)) => c.negate().map(Value::Cond).unwrap_or(Value::Unknown),
                    _ => Value::Unknown,
                }
            }
            CmpOp::Eq | CmpOp::NotEq => {
                let same = match (a, b) {
                    (Value::Str(Some(x)), Value::Str(Some(y))) => Some(x == y),
                    (Value::None, Value::None) => Some(true),
                    (Value::Str(Some(_)), Value::None) | (Value::None, Value::Str(Some(_))) => Some(false),
                    // an int never equals a string (`v == "M"` over a VGG config)
                    (Value::Int(_), Value::Str(_)) | (Value::Str(_), Value::Int(_)) => Some(false),
                    (Value::Float(Some(x)), Value::Float(Some(y))) => Some(x == y),
                    (Value::DType(x), Value::DType(y)) => Some(x == y),
                    // a dtype is never None, a string or an int
                    (Value::DType(_), Value::None | Value::Str(Some(_)) | Value::Int(_)) | (Value::None | Value::Str(Some(_)) | Value::Int(_), Value::DType(_)) => Some(false),
                    _ => None,
                };
                match same {
                    Some(s) => Value::Bool(if op == CmpOp::Eq { s } else { !s }),
                    None => Value::Unknown,
                }
            }
            CmpOp::In | CmpOp::NotIn => {
                let found = match b {
                    Value::Tuple(items) => contains(items, a),
                    Value::Ref(id) => match st.get(*id) {
                        Obj::List(items) => contains(items, a),
                        Obj::Dict(items) => {
                            if items.iter().any(|(k, _)| k.is_unknown()) {
                                None
                            } else {
                                contains(&items.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), a)
                            }
                        }
                        _ => None,
                    },
                    Value::Str(Some(s)) => a.as_str().map(|x| s.contains(x)),
                    _ => None,
                };
                match found {
                    Some(f) => Value::Bool(if op == CmpOp::In { f } else { !f }),
                    None => Value::Unknown,
                }
            }
            _ => {
                if let (Value::Float(Some(x)), Value::Float(Some(y))) = (a, b) {
                    return Value::Bool(match op {
                        CmpOp::Lt => x < y,
                        CmpOp::LtE => x <= y,
                        CmpOp::Gt => x > y,
                        _ => x >= y,
                    });
                }
                Value::Unknown
            }
        }
    }

    /// A float constant against an int (`self.drop > 0` with `drop=0.`, `p == 1`): Python
    /// compares the two numbers exactly, and so does the int comparison this becomes, with the
    /// float rounded the way the relation allows (`n > 2.5` is `n > 2`, `n >= 2.5` is
    /// `n >= 3`; `n == 2.5` is never true). A symbolic int gives a condition, as against an
    /// int. Past 2**53 every float is an integer, exact in an i128 up to 2**126; larger ones,
    /// NaN and the infinities are left undecided.
    fn cmp_float_int(&self, st: &State, op: CmpOp, a: &Value, b: &Value) -> Option<Value> {
        let (f, other, op) = match (a, b) {
            (Value::Float(Some(f)), o @ (Value::Int(_) | Value::Bool(_))) => (*f, o, mirrored(op)?),
            (o @ (Value::Int(_) | Value::Bool(_)), Value::Float(Some(f))) => (*f, o, op),
            _ => return None,
        };
        if !f.is_finite() || f.abs() >= 2f64.powi(126) {
            return None;
        }
        let integral = f.fract() == 0.0;
        let k = match op {
            CmpOp::Eq | CmpOp::NotEq if !integral => return Some(Value::Bool(op == CmpOp::NotEq)),
            CmpOp::Eq | CmpOp::NotEq => f,
            CmpOp::Lt | CmpOp::GtE => f.ceil(),
            CmpOp::LtE | CmpOp::Gt => f.floor(),
            _ => return None,
        };
        Some(self.cmp(st, op, other, &Value::Int(Poly::constant(k as i128))))
    }

    pub fn subscript(&mut self, st: State, o: Value, i: Value, span: Span) -> Vals {
        let before = self.reach_mark(&st, span);
        let out = self.subscript_inner(st, o, i, span);
        self.reached(before, span);
        out
    }

    fn subscript_inner(&mut self, st: State, o: Value, i: Value, span: Span) -> Vals {
        let seq_index = |items: &[Value], i: &Value| -> Option<Value> {
            let k = i.as_const_int()?;
            let n = items.len() as i128;
            let k = if k < 0 { k + n } else { k };
            if k >= 0 && k < n { Some(items[k as usize].clone()) } else { None }
        };
        let slice_of = |items: &[Value], i: &Value| -> Option<Vec<Value>> {
            let Value::Tuple(t) = i else { return None };
            if t.len() != 4 || t[0].as_str() != Some("<slice>") {
                return None;
            }
            let n = items.len() as i128;
            let get = |v: &Value, d: i128| -> Option<i128> {
                match v {
                    Value::None => Some(d),
                    _ => v.as_const_int(),
                }
            };
            // (Python's `slice.indices`, any step but 0, which raises)
            let step = get(&t[3], 1)?;
            if step == 0 {
                return None;
            }
            let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
            let clamp = |k: i128| -> i128 { if k < 0 { (k + n).max(lo) } else { k.min(hi) } };
            let a = match &t[1] {
                Value::None => if step > 0 { 0 } else { n - 1 },
                v => clamp(v.as_const_int()?),
            };
            let b = match &t[2] {
                Value::None => if step > 0 { n } else { -1 },
                v => clamp(v.as_const_int()?),
            };
            let mut out = Vec::new();
            let mut k = a;
            while (step > 0 && k < b) || (step < 0 && k > b) {
                out.push(items[k as usize].clone());
                k += step;
            }
            Some(out)
        };
        match &o {
            Value::Tuple(items) => {
                if let Some(v) = seq_index(items, &i) {
                    return vec![(st, v)];
                }
                if let Some(s) = slice_of(items, &i) {
                    return vec![(st, Value::Tuple(Rc::new(s)))];
                }
                vec![(st, Value::Unknown)]
            }
            Value::Ref(id) => match st.get(*id).clone() {
                Obj::List(items) => {
                    if let Some(v) = seq_index(&items, &i) {
                        return vec![(st, v)];
                    }
                    // an index not known (a Dataset's `self.samples[idx]`): one of the items, a
                    // value that stands for each of them (an index out of range raises, so a
                    // path that goes on got one of them)
                    if matches!(i, Value::Int(_)) && i.as_const_int().is_none() && !items.is_empty() && items.len() <= 256 {
                        if let Some(v) = torch::data::join_all(self, &st, &items) {
                            return vec![(st, v)];
                        }
                    }
                    if let Some(s) = slice_of(&items, &i) {
                        let mut st = st;
                        let nid = st.alloc(Obj::List(s));
                        return vec![(st, Value::Ref(nid))];
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Dict(items) => {
                    if i.as_str().is_some() || i.as_const_int().is_some() {
                        if let Some((_, v)) = items.iter().find(|(k, _)| *k == i) {
                            return vec![(st, v.clone())];
                        }
                    }
                    // a vocabulary's id of a token not known: an int (or a KeyError)
                    let items = items.clone();
                    if let Some(v) = crate::models::builtins::dict_int_by_unknown_key(self, &items, &i) {
                        return vec![(st, v)];
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Container { kind, items, attrs } => {
                    let vals: Vec<Value> = items.iter().map(|(_, v)| v.clone()).collect();
                    if kind == ContainerKind::ModuleDict {
                        if let Some(k) = i.as_str() {
                            if let Some((_, v)) = items.iter().find(|(kk, _)| kk.as_deref() == Some(k)) {
                                return vec![(st, v.clone())];
                            }
                        }
                        return vec![(st, Value::Unknown)];
                    }
                    if let Some(v) = seq_index(&vals, &i) {
                        return vec![(st, v)];
                    }
                    if let Some(s) = slice_of(&vals, &i) {
                        let mut st = st;
                        let nid = st.alloc(Obj::Container { kind, items: s.into_iter().map(|v| (None, v)).collect(), attrs });
                        return vec![(st, Value::Ref(nid))];
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Namespace { kind, .. } if &*kind == torch::checkpoint::CHECKPOINT => torch::checkpoint::subscript(self, st, *id, &i, span),
                // a list a loop appended to (`value::alike`): an item (an index past the end
                // raises, so a path that goes on got one), or a slice of it
                // (`o` is `Value::Ref(id)`)
                Obj::Namespace { kind, .. } if &*kind == crate::value::alike::APPENDED => {
                    let Some(item) = crate::value::alike::appended_item(&st, &o) else { return vec![(st, Value::Unknown)] };
                    match &i {
                        Value::Int(_) => vec![(st, crate::models::builtins::fresh_item(self, &item))],
                        Value::Tuple(t) if t.len() == 4 && t[0].as_str() == Some("<slice>") => {
                            let mut st = st;
                            let nid = st.alloc(crate::value::alike::appended_list(item));
                            vec![(st, Value::Ref(nid))]
                        }
                        _ => vec![(st, Value::Unknown)],
                    }
                }
                Obj::Namespace { kind, attrs } if &*kind == crate::models::numpy::ARRAY => match attrs.get(crate::models::numpy::TENSOR) {
                    Some(Value::Tensor(a)) => crate::models::numpy::index(self, st, a, &i, span),
                    _ => vec![(st, Value::Unknown)],
                },
                Obj::Instance { .. } => {
                    let gi: Name = Rc::from("__getitem__");
                    let mut out = Vec::new();
                    for (st, m) in self.get_attr(st, o.clone(), &gi, span) {
                        out.extend(self.call(m, vec![i.clone()], Vec::new(), st, span));
                    }
                    out
                }
                _ => vec![(st, Value::Unknown)],
            },
            Value::Tensor(_) => torch::tensor_index(self, st, o.clone(), i, span),
            // a sequence of unknown length whose elements are all alike (a split into many
            // parts): an element (an index past the end raises, so a path that goes on got
            // one), or a slice of it
            Value::LibMethod(elem, name) if &**name == "<repeat>" => match &i {
                // (ints alike but not equal: each read an int of its own)
                Value::Int(_) if matches!(**elem, Value::Int(ref p) if p.as_const().is_none()) => vec![(st, Value::Int(self.syms.fresh_int("n", UNBOUNDED)))],
                Value::Int(_) => vec![(st, (**elem).clone())],
                Value::Tuple(t) if t.len() == 4 && t[0].as_str() == Some("<slice>") => vec![(st, o.clone())],
                _ => vec![(st, Value::Unknown)],
            },
            // a known string: a character or a substring
            Value::Str(Some(text)) if text.len() <= 1 << 16 => {
                let chars: Vec<Value> = text.chars().map(|c| Value::Str(Some(Rc::from(c.to_string())))).collect();
                if let Some(v) = seq_index(&chars, &i) {
                    return vec![(st, v)];
                }
                if let Some(part) = slice_of(&chars, &i) {
                    let joined: String = part.iter().filter_map(|c| c.as_str()).collect();
                    return vec![(st, Value::Str(Some(Rc::from(joined))))];
                }
                vec![(st, Value::Unknown)]
            }
            _ => vec![(st, Value::Unknown)],
        }
    }
}

fn contains(items: &[Value], x: &Value) -> Option<bool> {
    if items.iter().any(|v| v == x) {
        return Some(true);
    }
    let all_known = items.iter().all(|v| matches!(v, Value::Str(Some(_)) | Value::None | Value::Bool(_)) || v.as_const_int().is_some());
    let x_known = matches!(x, Value::Str(Some(_)) | Value::None | Value::Bool(_)) || x.as_const_int().is_some();
    if all_known && x_known { Some(false) } else { None }
}

/// The items of a tuple, or the known last dims of `x.shape` for a tensor of unknown rank.
fn shape_suffix(st: &State, v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Tuple(items) => Some(items.to_vec()),
        Value::LibMethod(t, name) if &**name == "<shape>" => {
            let Value::Tensor(t) = &**t else { return None };
            let s = st.resolve(&t.shape);
            Some(s.dims.iter().map(|d| d.v.clone().map(Value::Int).unwrap_or(Value::Unknown)).collect())
        }
        _ => None,
    }
}

/// The operator that gives the same truth with its operands swapped (`a < b` is `b > a`);
/// `None` for those that are not comparisons of numbers (`is`, `in`).
fn mirrored(op: CmpOp) -> Option<CmpOp> {
    Some(match op {
        CmpOp::Eq | CmpOp::NotEq => op,
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtE => CmpOp::GtE,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtE => CmpOp::LtE,
        _ => return None,
    })
}
