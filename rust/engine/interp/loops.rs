//! Loops: a `for` over known items, or a `while` whose test the facts decide, is unrolled up
//! to `UNROLL` iterations; other loops run one generalised iteration, after which every name
//! the body assigns is unknown.
//! Also what a loop assigns (`assigned_names`) and whether it can leave early
//! (`leaves_early`, with its helper `returns_or_raises`, which serves it alone and so lives
//! here rather than with the statements).

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Ctx, Flow, Interp, Paths, merge};
use crate::engine::memo;
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::rules::events::{Event, EventKind};
use crate::value::*;

pub const UNROLL: usize = 512;
/// The most rows of a tensor a loop or comprehension over it runs one by one (each row is the
/// same abstraction: more only cost time).
pub const TENSOR_ROWS: usize = 64;

/// The interpreter steps a loop over known items (or a `while` whose test the facts decide)
/// may spend unrolled: the rest of its items then run as one generalised iteration, and so do
/// all its items on its later visits
/// (`Interp::loops_cut`). A count of work, never of time (the same findings on every
/// machine): a fortieth of the file's step budget.
pub(super) const LOOP_STEPS: u64 = 25_000;

/// The work a `for` whose iterations stop on a choice (`for_loop`) may spend unrolled before
/// its rest runs as one generalised iteration: a loop of cheap iterations stays unrolled (its
/// carried tensors keep their shapes past it), an expensive one (a model called in each step
/// of a greedy decoder) does not run to the loop budget on every call.
const PARTED_LOOP_STEPS: u64 = LOOP_STEPS / 8;

/// At most this many distinct items are tried against each other at a fixpoint of a loop.
const MAX_NO_OPS: usize = 4;

/// An iteration that changed nothing: its states after binding the loop target, what it
/// read of them, and the branches it appended to each (`no_op_suffixes`).
struct NoOp {
    states: Vec<State>,
    suffixes: Vec<Vec<Branch>>,
    reads: Rc<[memo::Read]>,
    /// The last item matched against it, on the first path (`memo::same_reads_again`).
    last: Option<memo::Matched>,
    /// The graph nodes it made again (`State::made`): a skipped item makes them too, so they
    /// name no single node any more.
    made: Vec<Node>,
}

/// Whether an iteration that started in `before` (after binding the loop target) and ended
/// in `after` (merged) changed nothing, so that running it again on an equal item would end
/// the same way: the branches each path appended, when it did. Each path must end in its own
/// state (same heap, shape bindings, facts, taint, assumed preconditions), either unchanged
/// or with branches appended (a path that took an opaque choice, such as stochastic depth's
/// skip, once more). The appended branches come back on the next item; an unchanged path
/// may have absorbed the other side of such a choice (`State::absorb`), and absorbs it again
/// the same way when its branches are a prefix of the extended paths' and it is already
/// tainted (the extended path's longer branch list cannot make the two complementary).
fn no_op_suffixes(before: &[State], after: &[State]) -> Option<(Vec<Vec<Branch>>, Vec<Node>)> {
    if before.len() != after.len() {
        return None;
    }
    let mut suffixes = Vec::with_capacity(before.len());
    // (graph nodes made again change nothing the next item would do differently: they are
    // counted as made twice from then on, `NoOp::made`)
    let mut made: Vec<Node> = Vec::new();
    for (b, a) in before.iter().zip(after) {
        if !(a.same_state_but_made(b) && a.same_path_facts(b) && a.branches.starts_with(&b.branches)) {
            return None;
        }
        for n in a.made_more_than(b)? {
            if !made.contains(&n) {
                made.push(n);
            }
        }
        suffixes.push(a.branches.suffix(b.branches.len()));
    }
    let extended: Vec<&State> = before.iter().zip(&suffixes).filter(|(_, s)| !s.is_empty()).map(|(b, _)| b).collect();
    if !extended.is_empty() {
        for (b, s) in before.iter().zip(&suffixes) {
            let prefix_of_all = extended.iter().all(|e| e.branches.starts_with(&b.branches));
            if s.is_empty() && !(b.tainted && prefix_of_all) {
                return None;
            }
        }
    }
    Some((suffixes, made))
}

impl<'a> Interp<'a> {
    pub(super) fn while_loop(&mut self, test: &Expr, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        let mut live = vec![st];
        // (the loop's work budget, as a `for`'s, keyed by its first statement)
        let span = body.first().map(|s| s.span).unwrap_or_default();
        let (start, cut_before) = (self.work, self.loops_cut.contains(&span));
        for round in 0..UNROLL {
            if cut_before || self.work - start > LOOP_STEPS {
                self.loops_cut.insert(span);
                break;
            }
            let mut next = Vec::new();
            let mut going_on = Vec::new();
            let mut stopped = false;
            for st in live {
                for (opaque, (truth, st)) in self.truth(test, st, ctx) {
                    if !truth {
                        stopped |= !opaque;
                        out.extend(self.block(orelse, st, ctx));
                        continue;
                    }
                    if opaque {
                        // unknown trip count: one generalised iteration
                        out.extend(self.generalised_exits(body, orelse, st, ctx));
                        continue;
                    }
                    going_on.push(st);
                }
            }
            // Some paths of the last iteration stop here and others go on, though the test is
            // decided on each: the count of iterations hangs on a choice the iterations make
            // (`batch = loader.next()` that returns None from its `except StopIteration:`), or
            // on one made before the loop (paths that entered it with different known counts,
            // which then lose their unrolling: a loss of precision, never of soundness).
            // Unrolled, it would go on until the budget; it is an unknown trip count, run as
            // one generalised iteration from here, as the budget would, and its exits are
            // joined, as those of the many unrolled iterations would be (`bound_exits`).
            let unknown_count = round > 0 && stopped && !going_on.is_empty();
            if unknown_count {
                for st in going_on {
                    out.extend(self.generalised_exits(body, orelse, st, ctx));
                }
                let out = self.bound_exits_at(out, span, 1);
                self.note_paths(out.len());
                return out;
            }
            for st in going_on {
                self.iteration(body, st, ctx, &mut next, &mut out);
            }
            live = merge(next, self.settings.prune);
            live = self.bound_loop_paths(live, span, out.is_empty());
            out = self.bound_exits(out, span);
            self.note_paths(live.len() + out.len());
            if live.is_empty() || self.abandoned {
                return out;
            }
        }
        // budget (the unroll limit or the work budget): the remaining iterations run
        // generalised
        for st in live {
            out.extend(self.generalised_exits(body, orelse, st, ctx));
        }
        out
    }

