//! Containers (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`) and the pass-throughs
//! `nn.Parameter` and `nn.DataParallel`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Module, Nn};
use crate::ir::Span;
use crate::models::ctx::ModelCtx;
use crate::models::registry::Decl;
use crate::value::*;

pub(super) const NN: &[Nn] = &[
    // a Sequential of modules, or of one (ordered) dict of them
    Nn::module(Decl::module("torch.nn.Sequential", "*args", "input"), Module::Container(ContainerKind::Sequential)),
    // ModuleList and ModuleDict have no forward
    Nn::module(Decl::module("torch.nn.ModuleList", "modules=None", ""), Module::Container(ContainerKind::ModuleList)),
    Nn::module(Decl::module("torch.nn.ModuleDict", "modules=None", ""), Module::Container(ContainerKind::ModuleDict)),
    // a tensor, not a module: `nn.Parameter(t)` is `t` (`requires_grad` is read: torch raises
    // for an integer tensor that requires grad)
    Nn::module(Decl::function("torch.nn.Parameter", "data=None, requires_grad=True"), Module::Parameter),
    // `nn.DataParallel(m)` is `m` (its calls are the module's): the devices and the scatter dim
    // split the batch and gather it back
    Nn::module(Decl::module("torch.nn.DataParallel", "module, ~device_ids=None, ~output_device=None, ~dim=0", "*inputs, **kwargs"), Module::Wrapper),
];

/// `nn.Sequential(*modules)`, `nn.ModuleList(modules)`, `nn.ModuleDict(modules)`.
pub(super) fn construct(cx: &mut dyn ModelCtx, st: State, ck: ContainerKind, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    let items: Option<Vec<(Option<Rc<str>>, Value)>> = match (ck, args) {
        (ContainerKind::Sequential, [Value::Ref(id)]) if matches!(st.get(*id), Obj::Dict(_)) => match st.get(*id) {
            Obj::Dict(d) => d.iter().map(|(k, v)| k.as_str().map(|k| (Some(Rc::from(k)), v.clone()))).collect(),
            _ => None,
        },
        (ContainerKind::Sequential, _) => Some(args.iter().map(|a| (None, a.clone())).collect()),
        (_, []) => Some(Vec::new()),
        (ContainerKind::ModuleList, [it]) => cx.iterate(&mut st, it, span).map(|v| v.into_iter().map(|x| (None, x)).collect()),
        (ContainerKind::ModuleDict, [Value::Ref(id)]) => match st.get(*id) {
            Obj::Dict(d) => d.iter().map(|(k, v)| k.as_str().map(|k| (Some(Rc::from(k)), v.clone()))).collect(),
            _ => None,
        },
        _ => None,
    };
    let Some(items) = items else { return vec![(st, Value::Unknown)] };
    let id = st.alloc(Obj::Container { kind: ck, items, attrs: BTreeMap::new() });
    vec![(st, Value::Ref(id))]
}
