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
//! The renaming also takes the shape variables that start tensors' shapes (`[*a, 8]`, an input
//! of unknown rank) to the caller's (`[*b, 8]`), one to one (`iso::VarMap`): a decoder step's
//! hidden state, a batch of each iteration, each start with a variable of their own. A
//! variable may stand for another only when the first call found it unbound (the caller's must
//! be unbound too) and never looked up the caches of refinements with it (`Summary::pinned`:
//! a second run would find the other variable's entries there, or none, and make new
//! variables); a variable the call looked at stands for itself only. The replay renames them
//! in its result, the bindings it makes and the variables it notes for the enclosing calls.
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
mod iso;
pub use iso::{IdMap, Matched, same_reads, same_reads_again, same_reads_beside};
use iso::{Iso, VarMap};
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
    /// The shape variables from before the call that a match must find as they are, sorted:
    /// those it looked up a refinement cache with (`reads::note_pinned_var`: a second run
    /// with another variable would find that one's entries, or none, and make new variables),
    /// those the caller bound (the match compares their bindings) and the variables of those
    /// bindings. A tensor of an argument (or of an object read) whose shape starts with
    /// another variable, unbound where the first call's was unbound, matches the stored one
    /// up to a renaming of that variable (`Iso::value`), which a replay applies (`Ren::vars`).
    pinned: Vec<u32>,
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
pub(super) fn plain(v: &Value) -> bool {
    use Value::*;
    matches!(v, None | Unknown | Bool(_) | Int(_) | Float(_) | Str(_) | Lib(_) | Builtin(_) | Ref(_))
}

/// For a `plain` value `a`: what `Iso::value(a, b)` gives when the renaming keeps `a`'s
/// object (if any) in place.
pub(super) fn plain_same(a: &Value, b: &Value) -> bool {
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
        let keeps = map.len() <= IdMap::SMALL && map.iter().all(|(a, b)| a == b && b < heap.len());
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
    /// The shape variables of the first call renamed to the caller's (`Summary::pinned`):
    /// sorted pairs of different variables.
    vars: Vec<(u32, u32)>,
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
    /// Those of them it looked up a refinement cache with (`Summary::pinned`).
    pub pinned: Vec<u32>,
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
                if s.entry != *entry || s.label.as_ref().is_some_and(|l| l != label) || s.args.len() != args.len() || s.kwargs.len() != kwargs.len() || s.stack.as_ref().is_some_and(|k| **k != *stack) || s.context.as_ref().is_some_and(|k| !k.matches(at.0, at.1)) || !s.shape_reads.iter().all(|(v, b)| b.is_none() || st.shapes.get(v) == b.as_ref()) {
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
                    if !s.unbound_alike(&[], st) {
                        return None;
                    }
                    if s.same_taken(&map, st) {
                        return Some(Hit { summary: s.clone(), map, vars: Vec::new() });
                    }
                    taken_mismatch = true;
                    return None;
                }
                // a plain argument that differs fails the match whatever the renaming
                if s.args.iter().zip(args).any(|(a, b)| differ_outright(a, b)) || s.kwargs.iter().zip(kwargs).any(|((k1, a), (k2, b))| k1 != k2 || differ_outright(a, b)) {
                    return None;
                }
                let mut iso = Iso::new(&s.heap, &st.heap, &s.reads);
                iso.vars = Some(VarMap { pinned: &s.pinned, pairs: Vec::new() });
                let ok = iso.closure(&s.closure, c)
                    && s.args.iter().zip(args).all(|(a, b)| iso.value(a, b))
                    && s.kwargs.iter().zip(kwargs).all(|((k1, a), (k2, b))| k1 == k2 && iso.value(a, b))
                    && iso.drain()
                    // (each optimizer the callee and arguments do not reach is kept in place)
                    && s.optimizers.as_ref().is_none_or(|own| own.iter().all(|&o| iso.fwd.get(o).is_some() || iso.id(o, o)) && iso.drain());
                if !ok {
                    return None;
                }
                // (the variables the call looked at that no tensor compared showed stand for
                // themselves: none other may stand for one)
                let closed = iso.vars.as_mut().is_none_or(|m| m.pairs.iter().all(|(a, b)| a == b) || s.shape_reads.iter().map(|(v, _)| *v).chain(s.pinned.iter().copied()).all(|v| m.stands_for_itself(v)));
                if !closed {
                    return None;
                }
                let vars = iso.vars.as_ref().map(VarMap::renamed).unwrap_or_default();
                if !s.unbound_alike(&vars, st) {
                    return None;
                }
                let map = iso.take_map();
                if !s.same_taken(&map, st) {
                    taken_mismatch = true;
                    return None;
                }
                if vars.is_empty() {
                    s.remember(c, args, kwargs, &map, &st.heap);
                } else {
                    // (a later lookup that `same_as_last` took would rename no variable)
                    *s.last_match.borrow_mut() = Option::None;
                }
                Some(Hit { summary: s.clone(), map, vars })
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
        let shape_reads: Vec<(u32, Option<Shape>)> = r.shape_vars.iter().map(|v| (*v, r.entry_state.shapes.get(v).cloned())).collect();
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
            pinned: {
                let mut pinned = r.pinned;
                for (v, b) in &shape_reads {
                    if let Some(b) = b {
                        pinned.push(*v);
                        pinned.extend(b.prefix);
                    }
                }
                pinned.sort_unstable();
                pinned.dedup();
                pinned
            },
            shape_reads,
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
    /// Whether each shape variable the first call looked up unbound is unbound on the
    /// caller's path too, or the variable that stands for it (`vars`, sorted).
    fn unbound_alike(&self, vars: &[(u32, u32)], st: &State) -> bool {
        self.shape_reads.iter().all(|(v, b)| {
            b.is_some() || {
                let v = vars.binary_search_by_key(v, |p| p.0).map_or(*v, |i| vars[i].1);
                st.shapes.get(&v).is_none()
            }
        })
    }

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
            var_map: &self.vars,
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
                        Some(v) => shapes.insert(ren.var(*k), if ren.ids_only() { v.clone() } else { ren.shape(v) }),
                        Option::None => shapes.remove(&ren.var(*k)),
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
        if !s.shape_reads.is_empty() || !s.pinned.is_empty() {
            // (the caller's: the variables that stand for the first call's; and those pinned,
            // as pinned)
            let vars: Vec<u32> = s.shape_reads.iter().map(|(v, _)| ren.var(*v)).chain(s.pinned.iter().map(|v| v | crate::value::reads::PINNED)).collect();
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
        let ren = Ren { ids: &|id| Some(id), vars: Shift::default(), var_map: &[], syms: s.sym_shift(next_sym) };
        ren.branch(b)
    }

    /// The outcomes to record for the call on a path with these branches.
    pub fn outcomes(&self) -> &[Replayed] {
        &self.summary.outcomes
    }
}
