//! The one facade over `ruff_python_parser`: an upgrade of the pinned parser touches this file.

use std::sync::Arc;

use ruff_python_ast::ModModule;
use ruff_python_parser::{Mode, ParseOptions, Parsed};
use ruff_source_file::{LineIndex, OneIndexed, PositionEncoding, SourceLocation};
use ruff_text_size::TextSize;

pub use ruff_python_ast as ast;
pub use ruff_text_size::{Ranged, TextRange};

mod cache;
pub use cache::parse_shared;

/// A parsed file: its AST (possibly partial), its syntax errors and a line index.
pub struct ParsedFile<'src> {
    pub source: &'src str,
    tree: Arc<Tree>,
}

/// The parser's output for one text: shared by the analyses of a process that load the same
/// project file (`parse_shared`).
pub struct Tree {
    parsed: Parsed<ModModule>,
    line_index: LineIndex,
}

/// Parse a module with error recovery: a half-written file still yields a tree.
pub fn parse(source: &str) -> ParsedFile<'_> {
    ParsedFile { source, tree: Arc::new(tree_of(source)) }
}

fn tree_of(source: &str) -> Tree {
    let parsed = ruff_python_parser::parse_unchecked(source, ParseOptions::from(Mode::Module))
        .try_into_module()
        .expect("Mode::Module always yields a module");
    Tree { parsed, line_index: LineIndex::from_source_text(source) }
}

impl<'src> ParsedFile<'src> {
    pub fn module(&self) -> &ModModule {
        self.tree.parsed.syntax()
    }

    pub fn has_syntax_errors(&self) -> bool {
        !self.tree.parsed.errors().is_empty()
    }

    /// The parser's errors: message and byte range of each (ruff's wording, e.g.
    /// `Expected ')', found newline`).
    pub fn syntax_errors(&self) -> Vec<(String, u32, u32)> {
        self.tree.parsed.errors().iter().map(|e| (e.error.to_string(), e.location.start().to_u32(), e.location.end().to_u32())).collect()
    }

    /// 1-based row and 1-based code-point column of a byte offset.
    pub fn location(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.source.len() as u32);
        let loc: SourceLocation = self.tree.line_index.source_location(
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
        if row.get() > self.tree.line_index.line_count() {
            return "";
        }
        let range = self.tree.line_index.line_range(row, self.source);
        self.source[range].trim_end_matches(['\n', '\r'])
    }

    /// The source text of a range.
    pub fn slice(&self, range: TextRange) -> &'src str {
        &self.source[range]
    }
}

/// The argument `pos` (positional) or `kw` (keyword) of the call spanning `start..end` of
/// `source`, when it is an int literal or an expression of int literals only: its byte range
/// and value.
pub fn int_literal_arg(source: &str, start: u32, end: u32, pos: usize, kw: &str) -> Option<(u32, u32, i128)> {
    use ruff_python_ast::{Expr, Number};
    if end as usize > source.len() || start > end || !source.is_char_boundary(start as usize) || !source.is_char_boundary(end as usize) {
        return None;
    }
    let range = TextRange::new(TextSize::new(start), TextSize::new(end));
    let parsed = ruff_python_parser::parse_parenthesized_expression_range(source, range).ok()?;
    let Expr::Call(call) = parsed.expr() else { return None };
    let args = &call.arguments;
    let arg = match args.args.get(pos) {
        Some(a) if !args.args[..=pos].iter().any(|a| a.is_starred_expr()) => a,
        _ => &args.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == kw))?.value,
    };
    /// The value of an expression made of int literals only (`16 * 5 * 5`).
    fn value(e: &Expr) -> Option<i128> {
        use ruff_python_ast::{Operator, UnaryOp};
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => i.as_i64().map(i128::from),
                _ => None,
            },
            Expr::UnaryOp(u) if u.op == UnaryOp::USub => value(&u.operand).map(|v| -v),
            Expr::BinOp(b) => {
                let (l, r) = (value(&b.left)?, value(&b.right)?);
                match b.op {
                    Operator::Add => l.checked_add(r),
                    Operator::Sub => l.checked_sub(r),
                    Operator::Mult => l.checked_mul(r),
                    Operator::FloorDiv if r > 0 && l >= 0 => Some(l / r),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    let v = value(arg)?;
    Some((arg.range().start().to_u32(), arg.range().end().to_u32(), v))
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