    /// The rest of a `while` loop from `st`, run as one generalised iteration: its exits.
    fn generalised_exits(&mut self, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let paths = self.generalised_iteration(body, st, ctx, &[]);
        self.loop_exits(paths, orelse, ctx)
    }

    /// The exits of a loop run generalised (`generalised_iteration`'s paths): one that ran out
    /// of items (or whose test turned false) runs the loop's `else`; a `break` leaves past it.
    fn loop_exits(&mut self, paths: Paths, orelse: &[Stmt], ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        for (st, flow) in paths {
            match flow {
                Flow::Normal if !orelse.is_empty() => out.extend(self.block(orelse, st, ctx)),
                Flow::Break => out.push((st, Flow::Normal)),
                f => out.push((st, f)),
            }
        }
        out
    }

    /// One unrolled iteration: paths that go on looping go to `next`, the others to `out`.
    fn iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, next: &mut Vec<State>, out: &mut Paths) {
        let accs = accumulators(body);
        let before = (!accs.is_empty()).then(|| st.clone());
        let kept_reported = self.kept_reported;
        crate::models::torch::optim::in_loop_body(true);
        self.next_block_is_loop_body = true;
        let paths = self.block(body, st, ctx);
        crate::models::torch::optim::in_loop_body(false);
        // an inner loop reported the graph this one would see again
        let inner_reported = self.kept_reported != kept_reported;
        for (s2, flow) in paths {
            match flow {
                Flow::Normal | Flow::Continue => {
                    if let Some(before) = &before
                        && !inner_reported
                    {
                        self.kept_across(&accs, before, &s2, ctx);
                    }
                    if self.wants(EventKind::LoopBackEdge) {
                        let span = body.first().map(|s| s.span).unwrap_or_default();
                        self.emit(&Event::LoopBackEdge { span }, &s2, span);
                    }
                    next.push(s2)
                }
                Flow::Break => out.push((s2, Flow::Normal)),
                f @ (Flow::Return(_) | Flow::Yield(_)) => out.push((s2, f)),
            }
        }
    }

    /// Run `body` once from `st`, then forget everything it assigns (and `also`).
    /// Objects the body changed (a list appended to, an attribute counted up) would have
    /// changed once per iteration: what it changed is forgotten too (`forget_changes`).
    fn generalised_iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, also: &[Name]) -> Paths {
        let mut assigned = also.to_vec();
        assigned_names(body, &mut assigned);
        let mut out = Vec::new();
        // (whether each optimizer is zeroed in this iteration: `optim::begin_iteration`)
        let mut st = st;
        let zero_marks = crate::models::torch::optim::begin_iteration(&mut st);
        let before = st.clone();
        let kept_reported = self.kept_reported;
        crate::models::torch::optim::in_loop_body(true);
        self.next_block_is_loop_body = true;
        // (the lists this iteration appends to are its own: an inner loop's are the inner's)
        let appended_frame = self.appended.take();
        let paths = self.block(body, st, ctx);
        self.appended = appended_frame;
        crate::models::torch::optim::in_loop_body(false);
        // the lists it only appended to hold alike items after the loop (`set_appended`, once
        // the rules below have seen what this iteration appended)
        let appended = appended_lists(&before, &paths);
        // an inner loop reported the graph this one would see again
        let accs = if self.kept_reported != kept_reported { Vec::new() } else { accumulators(body) };
        // (the optimizers every iteration zeroes, at one place: SHP303 every k, `optim.rs`)
        let continuing: Vec<&State> = paths.iter().filter(|(_, f)| matches!(f, Flow::Normal | Flow::Continue)).map(|(s, _)| s).collect();
        let zeroed_each = crate::models::torch::optim::zeroed_each_iteration(&before, &continuing);
        for (mut s2, flow) in paths {
            // the objects the iteration replaced, for the rules below and for forgetting
            let changed = replaced(&before, &s2);
            // (an optimizer stepped in every iteration and never zeroed: SHP301, `optim.rs`; a
            // graph kept from one iteration to the next: SHP305)
            if matches!(flow, Flow::Normal | Flow::Continue) {
                crate::models::torch::optim::generic_iteration(self, &before, &s2, &zeroed_each, body.first().map(|s| s.span).unwrap_or_default());
                self.kept_across(&accs, &before, &s2, ctx);
                self.second_iteration(body, &before, &s2, &changed, ctx);
            }
            self.note_forgotten_graphs(&before, &s2, &changed, &assigned, ctx);
            crate::models::torch::optim::end_iteration(&mut s2, &zero_marks);
            set_appended(&before, &mut s2, &appended);
            let forgot = forget_changes(&before, &mut s2, &changed) || !assigned.is_empty();
            if forgot
                && let Some(c) = self.coverage.as_mut()
            {
                let span = body.first().map(|s| s.span).unwrap_or_default();
                c.origin(crate::engine::coverage::UNKNOWN, "a loop run as one generalised iteration (its writes forgotten)".into(), span);
            }
            if let Flow::Return(_) | Flow::Yield(_) = flow {
                out.push((s2, flow));
                continue;
            }
            if matches!(flow, Flow::Normal | Flow::Continue) && self.wants(EventKind::LoopBackEdge) {
                let span = body.first().map(|s| s.span).unwrap_or_default();
                self.emit(&Event::LoopBackEdge { span }, &s2, span);
            }
            for n in &assigned {
                self.set_var(&mut s2, ctx, n, Value::Unknown);
            }
            // (what the iteration built that nothing reaches any more is dropped)
            s2.collect_dead(&before.heap, &Value::None);
            // a `break` leaves the loop past its `else`; any other end goes round, and the loop
            // ends as its test or its items run out: `loop_exits` runs the `else` there
            out.push((s2, if flow == Flow::Break { Flow::Break } else { Flow::Normal }));
        }
        // paths that differed only in what the iteration forgot (a choice per item: `0.0 if
        // done else 1.0`) are one path again, as after any block
        if let Some(frame) = self.appended.as_mut() {
            frame.extend(appended);
        }
        let (normal, other): (Vec<_>, Vec<_>) = out.into_iter().partition(|(_, f)| matches!(f, Flow::Normal));
        let mut out: Paths = other;
        out.extend(merge(normal.into_iter().map(|(s, _)| s).collect(), self.settings.prune).into_iter().map(|s| (s, Flow::Normal)));
        out
    }

    /// Before a generalised iteration forgets what it wrote: the names and the objects that
    /// hold a tensor with a graph, for the enclosing loop's evaluation frame (`eval_loops`).
    fn note_forgotten_graphs(&mut self, before: &State, after: &State, changed: &[ObjId], assigned: &[Name], ctx: &Ctx) {
        if self.eval_frames.is_empty() {
            return;
        }
        let tracked = |t: &Tensor| matches!(t.grad, Grad::Tracked);
        let names: Vec<Name> = assigned.iter().filter(|n| self.lookup_bound(after, ctx, n).is_some_and(|v| torch::mode::holds(after, &v, &tracked))).cloned().collect();
        let obj = changed.iter().any(|&i| {
            !matches!(*after.heap[i], Obj::Scope { .. })
                && torch::mode::holds(after, &Value::Ref(i), &tracked)
                && !torch::mode::holds(before, &Value::Ref(i), &tracked)
        });
        if let Some(fr) = self.eval_frames.last_mut() {
            for n in names {
                if !fr.forgot.contains(&n) {
                    fr.forgot.push(n);
                }
            }
            fr.forgot_obj |= obj;
        }
    }

    /// The rules that need the second iteration of a generalised loop, run once more from the
    /// state the first left, recording only that rule's violations (as SHP301 and SHP305 judge
    /// the next iteration, this assumes there is one). Its states are dropped: the loop goes on
    /// generalised.
    /// - SHP314, when the first iteration left a tensor whose graph a `backward()` freed where
    ///   a tensor (or `None`) was before it (a hidden state, `self.hidden`);
    /// - SHP307, when it left a module it trained in eval mode that was not before it (an
    ///   evaluation at the end of each epoch): the next epoch's training runs in eval mode
    ///   unless the body calls `.train()` first.
    fn second_iteration(&mut self, body: &[Stmt], before: &State, after: &State, changed: &[ObjId], ctx: &Ctx) {
        use crate::rules::training::{backward_freed_graph, train_eval_mode};
        if self.probe_only.is_some() || self.abandoned {
            return;
        }
        for (rule, needed) in [(backward_freed_graph::RULE.code, carries_freed(before, after, changed)), (train_eval_mode::RULE.code, left_in_eval(before, after, changed))] {
            if !needed || self.abandoned {
                continue;
            }
            if super::debug_enabled() {
                eprintln!("[shape-lint debug] second iteration of the loop at line {} for {rule}", body.first().map(|s| self.line(s.span)).unwrap_or(0));
            }
            let coverage = self.coverage.take();
            self.probe_only = Some(rule);
            crate::models::torch::optim::in_loop_body(true);
            let _ = self.block(body, after.clone(), ctx);
            crate::models::torch::optim::in_loop_body(false);
            self.probe_only = None;
            self.coverage = coverage;
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn for_loop(&mut self, target: &Target, it: Value, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx, span: Span) -> Paths {
        let mut st = st;
        let items = self.iterate(&mut st, &it, span);
        match items {
            Some(items) if items.len() <= UNROLL => {
                let mut out = Vec::new();
                let mut live = vec![st];
                // iterations that changed nothing, since the state last changed (`skip_item`)
                let mut no_ops: Vec<NoOp> = Vec::new();
                let roots = Self::loop_roots(ctx);
                let start = self.work;
                let cut_before = self.loops_cut.contains(&span);
                let mut items = items.into_iter();
                let (mut round, mut parted_once) = (0usize, false);
                while let Some(item) = items.next() {
                    if (cut_before || self.work - start > LOOP_STEPS) && items.len() > 0 {
                        // past the loop's work budget (on this visit or an earlier one): this
                        // item and the rest run as one generalised iteration
                        if super::debug_enabled() {
                            eprintln!("[shape-lint debug] loop at line {} past its work budget with {} items left", self.line(span), items.len() + 1);
                        }
                        self.loops_cut.insert(span);
                        let rest = std::iter::once(item).chain(items).collect();
                        out.extend(self.rest_generalised(target, rest, live, body, orelse, ctx, span, "a loop past its work budget, its rest run as one generalised iteration"));
                        return out;
                    }
                    let assigned: Vec<State> = match target {
                        // a name binds on each path in place (no list per path)
                        Target::Name(n, span) => {
                            let mut live = live;
                            for st in live.iter_mut() {
                                self.assign_name(n, *span, item.clone(), st, ctx);
                            }
                            live
                        }
                        _ => live.into_iter().flat_map(|st| self.assign(target, item.clone(), st, ctx)).collect(),
                    };
                    if !assigned.is_empty()
                        && let Some(k) = self.skip_item(&mut no_ops, &assigned, &roots)
                    {
                        live = assigned;
                        for (st, suffix) in live.iter_mut().zip(&no_ops[k].suffixes) {
                            st.branches.extend(suffix.iter().cloned());
                            for n in &no_ops[k].made {
                                st.make_node(*n);
                                st.make_node(*n);
                            }
                        }
                        // the least recently matched is tried first: items that alternate
                        // (a projection every other block) match at the first try
                        let n = no_ops.remove(k);
                        no_ops.push(n);
                        continue;
                    }
                    // objects from here on are the iteration's own (on every path)
                    let heap_len = assigned.iter().map(|s| s.heap.len()).min().unwrap_or(0);
                    let before = (self.settings.memo && self.settings.prune).then(|| {
                        memo::begin_reads(heap_len);
                        let outer_label_read = std::mem::replace(&mut self.oldest_label_read, u64::MAX);
                        (assigned.clone(), self.loop_counters(), out.len(), self.label_serial, outer_label_read)
                    });
                    let mut next = Vec::new();
                    let exits0 = out.len();
                    for st in assigned {
                        self.iteration(body, st, ctx, &mut next, &mut out);
                    }
                    // Some paths of this iteration left the loop (a `break` or a `return` on a
                    // choice it made: a greedy decoder's end token) and others go on: the count
                    // of iterations hangs on a choice each iteration makes. Unrolled, it would go
                    // on until the work budget; from the third item on, once it spent
                    // `PARTED_LOOP_STEPS`, it is an unknown trip count, the rest run as one
                    // generalised iteration, as a `while` whose paths part at its test
                    // (`while_loop`), its exits joined.
                    let parted = out.len() > exits0 && !next.is_empty();
                    parted_once |= parted;
                    round += 1;
                    live = merge(next, self.settings.prune);
                    if parted && round >= 2 && items.len() > 0 && self.work - start > PARTED_LOOP_STEPS && !self.abandoned {
                        if before.is_some() {
                            memo::drop_reads();
                        }
                        out.extend(self.rest_generalised(target, items.collect(), live, body, orelse, ctx, span, "a loop whose iterations stop on a choice, its rest run as one generalised iteration"));
                        let out = self.bound_exits_at(out, span, 1);
                        self.note_paths(out.len());
                        return out;
                    }
                    if let Some((assigned, counters, n_out, serial, outer_label_read)) = before {
                        // a label set before the iteration began may differ for the next item
                        let read_outer_label = self.oldest_label_read <= serial;
                        self.oldest_label_read = self.oldest_label_read.min(outer_label_read);
                        let unchanged = !self.abandoned && !read_outer_label && out.len() == n_out && counters == self.loop_counters();
                        match unchanged.then(|| no_op_suffixes(&assigned, &live)).flatten() {
                            Some((suffixes, made)) if no_ops.len() < MAX_NO_OPS => {
                                let reads: Rc<[memo::Read]> = memo::end_reads().into_iter().filter(|r| r.0 < heap_len).collect();
                                no_ops.push(NoOp { states: assigned, suffixes, reads, last: None, made });
                            }
                            // the reads of an iteration no later item is matched against stay the
                            // enclosing call's, unsorted
                            Some(_) => memo::drop_reads(),
                            None => {
                                memo::drop_reads();
                                no_ops.clear();
                            }
                        }
                    }
                    live = self.bound_loop_paths(live, span, out.is_empty());
                    // (the exits of iterations that stop on a choice are one path: each would
                    // otherwise run the rest of the program, and its callers', on its own)
                    out = if parted_once { self.bound_exits_at(out, span, 1) } else { self.bound_exits(out, span) };
                    self.note_paths(live.len() + out.len());
                    if live.is_empty() || self.abandoned {
                        return out;
                    }
                }
                for st in live {
                    out.extend(self.block(orelse, st, ctx));
                }
                if parted_once { self.bound_exits_at(out, span, 1) } else { out }
            }
            _ => {
                // A loop that cannot leave early sees every batch of a DataLoader, the last,
                // smaller one included: that batch is a second path.
                let full_run = !leaves_early(body);
                let made = self.syms.infos.len();
                let elems = match torch::data::batches_of(self, &st, &it, full_run) {
                    Some(elems) => elems,
                    None => {
                        let elem = self.element_of(&mut st, &it);
                        vec![(st, elem)]
                    }
                };
                if let Some((_, elem)) = elems.first() {
                    self.name_index(target, elem, made);
                }
                let paths = self.generalised_over(target, elems, body, ctx);
                self.loop_exits(paths, orelse, ctx)
            }
        }
    }

    /// The `rest` items of an unrolled `for` run as one generalised iteration from each of the
    /// `live` paths (their element standing for each of them), and its exits; `why` is what the
    /// coverage report says of it.
    #[allow(clippy::too_many_arguments)]
    fn rest_generalised(&mut self, target: &Target, rest: Vec<Value>, live: Vec<State>, body: &[Stmt], orelse: &[Stmt], ctx: &Ctx, span: Span, why: &str) -> Paths {
        let made = self.syms.infos.len();
        let elem = self.rest_element(rest);
        self.name_index(target, &elem, made);
        let paths = self.generalised_over(target, live.into_iter().map(|st| (st, elem.clone())).collect(), body, ctx);
        if let Some(c) = self.coverage.as_mut() {
            c.origin(crate::engine::coverage::UNKNOWN, why.into(), span);
        }
        self.loop_exits(paths, orelse, ctx)
    }

    /// A `for` run generalised: from each state, the target bound to its element, one
    /// generalised iteration (after which the target's names are forgotten too).
    fn generalised_over(&mut self, target: &Target, elems: Vec<(State, Value)>, body: &[Stmt], ctx: &Ctx) -> Paths {
        let mut target_names = Vec::new();
        target.bound_names(&mut target_names);
        let mut out = Vec::new();
        let outer = self.appended.replace(Vec::new());
        for (st, elem) in elems {
            for st in self.assign(target, elem, st, ctx) {
                out.extend(self.generalised_iteration(body, st, ctx, &target_names));
            }
        }
        // a list appended to from several elements (the full batches and the last one) holds
        // the items of all of them: one item for all, or opaque when one is not followed
        let entries = std::mem::replace(&mut self.appended, outer).unwrap_or_default();
        let mut joined: BTreeMap<ObjId, Option<Value>> = BTreeMap::new();
        for (id, item) in entries {
            let j = match (joined.get(&id), item) {
                (None, item) => item,
                (Some(Some(a)), Some(b)) => Some(crate::value::alike::join(a, &b)),
                _ => None,
            };
            joined.insert(id, j);
        }
        for (st, _) in out.iter_mut() {
            for (id, item) in &joined {
                if *id < st.heap.len() && crate::value::alike::item_of(st.get(*id)).is_some() {
                    *st.get_mut(*id) = match item {
                        Some(item) => crate::value::alike::appended_list(item.clone()),
                        None => crate::value::alike::opaque(),
                    };
                }
            }
        }
        out
    }

    /// An index the loop's element made up (`for i in range(n)`, `for step, batch in
    /// enumerate(loader)`: a symbol made since `made`) takes the name of the loop's variable,
    /// so that a condition on it reads in the user's terms (`(step + 1) % 4 != 0`).
    fn name_index(&mut self, target: &Target, elem: &Value, made: usize) {
        let (name, v) = match (target, elem) {
            (Target::Name(n, _), v) => (n, v),
            (Target::Tuple(ts, None, _), Value::Tuple(vs)) if ts.len() == vs.len() => match (&ts[0], &vs[0]) {
                (Target::Name(n, _), v) => (n, v),
                _ => return,
            },
            _ => return,
        };
        if let Value::Int(p) = v
            && let Some(id) = p.as_sym()
            && id as usize >= made
            && let Some(info) = self.syms.infos.get_mut(id as usize)
            && info.name == "i"
        {
            info.name = name.to_string();
        }
    }

    /// The element standing for the items a loop runs generalised: the item when they are
    /// all alike, an int not known when they are all ints (at least the least of them), else
    /// Unknown.
    fn rest_element(&mut self, items: Vec<Value>) -> Value {
        let Some(first) = items.first() else { return Value::Unknown };
        if items.iter().all(|v| v == first) {
            return first.clone();
        }
        let consts: Option<Vec<i128>> = items.iter().map(|v| match v {
            Value::Int(p) => p.as_const(),
            _ => None,
        }).collect();
        match consts {
            Some(cs) => {
                let lo = cs.iter().copied().min().unwrap_or(crate::shape::UNBOUNDED);
                Value::Int(self.syms.fresh_int("i", lo))
            }
            None => Value::Unknown,
        }
    }

    /// SHP305 after one iteration that went from `before` to `after`: an accumulator bound
    /// before it that now holds a tensor with a graph (`Grad::Tracked`), or a list that
    /// existed before it and was given one.
    fn kept_across(&mut self, accs: &[Accumulator], before: &State, after: &State, ctx: &Ctx) {
        use crate::rules::training::graph_kept_across_iterations::{GraphKeptAcrossIterations as Kept, RULE};
        use crate::rules::violation::Violation;
        let tracked = |v: &Value| matches!(v, Value::Tensor(t) if matches!(t.grad, Grad::Tracked));
        for a in accs {
            let (Some(old), Some(new)) = (self.lookup_bound(before, ctx, &a.name), self.lookup_bound(after, ctx, &a.name)) else { continue };
            let kept = if a.append {
                match (&old, &new) {
                    (Value::Ref(i), Value::Ref(j)) if i == j && *i < before.heap.len() => match (before.get(*i), after.get(*j)) {
                        (Obj::List(was), Obj::List(now)) => now.len() > was.len() && now[was.len()..].iter().any(tracked),
                        _ => false,
                    },
                    _ => false,
                }
            } else {
                tracked(&new)
            };
            if kept {
                let v = if a.append { Kept::Append { name: format!("`{}`", a.name) } } else { Kept::Sum { name: format!("`{}`", a.name) } };
                self.warn(after, a.span, &RULE, v.message());
                self.kept_reported += 1;
            }
        }
    }

    /// The interpreter counters an iteration must leave alone to count as changing nothing
    /// (fresh symbols and shape variables, cuts, violations).
    fn loop_counters(&self) -> (usize, u32, u64, u64) {
        (self.syms.infos.len(), self.next_shape_var, self.cuts, self.flagged)
    }

    /// Whether the iteration over the next item, whose states after binding the loop target
    /// are `assigned`, would change nothing: an earlier iteration since the state last changed
    /// (`no_ops`) changed nothing, and everything it read is the same now up to a renaming
    /// that takes its item to this one (`memo::same_reads`, the call summaries' matching).
    /// The interpreter is deterministic, so this iteration would take the same steps on the
    /// renamed objects and leave the state as it found it. The reads are noted for the
    /// enclosing call's summary, as running the iteration would. `roots` are the objects the
    /// body reaches first (`loop_roots`).
    fn skip_item(&mut self, no_ops: &mut [NoOp], assigned: &[State], roots: &[ObjId]) -> Option<usize> {
        for (k, n) in no_ops.iter_mut().enumerate() {
            // the paths as they were then, their branches since extended by no-op iterations
            let same_paths = n.states.len() == assigned.len()
                && n.states.iter().zip(assigned).zip(&n.suffixes).all(|((a, b), suffix)| {
                    a.heap.len() == b.heap.len()
                        && a.in_try == b.in_try
                        && a.grad_mode == b.grad_mode
                        && a.params_frozen == b.params_frozen
                        && a.same_path_facts(b)
                        && (Rc::ptr_eq(&a.shapes, &b.shapes) || a.shapes == b.shapes)
                        && if suffix.is_empty() { a.branches == b.branches } else { b.branches.starts_with(&a.branches) }
                });
            if !same_paths {
                continue;
            }
            let Some(map) = memo::same_reads_again(&n.states[0], &assigned[0], &n.reads, roots, &mut n.last) else { continue };
            // the other paths share most objects with the first: its renaming serves them
            // where their objects are the first path's, the rest is compared again
            let mut maps = Vec::new();
            let all = (1..assigned.len()).all(|i| {
                let beside = memo::same_reads_beside(&n.states[i], &assigned[i], &n.reads, &n.states[0], &assigned[0], &map);
                match beside.or_else(|| memo::same_reads(&n.states[i], &assigned[i], &n.reads, roots)) {
                    Some(m) => {
                        maps.push(m);
                        true
                    }
                    None => false,
                }
            });
            if all {
                // the no-op iteration's own reads are in the enclosing frame's log already
                // (a loop frame's reads stay in its parent's): only the renamed ones are new,
                // written out if the enclosing frame's reads are ever collected
                memo::note_renamed_later(&n.reads, map.iter().filter(|(a, b)| a != b).collect());
                for m in &maps {
                    memo::note_renamed_later(&n.reads, m.iter().filter(|(a, b)| a != b && map.get(*a) != Some(*b)).collect());
                }
                self.loop_items_skipped += 1;
                return Some(k);
            }
        }
        None
    }

    /// The objects a loop body reaches first, which a skipped item's renaming keeps in place
    /// (`skip_item`): its scopes, its class and `self`.
    fn loop_roots(ctx: &Ctx) -> Vec<ObjId> {
        let mut roots = vec![ctx.scope, ctx.module_scope];
        roots.extend(ctx.class_body);
        roots.extend(ctx.method_class);
        if let Some(v) = &ctx.self_val {
            crate::value::gc::value_ids(v, &mut |id| roots.push(id));
        }
        roots
    }

    /// The items of an iterable when they are known.
    pub fn iterate(&mut self, st: &mut State, it: &Value, _span: Span) -> Option<Vec<Value>> {
        match it {
            Value::Tuple(items) => Some(items.as_ref().clone()),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(items) => Some(items.clone()),
                // a NumPy array of a known number of rows: its rows, as for a tensor
                Obj::Namespace { kind, attrs } if &**kind == models::numpy::ARRAY => {
                    let Some(Value::Tensor(a)) = attrs.get(models::numpy::TENSOR) else { return None };
                    let a = a.clone();
                    self.rows(st, &a.shape, |me, st| me.array_row(st, &a))
                }
                // (a dict whose keys are not known has an unknown number of them)
                Obj::Dict(items) if items.iter().any(|(k, _)| k.is_unknown()) => None,
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
            // a tensor of a known number of rows, at most `TENSOR_ROWS`: that many rows
            // (`for x in batch`), each what `t[0]` is (the same abstraction for every row); more
            // rows are iterated once, generalised (`element_of`)
            Value::Tensor(t) => {
                let rows = self.rows(st, &t.shape, |me, st| me.row_of(st, it))?;
                Some(self.elements(st, rows))
            }
            _ => None,
        }
    }

    /// The rows of a 1-D integer tensor of known value bounds (`for i in torch.randint(...)`):
    /// each 0-d row an int of its own within the bounds (a fresh int of the path, bounded by
    /// its facts), which a slice bound or `int()` reads (`IntBounds::each`). Other rows as
    /// they are.
    fn elements(&mut self, st: &mut State, rows: Vec<Value>) -> Vec<Value> {
        rows.into_iter()
            .map(|row| {
                let Value::Tensor(r) = &row else { return row };
                let Some(b) = r.values.as_ref().filter(|b| r.is_int_scalar() && b.each.is_none() && b.lo > crate::shape::UNBOUNDED && b.hi - b.lo < 1 << 40) else { return row };
                let each = self.syms.fresh_int("v", b.lo);
                let Some(cond) = crate::shape::Cond::cmp(&each, crate::shape::Rel::Le, &crate::shape::Poly::constant(b.hi)) else { return row };
                if !st.facts.assume(&self.syms, &cond) {
                    return row;
                }
                Value::Tensor(Rc::new((**r).clone().with_values(Some(b.element(each)))))
            })
            .collect()
    }

    /// The rows of a tensor or an array of `shape` with a known number of them, at most
    /// `TENSOR_ROWS`: `row` (one abstraction for all) that many times.
    fn rows(&mut self, st: &mut State, shape: &Shape, row: impl FnOnce(&mut Self, &mut State) -> Option<Value>) -> Option<Vec<Value>> {
        let s = st.resolve(shape);
        let n = s.dims.first().and_then(|d| d.as_const()).filter(|n| s.prefix.is_none() && *n >= 0 && *n as usize <= TENSOR_ROWS)?;
        if n == 0 {
            return Some(Vec::new());
        }
        let row = row(self, st)?;
        Some(vec![row; n as usize])
    }

    /// A row of a NumPy array (`a[0]`: an array, or a NumPy scalar), when indexing gives one.
    fn array_row(&mut self, st: &mut State, a: &Rc<Tensor>) -> Option<Value> {
        let out = models::numpy::index(self, st.clone(), a, &Value::int(0), Span::default());
        match <[_; 1]>::try_from(out) {
            Ok([(s, v @ Value::Ref(_))]) => {
                *st = s;
                Some(v)
            }
            _ => None,
        }
    }

    /// A row of a tensor (`t[0]`), when indexing gives one tensor and changes nothing else.
    pub(super) fn row_of(&mut self, st: &mut State, t: &Value) -> Option<Value> {
        let out = torch::tensor_index(self, st.clone(), t.clone(), Value::int(0), Span::default());
        match <[_; 1]>::try_from(out) {
            Ok([(s, v @ Value::Tensor(_))]) if s.heap.len() == st.heap.len() => {
                *st = s;
                Some(v)
            }
            _ => None,
        }
    }

    /// A sound abstraction of one element of an iterable of unknown length.
    pub(super) fn element_of(&mut self, st: &mut State, it: &Value) -> Value {
        match it {
            Value::Gen(..) => self.first_yield(st, it, Span::default()).unwrap_or(Value::Unknown),
            // a row of a tensor of rank 1 or more
            Value::Tensor(t) if st.resolve(&t.shape).rank().is_some_and(|r| r >= 1) => self.row_of(st, it).unwrap_or(Value::Unknown),
            _ => models::element_of(self, st, it),
        }
    }
}

/// The objects that existed before an iteration and that it replaced (no longer the very same).
fn replaced(before: &State, after: &State) -> Vec<ObjId> {
    let n = before.heap.len().min(after.heap.len());
    (0..n).filter(|&i| !Rc::ptr_eq(&before.heap[i], &after.heap[i])).collect()
}

/// Whether a variable or an attribute that held a tensor (or `None`) before an iteration holds,
/// after it, a tensor whose graph was freed (`Saved::freed`) that it did not hold before, in
/// the objects it replaced (`changed`).
fn carries_freed(before: &State, after: &State, changed: &[ObjId]) -> bool {
    let was_tensor = |v: &Value| match v {
        Value::None | Value::Tensor(_) => true,
        Value::Tuple(items) => items.iter().all(|i| matches!(i, Value::Tensor(_))),
        _ => false,
    };
    let freed = |v: &Value| match v {
        Value::Tensor(t) => t.saved.as_ref().is_some_and(|s| s.freed.is_some()),
        Value::Tuple(items) => items.iter().any(|i| matches!(i, Value::Tensor(t) if t.saved.as_ref().is_some_and(|s| s.freed.is_some()))),
        _ => false,
    };
    let hit = |v: &Value, old: Option<&Value>| freed(v) && old.is_some_and(|o| was_tensor(o) && !freed(o));
    changed.iter().any(|&i| match (&*before.heap[i], &*after.heap[i]) {
        (Obj::Scope { vars: o, .. }, Obj::Scope { vars, .. }) => vars.iter().any(|(k, v)| hit(v, o.get(k))),
        (Obj::Instance { attrs: o, .. }, Obj::Instance { attrs, .. }) => attrs.iter().any(|(k, v)| hit(v, o.get(k))),
        _ => false,
    })
}

/// Whether an iteration left a module it trained (`mode::TRAINED`) in eval mode (`.eval()`,
/// `mode::EVAL_AT`) that was not in eval mode before it, among the objects it replaced.
fn left_in_eval(before: &State, after: &State, changed: &[ObjId]) -> bool {
    let eval = |attrs: &std::collections::BTreeMap<Name, Value>| matches!(attrs.get("training"), Some(Value::Bool(false)));
    changed.iter().any(|&i| match (&*before.heap[i], &*after.heap[i]) {
        (Obj::Instance { attrs: o, .. }, Obj::Instance { attrs, .. }) | (Obj::Container { attrs: o, .. }, Obj::Container { attrs, .. }) => {
            !eval(o) && eval(attrs) && attrs.contains_key(torch::mode::EVAL_AT) && matches!(attrs.get(torch::mode::TRAINED), Some(Value::Bool(true)))
        }
        _ => false,
    })
}

/// Whether an iteration changed a variable or an attribute (`old` before it, `new` after) in a
/// way another iteration may change again: not when it is unchanged, nor when only a walk over
/// the heap changed it (an in-place op forgot the known values or the untracked state of every
/// tensor, `value::walks::only_walked`), which every further iteration does to the same effect.
fn changed_by_body(old: Option<&Value>, new: &Value) -> bool {
    old.is_none_or(|old| old != new && !crate::value::walks::only_walked(old, new))
}

/// After one generalised iteration from `before`: every object that existed before and was
/// changed by the iteration is changed by each of an unknown number of them, so what changed
/// becomes Unknown. A scope's, instance's, class's or layer's changed entries become
/// Unknown, and so do a module container's when its modules are the same (its mode changed);
/// a list, dict or module container whose items changed (appended to, updated) becomes an
/// opaque object: its length and items are not known. `changed`: the objects the iteration
/// replaced (`replaced`). Whether something was forgotten.
fn forget_changes(before: &State, after: &mut State, changed: &[ObjId]) -> bool {
    let changed: Vec<ObjId> = changed.iter().copied().filter(|&i| before.heap[i] != after.heap[i]).collect();
    if changed.is_empty() {
        return false;
    }
    // (the mode history of a module, `torch::mode`, only grows: an iteration that set it set
    // it for the iterations after)
    let history = |k: &str| k == torch::mode::EVAL_AT || k == torch::mode::TRAINED;
    let forget = |old: &std::collections::BTreeMap<Name, Value>, new: &mut std::collections::BTreeMap<Name, Value>| {
        for (k, v) in new.iter_mut() {
            if changed_by_body(old.get(k), v) && !history(k) {
                *v = Value::Unknown;
            }
        }
    };
    for i in changed {
        let old = before.heap[i].clone();
        let obj = after.get_mut(i);
        match (&*old, obj) {
            // (a list the iteration only appended to: `appended_lists`)
            (_, obj) if crate::value::alike::item_of(obj).is_some() => {}
            (Obj::Scope { vars: o, .. }, Obj::Scope { vars, .. }) => {
                vars.update(|k, v| (changed_by_body(o.get(k), v) && !history(k) && *v != Value::Unknown).then_some(Value::Unknown));
            }
            (Obj::Instance { attrs: o, .. }, Obj::Instance { attrs, .. })
            | (Obj::Namespace { attrs: o, .. }, Obj::Namespace { attrs, .. })
            | (Obj::Class { attrs: o, .. }, Obj::Class { attrs, .. }) => forget(o, attrs),
            (Obj::Container { kind: k0, items: i0, attrs: a0 }, Obj::Container { kind, items, attrs }) if k0 == kind && i0 == items => forget(a0, attrs),
            (Obj::Layer(o), Obj::Layer(l)) => {
                forget(&o.attrs, &mut l.attrs);
                forget(&o.args, &mut l.args);
            }
            (_, obj) => *obj = crate::value::alike::opaque(),
        }
    }
    true
}

/// The lists that existed before an iteration run generalised (lists, or appended lists of an
/// earlier loop) and that some path of it appended to, each with the one value every item is
/// (`value::alike`: those it held before, those appended on every path), or `None` when some
/// path changed it otherwise or an item is not followed.
fn appended_lists(before: &State, paths: &Paths) -> Vec<(ObjId, Option<Value>)> {
    use crate::value::alike;
    let mut out = Vec::new();
    for (id, obj) in before.heap.iter().enumerate() {
        let (held, earlier): (&[Value], Option<Value>) = match &**obj {
            Obj::List(items) => (items, None),
            o => match alike::item_of(o) {
                Some(item) => (&[], Some(item.clone())),
                None => continue,
            },
        };
        if !paths.iter().any(|(s, _)| id < s.heap.len() && !Rc::ptr_eq(&s.heap[id], obj)) {
            continue;
        }
        let mut item = earlier;
        let mut followed = true;
        'paths: for (s, _) in paths {
            if id >= s.heap.len() {
                continue;
            }
            let added: Vec<Value> = match s.get(id) {
                // (what it held, then what the iteration appended: all of them are items)
                Obj::List(items) if items.len() > held.len() && items[..held.len()] == *held => items.clone(),
                Obj::List(items) if Rc::ptr_eq(&s.heap[id], obj) => items.clone(),
                // (its items replaced or removed: not followed)
                o => match alike::item_of(o) {
                    Some(i) => vec![i.clone()],
                    None => {
                        followed = false;
                        break;
                    }
                },
            };
            for v in &added {
                let Some(g) = alike::generalise(v) else {
                    followed = false;
                    break 'paths;
                };
                item = Some(match item {
                    Some(i) => alike::join(&i, &g),
                    None => g,
                });
            }
        }
        out.push((id, if followed { item } else { None }));
    }
    out
}

