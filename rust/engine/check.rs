//! Precondition checks: how a check records what torch would raise, and when an undecided
//! one is exported for Z3. Models reach these through `ModelCtx::check_with`/`warn`.

use std::rc::Rc;

use super::interp::{Interp, Pending, Verdict, Violation};
use crate::ir::Span;
use super::modules;
use crate::rules::Rule;
use crate::shape::{Cond, Formula, Tri};
use crate::value::*;

impl<'a> Interp<'a> {
    /// Record a precondition check. `violated` is whether torch raises: a decided `Tri`, or a
    /// `Formula` the facts decide. Returns false when the path ends here (torch raises).
    ///
    /// An undecided, expressible violation on a path where it would be reported (untainted,
    /// not inside a `try` with handlers) is exported with its SMT-LIB query when
    /// `Settings::export_undecided` is on.
    pub fn check(&mut self, st: &State, site: Span, violated: impl Into<Formula>, rule: &'static Rule, msg: impl FnOnce(&Interp) -> (String, Vec<String>)) -> bool {
        let violated = violated.into();
        let fix = self.fix_hint.take();
        match violated.decide(&st.facts, &self.syms) {
            Tri::False => {
                self.record(st, site, Verdict::Holds);
                true
            }
            Tri::Unknown => {
                self.record(st, site, Verdict::Undecided);
                if self.settings.export_undecided {
                    if !st.tainted && st.in_try == 0 && !(modules::is_embedded(site) && self.user_site.is_none()) {
                        let path: Vec<&Cond> = st.branches.iter().filter_map(|b| if let Branch::Sym(c) = b { Some(c) } else { None }).collect();
                        let assumed = st.assumed.borrow();
                        if let Some(query) = crate::shape::smt::query(&self.syms, &st.facts, &path, &assumed, &violated) {
                            drop(assumed);
                            let (message, trace) = msg(self);
                            let condition = self.path_condition(st);
                            // inside the zoo: at the innermost user call, like the outcome
                            let site = self.user_span(site);
                            self.undecided.push(Pending { site, rule, message, trace, condition, query });
                            // a call summary would not replay the export
                            self.flagged += 1;
                        }
                    }
                    // the path goes on with the executions where the precondition held
                    if violated.expressible() {
                        Rc::make_mut(&mut st.assumed.borrow_mut()).push(violated.not());
                        // nor the assumption (`State::assumed` is not part of a summary)
                        self.flagged += 1;
                    }
                }
                true
            }
            Tri::True => {
                let (message, trace) = msg(self);
                self.record(st, site, Verdict::Violated(Violation { rule, message, trace, fix }));
                false
            }
        }
    }

    /// Record an opt-in diagnostic (SHP9xx) at `site` without ending the path: the line runs,
    /// but is almost certainly wrong.
    pub fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        self.record(st, site, Verdict::Violated(Violation { rule, message, trace: Vec::new(), fix: None }));
    }
}
