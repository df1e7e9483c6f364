//! The abstract interpreter: executes IR statements over a set of paths.
//!
//! Every statement maps one path to zero or more paths (`Vec<(State, Flow)>`). A condition
//! that the facts decide does not fork; a symbolic one forks and is recorded as a branch; an
//! opaque one (unmodelled value) forks and taints the path. Paths with the same program state
//! are merged after every statement and at call returns, which is what keeps a model of many
//! blocks, each with an internal `if`, at a handful of paths.
//!
//! Loops over known sequences are unrolled up to `UNROLL`; other loops (unknown iterables,
//! undecided `while` conditions, long ranges) run their body once with the loop target
//! unknown (or modelled, e.g. a DataLoader batch) and afterwards every name the body assigns
//! is unknown: the "generalised state" is the pre-loop state with the loop-carried names
//! forgotten.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use crate::value::*;
use crate::Settings;
use crate::ir::*;
use crate::parse::ParsedFile;
use crate::rules::Rule;
use crate::shape::smt::Query;
use crate::shape::{Cond, Poly, Rel, Symbols, Tri};
use crate::models::torch;
use crate::models;

pub const UNROLL: usize = 512;
/// Above this many paths, paths are not compared for merging.
const MERGE_LIMIT: usize = 64;
const MAX_CALL_DEPTH: usize = 48;

#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    Normal,
    Return(Value),
    /// A generator run for its first element reached `yield value`.
    Yield(Value),
    Break,
    Continue,
}

pub type Paths = Vec<(State, Flow)>;
pub type Vals = Vec<(State, Value)>;

/// A violated API precondition: what torch would raise.
#[derive(Debug, Clone)]
pub struct Violation {
    pub rule: &'static Rule,
    pub message: String,
    pub trace: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Verdict {
    Holds,
    Undecided,
    Violated(Violation),
}

/// What one path found at one check site.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub site: Span,
    pub branches: Vec<Branch>,
    pub verdict: Verdict,
    pub tainted: bool,
    pub suppressed: bool,
    pub condition: Option<String>,
}

/// A check the core left undecided on a path where a violation would be reported (untainted,
/// outside any `try` with handlers), with the message the violation would carry and its
/// SMT-LIB query (see `shape::smt`).
#[derive(Debug, Clone)]
pub struct Pending {
    pub site: Span,
    pub rule: &'static Rule,
    pub message: String,
    pub trace: Vec<String>,
    pub condition: Option<String>,
    pub query: Query,
}

/// Lexical context of the code being executed.
#[derive(Clone)]
pub struct Ctx {
    pub scope: ObjId,
    pub module_scope: ObjId,
    /// Executing a class body: definitions close over the enclosing scope instead.
    pub class_body: Option<ObjId>,
    /// The class of the method being executed and its receiver (for `super()`).
    pub method_class: Option<ObjId>,
    pub self_val: Option<Value>,
    pub globals: Rc<Vec<Name>>,
}

pub struct Interp<'a> {
    pub file: &'a ParsedFile<'a>,
    pub settings: &'a Settings,
    pub syms: Symbols,
    pub steps: u64,
    pub deadline: Instant,
    pub abandoned: bool,
    pub outcomes: Vec<Outcome>,
    /// Undecided checks exported for the Z3 bridge (only with `Settings::export_undecided`).
    pub undecided: Vec<Pending>,
    pub next_shape_var: u32,
    pub call_depth: usize,
    /// Names of the variables being assigned, for labels ("fc2"); read through `label`.
    pub assign_label: Option<Rc<str>>,
    /// How often `label` was read: a call that reads its caller's label is not summarised.
    pub label_reads: u64,
    pub stack: Vec<u32>,
    pub paths_high_water: usize,
    /// For each active call, whether it runs a generator for its first element.
    pub gen_frames: Vec<bool>,
    /// When set, the shapes of the tensors each line assigns (the `--show-shapes` view).
    pub shape_log: Option<BTreeMap<usize, std::collections::BTreeSet<String>>>,
    /// Summaries of side-effect-free calls (`super::memo`).
    pub memo: super::memo::Memo,
    /// Calls cut short (depth, recursion): a call that contains one is not summarised.
    pub cuts: u64,
    /// Violated or undecided verdicts recorded so far: a call that adds one is not summarised.
    pub flagged: u64,
    /// The innermost call in the user's file: checks inside embedded library code (the
    /// torchvision zoo) report there.
    pub user_site: Option<Span>,
}

fn merge(paths: Vec<State>, prune: bool) -> Vec<State> {
    if !prune || paths.len() > MERGE_LIMIT {
        // comparing states is quadratic: this many paths will exhaust the budget anyway
        return paths;
    }
    let mut out: Vec<State> = Vec::with_capacity(paths.len());
    'outer: for p in paths {
        for q in out.iter_mut() {
            if q.same_state(&p) {
                q.absorb(&p);
                continue 'outer;
            }
        }
        out.push(p);
    }
    out
}

fn merge_vals(vals: Vals, prune: bool) -> Vals {
    if !prune || vals.len() > MERGE_LIMIT {
        return vals;
    }
    let mut out: Vals = Vec::with_capacity(vals.len());
    'outer: for (s, v) in vals {
        for (q, w) in out.iter_mut() {
            if *w == v && q.same_state(&s) {
                q.absorb(&s);
                continue 'outer;
            }
        }
        out.push((s, v));
    }
    out
}

