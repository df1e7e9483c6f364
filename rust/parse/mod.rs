//! The one facade over `ruff_python_parser`: an upgrade of the pinned parser touches this file.

use ruff_python_ast::ModModule;
use ruff_python_parser::{Mode, ParseOptions, Parsed};
use ruff_source_file::{LineIndex, OneIndexed, PositionEncoding, SourceLocation};
use ruff_text_size::TextSize;

pub use ruff_python_ast as ast;
pub use ruff_text_size::{Ranged, TextRange};

/// A parsed file: its AST (possibly partial), its syntax errors and a line index.
pub struct ParsedFile<'src> {
    pub source: &'src str,
    parsed: Parsed<ModModule>,
    line_index: LineIndex,
}

/// Parse a module with error recovery: a half-written file still yields a tree.
pub fn parse(source: &str) -> ParsedFile<'_> {
    let parsed = ruff_python_parser::parse_unchecked(source, ParseOptions::from(Mode::Module))
        .try_into_module()
        .expect("Mode::Module always yields a module");
    ParsedFile { source, parsed, line_index: LineIndex::from_source_text(source) }
}

impl<'src> ParsedFile<'src> {
    pub fn module(&self) -> &ModModule {
        self.parsed.syntax()
    }

    pub fn has_syntax_errors(&self) -> bool {
        !self.parsed.errors().is_empty()
    }

    /// 1-based row and 1-based code-point column of a byte offset.
    pub fn location(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.source.len() as u32);
        let loc: SourceLocation = self.line_index.source_location(
            TextSize::new(offset),
            self.source,
            PositionEncoding::Utf32,
        );
        (loc.line.get(), loc.character_offset.get())
    }

    /// 1-based row of a byte offset.
    pub fn row(&self, offset: u32) -> usize {
        self.location(offset).0
    }

    /// The text of a 1-based row, without its line ending.
    pub fn line_text(&self, row: usize) -> &'src str {
        let Some(row) = OneIndexed::new(row) else { return "" };
        if row.get() > self.line_index.line_count() {
            return "";
        }
        let range = self.line_index.line_range(row, self.source);
        self.source[range].trim_end_matches(['\n', '\r'])
    }

    /// The source text of a range.
    pub fn slice(&self, range: TextRange) -> &'src str {
        &self.source[range]
    }
}

/// The line index of a source the analysis keeps after parsing it (a project module's), for
/// the rows of its spans.
pub struct SourceLines {
    source: std::rc::Rc<str>,
    line_index: LineIndex,
}

impl SourceLines {
    pub fn new(source: std::rc::Rc<str>) -> SourceLines {
        let line_index = LineIndex::from_source_text(&source);
        SourceLines { source, line_index }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// 1-based row and 1-based code-point column of a byte offset.
    pub fn location(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.source.len() as u32);
        let loc: SourceLocation = self.line_index.source_location(TextSize::new(offset), &self.source, PositionEncoding::Utf32);
        (loc.line.get(), loc.character_offset.get())
    }

    pub fn row(&self, offset: u32) -> usize {
        self.location(offset).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_code_points() {
        let f = parse("x = 'é'\ny = 1\n");
        assert_eq!(f.location(0), (1, 1));
        // `y` is at byte 9 (é is two bytes) and on row 2
        let y = f.source.find('y').unwrap() as u32;
        assert_eq!(f.location(y), (2, 1));
        assert_eq!(f.line_text(2), "y = 1");
        assert!(!f.has_syntax_errors());
    }

    #[test]
    fn syntax_errors_are_reported_not_panicked() {
        let f = parse("def f(:\n  pass\n");
        assert!(f.has_syntax_errors());
    }
}
