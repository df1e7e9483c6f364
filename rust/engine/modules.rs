//! The module table: the source roots an analysis can run besides the checked file, each
//! with its own `FileId`, lowered once per analysis thread and cached.
//!
//! Today the table holds the embedded library code: the torchvision zoo
//! (`models/torch/zoo.py`, module `torchvision.models`). Its spans carry its own file id and
//! its function ids start at its own base, so they never meet the checked file's.
//! Checks that fail inside an embedded module are reported at the innermost call in the
//! checked file (`Interp::user_span`). Project imports (other files of the user's project)
//! are the next kind of entry.

use std::cell::RefCell;
use std::rc::Rc;

use crate::ir::{self, FileId, Span};

/// One source root.
struct Root {
    /// The dotted module name it is imported as.
    name: &'static str,
    source: &'static str,
}

/// The embedded roots; the file id of `ROOTS[i]` is `i + 1` (0 is the checked file).
const ROOTS: &[Root] = &[Root { name: "torchvision.models", source: crate::models::torch::zoo::SOURCE }];

/// Function ids of module `FileId(k)` start at `k << ID_SHIFT` (the checked file's below).
pub const ID_SHIFT: u32 = 24;

thread_local! {
    static LOWERED: RefCell<Vec<Option<Rc<ir::Module>>>> = RefCell::new(vec![None; ROOTS.len()]);
}

/// The file id of the module imported as `name`, if the table has it.
pub fn file_of(name: &str) -> Option<FileId> {
    ROOTS.iter().position(|r| r.name == name).map(|i| FileId(i as u32 + 1))
}

/// The lowered module `file` (lowered on first use, then cached for this thread).
pub fn lowered(file: FileId) -> Option<Rc<ir::Module>> {
    let i = (file.0 as usize).checked_sub(1)?;
    let root = ROOTS.get(i)?;
    LOWERED.with(|cache| {
        let mut cache = cache.borrow_mut();
        Some(
            cache[i]
                .get_or_insert_with(|| {
                    let parsed = crate::parse::parse(root.source);
                    Rc::new(ir::lower::lower_module_in(&parsed, file, file.0 << ID_SHIFT))
                })
                .clone(),
        )
    })
}

/// The lowered embedded module named `module`, if there is one.
pub fn embedded(module: &str) -> Option<Rc<ir::Module>> {
    lowered(file_of(module)?)
}

/// Whether a span lies in embedded library code (not in the checked file or another file of
/// the user's project, `engine::project`).
pub fn is_embedded(span: Span) -> bool {
    span.file != FileId::MAIN && span.file.0 < super::project::FIRST_FILE
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
        assert!(module.body.iter().all(|s| is_embedded(s.span) && s.span.file == file_of("torchvision.models").unwrap()));
        assert!(Rc::ptr_eq(&module, &embedded("torchvision.models").unwrap()), "lowered once, then cached");
        assert!(embedded("torchvision.datasets").is_none());
    }

    #[test]
    fn function_ids_of_modules_do_not_meet() {
        let main = ir::lower::lower_module(&crate::parse::parse("def f():\n    pass\n"));
        let zoo = embedded("torchvision.models").unwrap();
        let id = |m: &ir::Module| {
            m.body.iter().find_map(|s| match &s.kind {
                ir::StmtKind::FunctionDef(f) => Some(f.id),
                _ => None,
            })
        };
        assert!(id(&main).unwrap() < 1 << ID_SHIFT);
        assert!(id(&zoo).unwrap() > 1 << ID_SHIFT);
    }
}