impl<'a> Interp<'a> {
    pub fn new(file: &'a ParsedFile<'a>, settings: &'a Settings) -> Interp<'a> {
        super::memo::reset_reads();
        Interp {
            file,
            settings,
            syms: Symbols::default(),
            steps: 0,
            deadline: Instant::now() + std::time::Duration::from_millis(settings.timeout_ms),
            abandoned: false,
            outcomes: Vec::new(),
            undecided: Vec::new(),
            next_shape_var: 0,
            call_depth: 0,
            assign_label: None,
            label_reads: 0,
            stack: Vec::new(),
            paths_high_water: 0,
            shape_log: None,
            gen_frames: Vec::new(),
            memo: Default::default(),
            cuts: 0,
            flagged: 0,
            user_site: None,
        }
    }

    /// The name of the variable being assigned, for a layer's label.
    pub fn label(&mut self) -> Option<Rc<str>> {
        self.label_reads += 1;
        self.assign_label.clone()
    }

    pub fn fresh_shape_var(&mut self) -> u32 {
        self.next_shape_var += 1;
        self.next_shape_var
    }

    fn tick(&mut self) -> bool {
        self.steps += 1;
        if self.steps > self.settings.max_steps {
            self.abandoned = true;
        }
        if self.steps % 64 == 0 && Instant::now() > self.deadline {
            self.abandoned = true;
        }
        !self.abandoned
    }

    // ----- scopes -----------------------------------------------------------------------

    pub fn lookup(&self, st: &State, ctx: &Ctx, name: &str) -> Option<Value> {
        let mut scope = Some(ctx.scope);
        let mut guard = 0;
        while let Some(id) = scope {
            match st.get_var(id, name) {
                Obj::Scope { vars, parent } => {
                    if let Some(v) = vars.get(name) {
                        return Some(v.clone());
                    }
                    scope = *parent;
                }
                _ => break,
            }
            guard += 1;
            if guard > 256 {
                break;
            }
        }
        builtin(name)
    }

    pub fn set_var(&self, st: &mut State, ctx: &Ctx, name: &Name, v: Value) {
        let scope = if ctx.globals.iter().any(|g| g == name) { ctx.module_scope } else { ctx.scope };
        if let Obj::Scope { vars, .. } = st.get_mut(scope) {
            vars.insert(name.clone(), v);
        }
    }

    // ----- statements -------------------------------------------------------------------

    pub fn block(&mut self, stmts: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let mut live = vec![st];
        let mut done: Paths = Vec::new();
        for s in stmts {
            if live.is_empty() {
                break;
            }
            let mut next = Vec::new();
            for st in live {
                for (st2, flow) in self.stmt(s, st, ctx) {
                    if flow == Flow::Normal {
                        next.push(st2);
                    } else {
                        done.push((st2, flow));
                    }
                }
            }
            if next.is_empty() && done.is_empty() && debug_enabled() {
                eprintln!("[shape-lint debug] all paths end at line {}", self.line(s.span));
            }
            live = merge(next, self.settings.prune);
            self.note_paths(live.len());
            if self.abandoned {
                return Vec::new();
            }
        }
        done.extend(live.into_iter().map(|s| (s, Flow::Normal)));
        done
    }

    /// Track the number of live paths; too many, or past the deadline, abandons the entry.
    fn note_paths(&mut self, n: usize) {
        self.paths_high_water = self.paths_high_water.max(n);
        if n > self.settings.max_paths || Instant::now() > self.deadline {
            self.abandoned = true;
        }
    }

    fn normal(vals: Vals) -> Paths {
        vals.into_iter().map(|(s, _)| (s, Flow::Normal)).collect()
    }

    pub fn stmt(&mut self, s: &Stmt, st: State, ctx: &Ctx) -> Paths {
        if !self.tick() {
            return Vec::new();
        }
        match &s.kind {
            StmtKind::Expr(Expr { kind: ExprKind::Yield(v), .. }) if self.gen_frames.last() == Some(&true) => {
                // the generator's first element: this path ends here with it
                match v {
                    Some(v) => self.eval(v, st, ctx).into_iter().map(|(s, x)| (s, Flow::Yield(x))).collect(),
                    None => vec![(st, Flow::Yield(Value::None))],
                }
            }
            StmtKind::Expr(e) => Self::normal(self.eval(e, st, ctx)),
            StmtKind::Assign { targets, value } => {
                self.assign_label = match targets.first() {
                    Some(Target::Name(n, _)) | Some(Target::Attr(_, n, _)) => Some(n.clone()),
                    _ => None,
                };
                let vals = self.eval(value, st, ctx);
                self.assign_label = None;
                let mut out = Vec::new();
                for (st, v) in vals {
                    let mut states = vec![st];
                    for t in targets {
                        let mut next = Vec::new();
                        for st in states {
                            next.extend(self.assign(t, v.clone(), st, ctx));
                        }
                        states = next;
                    }
                    out.extend(states.into_iter().map(|s| (s, Flow::Normal)));
                }
                out
            }
            StmtKind::AnnAssign { target, value, .. } => match value {
                Some(value) => {
                    let vals = self.eval(value, st, ctx);
                    let mut out = Vec::new();
                    for (st, v) in vals {
                        out.extend(self.assign(target, v, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                    }
                    out
                }
                None => vec![(st, Flow::Normal)],
            },
            StmtKind::AugAssign { target, op, value } => {
                let cur = match target {
                    Target::Name(n, span) => Expr { kind: ExprKind::Name(n.clone()), span: *span },
                    _ => {
                        // evaluate the value for its effects and checks, then forget the target
                        let vals = self.eval(value, st, ctx);
                        let mut out = Vec::new();
                        for (st, _) in vals {
                            out.extend(self.assign(target, Value::Unknown, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                        }
                        return out;
                    }
                };
                let mut out = Vec::new();
                for (st, a) in self.eval(&cur, st, ctx) {
                    for (st, b) in self.eval(value, st, ctx) {
                        for (st, r) in self.binop(*op, a.clone(), b, st, s.span, true) {
                            out.extend(self.assign(target, r, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                        }
                    }
                }
                out
            }
            StmtKind::If { test, body, orelse } => {
                let mut out = Vec::new();
                for (_, truth) in self.truth(test, st, ctx) {
                    match truth {
                        (true, st) => out.extend(self.block(body, st, ctx)),
                        (false, st) => out.extend(self.block(orelse, st, ctx)),
                    }
                }
                out
            }
            StmtKind::While { test, body, orelse } => self.while_loop(test, body, orelse, st, ctx),
            StmtKind::For { target, iter, body, orelse } => {
                let mut out = Vec::new();
                for (st, it) in self.eval(iter, st, ctx) {
                    out.extend(self.for_loop(target, it, body, orelse, st, ctx, s.span));
                }
                out
            }
            StmtKind::FunctionDef(def) => {
                let mut out = Vec::new();
                for (mut st, f) in self.make_function(def, st, ctx) {
                    let name = def.name.clone();
                    self.set_var(&mut st, ctx, &name, f);
                    out.push((st, Flow::Normal));
                }
                out
            }
            StmtKind::ClassDef(def) => self.class_def(def, st, ctx),
            StmtKind::Return(e) => match e {
                Some(e) => self.eval(e, st, ctx).into_iter().map(|(s, v)| (s, Flow::Return(v))).collect(),
                None => vec![(st, Flow::Return(Value::None))],
            },
            // A raised exception ends the path (handlers are entered from the try's start).
            StmtKind::Raise(e) => {
                if let Some(e) = e {
                    let _ = self.eval(e, st, ctx);
                }
                Vec::new()
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                let mut inner = st.clone();
                if !handlers.is_empty() {
                    inner.in_try += 1;
                }
                let mut after = Vec::new();
                for (mut s2, flow) in self.block(body, inner, ctx) {
                    if !handlers.is_empty() {
                        s2.in_try -= 1;
                    }
                    if flow == Flow::Normal {
                        after.extend(self.block(orelse, s2, ctx));
                    } else {
                        after.push((s2, flow));
                    }
                }
                // Handlers run from the try's start with everything the body assigns forgotten.
                let mut assigned = Vec::new();
                assigned_names(body, &mut assigned);
                for h in handlers {
                    let mut hs = st.clone();
                    self.tick_opaque(&mut hs, s.span, 1);
                    for n in &assigned {
                        self.set_var(&mut hs, ctx, n, Value::Unknown);
                    }
                    if let Some(n) = &h.name {
                        self.set_var(&mut hs, ctx, n, Value::Unknown);
                    }
                    after.extend(self.block(&h.body, hs, ctx));
                }
                if finalbody.is_empty() {
                    return after;
                }
                let mut out = Vec::new();
                for (s2, flow) in after {
                    for (s3, f3) in self.block(finalbody, s2, ctx) {
                        out.push((s3, if f3 == Flow::Normal { flow.clone() } else { f3 }));
                    }
                }
                out
            }
            StmtKind::With { items, body } => {
                let mut states = vec![st];
                for (e, t) in items {
                    let mut next = Vec::new();
                    for st in states {
                        for (st, v) in self.eval(e, st, ctx) {
                            let entered = match &v {
                                Value::Lib(_) | Value::LibMethod(..) => Value::Unknown,
                                _ => v.clone(),
                            };
                            match t {
                                Some(t) => next.extend(self.assign(t, entered, st, ctx)),
                                None => next.push(st),
                            }
                        }
                    }
                    states = next;
                }
                let mut out = Vec::new();
                for st in states {
                    out.extend(self.block(body, st, ctx));
                }
                out
            }
            StmtKind::Assert { test, .. } => {
                // An assert refines: only the paths where it holds go on.
                let mut out = Vec::new();
                for (_, (truth, st)) in self.truth(test, st, ctx) {
                    if truth {
                        out.push((st, Flow::Normal));
                    }
                }
                out
            }
            StmtKind::Import(names) => {
                let mut st = st;
                for (dotted, alias) in names {
                    match alias {
                        Some(a) => self.set_var(&mut st, ctx, a, module_value(dotted)),
                        None => {
                            let first: Name = Rc::from(dotted.split('.').next().unwrap_or(dotted));
                            self.set_var(&mut st, ctx, &first, module_value(&first));
                        }
                    }
                }
                vec![(st, Flow::Normal)]
            }
            StmtKind::ImportFrom { module, level, names } => {
                let mut st = st;
                for (n, alias) in names {
                    let v = match (module, level) {
                        (Some(m), 0) => module_value(&format!("{m}.{n}")),
                        _ => Value::Unknown,
                    };
                    let bind = alias.clone().unwrap_or_else(|| n.clone());
                    if &*bind != "*" {
                        self.set_var(&mut st, ctx, &bind, v);
                    }
                }
                vec![(st, Flow::Normal)]
            }
            StmtKind::Global(_) | StmtKind::Nonlocal(_) | StmtKind::Pass => vec![(st, Flow::Normal)],
            StmtKind::Delete(ts) => {
                let mut st = st;
                for t in ts {
                    if let Target::Name(n, _) = t {
                        self.set_var(&mut st, ctx, n, Value::Unknown);
                    }
                }
                vec![(st, Flow::Normal)]
            }
            StmtKind::Break => vec![(st, Flow::Break)],
            StmtKind::Continue => vec![(st, Flow::Continue)],
            StmtKind::Unknown { binds } => {
                let mut st = st;
                for n in binds {
                    self.set_var(&mut st, ctx, n, Value::Unknown);
                }
                vec![(st, Flow::Normal)]
            }
        }
    }

    fn tick_opaque(&mut self, st: &mut State, span: Span, side: u32) {
        st.branches.push(Branch::Opaque(span, side, 2));
        st.tainted = true;
    }

    fn while_loop(&mut self, test: &Expr, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        let mut live = vec![st];
        for _ in 0..UNROLL {
            let mut next = Vec::new();
            for st in live {
                for (opaque, (truth, st)) in self.truth(test, st, ctx) {
                    if !truth {
                        out.extend(self.block(orelse, st, ctx));
                        continue;
                    }
                    if opaque {
                        // unknown trip count: one generalised iteration
                        out.extend(self.generalised_iteration(body, st, ctx, &[]));
                        continue;
                    }
                    self.iteration(body, st, ctx, &mut next, &mut out);
                }
            }
            live = merge(next, self.settings.prune);
            self.note_paths(live.len() + out.len());
            if live.is_empty() || self.abandoned {
                return out;
            }
        }
        // budget: the remaining iterations run generalised
        for st in live {
            out.extend(self.generalised_iteration(body, st, ctx, &[]));
        }
        out
    }

    /// One unrolled iteration: paths that go on looping go to `next`, the others to `out`.
    fn iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, next: &mut Vec<State>, out: &mut Paths) {
        for (s2, flow) in self.block(body, st, ctx) {
            match flow {
                Flow::Normal | Flow::Continue => next.push(s2),
                Flow::Break => out.push((s2, Flow::Normal)),
                f @ (Flow::Return(_) | Flow::Yield(_)) => out.push((s2, f)),
            }
        }
    }

    /// Run `body` once from `st`, then forget everything it assigns (and `also`).
    fn generalised_iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, also: &[Name]) -> Paths {
        let mut assigned = also.to_vec();
        assigned_names(body, &mut assigned);
        let mut out = Vec::new();
        for (mut s2, flow) in self.block(body, st, ctx) {
            if let Flow::Return(_) | Flow::Yield(_) = flow {
                out.push((s2, flow));
                continue;
            }
            for n in &assigned {
                self.set_var(&mut s2, ctx, n, Value::Unknown);
            }
            out.push((s2, Flow::Normal));
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(&mut self, target: &Target, it: Value, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx, span: Span) -> Paths {
        let mut st = st;
        let items = self.iterate(&mut st, &it, span);
        match items {
            Some(items) if items.len() <= UNROLL => {
                let mut out = Vec::new();
                let mut live = vec![st];
                for item in items {
                    let mut next = Vec::new();
                    for st in live {
                        for st in self.assign(target, item.clone(), st, ctx) {
                            self.iteration(body, st, ctx, &mut next, &mut out);
                        }
                    }
                    live = merge(next, self.settings.prune);
                    self.note_paths(live.len() + out.len());
                    if live.is_empty() || self.abandoned {
                        return out;
                    }
                }
                for st in live {
                    out.extend(self.block(orelse, st, ctx));
                }
                out
            }
            _ => {
                // A loop that cannot leave early sees every batch of a DataLoader, the last,
                // smaller one included: that batch is a second path.
                let full_run = !leaves_early(body);
                let elems = match torch::data::batches_of(self, &st, &it, full_run) {
                    Some(elems) => elems,
                    None => {
                        let elem = self.element_of(&mut st, &it);
                        vec![(st, elem)]
                    }
                };
                let mut target_names = Vec::new();
                target.bound_names(&mut target_names);
                let mut out = Vec::new();
                for (st, elem) in elems {
                    for st in self.assign(target, elem, st, ctx) {
                        out.extend(self.generalised_iteration(body, st, ctx, &target_names));
                    }
                }
                out
            }
        }
    }

    /// The items of an iterable when they are known.
    pub fn iterate(&mut self, st: &mut State, it: &Value, _span: Span) -> Option<Vec<Value>> {
        match it {
            Value::Tuple(items) => Some(items.as_ref().clone()),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(items) => Some(items.clone()),
                Obj::Dict(items) => Some(items.iter().map(|(k, _)| k.clone()).collect()),
                Obj::Container { kind: ContainerKind::ModuleDict, items, .. } => {
                    Some(items.iter().map(|(k, _)| k.clone().map(|k| Value::Str(Some(k))).unwrap_or(Value::Unknown)).collect())
                }
                Obj::Container { items, .. } => Some(items.iter().map(|(_, v)| v.clone()).collect()),
                _ => None,
            },
            Value::Range(a, b, step) => {
                let (a, b, s) = (a.as_const()?, b.as_const()?, step.as_const()?);
                if s == 0 {
                    return None;
                }
                let n = if s > 0 { (b - a + s - 1).div_euclid(s) } else { (a - b - s - 1).div_euclid(-s) };
                if n > UNROLL as i128 {
                    return None;
                }
                Some((0..n.max(0)).map(|i| Value::int(a + i * s)).collect())
            }
            Value::Str(Some(s)) if s.chars().count() <= UNROLL => {
                Some(s.chars().map(|c| Value::Str(Some(Rc::from(c.to_string())))).collect())
            }
            _ => None,
        }
    }

    /// A sound abstraction of one element of an iterable of unknown length.
    fn element_of(&mut self, st: &mut State, it: &Value) -> Value {
        match it {
            Value::Gen(..) => self.first_yield(st, it, Span::default()).unwrap_or(Value::Unknown),
            _ => models::element_of(self, st, it),
        }
    }

    fn make_function(&mut self, def: &Rc<FuncDef>, st: State, ctx: &Ctx) -> Vals {
        // defaults are evaluated at definition time
        let mut states: Vec<(State, Vec<Value>)> = vec![(st, Vec::new())];
        for p in def.params.iter().filter_map(|p| p.default.as_ref()) {
            let mut next = Vec::new();
            for (st, acc) in states {
                for (st, v) in self.eval(p, st, ctx) {
                    let mut acc = acc.clone();
                    acc.push(v);
                    next.push((st, acc));
                }
            }
            states = next;
        }
        let mut out = Vec::new();
        for (mut st, defaults) in states {
            let mut kw_defaults = Vec::new();
            for p in &def.kwonly {
                match &p.default {
                    Some(e) => {
                        let vals = self.eval(e, st.clone(), ctx);
                        match vals.into_iter().next() {
                            Some((s2, v)) => {
                                st = s2;
                                kw_defaults.push(Some(v));
                            }
                            None => kw_defaults.push(Some(Value::Unknown)),
                        }
                    }
                    None => kw_defaults.push(None),
                }
            }
            let mut kind = FuncKind::Plain;
            for d in &def.decorators {
                let name = match &d.kind {
                    ExprKind::Name(n) => n.to_string(),
                    ExprKind::Attr(_, n) => n.to_string(),
                    _ => String::new(),
                };
                kind = match name.as_str() {
                    "staticmethod" => FuncKind::Static,
                    "classmethod" => FuncKind::ClassMethod,
                    "property" | "cached_property" => FuncKind::Property,
                    _ => kind,
                };
            }
            let unknown_decorator = def.decorators.iter().any(|d| {
                !matches!(&d.kind, ExprKind::Name(n) if matches!(&**n, "staticmethod" | "classmethod" | "property" | "cached_property" | "torch.no_grad"))
                    && !matches!(&d.kind, ExprKind::Attr(_, n) if matches!(&**n, "cached_property" | "no_grad" | "inference_mode" | "wraps" | "jit" | "script"))
                    && !matches!(&d.kind, ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Attr(_, n) if matches!(&**n, "no_grad" | "inference_mode" | "wraps")))
            });
            let scope = match ctx.class_body {
                Some(_) => match st.get(ctx.scope) {
                    Obj::Scope { parent, .. } => parent.unwrap_or(ctx.scope),
                    _ => ctx.scope,
                },
                None => ctx.scope,
            };
            let clo = Closure {
                def: def.clone(),
                scope,
                defaults,
                kw_defaults,
                class: ctx.class_body,
                kind,
            };
            let v = if unknown_decorator || def.is_async { Value::Unknown } else { Value::Func(Rc::new(clo)) };
            out.push((st, v));
        }
        out
    }

    fn class_def(&mut self, def: &Rc<ClassDef>, st: State, ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        for (mut st, bases) in self.eval_list(&def.bases, st, ctx) {
            let class = st.alloc(Obj::Class { name: def.name.clone(), def: Some(def.clone()), bases, attrs: BTreeMap::new() });
            let scope = st.alloc(Obj::Scope { vars: BTreeMap::new(), parent: Some(ctx.scope) });
            let cctx = Ctx {
                scope,
                module_scope: ctx.module_scope,
                class_body: Some(class),
                method_class: None,
                self_val: None,
                globals: Rc::new(Vec::new()),
            };
            for (mut s2, _) in self.block(&def.body, st, &cctx) {
                let vars = match s2.get(scope) {
                    Obj::Scope { vars, .. } => vars.clone(),
                    _ => BTreeMap::new(),
                };
                if let Obj::Class { attrs, .. } = s2.get_mut(class) {
                    *attrs = vars;
                }
                let mut v = Value::Ref(class);
                for d in &def.decorators {
                    let known = matches!(&d.kind, ExprKind::Name(n) if &**n == "dataclass")
                        || matches!(&d.kind, ExprKind::Attr(_, n) if &**n == "dataclass")
                        || matches!(&d.kind, ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Name(n) | ExprKind::Attr(_, n) if &**n == "dataclass"));
                    if known {
                        if let Obj::Class { attrs, .. } = s2.get_mut(class) {
                            attrs.insert(Rc::from("__dataclass__"), Value::Bool(true));
                        }
                    } else {
                        v = Value::Unknown;
                    }
                }
                self.set_var(&mut s2, ctx, &def.name, v);
                out.push((s2, Flow::Normal));
            }
        }
        out
    }

    // ----- assignment -------------------------------------------------------------------

    pub fn assign(&mut self, t: &Target, v: Value, st: State, ctx: &Ctx) -> Vec<State> {
        match t {
            Target::Name(n, span) => {
                let mut st = st;
                self.log_shape(&st, *span, n, &v);
                let v = self.label_value(&mut st, v, n);
                self.set_var(&mut st, ctx, n, v);
                vec![st]
            }
            Target::Attr(obj, name, span) => {
                self.log_shape(&st, *span, name, &v);
                let mut out = Vec::new();
                for (mut st, o) in self.eval(obj, st, ctx) {
                    let v = self.label_value(&mut st, v.clone(), name);
                    self.set_attr(&mut st, &o, name, v);
                    out.push(st);
                }
                out
            }
            Target::Subscript(obj, idx, span) => {
                let mut out = Vec::new();
                for (st, o) in self.eval(obj, st, ctx) {
                    for (mut st, i) in self.eval(idx, st, ctx) {
                        self.set_item(&mut st, &o, &i, v.clone(), *span);
                        out.push(st);
                    }
                }
                out
            }
            Target::Tuple(items, star, _) => {
                let mut st = st;
                let elems = match &v {
                    Value::Tensor(_) => None,
                    _ => self.iterate(&mut st, &v, t.span()),
                };
                let parts: Vec<Value> = match (elems, star) {
                    (Some(e), None) if e.len() == items.len() => e,
                    (Some(e), Some(k)) if e.len() + 1 >= items.len() => {
                        let after = items.len() - k - 1;
                        let mut parts: Vec<Value> = e[..*k].to_vec();
                        let mid = e[*k..e.len() - after].to_vec();
                        let lid = st.alloc(Obj::List(mid));
                        parts.push(Value::Ref(lid));
                        parts.extend(e[e.len() - after..].iter().cloned());
                        parts
                    }
                    (Some(_), _) => {
                        // unpacking a sequence of the wrong length raises: the path ends
                        return Vec::new();
                    }
                    (None, _) => match models::unpack(self, &mut st, &v, items.len()) {
                        Some(parts) if star.is_none() => parts,
                        _ => vec![Value::Unknown; items.len()],
                    },
                };
                let mut states = vec![st];
                for (t, p) in items.iter().zip(parts) {
                    let mut next = Vec::new();
                    for st in states {
                        next.extend(self.assign(t, p.clone(), st, ctx));
                    }
                    states = next;
                }
                states
            }
            Target::Unknown(_) => vec![st],
        }
    }

    fn log_shape(&mut self, st: &State, span: Span, name: &str, v: &Value) {
        if self.shape_log.is_none() || torch::zoo::is_embedded(span) {
            return;
        }
        let Value::Tensor(t) = v else { return };
        let dtype = match t.dtype {
            Some(d) => format!(" {d:?}").to_lowercase(),
            None => String::new(),
        };
        let text = format!("{name}: {}{dtype}", self.show_shape(st, &t.shape));
        let line = self.line(span);
        if let Some(log) = self.shape_log.as_mut() {
            log.entry(line).or_default().insert(text);
        }
    }

    /// Give a freshly built layer the name it is assigned to ("fc2").
    fn label_value(&mut self, st: &mut State, v: Value, name: &Name) -> Value {
        if let Value::Ref(id) = &v {
            if let Obj::Layer(l) = st.get(*id) {
                if l.label.is_none() {
                    let line = self.line(l.span);
                    if let Obj::Layer(l) = st.get_mut(*id) {
                        l.label = Some(Rc::from(format!("{name} (line {line})")));
                    }
                }
            }
        }
        v
    }

    pub fn set_attr(&mut self, st: &mut State, o: &Value, name: &Name, v: Value) {
        if let Value::Ref(id) = o {
            match st.get_mut(*id) {
                Obj::Instance { attrs, .. }
                | Obj::Class { attrs, .. }
                | Obj::Namespace { attrs, .. }
                | Obj::Container { attrs, .. } => {
                    attrs.insert(name.clone(), v);
                }
                Obj::Layer(l) => {
                    l.attrs.insert(name.clone(), v);
                }
                _ => {}
            }
        }
    }

    fn set_item(&mut self, st: &mut State, o: &Value, i: &Value, v: Value, _span: Span) {
        if let Value::Ref(id) = o {
            let key = i.clone();
            match st.get_mut(*id) {
                Obj::List(items) => {
                    match key.as_const_int() {
                        Some(k) => {
                            let n = items.len() as i128;
                            let k = if k < 0 { k + n } else { k };
                            if k >= 0 && k < n {
                                items[k as usize] = v;
                            }
                        }
                        None => {
                            for it in items.iter_mut() {
                                *it = Value::Unknown;
                            }
                        }
                    }
                }
                Obj::Dict(items) => {
                    if matches!(key, Value::Str(Some(_)) | Value::Int(_) | Value::Bool(_)) && key.as_const_int().is_some() || key.as_str().is_some() {
                        if let Some(e) = items.iter_mut().find(|(k, _)| *k == key) {
                            e.1 = v;
                        } else {
                            items.push((key, v));
                        }
                    } else {
                        items.clear();
                        items.push((Value::Unknown, Value::Unknown));
                    }
                }
                // `heads["topic"] = nn.Linear(...)`: replaces the module under that key
                Obj::Container { items, kind: ContainerKind::ModuleDict, .. } => match key.as_str() {
                    Some(k) => match items.iter_mut().find(|(n, _)| n.as_deref() == Some(k)) {
                        Some(e) => e.1 = v,
                        None => items.push((Some(Rc::from(k)), v)),
                    },
                    None => items.iter_mut().for_each(|it| it.1 = Value::Unknown),
                },
                // `model.classifier[6] = nn.Linear(4096, 10)`: the module in that slot is replaced
                Obj::Container { items, kind: ContainerKind::Sequential | ContainerKind::ModuleList, .. } => {
                    let n = items.len() as i128;
                    match key.as_const_int().map(|k| if k < 0 { k + n } else { k }) {
                        Some(k) if (0..n).contains(&k) => items[k as usize].1 = v,
                        // out of range: torch raises IndexError; nothing is claimed
                        Some(_) => {}
                        None => items.iter_mut().for_each(|it| it.1 = Value::Unknown),
                    }
                }
                _ => {}
            }
        }
    }

    // ----- conditions -------------------------------------------------------------------

    /// Evaluate a test and split the paths by its truth: `(opaque, (truth, state))`.
    pub fn truth(&mut self, test: &Expr, st: State, ctx: &Ctx) -> Vec<(bool, (bool, State))> {
        let mut out = Vec::new();
        for (st, v) in self.eval(test, st, ctx) {
            out.extend(self.split(v, st, test.span));
        }
        out
    }

    pub fn split(&mut self, v: Value, st: State, span: Span) -> Vec<(bool, (bool, State))> {
        match self.truthiness(&st, &v) {
            Tri::True => vec![(false, (true, st))],
            Tri::False => vec![(false, (false, st))],
            Tri::Unknown => {
                if let Value::Cond(c) = &v {
                    let mut out = Vec::new();
                    for (c, side) in [(Some(c.clone()), true), (c.negate(), false)] {
                        let Some(c) = c else { continue };
                        let mut s = st.clone();
                        if s.facts.assume(&self.syms, &c) {
                            s.branches.push(Branch::Sym(c));
                            out.push((false, (side, s)));
                        }
                    }
                    return out;
                }
                let mut a = st.clone();
                let mut b = st;
                self.tick_opaque(&mut a, span, 1);
                self.tick_opaque(&mut b, span, 0);
                vec![(true, (true, a)), (true, (false, b))]
            }
        }
    }

    pub fn truthiness(&self, st: &State, v: &Value) -> Tri {
        match v {
            Value::None => Tri::False,
            Value::Bool(b) => Tri::from_bool(*b),
            Value::Int(p) => match p.as_const() {
                Some(c) => Tri::from_bool(c != 0),
                None => st.facts.compare(&self.syms, p, Rel::Ne, &Poly::constant(0)),
            },
            Value::Float(Some(f)) => Tri::from_bool(*f != 0.0),
            Value::Str(Some(s)) => Tri::from_bool(!s.is_empty()),
            Value::Tuple(t) => Tri::from_bool(!t.is_empty()),
            Value::Cond(c) => st.facts.decide(&self.syms, c),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(l) => Tri::from_bool(!l.is_empty()),
                Obj::Dict(d) => {
                    if d.iter().any(|(k, _)| k.is_unknown()) { Tri::Unknown } else { Tri::from_bool(!d.is_empty()) }
                }
                Obj::Container { items, .. } => Tri::from_bool(!items.is_empty()),
                _ => Tri::True,
            },
            Value::Func(_) | Value::Bound(..) | Value::Lib(_) | Value::Builtin(_) | Value::DType(_) => Tri::True,
            Value::Range(a, b, _) => match (a.as_const(), b.as_const()) {
                (Some(a), Some(b)) => Tri::from_bool(b > a),
                _ => Tri::Unknown,
            },
            _ => Tri::Unknown,
        }
    }

    // ----- expressions ------------------------------------------------------------------

    pub fn eval_list(&mut self, es: &[Expr], st: State, ctx: &Ctx) -> Vec<(State, Vec<Value>)> {
        let mut acc: Vec<(State, Vec<Value>)> = vec![(st, Vec::with_capacity(es.len()))];
        for e in es {
            let mut next = Vec::new();
            for (st, vs) in acc {
                let results = self.eval(e, st, ctx);
                let n = results.len();
                for (i, (st, v)) in results.into_iter().enumerate() {
                    let mut vs2 = if i + 1 == n { vs.clone() } else { vs.clone() };
                    if let ExprKind::Starred(_) = e.kind {
                        // splice *iterable
                        let mut st = st;
                        match self.iterate(&mut st, &v, e.span) {
                            Some(items) => vs2.extend(items),
                            None => {
                                next.push((st, vec![Value::Unknown; 0]).clone());
                                // unknown splice: mark the whole list unknown
                                if let Some(last) = next.last_mut() {
                                    last.1 = vec![Value::Unknown];
                                    last.1.insert(0, Value::Str(Some(Rc::from("<unknown splice>"))));
                                }
                                continue;
                            }
                        }
                        next.push((st, vs2));
                    } else {
                        vs2.push(v);
                        next.push((st, vs2));
                    }
                }
            }
            acc = next;
        }
        acc
    }

    pub fn eval(&mut self, e: &Expr, st: State, ctx: &Ctx) -> Vals {
        if !self.tick() {
            return Vec::new();
        }
        match &e.kind {
            ExprKind::Name(n) => {
                let v = self.lookup(&st, ctx, n).unwrap_or(Value::Unknown);
                vec![(st, v)]
            }
            ExprKind::Const(c) => vec![(st, const_value(c))],
            ExprKind::Attr(obj, name) => {
                let mut out = Vec::new();
                for (st, o) in self.eval(obj, st, ctx) {
                    out.extend(self.get_attr(st, o, name, e.span));
                }
                out
            }
            ExprKind::Subscript(obj, idx) => {
                let mut out = Vec::new();
                for (st, o) in self.eval(obj, st, ctx) {
                    for (st, i) in self.eval(idx, st, ctx) {
                        out.extend(self.subscript(st, o.clone(), i, e.span));
                    }
                }
                out
            }
            ExprKind::Slice(a, b, c) => {
                // bounds left out are None
                let mut results: Vec<(State, Vec<Value>)> = vec![(st, Vec::new())];
                for part in [a, b, c] {
                    let mut next = Vec::new();
                    for (st, vs) in results {
                        let vals = match part {
                            Some(p) => self.eval(p, st, ctx),
                            None => vec![(st, Value::None)],
                        };
                        for (st, v) in vals {
                            let mut vs = vs.clone();
                            vs.push(v);
                            next.push((st, vs));
                        }
                    }
                    results = next;
                }
                results.into_iter().map(|(s, vs)| (s, Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<slice>"))), vs[0].clone(), vs[1].clone(), vs[2].clone()])))).collect()
            }
            ExprKind::Call { func, args, kwargs } => self.eval_call(func, args, kwargs, st, ctx, e.span),
            ExprKind::BinOp(op, a, b) => {
                let mut out = Vec::new();
                for (st, x) in self.eval(a, st, ctx) {
                    for (st, y) in self.eval(b, st, ctx) {
                        out.extend(self.binop(*op, x.clone(), y, st, e.span, false));
                    }
                }
                out
            }
            ExprKind::UnaryOp(op, a) => {
                let mut out = Vec::new();
                for (st, x) in self.eval(a, st, ctx) {
                    let v = match op {
                        UnaryOp::Not => match self.truthiness(&st, &x) {
                            Tri::True => Value::Bool(false),
                            Tri::False => Value::Bool(true),
                            Tri::Unknown => match &x {
                                Value::Cond(c) => c.negate().map(Value::Cond).unwrap_or(Value::Unknown),
                                _ => Value::Unknown,
                            },
                        },
                        UnaryOp::Neg => match &x {
                            Value::Int(p) => p.neg().map(Value::Int).unwrap_or(Value::Unknown),
                            Value::Bool(b) => Value::int(-(*b as i128)),
                            Value::Float(f) => Value::Float(f.map(|f| -f)),
                            Value::Tensor(_) => x.clone(),
                            _ => Value::Unknown,
                        },
                        UnaryOp::Pos => x.clone(),
                        UnaryOp::Invert => match &x {
                            Value::Int(p) => p.neg().and_then(|p| p.add_const(-1)).map(Value::Int).unwrap_or(Value::Unknown),
                            Value::Tensor(_) => x.clone(),
                            _ => Value::Unknown,
                        },
                    };
                    out.push((st, v));
                }
                out
            }
            ExprKind::BoolOp { is_and, values } => self.bool_op(*is_and, values, st, ctx),
            ExprKind::Compare(first, rest) => self.compare(first, rest, st, ctx),
            ExprKind::IfExp { test, body, orelse } => {
                let mut out = Vec::new();
                for (_, (truth, st)) in self.truth(test, st, ctx) {
                    out.extend(self.eval(if truth { body } else { orelse }, st, ctx));
                }
                merge_vals(out, self.settings.prune)
            }
            ExprKind::Tuple(items) => {
                self.eval_list(items, st, ctx).into_iter().map(|(s, vs)| (s, tuple_or_unknown(vs))).collect()
            }
            ExprKind::List(items) | ExprKind::Set(items) => {
                let is_list = matches!(e.kind, ExprKind::List(_));
                self.eval_list(items, st, ctx)
                    .into_iter()
                    .map(|(mut s, vs)| {
                        if !is_list || is_splice_unknown(&vs) {
                            return (s, Value::Unknown);
                        }
                        let id = s.alloc(Obj::List(vs));
                        (s, Value::Ref(id))
                    })
                    .collect()
            }
            ExprKind::Dict(items) => {
                let mut acc: Vec<(State, Vec<(Value, Value)>)> = vec![(st, Vec::new())];
                for (k, v) in items {
                    let mut next = Vec::new();
                    for (st, kv) in acc {
                        match k {
                            Some(k) => {
                                for (st, kk) in self.eval(k, st, ctx) {
                                    for (st, vv) in self.eval(v, st, ctx) {
                                        let mut kv = kv.clone();
                                        kv.retain(|(x, _)| *x != kk);
                                        kv.push((kk.clone(), vv));
                                        next.push((st, kv));
                                    }
                                }
                            }
                            None => {
                                for (st, d) in self.eval(v, st, ctx) {
                                    let mut kv = kv.clone();
                                    match &d {
                                        Value::Ref(id) => match st.get(*id) {
                                            Obj::Dict(items) => {
                                                for (k2, v2) in items {
                                                    kv.retain(|(x, _)| x != k2);
                                                    kv.push((k2.clone(), v2.clone()));
                                                }
                                            }
                                            _ => kv.push((Value::Unknown, Value::Unknown)),
                                        },
                                        _ => kv.push((Value::Unknown, Value::Unknown)),
                                    }
                                    next.push((st, kv));
                                }
                            }
                        }
                    }
                    acc = next;
                }
                acc.into_iter()
                    .map(|(mut s, kv)| {
                        let id = s.alloc(Obj::Dict(kv));
                        (s, Value::Ref(id))
                    })
                    .collect()
            }
            ExprKind::Comp { kind, elt, value, generators } => self.comprehension(*kind, elt, value.as_deref(), generators, st, ctx),
            ExprKind::Lambda(def) => self.make_function(def, st, ctx),
            ExprKind::Starred(inner) => self.eval(inner, st, ctx),
            ExprKind::Named(n, v) => {
                let mut out = Vec::new();
                for (mut st, x) in self.eval(v, st, ctx) {
                    self.set_var(&mut st, ctx, n, x.clone());
                    out.push((st, x));
                }
                out
            }
            ExprKind::FString(parts) => {
                let mut out = Vec::new();
                for (st, _) in self.eval_list(parts, st, ctx) {
                    out.push((st, Value::Str(None)));
                }
                out
            }
            ExprKind::Yield(v) => {
                // a `yield` inside an expression: evaluate the value for its checks
                let mut out = Vec::new();
                match v {
                    Some(v) => out.extend(self.eval(v, st, ctx).into_iter().map(|(s, _)| (s, Value::Unknown))),
                    None => out.push((st, Value::Unknown)),
                }
                out
            }
            ExprKind::Unknown => vec![(st, Value::Unknown)],
        }
    }

    fn bool_op(&mut self, is_and: bool, values: &[Expr], st: State, ctx: &Ctx) -> Vals {
        let Some((first, rest)) = values.split_first() else { return vec![(st, Value::Unknown)] };
        let mut out = Vec::new();
        for (st, v) in self.eval(first, st, ctx) {
            if rest.is_empty() {
                out.push((st, v));
                continue;
            }
            for (_, (truth, st)) in self.split(v.clone(), st, first.span) {
                // `a and b`: a falsy a is the result; `a or b`: a truthy a is the result
                if truth != is_and {
                    let r = match &v {
                        Value::Cond(_) => Value::Bool(truth),
                        _ => v.clone(),
                    };
                    out.push((st, r));
                } else {
                    out.extend(self.bool_op(is_and, rest, st, ctx));
                }
            }
        }
        merge_vals(out, self.settings.prune)
    }

    fn compare(&mut self, first: &Expr, rest: &[(CmpOp, Expr)], st: State, ctx: &Ctx) -> Vals {
        let mut out = Vec::new();
        for (st, a) in self.eval(first, st, ctx) {
            out.extend(self.compare_chain(a, rest, st, ctx));
        }
        out
    }

    fn compare_chain(&mut self, a: Value, rest: &[(CmpOp, Expr)], st: State, ctx: &Ctx) -> Vals {
        let Some(((op, e), tail)) = rest.split_first() else { return vec![(st, Value::Bool(true))] };
        let mut out = Vec::new();
        for (st, b) in self.eval(e, st, ctx) {
            let is_tensor = |v: &Value| matches!(v, Value::Tensor(_));
            if tail.is_empty() && (is_tensor(&a) || is_tensor(&b)) && matches!(op, CmpOp::Eq | CmpOp::NotEq | CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE) {
                // elementwise comparison: a broadcast bool tensor
                out.extend(torch::tensor::compare(self, st, a.clone(), b, e.span));
                continue;
            }
            let r = self.cmp(&st, *op, &a, &b);
            if tail.is_empty() {
                out.push((st, r));
                continue;
            }
            for (_, (truth, st)) in self.split(r.clone(), st, e.span) {
                if truth {
                    out.extend(self.compare_chain(b.clone(), tail, st, ctx));
                } else {
                    out.push((st, Value::Bool(false)));
                }
            }
        }
        out
    }

    pub fn cmp(&self, st: &State, op: CmpOp, a: &Value, b: &Value) -> Value {
        let ints = |v: &Value| -> Option<Poly> {
            match v {
                Value::Int(p) => Some(p.clone()),
                Value::Bool(b) => Some(Poly::constant(*b as i128)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (ints(a), ints(b)) {
            let (rel, l, r) = match op {
                CmpOp::Eq | CmpOp::Is => (Rel::Eq, x, y),
                CmpOp::NotEq | CmpOp::IsNot => (Rel::Ne, x, y),
                CmpOp::Lt => (Rel::Lt, x, y),
                CmpOp::LtE => (Rel::Le, x, y),
                CmpOp::Gt => (Rel::Lt, y, x),
                CmpOp::GtE => (Rel::Le, y, x),
                _ => return Value::Unknown,
            };
            let Some(c) = Cond::cmp(&l, rel, &r) else { return Value::Unknown };
            return match st.facts.decide(&self.syms, &c) {
                Tri::True => Value::Bool(true),
                Tri::False => Value::Bool(false),
                Tri::Unknown => Value::Cond(c),
            };
        }
        match op {
            CmpOp::Is | CmpOp::IsNot => {
                let same = match (a, b) {
                    (Value::None, Value::None) => Some(true),
                    (Value::None, Value::Unknown) | (Value::Unknown, Value::None) => None,
                    (Value::None, _) | (_, Value::None) => Some(false),
                    (Value::Bool(x), Value::Bool(y)) => Some(x == y),
                    (Value::Ref(x), Value::Ref(y)) => Some(x == y),
                    _ => None,
                };
                match same {
                    Some(s) => Value::Bool(if op == CmpOp::Is { s } else { !s }),
                    None => Value::Unknown,
                }
            }
            CmpOp::Eq | CmpOp::NotEq => {
                let same = match (a, b) {
                    (Value::Str(Some(x)), Value::Str(Some(y))) => Some(x == y),
                    (Value::None, Value::None) => Some(true),
                    (Value::Str(Some(_)), Value::None) | (Value::None, Value::Str(Some(_))) => Some(false),
                    // an int never equals a string (`v == "M"` over a VGG config)
                    (Value::Int(_), Value::Str(_)) | (Value::Str(_), Value::Int(_)) => Some(false),
                    (Value::Float(Some(x)), Value::Float(Some(y))) => Some(x == y),
                    (Value::DType(x), Value::DType(y)) => Some(x == y),
                    // a dtype is never None, a string or an int
                    (Value::DType(_), Value::None | Value::Str(Some(_)) | Value::Int(_)) | (Value::None | Value::Str(Some(_)) | Value::Int(_), Value::DType(_)) => Some(false),
                    _ => None,
                };
                match same {
                    Some(s) => Value::Bool(if op == CmpOp::Eq { s } else { !s }),
                    None => Value::Unknown,
                }
            }
            CmpOp::In | CmpOp::NotIn => {
                let found = match b {
                    Value::Tuple(items) => contains(items, a),
                    Value::Ref(id) => match st.get(*id) {
                        Obj::List(items) => contains(items, a),
                        Obj::Dict(items) => {
                            if items.iter().any(|(k, _)| k.is_unknown()) {
                                None
                            } else {
                                contains(&items.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), a)
                            }
                        }
                        _ => None,
                    },
                    Value::Str(Some(s)) => a.as_str().map(|x| s.contains(x)),
                    _ => None,
                };
                match found {
                    Some(f) => Value::Bool(if op == CmpOp::In { f } else { !f }),
                    None => Value::Unknown,
                }
            }
            _ => {
                if let (Value::Float(Some(x)), Value::Float(Some(y))) = (a, b) {
                    return Value::Bool(match op {
                        CmpOp::Lt => x < y,
                        CmpOp::LtE => x <= y,
                        CmpOp::Gt => x > y,
                        _ => x >= y,
                    });
                }
                Value::Unknown
            }
        }
    }

    fn comprehension(&mut self, kind: CompKind, elt: &Expr, value: Option<&Expr>, gens: &[Comprehension], st: State, ctx: &Ctx) -> Vals {
        // comprehensions run in their own scope
        let mut st = st;
        let scope = st.alloc(Obj::Scope { vars: BTreeMap::new(), parent: Some(ctx.scope) });
        let cctx = Ctx { scope, class_body: None, ..ctx.clone() };
        let results = self.comp_level(kind, elt, value, gens, st, &cctx);
        let mut out = Vec::new();
        for (mut st, items) in results {
            let v = match (kind, items) {
                (CompKind::List, Some(items)) => Value::Ref(st.alloc(Obj::List(items))),
                (CompKind::Dict, Some(items)) => {
                    let pairs = items
                        .into_iter()
                        .map(|kv| match kv {
                            Value::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                            _ => (Value::Unknown, Value::Unknown),
                        })
                        .collect();
                    Value::Ref(st.alloc(Obj::Dict(pairs)))
                }
                (CompKind::Generator, Some(items)) => Value::Tuple(Rc::new(items)),
                _ => Value::Unknown,
            };
            out.push((st, v));
        }
        out
    }

    /// Items produced by nested generators, or `None` when their number is unknown.
    fn comp_level(&mut self, kind: CompKind, elt: &Expr, value: Option<&Expr>, gens: &[Comprehension], st: State, ctx: &Ctx) -> Vec<(State, Option<Vec<Value>>)> {
        let Some((g, rest)) = gens.split_first() else {
            let mut out = Vec::new();
            for (st, k) in self.eval(elt, st, ctx) {
                match value {
                    Some(v) => {
                        for (st, vv) in self.eval(v, st, ctx) {
                            out.push((st, Some(vec![Value::Tuple(Rc::new(vec![k.clone(), vv]))])));
                        }
                    }
                    None => out.push((st, Some(vec![k.clone()]))),
                }
            }
            return out;
        };
        let mut out = Vec::new();
        for (mut st, it) in self.eval(&g.iter, st, ctx) {
            let items = self.iterate(&mut st, &it, g.iter.span);
            match items {
                Some(items) if items.len() <= UNROLL => {
                    let mut acc: Vec<(State, Option<Vec<Value>>)> = vec![(st, Some(Vec::new()))];
                    for item in items {
                        let mut next = Vec::new();
                        for (st, got) in acc {
                            for st in self.assign(&g.target, item.clone(), st, ctx) {
                                // filters
                                let mut passing: Vec<(State, bool)> = vec![(st, false)];
                                for cond in &g.ifs {
                                    let mut n2 = Vec::new();
                                    for (st, opaque) in passing {
                                        for (op, (truth, st)) in self.truth(cond, st, ctx) {
                                            if truth {
                                                n2.push((st, opaque || op));
                                            }
                                        }
                                    }
                                    passing = n2;
                                }
                                for (st, opaque) in passing {
                                    for (st, sub) in self.comp_level(kind, elt, value, rest, st, ctx) {
                                        let merged = match (&got, sub) {
                                            (Some(a), Some(b)) if !opaque => {
                                                let mut a = a.clone();
                                                a.extend(b);
                                                Some(a)
                                            }
                                            _ => None,
                                        };
                                        next.push((st, merged));
                                    }
                                }
                            }
                        }
                        acc = next;
                        if acc.len() > self.settings.max_paths {
                            self.abandoned = true;
                            return Vec::new();
                        }
                    }
                    out.extend(acc);
                }
                _ => {
                    // unknown length: evaluate the element once for its checks
                    let elem = self.element_of(&mut st, &it);
                    for st in self.assign(&g.target, elem, st, ctx) {
                        for (st, _) in self.comp_level(kind, elt, value, rest, st, ctx) {
                            out.push((st, None));
                        }
                    }
                }
            }
        }
        out
    }

    // ----- attributes and subscripts ------------------------------------------------------

    pub fn class_lookup(&self, st: &State, class: ObjId, name: &str) -> Option<(ObjId, Value)> {
        let mut stack = vec![class];
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            if let Obj::Class { attrs, bases, .. } = st.get(c) {
                if let Some(v) = attrs.get(name) {
                    return Some((c, v.clone()));
                }
                for b in bases.iter().rev() {
                    if let Value::Ref(bid) = b {
                        stack.push(*bid);
                    }
                }
            }
        }
        None
    }

    /// Does the class derive from a library class (e.g. `torch.nn.Module`)?
    pub fn lib_base(&self, st: &State, class: ObjId) -> Option<Rc<str>> {
        let mut stack = vec![class];
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            if let Obj::Class { bases, .. } = st.get(c) {
                for b in bases {
                    match b {
                        Value::Ref(bid) => stack.push(*bid),
                        Value::Lib(p) => return Some(p.clone()),
                        _ => {}
                    }
                }
            }
        }
        None
    }

    pub fn has_unknown_base(&self, st: &State, class: ObjId) -> bool {
        let mut stack = vec![class];
        let mut seen = 0;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > 64 {
                return true;
            }
            if let Obj::Class { bases, .. } = st.get(c) {
                for b in bases {
                    match b {
                        Value::Ref(bid) => stack.push(*bid),
                        Value::Lib(_) => {}
                        _ => return true,
                    }
                }
            }
        }
        false
    }

    pub fn get_attr(&mut self, st: State, o: Value, name: &Name, span: Span) -> Vals {
        match &o {
            Value::Ref(id) => {
                let id = *id;
                match st.get(id).clone() {
                    Obj::Instance { class, attrs } => {
                        if let Some(v) = attrs.get(name) {
                            return vec![(st, v.clone())];
                        }
                        if let Some((_, v)) = self.class_lookup(&st, class, name) {
                            return match v {
                                Value::Func(f) => match f.kind {
                                    FuncKind::Static => vec![(st, Value::Func(f))],
                                    FuncKind::Property => self.call_closure(&f, vec![o.clone()], Vec::new(), st, span),
                                    FuncKind::ClassMethod => vec![(st, Value::Bound(Box::new(Value::Ref(class)), f))],
                                    FuncKind::Plain => vec![(st, Value::Bound(Box::new(o.clone()), f))],
                                },
                                other => vec![(st, other)],
                            };
                        }
                        if self.has_unknown_base(&st, class) {
                            return vec![(st, Value::Unknown)];
                        }
                        match self.lib_base(&st, class) {
                            Some(_) => torch::module_attr(self, st, o.clone(), name),
                            None => vec![(st, Value::Unknown)],
                        }
                    }
                    Obj::Class { .. } => match self.class_lookup(&st, id, name) {
                        Some((_, Value::Func(f))) if f.kind == FuncKind::ClassMethod => {
                            vec![(st, Value::Bound(Box::new(o.clone()), f))]
                        }
                        Some((_, v)) => vec![(st, v)],
                        None => vec![(st, Value::Unknown)],
                    },
                    Obj::Namespace { kind, attrs } => {
                        if &*kind == "ArgParser" {
                            return vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))];
                        }
                        let v = attrs.get(name).cloned().unwrap_or(Value::Unknown);
                        vec![(st, v)]
                    }
                    Obj::Layer(l) => {
                        if let Some(v) = l.attrs.get(name) {
                            return vec![(st, v.clone())];
                        }
                        torch::layer_attr(self, st, o.clone(), name)
                    }
                    Obj::Container { attrs, .. } => {
                        if let Some(v) = attrs.get(name) {
                            return vec![(st, v.clone())];
                        }
                        torch::module_attr(self, st, o.clone(), name)
                    }
                    Obj::List(_) | Obj::Dict(_) => vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))],
                    Obj::Scope { .. } => vec![(st, Value::Unknown)],
                }
            }
            Value::Super(class, recv) => {
                // look the name up in the bases of `class`
                let bases = match st.get(*class) {
                    Obj::Class { bases, .. } => bases.clone(),
                    _ => Vec::new(),
                };
                for b in &bases {
                    match b {
                        Value::Ref(bid) => {
                            if let Some((_, v)) = self.class_lookup(&st, *bid, name) {
                                return match v {
                                    Value::Func(f) if f.kind == FuncKind::Plain => vec![(st, Value::Bound(recv.clone(), f))],
                                    Value::Func(f) if f.kind == FuncKind::Property => self.call_closure(&f, vec![(**recv).clone()], Vec::new(), st, span),
                                    v => vec![(st, v)],
                                };
                            }
                        }
                        Value::Lib(p) => {
                            return vec![(st, Value::LibMethod(recv.clone(), Rc::from(format!("{p}.{name}"))))];
                        }
                        _ => return vec![(st, Value::Unknown)],
                    }
                }
                vec![(st, Value::Unknown)]
            }
            Value::Lib(path) => vec![(st, models::lib_attr(path, name))],
            Value::Tensor(_) => torch::tensor_attr(self, st, o.clone(), name, span),
            Value::Str(_) | Value::Tuple(_) | Value::Int(_) | Value::Float(_) | Value::Range(..) => {
                vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))]
            }
            _ => vec![(st, Value::Unknown)],
        }
    }

    pub fn subscript(&mut self, st: State, o: Value, i: Value, span: Span) -> Vals {
        let seq_index = |items: &[Value], i: &Value| -> Option<Value> {
            let k = i.as_const_int()?;
            let n = items.len() as i128;
            let k = if k < 0 { k + n } else { k };
            if k >= 0 && k < n { Some(items[k as usize].clone()) } else { None }
        };
        let slice_of = |items: &[Value], i: &Value| -> Option<Vec<Value>> {
            let Value::Tuple(t) = i else { return None };
            if t.len() != 4 || t[0].as_str() != Some("<slice>") {
                return None;
            }
            let n = items.len() as i128;
            let get = |v: &Value, d: i128| -> Option<i128> {
                match v {
                    Value::None => Some(d),
                    _ => v.as_const_int(),
                }
            };
            let step = get(&t[3], 1)?;
            if step != 1 {
                return None;
            }
            let clamp = |k: i128| -> i128 { if k < 0 { (k + n).max(0) } else { k.min(n) } };
            let a = clamp(get(&t[1], 0)?);
            let b = clamp(get(&t[2], n)?);
            Some(if a < b { items[a as usize..b as usize].to_vec() } else { Vec::new() })
        };
        match &o {
            Value::Tuple(items) => {
                if let Some(v) = seq_index(items, &i) {
                    return vec![(st, v)];
                }
                if let Some(s) = slice_of(items, &i) {
                    return vec![(st, Value::Tuple(Rc::new(s)))];
                }
                vec![(st, Value::Unknown)]
            }
            Value::Ref(id) => match st.get(*id).clone() {
                Obj::List(items) => {
                    if let Some(v) = seq_index(&items, &i) {
                        return vec![(st, v)];
                    }
                    if let Some(s) = slice_of(&items, &i) {
                        let mut st = st;
                        let nid = st.alloc(Obj::List(s));
                        return vec![(st, Value::Ref(nid))];
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Dict(items) => {
                    if i.as_str().is_some() || i.as_const_int().is_some() {
                        if let Some((_, v)) = items.iter().find(|(k, _)| *k == i) {
                            return vec![(st, v.clone())];
                        }
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Container { kind, items, attrs } => {
                    let vals: Vec<Value> = items.iter().map(|(_, v)| v.clone()).collect();
                    if kind == ContainerKind::ModuleDict {
                        if let Some(k) = i.as_str() {
                            if let Some((_, v)) = items.iter().find(|(kk, _)| kk.as_deref() == Some(k)) {
                                return vec![(st, v.clone())];
                            }
                        }
                        return vec![(st, Value::Unknown)];
                    }
                    if let Some(v) = seq_index(&vals, &i) {
                        return vec![(st, v)];
                    }
                    if let Some(s) = slice_of(&vals, &i) {
                        let mut st = st;
                        let nid = st.alloc(Obj::Container { kind, items: s.into_iter().map(|v| (None, v)).collect(), attrs });
                        return vec![(st, Value::Ref(nid))];
                    }
                    vec![(st, Value::Unknown)]
                }
                Obj::Instance { .. } => {
                    let gi: Name = Rc::from("__getitem__");
                    let mut out = Vec::new();
                    for (st, m) in self.get_attr(st, o.clone(), &gi, span) {
                        out.extend(self.call(m, vec![i.clone()], Vec::new(), st, span));
                    }
                    out
                }
                _ => vec![(st, Value::Unknown)],
            },
            Value::Tensor(_) => torch::tensor_index(self, st, o.clone(), i, span),
            // a known string: a character or a substring
            Value::Str(Some(text)) if text.len() <= 1 << 16 => {
                let chars: Vec<Value> = text.chars().map(|c| Value::Str(Some(Rc::from(c.to_string())))).collect();
                if let Some(v) = seq_index(&chars, &i) {
                    return vec![(st, v)];
                }
                if let Some(part) = slice_of(&chars, &i) {
                    let joined: String = part.iter().filter_map(|c| c.as_str()).collect();
                    return vec![(st, Value::Str(Some(Rc::from(joined))))];
                }
                vec![(st, Value::Unknown)]
            }
            _ => vec![(st, Value::Unknown)],
        }
    }

    // ----- operators --------------------------------------------------------------------

    pub fn binop(&mut self, op: BinOp, a: Value, b: Value, st: State, span: Span, inplace: bool) -> Vals {
        if matches!(a, Value::Tensor(_)) || matches!(b, Value::Tensor(_)) {
            return torch::tensor_binop(self, st, op, a, b, span, inplace);
        }
        let int_of = |v: &Value| -> Option<Poly> {
            match v {
                Value::Int(p) => Some(p.clone()),
                Value::Bool(b) => Some(Poly::constant(*b as i128)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (int_of(&a), int_of(&b)) {
            let r = match op {
                BinOp::Add => x.add(&y),
                BinOp::Sub => x.sub(&y),
                BinOp::Mul => x.mul(&y),
                BinOp::FloorDiv => {
                    if y.as_const() == Some(0) {
                        return Vec::new(); // ZeroDivisionError
                    }
                    x.floordiv(&y)
                }
                BinOp::Mod => {
                    if y.as_const() == Some(0) {
                        return Vec::new();
                    }
                    x.modulo(&y)
                }
                BinOp::Pow => match y.as_const() {
                    Some(e) if (0..=64).contains(&e) => x.pow(e as u32),
                    _ => None,
                },
                BinOp::Div => {
                    let v = match (x.as_const(), y.as_const()) {
                        (Some(p), Some(q)) if q != 0 => Value::Float(Some(p as f64 / q as f64)),
                        _ => Value::Float(None),
                    };
                    return vec![(st, v)];
                }
                BinOp::LShift => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) if (0..64).contains(&q) && p.abs() < (1 << 60) => p.checked_shl(q as u32).map(Poly::constant),
                    _ => None,
                },
                BinOp::RShift => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) if (0..127).contains(&q) => Some(Poly::constant(p >> q)),
                    _ => None,
                },
                BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => match (x.as_const(), y.as_const()) {
                    (Some(p), Some(q)) => Some(Poly::constant(match op {
                        BinOp::BitAnd => p & q,
                        BinOp::BitOr => p | q,
                        _ => p ^ q,
                    })),
                    _ => None,
                },
                BinOp::MatMul => None,
            };
            return vec![(st, r.map(Value::Int).unwrap_or(Value::Unknown))];
        }
        let float_of = |v: &Value| -> Option<Option<f64>> {
            match v {
                Value::Float(f) => Some(*f),
                Value::Int(p) => Some(p.as_const().map(|c| c as f64)),
                Value::Bool(b) => Some(Some(*b as i64 as f64)),
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (float_of(&a), float_of(&b)) {
            if matches!(a, Value::Float(_)) || matches!(b, Value::Float(_)) {
                let r = match (x, y) {
                    (Some(x), Some(y)) => match op {
                        BinOp::Add => Some(x + y),
                        BinOp::Sub => Some(x - y),
                        BinOp::Mul => Some(x * y),
                        BinOp::Div if y != 0.0 => Some(x / y),
                        BinOp::Pow => Some(x.powf(y)),
                        BinOp::FloorDiv if y != 0.0 => Some((x / y).floor()),
                        _ => None,
                    },
                    _ => None,
                };
                return vec![(st, Value::Float(r.filter(|f| f.is_finite())))];
            }
        }
        let mut st = st;
        match (op, &a, &b) {
            (BinOp::Add, Value::Str(Some(x)), Value::Str(Some(y))) => {
                return vec![(st, Value::Str(Some(Rc::from(format!("{x}{y}")))))];
            }
            (BinOp::Add, Value::Str(_), Value::Str(_)) | (BinOp::Mod, Value::Str(_), _) => return vec![(st, Value::Str(None))],
            (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
                let mut v = x.as_ref().clone();
                v.extend(y.iter().cloned());
                return vec![(st, Value::Tuple(Rc::new(v)))];
            }
            (BinOp::Add, Value::Ref(x), Value::Ref(y)) => {
                if let (Obj::List(p), Obj::List(q)) = (st.get(*x).clone(), st.get(*y).clone()) {
                    let mut v = p;
                    v.extend(q);
                    let id = st.alloc(Obj::List(v));
                    return vec![(st, Value::Ref(id))];
                }
            }
            (BinOp::Mul, Value::Ref(x), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Ref(x)) => {
                if let (Obj::List(p), Some(n)) = (st.get(*x).clone(), n.as_const()) {
                    if (0..=UNROLL as i128).contains(&n) && p.len() * (n as usize) <= 4 * UNROLL {
                        let v: Vec<Value> = (0..n).flat_map(|_| p.iter().cloned()).collect();
                        let id = st.alloc(Obj::List(v));
                        return vec![(st, Value::Ref(id))];
                    }
                }
            }
            (BinOp::Mul, Value::Tuple(p), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Tuple(p)) => {
                if let Some(n) = n.as_const() {
                    if (0..=UNROLL as i128).contains(&n) && p.len() * (n as usize) <= 4 * UNROLL {
                        let v: Vec<Value> = (0..n).flat_map(|_| p.iter().cloned()).collect();
                        return vec![(st, Value::Tuple(Rc::new(v)))];
                    }
                }
            }
            _ => {}
        }
        vec![(st, Value::Unknown)]
    }

    // ----- calls ------------------------------------------------------------------------

    fn eval_call(&mut self, func: &Expr, args: &[Arg], kwargs: &[Kwarg], st: State, ctx: &Ctx, span: Span) -> Vals {
        // `super()` with no arguments
        if let ExprKind::Name(n) = &func.kind {
            if &**n == "super" && args.is_empty() && self.lookup(&st, ctx, "super").map(|v| v == Value::Builtin("super")).unwrap_or(false) {
                return match (ctx.method_class, &ctx.self_val) {
                    (Some(c), Some(s)) => vec![(st, Value::Super(c, Box::new(s.clone())))],
                    _ => vec![(st, Value::Unknown)],
                };
            }
        }
        let label = self.assign_label.take();
        let mut out = Vec::new();
        for (st, f) in self.eval(func, st, ctx) {
            // arguments
            let mut acc: Vec<(State, Vec<Value>, Vec<(Name, Value)>, bool)> = vec![(st, Vec::new(), Vec::new(), false)];
            for a in args {
                let mut next = Vec::new();
                for (st, pos, kw, unk) in acc {
                    for (mut st, v) in self.eval(&a.value, st, ctx) {
                        let mut pos = pos.clone();
                        let mut unk = unk;
                        if a.star {
                            match self.iterate(&mut st, &v, a.value.span) {
                                Some(items) => pos.extend(items),
                                None => unk = true,
                            }
                        } else {
                            pos.push(v);
                        }
                        next.push((st, pos, kw.clone(), unk));
                    }
                }
                acc = next;
            }
            for k in kwargs {
                let mut next = Vec::new();
                for (st, pos, kw, unk) in acc {
                    for (st, v) in self.eval(&k.value, st, ctx) {
                        let mut kw = kw.clone();
                        let mut unk = unk;
                        match &k.name {
                            Some(n) => kw.push((n.clone(), v)),
                            None => match &v {
                                Value::Ref(id) => match st.get(*id) {
                                    Obj::Dict(items) => {
                                        for (kk, vv) in items {
                                            match kk.as_str() {
                                                Some(s) => kw.push((Rc::from(s), vv.clone())),
                                                None => unk = true,
                                            }
                                        }
                                    }
                                    _ => unk = true,
                                },
                                _ => unk = true,
                            },
                        }
                        next.push((st, pos.clone(), kw, unk));
                    }
                }
                acc = next;
            }
            for (st, pos, kw, unk) in acc {
                if unk {
                    // unknown *args/**kwargs: the call's result is unknown, its effects too
                    out.push((st, Value::Unknown));
                    continue;
                }
                self.assign_label = label.clone();
                out.extend(self.call(f.clone(), pos, kw, st, span));
                self.assign_label = None;
            }
        }
        out
    }

    pub fn call(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if torch::zoo::is_embedded(span) {
            return self.call_inner(f, args, kwargs, st, span);
        }
        let outer = self.user_site.replace(span);
        let out = self.call_inner(f, args, kwargs, st, span);
        self.user_site = outer;
        out
    }

    fn call_inner(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if !self.tick() {
            return Vec::new();
        }
        match f {
            Value::Func(c) => self.call_closure(&c, args, kwargs, st, span),
            Value::Bound(recv, c) => {
                let mut a = Vec::with_capacity(args.len() + 1);
                a.push(*recv);
                a.extend(args);
                self.call_closure(&c, a, kwargs, st, span)
            }
            Value::Ref(id) => match st.get(id).clone() {
                Obj::Class { .. } => self.instantiate(id, args, kwargs, st, span),
                Obj::Instance { class, .. } => {
                    let name: Name = Rc::from(if self.lib_base(&st, class).is_some() && self.class_lookup(&st, class, "__call__").is_none() { "forward" } else { "__call__" });
                    match self.class_lookup(&st, class, &name) {
                        Some((_, Value::Func(c))) => {
                            let mut a = vec![Value::Ref(id)];
                            a.extend(args);
                            self.call_closure(&c, a, kwargs, st, span)
                        }
                        _ => {
                            if self.has_unknown_base(&st, class) || self.lib_base(&st, class).is_none() {
                                vec![(st, Value::Unknown)]
                            } else {
                                torch::call_module_value(self, st, Value::Ref(id), args, kwargs, span)
                            }
                        }
                    }
                }
                Obj::Layer(_) | Obj::Container { .. } => torch::call_module_value(self, st, Value::Ref(id), args, kwargs, span),
                _ => vec![(st, Value::Unknown)],
            },
            Value::Lib(path) => models::call_lib(self, st, &path, args, kwargs, span),
            Value::LibMethod(recv, name) => models::call_method(self, st, *recv, &name, args, kwargs, span),
            Value::Builtin(name) => models::builtins::call_builtin(self, st, name, args, kwargs, span),
            _ => vec![(st, Value::Unknown)],
        }
    }

    fn instantiate(&mut self, class: ObjId, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        let mut st = st;
        if self.has_unknown_base(&st, class) {
            // a base class we cannot see: an object we know nothing about
            return vec![(st, Value::Unknown)];
        }
        if let Some(base) = self.lib_base(&st, class) {
            if !models::is_subclassable(&base) {
                return vec![(st, Value::Unknown)];
            }
        }
        let obj = st.alloc(Obj::Instance { class, attrs: BTreeMap::new() });
        let me = Value::Ref(obj);
        let is_dataclass = self.class_lookup(&st, class, "__dataclass__").is_some();
        match self.class_lookup(&st, class, "__init__") {
            Some((_, Value::Func(init))) => {
                let mut a = vec![me.clone()];
                a.extend(args);
                self.call_closure(&init, a, kwargs, st, span).into_iter().map(|(s, _)| (s, me.clone())).collect()
            }
            Some(_) => vec![(st, Value::Unknown)],
            None if is_dataclass => {
                let fields = self.dataclass_fields(&st, class);
                let mut attrs = BTreeMap::new();
                let mut pos = args.into_iter();
                for (name, default) in fields {
                    let given = pos.next().or_else(|| kwargs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()));
                    let v = match (given, default) {
                        (Some(v), _) => v,
                        // `field(default=...)` / `field(default_factory=...)`
                        (None, Some(d @ Value::Ref(_))) => match self.field_default(&mut st, &d, span) {
                            Some(v) => v,
                            None => d,
                        },
                        (None, Some(d)) => d,
                        (None, None) => Value::Unknown,
                    };
                    attrs.insert(name, v);
                }
                if let Obj::Instance { attrs: a, .. } = st.get_mut(obj) {
                    *a = attrs;
                }
                vec![(st, me)]
            }
            None => vec![(st, me)],
        }
    }

    /// The default a `dataclasses.field(...)` gives, calling its factory (`None`: not a field).
    fn field_default(&mut self, st: &mut State, f: &Value, span: Span) -> Option<Value> {
        let Value::Ref(id) = f else { return None };
        let Obj::Namespace { kind, attrs } = st.get(*id).clone() else { return None };
        if &*kind != "Field" {
            return None;
        }
        if let Some(d) = attrs.get("default") {
            return Some(d.clone());
        }
        let factory = attrs.get("default_factory")?.clone();
        let results = self.call(factory, Vec::new(), Vec::new(), st.clone(), span);
        match <[_; 1]>::try_from(results) {
            Ok([(s, v)]) => {
                *st = s;
                Some(v)
            }
            Err(_) => Some(Value::Unknown),
        }
    }

    fn dataclass_fields(&self, st: &State, class: ObjId) -> Vec<(Name, Option<Value>)> {
        let Obj::Class { def: Some(def), attrs, .. } = st.get(class) else { return Vec::new() };
        let mut out = Vec::new();
        for s in &def.body {
            if let StmtKind::AnnAssign { target: Target::Name(n, _), value, .. } = &s.kind {
                let default = if value.is_some() {
                    match attrs.get(n) {
                        // `field(default_factory=...)` etc. is not modelled
                        Some(Value::Unknown) | None => Some(Value::Unknown),
                        Some(v) => Some(v.clone()),
                    }
                } else {
                    None
                };
                out.push((n.clone(), default));
            }
        }
        out
    }

    pub fn call_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        if c.def.is_generator {
            // calling a generator function runs nothing yet
            return vec![(st, Value::Gen(c.clone(), Rc::new(args), Rc::new(kwargs)))];
        }
        self.run_closure(c, args, kwargs, st, span, false)
    }

    /// The first element of a generator, when every path that yields agrees on it.
    pub fn first_yield(&mut self, st: &mut State, g: &Value, span: Span) -> Option<Value> {
        let Value::Gen(c, args, kwargs) = g else { return None };
        let results = self.run_closure(c, args.as_ref().clone(), kwargs.as_ref().clone(), st.clone(), span, true);
        let mut merged = results.into_iter();
        let (s, v) = merged.next()?;
        if merged.next().is_some() {
            return Some(Value::Unknown);
        }
        *st = s;
        Some(v)
    }

    fn run_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span, first_yield: bool) -> Vals {
        if self.call_depth >= MAX_CALL_DEPTH || self.stack.iter().filter(|d| **d == c.def.id).count() >= 3 {
            // deep or recursive: give up on the result, keep the path
            self.cuts += 1;
            return vec![(st, Value::Unknown)];
        }
        if !self.settings.memo || first_yield {
            return self.run_closure_body(c, args, kwargs, st, span, first_yield);
        }
        // a summarised call: replay it
        let entry = super::memo::EntryFacts::of(&st);
        let hit = self.memo.lookup(c, &args, &kwargs, &st, &entry);
        if debug_enabled() {
            eprintln!("[shape-lint debug] call of {} (line {}): summary {}", c.def.name, self.line(c.def.span), if hit.is_some() { "reused" } else { "missing" });
        }
        if let Some(hit) = hit
            && let Some(out) = hit.replay(&st)
        {
            for (site, suffix, tainted, suppressed) in hit.outcomes() {
                let mut branches = st.branches.clone();
                branches.extend(suffix.iter().cloned());
                self.outcomes.push(Outcome { site: *site, branches, verdict: Verdict::Holds, tainted: *tainted, suppressed: *suppressed, condition: None });
            }
            return out;
        }
        // run it, and summarise it if it qualifies (see `super::memo`)
        let counters = (self.syms.infos.len(), self.next_shape_var, self.cuts, self.flagged, self.outcomes.len(), self.label_reads);
        let entry_state = st.clone();
        let (saved_args, saved_kwargs) = (args.clone(), kwargs.clone());
        super::memo::begin_reads();
        let out = self.run_closure_body(c, args, kwargs, st, span, false);
        let reads = super::memo::end_reads();
        let l0 = entry_state.heap.len();
        let qualifies = !self.abandoned
            && counters.0 == self.syms.infos.len()
            && counters.1 == self.next_shape_var
            && counters.2 == self.cuts
            && counters.3 == self.flagged
            && self.outcomes.len() >= counters.4
            && counters.5 == self.label_reads;
        if !qualifies {
            return out;
        }
        // the caller sees one path per distinct result, whatever the merging setting
        let out = merge_vals(out, true);
        let n = entry_state.branches.len();
        let outcomes = self.outcomes[counters.4..]
            .iter()
            .filter(|o| o.branches.len() >= n && o.branches[..n] == entry_state.branches[..])
            .map(|o| (o.site, o.branches[n..].to_vec(), o.tainted, o.suppressed))
            .collect::<Vec<_>>();
        if outcomes.len() == self.outcomes.len() - counters.4 {
            self.memo.store(super::memo::Recorded {
                closure: c,
                args: saved_args,
                kwargs: saved_kwargs,
                entry_state: &entry_state,
                entry,
                reads: reads.into_iter().filter(|r| r.0 < l0).collect(),
                results: &out,
                outcomes,
            });
        }
        out
    }

    /// Bind the arguments and run the body of a user function.
    fn run_closure_body(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span, first_yield: bool) -> Vals {
        let def = c.def.clone();
        let mut st = st;
        let scope = st.alloc(Obj::Scope { vars: BTreeMap::new(), parent: Some(c.scope) });
        // bind parameters
        let mut vars: BTreeMap<Name, Value> = BTreeMap::new();
        let n_params = def.params.len();
        let n_defaults = c.defaults.len();
        let mut extra = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            if i < n_params {
                vars.insert(def.params[i].name.clone(), a);
            } else {
                extra.push(a);
            }
        }
        let mut extra_kw = Vec::new();
        for (k, v) in kwargs {
            if let Some(p) = def.params[def.posonly.min(n_params)..].iter().find(|p| p.name == k) {
                vars.insert(p.name.clone(), v);
            } else if def.kwonly.iter().any(|p| p.name == k) {
                vars.insert(k.clone(), v);
            } else {
                extra_kw.push((k, v));
            }
        }
        for (i, p) in def.params.iter().enumerate() {
            if !vars.contains_key(&p.name) {
                let first_default = n_params - n_defaults;
                if i >= first_default {
                    vars.insert(p.name.clone(), c.defaults[i - first_default].clone());
                } else {
                    // missing argument: a TypeError in Python; be silent
                    vars.insert(p.name.clone(), Value::Unknown);
                }
            }
        }
        for (p, d) in def.kwonly.iter().zip(c.kw_defaults.iter()) {
            if !vars.contains_key(&p.name) {
                vars.insert(p.name.clone(), d.clone().unwrap_or(Value::Unknown));
            }
        }
        if let Some(va) = &def.vararg {
            vars.insert(va.clone(), Value::Tuple(Rc::new(extra)));
        }
        if let Some(kw) = &def.kwarg {
            let items = extra_kw.into_iter().map(|(k, v)| (Value::Str(Some(k)), v)).collect();
            let id = st.alloc(Obj::Dict(items));
            vars.insert(kw.clone(), Value::Ref(id));
        }
        let self_val = def.params.first().and_then(|p| vars.get(&p.name).cloned());
        if let Obj::Scope { vars: v, .. } = st.get_mut(scope) {
            *v = vars;
        }
        let mut globals = Vec::new();
        collect_globals(&def.body, &mut globals);
        let module_scope = self.module_scope_of(&st, c.scope);
        let ctx = Ctx {
            scope,
            module_scope,
            class_body: None,
            method_class: c.class,
            self_val,
            globals: Rc::new(globals),
        };
        self.call_depth += 1;
        self.stack.push(def.id);
        self.gen_frames.push(first_yield);
        let paths = self.block(&def.body, st, &ctx);
        self.gen_frames.pop();
        self.stack.pop();
        self.call_depth -= 1;
        let _ = span;
        let mut out: Vals = Vec::new();
        for (st, flow) in paths {
            let v = match (first_yield, flow) {
                (true, Flow::Yield(v)) => v,
                // a generator path that ends without yielding has no first element
                (true, _) => continue,
                (false, Flow::Return(v)) => v,
                (false, _) => Value::None,
            };
            out.push((st, v));
        }
        merge_vals(out, self.settings.prune)
    }

    fn module_scope_of(&self, st: &State, mut scope: ObjId) -> ObjId {
        for _ in 0..256 {
            // the empty name is no variable: this reads only the scope's parent link
            match st.get_var(scope, "") {
                Obj::Scope { parent: Some(p), .. } => scope = *p,
                _ => break,
            }
        }
        scope
    }
}

