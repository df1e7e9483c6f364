//! Memoised call summaries: a call of a user function or method that turned out
//! side-effect free is summarised once and replayed when the same function is called again
//! with equal abstract arguments over an equal part of the heap.
//!
//! # Why reuse is sound
//! The interpreter is deterministic: a call's effect depends only on
//! - the callee (its definition, defaults, enclosing scope, class) and the arguments,
//! - what it reads of the heap, logged by the read tracker below: whole objects
//!   (`State::get`/`get_mut`) or single variables of scopes (`State::get_var`, name lookup),
//! - the path's facts, the bindings of the shape variables it looks up, taint, `try` depth,
//!   whether the path's branch list holds an opaque choice (merging looks at that), the
//!   pending assignment label (a layer built inside takes it as its name),
//! - interpreter counters: fresh symbols, fresh shape variables, the call stack.
//!
//! A summary stores all of these as they were at the first call. A later call matches when
//! its callee and arguments, walked in parallel with the stored ones, are structurally equal
//! up to a renaming of object ids (a bijection), where the contents of an object are compared
//! only as far as the first call read them (identity is kept for the others), and the other
//! inputs are equal. Every object the call reads is reached from the callee and the arguments
//! through objects it read, so the second execution would read isomorphic objects and take
//! the same steps: its result is the stored one, renamed.
//!
//! What a replay redoes:
//! - **writes** into objects that existed before the call (a cache a module fills, an
//!   attribute a helper stores): the object's new contents when the call read it whole (so the
//!   match compared all of it), else the names it changed (an attribute store reads only its
//!   name), each written into the matching object (`Write`);
//! - **fresh shape variables and symbols**: a second run would make as many, in the same
//!   order, from the interpreter's counters, so the replay makes new ones and renames the
//!   stored ones (`Shift`; symbols keep their order, so renamed polynomials stay sorted),
//!   but for the refinements of the caller's variables, which a second run would find in the
//!   caches: those it keeps (`Shift::keep`, `Refined`);
//! - **refinements** of variables the call made itself: added again, renamed (`Refined`);
//! - **depth and recursion cuts** inside: they depend on the functions on the call stack, so
//!   such a summary is replayed only under the same stack;
//! - **walks over the heap** that forget known values or autograd facts in every object (an
//!   in-place op, a call the engine does not see into): they read no object, so the match does
//!   not cover the objects they changed; the replay makes them again on the caller's objects
//!   (`State::walk_again`), then writes what the call wrote (of an object read by name, only the
//!   names it read: the others changed are the walk's).
//!
//! A call is summarised only when that replay loses nothing:
//! - no budget cut happened inside (the result is the full one);
//! - it made no other walk over the heap (`reads::note_walk`: marking what autograd saved as
//!   broken, a tracked `backward()`'s optimizer walk, the mode walk: what they do depends on
//!   which objects exist, not only on those the call read). A look for every optimizer
//!   (`reads::note_optimizer_walk`) is summarised: the summary keeps the optimizers at the
//!   call, and a call matches only with as many, each renamed to one of the caller's;
//! - the path's shape bindings: only those of the variables it looked up or bound
//!   (`reads::note_shape_var`) must be the caller's; a replay changes the bindings the call
//!   changed and keeps the others;
//! - it added nothing to the cache of constructor parameters, and asked the environment
//!   nothing new (`Symbols::flag`): a second run would find those, not make them again; its
//!   refinements of the caller's variables made its first variables and symbols
//!   (`Refined::split`), so that keeping them keeps the order of the others;
//! - the caller's assignment label, when it read it (`Interp::label`: a layer it builds is
//!   named after it), is part of the key;
//! - its checks recorded no undecided verdict that left a trace besides its outcome (a check
//!   exported to the solver, a precondition assumed for later checks), and no violation that
//!   overrode an outcome from before the call, so a replay never hides a report; its
//!   outcomes, violations too (at most `MAX_OUTCOMES`), are replayed under the caller's
//!   branches, so a site's "every path fails" test sees the same paths as without the cache.
//!   A violation's message and trace are the run's: the key compares tensors with where their
//!   dims came from (`Iso::value`), so the replay's would be the same text; its path
//!   condition is read off the replay's branches where it is reported.
//!
//! A replay counts as work the outcomes it records (`Interp::charge`), and, for the unrolling
//! budgets of loops, the work of the first run (`Interp::work`): a loop is generalised where
//! it would be without the cache.
//!
//! The result is the set of (return value, new objects, facts, branch suffix, taint)
//! outcomes, merged like equal states (`State::absorb`): when every internal path produces
//! the same result, the caller sees one path.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use crate::value::*;
use crate::ir::{Name, Span};
use crate::shape::Facts;

/// At most this many summaries per function (oldest dropped first).
const PER_FUNCTION: usize = 16;
/// Calls whose read set is larger than this are not summarised (matching would cost more
/// than running them).
const MAX_READS: usize = 4096;
/// Calls that recorded more outcomes than this are not summarised (a replay would push them
/// all again, each with its branches: a model built on a hundred paths).
pub const MAX_OUTCOMES: usize = 4096;
/// Calls that wrote objects from before them are summarised only with at most this many reads:
/// such a call that read the whole heap (an in-place op forgets what every tensor was) rarely
/// matches again, and trying costs a walk of the heap at every call.
const MAX_READS_WRITING: usize = 512;

mod context;
mod hit;
mod refined;
mod ren;
use ren::{Ren, remap_shared, remap_value, remap_write};
mod shift;
mod write;
pub use context::Context;
pub use shift::Shift;
pub use refined::Refined;
use write::{Write, write_names, write_of};

pub use crate::value::reads::{Read, walks, begin_reads, drop_reads, end_reads, note, note_read, note_renamed, note_renamed_later, note_var_read, reset_reads};

// ----- summaries ----------------------------------------------------------------------------

/// An outcome a summary replays: site, branches after the caller's, taint, suppressed, the
/// verdict, and the call sites below the caller's (`CallsBelow`).
pub type Replayed = (Span, Rc<[Branch]>, bool, bool, super::interp::Verdict, CallsBelow);

