//! Running a user function through its call summary (`engine::memo`): the replay of a stored
//! summary when one matches the call (its result, its outcomes, violations too, under the
//! caller's branches), else the run and, when it qualifies, the summary stored.

use std::rc::Rc;

use super::{Interp, Outcome, Vals, Verdict, debug_enabled, merge_vals};
use crate::engine::memo;
use crate::ir::*;
use crate::value::*;

impl<'a> Interp<'a> {
    /// Run `body` on `st` through the call summaries (`engine::memo`): replay the stored
    /// summary of `c` called with the key arguments when one matches, else run it (it is
    /// given the key arguments) and store its summary when the run qualifies.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn memoised(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span, body: impl FnOnce(&mut Self, State, &[Value], &[(Name, Value)]) -> Vals) -> Vals {
        // a summarised call: replay it
        let entry = memo::EntryFacts::of(&st);
        let hit = self.memo.lookup(c, &args, &kwargs, &st, &entry, &self.stack, &self.assign_label, (&self.calls, span));
        if debug_enabled() {
            let chain: Vec<String> = self.calls.iter().map(|s| format!("{}:{}", s.file.0, self.line(*s))).collect();
            eprintln!("[shape-lint debug] call of {} (line {}) from {} {}: summary {}", c.def.name, self.line(c.def.span), chain.join(">"), self.line(span), if hit.is_some() { "reused" } else if self.memo.taken_mismatch { "missing (other remembered tests)" } else { "missing" });
        }
        let mut st = st;
        if hit.is_some() {
            // a replayed run does what the run did to the evaluation passes that call it
            let (graph, train, lost) = (self.graph_defs.contains(&c.def.id), self.train_defs.contains(&c.def.id), self.lost_defs.contains(&c.def.id));
            for fr in self.eval_frames.iter_mut() {
                fr.graph_used |= graph;
                fr.set_train |= train;
                fr.lost |= lost;
            }
        }
        if let Some(hit) = hit {
            if hit.reads_label() {
                // it reads the caller's label again: the enclosing call's summary keys it too
                let _ = self.label();
            }
            if let Some(from) = hit.context_from() {
                // and the caller's stack
                self.context_read.set(self.context_read.get().min(from));
            }
            // the caller's branches, which the outcomes extend
            let branches0 = if hit.outcomes().is_empty() { Branches::new() } else { st.branches.clone() };
            let lineage = st.lineage;
            let next_sym = self.syms.infos.len() as u32;
            // (the opaque tests it looked up, looked up again for the calls running: `taken`)
            let consulted: Vec<super::taken::Consulted> = if self.summarising > 0 {
                hit.taken().map(|(root, attr, key, truth)| super::taken::Consulted { root, attr: attr.clone(), key, truth, serial: st.taken.get(root, attr, key).map_or(0, |t| t.serial) }).collect()
            } else {
                Vec::new()
            };
            let ruled_out = hit.ruled_out(&st);
            match hit.replay(st, self.next_shape_var, next_sym, &ruled_out) {
                Ok(mut out) => {
                    self.consulted.extend(consulted);
                    self.taken_serial += 1;
                    for (s, _) in out.iter_mut() {
                        s.taken.stamp(self.taken_serial);
                    }
                    // (the refinements it made, of the variables it made: renamed as its result)
                    for r in hit.refined(self.next_shape_var, next_sym) {
                        self.add_refined(r);
                    }
                    self.next_shape_var += hit.fresh_vars();
                    self.syms.infos.extend(hit.fresh_syms().iter().cloned());
                    // outcomes of the same frame have the same call sites: built once
                    let mut last: Option<(&memo::CallsBelow, Rc<[Span]>)> = None;
                    // (a probing second iteration records only the violations of the rule it
                    // probes, as `record` does)
                    let probed = |v: &Verdict| match (self.probe_only, v) {
                        (None, _) => true,
                        (Some(code), Verdict::Violated(v)) => v.rule.code == code,
                        _ => false,
                    };
                    let outcomes: Vec<&memo::Replayed> = hit.outcomes().iter().filter(|o| probed(&o.4) && (ruled_out.is_empty() || !o.1.iter().any(|b| ruled_out.contains(b)))).collect();
                    // (recording them is the replay's work: a loop's budget sees it; and they
                    // are records, as the run's were: `reached` adds none for the call site)
                    self.charge(outcomes.len() as u64);
                    self.records += outcomes.len() as u64;
                    self.work += hit.work();
                    // (the outcomes of one path share its suffix, stored once: extended once)
                    let mut extended: Option<(&Rc<[Branch]>, Branches)> = None;
                    for (site, suffix, tainted, suppressed, verdict, below) in outcomes {
                        let branches = match &extended {
                            Some((s, b)) if Rc::ptr_eq(s, suffix) => b.clone(),
                            _ => branches0.clone().extended(suffix.iter().map(|b| hit.branch(b, next_sym))),
                        };
                        extended = Some((suffix, branches.clone()));
                        let calls = match &last {
                            Some((b, calls)) if b.own == below.own && (Rc::ptr_eq(&b.rest, &below.rest) || b.rest == below.rest) => calls.clone(),
                            _ => below.under(&self.calls, span),
                        };
                        last = Some((below, calls.clone()));
                        self.record_outcome(Outcome { site: *site, calls, branches, lineage, verdict: verdict.clone(), tainted: *tainted, suppressed: *suppressed });
                    }
                    return out;
                }
                Err(back) => st = back,
            }
        }
        // run it, and summarise it if it qualifies (see `engine::memo`)
        let counters = (self.syms.infos.len(), self.next_shape_var, self.cuts, self.flagged, self.outcomes.len(), self.label_serial);
        let violations0 = self.violations;
        let (work0, walks0, looked0) = (self.work, memo::walks(), crate::value::reads::optimizer_walks());
        // (the caches of refined variables and dimensions, and of constructor parameters: a
        // call that adds to them made what a second run would find there, not make again,
        // unless each entry refines a variable the call made: `memo::Refined`)
        let (caches, refined0) = (self.ctor_syms.len(), self.refined_log.len());
        let outer_reads = std::mem::replace(&mut self.oldest_label_read, u64::MAX);
        let outer_context = self.context_read.replace(usize::MAX);
        let entry_label = self.assign_label.clone();
        // (the walks over the heap the call makes, noted afresh: a replay makes them again)
        let outer_walked = std::mem::take(&mut st.walked);
        let entry_state = st.clone();
        let (saved_args, saved_kwargs) = (args, kwargs);
        memo::begin_reads(entry_state.heap.len());
        let outer_floor = std::mem::replace(&mut self.outcome_floor, counters.4);
        // (the opaque tests it looks up, the objects it stores into, whether it forgets every
        // test: `taken`)
        let taken0 = (self.consulted.len(), self.forks.len(), self.taken_serial, crate::value::taken::begin_stores(self.summarising, entry_state.heap.len()), crate::value::taken::forgets());
        self.summarising += 1;
        // (a summary that matched but for the opaque tests the caller remembers: this run does
        // without those from before it, so that its summary serves every caller, each path
        // the caller's tests rule out dropped at the end)
        let floor = if self.memo.taken_mismatch { self.taken_serial } else { self.taken_floor };
        let outer_taken_floor = std::mem::replace(&mut self.taken_floor, floor);
        let mut out = body(self, st, &saved_args, &saved_kwargs);
        self.taken_floor = outer_taken_floor;
        self.summarising -= 1;
        let (taken, forks, stores, forgot) = self.taken_of_call(taken0, entry_state.heap.len());
        // (the paths and outcomes the caller's remembered tests rule out: `taken`)
        let ruled_out: Vec<Branch> = forks.iter().filter_map(|f| Some(f.ruled_out(entry_state.taken.get(f.root, &f.attr, f.key)?.truth))).collect();
        self.outcome_floor = outer_floor;
        // a label set before the call started is the caller's
        let read_callers_label = self.oldest_label_read <= counters.5;
        self.oldest_label_read = self.oldest_label_read.min(outer_reads);
        // the stack its outcomes' entry sites were taken from (at the call's depth or above)
        let context = memo::Context::of(&self.calls, span, self.context_read.get());
        self.context_read.set(self.context_read.get().min(outer_context));
        let l0 = entry_state.heap.len();
        // (the refinements of variables from before the call: a replay keeps them, when they
        // were the first variables and symbols it made, `memo::Summary::kept`)
        let refined = memo::Refined::split(&self.refined_log[refined0..], counters.1, counters.0 as u32);
        // (a question asked of the environment is one symbol at every ask, a free parameter
        // one per name: a replay would make another; a refined dimension's is made again for
        // the variable the replay makes, or kept with it)
        let refined_syms: Vec<u32> = self.refined_log[refined0..].iter().filter_map(memo::Refined::sym).collect();
        let syms_replayable = self.syms.infos[counters.0..].iter().enumerate().all(|(i, info)| info.phrase.is_none() && (info.param.is_none() || refined_syms.contains(&((counters.0 + i) as u32))));
        // (a probing second iteration records only one rule's violations: what it ran is no
        // summary of the call, `loops::second_iteration`)
        let qualifies = !self.abandoned
            && self.probe_only.is_none()
            && caches == self.ctor_syms.len()
            && refined.is_some()
            && syms_replayable
            // (nothing flagged but violations, which the summary replays)
            && self.flagged - counters.3 == self.violations - violations0
            && self.outcomes.len() >= counters.4
            // (a replay records every outcome again, each with its branches past the caller's:
            // past `MAX_OUTCOMES` outcomes and branches in all, it costs more than the run)
            && self.outcomes[counters.4..].iter().map(|o| 1 + o.branches.len().saturating_sub(entry_state.branches.len())).sum::<usize>() <= memo::MAX_OUTCOMES
            && walks0 == memo::walks();
        if !qualifies {
            if debug_enabled() {
                eprintln!("[shape-lint debug] call of {} (line {}) not summarised: abandoned={} flagged={} walked={} outcomes={} probe={} caches={} syms={}", c.def.name, self.line(c.def.span), self.abandoned, counters.3 != self.flagged, walks0 != memo::walks(), self.outcomes.len().saturating_sub(counters.4), self.probe_only.is_some(), if caches != self.ctor_syms.len() { "ctor" } else if refined.is_none() { "refined" } else { "no" }, !syms_replayable);
            }
            // its reads stay the caller's, unsorted: only a summary needs them sorted
            memo::drop_reads();
            out.iter_mut().for_each(|(s, _)| s.walked |= outer_walked);
            self.rule_out(&mut out, counters.4, &ruled_out);
            return out;
        }
        let (reads, shape_vars) = crate::value::reads::end_reads_and_shape_vars();
        // the caller sees one path per distinct result, whatever the merging setting
        let mut out = merge_vals(out, true);
        let n = entry_state.branches.len();
        // outcomes with the same call sites share what is below this call
        let mut last: Option<(&Rc<[Span]>, memo::CallsBelow)> = None;
        // (and outcomes of the same path its suffix: stored once)
        let mut last_path: Option<(&Branches, Rc<[Branch]>)> = None;
        let outcomes = self.outcomes[counters.4..]
            .iter()
            .filter(|o| o.branches.len() >= n && o.branches.prefix(n) == entry_state.branches)
            .map(|o| {
                let below = match &last {
                    Some((calls, below)) if Rc::ptr_eq(calls, &o.calls) => below.clone(),
                    _ => memo::CallsBelow::of(&o.calls, self.calls.len(), span),
                };
                last = Some((&o.calls, below.clone()));
                let suffix = match &last_path {
                    Some((b, s)) if b.same(&o.branches) => s.clone(),
                    _ => Rc::from(o.branches.suffix(n)),
                };
                last_path = Some((&o.branches, suffix.clone()));
                (o.site, suffix, o.tainted, o.suppressed, o.verdict.clone(), below)
            })
            .collect::<Vec<_>>();
        if outcomes.len() == self.outcomes.len() - counters.4 {
            self.memo.store(memo::Recorded {
                closure: c,
                args: saved_args,
                kwargs: saved_kwargs,
                entry_state: &entry_state,
                entry,
                reads: reads.into_iter().filter(|r| r.0 < l0).collect(),
                results: &out,
                outcomes,
                work: self.work - work0,
                fresh_vars: (counters.1, self.next_shape_var - counters.1),
                fresh_syms: (counters.0 as u32, self.syms.infos[counters.0..].to_vec()),
                stack: (counters.2 != self.cuts).then(|| self.stack.as_slice().into()),
                shape_vars: shape_vars.iter().copied().filter(|v| *v <= counters.1).collect(),
                pinned: shape_vars.iter().filter(|v| **v >= crate::value::reads::PINNED).map(|v| v & !crate::value::reads::PINNED).filter(|v| *v <= counters.1).collect(),
                kept: refined.as_ref().map(|r| r.0).unwrap_or_default(),
                label: read_callers_label.then(|| entry_label.clone()),
                context,
                refined: refined.map(|r| r.1).unwrap_or_default(),
                optimizers: (looked0 != crate::value::reads::optimizer_walks()).then(|| crate::models::torch::optim::optimizer_ids(&entry_state)),
                taken,
                stores,
                forgot,
                taken_serial: taken0.2,
                forks,
            });
        }
        out.iter_mut().for_each(|(s, _)| s.walked |= outer_walked);
        self.rule_out(&mut out, counters.4, &ruled_out);
        out
    }

    /// Drop the paths of `out` and the outcomes from `from` on that went through a branch of
    /// `ruled_out` (`taken`).
    fn rule_out(&mut self, out: &mut Vals, from: usize, ruled_out: &[Branch]) {
        if ruled_out.is_empty() {
            return;
        }
        out.retain(|(s, _)| !s.branches.any(|b| ruled_out.contains(b)));
        let mut rest = self.outcomes.split_off(from.min(self.outcomes.len()));
        rest.retain(|o| !o.branches.any(|b| ruled_out.contains(b)));
        self.outcomes.extend(rest);
        self.passed_upto = self.passed_upto.min(from);
    }
}