/// `SHAPE_LINT_DEBUG=1` prints where paths end (a developer aid).
fn debug_enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SHAPE_LINT_DEBUG").is_some())
}

fn contains(items: &[Value], x: &Value) -> Option<bool> {
    if items.iter().any(|v| v == x) {
        return Some(true);
    }
    let all_known = items.iter().all(|v| matches!(v, Value::Str(Some(_)) | Value::None | Value::Bool(_)) || v.as_const_int().is_some());
    let x_known = matches!(x, Value::Str(Some(_)) | Value::None | Value::Bool(_)) || x.as_const_int().is_some();
    if all_known && x_known { Some(false) } else { None }
}

fn is_splice_unknown(vs: &[Value]) -> bool {
    vs.first().and_then(|v| v.as_str()) == Some("<unknown splice>")
}

fn tuple_or_unknown(vs: Vec<Value>) -> Value {
    if is_splice_unknown(&vs) { Value::Unknown } else { Value::Tuple(Rc::new(vs)) }
}

pub fn const_value(c: &Const) -> Value {
    match c {
        Const::Int(i) => Value::int(*i as i128),
        Const::BigInt | Const::Complex | Const::Bytes => Value::Unknown,
        Const::Float(f) => Value::Float(Some(*f)),
        Const::Str(s) => Value::Str(Some(s.clone())),
        Const::Bool(b) => Value::Bool(*b),
        Const::None => Value::None,
        Const::Ellipsis => Value::Str(Some(Rc::from("<ellipsis>"))),
    }
}

