//! `SHP3xx`: training-loop and autograd bugs: the loss, the gradients, the optimizer and the
//! train/eval mode followed through the loop.
pub mod backward_freed_graph;
pub mod backward_without_graph;
pub mod checkpoint_key_never_saved;
pub mod clip_order;
pub mod closure_required;
pub mod discarded_gradients;
pub mod graph_kept_across_iterations;
pub mod inplace_modifies_saved;
pub mod never_stepped;
pub mod plateau_step_without_metric;
pub mod probabilities_as_logits;
pub mod scalar_required;
pub mod stale_gradients;
pub mod eval_with_grad;
pub mod train_eval_mode;

use crate::rules::events::{Gradients, RuleCtx};

/// The optimizer of an [`Event::Gradients`](crate::rules::events::Event::Gradients), for a
/// message: `the optimizer built at line 12`.
pub(crate) fn optimizer_label(cx: &dyn RuleCtx, g: &Gradients) -> String {
    match g.built {
        Some(s) => format!("the optimizer built at {}", cx.place(s)),
        None => "the optimizer".to_string(),
    }
}

/// A new program's run begins: the rules keep nothing of the last one.
pub fn begin_program() {
    discarded_gradients::begin_program();
}
