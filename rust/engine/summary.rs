//! `shape-lint summary`: a torchinfo-like table of each model call the script makes, computed
//! without running anything. Off unless asked (`Interp::summary` is `None`: one test per call).
//!
//! A *model call* is a call of a module that is a user `nn.Module` (or a container:
//! `nn.Sequential`, ...) made while no other model call is running. During it, each call of a
//! library layer is recorded with its output shape and parameter count, in call order: the leaf
//! modules torch's forward hooks see. The total counts the parameters of every module the model
//! holds. What the analysis cannot tell (an unknown attribute of a module, a layer whose
//! parameters are not modelled, a call that forks into several outcomes) makes the record
//! incomplete (`complete: false`, with the reasons), never a guess.

use std::collections::BTreeMap;

use super::interp::{Interp, Vals};
use crate::models;
use crate::models::torch::layers::params;
use crate::value::*;

/// One dimension as shown: a constant, or a symbolic (or unknown: `?`) size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimText {
    Int(i128),
    Sym(String),
}

/// One leaf layer call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerCall {
    /// The qualified name in the model (`features.0`), as `named_modules()` gives it.
    pub name: Option<String>,
    /// torch's class name (`Conv2d`).
    pub kind: String,
    /// The output's shape when it is one tensor.
    pub output_shape: Option<Vec<DimText>>,
    pub params: Option<i128>,
    /// How deep the layer sits in the model (1: an attribute of the model).
    pub depth: usize,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCall {
    pub model: String,
    pub output_shape: Option<Vec<DimText>>,
    pub total_params: Option<i128>,
    pub layers: Vec<LayerCall>,
    /// Why the record may differ from what torch's hooks see (empty: complete).
    pub incomplete: Vec<String>,
    /// The 1-based line of the call.
    pub line: usize,
}

/// What the interpreter keeps while recording.
#[derive(Debug, Default)]
pub struct SummaryLog {
    pub calls: Vec<ModelCall>,
    /// Module calls in progress (the open model call's and those inside it).
    depth: usize,
    open: Option<(ModelCall, BTreeMap<ObjId, String>)>,
}

/// What `begin` found out about the callee, for `end`.
pub struct Begun {
    opened: bool,
    /// A leaf: its type and parameter count (a library layer, or a user module holding no
    /// module).
    leaf: Option<(String, Option<i128>, bool)>,
    id: ObjId,
}

