//! `torchvision.models`: the classification model zoo as modules the engine runs like user
//! code.
//!
//! The architectures are Python (`zoo.py`, torchvision's classes reduced to what shapes depend
//! on), embedded in the binary as a source root of the engine's module table (`engine/modules.rs`). A constructor call runs that module's definitions in a
//! fresh scope and calls the factory, so the result is an ordinary instance: `model.fc`,
//! `model.classifier[6]`, `model.conv1 = nn.Conv2d(1, ...)` and `model.fc.in_features` work
//! as they do on user modules. A check that fails inside the embedded code is recorded at the
//! innermost call in the user's file, typically `model(x)`.
//!
//! `weights=`, `pretrained=` and `progress=` are ignored (weights never change shapes); with
//! weights *and* a `num_classes` other than 1000 torchvision raises, so the result is Unknown.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::ModelCtx;
use crate::value::*;

/// The architectures, in Python.
pub const SOURCE: &str = include_str!("zoo.py");

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

/// `torchvision.models.<path>(...)`: a model instance, or Unknown for anything not modelled.
pub fn construct(cx: &mut dyn ModelCtx, st: State, path: &str, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
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
    let args: Vec<(Name, Value)> = num_classes.map(|n| (Rc::from("num_classes"), n)).into_iter().collect();
    cx.call_embedded(st, "torchvision.models", name, Vec::new(), args, span)
}

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[crate::models::registry::Decl] = &[];
