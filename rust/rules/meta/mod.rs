//! `SHP0xx`: diagnostics about the analyzer itself.
pub mod internal_error;
pub mod analysis_incomplete;