/// The call sites on the way from a summarised call to an outcome's site: the call's own
/// site (which a replay replaces with its own), when the outcome is inside the callee's
/// frame, and those below it.
#[derive(Clone)]
pub struct CallsBelow {
    pub own: bool,
    pub rest: Rc<[Span]>,
}

impl CallsBelow {
    /// Of an outcome recorded with the call sites `calls`, in a call at `span` made from
    /// `depth` call sites.
    pub fn of(calls: &[Span], depth: usize, span: Span) -> CallsBelow {
        let below = calls.get(depth..).unwrap_or_default();
        match below.split_first() {
            Some((first, rest)) if *first == span => CallsBelow { own: true, rest: rest.into() },
            _ => CallsBelow { own: false, rest: below.into() },
        }
    }

    /// The call sites of the replayed outcome, for a call at `span` made from `calls`.
    pub fn under(&self, calls: &[Span], span: Span) -> Rc<[Span]> {
        let own = self.own.then_some(span);
        calls.iter().copied().chain(own).chain(self.rest.iter().copied()).collect()
    }
}

/// What one call with a given key produced.
pub struct Summary {
    // the key
    closure: Rc<Closure>,
    args: Vec<Value>,
    kwargs: Vec<(Name, Value)>,
    /// The heap at the call (objects `< heap.len()` existed before it).
    heap: Heap,
    /// What the call read of pre-existing objects, sorted.
    reads: Vec<Read>,
    pub entry: EntryFacts,
    // the result
    results: Vec<CallResult>,
    /// Its outcomes.
    outcomes: Vec<Replayed>,
    /// The read-log frame (`reads::frame_serial`) a replay that renamed none of the reads
    /// last noted them in: a replay in the same frame needs not note them again.
    noted_in: std::cell::Cell<u64>,
    /// The last lookup that matched this summary, when it could be remembered (`LastMatch`).
    last_match: std::cell::RefCell<Option<LastMatch>>,
    /// The work the call took (`Interp::work`): a replay counts it.
    work: u64,
    /// The shape variables the call created: the counter before it, and how many.
    fresh_vars: (u32, u32),
    /// The symbols the call created: the first one's id, and what the engine knows of each.
    fresh_syms: (u32, Vec<crate::shape::SymInfo>),
    /// When a call inside was cut for depth or recursion: the functions on the call stack at
    /// the call, which decide those cuts (a replay must be made under the same ones).
    stack: Option<Rc<[u32]>>,
    /// When the call looked for every optimizer on its path (`reads::note_optimizer_walk`):
    /// those that existed at its start, each read whole. A call matches only where the caller
    /// has as many and the renaming takes each of these to one of them (kept in place when the
    /// callee and arguments do not reach it), so the look finds the same ones, renamed.
    optimizers: Option<Vec<ObjId>>,
    /// The caller's bindings of the shape variables the call looked up or bound
    /// (`reads::note_shape_var`; `None`: unbound): a call matches only where the caller binds
    /// those alike. The other bindings it neither read nor changed.
    shape_reads: Vec<(u32, Option<Shape>)>,
    /// The refinements it made of variables it made itself (`Refined`).
    refined: Vec<Refined>,
    /// How many of its fresh shape variables and symbols (the first ones) are the refinements
    /// of variables from before it: a replay keeps them, as a second run would find them in
    /// the caches.
    kept: (u32, u32),
    /// The caller's assignment label, when the call read it (`Interp::label`): a call matches
    /// only under the same one.
    label: Option<Option<Rc<str>>>,
    /// The call stack it read (`Context`): a call matches only under the same one.
    context: Option<Context>,
    /// The opaque tests from before the call it decided by the side remembered
    /// (`value::taken`): each one's object, attribute, key and side. A call matches only where
    /// the caller remembers the same, renamed.
    taken: Vec<(ObjId, Name, u64, bool)>,
    /// The objects from before the call it stored into (`None`: whole), and whether it forgot
    /// every test: a replay forgets the caller's tests of them as the run did.
    stores: Vec<(ObjId, Option<Name>)>,
    forgot: bool,
    /// The opaque tests of objects from before the call that it forked on (none remembered):
    /// where the caller remembers one, a replay drops the paths and outcomes of the other side.
    forks: Vec<crate::engine::interp::taken::Fork>,
}

/// A lookup that matched a summary with a renaming that kept every object in place, for
/// arguments that are plain values (`plain`): the same closure called with the same values
/// while the objects the match looked at are the very same ones matches the same way, so
/// the next such lookup takes this renaming without comparing anything again.
struct LastMatch {
    closure: Rc<Closure>,
    args: Vec<Value>,
    kwargs: Vec<(Name, Value)>,
    /// Each object of the renaming, as it was.
    objs: Vec<(ObjId, Rc<Obj>)>,
}

/// A value `Iso::value` compares by equality alone (a reference: by id, under a renaming
/// that keeps objects in place).
fn plain(v: &Value) -> bool {
    use Value::*;
    matches!(v, None | Unknown | Bool(_) | Int(_) | Float(_) | Str(_) | Lib(_) | Builtin(_) | Ref(_))
}