/// The value an `import` binds.
pub fn module_value(dotted: &str) -> Value {
    models::import(dotted)
}

fn builtin(name: &str) -> Option<Value> {
    models::builtins::lookup(name)
}

/// Names assigned anywhere in a block (not in nested functions or classes).
pub fn assigned_names(body: &[Stmt], out: &mut Vec<Name>) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| t.bound_names(out)),
            StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => target.bound_names(out),
            StmtKind::For { target, body, orelse, .. } => {
                target.bound_names(out);
                assigned_names(body, out);
                assigned_names(orelse, out);
            }
            StmtKind::While { body, orelse, .. } | StmtKind::If { body, orelse, .. } => {
                assigned_names(body, out);
                assigned_names(orelse, out);
            }
            StmtKind::With { items, body } => {
                items.iter().filter_map(|(_, t)| t.as_ref()).for_each(|t| t.bound_names(out));
                assigned_names(body, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                assigned_names(body, out);
                handlers.iter().for_each(|h| assigned_names(&h.body, out));
                assigned_names(orelse, out);
                assigned_names(finalbody, out);
            }
            StmtKind::FunctionDef(f) => out.push(f.name.clone()),
            StmtKind::ClassDef(c) => out.push(c.name.clone()),
            StmtKind::Unknown { binds } => out.extend(binds.iter().cloned()),
            StmtKind::Import(names) => {
                for (d, a) in names {
                    out.push(a.clone().unwrap_or_else(|| Rc::from(d.split('.').next().unwrap_or(d))));
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for (n, a) in names {
                    out.push(a.clone().unwrap_or_else(|| n.clone()));
                }
            }
            _ => {}
        }
        // walrus targets inside expressions are rare in loops; not tracked
    }
}

