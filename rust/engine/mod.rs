use crate::{Finding, Settings, ir, parse::ParsedFile};
pub fn analyze(_m: &ir::lower::Module, _f: &ParsedFile, _path: &str, _s: &Settings) -> Vec<Finding> { Vec::new() }