/// For a `plain` value `a`: what `Iso::value(a, b)` gives when the renaming keeps `a`'s
/// object (if any) in place.
fn plain_same(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (None, None) | (Unknown, Unknown) => true,
        (Bool(x), Bool(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (Float(x), Float(y)) => x == y,
        (Str(x), Str(y)) => x == y,
        (Lib(x), Lib(y)) => x == y,
        (Builtin(x), Builtin(y)) => x == y,
        (Ref(x), Ref(y)) => x == y,
        _ => false,
    }
}

/// Whether `Iso::value(a, b)` is false whatever the renaming: `a` a plain value other than
/// a reference, and `b` not equal to it.
fn differ_outright(a: &Value, b: &Value) -> bool {
    plain(a) && !matches!(a, Value::Ref(_)) && !plain_same(a, b)
}

impl Summary {
    /// The renaming of the call's fresh symbols to new ones from `next_sym` on (`Hit::replay`,
    /// `Hit::branch`).
    fn sym_shift(&self, next_sym: u32) -> Shift {
        Shift { from: self.fresh_syms.0, count: self.fresh_syms.1.len() as u32, keep: self.kept.1, to: next_sym }
    }

    /// The renaming of the call's fresh shape variables to new ones from `next_var + 1` on.
    fn var_shift(&self, next_var: u32) -> Shift {
        Shift { from: self.fresh_vars.0 + 1, count: self.fresh_vars.1, keep: self.kept.0, to: next_var + 1 }
    }

    /// The renaming of the last match (`LastMatch`), if this lookup is the same.
    fn same_as_last(&self, c: &Rc<Closure>, args: &[Value], kwargs: &[(Name, Value)], heap: &Heap) -> Option<IdMap> {
        let last = self.last_match.borrow();
        let l = last.as_ref()?;
        let same = Rc::ptr_eq(&l.closure, c)
            && l.args.len() == args.len()
            && l.args.iter().zip(args).all(|(a, b)| plain_same(a, b))
            && l.kwargs.len() == kwargs.len()
            && l.kwargs.iter().zip(kwargs).all(|((k1, a), (k2, b))| k1 == k2 && plain_same(a, b))
            && l.objs.iter().all(|(x, o)| heap.get(*x).is_some_and(|h| Rc::ptr_eq(h, o)));
        if !same {
            return Option::None;
        }
        let mut map = IdMap::default();
        for (x, _) in &l.objs {
            map.insert(*x, *x);
        }
        Some(map)
    }

    /// Remember a match (`LastMatch`) when it can be.
    fn remember(&self, c: &Rc<Closure>, args: &[Value], kwargs: &[(Name, Value)], map: &IdMap, heap: &Heap) {
        let keeps = map.pairs.len() <= IdMap::SMALL && map.iter().all(|(a, b)| a == b && b < heap.len());
        if !(keeps && args.iter().all(plain) && kwargs.iter().all(|(_, v)| plain(v))) {
            *self.last_match.borrow_mut() = Option::None;
            return;
        }
        let objs = map.iter().map(|(x, _)| (x, heap[x].clone())).collect();
        *self.last_match.borrow_mut() = Some(LastMatch { closure: c.clone(), args: args.to_vec(), kwargs: kwargs.to_vec(), objs });
    }
}

/// The parts of the caller's path (and of the interpreter) a call can depend on besides the
/// heap and its arguments.
#[derive(Clone, PartialEq)]
pub struct EntryFacts {
    pub facts: Facts,
    pub tainted: bool,
    pub in_try: u32,
    pub grad_mode: GradMode,
    pub params_frozen: bool,
    pub opaque_prefix: bool,
    /// Whether tensors with known values exist (`value::values_tracked`): a call recorded
    /// before any did skipped forgetting them (an in-place write), so it must not be
    /// replayed once some do.
    pub values_tracked: bool,
    /// Whether an optimizer exists (`optim::any_made`): a call recorded before any did
    /// skipped forgetting their gradients, so it must not be replayed once some do.
    pub optimizers_made: bool,
}

impl EntryFacts {
    pub fn of(st: &State) -> EntryFacts {
        EntryFacts {
            facts: st.facts.clone(),
            tainted: st.tainted,
            in_try: st.in_try,
            grad_mode: st.grad_mode,
            params_frozen: st.params_frozen,
            opaque_prefix: st.branches.any(Branch::is_choice),
            values_tracked: crate::value::values_tracked(),
            optimizers_made: crate::models::torch::optim::any_made(),
        }
    }
}

/// One outcome of a summarised call, in the first call's object ids.
struct CallResult {
    /// The objects that existed before the call and that it changed.
    writes: Vec<(ObjId, Write)>,
    value: Value,
    /// Shared with the first call's heap: a replay that renames nothing in one shares it too.
    new_objs: Vec<Rc<Obj>>,
    facts: Facts,
    /// The shape bindings the call changed: each variable's new binding (`None`: removed).
    shapes: Vec<(u32, Option<Shape>)>,
    branches: Vec<Branch>,
    tainted: bool,
    /// The graph nodes the call made (`State::made`), by how many times: a replay makes them
    /// again.
    made: Vec<(Node, u8)>,
    /// The walks over the heap it made (`State::walked`): a replay makes them again on the
    /// caller's objects before it writes `writes`.
    walked: u8,
    /// The opaque tests it took of objects from before it, remembered at its end.
    taken: Vec<crate::value::taken::Taken>,
}

/// The graph nodes made between `before` and `after` (`State::made`), by how many times; `None`
/// when some was freed.
fn made_since(before: &Rc<Made>, after: &Rc<Made>) -> Option<Vec<(Node, u8)>> {
    if Rc::ptr_eq(before, after) || before == after {
        return Some(Vec::new());
    }
    after.grown_since(before)
}

/// The bindings that differ from `before` in `after`: each variable's binding in `after`
/// (`None`: unbound there).
fn shape_delta(before: &Rc<BTreeMap<u32, Shape>>, after: &Rc<BTreeMap<u32, Shape>>) -> Vec<(u32, Option<Shape>)> {
    if Rc::ptr_eq(before, after) {
        return Vec::new();
    }
    let mut out: Vec<(u32, Option<Shape>)> = after.iter().filter(|(k, v)| before.get(k) != Some(*v)).map(|(k, v)| (*k, Some(v.clone()))).collect();
    out.extend(before.keys().filter(|k| !after.contains_key(k)).map(|k| (*k, Option::None)));
    out
}

/// A summary matched against a call: the renaming from the first call's ids to this one's.
pub struct Hit {
    summary: Rc<Summary>,
    map: IdMap,
}

#[derive(Default)]
pub struct Memo {
    by_def: HashMap<usize, Vec<Rc<Summary>>>,
    pub hits: u64,
    pub misses: u64,
    pub stored: u64,
    /// The last lookup found a summary that matched but for the opaque tests the caller
    /// remembers (`Summary::taken`): the call is run without them (`Interp::taken_floor`), so
    /// that its summary serves every caller.
    pub taken_mismatch: bool,
}

/// Everything the first call saw and did, for `Memo::store`.
pub struct Recorded<'a> {
    pub closure: &'a Rc<Closure>,
    pub args: Vec<Value>,
    pub kwargs: Vec<(Name, Value)>,
    pub entry_state: &'a State,
    pub entry: EntryFacts,
    pub reads: Vec<Read>,
    pub results: &'a [(State, Value)],
    pub outcomes: Vec<Replayed>,
    /// The work the call took (`Interp::work`).
    pub work: u64,
    /// The shape-variable counter before the call, and how many variables it created.
    pub fresh_vars: (u32, u32),
    /// The symbols it created (`Summary::fresh_syms`).
    pub fresh_syms: (u32, Vec<crate::shape::SymInfo>),
    /// The call stack at the call, when a depth or recursion cut happened inside it.
    pub stack: Option<Rc<[u32]>>,
    /// The optimizers at the call, when it looked for every one (`Summary::optimizers`).
    pub optimizers: Option<Vec<ObjId>>,
    /// The shape variables that existed before the call that it looked up or bound.
    pub shape_vars: Vec<u32>,
    /// The refinements it made (`Summary::refined`).
    pub refined: Vec<Refined>,
    /// `Summary::kept`.
    pub kept: (u32, u32),
    /// `Summary::label`.
    pub label: Option<Option<Rc<str>>>,
    /// `Summary::context`.
    pub context: Option<Context>,
    /// `Summary::taken`, `Summary::stores`, `Summary::forgot`; and the serial of the last
    /// test remembered before the call (the results keep those remembered since).
    pub taken: Vec<(ObjId, Name, u64, bool)>,
    pub stores: Vec<(ObjId, Option<Name>)>,
    pub forgot: bool,
    pub taken_serial: u64,
    /// `Summary::forks`.
    pub forks: Vec<crate::engine::interp::taken::Fork>,
}

