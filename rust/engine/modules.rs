//! The module table: embedded Python source roots, lowered once per analysis thread.
//!
//! Today it holds the embedded library code (the torchvision zoo, `models/torch/zoo.py`);
//! its spans start at `EMBEDDED_BASE` and its function ids at `ID_BASE`, so they never meet
//! the user file's.

use std::rc::Rc;

use crate::ir::{self, Span};

/// Spans at or above this offset belong to embedded code, not to the user's file.
pub const EMBEDDED_BASE: u32 = 1 << 31;
/// Function ids of embedded code start here (user files number theirs from 1).
pub const ID_BASE: u32 = 1 << 30;

thread_local! {
    static ZOO: Rc<ir::Module> = lower_embedded(crate::models::torch::zoo::SOURCE);
}

fn lower_embedded(source: &str) -> Rc<ir::Module> {
    let parsed = crate::parse::parse(source);
    Rc::new(ir::lower::lower_module_at(&parsed, EMBEDDED_BASE, ID_BASE))
}

/// The lowered embedded module named `module`, if there is one.
pub fn embedded(module: &str) -> Option<Rc<ir::Module>> {
    match module {
        "torchvision.models" => Some(ZOO.with(Rc::clone)),
        _ => None,
    }
}

/// Whether a span lies in embedded library code.
pub fn is_embedded(span: Span) -> bool {
    span.start >= EMBEDDED_BASE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::torch::zoo::MODELS;

    #[test]
    fn embedded_zoo_parses_and_defines_every_model() {
        let parsed = crate::parse::parse(crate::models::torch::zoo::SOURCE);
        assert!(!parsed.has_syntax_errors());
        let module = embedded("torchvision.models").unwrap();
        let defined: Vec<&str> = module
            .body
            .iter()
            .filter_map(|s| match &s.kind {
                ir::StmtKind::FunctionDef(f) => Some(&*f.name),
                _ => None,
            })
            .collect();
        for m in MODELS {
            assert!(defined.contains(m), "zoo.py does not define {m}");
        }
        assert!(module.body.iter().all(|s| is_embedded(s.span)));
    }
}
