//! Names and assignment: scopes (`lookup`, `set_var`, and `module_scope_of`, which walks the
//! same scope chain and so lives here rather than with attributes) and the assignment of a
//! value to a target (a name, an attribute, a subscript, a tuple), with the layer labels and
//! the `--show-shapes` log that assignment feeds.

use std::rc::Rc;

use super::{Ctx, Interp, builtin};
use crate::ir::*;
use crate::models;
use crate::rules::events::{Event, EventKind};
use crate::value::*;

impl<'a> Interp<'a> {
    pub fn lookup(&self, st: &State, ctx: &Ctx, name: &str) -> Option<Value> {
        self.lookup_bound(st, ctx, name).or_else(|| builtin(name))
    }

    /// As `lookup`, for a name the caller holds (the read log shares it, no copy).
    pub fn lookup_named(&self, st: &State, ctx: &Ctx, name: &Name) -> Option<Value> {
        self.lookup_in_scopes(ctx, name, &|id| st.get_named(id, name)).or_else(|| builtin(name))
    }

    /// The value a scope of the path binds to `name` (the builtins left out).
    pub(super) fn lookup_bound(&self, st: &State, ctx: &Ctx, name: &str) -> Option<Value> {
        self.lookup_in_scopes(ctx, name, &|id| st.get_var(id, name))
    }