impl Memo {
    /// A stored summary for calling `c` with these arguments on this path, if one matches.
    pub fn lookup(&mut self, c: &Rc<Closure>, args: &[Value], kwargs: &[(Name, Value)], st: &State, entry: &EntryFacts, stack: &[u32], label: &Option<Rc<str>>, at: (&[Span], Span)) -> Option<Hit> {
        let key = Rc::as_ptr(&c.def) as usize;
        let mut caller_optimizers: Option<usize> = None;
        let mut taken_mismatch = false;
        let found = self.by_def.get(&key).and_then(|list| {
            list.iter().rev().find_map(|s| {
                if s.entry != *entry || s.label.as_ref().is_some_and(|l| l != label) || s.args.len() != args.len() || s.kwargs.len() != kwargs.len() || s.stack.as_ref().is_some_and(|k| **k != *stack) || s.context.as_ref().is_some_and(|k| !k.matches(at.0, at.1)) || !s.shape_reads.iter().all(|(v, b)| st.shapes.get(v) == b.as_ref()) {
                    return None;
                }
                // (as many optimizers as the first call had: `Summary::optimizers`)
                if let Some(own) = &s.optimizers
                    && *caller_optimizers.get_or_insert_with(|| crate::models::torch::optim::optimizer_ids(st).len()) != own.len()
                {
                    return None;
                }
                if let Some(map) = s.same_as_last(c, args, kwargs, &st.heap)
                    && s.optimizers.as_ref().is_none_or(|own| own.iter().all(|&o| map.get(o).is_some()))
                {
                    if s.same_taken(&map, st) {
                        return Some(Hit { summary: s.clone(), map });
                    }
                    taken_mismatch = true;
                    return None;
                }
                // a plain argument that differs fails the match whatever the renaming
                if s.args.iter().zip(args).any(|(a, b)| differ_outright(a, b)) || s.kwargs.iter().zip(kwargs).any(|((k1, a), (k2, b))| k1 != k2 || differ_outright(a, b)) {
                    return None;
                }
                let mut iso = Iso::new(&s.heap, &st.heap, &s.reads);
                let ok = iso.closure(&s.closure, c)
                    && s.args.iter().zip(args).all(|(a, b)| iso.value(a, b))
                    && s.kwargs.iter().zip(kwargs).all(|((k1, a), (k2, b))| k1 == k2 && iso.value(a, b))
                    && iso.drain()
                    // (each optimizer the callee and arguments do not reach is kept in place)
                    && s.optimizers.as_ref().is_none_or(|own| own.iter().all(|&o| iso.fwd.get(o).is_some() || iso.id(o, o)) && iso.drain());
                if !ok {
                    return None;
                }
                let map = iso.take_map();
                if !s.same_taken(&map, st) {
                    taken_mismatch = true;
                    return None;
                }
                s.remember(c, args, kwargs, &map, &st.heap);
                Some(Hit { summary: s.clone(), map })
            })
        });
        match &found {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        self.taken_mismatch = taken_mismatch && found.is_none();
        found
    }

    /// Store the summary of a call that qualified (see the module docs; the caller checked
    /// the counters, this checks the heap and the branches).
    pub fn store(&mut self, r: Recorded) {
        let l0 = r.entry_state.heap.len();
        let mut r = r;
        // (the optimizers it looked at are read whole: the match compares them)
        if let Some(own) = &r.optimizers {
            r.reads.extend(own.iter().map(|&o| (o, Option::None)));
            r.reads.sort_unstable();
            r.reads.dedup();
        }
        if r.reads.len() > MAX_READS {
            return;
        }
        let mut results = Vec::new();
        for (s, v) in r.results {
            let mut writes = Vec::new();
            let read_whole = |i: ObjId| r.reads.binary_search(&(i, Option::None)).is_ok();
            // (the names of `i` the call read: after a walk, the others it changed are the
            // walk's, which a replay makes again; an object it did not read at all likewise)
            let read_name = |i: ObjId, k: &Name| s.walked == 0 || r.reads.binary_search(&(i, Some(k.clone()))).is_ok();
            let untouched = s.heap.len() >= l0
                && s.heap.all_changed(&r.entry_state.heap, |i| {
                    if s.heap[i] == r.entry_state.heap[i] || (s.walked != 0 && r.reads.get(r.reads.partition_point(|(j, _)| *j < i)).is_none_or(|(j, _)| *j != i)) {
                        return true;
                    }
                    match write_of(&r.entry_state.heap[i], &s.heap[i], read_whole(i)) {
                        Some(Write::Names(mut names)) => {
                            names.retain(|(k, _)| read_name(i, k));
                            writes.push((i, Write::Names(names)));
                            true
                        }
                        Some(w) => {
                            writes.push((i, w));
                            true
                        }
                        Option::None => false,
                    }
                });
            let n = r.entry_state.branches.len();
            if !untouched || s.in_try != r.entry_state.in_try || s.grad_mode != r.entry_state.grad_mode || s.params_frozen != r.entry_state.params_frozen || s.branches.len() < n || s.branches.prefix(n) != r.entry_state.branches {
                return;
            }
            if !writes.is_empty() && r.reads.len() > MAX_READS_WRITING {
                return;
            }
            // the graph nodes it made; one it freed (a `backward()` inside) is not replayed
            let Some(made) = made_since(&r.entry_state.made, &s.made) else { return };
            results.push(CallResult {
                writes,
                value: v.clone(),
                new_objs: s.heap.iter_from(l0).cloned().collect(),
                facts: s.facts.clone(),
                shapes: shape_delta(&r.entry_state.shapes, &s.shapes),
                branches: s.branches.suffix(n),
                tainted: s.tainted,
                made,
                walked: s.walked,
                taken: s.taken.since(r.taken_serial, l0),
            });
        }
        let summary = Summary {
            closure: r.closure.clone(),
            args: r.args,
            kwargs: r.kwargs,
            heap: r.entry_state.heap.clone(),
            reads: r.reads,
            entry: r.entry,
            results,
            outcomes: r.outcomes,
            noted_in: std::cell::Cell::new(0),
            last_match: std::cell::RefCell::new(Option::None),
            work: r.work,
            fresh_vars: r.fresh_vars,
            fresh_syms: r.fresh_syms,
            stack: r.stack,
            optimizers: r.optimizers,
            shape_reads: r.shape_vars.iter().map(|v| (*v, r.entry_state.shapes.get(v).cloned())).collect(),
            refined: r.refined,
            kept: r.kept,
            label: r.label,
            context: r.context,
            taken: r.taken,
            stores: r.stores,
            forgot: r.forgot,
            forks: r.forks,
        };
        let list = self.by_def.entry(Rc::as_ptr(&r.closure.def) as usize).or_default();
        if list.len() >= PER_FUNCTION {
            list.remove(0);
        }
        list.push(Rc::new(summary));
        self.stored += 1;
    }
}

impl Summary {
    /// Whether the caller remembers the opaque tests the call looked up alike (`taken`).
    fn same_taken(&self, map: &IdMap, st: &State) -> bool {
        self.taken.iter().all(|(root, attr, key, truth)| map.get(*root).is_some_and(|r| st.taken.get(r, attr, *key).is_some_and(|t| t.truth == *truth)))
    }
}

impl Hit {
    /// The opaque tests from before the call that it looked up, renamed to the caller's
    /// objects (`Summary::taken`).
    pub fn taken(&self) -> impl Iterator<Item = (ObjId, &Name, u64, bool)> + '_ {
        self.summary.taken.iter().filter_map(|(root, attr, key, truth)| Some((self.map.get(*root)?, attr, *key, *truth)))
    }

