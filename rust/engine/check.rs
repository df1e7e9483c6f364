//! Precondition checks: how a model records what torch would raise, and how dims and shapes
//! are shown in messages.

use std::rc::Rc;

use super::interp::{Interp, Pending, Verdict, Violation};
use crate::ir::Span;
use crate::models::torch::zoo;
use crate::rules::Rule;
use crate::shape::{Cond, Formula, Poly, Rel, Tri};
use crate::value::*;

impl<'a> Interp<'a> {
    /// Decide `a == b` for two dimensions.
    pub fn dim_eq(&self, st: &State, a: &Dim, b: &Dim) -> Tri {
        match (&a.v, &b.v) {
            (Some(x), Some(y)) => st.facts.compare(&self.syms, x, Rel::Eq, y),
            _ => Tri::Unknown,
        }
    }

    pub fn poly_cmp(&self, st: &State, a: &Poly, rel: Rel, b: &Poly) -> Tri {
        st.facts.compare(&self.syms, a, rel, b)
    }

    /// The formula `a == b` for two dimensions (opaque when either is unknown).
    pub fn dim_eq_f(&self, a: &Dim, b: &Dim) -> Formula {
        Formula::eq_opt(a.v.as_ref(), b.v.as_ref())
    }

    /// Record a precondition check. `violated` is whether torch raises: a decided `Tri`, or a
    /// `Formula` the facts decide. Returns false when the path ends here (torch raises).
    ///
    /// An undecided, expressible violation on a path where it would be reported (untainted,
    /// not inside a `try` with handlers) is exported with its SMT-LIB query when
    /// `Settings::export_undecided` is on.
    pub fn check(&mut self, st: &State, site: Span, violated: impl Into<Formula>, rule: &'static Rule, msg: impl FnOnce(&Interp) -> (String, Vec<String>)) -> bool {
        let violated = violated.into();
        match violated.decide(&st.facts, &self.syms) {
            Tri::False => {
                self.record(st, site, Verdict::Holds);
                true
            }
            Tri::Unknown => {
                self.record(st, site, Verdict::Undecided);
                if self.settings.export_undecided {
                    if !st.tainted && st.in_try == 0 && !(zoo::is_embedded(site) && self.user_site.is_none()) {
                        let path: Vec<&Cond> = st.branches.iter().filter_map(|b| if let Branch::Sym(c) = b { Some(c) } else { None }).collect();
                        let assumed = st.assumed.borrow();
                        if let Some(query) = crate::shape::smt::query(&self.syms, &st.facts, &path, &assumed, &violated) {
                            drop(assumed);
                            let (message, trace) = msg(self);
                            let condition = self.path_condition(st);
                            // inside the zoo: at the innermost user call, like the outcome
                            let site = self.user_span(site);
                            self.undecided.push(Pending { site, rule, message, trace, condition, query });
                        }
                    }
                    // the path goes on with the executions where the precondition held
                    if violated.expressible() {
                        Rc::make_mut(&mut st.assumed.borrow_mut()).push(violated.not());
                    }
                }
                true
            }
            Tri::True => {
                let (message, trace) = msg(self);
                self.record(st, site, Verdict::Violated(Violation { rule, message, trace }));
                false
            }
        }
    }

    /// Record an opt-in diagnostic (SHP9xx) at `site` without ending the path: the line runs,
    /// but is almost certainly wrong.
    pub fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        self.record(st, site, Verdict::Violated(Violation { rule, message, trace: Vec::new() }));
    }

    /// Check that a layer's input dim `got` is the size `want` the layer expects. `message`
    /// gets the input shape, `got` and `want` as text; the trace says where `got` came from,
    /// then `extra` lines. Returns false when the path ends here (torch raises).
    #[allow(clippy::too_many_arguments)]
    pub fn expect_dim(
        &mut self,
        st: &State,
        site: Span,
        rule: &'static Rule,
        input: &Shape,
        got: &Dim,
        want: &Poly,
        extra: Vec<String>,
        message: impl FnOnce(&str, &str, &str) -> String,
    ) -> bool {
        let eq = self.dim_eq_f(got, &Dim::known(want.clone(), None));
        let shown = self.show_shape(st, input);
        let (gs, ws) = (self.show_dim_in(st, got), want.display(&self.syms));
        let mut trace = Vec::new();
        if let Some(w) = &got.why {
            trace.push(format!("{gs} came from {w}"));
        }
        trace.extend(extra);
        self.check(st, site, eq.not(), rule, |_| (message(&shown, &gs, &ws), trace))
    }

    pub fn show_dim(&self, d: &Dim) -> String {
        match &d.v {
            Some(p) => p.display(&self.syms),
            None => "?".into(),
        }
    }

    /// A dim in the path's terms (facts applied).
    pub fn show_dim_in(&self, st: &State, d: &Dim) -> String {
        match &d.v {
            Some(p) => st.facts.normalize(p).display(&self.syms),
            None => "?".into(),
        }
    }

    pub fn show_shape(&self, st: &State, s: &Shape) -> String {
        let s = st.resolve(s);
        let mut parts: Vec<String> = Vec::new();
        if s.prefix.is_some() {
            parts.push("*".into());
        }
        // dims in the path's terms: `batch` is `1` on the path where `batch == 1`
        parts.extend(s.dims.iter().map(|d| match &d.v {
            Some(p) => st.facts.normalize(p).display(&self.syms),
            None => "?".into(),
        }));
        format!("[{}]", parts.join(", "))
    }

    pub fn fresh_dim(&mut self, name: &str) -> Dim {
        Dim::known(self.syms.fresh(name, 1), None)
    }
}

