//! shape-lint: a static checker for tensor shape errors and PyTorch training bugs.
//!
//! Data flows one way: `parse` (source text to AST) → `ir` (lowering to a small kernel
//! language) → `engine` (abstract interpretation with symbolic shapes, using the `torch`
//! library models and the `shape` decision procedures) → `diagnostics` (findings, ranked and
//! deduplicated). `rules` is the code registry. `python` holds the PyO3 bindings only.

pub mod diagnostics;
pub mod engine;
pub mod ir;
pub mod parse;
pub mod rules;
pub mod shape;
pub mod torch;

#[cfg(feature = "python")]
mod python;

use std::panic::{AssertUnwindSafe, catch_unwind};

pub use diagnostics::Finding;

/// Analysis settings that change what the core does (selection of codes is the front end's job).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Report `SHP9xx` "may fail" diagnostics too.
    pub may_fail: bool,
    /// Abandon an entry point after this many live paths.
    pub max_paths: usize,
    /// Abandon an entry point after this many interpreter steps.
    pub max_steps: u64,
    /// Wall-clock budget for the whole file, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { may_fail: false, max_paths: 256, max_steps: 2_000_000, timeout_ms: 1_000 }
    }
}

/// Analyse one file. Never panics: an internal failure becomes an `SHP001` finding at line 1.
/// A file with syntax errors yields no findings (flake8's E999 and the CLI report those).
pub fn check_source(source: &str, path: &str, settings: &Settings) -> Vec<Finding> {
    let result = catch_unwind(AssertUnwindSafe(|| check_source_inner(source, path, settings)));
    match result {
        Ok(findings) => findings,
        Err(payload) => {
            let reason = if let Some(s) = payload.downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            };
            vec![internal_error(&reason)]
        }
    }
}

fn internal_error(reason: &str) -> Finding {
    let short: String = reason.lines().next().unwrap_or("").chars().take(120).collect();
    Finding {
        rule: &rules::meta::internal_error::RULE,
        message: format!("shape-lint internal error: {short}"),
        row: 1,
        col: 1,
        end_row: 1,
        end_col: 1,
        trace: Vec::new(),
        condition: None,
    }
}

fn check_source_inner(source: &str, path: &str, settings: &Settings) -> Vec<Finding> {
    let parsed = parse::parse(source);
    if parsed.has_syntax_errors() {
        return Vec::new();
    }
    let module = ir::lower::lower_module(&parsed);
    engine::analyze(&module, &parsed, path, settings)
}

/// The package version (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
