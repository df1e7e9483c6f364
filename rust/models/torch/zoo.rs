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
use crate::models::registry::{self, Api, Decl};
use crate::rules::shape as r;
use crate::rules::Rule;
use crate::value::*;

/// The architectures, in Python.
pub const SOURCE: &str = include_str!("zoo.py");


/// The registry entry of `torchvision.models.<name>`, also under the submodule that defines
/// it (`torchvision.models.resnet.resnet18`); another submodule's function of the same name
/// (`torchvision.models.quantization.resnet18`) is a different model and not modelled.
pub fn resolve(path: &str) -> Option<&'static Api> {
    let (prefix, last) = path.rsplit_once('.')?;
    if let Some(api) = registry::lookup_in(prefix, last) {
        return Some(api);
    }
    let sub = prefix.strip_prefix("torchvision.models.")?;
    let api = registry::lookup_in("torchvision.models", last)?;
    (defining_module(last) == Some(sub)).then_some(api)
}

/// The submodule of `torchvision.models` that defines a constructor.
pub fn defining_module(name: &str) -> Option<&'static str> {
    let prefixes: [(&str, &str); 8] = [
        ("resnet", "resnet"),
        ("vgg", "vgg"),
        ("alexnet", "alexnet"),
        ("mobilenet_v2", "mobilenetv2"),
        ("mobilenet_v3", "mobilenetv3"),
        ("efficientnet", "efficientnet"),
        ("squeezenet", "squeezenet"),
        ("densenet", "densenet"),
    ];
    MODELS.contains(&name).then(|| prefixes.iter().find(|(p, _)| name.starts_with(p)).map(|(_, m)| *m))?
}

/// `torchvision.models.<name>(...)`: a model instance, or Unknown for anything not modelled.
pub fn construct(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Some(api) = resolve(path) else { return vec![(st, Value::Unknown)] };
    // positional arguments (the legacy `pretrained`) and other architecture options (dropout,
    // width, ...) are not modelled
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v.clone());
    let num_classes = kw("num_classes");
    let weighted = [kw("weights"), kw("pretrained")].into_iter().flatten().any(|w| !matches!(w, Value::None | Value::Bool(false)));
    if weighted && num_classes.as_ref().is_some_and(|n| n.as_const_int() != Some(1000)) {
        // torchvision refuses a head size other than the weights' (ValueError)
        return vec![(st, Value::Unknown)];
    }
    let args: Vec<(Name, Value)> = num_classes.map(|n| (Rc::from("num_classes"), n)).into_iter().collect();
    cx.call_embedded(st, "torchvision.models", api.short_name(), Vec::new(), args, span)
}

/// One constructor's entry: `weights`/`pretrained` are read (with a `num_classes` other than
/// 1000 torchvision refuses weights), `progress` cannot change the model.
macro_rules! zoo {
    ($($name:literal),* $(,)?) => {
        /// The constructors `zoo.py` defines, by their `torchvision.models` names.
        pub const MODELS: &[&str] = &[$($name),*];

        /// The APIs this family models, for the registry (`models/registry.rs`): one per entry
        /// of `MODELS`.
        pub const APIS: &[Decl] = &[$(Decl::module(concat!("torchvision.models.", $name), "*, weights=None, ~progress=True, pretrained=False, num_classes=1000", "x").checks(CHECKS)),*];
    };
}

/// What calling a zoo model can raise that the layers inside it check.
const CHECKS: &[&Rule] = &[&r::layer_channel_mismatch::RULE, &r::layer_input_rank_mismatch::RULE, &r::output_size_too_small::RULE, &r::matmul_shape_mismatch::RULE];

zoo![
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_declared_and_resolves_under_its_submodule() {
        let declared: Vec<&str> = APIS.iter().map(|d| d.name.strip_prefix("torchvision.models.").unwrap()).collect();
        assert_eq!(declared, MODELS);
        for m in MODELS {
            let sub = defining_module(m).unwrap_or_else(|| panic!("{m}: no submodule"));
            let want = format!("torchvision.models.{m}");
            assert_eq!(resolve(&want).map(|a| a.name), Some(want.as_str()));
            assert_eq!(resolve(&format!("torchvision.models.{sub}.{m}")).map(|a| a.name), Some(want.as_str()));
            assert!(resolve(&format!("torchvision.models.quantization.{m}")).is_none());
        }
        assert!(resolve("torchvision.models.vit_b_16").is_none());
    }
}