    /// The scope chain from `ctx.scope` up, each scope read with `get` (which logs the read).
    fn lookup_in_scopes<'s>(&self, ctx: &Ctx, name: &str, get: &dyn Fn(ObjId) -> &'s Obj) -> Option<Value> {
        let mut scope = Some(ctx.scope);
        let mut guard = 0;
        while let Some(id) = scope {
            match get(id) {
                Obj::Scope { vars, parent } => {
                    if let Some(v) = vars.get(name) {
                        return Some(v.clone());
                    }
                    scope = *parent;
                }
                _ => break,
            }
            guard += 1;
            if guard > 256 {
                break;
            }
        }
        None
    }

    pub fn set_var(&self, st: &mut State, ctx: &Ctx, name: &Name, v: Value) {
        let scope = if ctx.globals.iter().any(|g| g == name) { ctx.module_scope } else { ctx.scope };
        // a store depends on nothing it overwrites: only the variable is logged (a call that
        // writes an object that existed before is not summarised anyway, and a loop item is
        // skipped only when its iteration left the state as it was)
        if let Obj::Scope { vars, .. } = st.get_mut_var(scope, name) {
            vars.insert(name.clone(), v);
        }
    }

    pub(super) fn module_scope_of(&self, st: &State, mut scope: ObjId) -> ObjId {
        for _ in 0..256 {
            // the empty name is no variable: this reads only the scope's parent link
            match st.get_var(scope, "") {
                Obj::Scope { parent: Some(p), .. } => scope = *p,
                _ => break,
            }
        }
        scope
    }

    /// Bind the name `n` (at `span`) to `v` on `st`, as an assignment does.
    pub(super) fn assign_name(&mut self, n: &Name, span: Span, v: Value, st: &mut State, ctx: &Ctx) {
        self.log_shape(st, span, n, &v);
        // (a local of the zoo's embedded code, `layers` of torchvision's builders, is no name
        // the user gave nor one torch knows the layer by)
        let v = if crate::engine::modules::is_embedded(span) { v } else { self.label_value(st, v, n) };
        self.set_var(st, ctx, n, v);
    }

    pub fn assign(&mut self, t: &Target, v: Value, st: State, ctx: &Ctx) -> Vec<State> {
        match t {
            Target::Name(n, span) => {
                let mut st = st;
                self.assign_name(n, *span, v, &mut st, ctx);
                vec![st]
            }
            Target::Attr(obj, name, span) => {
                self.log_shape(&st, *span, name, &v);
                let mut out = Vec::new();
                for (mut st, o) in self.eval(obj, st, ctx) {
                    let v = self.label_value(&mut st, v.clone(), name);
                    if self.wants(EventKind::AttrStore) {
                        self.set_attr(&mut st, &o, name, v.clone());
                        self.emit(&Event::AttrStore { object: &o, attr: name, value: &v, span: *span }, &st, *span);
                    } else {
                        self.set_attr(&mut st, &o, name, v);
                    }
                    out.push(st);
                }
                out
            }
            Target::Subscript(obj, idx, span) => {
                let mut out = Vec::new();
                for (st, o) in self.eval(obj, st, ctx) {
                    for (mut st, i) in self.eval(idx, st, ctx) {
                        self.set_item(&mut st, &o, &i, v.clone(), *span);
                        out.push(st);
                    }
                }
                out
            }
            Target::Tuple(items, star, _) => {
                let mut st = st;
                let elems = match &v {
                    Value::Tensor(_) => None,
                    _ => self.iterate(&mut st, &v, t.span()),
                };
                let parts: Vec<Value> = match (elems, star) {
                    (Some(e), None) if e.len() == items.len() => e,
                    (Some(e), Some(k)) if e.len() + 1 >= items.len() => {
                        let after = items.len() - k - 1;
                        let mut parts: Vec<Value> = e[..*k].to_vec();
                        let mid = e[*k..e.len() - after].to_vec();
                        let lid = st.alloc(Obj::List(mid));
                        parts.push(Value::Ref(lid));
                        parts.extend(e[e.len() - after..].iter().cloned());
                        parts
                    }
                    (Some(_), _) => {
                        // unpacking a sequence of the wrong length raises: the path ends
                        return Vec::new();
                    }
                    (None, _) => match models::unpack(self, &mut st, &v, items.len()) {
                        Some(parts) if star.is_none() => parts,
                        _ => vec![Value::Unknown; items.len()],
                    },
                };
                let mut states = vec![st];
                for (t, p) in items.iter().zip(parts) {
                    let mut next = Vec::new();
                    for st in states {
                        next.extend(self.assign(t, p.clone(), st, ctx));
                    }
                    states = next;
                }
                states
            }
            Target::Unknown(_) => vec![st],
        }
    }

    fn log_shape(&mut self, st: &State, span: Span, name: &str, v: &Value) {
        if self.span_log.is_some() {
            self.log_span(st, span, Some(name), v);
        }
        if self.shape_log.is_none() || span.file != FileId::MAIN {
            return;
        }
        let Value::Tensor(t) = v else { return };
        let dtype = match t.dtype {
            Some(d) => format!(" {d:?}").to_lowercase(),
            None => String::new(),
        };
        let text = format!("{name}: {}{dtype}", crate::models::ctx::ModelCtx::show_shape(self, st, &t.shape));
        let line = self.line(span);
        if let Some(log) = self.shape_log.as_mut() {
            log.entry(line).or_default().insert(text);
        }
    }

    /// Give a freshly built layer the name it is assigned to ("fc2"), and the members of a
    /// container (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`) theirs under it, by index
    /// or key, each with the line that built it: `net[2] (line 11)`, `heads.cls (line 14)`.
    fn label_value(&mut self, st: &mut State, v: Value, name: &Name) -> Value {
        if let Value::Ref(id) = &v {
            self.label_module(st, *id, name, 0);
        }
        v
    }

    fn label_module(&mut self, st: &mut State, id: ObjId, name: &str, depth: usize) {
        match st.get(id) {
            Obj::Layer(l) if l.label.is_none() => {
                let place = self.place(l.span);
                if let Obj::Layer(l) = st.get_mut(id) {
                    l.label = Some(Rc::from(format!("{name} ({place})")));
                }
            }
            // (a container nested a few deep at most: `Sequential(Sequential(...), ...)`)
            Obj::Container { items, .. } if depth < 4 => {
                let members: Vec<(String, ObjId)> = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (k, v))| match v {
                        Value::Ref(c) => Some((k.as_deref().map_or_else(|| format!("{name}[{i}]"), |k| format!("{name}.{k}")), *c)),
                        _ => None,
                    })
                    .collect();
                for (n, c) in members {
                    self.label_module(st, c, &n, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn set_item(&mut self, st: &mut State, o: &Value, i: &Value, v: Value, _span: Span) {
        // (a store into an unknown object may change any test a path remembers: `taken`)
        if o.is_unknown() {
            st.taken.forget();
        }
        if let Value::Tensor(t) = o {
            // `x[i] = v` writes into x and every view of it: known values are stale, x is part
            // of autograd's graph when v is, and a graph that saved x breaks (SHP310)
            // (`outputs[t] = decoder(...)` keeps v's graph in x, which no name the evaluation
            // rules follow holds: an evaluation pass running it is not judged, SHP306/SHP307)
            let may_carry = |t: &Tensor| !matches!(t.grad, Grad::Untracked(..));
            if crate::models::torch::mode::holds(st, &v, &may_carry) {
                for fr in self.eval_frames.iter_mut() {
                    fr.lost = true;
                }
            }
            st.forget_values();
            st.forget_grads();
            if let Some(at) = t.saved.as_ref().and_then(|s| s.storage) {
                st.break_saved(at, _span);
            }
        }
        // a key stored into a loaded checkpoint: its reads are no longer judged (SHP312)
        crate::models::torch::checkpoint::open(st, o);
        if let Value::Ref(id) = o {
            let key = i.clone();
            match st.get_mut(*id) {
                Obj::List(items) => {
                    match key.as_const_int() {
                        Some(k) => {
                            let n = items.len() as i128;
                            let k = if k < 0 { k + n } else { k };
                            if k >= 0 && k < n {
                                items[k as usize] = v;
                            }
                        }
                        None => {
                            for it in items.iter_mut() {
                                *it = Value::Unknown;
                            }
                        }
                    }
                }
                Obj::Dict(items) => {
                    if matches!(key, Value::Str(Some(_)) | Value::Int(_) | Value::Bool(_)) && key.as_const_int().is_some() || key.as_str().is_some() {
                        if let Some(e) = items.iter_mut().find(|(k, _)| *k == key) {
                            e.1 = v;
                        } else {
                            items.push((key, v));
                        }
                    } else {
                        items.clear();
                        items.push((Value::Unknown, Value::Unknown));
                    }
                }
                // `heads["topic"] = nn.Linear(...)`: replaces the module under that key
                Obj::Container { items, kind: ContainerKind::ModuleDict, .. } => match key.as_str() {
                    Some(k) => match items.iter_mut().find(|(n, _)| n.as_deref() == Some(k)) {
                        Some(e) => e.1 = v,
                        None => items.push((Some(Rc::from(k)), v)),
                    },
                    None => items.iter_mut().for_each(|it| it.1 = Value::Unknown),
                },
                // `model.classifier[6] = nn.Linear(4096, 10)`: the module in that slot is replaced
                Obj::Container { items, kind: ContainerKind::Sequential | ContainerKind::ModuleList, .. } => {
                    let n = items.len() as i128;
                    match key.as_const_int().map(|k| if k < 0 { k + n } else { k }) {
                        Some(k) if (0..n).contains(&k) => items[k as usize].1 = v,
                        // out of range: torch raises IndexError; nothing is claimed
                        Some(_) => {}
                        None => items.iter_mut().for_each(|it| it.1 = Value::Unknown),
                    }
                }
                _ => {}
            }
        }
    }
}
