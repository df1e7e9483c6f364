//! The report rule: which of the outcomes the checks record become findings, and which
//! undecided checks are exported for the Z3 bridge.
//!
//! A violation found on a path is reported when the path is not tainted by an opaque choice
//! (its branch conditions are all expressible; the message names them), or when every path
//! that reaches the site fails there. An entry that exhausts a budget reports nothing.
//!
//! Each check records an outcome for its site (`Interp::record`): Holds, Undecided or
//! Violated. Each path records one outcome per site; a violation replaces that path's earlier
//! verdicts at the same site.
//! - **Branches.** An opaque `if` (its value comes from unmodelled code) forks into two tainted
//!   paths. A first-use assumption about an unknown input, such as its rank for Conv2d
//!   (batched or not), forks into `Assume` alternatives.
//! - **When a site is reported** (`findings_from`). It is reported if an untainted path
//!   violates there; the message carries that path's expressible conditions, e.g.
//!   `(when batch == 1)`. It is also reported if every path reaching the site violates, and,
//!   for each `Assume` on the way, every alternative reached the site and failed, or is a
//!   fallback alternative (not the first, preferred one: the batched rank) refuted by raising
//!   before any other choice (`refuted`). The second condition stops cascades: with
//!   `BatchNorm1d` given a 4-D map, the batched alternative fails there and the 3-D one would
//!   otherwise be reported at the next layer. The fallback clause lets the batched reading
//!   report when the unbatched one dies early (`conv -> permute(0, 2, 3, 1)` on a 3-D map, then
//!   a Linear sized wrongly for the batched map).
//! - **Chains of calls.** A site is judged per chain of user call sites that reach it
//!   (`Outcome::calls`): `predict(x)` right in the training loop and wrong for a holdout batch
//!   after an opaque choice is reported for the wrong call, with `fails when called from line
//!   N` when other calls reach the site and it passes on some path.
//! - **Reaching a site.** A subscript, an operator or a library call whose model records no
//!   outcome (it returned Unknown without a check) still records that its path reached the
//!   site (`reach_mark`/`reached`), so "every path reaching the site violates" counts it: a
//!   placeholder class attribute (`anchors = torch.empty(0)`) indexed on the path where an
//!   opaque `if` did not replace it is not reported when the other path reaches the same
//!   index with a value the model cannot tell.
//! - **Other rules.** A violation inside a `try` with a handler that may catch what torch
//!   raises is never reported (`Interp::may_catch_torch_error`: not one that catches only
//!   `KeyboardInterrupt`, `SystemExit`, `OSError`, ...). A site
//!   reports once, whatever the codes (`one_per_site`).
//! - **Undecided checks** (`undecided_from`, `undecided_to_export`). An undecided check is
//!   exported only where its violation would be reported: not at a site where some path is
//!   inside a `try` with handlers, not at a site that is reported already, one query per site
//!   and text.

use super::interp::{Interp, Outcome, Pending, Verdict};
use crate::diagnostics::{Finding, Undecided};
use crate::ir::{FileId, Span};
use crate::value::*;

impl<'a> Interp<'a> {
    /// The path's expressible branch conditions as text (`B == 1 and T < 5`), if any.
    pub fn path_condition(&self, st: &State) -> Option<String> {
        self.condition_of(&st.branches)
    }

    /// [`Interp::path_condition`] of a path with these branches.
    pub fn condition_of(&self, branches: &Branches) -> Option<String> {
        let conds: Vec<String> = branches
            .iter()
            .filter_map(|b| match b {
                Branch::Sym(c) => Some(crate::shape::describe_cond(&self.syms, c)),
                Branch::Opaque(..) | Branch::Assume(..) => None,
            })
            .collect();
        if conds.is_empty() { None } else { Some(conds.join(" and ")) }
    }

