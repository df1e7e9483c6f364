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
//!
//! Rooms, each an `impl Interp` block over the types defined here:
//! - `stmt.rs`: statements, and the definitions of functions and classes;
//! - `loops.rs`: `while` and `for` (unrolling, the generalised iteration);
//! - `assign.rs`: names, scopes and assignment to targets;
//! - `expr.rs`: expressions, conditions and comprehensions;
//! - `ops.rs`: operators, comparisons and subscripts of Python values;
//! - `attr.rs`: attributes and the class hierarchy;
//! - `call.rs`: calls, user functions and classes, generators, call summaries;
//! - `eval_loops.rs`: evaluation loops written inline (SHP306, SHP307), and the statement
//!   lists being run (what runs after a loop);
//! - `callbacks.rs`: user callables handed to code the engine does not follow (forward hooks),
//!   and the attributes they make volatile;
//! - `imports.rs`: import statements, and running the project's modules (`engine::project`).
//!
//! What the checks record here (`Outcome`, `Pending`) becomes findings by the report rule
//! (`super::report`).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use crate::value::*;
use crate::Settings;
use crate::ir::*;
use crate::parse::ParsedFile;
use crate::rules::Rule;
use crate::shape::smt::Query;
use crate::shape::Symbols;

mod assign;
mod attr;
mod call;
mod callbacks;
pub mod eval_loops;
pub use call::EvalFrame;
mod expr;
mod files;
mod imports;
mod long_comprehension;
mod loops;
mod ops;
mod stmt;
mod summarised;
pub mod taken;

pub use expr::{const_value, module_value};
pub use imports::module_scope;
pub use loops::{UNROLL, assigned_names};
use expr::builtin;
use stmt::collect_globals;

/// Above this many paths, paths are not compared for merging.
const MERGE_LIMIT: usize = 64;
/// A loop over known items joins its paths (`value::join`) past this many after an iteration,
/// and those that left it past this many: each iteration may double them again, and merging
/// compares every pair.
pub(super) const LOOP_JOIN_AT: usize = 8;

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
pub use crate::value::Vals;

/// A violated API precondition: what torch would raise.
#[derive(Debug, Clone)]
pub struct Violation {
    pub rule: &'static Rule,
    pub message: String,
    pub trace: Vec<String>,
    /// The origin chains of the dims the message shows (`models::origins`).
    pub origins: Vec<crate::models::origins::Link>,
    /// The fix the model suggested for this check (`ModelCtx::suggest_fix`).
    pub fix: Option<crate::value::FixHint>,
}

#[derive(Debug, Clone)]
pub enum Verdict {
    Holds,
    Undecided,
    /// (boxed: an outcome is recorded per path and check, and most pass)
    Violated(Box<Violation>),
}

/// What one path found at one check site.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub site: Span,
    /// The user calls on the way to the site, outermost first (`Interp::calls`): a site is
    /// judged per chain of call sites, so a helper called wrongly in one place is reported
    /// though another call of it is right.
    pub calls: Rc<[Span]>,
    pub branches: Branches,
    /// The path's `State::lineage`: two paths merged from different ones can carry the same
    /// branches, and a violation overrides only its own path's earlier verdicts (`record`).
    pub lineage: u32,
    pub verdict: Verdict,
    pub tainted: bool,
    pub suppressed: bool,
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
    pub origins: Vec<crate::models::origins::Link>,
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

/// A budget whose exhaustion abandons an entry (`Interp::abandon`). `Steps` and `Paths` count
/// work, so the same input is cut at the same place on every machine; `Clock` is the safety
/// net for hostile input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Steps,
    Paths,
    Clock,
}

