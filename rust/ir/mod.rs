//! The kernel language the engine interprets, and the lowering from the Python AST (`lower`).
//!
//! A small, structured language in the spirit of PyTea's IR: statements keep Python's block
//! structure (the engine forks and joins paths at `if`/loops), expressions are reduced to a
//! handful of forms, and everything the engine does not model lowers to an explicit `Unknown`
//! carrying its source span. Names are reference-counted strings.

pub mod lower;

use std::rc::Rc;

pub type Name = Rc<str>;

/// A source file of one analysis: the checked file (`FileId::MAIN`) or a module of the
/// engine's module table (`engine/modules.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl FileId {
    /// The file being checked.
    pub const MAIN: FileId = FileId(0);
}

/// A byte range in a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug)]
pub struct Module {
    pub body: Vec<Stmt>,
    /// The deepest nesting the lowering saw (expressions and blocks).
    pub max_depth: usize,
}

#[derive(Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value`
    Assign { targets: Vec<Target>, value: Expr },
    AugAssign { target: Target, op: BinOp, value: Expr },
    /// `x: T = value` (`value` absent: a bare declaration, as in dataclass fields).
    AnnAssign { target: Target, annotation: Expr, value: Option<Expr> },
    If { test: Expr, body: Vec<Stmt>, orelse: Vec<Stmt> },
    While { test: Expr, body: Vec<Stmt>, orelse: Vec<Stmt> },
    For { target: Target, iter: Expr, body: Vec<Stmt>, orelse: Vec<Stmt> },
    FunctionDef(Rc<FuncDef>),
    ClassDef(Rc<ClassDef>),
    Return(Option<Expr>),
    Raise(Option<Expr>),
    Try { body: Vec<Stmt>, handlers: Vec<Handler>, orelse: Vec<Stmt>, finalbody: Vec<Stmt> },
    With { items: Vec<(Expr, Option<Target>)>, body: Vec<Stmt> },
    Assert { test: Expr, msg: Option<Expr> },
    /// `import a.b as c`: (dotted name, alias)
    Import(Vec<(Name, Option<Name>)>),
    /// `from .mod import a as b`
    ImportFrom { module: Option<Name>, level: u32, names: Vec<(Name, Option<Name>)> },
    Global(Vec<Name>),
    Nonlocal(Vec<Name>),
    Delete(Vec<Target>),
    Break,
    Continue,
    Pass,
    /// A construct the engine does not model (`match`, `type X = ...`, ...). The names it may
    /// bind become unknown.
    Unknown { binds: Vec<Name> },
}

#[derive(Debug)]
pub struct Handler {
    pub type_: Option<Expr>,
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
}

#[derive(Debug)]
pub struct Param {
    pub name: Name,
    pub default: Option<Expr>,
    pub annotation: Option<Expr>,
}

#[derive(Debug)]
pub struct FuncDef {
    /// Unique per file: keys summaries.
    pub id: u32,
    pub name: Name,
    /// Positional-only and ordinary parameters, in order.
    pub params: Vec<Param>,
    /// How many of `params` are positional-only.
    pub posonly: usize,
    pub vararg: Option<Name>,
    pub kwonly: Vec<Param>,
    pub kwarg: Option<Name>,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
    /// The return annotation.
    pub returns: Option<Expr>,
    pub is_async: bool,
    /// Contains `yield`: calling it makes a generator (unknown to the engine).
    pub is_generator: bool,
    /// A lambda's body is a single `return`.
    pub is_lambda: bool,
    pub span: Span,
}

impl FuncDef {
    /// A function with no parameters, body or decorators yet.
    pub fn empty(id: u32, name: Name, span: Span) -> FuncDef {
        FuncDef {
            id,
            name,
            params: Vec::new(),
            posonly: 0,
            vararg: None,
            kwonly: Vec::new(),
            kwarg: None,
            body: Vec::new(),
            decorators: Vec::new(),
            returns: None,
            is_async: false,
            is_generator: false,
            is_lambda: false,
            span,
        }
    }
}

#[derive(Debug)]
pub struct ClassDef {
    pub id: u32,
    pub name: Name,
    pub bases: Vec<Expr>,
    pub keywords: Vec<(Option<Name>, Expr)>,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
    pub span: Span,
}

