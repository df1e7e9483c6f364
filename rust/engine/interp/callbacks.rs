//! Callbacks: a user function or bound method handed to code the engine does not follow
//! (`layer.register_forward_hook(self._hook)`, `module.register_forward_hook(probe.hook)`, a
//! callback list) may run at any later call the engine does not follow, and nothing it sees
//! tells when. So the instance attributes such a callable writes, through its `self` or a
//! free name bound to an instance (and through the methods and properties it reaches on
//! them), are *volatile* from the hand-over on: their values are Unknown, and a later store
//! into one of them stores Unknown (`set_attr`). Attributes it never writes keep their
//! values, so `self.apply(self._init_weights)` costs nothing.

use std::collections::HashSet;

use super::Interp;
use crate::ir::{self, ExprKind, Name, StmtKind, Target};
use crate::value::*;

/// What a callback may write: an instance's attribute, or the items of a dict or list.
enum Write {
    Attr(ObjId, Name),
    Items(ObjId),
}

fn w_id(w: &Write) -> ObjId {
    match w {
        Write::Attr(id, _) | Write::Items(id) => *id,
    }
}

/// The marker key of a volatile attribute `name` in an instance's attributes.
fn marker(name: &str) -> Name {
    Name::from(format!("<volatile>{name}"))
}

/// Whether `name` of an instance with these attributes is volatile.
pub fn is_volatile(attrs: &std::collections::BTreeMap<Name, Value>, name: &str) -> bool {
    !name.starts_with('<') && attrs.contains_key(&*marker(name))
}

/// Whether a call argument may hold a user callable (a cheap test before the walk).
pub fn may_hold_callable(v: &Value) -> bool {
    match v {
        Value::Func(_) | Value::Bound(..) | Value::Ref(_) => true,
        Value::Tuple(items) => items.iter().any(may_hold_callable),
        _ => false,
    }
}

/// How far the methods a callback reaches are followed (then every attribute of the instance
/// reached that deep would have to be volatile: the walk gives up and marks nothing more,
/// which only loses the writes of very deep chains).
const MAX_DEPTH: usize = 8;

