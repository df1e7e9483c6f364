//! The Unknown-cause report (`shape-lint coverage`): how much of the checked file the analysis
//! followed, and which constructs made a value Unknown.
//!
//! In the spirit of mypy's imprecision and any-expression reports. Recording only observes
//! values: findings are the same with it on or off.
//!
//! - Every non-constant expression of the checked file that the analysis evaluates is counted
//!   once (by span, over all paths; by the script's run when it reached it, else by the
//!   `forward` entries, whose inputs are free): whether its value was Unknown on some path,
//!   and for a tensor whether its rank, dtype and device were known on every path. The value
//!   of an expression statement is discarded: it is not counted.
//! - An expression is an **origin** of imprecision of a kind (an Unknown value; a tensor of
//!   unknown rank; a tensor of unknown dtype) when its value has it on some path and no
//!   expression evaluated inside it (its operands, and the body of a user function it calls)
//!   had it. Reading a name or a stored attribute or item is never an origin: what was
//!   stored was made somewhere else. Statements that forget values record themselves: a loop
//!   run as one generalised iteration (`interp::loops`).
//! - Each `x.backward` read of the checked file records whether the graph of `x` was known
//!   (tracked, a leaf, or certainly untracked) and whether the optimizers its gradients reach
//!   were known on every path.

use std::collections::BTreeMap;

use crate::ir::{Expr, ExprKind, FileId, Span};
use crate::value::*;

/// An Unknown value.
pub const UNKNOWN: u8 = 1;
/// A tensor whose rank is not known.
pub const RANK: u8 = 2;
/// A tensor whose dtype is not known.
pub const DTYPE: u8 = 4;

/// The imprecision kinds an origin is recorded for, with their names in the report.
pub const KINDS: [(u8, &str); 3] = [(UNKNOWN, "value"), (RANK, "rank"), (DTYPE, "dtype")];

/// What one expression of the checked file evaluated to, over every path that reached it.
#[derive(Debug, Default, Clone, Copy)]
struct ExprSeen {
    /// Union of the imprecision flags of its values.
    flags: u8,
    tensor: bool,
    device_unknown: bool,
}

impl ExprSeen {
    fn add(&mut self, flags: u8, tensor: bool, device_unknown: bool) {
        self.flags |= flags;
        self.tensor |= tensor;
        self.device_unknown |= device_unknown;
    }
}

/// One evaluation in progress: the imprecision its sub-evaluations had, and whether its
/// value is a stored one (never an origin).
#[derive(Debug, Default, Clone, Copy)]
struct Frame {
    inner: u8,
    stored: bool,
}

/// The recorder, on `Interp::coverage` while a coverage report is asked for.
#[derive(Debug, Default)]
pub struct Coverage {
    stack: Vec<Frame>,
    /// Per span: what the script's run saw, and what the `forward` entries saw (whose inputs
    /// are free: their rank, dtype and device are not known by design). A span the script
    /// reached is counted by what the script saw.
    exprs: BTreeMap<(u32, u32), (Option<ExprSeen>, Option<ExprSeen>)>,
    /// The `forward` entries are running (set by `engine::entry` after the script).
    pub forward: bool,
    /// The expression statement being evaluated: its value is discarded, so it is neither
    /// counted nor an origin.
    pub discarded: Option<Span>,
    /// (kind, label) -> the distinct sites (spans of the checked file)
    origins: BTreeMap<(u8, String), Vec<Span>>,
    /// The callee of the last call at each site (`call.rs`), to name a call origin.
    callees: BTreeMap<(u32, u32), String>,
    /// Per `x.backward` site: (graph known on every path, optimizers known on every path).
    backward: BTreeMap<(u32, u32), (bool, bool)>,
}

