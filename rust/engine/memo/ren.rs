//! A replay's renaming of a summary's results (`engine::memo`): the first call's object ids,
//! fresh shape variables and symbols, mapped to the replay's.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::Shift;
use super::write::Write;
use crate::shape::{Cond, Facts, Poly};
use crate::value::*;

/// A replay's renaming: of the first call's object ids, and of its fresh shape variables and
/// symbols.
pub(super) struct Ren<'a> {
    pub(super) ids: &'a dyn Fn(ObjId) -> Option<ObjId>,
    /// The fresh shape variables' shift, and the caller's variables that stand for the first
    /// call's (`Hit::vars`: sorted pairs, none of them a fresh one).
    pub(super) vars: Shift,
    pub(super) var_map: &'a [(u32, u32)],
    pub(super) syms: Shift,
}

impl Ren<'_> {
    pub(super) fn id(&self, id: ObjId) -> Option<ObjId> {
        (self.ids)(id)
    }
    /// A shape variable renamed.
    pub(super) fn var(&self, v: u32) -> u32 {
        match self.var_map.binary_search_by_key(&v, |p| p.0) {
            Ok(i) => self.var_map[i].1,
            Err(_) => self.vars.map(v),
        }
    }
    /// Whether neither variables nor symbols are renamed.
    pub(super) fn ids_only(&self) -> bool {
        self.vars.is_identity() && self.var_map.is_empty() && self.syms.is_identity()
    }
    /// Whether renaming may change `v` (else it is kept as it is).
    pub(super) fn touches(&self, v: &Value) -> bool {
        refers(v) || (!self.ids_only() && matches!(v, Value::Tensor(_) | Value::Int(_) | Value::Cond(_) | Value::Range(..)))
    }
    pub(super) fn poly(&self, p: &Poly) -> Poly {
        if self.syms.is_identity() { p.clone() } else { p.rename_syms(&|s| self.syms.map(s)) }
    }
    pub(super) fn cond(&self, c: &Cond) -> Cond {
        Cond { poly: self.poly(&c.poly), rel: c.rel }
    }
    pub(super) fn dim(&self, d: &Dim) -> Dim {
        match &d.v {
            Some(p) if !self.syms.is_identity() => Dim {
                v: Some(self.poly(p)),
                why: match &d.why {
                    Some(w) if w.symbolic() => Some(std::rc::Rc::new(w.rename(&|p| self.poly(p)))),
                    w => w.clone(),
                },
            },
            _ => d.clone(),
        }
    }
    /// A shape with the fresh variables and symbols renamed.
    pub(super) fn shape(&self, s: &Shape) -> Shape {
        Shape { prefix: s.prefix.map(|p| self.var(p)), dims: s.dims.iter().map(|d| self.dim(d)).collect() }
    }
    pub(super) fn facts(&self, f: &Facts) -> Facts {
        if self.syms.is_identity() { f.clone() } else { f.rename_syms(&|s| self.syms.map(s)) }
    }
    pub(super) fn branch(&self, b: &Branch) -> Branch {
        match b {
            Branch::Sym(c) if !self.syms.is_identity() => Branch::Sym(self.cond(c)),
            b => b.clone(),
        }
    }
}

fn remap_closure(c: &Closure, f: &Ren) -> Option<Closure> {
    Some(Closure {
        def: c.def.clone(),
        scope: f.id(c.scope)?,
        defaults: c.defaults.iter().map(|v| remap_value(v, f)).collect::<Option<_>>()?,
        kw_defaults: c
            .kw_defaults
            .iter()
            .map(|v| match v {
                Some(v) => remap_value(v, f).map(Some),
                None => Some(None),
            })
            .collect::<Option<_>>()?,
        class: match c.class {
            Some(k) => Some(f.id(k)?),
            None => None,
        },
        kind: c.kind,
    })
}

pub(super) fn remap_values(vs: &[Value], f: &Ren) -> Option<Vec<Value>> {
    vs.iter().map(|v| remap_value(v, f)).collect()
}

/// The map with its values renamed: a copy updated in place (collecting into a new map
/// would sort keys that are sorted already).
fn remap_map<K: Clone + Ord>(m: &BTreeMap<K, Value>, f: &Ren) -> Option<BTreeMap<K, Value>> {
    let mut out = m.clone();
    for v in out.values_mut() {
        if f.touches(v) {
            *v = remap_value(v, f)?;
        }
    }
    Some(out)
}

/// [`remap_map`] for the variables of a scope: only the values that change are written.
fn remap_vars(m: &Vars, f: &Ren) -> Option<Vars> {
    let mut out = m.clone();
    let mut failed = false;
    out.update(|_, v| {
        if failed || !f.touches(v) {
            return Option::None;
        }
        match remap_value(v, f) {
            Some(w) => (w != *v).then_some(w),
            Option::None => {
                failed = true;
                Option::None
            }
        }
    });
    (!failed).then_some(out)
}

