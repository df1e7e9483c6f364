//! Lowering from ruff's AST to the IR. Total: every node lowers to something, constructs the
//! engine does not model become `Unknown` nodes with their span, and nesting deeper than
//! `MAX_DEPTH` lowers to `Unknown` instead of recursing further (so lowering never overflows).

use std::rc::Rc;

use super::*;
use crate::parse::ast as py;
use crate::parse::Ranged;
use crate::parse::ParsedFile;

/// Deeper nesting than this is not lowered (real code stays far below it).
pub const MAX_DEPTH: usize = 300;

/// Lower the checked file (`FileId::MAIN`, function ids from 1).
pub fn lower_module(file: &ParsedFile) -> Module {
    lower_module_in(file, FileId::MAIN, 0)
}

/// Lower a module of the module table: its spans carry `file_id`, and its function ids start
/// after `id_base`, so they never meet another module's.
pub fn lower_module_in(file: &ParsedFile, file_id: FileId, id_base: u32) -> Module {
    let mut l = Lowerer { depth: 0, max_depth: 0, next_id: id_base, saw_yield: false, file: file_id, names: Default::default() };
    let body = l.stmts(&file.module().body);
    Module { body, max_depth: l.max_depth }
}

struct Lowerer {
    depth: usize,
    max_depth: usize,
    next_id: u32,
    saw_yield: bool,
    file: FileId,
    /// The names lowered so far: each is one shared string (a module names `self`, `x` and
    /// `torch` thousands of times; one allocation each, and equal names are the same pointer).
    names: rustc_hash::FxHashSet<Name>,
}

fn name(id: &py::Identifier) -> Name {
    Rc::from(id.id.as_str())
}

fn binop(op: py::Operator) -> BinOp {
    use py::Operator as O;
    match op {
        O::Add => BinOp::Add,
        O::Sub => BinOp::Sub,
        O::Mult => BinOp::Mul,
        O::MatMult => BinOp::MatMul,
        O::Div => BinOp::Div,
        O::Mod => BinOp::Mod,
        O::Pow => BinOp::Pow,
        O::LShift => BinOp::LShift,
        O::RShift => BinOp::RShift,
        O::BitOr => BinOp::BitOr,
        O::BitXor => BinOp::BitXor,
        O::BitAnd => BinOp::BitAnd,
        O::FloorDiv => BinOp::FloorDiv,
    }
}

fn cmpop(op: py::CmpOp) -> CmpOp {
    use py::CmpOp as C;
    match op {
        C::Eq => CmpOp::Eq,
        C::NotEq => CmpOp::NotEq,
        C::Lt => CmpOp::Lt,
        C::LtE => CmpOp::LtE,
        C::Gt => CmpOp::Gt,
        C::GtE => CmpOp::GtE,
        C::Is => CmpOp::Is,
        C::IsNot => CmpOp::IsNot,
        C::In => CmpOp::In,
        C::NotIn => CmpOp::NotIn,
    }
}

impl Lowerer {
    /// The shared string of name `s` (`names`).
    fn intern(&mut self, s: &str) -> Name {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let n: Name = Rc::from(s);
        self.names.insert(n.clone());
        n
    }

    fn name(&mut self, id: &py::Identifier) -> Name {
        self.intern(id.id.as_str())
    }

    fn span_of(&self, node: &impl Ranged) -> Span {
        let r = node.range();
        Span { file: self.file, start: r.start().to_u32(), end: r.end().to_u32() }
    }

    fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    fn enter(&mut self) -> bool {
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth);
        self.depth <= MAX_DEPTH
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn stmts(&mut self, body: &[py::Stmt]) -> Vec<Stmt> {
        body.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, s: &py::Stmt) -> Stmt {
        let span = self.span_of(s);
        if !self.enter() {
            self.leave();
            return Stmt { kind: StmtKind::Unknown { binds: Vec::new() }, span };
        }
        let kind = self.stmt_kind(s);
        self.leave();
        Stmt { kind, span }
    }

