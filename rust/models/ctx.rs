//! `ModelCtx`: everything a library model may ask of the engine, and nothing more.
//!
//! A model is a function from a path's `State` and the call's arguments to the outcomes of
//! the call (`Vals`: one `(State, Value)` per outcome). An empty `Vals` means torch raises on
//! this path (the check that said so recorded it), one outcome is the result (`Unknown` when
//! not modelled), several are alternatives. The interpreter implements this trait
//! (`engine/ctx.rs`); models name neither the interpreter nor anything else in `engine`, so
//! the dependency runs one way: `engine → models`, never back (`tests/structure.rs`).
//!
//! What a model may do with the `State` it is handed: read and allocate heap objects, read
//! the facts, bind shape variables. What it may not do is path bookkeeping (branches, taint,
//! `try` depth, the assumed preconditions): forks go through [`ModelCtx::assume`] and
//! [`ModelCtx::branch`], which the engine implements. This mirrors mypy's plugin API, where a
//! hook gets a `FunctionContext` whose `api` is a narrow checker interface.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::rules::Rule;
use crate::rules::violation::Violation;
use crate::shape::{Cond, Formula, Poly, Rel, Symbols, Tri};
use crate::value::*;

/// Renders a check's message and trace, only when the check is reported or exported.
pub type Msg<'m> = &'m mut dyn FnMut(&dyn ModelCtx) -> (String, Vec<String>);

/// The engine as a model sees it.
pub trait ModelCtx {
    // ----- symbols ------------------------------------------------------------------------

    /// The symbols of this analysis (names and lower bounds), for display and decisions.
    fn syms(&self) -> &Symbols;
    /// A fresh symbol named `name` with lower bound `lo`.
    fn fresh_sym(&mut self, name: &str, lo: i128) -> Poly;
    /// A fresh symbol known to be a Python int (a class index).
    fn fresh_int_sym(&mut self, name: &str, lo: i128) -> Poly;
    /// A fresh symbol that takes each of its values in one run (`SymInfo::every`: the batch
    /// of a loop over a `DataLoader`).
    fn fresh_every_sym(&mut self, name: &str, lo: i128) -> Poly;
    /// The condition that the environment answers yes (`torch.cuda.is_available()`): the same
    /// condition at every ask (`Symbols::flag`).
    fn flag(&mut self, name: &str, phrase: (&'static str, &'static str)) -> Cond;
    /// Where a check about this very tensor reports: the call in the checked file through
    /// which it entered the user code running now (`model(images)` for the `images` a layer
    /// in `forward` rejects), else `at` (nothing when `at` is `None`). In a run shared by every
    /// file a script loads (`engine::scripts`), each of those files is the checked one: the
    /// outermost such call of each file, and `at` for its file when that file has none.
    fn entry_sites(&self, t: &Rc<Tensor>, at: Option<Span>) -> Vec<Span>;
    /// A fresh shape variable: an unknown list of dims, refined by its first use.
    fn fresh_shape_var(&mut self) -> u32;
    /// The shape variable for the dims a first use leaves unknown when it binds `parent`
    /// (`[*parent]` becomes `[*rest, 120]`). A path binds `parent` at most once, and paths
    /// are disjoint executions, so every path gets the same `rest`: paths that refined the
    /// same input at different calls end in equal states and merge.
    fn refine_var(&mut self, parent: u32) -> u32 {
        self.derived_var(&[0, parent])
    }
    /// The shape variable for dims that are a function of the dims behind other shape
    /// variables and of numbers (`key`: a tag, then the variables and numbers it depends on):
    /// one variable per key, on every path and within a path.
    fn derived_var(&mut self, key: &[u32]) -> u32;
    /// A positive dim named `name` at position `slot` of what a first use binds `parent` to:
    /// the same symbol on every path (see `refine_var`).
    fn refine_dim(&mut self, parent: u32, slot: usize, name: &str) -> Dim;
    /// A first use at `span` bound `var` to a shape whose `index`th dim it fixed to the size
    /// it needs (`Conv2d(1, ...)`'s channel): kept for `summary --model`'s input contract.
    fn fixed_by(&mut self, _var: u32, _index: usize, _span: Span) {}

    // ----- where and what -----------------------------------------------------------------

    /// The 1-based line of `span` in the user's file (embedded code maps to its user call).
    fn line(&self, span: Span) -> usize;
    /// Where `span` is, for messages: `line 12` in the user's file, `model.py:12` in another
    /// file of the project.
    fn place(&self, span: Span) -> String;
    /// The name of the variable being assigned (for a layer's label: "fc2").
    fn label(&mut self) -> Option<Rc<str>>;
    /// Whether opt-in "may fail" diagnostics (SHP9xx) are on.
    fn may_fail(&self) -> bool;
    /// Whether options are free parameters (`Settings::free_params`, the SHP902 run).
    fn free_params(&self) -> bool;
    /// Whether argparse switches take both values (`Settings::switches`).
    fn switches(&self) -> bool;
    /// The value the concrete run of an SHP902 counterexample binds the free parameter `name`
    /// to (`Settings::param_values`).
    fn param_value(&self, name: &str) -> Option<i128>;
    /// Tag a fresh symbol as a free parameter of the program.
    fn set_param(&mut self, p: &Poly, param: crate::shape::Param);
    /// Assume a fact the facts cannot hold (a disjunction: an option's `choices`) on the path,
    /// as the queries of later undecided checks see it (`State::assumed`).
    fn assume_formula(&mut self, st: &mut State, f: Formula);