    /// The sides of the call's forks (`Summary::forks`) that the caller's state `st` rules
    /// out: it remembers the other side of the same test (`value::taken`).
    pub fn ruled_out(&self, st: &State) -> Vec<Branch> {
        self.summary.forks.iter().filter_map(|f| Some(f.ruled_out(st.taken.get(self.map.get(f.root)?, &f.attr, f.key)?.truth))).collect()
    }

    /// The call's outcomes on the current path `st`, or `None` when a result refers to an
    /// object the renaming does not cover (then the call is run). The call's fresh shape
    /// variables become `next_var + 1 ..` (see `fresh_vars`), its fresh symbols `next_sym ..`
    /// (`fresh_syms`).
    pub fn replay(&self, st: State, next_var: u32, next_sym: u32, ruled_out: &[Branch]) -> Result<Vec<(State, Value)>, State> {
        let s = &self.summary;
        let old_len = s.heap.len();
        let new_len = st.heap.len();
        let map = |id: ObjId| -> Option<ObjId> {
            if id >= old_len { Some(new_len + (id - old_len)) } else { self.map.get(id) }
        };
        let ren = Ren {
            ids: &map,
            vars: s.var_shift(next_var),
            syms: s.sym_shift(next_sym),
        };
        // renamed up front, so that a result that cannot be renamed leaves `st` untouched
        let mut renamed = Vec::with_capacity(s.results.len());
        for r in &s.results {
            let objs = r.new_objs.iter().map(|o| remap_shared(o, &ren)).collect::<Option<Vec<_>>>();
            let writes = r.writes.iter().map(|(id, w)| Some((self.map.get(*id)?, remap_write(w, &ren)?))).collect::<Option<Vec<_>>>();
            match (objs, remap_value(&r.value, &ren), writes) {
                (Some(objs), Some(v), Some(writes)) => renamed.push((objs, v, writes)),
                _ => return Err(st),
            }
        }
        // (the enclosing calls see the stores the run made: `value::taken`)
        for (id, name) in &s.stores {
            if let Some(id) = self.map.get(*id) {
                crate::value::taken::note_store(id, name.as_ref());
            }
        }
        let mut out = Vec::with_capacity(s.results.len());
        let mut st = Some(st);
        let last = s.results.len().saturating_sub(1);
        for (i, (r, (objs, v, writes))) in s.results.iter().zip(renamed).enumerate() {
            // (a path the caller's remembered tests rule out: `value::taken`)
            if !ruled_out.is_empty() && r.branches.iter().any(|b| ruled_out.contains(b)) {
                continue;
            }
            // the last result takes the caller's state itself: no copy of its heap
            let mut st2 = if i == last { st.take().unwrap() } else { st.clone().unwrap() };
            st2.walk_again(r.walked);
            // (the opaque tests the run forgot, and those it took: `value::taken`)
            if s.forgot {
                st2.taken.forget();
            }
            for (id, name) in &s.stores {
                match self.map.get(*id) {
                    Some(id) => {
                        match name {
                            Some(name) => st2.taken.stored(id, name),
                            Option::None => st2.taken.written(id),
                        }
                    }
                    Option::None => st2.taken.forget(),
                }
            }
            for (id, w) in writes {
                match w {
                    Write::Whole(o) => st2.heap.set(id, o),
                    Write::Names(names) => write_names(Rc::make_mut(st2.heap.slot_mut(id)), &names),
                }
            }
            for t in &r.taken {
                if let Some(root) = self.map.get(t.root) {
                    st2.taken.remember(crate::value::taken::Taken { root, serial: u64::MAX, ..t.clone() });
                }
            }
            st2.alloc_all(objs);
            st2.facts = ren.facts(&r.facts);
            if !r.shapes.is_empty() {
                let shapes = Rc::make_mut(&mut st2.shapes);
                for (k, v) in &r.shapes {
                    match v {
                        Some(v) => shapes.insert(ren.vars.map(*k), if ren.ids_only() { v.clone() } else { ren.shape(v) }),
                        Option::None => shapes.remove(&ren.vars.map(*k)),
                    };
                }
            }
            st2.branches.extend(r.branches.iter().map(|b| ren.branch(b)));
            st2.tainted = r.tainted;
            for (k, n) in &r.made {
                for _ in 0..*n {
                    st2.make_node(*k);
                }
            }
            out.push((st2, v));
        }
        // the enclosing call read what this one reads (unless a replay that renamed none of
        // them noted them in the same frame: a summary replayed in a comprehension)
        // (an enclosing call depends on the optimizers this one looked for)
        if s.optimizers.is_some() {
            crate::value::reads::note_optimizer_walk();
        }
        if !s.shape_reads.is_empty() {
            let vars: Vec<u32> = s.shape_reads.iter().map(|(v, _)| *v).collect();
            crate::value::reads::note_shape_vars(&vars);
        }
        let frame = crate::value::reads::frame_serial();
        let unrenamed = s.reads.iter().all(|(id, _)| self.map.get(*id) == Some(*id));
        if !(unrenamed && frame != 0 && s.noted_in.get() == frame) {
            note_renamed(&s.reads, |id| self.map.get(id));
            s.noted_in.set(if unrenamed { frame } else { 0 });
        }
        Ok(out)
    }