    fn stmt_kind(&mut self, s: &py::Stmt) -> StmtKind {
        use py::Stmt as S;
        match s {
            S::FunctionDef(f) => StmtKind::FunctionDef(Rc::new(self.function(f))),
            S::ClassDef(c) => StmtKind::ClassDef(Rc::new(self.class(c))),
            S::Return(r) => StmtKind::Return(r.value.as_deref().map(|e| self.expr(e))),
            S::Delete(d) => StmtKind::Delete(d.targets.iter().map(|t| self.target(t)).collect()),
            S::TypeAlias(t) => {
                let mut binds = Vec::new();
                if let py::Expr::Name(n) = t.name.as_ref() {
                    binds.push(Rc::from(n.id.as_str()));
                }
                StmtKind::Unknown { binds }
            }
            S::Assign(a) => StmtKind::Assign {
                targets: a.targets.iter().map(|t| self.target(t)).collect(),
                value: self.expr(&a.value),
            },
            S::AugAssign(a) => StmtKind::AugAssign {
                target: self.target(&a.target),
                op: binop(a.op),
                value: self.expr(&a.value),
            },
            S::AnnAssign(a) => StmtKind::AnnAssign {
                target: self.target(&a.target),
                annotation: self.expr(&a.annotation),
                value: a.value.as_deref().map(|e| self.expr(e)),
            },
            S::For(f) => StmtKind::For {
                target: self.target(&f.target),
                iter: self.expr(&f.iter),
                body: self.stmts(&f.body),
                orelse: self.stmts(&f.orelse),
            },
            S::While(w) => StmtKind::While {
                test: self.expr(&w.test),
                body: self.stmts(&w.body),
                orelse: self.stmts(&w.orelse),
            },
            S::If(i) => {
                let test = self.expr(&i.test);
                let body = self.stmts(&i.body);
                let orelse = self.elif_chain(&i.elif_else_clauses);
                StmtKind::If { test, body, orelse }
            }
            S::With(w) => StmtKind::With {
                items: w
                    .items
                    .iter()
                    .map(|it| {
                        (self.expr(&it.context_expr), it.optional_vars.as_deref().map(|t| self.target(t)))
                    })
                    .collect(),
                body: self.stmts(&w.body),
            },
            S::Match(m) => self.match_stmt(m),
            S::Raise(r) => StmtKind::Raise(r.exc.as_deref().map(|e| self.expr(e))),
            S::Try(t) => StmtKind::Try {
                body: self.stmts(&t.body),
                handlers: t
                    .handlers
                    .iter()
                    .map(|h| {
                        let py::ExceptHandler::ExceptHandler(h) = h;
                        Handler {
                            type_: h.type_.as_deref().map(|e| self.expr(e)),
                            name: h.name.as_ref().map(name),
                            body: self.stmts(&h.body),
                        }
                    })
                    .collect(),
                orelse: self.stmts(&t.orelse),
                finalbody: self.stmts(&t.finalbody),
            },
            S::Assert(a) => StmtKind::Assert {
                test: self.expr(&a.test),
                msg: a.msg.as_deref().map(|e| self.expr(e)),
            },
            S::Import(i) => StmtKind::Import(
                i.names.iter().map(|a| (self.name(&a.name), a.asname.as_ref().map(|n| self.name(n)))).collect(),
            ),
            S::ImportFrom(i) => StmtKind::ImportFrom {
                module: i.module.as_ref().map(|m| self.name(m)),
                level: i.level,
                names: i.names.iter().map(|a| (self.name(&a.name), a.asname.as_ref().map(|n| self.name(n)))).collect(),
            },
            S::Global(g) => StmtKind::Global(g.names.iter().map(|n| self.name(n)).collect()),
            S::Nonlocal(g) => StmtKind::Nonlocal(g.names.iter().map(|n| self.name(n)).collect()),
            S::Expr(e) => StmtKind::Expr(self.expr(&e.value)),
            S::Pass(_) => StmtKind::Pass,
            S::Break(_) => StmtKind::Break,
            S::Continue(_) => StmtKind::Continue,
            S::IpyEscapeCommand(_) => StmtKind::Unknown { binds: Vec::new() },
        }
    }

    fn elif_chain(&mut self, clauses: &[py::ElifElseClause]) -> Vec<Stmt> {
        let Some((first, rest)) = clauses.split_first() else { return Vec::new() };
        let body = self.stmts(&first.body);
        match &first.test {
            None => body,
            Some(test) => {
                let span = self.span_of(first);
                let test = self.expr(test);
                let orelse = self.elif_chain(rest);
                vec![Stmt { kind: StmtKind::If { test, body, orelse }, span }]
            }
        }
    }

