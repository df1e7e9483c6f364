//! `torch.optim`: an optimizer is an object that exists (`optimizer is not None` holds, so a
//! helper's `training = optimizer is not None` decides its `model.train(training)`). Nothing
//! else about it is modelled yet: its attributes and methods (`step`, `zero_grad`,
//! `param_groups`) are Unknown, and a user subclass of `torch.optim.Optimizer` is not built.
//! The optimizer's state through a training loop (SHP3xx) grows here.

use crate::value::*;

/// The optimizer classes of `torch.optim` (torch 2.11).
const OPTIMIZERS: &[&str] = &[
    "ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD",
    "SparseAdam",
];

/// `torch.optim.<Class>(...)`: an optimizer object, or None when `path` is not an optimizer
/// class. The arguments are not checked (torch's own checks of `lr` and the parameter groups
/// end the run before any tensor is computed).
pub fn construct(st: &mut State, path: &str) -> Option<Value> {
    let name = path.strip_prefix("torch.optim.")?;
    if !OPTIMIZERS.contains(&name) {
        return None;
    }
    Some(super::data::ns(st, "Optimizer", Vec::new()))
}