/// The imprecision of one value on one path.
pub fn flags(st: &State, v: &Value) -> u8 {
    match v {
        Value::Unknown => UNKNOWN,
        Value::Tensor(t) => {
            let mut f = 0;
            if st.resolve(&t.shape).rank().is_none() {
                f |= RANK;
            }
            if t.dtype.is_none() {
                f |= DTYPE;
            }
            f
        }
        _ => 0,
    }
}

fn in_main(span: Span) -> bool {
    span.file == FileId::MAIN && span.start < span.end
}

/// A short name of what a value is, for labels: `str`, `Tensor`, `list`, `nn.Linear`, ...
pub fn kind_of(st: &State, v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(_) | Value::Cond(_) => "bool".into(),
        Value::Int(_) => "int".into(),
        Value::Float(_) => "float".into(),
        Value::Str(_) => "str".into(),
        Value::Tuple(_) => "tuple".into(),
        Value::Tensor(_) => "Tensor".into(),
        Value::Func(c) | Value::Bound(_, c) => format!("function {}", c.def.name),
        Value::Lib(q) => q.to_string(),
        Value::LibMethod(r, n) => format!("{}.{n}", kind_of(st, r)),
        Value::Builtin(b) => b.to_string(),
        Value::Super(..) => "super()".into(),
        Value::Gen(..) => "generator".into(),
        Value::Range(..) => "range".into(),
        Value::DType(_) => "dtype".into(),
        Value::Unknown => "an unknown value".into(),
        Value::Ref(id) => match st.heap.get(*id).map(|o| &**o) {
            Some(Obj::List(_)) => "list".into(),
            Some(Obj::Dict(_)) => "dict".into(),
            Some(Obj::Instance { class, .. }) => match st.heap.get(*class).map(|o| &**o) {
                Some(Obj::Class { name, .. }) => format!("{name} instance"),
                _ => "instance".into(),
            },
            Some(Obj::Class { name, .. }) => format!("class {name}"),
            Some(Obj::Layer(l)) => format!("nn.{}", l.kind),
            Some(Obj::Container { .. }) => "nn container".into(),
            Some(Obj::Scope { .. }) => "module".into(),
            Some(Obj::Namespace { kind, .. }) => kind.to_string(),
            None => "object".into(),
        },
    }
}

/// The label of an expression that is an origin, from its form (`callee`: what a call at its
/// site called).
fn label_of(e: &Expr, callee: Option<&String>) -> Option<String> {
    Some(match &e.kind {
        ExprKind::Call { .. } => match callee {
            Some(c) => format!("call {c}()"),
            None => "call of an unknown callee".into(),
        },
        ExprKind::Attr(_, n) => format!("attribute .{n}"),
        ExprKind::Subscript(_, idx) => match &idx.kind {
            ExprKind::Slice(..) => "slice x[a:b]".into(),
            ExprKind::Tuple(items) if items.iter().any(|i| matches!(i.kind, ExprKind::Slice(..))) => "slice x[..., a:b]".into(),
            _ => "subscript x[i]".into(),
        },
        ExprKind::BinOp(op, ..) => format!("operator {}", op.symbol()),
        ExprKind::UnaryOp(..) => "unary operator".into(),
        ExprKind::Compare(..) => "comparison".into(),
        ExprKind::BoolOp { .. } => "and/or".into(),
        ExprKind::IfExp { .. } => "conditional expression".into(),
        ExprKind::Comp { .. } => "comprehension".into(),
        ExprKind::FString(..) => "f-string".into(),
        ExprKind::Yield(_) => "yield".into(),
        ExprKind::Unknown => "unsupported expression (await, IPython escape)".into(),
        ExprKind::Starred(_) => "starred".into(),
        ExprKind::Named(..) => "assignment expression".into(),
        // a name, a constant, a display, a lambda or a slice is made of its parts
        _ => return None,
    })
}

impl Coverage {
    /// An evaluation starts.
    pub fn enter(&mut self) {
        self.stack.push(Frame::default());
    }