    /// `match` lowers to a chain of `if`s on unknown tests; names bound by a case's pattern
    /// are unknown in its body.
    fn match_stmt(&mut self, m: &py::StmtMatch) -> StmtKind {
        let subject = self.expr(&m.subject);
        let mut orelse: Vec<Stmt> = Vec::new();
        for case in m.cases.iter().rev() {
            let span = self.span_of(case);
            let mut binds = Vec::new();
            pattern_names(&case.pattern, &mut binds);
            let mut body = vec![Stmt { kind: StmtKind::Unknown { binds }, span }];
            if let Some(g) = &case.guard {
                let g = self.expr(g);
                body.push(Stmt { kind: StmtKind::Expr(g), span });
            }
            body.extend(self.stmts(&case.body));
            let test = Expr { kind: ExprKind::Unknown, span };
            orelse = vec![Stmt { kind: StmtKind::If { test, body, orelse }, span }];
        }
        let span = subject.span;
        let mut body = vec![Stmt { kind: StmtKind::Expr(subject), span }];
        body.extend(orelse);
        // A block of statements: `if True:` keeps the structure without a new construct.
        StmtKind::If { test: Expr { kind: ExprKind::Const(Const::Bool(true)), span }, body, orelse: Vec::new() }
    }

    fn params(&mut self, p: &py::Parameters, f: &mut FuncDef) {
        let lower = |this: &mut Self, pd: &py::ParameterWithDefault| Param {
            name: this.name(&pd.parameter.name),
            default: pd.default.as_deref().map(|e| this.expr(e)),
            annotation: pd.parameter.annotation.as_deref().map(|e| this.expr(e)),
        };
        for pd in &p.posonlyargs {
            let param = lower(self, pd);
            f.params.push(param);
        }
        f.posonly = p.posonlyargs.len();
        for pd in &p.args {
            let param = lower(self, pd);
            f.params.push(param);
        }
        for pd in &p.kwonlyargs {
            let param = lower(self, pd);
            f.kwonly.push(param);
        }
        f.vararg = p.vararg.as_ref().map(|v| self.name(&v.name));
        f.kwarg = p.kwarg.as_ref().map(|v| self.name(&v.name));
    }

    fn function(&mut self, f: &py::StmtFunctionDef) -> FuncDef {
        let name = self.name(&f.name);
        let mut def = FuncDef::empty(self.id(), name, self.span_of(f));
        def.decorators = f.decorator_list.iter().map(|d| self.expr(&d.expression)).collect();
        def.returns = f.returns.as_deref().map(|e| self.expr(e));
        def.is_async = f.is_async;
        self.params(&f.parameters, &mut def);
        let outer = std::mem::replace(&mut self.saw_yield, false);
        def.body = self.stmts(&f.body);
        def.is_generator = std::mem::replace(&mut self.saw_yield, outer);
        def
    }

    fn class(&mut self, c: &py::StmtClassDef) -> ClassDef {
        let decorators = c.decorator_list.iter().map(|d| self.expr(&d.expression)).collect();
        let mut bases = Vec::new();
        let mut keywords = Vec::new();
        if let Some(args) = &c.arguments {
            bases = args.args.iter().map(|e| self.expr(e)).collect();
            keywords = args.keywords.iter().map(|k| (k.arg.as_ref().map(name), self.expr(&k.value))).collect();
        }
        ClassDef {
            id: self.id(),
            name: self.name(&c.name),
            bases,
            keywords,
            body: self.stmts(&c.body),
            decorators,
            span: self.span_of(c),
        }
    }

    fn target(&mut self, t: &py::Expr) -> Target {
        let span = self.span_of(t);
        if !self.enter() {
            self.leave();
            return Target::Unknown(span);
        }
        let out = match t {
            py::Expr::Name(n) => Target::Name(self.intern(n.id.as_str()), span),
            py::Expr::Attribute(a) => Target::Attr(self.expr(&a.value), self.name(&a.attr), span),
            py::Expr::Subscript(s) => Target::Subscript(self.expr(&s.value), self.expr(&s.slice), span),
            py::Expr::Tuple(py::ExprTuple { elts, .. }) | py::Expr::List(py::ExprList { elts, .. }) => {
                let mut star = None;
                let items = elts
                    .iter()
                    .enumerate()
                    .map(|(i, e)| match e {
                        py::Expr::Starred(s) => {
                            star = Some(i);
                            self.target(&s.value)
                        }
                        _ => self.target(e),
                    })
                    .collect();
                Target::Tuple(items, star, span)
            }
            py::Expr::Starred(s) => self.target(&s.value),
            _ => Target::Unknown(span),
        };
        self.leave();
        out
    }