pub struct Interp<'a> {
    /// The enabled rules' event subscribers (`engine::events`).
    pub subscribers: crate::engine::events::Subscribers,
    pub file: &'a ParsedFile<'a>,
    pub settings: &'a Settings,
    pub syms: Symbols,
    pub steps: u64,
    /// The steps the program's run would have taken without call summaries: `steps`, plus for
    /// each replayed summary the work its first run took. Loops and comprehensions spend their
    /// unrolling budget in it, so that a cheap replay does not unroll a loop further than a
    /// run would (the same generalisation with and without the cache).
    pub work: u64,
    /// The wall-clock safety net (`Settings::timeout_ms`): far above any normal file, it
    /// only bounds hostile input; when it fires the analysis says so (`Budget::Clock`).
    pub deadline: Instant,
    pub abandoned: bool,
    /// The budget that abandoned the current entry, and the statement it was running.
    pub spent: Option<(Budget, Option<Span>)>,
    pub outcomes: Vec<Outcome>,
    /// Undecided checks exported for the Z3 bridge (only with `Settings::export_undecided`).
    pub undecided: Vec<Pending>,
    pub next_shape_var: u32,
    /// The tensors handed to each user call of `calls` (its arguments), innermost last: where
    /// a tensor entered the code that misuses it (`ModelCtx::entry_sites`).
    pub arg_tensors: Vec<Vec<Rc<Tensor>>>,
    pub call_depth: usize,
    /// Names of the variables being assigned, for labels ("fc2"); read through `label`.
    pub assign_label: Option<Rc<str>>,
    /// When `assign_label` got its value: a serial number, increased by every write, so a
    /// call can tell its own labels (set after it started) from its caller's.
    pub label_serial: u64,
    pub label_set_at: u64,
    /// The oldest `label_set_at` a `label` read saw in the innermost summarised call: a call
    /// that read a label set before it started (its caller's) is not summarised.
    pub oldest_label_read: u64,
    /// The shallowest index of `calls` an entry site was taken from (`ModelCtx::entry_sites`)
    /// in the innermost summarised call: a summary keys the spans from there (`memo::Context`).
    pub context_read: std::cell::Cell<usize>,
    pub stack: Vec<u32>,
    /// The call sites of the user functions being run, outermost first.
    pub calls: Rc<[Span]>,
    pub paths_high_water: usize,
    /// How many user class constructions are running (`Interp::construct`): the SHP902 run
    /// frees the int defaults of the outermost one only (`call.rs::free_defaults`).
    pub constructing: u32,
    /// The symbol of each constructor default freed in the SHP902 run, by parameter name.
    pub ctor_syms: BTreeMap<String, crate::shape::Poly>,
    /// For each active call, whether it runs a generator for its first element.
    pub gen_frames: Vec<bool>,
    /// When set, the shapes of the tensors each line assigns (the `--show-shapes` view).
    pub shape_log: Option<BTreeMap<usize, std::collections::BTreeSet<String>>>,
    /// When set, the tensors each span of the checked file evaluated to (`engine::shapes`).
    pub span_log: Option<crate::engine::shapes::SpanLog>,
    /// When set, the Unknown-cause recorder (`engine::coverage`).
    pub coverage: Option<crate::engine::coverage::Coverage>,
    /// Running a generalised loop's body a second time, from the state its first iteration
    /// left (`loops::second_iteration`): only violations of this rule are recorded.
    pub probe_only: Option<&'static str>,
    /// The statement lists being run, outermost first (`eval_loops`: what runs after a loop).
    pub blocks: Vec<eval_loops::BlockFrame>,
    /// The next `block` is a loop's body (set by the loops, taken by `block`).
    pub next_block_is_loop_body: bool,
    /// The places (`line 8`, `model.py:14`) rendered for spans of the project, each with the first span
    /// it was rendered for: where a trace line points (`engine::shapes::related`).
    pub places: std::cell::RefCell<BTreeMap<String, Span>>,
    /// Set while places render that a finding's related information must not point at: a
    /// hover's origins, and a check's own site when its message compares a place with it
    /// (`places` keeps the first span rendered for a place text; the CLI's run renders no
    /// hovers).
    pub quiet_places: std::cell::Cell<bool>,
    /// Where each precondition a path took as holding was checked (`State::assumed`), first
    /// check first: the lines a model's input contract names (`engine::contract`).
    pub assumed_at: Vec<(crate::shape::Formula, Span)>,
    /// Where a first use fixed a dim of a shape variable it bound (`ModelCtx::fixed_by`):
    /// (variable, index, site), in `summary` runs only.
    pub fixed_at: Vec<(u32, usize, Span)>,
    /// The dims a check's message showed while it rendered (`ModelCtx::cite`), when one does.
    pub cited: std::cell::RefCell<Option<Vec<(Dim, bool)>>>,
    /// A run shared by every file it loads (`engine::scripts`): each project file is the
    /// checked one, and places are rendered as tokens, for each of them later.
    pub shared_run: Option<crate::engine::scripts::Tokens>,
    /// The module calls `shape-lint summary` asked for (`engine::summary`), when asked.
    pub summary: Option<crate::engine::summary::SummaryLog>,
    /// Summaries of side-effect-free calls (`super::memo`).
    pub memo: super::memo::Memo,
    /// The unknowns a first use introduces when it refines a shape variable, by variable
    /// (and position and name): the same on every path (`ModelCtx::refine_var`).
    pub refined_vars: std::collections::HashMap<Vec<u32>, u32>,
    pub refined_dims: std::collections::HashMap<(u32, usize, Rc<str>), crate::shape::Poly>,
    /// Every entry added to those two caches, in order (`memo::Refined`): a call summary
    /// keeps those its call added.
    pub refined_log: Vec<super::memo::Refined>,
    /// Calls cut short (depth, recursion): a call that contains one is not summarised.
    pub cuts: u64,
    /// Violated verdicts, undecided ones exported or assumed, and violations that overrode an
    /// outcome from before the summarised call being run (`Interp::record`), recorded so far:
    /// a call that adds one other than a violation is not summarised (`engine::memo`).
    pub flagged: u64,
    /// The violations among `flagged`: a summary replays them.
    pub violations: u64,
    /// Opaque tests remembered (`taken`): the serial of the last one; the lookups made while
    /// summarised calls run (`summarising` of them), which their summaries key.
    pub taken_serial: u64,
    pub consulted: Vec<taken::Consulted>,
    pub forks: Vec<taken::Fork>,
    pub taken_floor: u64,
    pub summarising: u32,
    /// Loop items skipped because their iteration would change nothing (`loops::skip_item`).
    pub loop_items_skipped: u64,
    /// SHP305 reports so far: an enclosing loop whose iteration saw one (an inner loop's
    /// `running += loss`) does not report the same graph again where it keeps the total.
    pub kept_reported: u64,
    /// The lists the iterations of the `for` being run generalised appended to, one entry per
    /// iteration run (from each of its elements: the full batch, the last one), with the item
    /// each found or `None` (`loops::appended_lists`): `generalised_over` joins them.
    pub appended: Option<Vec<(ObjId, Option<Value>)>>,
    /// The loops over known items that spent their work budget (`loops::LOOP_STEPS`) on some
    /// visit: on a later visit (the helper holding it called again) they run generalised at
    /// once, so a loop too costly to unroll costs its budget once per file, not once per call.
    pub loops_cut: std::collections::BTreeSet<Span>,
    /// The precondition checks so far by verdict (`check.rs`), and with
    /// `Settings::check_sites` by site of the checked file (its start offset).
    pub checks: crate::engine::CheckCounts,
    pub check_sites: Option<std::collections::BTreeMap<u32, crate::engine::CheckCounts>>,
    /// The user functions running, innermost last: what an evaluation pass needs to know of
    /// each (SHP306, SHP307; `call::EvalFrame`).
    pub eval_frames: Vec<EvalFrame>,
    /// The functions (by definition id) in which a run used a graph or switched a module to
    /// training: a replay of their summary does so too.
    pub graph_defs: rustc_hash::FxHashSet<u32>,
    pub train_defs: rustc_hash::FxHashSet<u32>,
    /// The functions whose run lost track of a graph (`EvalFrame::lost`): a replayed call of
    /// one loses it for the evaluation passes that call it, as its run did.
    pub lost_defs: rustc_hash::FxHashSet<u32>,
    /// Outcomes recorded so far (`record`), for `reached`.
    pub records: u64,
    /// Where the innermost summarised call's outcomes start in `outcomes`: an outcome equal to
    /// one of its own recent ones is not recorded again (`push_outcome`).
    pub outcome_floor: usize,
    /// Where the first passing outcome of each site, lineage, innermost call site and branches'
    /// digest was recorded in `outcomes`, with `removed` then: a violation overrides the
    /// passing outcomes of its path from there on (`Interp::record_outcome`), without a look at
    /// every outcome (each removal since moved it back by at most one place). Built lazily:
    /// only a violation reads it, so the passing outcomes are noted when one is recorded, up
    /// to `passed_upto` (most runs record none, and note none).
    pub passed: rustc_hash::FxHashMap<(Span, u32, Option<Span>, u64), (usize, u64)>,
    /// The outcomes before this index are noted in `passed`.
    pub passed_upto: usize,
    /// The outcomes a violation removed so far.
    pub removed: u64,
    /// The innermost call in the user's file: checks inside embedded library code (the
    /// torchvision zoo) report there.
    pub user_site: Option<Span>,
    /// The checkpoints saved and read so far (SHP312, settled by `report::settle_checkpoints`).
    pub checkpoints: crate::rules::training::checkpoint_key_never_saved::Log,
    /// The checked file's project modules (`engine::project`).
    pub project: crate::engine::project::Project,
    /// The `sys.modules` object of the current entry (`imports.rs`).
    pub sys_modules: Option<ObjId>,
    /// Interpreter steps spent running imported modules' top levels (`imports.rs` budgets).
    pub import_steps: u64,
    /// The checked file's IR, run as a module when another project module imports it.
    pub main_module: Option<&'a Module>,
    /// The fix suggested for the next check (`ModelCtx::suggest_fix`), taken by `check`.
    pub fix_hint: Option<crate::value::FixHint>,
    /// While the script runs (entry 1): for each user `nn.Module` class of the checked file,
    /// the state at the first call of one of its instances and that instance, so that the
    /// class's `forward` entry runs on the module the script built even when it was a local of
    /// `main()` (`entry::analyze_forward`).
    pub called_modules: Option<BTreeMap<ObjId, (State, ObjId)>>,
}