/// On a path of an iteration run generalised: each list of `appended` (`appended_lists`) holds
/// alike items after the loop, on this path too (another path's iteration may have appended).
fn set_appended(before: &State, st: &mut State, appended: &[(ObjId, Option<Value>)]) {
    for (id, item) in appended {
        if let Some(item) = item
            && *id < st.heap.len()
            && (Rc::ptr_eq(&st.heap[*id], &before.heap[*id]) || matches!(st.get(*id), Obj::List(_)) || crate::value::alike::item_of(st.get(*id)).is_some())
        {
            *st.get_mut(*id) = crate::value::alike::appended_list(item.clone());
        }
    }
}

/// A name a loop body accumulates into (SHP305): `total += x`, `total = total + x`
/// (`append: false`) or `total.append(x)` (`append: true`), at `span`.
struct Accumulator {
    name: Name,
    span: Span,
    append: bool,
}

/// The accumulators of a loop body that calls `backward()` on something else, in a program
/// that calls backward (`device::follows_autograd`): the names it only adds or appends to
/// (a name the body also assigns otherwise starts again each iteration). Empty when the body
/// calls no such backward: a loss summed over time steps for one backward after the loop
/// keeps its graph on purpose.
fn accumulators(body: &[Stmt]) -> Vec<Accumulator> {
    fn walk(body: &[Stmt], accs: &mut Vec<Accumulator>, other: &mut Vec<Name>) {
        for s in body {
            match &s.kind {
                StmtKind::AugAssign { target: Target::Name(n, _), op: BinOp::Add, .. } => accs.push(Accumulator { name: n.clone(), span: s.span, append: false }),
                StmtKind::Assign { targets, value } => match (&targets[..], &value.kind) {
                    ([Target::Name(n, _)], ExprKind::BinOp(BinOp::Add, a, b)) if [a, b].iter().any(|e| matches!(&e.kind, ExprKind::Name(m) if m == n)) => {
                        accs.push(Accumulator { name: n.clone(), span: s.span, append: false })
                    }
                    _ => targets.iter().for_each(|t| t.bound_names(other)),
                },
                StmtKind::Expr(Expr { kind: ExprKind::Call { func, args, .. }, .. }) => {
                    if let ExprKind::Attr(recv, m) = &func.kind
                        && let ExprKind::Name(n) = &recv.kind
                    {
                        if &**m == "append" && args.len() == 1 {
                            accs.push(Accumulator { name: n.clone(), span: s.span, append: true });
                        } else if matches!(&**m, "clear" | "pop" | "remove") {
                            // (a list emptied in the body keeps only what is since)
                            other.push(n.clone());
                        }
                    }
                }
                StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => target.bound_names(other),
                StmtKind::For { target, body, orelse, .. } => {
                    target.bound_names(other);
                    walk(body, accs, other);
                    walk(orelse, accs, other);
                }
                StmtKind::While { body, orelse, .. } | StmtKind::If { body, orelse, .. } => {
                    walk(body, accs, other);
                    walk(orelse, accs, other);
                }
                StmtKind::With { items, body } => {
                    items.iter().filter_map(|(_, t)| t.as_ref()).for_each(|t| t.bound_names(other));
                    walk(body, accs, other);
                }
                StmtKind::Try { body, handlers, orelse, finalbody } => {
                    walk(body, accs, other);
                    handlers.iter().for_each(|h| walk(&h.body, accs, other));
                    walk(orelse, accs, other);
                    walk(finalbody, accs, other);
                }
                StmtKind::Delete(ts) => ts.iter().for_each(|t| match t {
                    Target::Subscript(Expr { kind: ExprKind::Name(n), .. }, _, _) => other.push(n.clone()),
                    t => t.bound_names(other),
                }),
                StmtKind::FunctionDef(d) => other.push(d.name.clone()),
                StmtKind::ClassDef(c) => other.push(c.name.clone()),
                StmtKind::Unknown { binds } => other.extend(binds.iter().cloned()),
                _ => {}
            }
        }
    }
    if !torch::device::follows_autograd() {
        return Vec::new();
    }
    let (mut accs, mut other) = (Vec::new(), Vec::new());
    walk(body, &mut accs, &mut other);
    accs.retain(|a| !other.contains(&a.name));
    if accs.is_empty() {
        return accs;
    }
    // a backward() in the body on something that is not one of them
    let mut backward = false;
    for s in body {
        crate::engine::entry::all_exprs_of_stmt(s, &mut |e| {
            if let ExprKind::Call { func, .. } = &e.kind
                && let ExprKind::Attr(recv, m) = &func.kind
                && &**m == "backward"
                && !matches!(&recv.kind, ExprKind::Name(n) if accs.iter().any(|a| &a.name == n))
            {
                backward = true;
            }
        });
    }
    if !backward {
        accs.clear();
    }
    accs
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