    fn boxed(&mut self, e: &py::Expr) -> Box<Expr> {
        Box::new(self.expr(e))
    }

    /// The pieces of an f-string's (or a format spec's) elements; their expressions go to
    /// `exprs` in the order they run.
    fn fstring_elements(&mut self, elements: &py::InterpolatedStringElements, exprs: &mut Vec<Expr>) -> Vec<FPiece> {
        let mut pieces = Vec::new();
        for el in elements.iter() {
            match el {
                py::InterpolatedStringElement::Literal(l) => pieces.push(FPiece::Lit(Rc::from(&*l.value))),
                py::InterpolatedStringElement::Interpolation(i) => {
                    let before = exprs.len();
                    exprs.push(self.expr(&i.expression));
                    let conv = i.conversion.to_byte().map(char::from);
                    let spec = match &i.format_spec {
                        Some(s) => self.fstring_elements(&s.elements, exprs),
                        None => Vec::new(),
                    };
                    // `{value=}` writes its own source text too: not modelled
                    pieces.push(if i.debug_text.is_some() { FPiece::Opaque { exprs: exprs.len() - before } } else { FPiece::Field { conv, spec } });
                }
            }
        }
        pieces
    }

    fn exprs(&mut self, es: &[py::Expr]) -> Vec<Expr> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    pub fn expr(&mut self, e: &py::Expr) -> Expr {
        let span = self.span_of(e);
        if !self.enter() {
            self.leave();
            return Expr { kind: ExprKind::Unknown, span };
        }
        let kind = self.expr_kind(e);
        self.leave();
        Expr { kind, span }
    }

    fn comprehensions(&mut self, gens: &[py::Comprehension]) -> Vec<Comprehension> {
        gens.iter()
            .map(|g| Comprehension {
                target: self.target(&g.target),
                iter: self.expr(&g.iter),
                ifs: self.exprs(&g.ifs),
            })
            .collect()
    }