/// Can the loop body leave the loop before the iterable is exhausted (`break`, `return`,
/// `raise`, or a call that may exit)? Nested loops' own `break`s do not count.
fn leaves_early(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Return(_) | StmtKind::Raise(_) => true,
        StmtKind::If { body, orelse, .. } => leaves_early(body) || leaves_early(orelse),
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            leaves_early(body) || handlers.iter().any(|h| leaves_early(&h.body)) || leaves_early(orelse) || leaves_early(finalbody)
        }
        StmtKind::With { body, .. } => leaves_early(body),
        StmtKind::For { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            // a `return`/`raise` inside a nested loop leaves ours too
            returns_or_raises(body) || leaves_early(orelse)
        }
        StmtKind::Expr(Expr { kind: ExprKind::Call { func, .. }, .. }) => {
            matches!(&func.kind, ExprKind::Name(n) if matches!(&**n, "exit" | "quit"))
                || matches!(&func.kind, ExprKind::Attr(_, n) if &**n == "exit")
        }
        _ => false,
    })
}

fn returns_or_raises(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Return(_) | StmtKind::Raise(_) => true,
        StmtKind::If { body, orelse, .. } | StmtKind::For { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            returns_or_raises(body) || returns_or_raises(orelse)
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            returns_or_raises(body) || handlers.iter().any(|h| returns_or_raises(&h.body)) || returns_or_raises(orelse) || returns_or_raises(finalbody)
        }
        StmtKind::With { body, .. } => returns_or_raises(body),
        _ => false,
    })
}

fn collect_globals(body: &[Stmt], out: &mut Vec<Name>) {
    for s in body {
        match &s.kind {
            StmtKind::Global(names) => out.extend(names.iter().cloned()),
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                collect_globals(body, out);
                collect_globals(orelse, out);
            }
            StmtKind::With { body, .. } => collect_globals(body, out),
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                collect_globals(body, out);
                handlers.iter().for_each(|h| collect_globals(&h.body, out));
                collect_globals(orelse, out);
                collect_globals(finalbody, out);
            }
            _ => {}
        }
    }
}