impl Interp<'_> {
    /// Before a call of `f`: a module call is counted, and one outside any model call opens a
    /// record. `None` when not recording or `f` is not a module.
    pub fn summary_begin(&mut self, st: &State, f: &Value, span: crate::ir::Span) -> Option<Begun> {
        let log = self.summary.as_ref()?;
        let Value::Ref(id) = f else { return None };
        let id = *id;
        if !models::is_module(self, st, id) {
            return None;
        }
        let depth = log.depth;
        let is_layer = matches!(st.get(id), Obj::Layer(_));
        let leaf = match st.get(id) {
            Obj::Layer(l) => Some((l.kind.to_string(), params::count(l), params::has_children(l))),
            Obj::Instance { class, attrs } if depth > 0 => {
                let child = attrs.values().any(|v| matches!(v, Value::Ref(c) if models::is_module(self, st, *c)));
                let known = !attrs.values().any(|v| v.is_unknown() || matches!(v, Value::Tensor(t) if t.registered));
                let name = match st.get(*class) {
                    Obj::Class { name, .. } => name.to_string(),
                    _ => "?".into(),
                };
                (!child).then(|| (name, known.then_some(0), false))
            }
            _ => None,
        };
        let mut opened = false;
        if depth == 0 && !is_layer {
            let model = match st.get(id) {
                Obj::Instance { class, .. } => match st.get(*class) {
                    Obj::Class { name, .. } => name.to_string(),
                    _ => "?".into(),
                },
                Obj::Container { kind, .. } => format!("{kind:?}"),
                _ => "?".into(),
            };
            let mut names = BTreeMap::new();
            let mut incomplete = Vec::new();
            let total = self.walk_modules(st, id, String::new(), &mut names, &mut incomplete);
            let line = self.line(span);
            let call = ModelCall { model, output_shape: None, total_params: total, layers: Vec::new(), incomplete, line };
            self.summary.as_mut()?.open = Some((call, names));
            opened = true;
        }
        if depth == 0 && !opened {
            return None;
        }
        self.summary.as_mut()?.depth += 1;
        Some(Begun { opened, leaf, id })
    }

    /// After the call `begin` saw: a layer's call is recorded, a model call closed.
    pub fn summary_end(&mut self, b: Begun, out: &Vals) {
        let shape = match &out[..] {
            [(st, Value::Tensor(t))] => Some(self.dims_text(st, &st.resolve(&t.shape))),
            _ => None,
        };
        let Some(log) = self.summary.as_mut() else { return };
        log.depth = log.depth.saturating_sub(1);
        let Some((call, names)) = log.open.as_mut() else { return };
        if out.len() > 1 {
            call.incomplete.push(format!("a call of {} has {} outcomes", call.model, out.len()));
        }
        if let Some((kind, params, children)) = b.leaf {
            if children {
                call.incomplete.push(format!("{kind} holds modules not followed"));
            }
            let name = names.get(&b.id).cloned();
            if name.is_none() {
                call.incomplete.push(format!("a {kind} not held by the model"));
            }
            if params.is_none() {
                call.incomplete.push(format!("the parameters of {kind} are not known"));
            }
            let depth = name.as_ref().map_or(1, |n| n.split('.').count());
            let shape = shape.clone().flatten();
            call.layers.push(LayerCall { name, kind, output_shape: shape, params, depth });
        }
        if b.opened {
            let (mut call, _) = log.open.take().unwrap();
            call.output_shape = shape.flatten();
            if out.is_empty() {
                call.incomplete.push("the call raises".into());
            }
            log.calls.push(call);
        }
    }

    /// A shape as shown: `None` for an unknown rank.
    fn dims_text(&self, _st: &State, s: &Shape) -> Option<Vec<DimText>> {
        if s.prefix.is_some() {
            return None;
        }
        Some(
            s.dims
                .iter()
                .map(|d| match &d.v {
                    Some(p) => match p.as_const() {
                        Some(c) => DimText::Int(c),
                        None => DimText::Sym(p.display(&self.syms)),
                    },
                    None => DimText::Sym("?".into()),
                })
                .collect(),
        )
    }

    /// Name every module held by the module `id` (prefix `prefix`) and count its parameters,
    /// as `named_modules()` and `parameters()` do. `None` when some count is not known.
    fn walk_modules(&self, st: &State, id: ObjId, prefix: String, names: &mut BTreeMap<ObjId, String>, why: &mut Vec<String>) -> Option<i128> {
        let mut total = Some(0i128);
        let mut todo = vec![(id, prefix)];
        let mut seen = std::collections::BTreeSet::new();
        let join = |p: &str, k: &str| if p.is_empty() { k.to_string() } else { format!("{p}.{k}") };
        while let Some((id, prefix)) = todo.pop() {
            if seen.len() > 4096 || !seen.insert(id) {
                continue;
            }
            if !prefix.is_empty() {
                names.entry(id).or_insert_with(|| prefix.clone());
            }
            match st.get(id) {
                Obj::Layer(l) => match params::count(l) {
                    Some(n) => total = total.map(|t| t + n),
                    None => {
                        why.push(format!("the parameters of {} are not known", l.kind));
                        total = None;
                    }
                },
                Obj::Container { items, attrs, .. } => {
                    for (i, (k, v)) in items.iter().enumerate() {
                        if let Value::Ref(c) = v {
                            let key = k.as_deref().map(str::to_string).unwrap_or_else(|| i.to_string());
                            todo.push((*c, join(&prefix, &key)));
                        }
                    }
                    if !attrs.is_empty() {
                        why.push("a container with attributes".into());
                        total = None;
                    }
                }
                Obj::Instance { attrs, .. } => {
                    for (k, v) in attrs.iter().rev() {
                        match v {
                            Value::Ref(c) if models::is_module(self, st, *c) => {
                                let name = if &**k == models::LAYER { prefix.clone() } else { join(&prefix, k) };
                                todo.push((*c, name));
                            }
                            Value::Tensor(t) if t.registered => {
                                // a parameter or a buffer: not told apart here
                                why.push(format!("a registered tensor `{k}`"));
                                total = None;
                            }
                            Value::Unknown => {
                                why.push(format!("an unknown attribute `{k}`"));
                                total = None;
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        total
    }
}
