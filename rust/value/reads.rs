//! The read log: which pre-existing heap objects (and scope variables) a call reads, for the
//! call summaries of `engine::memo`. `State::get`/`get_mut`/`get_var` note their reads here;
//! logging is free when no call is tracked.

use std::cell::RefCell;
use std::rc::Rc;

use super::ObjId;
use crate::ir::Name;

#[derive(Default)]
struct Tracker {
    /// Reads, in order, for all active frames (each frame's part starts at its entry in
    /// `starts`).
    log: Vec<Read>,
    /// Per active frame: where its part of `log` starts, and the heap length when it began
    /// (objects from there on are the frame's own: reading them is not a dependency of any
    /// frame, since each enclosing one began on a heap no longer); where its part of
    /// `deferred` starts; its serial number, unique on this thread until `reset_reads`.
    starts: Vec<(usize, ObjId, usize, u64)>,
    last_serial: u64,
    next_compact: usize,
    /// Reads of another run renamed, noted as they are (`note_renamed_later`) and written
    /// out into the log only when a frame's reads are collected (`end_reads`): most frames
    /// never are.
    deferred: Vec<Renamed>,
}

/// The reads `reads` of another run with the objects `pairs` renames renamed (the others left
/// out), kept only for objects before `bound` (the innermost frame's heap length when noted).
struct Renamed {
    reads: Rc<[Read]>,
    pairs: Vec<(ObjId, ObjId)>,
    bound: ObjId,
}

impl Renamed {
    fn write_out(&self, out: &mut Vec<Read>) {
        for (id, name) in self.reads.iter() {
            if let Some(&(_, m)) = self.pairs.iter().find(|p| p.0 == *id)
                && m < self.bound
            {
                out.push((m, name.clone()));
            }
        }
    }
}

thread_local! {
    static TRACKER: RefCell<Tracker> = RefCell::new(Tracker::default());
    /// The shape variables looked up or bound (`State::resolve`, `State::bind_shape`), in
    /// order for all active frames, and where each frame's part starts.
    static SHAPE_VARS: RefCell<(Vec<u32>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Note that the path's binding of the shape variable `var` was looked up or set: a call
/// summary keeps the caller's bindings of those alone (`engine::memo::Summary::shape_reads`).
/// Free when no call is tracked.
#[inline]
pub fn note_shape_var(var: u32) {
    SHAPE_VARS.with(|v| {
        let mut v = v.borrow_mut();
        if !v.1.is_empty() && v.0.last() != Some(&var) {
            v.0.push(var);
        }
    });
}

/// The mark of a pinned variable in the log (`note_pinned_var`): a variable number is far
/// below it.
pub const PINNED: u32 = 1 << 31;

/// Note that a refinement cache (`Interp::refined_vars`, `Interp::refined_dims`) was looked up
/// with a key that holds the shape variable `var`: what the call did depends on that
/// variable's own entries, so a summary of the call matches only a call with that very
/// variable (`engine::memo::Summary::pinned`), never one whose variable stands in its place.
/// Free when no call is tracked.
#[inline]
pub fn note_pinned_var(var: u32) {
    if var < PINNED {
        note_shape_var(var | PINNED);
    }
}

/// Note the shape variables `vars` (a replayed summary's lookups) for the enclosing calls.
pub fn note_shape_vars(vars: &[u32]) {
    SHAPE_VARS.with(|v| {
        let mut v = v.borrow_mut();
        if !v.1.is_empty() {
            v.0.extend_from_slice(vars);
        }
    });
}

/// One read of a pre-existing object: all of it, or one variable of a scope (a name lookup
/// reads only that name, so calls that read globals survive unrelated global assignments).
pub type Read = (ObjId, Option<Name>);

/// Note that object `id` was read (called by `State::get`/`get_mut`). Free when no call is
/// tracked.
pub fn note_read(id: ObjId) {
    note((id, None));
}

/// Note that the scope `id` was asked for the variable `name` (present or not; the empty name
/// reads only its parent link).
pub fn note_var_read(id: ObjId, name: &str) {
    if TRACKER.with(|t| t.borrow().starts.last().is_none_or(|f| id >= f.1)) {
        return;
    }
    note((id, Some(Rc::from(name))));
}

/// As `note_var_read`, for a name the caller holds already (no copy of the string).
pub fn note_name_read(id: ObjId, name: &Name) {
    if TRACKER.with(|t| t.borrow().starts.last().is_none_or(|f| id >= f.1)) {
        return;
    }
    note((id, Some(name.clone())));
}

/// The empty name, which reads only a scope's parent link or an instance's class link.
pub fn link_name() -> Name {
    thread_local! {
        static EMPTY: Name = Rc::from("");
    }
    EMPTY.with(|e| e.clone())
}

pub fn note(r: Read) {
    TRACKER.with(|t| t.borrow_mut().push(r));
}

/// The serial number of the innermost frame (0: none). Reads noted while it is the innermost
/// stay in its part of the log until it ends, so what was noted under a serial need not be
/// noted again under it.
pub fn frame_serial() -> u64 {
    TRACKER.with(|t| t.borrow().starts.last().map_or(0, |f| f.3))
}

/// Note the reads `reads` (of another run) of the objects `rename` gives for theirs, in one
/// go: a replayed summary's, or a skipped loop item's.
pub fn note_renamed(reads: &[Read], rename: impl Fn(ObjId) -> Option<ObjId>) {
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        if t.starts.is_empty() {
            return;
        }
        for (id, name) in reads {
            if let Some(m) = rename(*id) {
                t.push((m, name.clone()));
            }
        }
    });
}