    /// A value read from storage (a name, a stored attribute or item) flows into the current
    /// evaluation.
    pub fn read(&mut self, flags: u8) {
        if let Some(top) = self.stack.last_mut() {
            top.inner |= flags;
        }
    }

    /// The current evaluation's value is a stored one: it is no origin.
    pub fn stored(&mut self) {
        if let Some(top) = self.stack.last_mut() {
            top.stored = true;
        }
    }

    /// The call at `span` called `callee`.
    pub fn callee(&mut self, span: Span, callee: String) {
        if in_main(span) {
            self.callees.insert((span.start, span.end), callee);
        }
    }

    /// The evaluation of `e` that `enter` started ended with `vals`.
    pub fn leave(&mut self, e: &Expr, vals: &[(State, Value)]) {
        let frame = self.stack.pop().unwrap_or_default();
        let mut here = 0;
        let mut tensor = false;
        let mut device_unknown = false;
        for (st, v) in vals {
            here |= flags(st, v);
            if let Value::Tensor(t) = v {
                tensor = true;
                device_unknown |= t.device.is_none();
            }
        }
        if in_main(e.span) && !matches!(e.kind, ExprKind::Const(_)) && self.discarded != Some(e.span) {
            let (script, forward) = self.exprs.entry((e.span.start, e.span.end)).or_default();
            let seen = if self.forward { forward } else { script };
            seen.get_or_insert_default().add(here, tensor, device_unknown);
            if !frame.stored {
                for (kind, _) in KINDS {
                    // an unknown operand explains any imprecision of the result
                    if here & kind != 0 && frame.inner & (kind | UNKNOWN) == 0 {
                        if let Some(label) = label_of(e, self.callees.get(&(e.span.start, e.span.end))) {
                            self.origin(kind, label, e.span);
                        }
                    }
                }
            }
        }
        if let Some(top) = self.stack.last_mut() {
            top.inner |= here | frame.inner;
        }
    }

    /// An origin of `kind` at `span` (of the checked file), named `label`.
    pub fn origin(&mut self, kind: u8, label: String, span: Span) {
        if !in_main(span) {
            return;
        }
        let sites = self.origins.entry((kind, label)).or_default();
        if !sites.contains(&span) {
            sites.push(span);
        }
        if let Some(top) = self.stack.last_mut() {
            top.inner |= kind;
        }
    }

    /// A `backward` read at `span` on a receiver whose graph and optimizers are (not) known.
    pub fn backward(&mut self, span: Span, graph: bool, optimizers: bool) {
        if !in_main(span) {
            return;
        }
        let e = self.backward.entry((span.start, span.end)).or_insert((true, true));
        e.0 &= graph;
        e.1 &= optimizers;
    }

    /// The report, with rows and columns of `file`.
    pub fn report(self, file: &crate::parse::ParsedFile, incomplete: bool) -> CoverageReport {
        let mut r = CoverageReport { incomplete, ..Default::default() };
        for seen in self.exprs.values().filter_map(|(script, forward)| script.or(*forward)) {
            r.exprs += 1;
            if seen.flags & UNKNOWN != 0 {
                r.unknown += 1;
            }
            if seen.tensor {
                r.tensors += 1;
                r.rank_known += (seen.flags & RANK == 0) as usize;
                r.dtype_known += (seen.flags & DTYPE == 0) as usize;
                r.device_known += !seen.device_unknown as usize;
            }
        }
        for (g, o) in self.backward.values() {
            r.backward += 1;
            r.backward_graph_known += *g as usize;
            r.backward_optimizer_known += *o as usize;
        }
        for ((kind, label), sites) in self.origins {
            let first = sites.iter().min_by_key(|s| s.start).copied().unwrap_or_default();
            let (row, col) = file.location(first.start);
            let kind = KINDS.iter().find(|(k, _)| *k == kind).map(|(_, n)| *n).unwrap_or("value");
            r.origins.push(Origin { kind, label, count: sites.len(), row, col });
        }
        r.origins.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(b.kind)).then(a.row.cmp(&b.row)).then(a.label.cmp(&b.label)));
        r
    }
}