    pub fn record(&mut self, st: &State, site: Span, verdict: Verdict) {
        if crate::engine::modules::is_embedded(site) && self.user_site.is_none() {
            // embedded code not reached from a user call: nowhere to report
            return;
        }
        // (a probing second iteration records only the violations of the rule it probes)
        if let Some(code) = self.probe_only
            && !matches!(&verdict, Verdict::Violated(v) if v.rule.code == code)
        {
            return;
        }
        let site = self.user_span(site);
        // (a violation's path condition is the text of its branches, made where it is reported)
        let o = Outcome { site, calls: self.calls.clone(), branches: st.branches.clone(), lineage: st.lineage, verdict, tainted: st.tainted, suppressed: st.in_try > 0 };
        self.record_outcome(o);
        self.records += 1;
    }

    /// Record an outcome (`record`'s, or one a call summary replays). One verdict per path
    /// and site: a violation overrides what earlier checks of the same call on this path found
    /// (e.g. the first dim of `transpose` fine, the second not), not another path's that
    /// reached the site before with the same branches (two paths merged from different ones:
    /// `State::lineage`).
    pub fn record_outcome(&mut self, o: Outcome) {
        let violated = matches!(o.verdict, Verdict::Violated(_));
        if violated {
            self.flagged += 1;
            self.violations += 1;
        }
        // (`passed`: from the first passing outcome of the same site, path, call and branches)
        if violated {
            self.note_passed_since();
        }
        if violated && let Some(&(at, removed)) = self.passed.get(&passed_key(&o)) {
            let from = at.saturating_sub((self.removed - removed) as usize);
            let mut kept = from;
            for i in from..self.outcomes.len() {
                let p = &self.outcomes[i];
                if p.site == o.site && p.lineage == o.lineage && p.branches == o.branches && p.calls == o.calls && !matches!(p.verdict, Verdict::Violated(_)) {
                    // (an outcome from before the summarised call being run, overridden: a
                    // replay of the call elsewhere would not override it; the call is not
                    // summarised)
                    if i < self.outcome_floor {
                        self.flagged += 1;
                    }
                    continue;
                }
                self.outcomes.swap(kept, i);
                kept += 1;
            }
            self.removed += (self.outcomes.len() - kept) as u64;
            self.outcomes.truncate(kept);
            self.passed_upto = self.passed_upto.min(kept);
        }
        self.push_outcome(o);
    }

    /// Forget the outcomes (a new entry).
    pub fn clear_outcomes(&mut self) {
        self.outcomes.clear();
        self.passed.clear();
        self.passed_upto = 0;
    }

    /// Note again where the passing outcomes are (after a pass rewrote `outcomes`): from the
    /// first, when a violation next needs them.
    pub fn note_passed(&mut self) {
        self.passed.clear();
        self.passed_upto = 0;
    }

    /// Note where the passing outcomes recorded since the last note are (`passed`).
    fn note_passed_since(&mut self) {
        let from = self.passed_upto.min(self.outcomes.len());
        for (i, o) in self.outcomes.iter().enumerate().skip(from) {
            if !matches!(o.verdict, Verdict::Violated(_)) {
                self.passed.entry(passed_key(o)).or_insert((i, self.removed));
            }
        }
        self.passed_upto = self.outcomes.len();
    }

    /// Record an outcome, unless it passes (holds or is undecided) and an equal one is among
    /// the last few of the innermost summarised call (a replayed summary of a call made in a
    /// loop or a comprehension records the same ones each time). The report rule sees the
    /// outcomes of a site as a set but for its violations, which are always recorded, and a
    /// summary keeps the outcomes of its own call only (`outcome_floor`), so a duplicate
    /// changes nothing.
    pub fn push_outcome(&mut self, o: Outcome) {
        /// How far back an equal outcome is looked for.
        const RECENT: usize = 8;
        if !matches!(o.verdict, Verdict::Violated(_)) {
            let from = self.outcomes.len().saturating_sub(RECENT).max(self.outcome_floor);
            let same = |p: &Outcome| {
                p.site == o.site
                    && p.tainted == o.tainted
                    && p.suppressed == o.suppressed
                    && matches!((&p.verdict, &o.verdict), (Verdict::Holds, Verdict::Holds) | (Verdict::Undecided, Verdict::Undecided))
                    && (std::rc::Rc::ptr_eq(&p.calls, &o.calls) || p.calls == o.calls)
                    && p.branches == o.branches
            };
            if self.outcomes.get(from..).is_some_and(|recent| recent.iter().rev().any(same)) {
                return;
            }
        }
        self.outcomes.push(o);
    }