    /// A branch of a replayed outcome, with the call's fresh symbols renamed as `replay` did
    /// (`next_sym`: the same as given there).
    pub fn branch(&self, b: &Branch, next_sym: u32) -> Branch {
        let s = &self.summary;
        let ren = Ren { ids: &|id| Some(id), vars: Shift::default(), syms: s.sym_shift(next_sym) };
        ren.branch(b)
    }

    /// The outcomes to record for the call on a path with these branches.
    pub fn outcomes(&self) -> &[Replayed] {
        &self.summary.outcomes
    }
}

// ----- structural matching up to renaming ---------------------------------------------------

/// Whether what was read of `old` (`reads`, sorted) is the same in `new` up to a renaming of
/// object ids that keeps each of `roots` (the objects code reaches first: its scopes) in
/// place: the renaming, from `old`'s ids to `new`'s, when it is. Used by loops, whose next
/// item is matched against an earlier one this way (`interp::loops`).
pub fn same_reads(old: &State, new: &State, reads: &[Read], roots: &[ObjId]) -> Option<IdMap> {
    let mut iso = Iso::new(&old.heap, &new.heap, reads);
    (roots.iter().all(|r| iso.id(*r, *r)) && iso.drain()).then(|| iso.take_map())
}

/// What a successful `same_reads` leaves for the next one against the same `old`
/// (`same_reads_again`): the objects it kept in place, each with the object it found at that
/// id in both heaps, when it was the same one (held as `old` holds it: the new heap is not
/// held, so a write to it copies nothing).
pub struct Matched {
    kept: Vec<(ObjId, Option<Rc<Obj>>)>,
}

/// `same_reads`, for a `new` state that is mostly the one `last` matched (the next item of a
/// loop: only the loop variable and what it names differ). The objects the last match kept
/// in place are kept again; of those it found the same object in both heaps, the ones still
/// that object in `new` need no new look (everything they refer to was kept in place too),
/// the others are compared again, with the objects they lead to. The result is a renaming
/// under which everything read matches; when this finds none, `same_reads` itself decides,
/// so the answer is the same. `last` becomes this match.
pub fn same_reads_again(old: &State, new: &State, reads: &[Read], roots: &[ObjId], last: &mut Option<Matched>) -> Option<IdMap> {
    let seeded = last.as_ref().and_then(|m| {
        let mut iso = Iso::new(&old.heap, &new.heap, reads);
        // the kept ids are distinct (a renaming's): no pair to check them against
        for (x, same) in &m.kept {
            let x = *x;
            if x >= old.heap.len() || x >= new.heap.len() {
                return None;
            }
            iso.fwd.insert(x, x);
            let unchanged = same.as_ref().is_some_and(|o| Rc::ptr_eq(o, &new.heap[x]) && Rc::ptr_eq(o, &old.heap[x]));
            if !unchanged {
                let range = iso.reads_of(x);
                if !range.is_empty() {
                    iso.pending.push((x, x, range));
                }
            }
        }
        (roots.iter().all(|r| iso.id(*r, *r)) && iso.drain()).then(|| iso.take_map())
    });
    let map = seeded.or_else(|| same_reads(old, new, reads, roots))?;
    let m = last.get_or_insert_with(|| Matched { kept: Vec::new() });
    m.kept.clear();
    for (a, b) in map.iter() {
        if a == b {
            let same = Rc::ptr_eq(&old.heap[a], &new.heap[a]).then(|| old.heap[a].clone());
            m.kept.push((a, same));
        }
    }
    Some(map)
}