/// One construct that made values imprecise: how many sites of the file, and the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `value` (an Unknown value), `rank` or `dtype` (of a tensor).
    pub kind: &'static str,
    pub label: String,
    pub count: usize,
    pub row: usize,
    pub col: usize,
}

/// The coverage of one file (`Coverage::report`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoverageReport {
    /// Non-constant expressions evaluated (distinct spans), and those Unknown on some path.
    pub exprs: usize,
    pub unknown: usize,
    /// Expressions that evaluated to a tensor, and those whose rank, dtype, device was known
    /// on every path.
    pub tensors: usize,
    pub rank_known: usize,
    pub dtype_known: usize,
    pub device_known: usize,
    /// `x.backward` sites, those whose graph was known, and those whose optimizers were.
    pub backward: usize,
    pub backward_graph_known: usize,
    pub backward_optimizer_known: usize,
    /// The constructs that made values imprecise, most sites first.
    pub origins: Vec<Origin>,
    /// An entry point was cut by a budget: the figures cover what ran.
    pub incomplete: bool,
}

#[cfg(test)]
mod tests {
    use crate::Settings;

    fn report(src: &str) -> (Vec<crate::Finding>, super::CoverageReport) {
        crate::coverage_source(src, "<test>", &Settings::default()).expect("analysis")
    }

    #[test]
    fn an_unmodelled_method_is_the_origin_and_what_flows_from_it_is_not() {
        let src = "import torch\nx = torch.randn(4, 8)\ny = x.not_a_torch_method()\nz = y + 1\nw = z * 2\n";
        let (_, r) = report(src);
        let value: Vec<(&str, usize, usize)> = r.origins.iter().filter(|o| o.kind == "value").map(|o| (o.label.as_str(), o.count, o.row)).collect();
        assert_eq!(value, vec![("call Tensor.not_a_torch_method()", 1, 3)]);
        // y, z, w and the reads of y and z are Unknown: the method call, `y + 1`, `z * 2`
        assert_eq!(r.unknown, 3, "{r:?}");
        assert_eq!(r.tensors, 1);
        assert_eq!((r.rank_known, r.dtype_known, r.device_known), (1, 1, 1));
    }

    #[test]
    fn backward_sites_say_whether_graph_and_optimizers_were_known() {
        let src = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nx = torch.randn(8, 4)\nloss = model(x).sum()\nopt.zero_grad()\nloss.backward()\nopt.step()\nu = x.not_a_torch_method()\nu.backward()\n";
        let (_, r) = report(src);
        assert_eq!(r.backward, 2, "{r:?}");
        assert_eq!(r.backward_graph_known, 1);
        assert_eq!(r.backward_optimizer_known, 1);
    }

    #[test]
    fn a_discarded_value_is_neither_counted_nor_an_origin() {
        let (_, r) = report("import torch\nx = torch.randn(2)\nx.not_a_torch_method()\n");
        assert!(r.origins.is_empty(), "{:?}", r.origins);
        assert_eq!(r.unknown, 0);
    }

    #[test]
    fn recording_does_not_change_the_findings() {
        let src = "import torch\nimport torch.nn as nn\nfc1 = nn.Linear(16, 120)\nfc2 = nn.Linear(80, 10)\nx = torch.randn(4, 16)\ny = fc2(fc1(x))\n";
        let (findings, _) = report(src);
        // (the checker's findings also carry their verified fixes, which the report leaves out)
        let checked = crate::check_source(src, "<test>", &Settings::default());
        let key = |f: &crate::Finding| (f.rule.code, f.row, f.col, f.trace.clone());
        assert_eq!(findings.iter().map(key).collect::<Vec<_>>(), checked.iter().map(key).collect::<Vec<_>>());
        assert_eq!(findings.len(), 1);
        assert!(checked[0].message.starts_with(&findings[0].message));
    }
}