    /// Before an operation at `span` (a subscript, an operator, a library call) whose model
    /// may check preconditions there: the path and the number of outcomes recorded so far.
    /// `reached` then records that the path reached the site when the model recorded
    /// nothing (it returned Unknown without a check), so that "every path reaching the site
    /// fails" counts this path: a violation on an opaque branch is not reported when the
    /// other branch reaches the same site and its model cannot tell. Sites in embedded code
    /// map to the user's call, where other checks decide: they are left out.
    pub fn reach_mark(&self, st: &State, span: Span) -> Option<(u64, Branches, bool, bool, u32)> {
        // (nor a probing second iteration, which records only its rule's violations)
        if crate::engine::modules::is_embedded(span) || self.probe_only.is_some() {
            return None;
        }
        Some((self.records, st.branches.clone(), st.tainted, st.in_try > 0, st.lineage))
    }

    pub fn reached(&mut self, mark: Option<(u64, Branches, bool, bool, u32)>, span: Span) {
        let Some((records, branches, tainted, suppressed, lineage)) = mark else { return };
        if self.records != records {
            return;
        }
        self.push_outcome(Outcome { site: span, calls: self.calls.clone(), branches, lineage, verdict: Verdict::Holds, tainted, suppressed });
    }

    /// The row of a span in its own file (embedded library code: the user's call).
    pub fn line(&self, span: Span) -> usize {
        let span = self.user_span(span);
        match self.project.module_of(span.file) {
            Some(m) => m.lines.row(span.start),
            None => self.file.row(span.start),
        }
    }

    /// Where a span is, for messages: `line 12` in the checked file, `model.py:12` in another
    /// file of the project.
    pub fn place(&self, span: Span) -> String {
        let span = self.user_span(span);
        if let Some(tokens) = &self.shared_run {
            // a run shared by every file it loads: rendered for each of them later
            return tokens.token(span);
        }
        match self.project.module_of(span.file) {
            Some(m) => {
                let text = format!("{}:{}", m.display, m.lines.row(span.start));
                if !self.quiet_places.get() {
                    self.places.borrow_mut().entry(text.clone()).or_insert(span);
                }
                text
            }
            None => {
                let text = format!("line {}", self.file.row(span.start));
                if span.file == FileId::MAIN && !self.quiet_places.get() {
                    self.places.borrow_mut().entry(text.clone()).or_insert(span);
                }
                text
            }
        }
    }

    /// The text and line index of the file `file` of this analysis (the checked file, or a
    /// loaded file of the project).
    pub fn source_of(&self, file: FileId) -> Option<(&str, Location<'_>)> {
        match self.project.module_of(file) {
            Some(m) => Some((m.lines.source(), Location::Lines(&m.lines))),
            None if file == FileId::MAIN => Some((self.file.source, Location::Main(self.file))),
            None => None,
        }
    }

    /// A span in the user's file: embedded library code maps to the innermost user call.
    pub fn user_span(&self, span: Span) -> Span {
        if crate::engine::modules::is_embedded(span) { self.user_site.unwrap_or_default() } else { span }
    }
}

/// Where the byte offsets of one file are (1-based rows, code-point columns).
#[derive(Clone, Copy)]
pub enum Location<'f> {
    Main(&'f crate::parse::ParsedFile<'f>),
    Lines(&'f crate::parse::SourceLines),
}

impl Location<'_> {
    pub fn at(&self, offset: u32) -> (usize, usize) {
        match self {
            Location::Main(f) => f.location(offset),
            Location::Lines(l) => l.location(offset),
        }
    }
}