/// `same_reads` for another path (`old`, `new`) of the states whose first path (`old0`,
/// `new0`) matched with the renaming `map0`: the paths share most objects, so `map0` is
/// taken as it is and only its pairs whose objects differ between the paths are compared
/// again (with the objects they lead to). A shared pair was compared under `map0`, which
/// the result extends, so the result is a renaming under which everything read matches.
/// `None` does not mean that none exists (a pair of `map0` this path no longer reaches may
/// stand in the way): the caller then tries `same_reads`.
pub fn same_reads_beside(old: &State, new: &State, reads: &[Read], old0: &State, new0: &State, map0: &IdMap) -> Option<IdMap> {
    let mut iso = Iso::new(&old.heap, &new.heap, reads);
    for (a, b) in map0.iter() {
        if a >= old.heap.len() || b >= new.heap.len() || a >= old0.heap.len() || b >= new0.heap.len() {
            return None;
        }
        iso.fwd.insert(a, b);
        if !(Rc::ptr_eq(&old.heap[a], &old0.heap[a]) && Rc::ptr_eq(&new.heap[b], &new0.heap[b])) {
            let range = iso.reads_of(a);
            if !range.is_empty() {
                iso.pending.push((a, b, range));
            }
        }
    }
    iso.drain().then(|| iso.take_map())
}

/// A partial bijection of object ids, from an old heap's to a new one's. It is small in
/// practice (the objects one call reads), so it is a list scanned linearly, with hash maps
/// built once it grows past `SMALL` pairs.
#[derive(Default)]
pub struct IdMap {
    pairs: Vec<(ObjId, ObjId)>,
    fwd: HashMap<ObjId, ObjId>,
    back: HashMap<ObjId, ObjId>,
}

impl IdMap {
    const SMALL: usize = 24;

    /// The id `a` is renamed to.
    pub fn get(&self, a: ObjId) -> Option<ObjId> {
        if self.pairs.len() <= Self::SMALL { self.pairs.iter().find(|p| p.0 == a).map(|p| p.1) } else { self.fwd.get(&a).copied() }
    }

    fn has_target(&self, b: ObjId) -> bool {
        if self.pairs.len() <= Self::SMALL { self.pairs.iter().any(|p| p.1 == b) } else { self.back.contains_key(&b) }
    }

    fn insert(&mut self, a: ObjId, b: ObjId) {
        self.pairs.push((a, b));
        if self.pairs.len() == Self::SMALL + 1 {
            self.fwd = self.pairs.iter().copied().collect();
            self.back = self.pairs.iter().map(|&(a, b)| (b, a)).collect();
        } else if self.pairs.len() > Self::SMALL {
            self.fwd.insert(a, b);
            self.back.insert(b, a);
        }
    }

    /// Every (old, new) pair, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (ObjId, ObjId)> + '_ {
        self.pairs.iter().copied()
    }
}

/// At most this many spare buffers of each kind are kept (`SPARE`).
const SPARES: usize = 8;

type Pending = (ObjId, ObjId, std::ops::Range<usize>);

/// Spare `IdMap` pairs and `Iso` work lists.
type Spares = (Vec<Vec<(ObjId, ObjId)>>, Vec<Vec<Pending>>);

thread_local! {
    /// The buffers of finished matchings (`IdMap` pairs, `Iso` work lists), for the next
    /// ones: a loop skip or a summary lookup then allocates nothing.
    static SPARE: std::cell::RefCell<Spares> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl Drop for IdMap {
    fn drop(&mut self) {
        let mut pairs = std::mem::take(&mut self.pairs);
        if pairs.capacity() > 0 && pairs.capacity() <= 1024 {
            pairs.clear();
            let _ = SPARE.try_with(|s| {
                let mut s = s.borrow_mut();
                if s.0.len() < SPARES {
                    s.0.push(pairs);
                }
            });
        }
    }
}

impl Drop for Iso<'_> {
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        if pending.capacity() > 0 && pending.capacity() <= 1024 {
            pending.clear();
            let _ = SPARE.try_with(|s| {
                let mut s = s.borrow_mut();
                if s.1.len() < SPARES {
                    s.1.push(pending);
                }
            });
        }
    }
}

/// A partial bijection between the first call's object ids and the current ones; objects
/// the first call read are compared by content (from a work list, so deep heaps recurse not).
struct Iso<'a> {
    old: &'a Heap,
    new: &'a Heap,
    reads: &'a [Read],
    fwd: IdMap,
    /// Pairs whose contents are still to compare, with the range of `reads` of the old one.
    pending: Vec<Pending>,
}