    fn expr_kind(&mut self, e: &py::Expr) -> ExprKind {
        use py::Expr as E;
        match e {
            E::BoolOp(b) => ExprKind::BoolOp { is_and: b.op == py::BoolOp::And, values: self.exprs(&b.values) },
            E::Named(n) => match n.target.as_ref() {
                E::Name(t) => ExprKind::Named(self.intern(t.id.as_str()), self.boxed(&n.value)),
                _ => ExprKind::Unknown,
            },
            E::BinOp(b) => ExprKind::BinOp(binop(b.op), self.boxed(&b.left), self.boxed(&b.right)),
            E::UnaryOp(u) => {
                let op = match u.op {
                    py::UnaryOp::Not => UnaryOp::Not,
                    py::UnaryOp::USub => UnaryOp::Neg,
                    py::UnaryOp::UAdd => UnaryOp::Pos,
                    py::UnaryOp::Invert => UnaryOp::Invert,
                };
                ExprKind::UnaryOp(op, self.boxed(&u.operand))
            }
            E::Lambda(l) => {
                let span = self.span_of(l);
                let mut def = FuncDef::empty(self.id(), Rc::from("<lambda>"), span);
                def.is_lambda = true;
                if let Some(p) = &l.parameters {
                    self.params(p, &mut def);
                }
                let outer = std::mem::replace(&mut self.saw_yield, false);
                let body = self.expr(&l.body);
                def.is_generator = std::mem::replace(&mut self.saw_yield, outer);
                def.body = vec![Stmt { kind: StmtKind::Return(Some(body)), span }];
                ExprKind::Lambda(Rc::new(def))
            }
            E::If(i) => ExprKind::IfExp { test: self.boxed(&i.test), body: self.boxed(&i.body), orelse: self.boxed(&i.orelse) },
            E::Dict(d) => ExprKind::Dict(
                d.items.iter().map(|it| (it.key.as_ref().map(|k| self.expr(k)), self.expr(&it.value))).collect(),
            ),
            E::Set(s) => ExprKind::Set(self.exprs(&s.elts)),
            E::ListComp(c) => ExprKind::Comp {
                kind: CompKind::List,
                elt: self.boxed(&c.elt),
                value: None,
                generators: self.comprehensions(&c.generators),
            },
            E::SetComp(c) => ExprKind::Comp {
                kind: CompKind::Set,
                elt: self.boxed(&c.elt),
                value: None,
                generators: self.comprehensions(&c.generators),
            },
            E::Generator(c) => ExprKind::Comp {
                kind: CompKind::Generator,
                elt: self.boxed(&c.elt),
                value: None,
                generators: self.comprehensions(&c.generators),
            },
            E::DictComp(c) => {
                let key = match &c.key {
                    Some(k) => self.boxed(k),
                    None => Box::new(Expr { kind: ExprKind::Unknown, span: self.span_of(c) }),
                };
                ExprKind::Comp {
                    kind: CompKind::Dict,
                    elt: key,
                    value: Some(self.boxed(&c.value)),
                    generators: self.comprehensions(&c.generators),
                }
            }
            E::Await(a) => {
                let _ = self.expr(&a.value);
                ExprKind::Unknown
            }
            E::Yield(y) => {
                self.saw_yield = true;
                ExprKind::Yield(y.value.as_deref().map(|v| self.boxed(v)))
            }
            E::YieldFrom(y) => {
                self.saw_yield = true;
                let _ = self.expr(&y.value);
                ExprKind::Unknown
            }
            E::Compare(c) => ExprKind::Compare(
                self.boxed(&c.left),
                c.ops.iter().zip(c.comparators.iter()).map(|(op, e)| (cmpop(*op), self.expr(e))).collect(),
            ),
            E::Call(c) => {
                let func = self.boxed(&c.func);
                let mut args = Vec::new();
                for a in c.arguments.args.iter() {
                    match a {
                        E::Starred(s) => args.push(Arg { value: self.expr(&s.value), star: true }),
                        _ => args.push(Arg { value: self.expr(a), star: false }),
                    }
                }
                let kwargs = c
                    .arguments
                    .keywords
                    .iter()
                    .map(|k| Kwarg { name: k.arg.as_ref().map(name), value: self.expr(&k.value) })
                    .collect();
                ExprKind::Call { func, args, kwargs }
            }
            E::FString(f) => {
                let (mut exprs, mut pieces) = (Vec::new(), Vec::new());
                for part in f.value.iter() {
                    match part {
                        py::FStringPart::Literal(s) => pieces.push(FPiece::Lit(Rc::from(s.value.as_ref()))),
                        py::FStringPart::FString(fs) => pieces.extend(self.fstring_elements(&fs.elements, &mut exprs)),
                    }
                }
                ExprKind::FString(exprs, Rc::new(pieces))
            }
            E::TString(_) => ExprKind::FString(Vec::new(), Rc::new(vec![FPiece::Opaque { exprs: 0 }])),
            E::StringLiteral(s) => ExprKind::Const(Const::Str(Rc::from(s.value.to_str()))),
            E::BytesLiteral(_) => ExprKind::Const(Const::Bytes),
            E::NumberLiteral(n) => ExprKind::Const(match &n.value {
                py::Number::Int(i) => match i.as_i64() {
                    Some(v) => Const::Int(v),
                    None => Const::BigInt,
                },
                py::Number::Float(f) => Const::Float(*f),
                py::Number::Complex { .. } => Const::Complex,
            }),
            E::BooleanLiteral(b) => ExprKind::Const(Const::Bool(b.value)),
            E::NoneLiteral(_) => ExprKind::Const(Const::None),
            E::EllipsisLiteral(_) => ExprKind::Const(Const::Ellipsis),
            E::Attribute(a) => ExprKind::Attr(self.boxed(&a.value), self.name(&a.attr)),
            E::Subscript(s) => ExprKind::Subscript(self.boxed(&s.value), self.boxed(&s.slice)),
            E::Starred(s) => ExprKind::Starred(self.boxed(&s.value)),
            E::Name(n) => ExprKind::Name(self.intern(n.id.as_str())),
            E::List(l) => ExprKind::List(self.exprs(&l.elts)),
            E::Tuple(t) => ExprKind::Tuple(self.exprs(&t.elts)),
            E::Slice(s) => ExprKind::Slice(
                s.lower.as_deref().map(|e| self.boxed(e)),
                s.upper.as_deref().map(|e| self.boxed(e)),
                s.step.as_deref().map(|e| self.boxed(e)),
            ),
            E::IpyEscapeCommand(_) => ExprKind::Unknown,
        }
    }
}

