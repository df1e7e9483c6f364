use crate::parse::ParsedFile;
pub struct Module;
pub fn lower_module(_f: &ParsedFile) -> Module { Module }