fn merge(paths: Vec<State>, prune: bool) -> Vec<State> {
    merge_states(paths, prune, false)
}

/// Merge the paths with the same program state. With `dead_shapes`, also those whose shape
/// bindings differ only where no tensor on the heap looks (`State::same_state_live`): at the
/// statements outside any loop body (`Interp::outside_loops`), where the paths a training
/// loop left (each batch refined on its own path) would otherwise each run every later cell
/// of a notebook, or the rest of a script's `main()`. Inside a loop body it costs more than it
/// saves: the two paths each iteration of a known count leaves merge into one, so the loop
/// stays cheap enough to unroll every iteration (a GAIL script's 100 discriminator epochs,
/// each forking on a choice) where it would part and run its rest generalised; more precise,
/// but a PPO script's `main` took 0.4 s instead of 0.12 s.
fn merge_states(paths: Vec<State>, prune: bool, dead_shapes: bool) -> Vec<State> {
    if !prune || paths.len() > MERGE_LIMIT {
        // comparing states is quadratic: this many paths will exhaust the budget anyway
        return paths;
    }
    let mut out: Vec<State> = Vec::with_capacity(paths.len());
    'outer: for mut p in paths {
        for q in out.iter_mut() {
            // known strides never keep paths apart: merged, they are forgotten where they differ
            if layout_blind(|| if dead_shapes { q.same_state_live(&mut p) } else { q.same_state_sharing(&mut p) }) {
                q.join_layouts(&p);
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
    'outer: for (mut s, v) in vals {
        for (q, w) in out.iter_mut() {
            if layout_blind(|| *w == v && q.same_state_sharing(&mut s)) {
                if let Some(j) = join_layouts(w, &v) {
                    *w = j;
                }
                q.join_layouts(&s);
                q.absorb(&s);
                continue 'outer;
            }
        }
        out.push((s, v));
    }
    out
}

impl<'a> Interp<'a> {
    /// Run `f` with `quiet_places` set: the places it renders register no related
    /// information (origin chains, hovers).
    pub fn quietly<T>(&self, f: impl FnOnce(&Self) -> T) -> T {
        let before = self.quiet_places.replace(true);
        let out = f(self);
        self.quiet_places.set(before);
        out
    }

    pub fn new(file: &'a ParsedFile<'a>, settings: &'a Settings) -> Interp<'a> {
        super::memo::reset_reads();
        super::project::reset_probes();
        crate::value::walks::reset_clean();
        crate::value::reset_values_tracking();
        crate::models::torch::optim::reset_made();
        crate::value::reset_lineages();
        Interp {
            subscribers: crate::engine::events::Subscribers::enabled(settings, &[]),
            file,
            settings,
            syms: Symbols::default(),
            steps: 0,
            work: 0,
            deadline: Instant::now() + std::time::Duration::from_millis(settings.timeout_ms),
            abandoned: false,
            spent: None,
            outcomes: Vec::new(),
            undecided: Vec::new(),
            next_shape_var: 0,
            call_depth: 0,
            assign_label: None,
            label_serial: 0,
            label_set_at: 0,
            oldest_label_read: u64::MAX,
            context_read: std::cell::Cell::new(usize::MAX),
            stack: Vec::new(),
            calls: Rc::from(Vec::new()),
            arg_tensors: Vec::new(),
            paths_high_water: 0,
            constructing: 0,
            ctor_syms: BTreeMap::new(),
            shape_log: None,
            span_log: None,
            coverage: None,
            probe_only: None,
            blocks: Vec::new(),
            next_block_is_loop_body: false,
            places: Default::default(),
            cited: Default::default(),
            assumed_at: Vec::new(),
            fixed_at: Vec::new(),
            quiet_places: Default::default(),
            shared_run: None,
            summary: None,
            gen_frames: Vec::new(),
            memo: Default::default(),
            refined_vars: Default::default(),
            refined_dims: Default::default(),
            refined_log: Vec::new(),
            cuts: 0,
            flagged: 0,
            violations: 0,
            taken_serial: 0,
            consulted: Vec::new(),
            forks: Vec::new(),
            taken_floor: 0,
            summarising: 0,
            loop_items_skipped: 0,
            kept_reported: 0,
            appended: None,
            loops_cut: Default::default(),
            checks: Default::default(),
            check_sites: if settings.check_sites { Some(Default::default()) } else { None },
            eval_frames: Vec::new(),
            graph_defs: Default::default(),
            train_defs: Default::default(),
            lost_defs: Default::default(),
            records: 0,
            outcome_floor: 0,
            passed: Default::default(),
            passed_upto: 0,
            removed: 0,
            user_site: None,
            project: crate::engine::project::Project::new(settings.project.clone()),
            checkpoints: Default::default(),
            sys_modules: None,
            import_steps: 0,
            main_module: None,
            fix_hint: None,
            called_modules: None,
        }
    }

    /// The name of the variable being assigned, for a layer's label.
    pub fn label(&mut self) -> Option<Rc<str>> {
        self.oldest_label_read = self.oldest_label_read.min(self.label_set_at);
        self.assign_label.clone()
    }

    /// Set the pending assignment label (the current frame's own).
    pub fn set_label(&mut self, label: Option<Rc<str>>) {
        self.label_serial += 1;
        self.label_set_at = self.label_serial;
        self.assign_label = label;
    }

    /// Add a refinement to its cache, and to the log call summaries read
    /// (`Interp::refined_log`).
    pub fn add_refined(&mut self, r: super::memo::Refined) {
        match &r {
            super::memo::Refined::Var(key, v) => {
                self.refined_vars.insert(key.clone(), *v);
            }
            super::memo::Refined::Dim(key, p) => {
                self.refined_dims.insert(key.clone(), p.clone());
            }
        }
        self.refined_log.push(r);
    }

    pub fn fresh_shape_var(&mut self) -> u32 {
        self.next_shape_var += 1;
        self.next_shape_var
    }

    /// Count `n` steps of work done at once (a summary replayed: its outcomes recorded again),
    /// so that budgets see it.
    pub(super) fn charge(&mut self, n: u64) {
        self.steps += n;
        if self.steps > self.settings.max_steps {
            self.abandon(Budget::Steps);
        }
    }

    fn tick(&mut self) -> bool {
        self.work += 1;
        self.charge(1);
        if self.steps % 64 == 0 {
            if Instant::now() > self.deadline {
                self.abandon(Budget::Clock);
            }
            if self.steps % PROFILE_EVERY == 0 && profile_enabled() {
                self.profile_sample();
            }
        }
        !self.abandoned
    }

    /// Abandon the current entry: `budget` is spent. The first budget spent, and the statement
    /// running then, are kept for the analysis-incomplete notice (`SHP002`).
    #[track_caller]
    pub(crate) fn abandon(&mut self, budget: Budget) {
        if !self.abandoned && debug_enabled() {
            eprintln!("[shape-lint debug] {budget:?} budget spent ({})", std::panic::Location::caller());
        }
        if !self.abandoned {
            // the innermost statement of the checked file (a project module's is not its line);
            // in a script's shared run, of the script (`scripts::ScriptResult::spent_at`)
            let shared = self.shared_run.is_some();
            let span = self.blocks.iter().rev().filter_map(|fr| fr.span()).find(|s| s.file == crate::ir::FileId::MAIN || (shared && s.file.0 == crate::engine::project::FIRST_FILE));
            self.spent = Some((budget, span));
        }
        self.abandoned = true;
    }

    fn tick_opaque(&mut self, st: &mut State, span: Span, side: u32) {
        st.branches.push(Branch::Opaque(span, side, 2));
        st.tainted = true;
    }

    pub fn block(&mut self, stmts: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let loop_body = std::mem::take(&mut self.next_block_is_loop_body);
        self.blocks.push(eval_loops::BlockFrame::new(stmts, loop_body));
        let out = self.block_inner(stmts, st, ctx);
        self.blocks.pop();
        out
    }

    fn block_inner(&mut self, stmts: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let mut live = vec![st];
        let mut done: Paths = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            if live.is_empty() {
                break;
            }
            if let Some(fr) = self.blocks.last_mut() {
                fr.at = i;
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
            // (the blocks running are looked at only when there are paths to merge)
            let dead_shapes = next.len() > 1 && self.outside_loops();
            live = merge_states(next, self.settings.prune, dead_shapes);
            live = self.bound_paths(live, s.span);
            self.note_paths(live.len());
            if self.abandoned {
                return Vec::new();
            }
        }
        done.extend(live.into_iter().map(|s| (s, Flow::Normal)));
        done
    }

    /// Past half the path budget, paths that did not merge are joined (`value::join`): one
    /// state stands for them, Unknown where they disagree, rather than the entry being
    /// abandoned at the budget.
    fn bound_paths(&mut self, live: Vec<State>, span: Span) -> Vec<State> {
        self.bound_paths_at(live, span, self.join_at())
    }

    /// The number of live paths past which they are joined: half the path budget, and a
    /// single path once half the step budget is spent, so that the rest of the file is
    /// analysed whole, with less precision where paths disagree, rather than cut off when
    /// the budget runs out (a count of work: the same on every machine).
    pub(super) fn join_at(&self) -> usize {
        if self.steps > self.settings.max_steps / 2 { 1 } else { self.settings.max_paths / 2 }
    }

    /// [`Interp::bound_paths`] past `limit` paths (a loop's iterations join sooner: each may
    /// double them again).
    pub(super) fn bound_paths_at(&mut self, live: Vec<State>, span: Span, limit: usize) -> Vec<State> {
        if live.len() <= limit || !self.settings.prune {
            return live;
        }
        self.note_joined(live.len(), span);
        crate::value::join::join_all(live)
    }

    /// [`Interp::bound_paths`] for paths that each carry a value (`ModelCtx::bound_vals`).
    pub(crate) fn bound_vals(&mut self, vals: Vals, span: Span) -> Vals {
        let vals = merge_vals(vals, self.settings.prune);
        let vals = if self.past_half_paths(vals.len()) {
            self.note_joined(vals.len(), span);
            crate::value::join::join_with_values(vals)
        } else {
            vals
        };
        if self.within_paths(vals.len()) { vals } else { Vec::new() }
    }

    /// The outcomes of a display or an argument list evaluated so far, each a path and the
    /// items it gave (`None`: not known item by item). Past half the path budget they are joined
    /// item by item (`value::join::join_with_items`), as a block's paths are: the outcomes of
    /// the items multiply otherwise (`{k: f(a) for ...}` with two outcomes per call doubles the
    /// paths per item). `None` when the path budget is spent even so (the entry is abandoned).
    pub(super) fn bound_items(&mut self, next: Vec<(State, Option<Vec<Value>>)>, span: Span) -> Option<Vec<(State, Option<Vec<Value>>)>> {
        let out = if self.past_half_paths(next.len()) {
            self.note_joined(next.len(), span);
            crate::value::join::join_with_items(next)
        } else {
            next
        };
        self.within_paths(out.len()).then_some(out)
    }

    /// Whether `n` outcomes of one statement's parts are past half the path budget, where
    /// they are joined (`bound_items`, `bound_args`).
    pub(super) fn past_half_paths(&self, n: usize) -> bool {
        n > self.join_at() && self.settings.prune
    }

    /// Whether `n` outcomes are within the path budget; past it the entry is abandoned.
    pub(super) fn within_paths(&mut self, n: usize) -> bool {
        if n > self.settings.max_paths {
            self.abandon(Budget::Paths);
            return false;
        }
        true
    }

    /// (debugging and coverage) `n` paths joined at `span`.
    pub(super) fn note_joined(&mut self, n: usize, span: Span) {
        if debug_enabled() {
            eprintln!("[shape-lint debug] {n} paths joined at {}", self.place(span));
        }
        if let Some(c) = self.coverage.as_mut() {
            c.origin(crate::engine::coverage::UNKNOWN, "paths joined past the path budget (where they disagree)".into(), span);
        }
    }

    /// [`Interp::bound_paths_at`] for the paths that go round a loop. When no path has left the
    /// loop yet (`every`: no `break`, `return` or false test so far), they are every execution
    /// that reached the loop, and their join stands for all of them: the opaque choices they
    /// took inside the loop no longer taint it (`value::join::join_covering`).
    pub(super) fn bound_loop_paths(&mut self, live: Vec<State>, span: Span, every: bool) -> Vec<State> {
        if live.len() <= LOOP_JOIN_AT || !self.settings.prune {
            return live;
        }
        self.note_joined(live.len(), span);
        if every { crate::value::join::join_covering(live) } else { crate::value::join::join_all(live) }
    }

    /// [`Interp::bound_paths`] for the paths a loop left, kept in `out` while it runs on: those
    /// that left by `break` (or by its test), and those that returned (with their values
    /// joined: an early stop checked in each of 256 epochs returns from each).
    pub(super) fn bound_exits(&mut self, out: Paths, span: Span) -> Paths {
        self.bound_exits_at(out, span, LOOP_JOIN_AT)
    }

    /// [`Interp::bound_exits`] past `at` exits of each kind.
    pub(super) fn bound_exits_at(&mut self, out: Paths, span: Span, at: usize) -> Paths {
        let count = |f: fn(&Flow) -> bool| out.iter().filter(|(_, x)| f(x)).count();
        let (normal, returns) = (count(|f| *f == Flow::Normal), count(|f| matches!(f, Flow::Return(_))));
        if (normal <= at && returns <= at) || !self.settings.prune {
            return out;
        }
        let mut kept: Paths = Vec::new();
        let (mut normal, mut returns) = (Vec::new(), Vec::new());
        for (s, f) in out {
            match f {
                Flow::Normal => normal.push(s),
                Flow::Return(v) => returns.push((s, v)),
                f => kept.push((s, f)),
            }
        }
        kept.extend(self.bound_paths_at(normal, span, at).into_iter().map(|s| (s, Flow::Normal)));
        if returns.len() > at {
            self.note_joined(returns.len(), span);
            returns = crate::value::join::join_with_values(returns);
        }
        kept.extend(returns.into_iter().map(|(s, v)| (s, Flow::Return(v))));
        kept
    }

    /// Track the number of live paths; too many, or past the deadline, abandons the entry.
    fn note_paths(&mut self, n: usize) {
        self.paths_high_water = self.paths_high_water.max(n);
        if n > self.settings.max_paths {
            self.abandon(Budget::Paths);
        } else if Instant::now() > self.deadline {
            self.abandon(Budget::Clock);
        }
    }

    fn normal(vals: Vals) -> Paths {
        vals.into_iter().map(|(s, _)| (s, Flow::Normal)).collect()
    }
}

/// Steps between two samples of `SHAPE_LINT_PROFILE` (a multiple of the clock's 64).
const PROFILE_EVERY: u64 = 1024;

/// `SHAPE_LINT_PROFILE=1` prints the chain of user call sites running at every
/// `PROFILE_EVERY`th step, `file-id:line > ...` from the outermost (a developer aid: counted,
/// the chains say where a file's steps go; steps, not time, so the same on every machine).
fn profile_enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SHAPE_LINT_PROFILE").is_some())
}

impl Interp<'_> {
    fn profile_sample(&self) {
        let chain: Vec<String> = self.calls.iter().map(|s| format!("{}:{}", s.file.0, self.line(*s))).collect();
        eprintln!("[shape-lint profile] {}", chain.join(" > "));
    }
}

/// `SHAPE_LINT_DEBUG=1` prints where paths end (a developer aid).
pub(super) fn debug_enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SHAPE_LINT_DEBUG").is_some())
}