//! Findings: what the engine reports, independent of how a front end renders it.

use crate::rules::Rule;

/// One diagnostic, located by 1-based rows and 1-based code-point columns (ruff's convention).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static Rule,
    /// The one-line message, without the code.
    pub message: String,
    pub row: usize,
    pub col: usize,
    pub end_row: usize,
    pub end_col: usize,
    /// Where the offending values came from, innermost last (shown by the `full` format).
    pub trace: Vec<String>,
    /// The origin chains of the sizes the message shows, as the trace's first lines tell them.
    pub origins: Vec<OriginLink>,
    /// The path condition under which the line fails, or `None` when it always fails.
    pub condition: Option<String>,
    /// The places of the project that the trace names (`fc1 (line 8)`, `model.py:14`), each
    /// with the trace line that names it: an editor's related information.
    pub related: Vec<Related>,
    /// A fix that makes this check pass (one literal number replaced), when one is known and
    /// the fixed file analyses without this or any new finding (`crate::fixes`).
    pub fix: Option<Fix>,
}

/// One link of the origin chain of a size a finding's message shows (`models::origins`):
/// `2304 = 64·6·6 from pool (line 9), flattened at line 16`, then what each factor came from,
/// a step deeper. What `tests/test_origins.py` checks against torch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginLink {
    pub text: String,
    /// The size, when it is a number.
    pub value: Option<i128>,
    /// `said` (a size a layer or a data source fixes), `written` (an argument of a call),
    /// `output` (computed by a layer or an op), `merged` (a product made one dim), `product`
    /// (a product the message shows, such as an element count: made nowhere).
    pub kind: &'static str,
    /// Where the size was made (`line 15`, `model.py:15`); none for `said`.
    pub place: Option<String>,
    /// Which dim of the tensor made there, counted from the end (1: the last).
    pub pos: usize,
    /// The layer or function that made it (`pool`, `torch.randn`), as the program names it.
    pub by: Option<String>,
    /// 0 for the size the message shows, then one more for each step back.
    pub depth: usize,
}

impl OriginLink {
    pub const KINDS: [&'static str; 5] = ["said", "written", "output", "merged", "product"];
}

/// A suggested fix: it changes behaviour, so it is "unsafe" in ruff's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// `use nn.Linear(120, 84)`.
    pub message: String,
    pub edits: Vec<Edit>,
}

/// Replace the text from (`row`, `col`) to (`end_row`, `end_col`) (the finding's convention,
/// end exclusive) with `content`. `start`/`end` are the byte offsets of the same range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub content: String,
    pub row: usize,
    pub col: usize,
    pub end_row: usize,
    pub end_col: usize,
    pub start: usize,
    pub end: usize,
}

/// A place of the checked file that a finding's trace names, with the trace line naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub message: String,
    /// The file, when it is another file of the project (absolute); `None` for the checked file.
    pub path: Option<String>,
    pub row: usize,
    pub col: usize,
    pub end_row: usize,
    pub end_col: usize,
}

/// The tensors one span of the checked file evaluated to (a name bound by an assignment, or an
/// expression), over every path and entry point that reached it: what an editor's hover and
/// inlay hints show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanShapes {
    pub row: usize,
    pub col: usize,
    pub end_row: usize,
    pub end_col: usize,
    /// The name bound, for an assignment target; `None` for an expression.
    pub name: Option<String>,
    /// One entry per distinct tensor seen there (several: several paths), at most
    /// [`SpanShapes::MAX_VIEWS`].
    pub views: Vec<TensorView>,
}

impl SpanShapes {
    pub const MAX_VIEWS: usize = 8;
}

/// A tensor as shown to a user: `[B, 120]`, `float32`, `cpu`, and where each dimension that
/// has a known origin came from (`120 from out_features of fc1 (line 8)`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TensorView {
    pub shape: String,
    pub dtype: Option<String>,
    pub device: Option<String>,
    pub origins: Vec<String>,
}

impl Finding {
    pub fn code(&self) -> &'static str {
        self.rule.code
    }
}

/// A check the core could not decide, with what would be reported if it fails on every
/// execution of its path: `finding` carries the message, location and path condition of that
/// report; `context` is an SMT-LIB 2 script (declarations, symbol ranges, solved equalities,
/// path condition) and `precondition` the SMT-LIB term torch needs to hold. The Z3 bridge
/// reports `finding` when `context` is satisfiable and `context ∧ precondition` is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecided {
    pub finding: Finding,
    pub context: String,
    pub precondition: String,
    /// The declared symbols that are free parameters of the program (SHP902), and whether
    /// every declared symbol is one (`free`): only then may a counterexample be reported.
    pub params: Vec<FreeParam>,
    pub free: bool,
}

/// A free parameter as the SHP902 bridge sees it: its SMT-LIB symbol, the user's name for it
/// (`--size`, `heads`, `x.shape[2]`), its kind (`option`, `ctor`, `input`) and default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeParam {
    pub smt: String,
    pub name: String,
    pub kind: &'static str,
    pub default: Option<i128>,
}
