//! Precondition checks: how a check records what torch would raise, and when an undecided
//! one is exported for Z3. Models reach these through `ModelCtx::check_with`/`warn`.

use std::rc::Rc;

use super::interp::{Interp, Pending, Verdict, Violation};
use crate::ir::Span;
use super::modules;
use crate::rules::Rule;
use crate::engine::CheckVerdict;
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
        let mut verdict = violated.decide(&st.facts, &self.syms);
        // the same precondition, left undecided earlier on this path: the path went on with
        // the executions where it held (`State::assumed`), so it holds here
        if verdict == Tri::Unknown && violated.expressible() && !st.assumed.borrow().is_empty() {
            let held = violated.clone().not();
            if st.assumed.borrow().iter().any(|f| *f == held) {
                verdict = Tri::False;
                // (decided by what this path assumed, which a summary does not keep: a replay
                // on another path would take it as holding without the assumption)
                self.flagged += 1;
            }
        }
        match verdict {
            Tri::False => {
                self.count_check(site, CheckVerdict::Holds);
                self.record(st, site, Verdict::Holds);
                true
            }
            Tri::Unknown => {
                self.count_check(site, CheckVerdict::Undecided);
                self.record(st, site, Verdict::Undecided);
                if self.settings.export_undecided {
                    let query = self.export_query(st, site, &violated);
                    // values under which the path's context holds and the check passes: the
                    // bridge would answer SAT (the check does not fail on every execution), so
                    // nothing is exported. (The SHP902 run asks the opposite question: it
                    // exports every query.)
                    let query = match query {
                        Some(q) if q.witness.is_some() && !self.settings.free_params => {
                            self.count_check(site, CheckVerdict::Witnessed);
                            // a replay in another caller's context might need the export
                            self.flagged += 1;
                            None
                        }
                        q => q,
                    };
                    if let Some(query) = query {
                        let (message, trace, origins) = self.render(st, site, rule, msg);
                        let condition = self.path_condition(st);
                        // inside the zoo: at the innermost user call, like the outcome
                        let site = self.user_span(site);
                        self.undecided.push(Pending { site, rule, message, trace, origins, condition, query });
                        self.count_check(site, CheckVerdict::Exported);
                        // a call summary would not replay the export
                        self.flagged += 1;
                    }
                    // the path goes on with the executions where the precondition held
                    if violated.expressible() {
                        let held = violated.not();
                        // (kept for `summary`'s input contracts only: the CLI's runs do not look)
                        if self.summary.is_some() && !self.assumed_at.iter().any(|(f, _)| *f == held) {
                            self.assumed_at.push((held.clone(), self.user_span(site)));
                        }
                        Rc::make_mut(&mut st.assumed.borrow_mut()).push(held);
                        // nor the assumption (`State::assumed` is not part of a summary)
                        self.flagged += 1;
                    }
                }
                true
            }
            Tri::True => {
                self.count_check(site, CheckVerdict::Violated);
                // the SHP902 run: a failure the facts decide (on a path whose condition involves
                // free parameters) is a candidate too, with its query
                if self.settings.free_params {
                    if let Some(query) = self.export_query(st, site, &violated) {
                        let (message, trace, origins) = self.render(st, site, rule, msg);
                        let condition = self.path_condition(st);
                        let site = self.user_span(site);
                        self.undecided.push(Pending { site, rule, message: message.clone(), trace: trace.clone(), origins: origins.clone(), condition, query });
                        self.flagged += 1;
                        self.record(st, site, Verdict::Violated(Box::new(Violation { rule, message, trace, origins, fix })));
                        return false;
                    }
                }
                let (message, trace, origins) = self.render(st, site, rule, msg);
                self.record(st, site, Verdict::Violated(Box::new(Violation { rule, message, trace, origins, fix })));
                false
            }
        }
    }

    /// A check's message and trace, with the origin chains of the dims the message shows
    /// (`ModelCtx::cite`): the first link of each (at most two, the ones not made on the
    /// checked line itself) ends the message, `2304 = 64·6·6 from pool (line 9), flattened at
    /// line 16`; every link leads the trace, indented by its depth. The sizes a message shows
    /// on their own are the ones it is about; without one, the last dim with an origin of the
    /// shapes it shows stands for where the tensor came from. Only for shape errors (`SHP1xx`).
    fn render(&self, st: &State, site: Span, rule: &'static Rule, msg: impl FnOnce(&Interp) -> (String, Vec<String>)) -> (String, Vec<String>, Vec<crate::models::origins::Link>) {
        if rule.family != crate::rules::Family::Shape {
            // (where a size came from is what a shape error is about, not a device's or a loop's)
            let (message, trace) = msg(self);
            return (message, trace, Vec::new());
        }
        let outer = self.cited.replace(Some(Vec::new()));
        let (mut message, trace) = msg(self);
        let cited = self.cited.replace(outer).unwrap_or_default();
        let primary: Vec<&Dim> = cited.iter().filter(|(_, p)| *p).map(|(d, _)| d).collect();
        let cited: Vec<&Dim> = if primary.is_empty() { cited.iter().rev().take(1).map(|(d, _)| d).collect() } else { primary.into_iter().filter(|d| d.why.is_some()).collect() };
        if cited.is_empty() {
            return (message, trace, Vec::new());
        }
        let here = self.quietly(|i| i.place(site));
        let mut links: Vec<crate::models::origins::Link> = Vec::new();
        let mut tails: Vec<String> = Vec::new();
        for d in cited {
            let chain = crate::models::origins::chain(self, st, d);
            let Some(first) = chain.first() else { continue };
            if links.iter().any(|l| l.depth == 0 && l.text == first.text) {
                continue;
            }
            // (a size written on the failing line itself tells nothing the line does not)
            let local = first.kind == "written" && first.place.as_deref() == Some(here.as_str());
            if !local && tails.len() < 2 {
                tails.push(first.text.clone());
            }
            links.extend(chain);
        }
        if !tails.is_empty() {
            message = format!("{message} ({})", tails.join("; "));
        }
        let mut lines = crate::models::origins::lines(&links);
        lines.extend(trace);
        (message, lines, links)
    }

    /// Count a check's verdict for the statistics (`engine::Stats::checks`), and with
    /// `Settings::check_sites` at its site in the checked file (where it would report).
    /// The SMT-LIB query of a check's violation on this path, where an export may be reported:
    /// an untainted path outside a `try` with handlers, not inside embedded code reached other
    /// than from a user call (the undecided export, and the SHP902 run's decided failures).
    fn export_query(&self, st: &State, site: Span, violated: &Formula) -> Option<crate::shape::smt::Query> {
        if st.tainted || st.in_try != 0 || (modules::is_embedded(site) && self.user_site.is_none()) {
            return None;
        }
        let path: Vec<&Cond> = st.branches.iter().filter_map(|b| if let Branch::Sym(c) = b { Some(c) } else { None }).collect();
        let assumed = st.assumed.borrow();
        crate::shape::smt::query(&self.syms, &st.facts, &path, &assumed, violated)
    }

    fn count_check(&mut self, site: Span, v: CheckVerdict) {
        self.checks.add(v);
        if self.check_sites.is_some() && !(modules::is_embedded(site) && self.user_site.is_none()) {
            let site = self.user_span(site);
            if site.file == crate::ir::FileId::MAIN {
                if let Some(sites) = &mut self.check_sites {
                    sites.entry(site.start).or_default().add(v);
                }
            }
        }
    }

    /// Record an opt-in diagnostic (SHP9xx) at `site` without ending the path: the line runs,
    /// but is almost certainly wrong.
    pub fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        self.record(st, site, Verdict::Violated(Box::new(Violation { rule, message, trace: Vec::new(), origins: Vec::new(), fix: None })));
    }
}