impl<'a> Interp<'a> {
    /// The user callables among a call's arguments (a list or tuple of them included) escape:
    /// the attributes they write become volatile.
    pub(super) fn escape_callbacks(&self, st: &mut State, args: &[Value], kwargs: &[(Name, Value)]) {
        let mut writes: Vec<Write> = Vec::new();
        let mut seen: HashSet<(u32, ObjId)> = HashSet::new();
        for v in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            match v {
                Value::Tuple(items) => items.iter().for_each(|v| self.callable_writes(st, v, &mut writes, &mut seen)),
                Value::Ref(id) => {
                    if let Obj::List(items) = st.get(*id) {
                        for v in items.iter() {
                            self.callable_writes(st, v, &mut writes, &mut seen);
                        }
                    }
                }
                v => self.callable_writes(st, v, &mut writes, &mut seen),
            }
        }
        for w in writes {
            let id = w_id(&w);
            match (w, st.get_mut(id)) {
                (Write::Attr(_, name), Obj::Instance { attrs, .. }) => {
                    attrs.insert(name.clone(), Value::Unknown);
                    attrs.insert(marker(&name), Value::Bool(true));
                }
                (Write::Items(_), Obj::Dict(items)) => items.iter_mut().for_each(|(_, v)| *v = Value::Unknown),
                (Write::Items(_), Obj::List(items)) => items.iter_mut().for_each(|v| *v = Value::Unknown),
                _ => {}
            }
        }
    }

    fn callable_writes(&self, st: &State, v: &Value, writes: &mut Vec<Write>, seen: &mut HashSet<(u32, ObjId)>) {
        match v {
            Value::Bound(recv, c) => {
                let mut bound = Vec::new();
                if let (Value::Ref(id), Some(p)) = (&**recv, c.def.params.first())
                    && matches!(st.get(*id), Obj::Instance { .. })
                {
                    bound.push((p.name.clone(), *id));
                }
                self.body_writes(st, c, bound, writes, seen, 0);
            }
            Value::Func(c) => self.body_writes(st, c, Vec::new(), writes, seen, 0),
            _ => {}
        }
    }

    /// The attributes `c`'s body writes on the instances `bound` names (its `self`) or that
    /// its free names hold, following the methods and properties it reaches on them.
    fn body_writes(&self, st: &State, c: &Closure, mut bound: Vec<(Name, ObjId)>, writes: &mut Vec<Write>, seen: &mut HashSet<(u32, ObjId)>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        // free names of the closure that hold instances (`probe` in a nested `hook`)
        let params: HashSet<&str> = c.def.params.iter().chain(c.def.kwonly.iter()).map(|p| &*p.name).collect();
        let mut names: Vec<Name> = Vec::new();
        for s in &c.def.body {
            super::super::entry::all_exprs_of_stmt(s, &mut |e| {
                if let ExprKind::Attr(b, _) = &e.kind
                    && let ExprKind::Name(n) = &b.kind
                {
                    names.push(n.clone());
                }
            });
            targets_of(s, &mut |t| {
                if let Target::Attr(b, _, _) | Target::Subscript(b, _, _) = t
                    && let ExprKind::Name(n) = &b.kind
                {
                    names.push(n.clone());
                }
            });
        }
        let mut containers: Vec<(Name, ObjId)> = Vec::new();
        for n in names {
            if params.contains(&*n) || bound.iter().chain(containers.iter()).any(|(b, _)| *b == n) {
                continue;
            }
            match free_value(st, c.scope, &n) {
                Some(Value::Ref(id)) if matches!(st.get(id), Obj::Instance { .. }) => bound.push((n, id)),
                Some(Value::Ref(id)) if matches!(st.get(id), Obj::Dict(_) | Obj::List(_)) => containers.push((n, id)),
                _ => {}
            }
        }
        // a captured dict or list the callback stores into or calls a method of
        // (`activation[name] = output`, `features.append(output)`): its items are unknown
        if !containers.is_empty() {
            let container_of = |e: &ir::Expr| match &e.kind {
                ExprKind::Name(n) => containers.iter().find(|(b, _)| b == n).map(|(_, id)| *id),
                _ => None,
            };
            for s in &c.def.body {
                targets_of(s, &mut |t| {
                    if let Target::Subscript(b, _, _) = t
                        && let Some(id) = container_of(b)
                    {
                        writes.push(Write::Items(id));
                    }
                });
                super::super::entry::all_exprs_of_stmt(s, &mut |e| {
                    if let ExprKind::Call { func, .. } = &e.kind
                        && let ExprKind::Attr(b, _) = &func.kind
                        && let Some(id) = container_of(b)
                    {
                        writes.push(Write::Items(id));
                    }
                });
            }
        }
        if bound.is_empty() {
            return;
        }
        let id_of = |e: &ir::Expr| match &e.kind {
            ExprKind::Name(n) => bound.iter().find(|(b, _)| b == n).map(|(_, id)| *id),
            _ => None,
        };
        let mut reached: Vec<(ObjId, Name)> = Vec::new();
        for s in &c.def.body {
            targets_of(s, &mut |t| {
                if let Target::Attr(b, name, _) = t
                    && let Some(id) = id_of(b)
                {
                    writes.push(Write::Attr(id, name.clone()));
                }
            });
            super::super::entry::all_exprs_of_stmt(s, &mut |e| {
                if let ExprKind::Attr(b, name) = &e.kind
                    && let Some(id) = id_of(b)
                {
                    reached.push((id, name.clone()));
                }
            });
        }
        for (id, name) in reached {
            let Obj::Instance { class, .. } = st.get(id) else { continue };
            if let Some((_, Value::Func(m))) = self.class_lookup(st, *class, &name)
                && seen.insert((m.def.id, id))
                && let Some(p) = m.def.params.first()
            {
                self.body_writes(st, &m, vec![(p.name.clone(), id)], writes, seen, depth + 1);
            }
        }
    }
}

/// The value of a free name in the scope chain a closure was defined in.
fn free_value(st: &State, scope: ObjId, name: &str) -> Option<Value> {
    let mut scope = Some(scope);
    for _ in 0..256 {
        let id = scope?;
        match st.get(id) {
            Obj::Scope { vars, parent } => {
                if let Some(v) = vars.get(name) {
                    return Some(v.clone());
                }
                scope = *parent;
            }
            _ => return None,
        }
    }
    None
}

/// Every assignment target of a statement and of the statements inside it (nested function
/// bodies included: a nested function the callback calls writes through the same names).
fn targets_of(s: &ir::Stmt, f: &mut dyn FnMut(&Target)) {
    fn each(t: &Target, f: &mut dyn FnMut(&Target)) {
        f(t);
        if let Target::Tuple(ts, _, _) = t {
            ts.iter().for_each(|t| each(t, f));
        }
    }
    let all = |body: &[ir::Stmt], f: &mut dyn FnMut(&Target)| body.iter().for_each(|s| targets_of(s, f));
    match &s.kind {
        StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| each(t, f)),
        StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => each(target, f),
        StmtKind::For { target, body, orelse, .. } => {
            each(target, f);
            all(body, f);
            all(orelse, f);
        }
        StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            all(body, f);
            all(orelse, f);
        }
        StmtKind::With { items, body } => {
            items.iter().filter_map(|(_, t)| t.as_ref()).for_each(|t| each(t, f));
            all(body, f);
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            all(body, f);
            handlers.iter().for_each(|h| all(&h.body, f));
            all(orelse, f);
            all(finalbody, f);
        }
        StmtKind::FunctionDef(d) => all(&d.body, f),
        StmtKind::Delete(ts) => ts.iter().for_each(|t| each(t, f)),
        _ => {}
    }
}
