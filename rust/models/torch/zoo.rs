//! `torchvision.models`: the classification model zoo as modules the engine runs like user
//! code.
//!
//! The architectures are Python (`zoo.py`, torchvision's classes reduced to what shapes depend
//! on), embedded in the binary and lowered once per analysis thread into their own span and
//! function-id ranges (`EMBEDDED_BASE`). A constructor call runs that module's definitions in a
//! fresh scope and calls the factory, so the result is an ordinary instance: `model.fc`,
//! `model.classifier[6]`, `model.conv1 = nn.Conv2d(1, ...)` and `model.fc.in_features` work
//! as they do on user modules. A check that fails inside the embedded code is recorded at the
//! innermost call in the user's file (`Interp::user_span`), typically `model(x)`.
//!
//! `weights=`, `pretrained=` and `progress=` are ignored (weights never change shapes); with
//! weights *and* a `num_classes` other than 1000 torchvision raises, so the result is Unknown.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::engine::interp::{Ctx, Flow, Interp, Vals};
use crate::value::*;
use crate::ir::{self, Name, Span};

/// The architectures, in Python.
const SOURCE: &str = include_str!("zoo.py");

/// Spans at or above this offset belong to embedded code, not to the user's file.
pub const EMBEDDED_BASE: u32 = 1 << 31;
/// Function ids of embedded code start here (user files number theirs from 1).
const ID_BASE: u32 = 1 << 30;

/// The constructors `zoo.py` defines, by their `torchvision.models` names.
pub const MODELS: &[&str] = &[
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
    "alexnet",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "efficientnet_b0",
    "squeezenet1_0",
    "squeezenet1_1",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
];

thread_local! {
    static MODULE: Rc<ir::Module> = {
        let parsed = crate::parse::parse(SOURCE);
        Rc::new(ir::lower::lower_module_at(&parsed, EMBEDDED_BASE, ID_BASE))
    };
}

/// Whether a span lies in embedded library code.
pub fn is_embedded(span: Span) -> bool {
    span.start >= EMBEDDED_BASE
}

/// `torchvision.models.<path>(...)`: a model instance, or Unknown for anything not modelled.
pub fn construct(interp: &mut Interp, st: State, path: &str, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    // `torchvision.models.resnet.resnet18` is the same function
    let name = path.rsplit('.').next().unwrap_or(path);
    if !MODELS.contains(&name) {
        return vec![(st, Value::Unknown)];
    }
    let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v.clone());
    let num_classes = kw("num_classes");
    let weighted = [kw("weights"), kw("pretrained")].into_iter().flatten().any(|w| !matches!(w, Value::None | Value::Bool(false)));
    if weighted && num_classes.as_ref().is_some_and(|n| n.as_const_int() != Some(1000)) {
        // torchvision refuses a head size other than the weights' (ValueError)
        return vec![(st, Value::Unknown)];
    }
    if kwargs.iter().any(|(k, _)| !matches!(&**k, "weights" | "pretrained" | "progress" | "num_classes")) {
        // other architecture options (dropout, width, ...) are not modelled
        return vec![(st, Value::Unknown)];
    }
    let module = MODULE.with(Rc::clone);
    let mut st = st;
    let scope = st.alloc(Obj::Scope { vars: BTreeMap::new(), parent: None });
    let ctx = Ctx { scope, module_scope: scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
    let mut defined = interp.block(&module.body, st, &ctx);
    if defined.len() != 1 || defined[0].1 != Flow::Normal {
        // the definitions always run straight through; anything else (a budget ran out) is Unknown
        return defined.into_iter().take(1).map(|(s, _)| (s, Value::Unknown)).collect();
    }
    let (st, _) = defined.remove(0);
    let Some(factory) = interp.lookup(&st, &ctx, name) else { return vec![(st, Value::Unknown)] };
    let args: Vec<(Name, Value)> = num_classes.map(|n| (Rc::from("num_classes"), n)).into_iter().collect();
    interp.call(factory, Vec::new(), args, st, span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_source_parses_and_defines_every_model() {
        let parsed = crate::parse::parse(SOURCE);
        assert!(!parsed.has_syntax_errors());
        let module = ir::lower::lower_module_at(&parsed, EMBEDDED_BASE, ID_BASE);
        let defined: Vec<&str> = module
            .body
            .iter()
            .filter_map(|s| match &s.kind {
                ir::StmtKind::FunctionDef(f) => Some(&*f.name),
                _ => None,
            })
            .collect();
        for m in MODELS {
            assert!(defined.contains(m), "zoo.py does not define {m}");
        }
        assert!(module.body.iter().all(|s| is_embedded(s.span)));
    }
}