/// Settle the candidate warnings of the entry just run, which only the whole run decides:
/// SHP312 ([`settle_checkpoints`]) and SHP303's zeroing every k iterations
/// (`rules::training::discarded_gradients::settled`: a zeroing of gradients no step ever used
/// passes).
pub fn settle(interp: &mut Interp) {
    use crate::rules::training::discarded_gradients::RULE;
    settle_checkpoints(interp);
    let settled: Vec<bool> = interp
        .outcomes
        .iter()
        .map(|o| matches!(&o.verdict, Verdict::Violated(v) if v.rule.code == RULE.code && crate::rules::training::discarded_gradients::settled(&v.message, crate::models::torch::optim::used) == Some(false)))
        .collect();
    if !settled.contains(&true) {
        return;
    }
    // a zeroing that discards nothing passes there, unless another violation on the same path
    // fails at that site (the step after it uses no gradients): then it is dropped, as a pass
    // recorded before a violation of the same call is (`record`)
    let outcomes = std::mem::take(&mut interp.outcomes);
    let failing: Vec<(Span, Branches)> = outcomes.iter().zip(&settled).filter(|(o, s)| !**s && matches!(o.verdict, Verdict::Violated(_))).map(|(o, _)| (o.site, o.branches.clone())).collect();
    interp.outcomes = outcomes
        .into_iter()
        .zip(settled)
        .filter_map(|(mut o, s)| {
            if !s {
                return Some(o);
            }
            if failing.iter().any(|(site, b)| *site == o.site && *b == o.branches) {
                return None;
            }
            o.verdict = Verdict::Holds;
            Some(o)
        })
        .collect();
    interp.note_passed();
}

/// The key of an outcome in `Interp::passed`: its site, lineage, innermost call site and
/// branches' digest (equal for the outcomes a violation of its path at its site overrides).
fn passed_key(o: &Outcome) -> (Span, u32, Option<Span>, u64) {
    (o.site, o.lineage, o.calls.last().copied(), o.branches.digest())
}

/// Settle the candidate SHP312 warnings of the entry just run (`models::torch::checkpoint`):
/// now that every save of the entry ran, a read of a key some save wrote (or that the rule
/// cannot judge) passes; one no save wrote gets its message, which names the saves.
fn settle_checkpoints(interp: &mut Interp) {
    use crate::rules::training::checkpoint_key_never_saved::RULE;
    use crate::rules::violation::Violation;
    if !interp.outcomes.iter().any(|o| matches!(&o.verdict, Verdict::Violated(v) if v.rule.code == RULE.code)) {
        return;
    }
    let mut decided: Vec<(Span, Option<String>)> = Vec::new();
    let mut outcomes = std::mem::take(&mut interp.outcomes);
    for o in outcomes.iter_mut() {
        let Verdict::Violated(v) = &mut o.verdict else { continue };
        if v.rule.code != RULE.code {
            continue;
        }
        let message = match decided.iter().find(|(s, _)| *s == o.site) {
            Some((_, m)) => m.clone(),
            None => {
                let place = |s: Span| interp.place(s);
                // the read's own file is the checked one (a run shared by every file it loads
                // judges each read as that file's analysis would)
                let file = if interp.shared_run.is_some() { o.site.file } else { FileId::MAIN };
                let m = match interp.source_of(file) {
                    Some((source, _)) => crate::rules::training::checkpoint_key_never_saved::missing(&interp.checkpoints, file, source, o.site, &place).map(|v| v.message()),
                    None => None,
                };
                decided.push((o.site, m.clone()));
                m
            }
        };
        match message {
            Some(m) => v.message = m,
            None => o.verdict = Verdict::Holds,
        }
    }
    interp.outcomes = outcomes;
    interp.note_passed();
}

/// The sites some path reaches inside a `try` whose handler may catch what torch raises.
fn suppressed_sites(outcomes: &[Outcome], file: FileId) -> std::collections::BTreeSet<(u32, u32)> {
    outcomes.iter().filter(|o| o.suppressed && o.site.file == file).map(|o| (o.site.start, o.site.end)).collect()
}

