//! The code registry: one source of truth for codes, names, message templates and docs.
//!
//! Each rule lives in its own file under a family folder and exports a `RULE` constant; this
//! module lists them all. Codes are never reused: a removed rule stays here with
//! `RuleStatus::Removed`.

pub mod device_dtype;
pub mod events;
pub mod may_fail;
pub mod violation;
pub mod meta;
pub mod shape;
pub mod training;

/// A rule family, named by the first digit of its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `SHP0xx`: the analyzer itself.
    Meta,
    /// `SHP1xx`: definite tensor shape errors.
    Shape,
    /// `SHP2xx`: device and dtype errors.
    DeviceDtype,
    /// `SHP3xx`: training-loop and autograd bugs.
    TrainingLoop,
    /// `SHP9xx`: opt-in "may fail" diagnostics.
    MayFail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleStatus {
    Stable,
    Preview,
    Removed,
}

/// A rule's static metadata.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// `SHP101`.
    pub code: &'static str,
    /// kebab-case name of the bad pattern (`linear-input-mismatch`).
    pub name: &'static str,
    pub family: Family,
    pub status: RuleStatus,
    /// A one-line plain description of the rule (SARIF `shortDescription`, the README table).
    pub summary: &'static str,
    /// The templates of the messages its typed violation renders (`violation::Violation`).
    pub messages: &'static [&'static str],
    /// Markdown documentation in ruff's section order.
    pub doc: &'static str,
    /// Opt-in rules are off unless selected explicitly.
    pub default_enabled: bool,
    /// Torch raises at the reported line (every shape and device rule, a backward torch
    /// refuses). False for the patterns that run and train the wrong thing (SHP301-SHP308) and
    /// for torch's warnings (SHP901): a `try` around them hides nothing, since nothing is
    /// raised for it to catch.
    pub raises: bool,
}

/// Every rule, sorted by code.
pub static ALL: &[&Rule] = &[
    &meta::internal_error::RULE,
    &meta::analysis_incomplete::RULE,
    &shape::matmul_shape_mismatch::RULE,
    &shape::broadcast_shape_mismatch::RULE,
    &shape::reshape_size_mismatch::RULE,
    &shape::concat_shape_mismatch::RULE,
    &shape::dim_out_of_range::RULE,
    &shape::layer_input_rank_mismatch::RULE,
    &shape::layer_channel_mismatch::RULE,
    &shape::loss_target_mismatch::RULE,
    &shape::output_size_too_small::RULE,
    &shape::index_out_of_range::RULE,
    &shape::invalid_shape_argument::RULE,
    &shape::view_non_contiguous::RULE,
    &shape::annotation_shape_mismatch::RULE,
    &device_dtype::device_mismatch::RULE,
    &device_dtype::dtype_mismatch::RULE,
    &training::stale_gradients::RULE,
    &training::never_stepped::RULE,
    &training::discarded_gradients::RULE,
    &training::clip_order::RULE,
    &training::graph_kept_across_iterations::RULE,
    &training::eval_with_grad::RULE,
    &training::train_eval_mode::RULE,
    &training::probabilities_as_logits::RULE,
    &training::backward_without_graph::RULE,
    &training::inplace_modifies_saved::RULE,
    &training::scalar_required::RULE,
    &training::checkpoint_key_never_saved::RULE,
    &training::plateau_step_without_metric::RULE,
    &training::backward_freed_graph::RULE,
    &training::closure_required::RULE,
    &may_fail::loss_target_broadcast::RULE,
    &may_fail::may_fail_for_some_values::RULE,
];

pub fn by_code(code: &str) -> Option<&'static Rule> {
    ALL.iter().copied().find(|r| r.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_sorted_and_well_formed() {
        let codes: Vec<&str> = ALL.iter().map(|r| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(codes, sorted, "registry must be sorted with unique codes");
        for r in ALL {
            assert!(r.code.len() == 6 && r.code.starts_with("SHP"), "{}", r.code);
            assert!(r.code[3..].chars().all(|c| c.is_ascii_digit()), "{}", r.code);
            let digit = &r.code[3..4];
            let expected = match r.family {
                Family::Meta => "0",
                Family::Shape => "1",
                Family::DeviceDtype => "2",
                Family::TrainingLoop => "3",
                Family::MayFail => "9",
            };
            assert_eq!(digit, expected, "{} is in the wrong family", r.code);
            assert!(r.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{}", r.name);
            for section in ["## What it does", "## Why is this bad?", "## Example"] {
                assert!(r.doc.contains(section), "{} doc lacks {section}", r.code);
            }
        }
    }

    #[test]
    fn every_rule_renders_a_message_template_and_describes_itself_plainly() {
        for r in ALL {
            assert!(!r.messages.is_empty(), "{} has no message template (declare its violation with violation!)", r.code);
            for m in r.messages {
                assert!(!m.trim().is_empty(), "{} has an empty message template", r.code);
            }
            assert!(!r.summary.trim().is_empty(), "{} has no summary", r.code);
            assert!(!r.summary.contains('{'), "{}'s summary is a template, not a description: {}", r.code, r.summary);
        }
    }
}
