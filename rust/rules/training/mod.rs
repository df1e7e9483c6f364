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