/// Turn the outcomes of one entry point into findings (the report rule above).
pub fn findings_from(interp: &Interp, outcomes: &[Outcome]) -> Vec<Finding> {
    findings_in(interp, outcomes, FileId::MAIN)
}

/// The findings of `file` among the outcomes (`findings_from`): the checked file's, or in a
/// run shared by every file it loads (`engine::scripts`), each loaded file's in turn.
pub fn findings_in(interp: &Interp, outcomes: &[Outcome], file: FileId) -> Vec<Finding> {
    let Some((_, loc)) = interp.source_of(file) else { return Vec::new() };
    // only the sites with a violation can report, and only their own outcomes decide how (the
    // chains that reach each, whether some path passes it): the others are not grouped. Most
    // sites of most files have none (a model file records thousands of passing checks).
    let violated: rustc_hash::FxHashSet<(u32, u32)> =
        outcomes.iter().filter(|o| o.site.file == file && matches!(o.verdict, Verdict::Violated(_))).map(|o| (o.site.start, o.site.end)).collect();
    if violated.is_empty() {
        return Vec::new();
    }
    // a site is judged per chain of call sites that reach it (a helper right when one caller
    // calls it may be wrong for another); a `try` that catches around any of them silences it
    let suppressed = suppressed_sites(outcomes, file);
    let mut index: rustc_hash::FxHashMap<((u32, u32), &[Span]), usize> = Default::default();
    let mut by_site: Vec<((u32, u32), Vec<&Outcome>)> = Vec::new();
    // only the checked file's sites: another project file reports its own when it is checked
    for o in outcomes.iter().filter(|o| o.site.file == file && violated.contains(&(o.site.start, o.site.end))) {
        let site = (o.site.start, o.site.end);
        let i = *index.entry((site, &o.calls[..])).or_insert_with(|| {
            by_site.push((site, Vec::new()));
            by_site.len() - 1
        });
        by_site[i].1.push(o);
    }
    // in the order of the sites, and of each site's first chain
    by_site.sort_by_key(|(site, _)| *site);
    // per site: how many chains of calls reach it, and whether some path passes it
    let mut reach: rustc_hash::FxHashMap<(u32, u32), (usize, bool)> = Default::default();
    for (site, os) in &by_site {
        let r = reach.entry(*site).or_default();
        r.0 += 1;
        r.1 |= os.iter().any(|o| !matches!(o.verdict, Verdict::Violated(_)));
    }
    let mut out = Vec::new();
    for ((start, end), os) in by_site {
        // a `try` that may catch what torch raises hides the raises only: a pattern that runs
        // and trains the wrong thing (SHP301-SHP308) raises nothing for it to catch
        let hidden = suppressed.contains(&(start, end));
        let fails: Vec<&&Outcome> = os.iter().filter(|o| matches!(&o.verdict, Verdict::Violated(v) if !(hidden && v.rule.raises))).collect();
        if fails.is_empty() {
            continue;
        }
        let all_fail = fails.len() == os.len();
        // the preferred reading of each assumption first (the batched rank: its error is the
        // one torch raises for the batch the program feeds)
        let fallbacks = |o: &Outcome| o.branches.iter().filter(|b| matches!(b, Branch::Assume(_, side, _) if *side > 0)).count();
        let untainted = fails.iter().filter(|o| !o.tainted).min_by_key(|o| fallbacks(o));
        // A failure reached only through opaque choices counts when every path reaching the
        // site fails and, at each assumption about an unknown input on the way, every
        // alternative reached the site and failed there (otherwise an earlier error under
        // the other assumption may be the real cause), or is a fallback alternative that was
        // refuted: it raised before any other choice. The first alternative is the preferred
        // reading (the batched rank, `require_rank`): when it dies early, that early error is
        // the report, and a fallback's later error is not a second one.
        let covered = |o: &Outcome| {
            let branches = o.branches.to_vec();
            branches.iter().enumerate().all(|(i, b)| match b {
                Branch::Assume(span, _, n) => (0..*n).all(|side| {
                    let alt = Branch::Assume(*span, side, *n);
                    fails.iter().any(|f| f.branches.contains(&alt)) || (side > 0 && refuted(outcomes, &branches[..i], &alt))
                }),
                Branch::Opaque(..) | Branch::Sym(_) => true,
            })
        };
        let chosen = match (all_fail, untainted) {
            (_, Some(o)) => *o,
            (true, None) => match fails.iter().find(|o| covered(o)) {
                Some(o) => *o,
                None => continue,
            },
            (false, None) => continue,
        };
        let Verdict::Violated(v) = &chosen.verdict else { continue };
        // (the path's expressible conditions, shown when not every path fails)
        let condition = if all_fail { None } else { interp.condition_of(&chosen.branches) };
        let ((row, col), (end_row, end_col)) = (loc.at(start), loc.at(end));
        let message = match &condition {
            Some(c) => format!("{} (when {c})", v.message),
            None => v.message.clone(),
        };
        let mut trace = v.trace.clone();
        if reach[&(start, end)].0 > 1 && reach[&(start, end)].1 {
            // other calls reach the site, and it passes on some path: name the calls of the
            // failing one
            let places: Vec<String> = chosen.calls.iter().filter(|s| !crate::engine::modules::is_embedded(**s)).map(|s| interp.place(*s)).collect();
            if !places.is_empty() {
                trace.push(format!("fails when called from {}", places.join(", then ")));
            }
        }
        let related = super::shapes::related(interp, &trace);
        // a fix only for a line that fails on every path reaching it
        let fix = if all_fail && condition.is_none() { v.fix.as_ref().and_then(|h| fix_of(interp, h, file)) } else { None };
        out.push(Finding { rule: v.rule, message, row, col, end_row, end_col, trace, origins: v.origins.clone(), condition, related, fix });
    }
    out
}

