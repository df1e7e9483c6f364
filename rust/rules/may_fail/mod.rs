//! `SHP9xx`: opt-in diagnostics (off by default; `--may-fail` / `may-fail = true` makes the core
//! produce them, and they must be selected, e.g. `--extend-select SHP9` under flake8): lines that
//! do not raise but are almost certainly wrong, or fail only on some paths.
pub mod loss_target_broadcast;
pub mod may_fail_for_some_values;