    // ----- checks -------------------------------------------------------------------------

    /// Record a precondition check at `site`: `violated` is whether torch raises; `msg` renders
    /// the message of a violation of `rule` and its trace. Returns false when the path ends here
    /// (torch raises). The object-safe primitive: models use [`ModelCtxExt::check`], whose
    /// message is a typed violation (`rules::violation`).
    fn check_with(&mut self, st: &State, site: Span, violated: Formula, rule: &'static Rule, msg: Msg) -> bool;
    /// Suggest a fix for the next check made on this path (taken by it, whatever it decides).
    fn suggest_fix(&mut self, hint: crate::value::FixHint);
    /// What the analysis saw of checkpoints (`torch.save`, `torch.load`: SHP312).
    fn checkpoints(&mut self) -> &mut crate::rules::training::checkpoint_key_never_saved::Log;
    /// `sys.path.append(dir)` / `sys.path.insert(i, dir)` of a known directory, relative to the
    /// folder the script runs from: later imports search it too.
    fn extend_sys_path(&mut self, _dir: &str) {}
    /// This path reached `site` and passes there, where no check of its own was made (a
    /// device mismatch reported at the call that handed a tensor in, `entry_sites`): recorded as
    /// passing, so that a failure there on another path is reported with its condition.
    fn passes(&mut self, st: &State, site: Span);
    /// Deliver an engine event on the path `st` to the rules that subscribe to it
    /// (`rules::events`): a model tells what happened, the rule file judges it.
    fn emit(&mut self, event: &crate::rules::events::Event, st: &State, span: Span);
    /// Record an opt-in diagnostic (SHP9xx) at `site` without ending the path.
    fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String);

    // ----- paths --------------------------------------------------------------------------

    /// Fork `st` into `n` alternatives of a first-use assumption made at `site` (e.g. the rank
    /// of an unknown input). With more than one, each is an opaque choice (tainted): a
    /// violation on it is reported only when every alternative fails at the same site.
    fn assume(&mut self, st: &State, site: Span, n: usize) -> Vec<State>;
    /// Take the branch where `cond` holds: record it in the path condition and the facts.
    /// Returns false when the facts refute it (the path is infeasible).
    fn branch(&mut self, st: &mut State, cond: Cond) -> bool;
    /// The outcomes of one step of a chain the model runs (a layer of `nn.Sequential`) bounded
    /// as a statement's are: equal paths merged, joined past half the path budget; past the
    /// budget the entry is abandoned (none returned).
    fn bound_vals(&mut self, vals: Vals, span: Span) -> Vals;

    // ----- user code ----------------------------------------------------------------------