/// The edit a model's fix hint stands for, when exactly one of its candidates is an int
/// literal (or an expression of int literals, `16 * 5 * 5`) of the checked file other than the
/// wanted value: `use nn.Linear(120, 84)` (the call as fixed, when it is one short line), else
/// `use in_features=120`.
fn fix_of(interp: &Interp, h: &FixHint, file: FileId) -> Option<crate::diagnostics::Fix> {
    if h.at.file != file {
        return None;
    }
    let (src, loc) = interp.source_of(file)?;
    let found: Vec<(&FixAlt, (u32, u32, i128))> =
        h.alts.iter().filter(|a| a.want > 0).filter_map(|a| Some((a, crate::parse::int_literal_arg(src, h.at.start, h.at.end, a.pos, a.kw)?))).filter(|(a, (_, _, old))| *old != a.want).collect();
    let [(alt, (s, e, _))] = found[..] else { return None };
    let content = alt.want.to_string();
    let fixed = format!("{}{content}{}", &src[h.at.start as usize..s as usize], &src[e as usize..h.at.end as usize]);
    let message = if fixed.contains('\n') || fixed.chars().count() > 60 || alt.kw.is_empty() {
        if alt.kw.is_empty() { format!("use {content}") } else { format!("use {}={content}", alt.kw) }
    } else {
        format!("use {fixed}")
    };
    let ((row, col), (end_row, end_col)) = (loc.at(s), loc.at(e));
    let edit = crate::diagnostics::Edit { content, row, col, end_row, end_col, start: s as usize, end: e as usize };
    Some(crate::diagnostics::Fix { message, edits: vec![edit] })
}

/// Whether the alternative `alt` of an assumption taken after the branches `prefix` raised
/// at once: a violation of a rule torch raises for (not a "may fail" warning nor a training
/// pattern that runs on, not inside a `try`) on a path whose
/// branches are exactly `prefix` and `alt`, so every execution under it ended there.
fn refuted(outcomes: &[Outcome], prefix: &[Branch], alt: &Branch) -> bool {
    outcomes.iter().any(|o| {
        matches!(&o.verdict, Verdict::Violated(v) if v.rule.raises && !v.rule.code.starts_with("SHP9"))
            && !o.suppressed
            && o.branches.len() == prefix.len() + 1
            && o.branches.prefix(prefix.len()) == *prefix
            && o.branches.suffix(prefix.len()).first() == Some(alt)
    })
}

