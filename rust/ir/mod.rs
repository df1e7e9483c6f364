//! The kernel language the engine interprets, and the lowering from the Python AST.
pub mod lower;