    /// Call a value (a user function, class, bound method, library object) with arguments.
    fn call(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals;
    /// Call a user function.
    fn call_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals;
    /// A dataset's `__getitem__` called by a loader for one sample of an index of its own
    /// (summarised on the dataset: `Interp::call_sample`).
    fn call_sample(&mut self, getitem: &Rc<Closure>, ds: Value, st: State, span: Span) -> Vals;
    /// The items of an iterable of known length, when known.
    fn iterate(&mut self, st: &mut State, it: &Value, span: Span) -> Option<Vec<Value>>;
    /// The first value a generator yields, when known.
    fn first_yield(&mut self, st: &mut State, g: &Value, span: Span) -> Option<Value>;
    /// `o.name`.
    fn get_attr(&mut self, st: State, o: Value, name: &Name, span: Span) -> Vals;
    /// `o.name = v`.
    fn set_attr(&mut self, st: &mut State, o: &Value, name: &Name, v: Value);
    /// Whether a value is truthy on this path.
    fn truthiness(&self, st: &State, v: &Value) -> Tri;
    /// `name` looked up on a user class and its bases: the class that defines it and the value.
    fn class_lookup(&self, st: &State, class: ObjId, name: &str) -> Option<(ObjId, Value)>;
    /// The library base class (`torch.nn.Module`) a user class derives from.
    fn lib_base(&self, st: &State, class: ObjId) -> Option<Rc<str>>;
    /// Whether a user class has a base the engine does not know.
    fn has_unknown_base(&self, st: &State, class: ObjId) -> bool;
    /// The modelled library layer a user class derives from and keeps the model of
    /// (`class MyLinear(nn.Linear)`: `Linear`), see `Interp::layer_base`.
    fn layer_base(&self, st: &State, class: ObjId) -> Option<&'static str>;
    /// Run the embedded Python module `module` (a source root of the module table, e.g. the
    /// torchvision zoo), then call its top-level function `name`.
    fn call_embedded(&mut self, st: State, module: &str, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals;

    // ----- provided: decisions and display ------------------------------------------------

    /// Decide `a == b` for two dimensions.
    fn dim_eq(&self, st: &State, a: &Dim, b: &Dim) -> Tri {
        match (&a.v, &b.v) {
            (Some(x), Some(y)) => st.facts.compare(self.syms(), x, Rel::Eq, y),
            _ => Tri::Unknown,
        }
    }

    fn poly_cmp(&self, st: &State, a: &Poly, rel: Rel, b: &Poly) -> Tri {
        st.facts.compare(self.syms(), a, rel, b)
    }

    /// The formula `a == b` for two dimensions (opaque when either is unknown).
    fn dim_eq_f(&self, a: &Dim, b: &Dim) -> Formula {
        Formula::eq_opt(a.v.as_ref(), b.v.as_ref())
    }

    /// Note that a check's message shows `d` (while it renders: the message then ends with the
    /// origin of each dim it shows, `models::origins`): on its own (`primary`, the size the
    /// message is about), or as a dim of a shape it shows.
    fn cite(&self, _d: &Dim, _primary: bool) {}

    fn show_dim(&self, d: &Dim) -> String {
        self.cite(d, true);
        self.dim_text(None, d)
    }

    /// A dim in the path's terms (facts applied).
    fn show_dim_in(&self, st: &State, d: &Dim) -> String {
        self.cite(d, true);
        self.dim_text(Some(st), d)
    }

    /// A dim's text, in the terms of the path `st` when given (its facts applied), `?` when it
    /// is not known; without citing it (`show_dim` cites the dims a message shows).
    fn dim_text(&self, st: Option<&State>, d: &Dim) -> String {
        match (&d.v, st) {
            (Some(p), Some(st)) => st.facts.normalize(p).display(self.syms()),
            (Some(p), None) => p.display(self.syms()),
            (None, _) => "?".into(),
        }
    }

    fn show_shape(&self, st: &State, s: &Shape) -> String {
        for d in &st.resolve(s).dims {
            self.cite(d, false);
        }
        show_shape(self.syms(), st, s)
    }

    /// A fresh positive dimension.
    fn fresh_dim(&mut self, name: &str) -> Dim {
        Dim::known(self.fresh_sym(name, 1), None)
    }

    /// A shape of its own, of unknown rank (`[*]`).
    fn any_shape(&mut self) -> Shape {
        Shape { prefix: Some(self.fresh_shape_var()), dims: Vec::new() }
    }

    /// A tensor of its own, of unknown shape, dtype and device: what a value the core does not
    /// follow is on every path that goes on, where torch takes nothing but a tensor.
    fn any_tensor(&mut self) -> Value {
        Value::Tensor(Rc::new(Tensor::new(self.any_shape(), None)))
    }
}

/// The generic conveniences over [`ModelCtx`] (a trait object cannot have generic methods).
pub trait ModelCtxExt: ModelCtx {
    /// Record a precondition check whose violation is the typed `V` (its rule is `V::RULE`,
    /// its message `V::message`, one of the rule's templates). `violated` is whether torch
    /// raises: a decided `Tri`, or a `Formula` the facts decide. `msg` builds the violation
    /// and its trace, only when the check is reported or exported. Returns false when the path
    /// ends here (torch raises).
    fn check<V: Violation>(&mut self, st: &State, site: Span, violated: impl Into<Formula>, msg: impl FnOnce(&dyn ModelCtx) -> (V, Vec<String>)) -> bool {
        let mut msg = Some(msg);
        self.check_with(st, site, violated.into(), V::RULE, &mut |cx| {
            let (v, trace) = (msg.take().expect("a check renders its message once"))(cx);
            (v.message(), trace)
        })
    }

    /// Check that a layer's input dim `got` is the size `want` the layer expects. `v` builds the
    /// violation from the input shape, `got` and `want` as text; the trace says where `got` came
    /// from (`models::origins`), then `extra` lines. Returns false when the path ends here (torch raises).
    #[allow(clippy::too_many_arguments)]
    fn expect_dim<V: Violation>(
        &mut self,
        st: &State,
        site: Span,
        input: &Shape,
        got: &Dim,
        want: &Poly,
        extra: Vec<String>,
        v: impl FnOnce(String, String, String) -> V,
    ) -> bool {
        let eq = self.dim_eq_f(got, &Dim::known(want.clone(), None));
        // rendered only when the check is reported or exported
        self.check(st, site, eq.not(), |cx| {
            let shown = cx.show_shape(st, input);
            let (gs, ws) = (cx.show_dim_in(st, got), want.display(cx.syms()));
            (v(shown, gs, ws), extra)
        })
    }
}

impl<T: ModelCtx + ?Sized> ModelCtxExt for T {}