fn pattern_names(p: &py::Pattern, out: &mut Vec<Name>) {
    use py::Pattern as P;
    match p {
        P::MatchValue(_) | P::MatchSingleton(_) => {}
        P::MatchSequence(s) => s.patterns.iter().for_each(|p| pattern_names(p, out)),
        P::MatchMapping(m) => {
            m.patterns.iter().for_each(|p| pattern_names(p, out));
            if let Some(r) = &m.rest {
                out.push(name(r));
            }
        }
        P::MatchClass(c) => {
            c.arguments.patterns.iter().for_each(|p| pattern_names(p, out));
            c.arguments.keywords.iter().for_each(|k| pattern_names(&k.pattern, out));
        }
        P::MatchStar(s) => {
            if let Some(n) = &s.name {
                out.push(name(n));
            }
        }
        P::MatchAs(a) => {
            if let Some(p) = &a.pattern {
                pattern_names(p, out);
            }
            if let Some(n) = &a.name {
                out.push(name(n));
            }
        }
        P::MatchOr(o) => o.patterns.iter().for_each(|p| pattern_names(p, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn lower(src: &str) -> Module {
        let f = parse(src);
        lower_module(&f)
    }

    #[test]
    fn lowers_every_statement_kind_without_panicking() {
        let src = r#"
import torch, torch.nn as nn
from . import sibling
from torch.nn import functional as F
x: int = 3
y: int
a = b = [1, 2, *x]
a += 1
del a
def f(p, /, q=1, *args, k, m=2, **kw):
    global g
    yield q
async def h():
    await f()
    async with a as b:
        pass
    async for i in b:
        pass
class C(nn.Module, metaclass=M):
    z = 1
    def forward(self, x):
        nonlocal_var = lambda t, *u: t
        return x @ x
for i, (j, *k) in enumerate(zip(a, b)):
    continue
else:
    pass
while x:
    break
if a:
    pass
elif b:
    pass
else:
    pass
with open(f) as (p, q), g():
    pass
try:
    raise ValueError("x") from None
except (A, B) as e:
    pass
except* C:
    pass
else:
    pass
finally:
    pass
assert x, "msg"
match cmd:
    case [a, *rest] if a:
        pass
    case {"k": v, **kw}:
        pass
    case Point(x=0, y=yy) | Other(yy):
        pass
    case _:
        pass
type Alias = list[int]
def generic[T](x: T) -> T: return x
v = {k: v for k, v in d.items() if k}, {s for s in t}, (g for g in h), [l for l in m]
w = f"{a!r:>{b}}" + t"{c}" + b"bytes" + 1j + 10**100 + 2.5 + ... + None
(n := 10)
q = a[1:2:3, ..., None]
r = not a or -b and +c and ~d
s = a if b else c
u = a < b <= c != d is e is not f in g not in h
"#;
        let m = lower(src);
        assert!(m.body.len() > 20);
        assert!(m.body.iter().all(|s| s.span.end >= s.span.start));
    }

    #[test]
    fn deep_nesting_is_cut_off() {
        let src = format!("x = {}1\n", "-(".repeat(2000) + &")".repeat(0));
        let src = src.trim_end().to_string() + &")".repeat(2000) + "\n";
        let src2 = format!("x = {}1{}\n", "[".repeat(2000), "]".repeat(2000));
        for s in [src, src2] {
            let m = lower(&s);
            assert_eq!(m.body.len(), 1);
            assert!(m.max_depth > MAX_DEPTH);
        }
    }

    #[test]
    fn generators_are_marked() {
        let m = lower("def g():\n    yield 1\ndef f():\n    return 1\n");
        let is_gen: Vec<bool> = m
            .body
            .iter()
            .map(|s| match &s.kind {
                StmtKind::FunctionDef(f) => f.is_generator,
                _ => panic!(),
            })
            .collect();
        assert_eq!(is_gen, vec![true, false]);
    }
}