#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    MatMul,
    Div,
    Mod,
    Pow,
    LShift,
    RShift,
    BitOr,
    BitXor,
    BitAnd,
    FloorDiv,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::MatMul => "@",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::FloorDiv => "//",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Pos,
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    Is,
    IsNot,
    In,
    NotIn,
}

impl CmpOp {
    /// The operator as written (`==`, `not in`).
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompKind {
    List,
    Set,
    Dict,
    Generator,
}

#[derive(Debug)]
pub enum Const {
    /// Integers that fit in i64; larger ones lower to `BigInt`.
    Int(i64),
    BigInt,
    Float(f64),
    Complex,
    Str(Rc<str>),
    Bytes,
    Bool(bool),
    None,
    Ellipsis,
}

#[derive(Debug)]
pub struct Arg {
    pub value: Expr,
    /// `*value`
    pub star: bool,
}

#[derive(Debug)]
pub struct Kwarg {
    /// `None` for `**value`.
    pub name: Option<Name>,
    pub value: Expr,
}

#[derive(Debug)]
pub struct Comprehension {
    pub target: Target,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Debug)]
pub enum ExprKind {
    Name(Name),
    Const(Const),
    Attr(Box<Expr>, Name),
    Subscript(Box<Expr>, Box<Expr>),
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    Call { func: Box<Expr>, args: Vec<Arg>, kwargs: Vec<Kwarg> },
    BinOp(BinOp, Box<Expr>, Box<Expr>),
    UnaryOp(UnaryOp, Box<Expr>),
    /// `a and b and c` (`is_and`) or `a or b`.
    BoolOp { is_and: bool, values: Vec<Expr> },
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    IfExp { test: Box<Expr>, body: Box<Expr>, orelse: Box<Expr> },
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    /// `{k: v, **d}`: key `None` for `**d`.
    Dict(Vec<(Option<Expr>, Expr)>),
    Comp { kind: CompKind, elt: Box<Expr>, value: Option<Box<Expr>>, generators: Vec<Comprehension> },
    Lambda(Rc<FuncDef>),
    Starred(Box<Expr>),
    /// `(name := value)`
    Named(Name, Box<Expr>),
    /// `yield value` (its own value, what is sent in, is unknown).
    Yield(Option<Box<Expr>>),
    /// An f-string: its interpolated expressions in the order they run (a field's value, then
    /// the fields of its spec), and its text (`FPiece::Field` takes them in that order). A
    /// t-string (a template, not a string) has one `Opaque` piece.
    FString(Vec<Expr>, Rc<Vec<FPiece>>),
    /// `await`, `yield`, IPython escapes, invalid nodes: an unknown value.
    Unknown,
}

/// A piece of an f-string's text.
#[derive(Debug)]
pub enum FPiece {
    Lit(Rc<str>),
    /// `{value!conv:spec}`: the next expression, converted (`s`, `r`, `a`) and formatted with
    /// `spec` (empty when there is none).
    Field { conv: Option<char>, spec: Vec<FPiece> },
    /// Text not modelled (`{value=}`, a t-string), which takes the next `exprs` expressions.
    Opaque { exprs: usize },
}

/// An assignment target.
#[derive(Debug)]
pub enum Target {
    Name(Name, Span),
    Attr(Expr, Name, Span),
    Subscript(Expr, Expr, Span),
    /// `a, *b, c = ...`: `star` is the index of the starred element.
    Tuple(Vec<Target>, Option<usize>, Span),
    /// Something that cannot be assigned to, or is not modelled.
    Unknown(Span),
}

impl Target {
    pub fn span(&self) -> Span {
        match self {
            Target::Name(_, s)
            | Target::Attr(_, _, s)
            | Target::Subscript(_, _, s)
            | Target::Tuple(_, _, s)
            | Target::Unknown(s) => *s,
        }
    }

    /// The plain names this target binds.
    pub fn bound_names(&self, out: &mut Vec<Name>) {
        match self {
            Target::Name(n, _) => out.push(n.clone()),
            Target::Tuple(ts, _, _) => ts.iter().for_each(|t| t.bound_names(out)),
            _ => {}
        }
    }
}