/// As `note_renamed` with the renaming `pairs` (the reads of other objects are not noted),
/// written out only if some frame's reads are collected before all the frames end.
pub fn note_renamed_later(reads: &Rc<[Read]>, pairs: Vec<(ObjId, ObjId)>) {
    if pairs.is_empty() {
        return;
    }
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        let Some(&(_, bound, ..)) = t.starts.last() else { return };
        t.deferred.push(Renamed { reads: reads.clone(), pairs, bound });
    });
}

impl Tracker {
    #[inline(always)]
    fn push(&mut self, r: Read) {
        if self.starts.last().is_none_or(|f| r.0 >= f.1) || self.log.last() == Some(&r) {
            return;
        }
        self.log.push(r);
        if self.log.len() > self.next_compact {
            self.compact();
        }
    }

    /// Keep the innermost frame's part small: sort and deduplicate it.
    #[cold]
    fn compact(&mut self) {
        let start = self.starts.last().map_or(0, |f| f.0);
        let mut part = self.log.split_off(start);
        part.sort_unstable();
        part.dedup();
        self.log.extend(part);
        self.next_compact = self.log.len() * 2 + 4096;
    }
}

/// Start logging the reads of a call that begins on a heap of `heap_len` objects (it reads
/// only objects before that: the later ones are its own).
pub fn begin_reads(heap_len: ObjId) {
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        let n = t.log.len();
        let d = t.deferred.len();
        t.last_serial += 1;
        let serial = t.last_serial;
        t.starts.push((n, heap_len, d, serial));
    });
    SHAPE_VARS.with(|v| {
        let mut v = v.borrow_mut();
        let n = v.0.len();
        v.1.push(n);
    });
}

/// Stop logging the reads of the innermost call: its distinct reads, sorted. They stay in
/// the log, so the enclosing call reads them too.
pub fn end_reads() -> Vec<Read> {
    end_reads_and_shape_vars().0
}

/// [`end_reads`], with the shape variables the call looked up or bound
/// (`note_shape_var`), sorted and distinct (those pinned, `note_pinned_var`, marked with
/// [`PINNED`]: last). They stay in the log for the enclosing call too.
pub fn end_reads_and_shape_vars() -> (Vec<Read>, Vec<u32>) {
    let vars = SHAPE_VARS.with(|v| {
        let mut v = v.borrow_mut();
        let Some(start) = v.1.pop() else { return Vec::new() };
        let at = start.min(v.0.len());
        let mut part = v.0.split_off(at);
        part.sort_unstable();
        part.dedup();
        if v.1.is_empty() {
            v.0.clear();
        } else {
            v.0.extend(part.iter().copied());
        }
        part
    });
    let reads = TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        let Some((start, _, d, _)) = t.starts.pop() else { return Vec::new() };
        let at = start.min(t.log.len());
        let mut part = t.log.split_off(at);
        let d = d.min(t.deferred.len());
        for r in t.deferred.split_off(d) {
            r.write_out(&mut part);
        }
        part.sort_unstable();
        part.dedup();
        t.log.extend(part.iter().cloned());
        if t.starts.is_empty() {
            t.log.clear();
            t.deferred.clear();
        }
        part
    });
    (reads, vars)
}

/// Stop logging the reads of the innermost call without collecting them (its caller has no
/// use for them: the call is not summarised). They stay in the log, unsorted, so the
/// enclosing call reads them too; `end_reads` of an enclosing call sorts them then.
pub fn drop_reads() {
    SHAPE_VARS.with(|v| {
        let mut v = v.borrow_mut();
        if v.1.pop().is_some() && v.1.is_empty() {
            v.0.clear();
        }
    });
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        if t.starts.pop().is_some() && t.starts.is_empty() {
            t.log.clear();
            t.deferred.clear();
        }
    });
}

/// Forget every frame (a new analysis on this thread).
pub fn reset_reads() {
    TRACKER.with(|t| *t.borrow_mut() = Tracker::default());
    SHAPE_VARS.with(|v| *v.borrow_mut() = Default::default());
    WALKS.with(|w| w.set(0));
    OPTIMIZER_WALKS.with(|w| w.set(0));
}

thread_local! {
    static WALKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static OPTIMIZER_WALKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Note a look for every optimizer on the path (`optim::optimizers`). It reads the optimizers
/// it finds (noted as reads), and depends on which others exist: a call that looked is
/// summarised with the optimizers that existed at its start, and replayed only where the
/// caller has as many, each matched to one of them (`memo::Summary::optimizers`).
pub fn note_optimizer_walk() {
    OPTIMIZER_WALKS.with(|w| w.set(w.get() + 1));
}

/// The looks for every optimizer so far (`note_optimizer_walk`).
pub fn optimizer_walks() -> u64 {
    OPTIMIZER_WALKS.with(|w| w.get())
}

/// Note a walk over every object of the heap (`State::forget_values` and the like): what it
/// does depends on which objects exist, not only on those it read, so a call that walked is
/// not summarised (a replay would miss the objects the caller has and the first run had not).
pub fn note_walk() {
    WALKS.with(|w| w.set(w.get() + 1));
}

/// The walks over the whole heap so far (`note_walk`).
pub fn walks() -> u64 {
    WALKS.with(|w| w.get())
}

