//! Symbolic dimensions.