/// The undecided checks of one entry point that the report rule would report if they were
/// violated: a site where some path is inside a `try` with handlers never reports.
pub fn undecided_from(interp: &Interp, outcomes: &[Outcome], pending: &[Pending]) -> Vec<crate::diagnostics::Undecided> {
    undecided_in(interp, outcomes, pending, FileId::MAIN)
}

/// The undecided checks of `file` (`undecided_from`; `findings_in` says which file).
pub fn undecided_in(interp: &Interp, outcomes: &[Outcome], pending: &[Pending], file: FileId) -> Vec<crate::diagnostics::Undecided> {
    let Some((_, loc)) = interp.source_of(file) else { return Vec::new() };
    let suppressed = suppressed_sites(outcomes, file);
    let mut out = Vec::new();
    for p in pending.iter().filter(|p| p.site.file == file) {
        if suppressed.contains(&(p.site.start, p.site.end)) {
            continue;
        }
        let ((row, col), (end_row, end_col)) = (loc.at(p.site.start), loc.at(p.site.end));
        let message = match &p.condition {
            Some(c) => format!("{} (when {c})", p.message),
            None => p.message.clone(),
        };
        out.push(crate::diagnostics::Undecided {
            finding: Finding { rule: p.rule, message, row, col, end_row, end_col, trace: p.trace.clone(), origins: p.origins.clone(), condition: p.condition.clone(), related: super::shapes::related(interp, &p.trace), fix: None },
            context: p.query.context.clone(),
            precondition: p.query.precondition.clone(),
            params: free_params(&interp.syms, &p.query.symbols),
            free: p.query.symbols.iter().all(|id| interp.syms.infos.get(*id as usize).is_some_and(|i| i.param.is_some())),
        });
    }
    out
}

/// The free parameters among a query's declared symbols (SHP902).
fn free_params(syms: &crate::shape::Symbols, ids: &[crate::shape::SymId]) -> Vec<crate::diagnostics::FreeParam> {
    use crate::shape::ParamKind;
    ids.iter()
        .filter_map(|id| {
            let p = syms.infos.get(*id as usize)?.param.as_ref()?;
            let kind = match p.kind {
                ParamKind::Option => "option",
                ParamKind::Ctor => "ctor",
                ParamKind::Input => "input",
                ParamKind::Data => "data",
            };
            Some(crate::diagnostics::FreeParam { smt: crate::shape::smt::sym_name(syms, *id), name: p.name.clone(), kind, default: p.default })
        })
        .collect()
}

/// The findings of all entry points, in order of their sites, one per site.
pub(super) fn one_per_site(findings: &mut Vec<Finding>) {
    // one diagnostic per site and code; at a site, a finding on every path before one under
    // a condition (a training-loop bug before a device mismatch only a switch reaches)
    findings.sort_by_key(|f| (f.row, f.col, f.condition.is_some()));
    // one root cause, one report: a site reports once, whatever path found it first
    findings.dedup_by(|a, b| a.row == b.row && a.col == b.col);
}

/// The undecided checks of all entry points that are worth a query. (The SHP902 run passes no
/// findings: its reported sites are candidates too, `engine/check.rs`.)
pub(super) fn undecided_to_export(undecided: &mut Vec<Undecided>, findings: &[Finding]) {
    // an undecided check at a reported site adds nothing; one query per site and text
    undecided.retain(|u: &Undecided| !findings.iter().any(|f| f.row == u.finding.row && f.col == u.finding.col));
    undecided.sort_by(|a, b| (a.finding.row, a.finding.col, &a.context, &a.precondition).cmp(&(b.finding.row, b.finding.col, &b.context, &b.precondition)));
    undecided.dedup_by(|a, b| a.finding.row == b.finding.row && a.finding.col == b.finding.col && a.context == b.context && a.precondition == b.precondition);
}