impl<'a> Iso<'a> {
    fn new(old: &'a Heap, new: &'a Heap, reads: &'a [Read]) -> Iso<'a> {
        // room for the few objects a call or an iteration reads, as a rule (one allocation each)
        let (pairs, pending) = SPARE.with(|s| {
            let mut s = s.borrow_mut();
            (s.0.pop().unwrap_or_else(|| Vec::with_capacity(16)), s.1.pop().unwrap_or_else(|| Vec::with_capacity(8)))
        });
        Iso { old, new, reads, fwd: IdMap { pairs, fwd: HashMap::default(), back: HashMap::default() }, pending }
    }

    /// The renaming found (the matching is over).
    fn take_map(&mut self) -> IdMap {
        std::mem::take(&mut self.fwd)
    }

    fn id(&mut self, a: ObjId, b: ObjId) -> bool {
        if let Some(x) = self.fwd.get(a) {
            return x == b;
        }
        if a >= self.old.len() || b >= self.new.len() || self.fwd.has_target(b) {
            return false;
        }
        self.fwd.insert(a, b);
        let range = self.reads_of(a);
        if !range.is_empty() {
            self.pending.push((a, b, range));
        }
        true
    }

    /// Where in `reads` the first call's reads of object `a` are (`None` first: all of it).
    fn reads_of(&self, a: ObjId) -> std::ops::Range<usize> {
        let lo = self.reads.partition_point(|r| r.0 < a);
        let hi = lo + self.reads[lo..].partition_point(|r| r.0 <= a);
        lo..hi
    }

    fn drain(&mut self) -> bool {
        while let Some((a, b, range)) = self.pending.pop() {
            let (old, new) = (self.old, self.new);
            let reads: &'a [Read] = &self.reads[range];
            let whole = reads[0].1.is_none();
            let names = || reads.iter().filter_map(|r| r.1.as_ref());
            let ok = if Rc::ptr_eq(&old[a], &new[b]) {
                // the same object (a heap shared since, or a summary's object shared by its
                // replays): equal contents, so only the objects it refers to must map to
                // themselves
                let mut ok = true;
                match (whole, &*old[a]) {
                    (false, Obj::Scope { vars, parent }) => {
                        ok = self.opt_id(*parent, *parent);
                        for n in names() {
                            if let Some(v) = vars.get(n) {
                                crate::value::gc::value_ids(v, &mut |x| ok = ok && self.id(x, x));
                            }
                        }
                    }
                    (false, Obj::Instance { class, attrs }) => {
                        ok = self.id(*class, *class);
                        for n in names() {
                            if let Some(v) = attrs.get(n) {
                                crate::value::gc::value_ids(v, &mut |x| ok = ok && self.id(x, x));
                            }
                        }
                    }
                    (true, o) => crate::value::gc::obj_ids(o, &mut |x| ok = ok && self.id(x, x)),
                    _ => ok = false,
                }
                ok
            } else if whole {
                self.obj(&old[a], &new[b])
            } else {
                // only some variables of a scope (those, and the way to its parent) or some
                // attributes of an instance (those, and its class)
                let some = |me: &mut Self, get1: &dyn Fn(&Name) -> Option<&'a Value>, get2: &dyn Fn(&Name) -> Option<&'a Value>| {
                    names().all(|n| match (get1(n), get2(n)) {
                        (Some(x), Some(y)) => me.value(x, y),
                        (None, None) => true,
                        _ => false,
                    })
                };
                match (&*old[a], &*new[b]) {
                    (Obj::Scope { vars: v1, parent: p1 }, Obj::Scope { vars: v2, parent: p2 }) => self.opt_id(*p1, *p2) && some(self, &|n| v1.get(n), &|n| v2.get(n)),
                    (Obj::Instance { class: c1, attrs: v1 }, Obj::Instance { class: c2, attrs: v2 }) => self.id(*c1, *c2) && some(self, &|n| v1.get(n), &|n| v2.get(n)),
                    _ => false,
                }
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn opt_id(&mut self, a: Option<ObjId>, b: Option<ObjId>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => self.id(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    fn values(&mut self, a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.value(x, y))
    }

    fn map<K: PartialEq>(&mut self, a: &BTreeMap<K, Value>, b: &BTreeMap<K, Value>) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|((k1, x), (k2, y))| k1 == k2 && self.value(x, y))
    }

    fn closure(&mut self, a: &Closure, b: &Closure) -> bool {
        Rc::ptr_eq(&a.def, &b.def)
            && a.kind == b.kind
            && self.id(a.scope, b.scope)
            && self.opt_id(a.class, b.class)
            && self.values(&a.defaults, &b.defaults)
            && a.kw_defaults.len() == b.kw_defaults.len()
            && a.kw_defaults.iter().zip(&b.kw_defaults).all(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => self.value(x, y),
                (None, None) => true,
                _ => false,
            })
    }

    /// Equal values up to the renaming; tensor dims must also agree on where they came from
    /// (the text messages show).
    fn value(&mut self, a: &Value, b: &Value) -> bool {
        use Value::*;
        match (a, b) {
            (Ref(x), Ref(y)) => self.id(*x, *y),
            // (the other plain values: by equality, `plain_same`)
            _ if plain(a) => plain_same(a, b),
            (Tuple(x), Tuple(y)) => self.values(x, y),
            (Tensor(x), Tensor(y)) => {
                Rc::ptr_eq(x, y) || (x == y && x.shape.dims.iter().zip(&y.shape.dims).all(|(d, e)| d.why == e.why))
            }
            (Func(x), Func(y)) => self.closure(x, y),
            (Bound(r1, c1), Bound(r2, c2)) => self.value(r1, r2) && self.closure(c1, c2),
            (LibMethod(r1, n1), LibMethod(r2, n2)) => n1 == n2 && self.value(r1, r2),
            (Super(c1, v1), Super(c2, v2)) => self.id(*c1, *c2) && self.value(v1, v2),
            (Gen(c1, a1, k1), Gen(c2, a2, k2)) => {
                self.closure(c1, c2)
                    && self.values(a1, a2)
                    && k1.len() == k2.len()
                    && k1.iter().zip(k2.iter()).all(|((n1, x), (n2, y))| n1 == n2 && self.value(x, y))
            }
            (Cond(x), Cond(y)) => x == y,
            (Range(a1, b1, c1), Range(a2, b2, c2)) => a1 == a2 && b1 == b2 && c1 == c2,
            _ => false,
        }
    }

    fn obj(&mut self, a: &Obj, b: &Obj) -> bool {
        use Obj::*;
        match (a, b) {
            (List(x), List(y)) => self.values(x, y),
            (Dict(x), Dict(y)) => x.len() == y.len() && x.iter().zip(y).all(|((k1, v1), (k2, v2))| self.value(k1, k2) && self.value(v1, v2)),
            (Instance { class: c1, attrs: a1 }, Instance { class: c2, attrs: a2 }) => self.id(*c1, *c2) && self.map(a1, a2),
            (Class { name: n1, def: d1, bases: b1, attrs: a1 }, Class { name: n2, def: d2, bases: b2, attrs: a2 }) => {
                n1 == n2
                    && match (d1, d2) {
                        (Some(x), Some(y)) => Rc::ptr_eq(x, y),
                        (Option::None, Option::None) => true,
                        _ => false,
                    }
                    && self.values(b1, b2)
                    && self.map(a1, a2)
            }
            (Layer(x), Layer(y)) => {
                x.kind == y.kind && x.label == y.label && x.span == y.span && self.map(&x.args, &y.args) && self.map(&x.attrs, &y.attrs)
            }
            (Container { kind: k1, items: i1, attrs: a1 }, Container { kind: k2, items: i2, attrs: a2 }) => {
                k1 == k2 && i1.len() == i2.len() && i1.iter().zip(i2).all(|((n1, x), (n2, y))| n1 == n2 && self.value(x, y)) && self.map(a1, a2)
            }
            (Scope { vars: v1, parent: p1 }, Scope { vars: v2, parent: p2 }) => {
                v1.len() == v2.len() && v1.iter().zip(v2.iter()).all(|((k1, x), (k2, y))| k1 == k2 && self.value(x, y)) && self.opt_id(*p1, *p2)
            }
            (Namespace { kind: k1, attrs: a1 }, Namespace { kind: k2, attrs: a2 }) => k1 == k2 && self.map(a1, a2),
            _ => false,
        }
    }
}