/// Whether a value may refer to an object (else renaming leaves it as it is).
fn refers(v: &Value) -> bool {
    use Value::*;
    // the values `remap_value` copies as they are (keep the two lists alike; skipping them
    // here saves a clone and a drop per value, 2% of a 100-block model's instructions)
    !matches!(v, None | Bool(_) | Int(_) | Float(_) | Str(_) | Tensor(_) | Lib(_) | Builtin(_) | Cond(_) | Range(..) | DType(_) | Unknown)
}

pub(super) fn remap_value(v: &Value, f: &Ren) -> Option<Value> {
    use Value::*;
    Some(match v {
        Ref(id) => Ref(f.id(*id)?),
        Tuple(xs) => Tuple(Rc::new(remap_values(xs, f)?)),
        Func(c) => Func(Rc::new(remap_closure(c, f)?)),
        Bound(r, c) => Bound(Box::new(remap_value(r, f)?), Rc::new(remap_closure(c, f)?)),
        LibMethod(r, n) => LibMethod(Box::new(remap_value(r, f)?), n.clone()),
        Super(c, r) => Super(f.id(*c)?, Box::new(remap_value(r, f)?)),
        Gen(c, a, k) => Gen(
            Rc::new(remap_closure(c, f)?),
            Rc::new(remap_values(a, f)?),
            Rc::new(k.iter().map(|(n, v)| Some((n.clone(), remap_value(v, f)?))).collect::<Option<_>>()?),
        ),
        Tensor(t) if !f.ids_only() => {
            let shape = f.shape(&t.shape);
            if shape.prefix == t.shape.prefix && shape.dims == t.shape.dims {
                v.clone()
            } else {
                Tensor(Rc::new(crate::value::Tensor { shape, ..(**t).clone() }))
            }
        }
        Int(p) if !f.syms.is_identity() => Int(f.poly(p)),
        Cond(c) if !f.syms.is_identity() => Cond(f.cond(c)),
        Range(a, b, c) if !f.syms.is_identity() => Range(f.poly(a), f.poly(b), f.poly(c)),
        None | Bool(_) | Int(_) | Float(_) | Str(_) | Tensor(_) | Lib(_) | Builtin(_) | Cond(_) | Range(..) | DType(_) | Unknown => v.clone(),
    })
}

/// An object renamed, sharing `o` itself when the renaming changes none of its ids.
pub(super) fn remap_shared(o: &Rc<Obj>, f: &Ren) -> Option<Rc<Obj>> {
    let mut same = f.ids_only();
    crate::value::gc::obj_ids(o, &mut |id| same &= f.id(id) == Some(id));
    if same { Some(o.clone()) } else { remap_obj(o, f).map(Rc::new) }
}

pub(super) fn remap_write(w: &Write, f: &Ren) -> Option<Write> {
    Some(match w {
        Write::Whole(o) => Write::Whole(remap_shared(o, f)?),
        Write::Names(names) => Write::Names(
            names
                .iter()
                .map(|(k, v)| {
                    Some((
                        k.clone(),
                        match v {
                            Some(v) => Some(remap_value(v, f)?),
                            Option::None => Option::None,
                        },
                    ))
                })
                .collect::<Option<_>>()?,
        ),
    })
}

fn remap_obj(o: &Obj, f: &Ren) -> Option<Obj> {
    use Obj::*;
    Some(match o {
        List(xs) => List(remap_values(xs, f)?),
        Dict(xs) => Dict(xs.iter().map(|(k, v)| Some((remap_value(k, f)?, remap_value(v, f)?))).collect::<Option<_>>()?),
        Instance { class, attrs } => Instance { class: f.id(*class)?, attrs: remap_map(attrs, f)? },
        Class { name, def, bases, attrs } => Class { name: name.clone(), def: def.clone(), bases: remap_values(bases, f)?, attrs: remap_map(attrs, f)? },
        Layer(l) => Layer(crate::value::Layer { kind: l.kind.clone(), args: remap_map(&l.args, f)?, attrs: remap_map(&l.attrs, f)?, label: l.label.clone(), span: l.span }),
        Container { kind, items, attrs } => Container {
            kind: *kind,
            items: items.iter().map(|(n, v)| Some((n.clone(), remap_value(v, f)?))).collect::<Option<_>>()?,
            attrs: remap_map(attrs, f)?,
        },
        Scope { vars, parent } => Scope {
            vars: remap_vars(vars, f)?,
            parent: match parent {
                Some(p) => Some(f.id(*p)?),
                Option::None => Option::None,
            },
        },
        Namespace { kind, attrs } => Namespace { kind: kind.clone(), attrs: remap_map(attrs, f)? },
    })
}
