//! The opaque tests a path took, remembered while what they read is unchanged.
//!
//! A configuration flag the analysis cannot know (`config.separate_cls`, an attribute set from
//! an unknown `config`) is tested again and again: in `__init__`, in `forward`, in each helper.
//! Each opaque test forks the path in two (`Interp::split`), and nothing tied the second fork
//! to the first: a path that built the layers for `"c2p" in self.pos_att_type` also ran the
//! code for its absence. Those paths are no execution of the program, and they multiplied:
//! three flags tested in five places made 2^15 combinations of 2^3 real ones, most of the work
//! on transformers' DeBERTa-like files.
//!
//! A test whose value depends only on a stored value is remembered with the side taken:
//! `Taken { root, attr, key, truth }` says that the test `key` of the value stored at `attr`
//! in object `root` (a scope's variable, an instance's or a namespace's attribute) was
//! `truth`. The same test again on the path is decided, while that value is unchanged:
//! - a store of `attr` in `root` forgets the tests of it (`State::get_mut_var`), a write of
//!   the whole object all its tests (`State::get_mut`, and the heap writes of joins, replays
//!   and the dead-object sweep);
//! - a mutation through an unknown value (`cfg.flags.append(x)`, `cfg.x = 1` on an unknown
//!   `cfg`, `setattr`) may reach any of them through an alias: it forgets every test;
//! - paths merged keep the tests both took alike (`State::absorb`).
//!
//! Only unknown values and unknown strings and floats are remembered (`rememberable`): a
//! tensor's truth changes with in-place ops the heap does not see as stores.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{ObjId, Value};
use crate::ir::Name;

thread_local! {
    /// The stores into objects while a summarised call runs (`note_store`), oldest first:
    /// a replay of the call forgets the caller's tests of them, as the run did (a store of an
    /// unknown value over an unknown one changes no object the summary compares).
    static STORES: RefCell<Option<Vec<(ObjId, Option<Name>)>>> = const { RefCell::new(None) };
    /// The first object the innermost summarised call made: no call running needs the stores
    /// into it or later ones (each keeps those into objects from before it).
    static FLOOR: Cell<ObjId> = const { Cell::new(ObjId::MAX) };
    /// How many times a path forgot every test (`Tests::forget`): a replay of a call that
    /// did forgets the caller's.
    static FORGETS: Cell<u64> = const { Cell::new(0) };
}

/// A store of `name` in object `id` (`None`: the whole object), noted while summarised calls
/// run.
pub fn note_store(id: ObjId, name: Option<&Name>) {
    if id >= FLOOR.with(|f| f.get()) {
        return;
    }
    STORES.with(|s| {
        if let Some(v) = s.borrow_mut().as_mut() {
            v.push((id, name.cloned()));
        }
    });
}

/// Note stores from now on into objects before `l0`, the heap's length at a summarised
/// call's start: where the call's start in the log (`stores_since`), and the floor before
/// it (`end_stores` puts it back). The outermost call (`depth` 0) begins the log, and its end
/// ends it.
pub fn begin_stores(depth: u32, l0: ObjId) -> (usize, ObjId) {
    let floor = FLOOR.with(|f| f.replace(l0));
    STORES.with(|s| {
        let mut s = s.borrow_mut();
        if depth == 0 || s.is_none() {
            *s = Some(Vec::new());
        }
        (s.as_ref().map_or(0, |v| v.len()), floor)
    })
}

/// The stores from `start` on into objects before `l0`, each once.
pub fn stores_since(start: usize, l0: ObjId) -> Vec<(ObjId, Option<Name>)> {
    STORES.with(|s| {
        let s = s.borrow();
        let mut out: Vec<(ObjId, Option<Name>)> = s.as_ref().map(|v| v.iter().skip(start).filter(|(id, _)| *id < l0).cloned().collect()).unwrap_or_default();
        out.sort_unstable();
        out.dedup();
        out
    })
}

/// A summarised call ended: the floor before it (`begin_stores`) is back; when it was the
/// outermost (`depth` 0 again), no more stores are noted.
pub fn end_stores(depth: u32, floor: ObjId) {
    FLOOR.with(|f| f.set(floor));
    if depth == 0 {
        STORES.with(|s| *s.borrow_mut() = None);
    }
}

/// A new analysis: no store log, no forgets counted.
pub fn reset_taken() {
    STORES.with(|s| *s.borrow_mut() = None);
    FLOOR.with(|f| f.set(ObjId::MAX));
    FORGETS.with(|f| f.set(0));
}

/// How many times a path forgot every test so far.
pub fn forgets() -> u64 {
    FORGETS.with(|f| f.get())
}

/// A remembered test: the test `key` of the value at `attr` in `root` was `truth`. `serial`
/// orders the remembered tests (a call summary keys the ones from before its call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub root: ObjId,
    pub attr: Name,
    pub key: u64,
    pub truth: bool,
    pub serial: u64,
}

/// The tests a path remembers (few: shared between the paths that forked from one).
#[derive(Debug, Clone, Default)]
pub struct Tests(Option<Rc<Vec<Taken>>>);

/// At most this many tests are remembered on a path (the oldest are forgotten first).
const MAX_TESTS: usize = 64;

/// Whether a test of the value `v` may be remembered: a value no write the heap does not see
/// can change (an unknown one: its changes through aliases forget every test).
pub fn rememberable(v: &Value) -> bool {
    matches!(v, Value::Unknown | Value::Str(None) | Value::Float(None))
}

/// Whether a method named `name` may change its object in place (read off an unknown object:
/// it may be any remembered test's value, through an alias).
pub fn mutator(name: &str) -> bool {
    matches!(
        name,
        "append" | "extend" | "insert" | "remove" | "pop" | "popitem" | "clear" | "update" | "setdefault" | "add" | "discard" | "sort" | "reverse"
            | "difference_update" | "intersection_update" | "symmetric_difference_update" | "__setitem__" | "__delitem__" | "__setattr__" | "__delattr__"
            | "__iadd__" | "__ior__" | "__imul__"
    )
}

/// Whether a method named `name` leaves its object as it is (of a mapping, a sequence, a string
/// or a tensor): called on an unknown object, it changes no remembered test.
pub fn reader(name: &str) -> bool {
    matches!(
        name,
        "get" | "keys" | "values" | "items" | "copy" | "index" | "count" | "lower" | "upper" | "strip" | "lstrip" | "rstrip" | "split" | "rsplit"
            | "startswith" | "endswith" | "format" | "replace" | "join" | "find" | "rfind" | "encode" | "decode" | "isdigit" | "isalpha"
            | "size" | "dim" | "numel" | "to" | "type" | "float" | "long" | "int" | "bool" | "half" | "cpu" | "cuda" | "detach" | "clone"
            | "view" | "reshape" | "permute" | "transpose" | "contiguous" | "unsqueeze" | "squeeze" | "expand" | "flatten" | "sum" | "mean"
            | "max" | "min" | "__getitem__" | "__contains__" | "__len__" | "__eq__" | "to_dict" | "to_json_string" | "get_text_config"
    )
}

impl Tests {
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|t| t.is_empty())
    }

    /// The remembered test `key` of `attr` in `root`.
    pub fn get(&self, root: ObjId, attr: &Name, key: u64) -> Option<&Taken> {
        self.0.as_ref()?.iter().find(|t| t.root == root && t.key == key && t.attr == *attr)
    }

    pub fn remember(&mut self, t: Taken) {
        let v = Rc::make_mut(self.0.get_or_insert_with(Default::default));
        v.retain(|o| !(o.root == t.root && o.key == t.key && o.attr == t.attr));
        if v.len() >= MAX_TESTS {
            v.remove(0);
        }
        v.push(t);
    }

    fn retain(&mut self, keep: impl Fn(&Taken) -> bool) {
        if let Some(v) = &mut self.0
            && v.iter().any(|t| !keep(t))
        {
            Rc::make_mut(v).retain(keep);
        }
    }

    /// `attr` of `root` was stored.
    pub fn stored(&mut self, root: ObjId, attr: &Name) {
        self.retain(|t| !(t.root == root && t.attr == *attr));
    }

    /// `root` was written whole.
    pub fn written(&mut self, root: ObjId) {
        self.retain(|t| t.root != root);
    }

    /// Objects from `from` on were dropped or replaced where `dead`.
    pub fn dropped(&mut self, from: ObjId, dead: impl Fn(ObjId) -> bool) {
        self.retain(|t| t.root < from || !dead(t.root));
    }

    /// Something changed that may be any of them.
    pub fn forget(&mut self) {
        FORGETS.with(|f| f.set(f.get() + 1));
        self.0 = None;
    }

    /// Give the tests a replay added (serial `u64::MAX`) the serial `serial`.
    pub fn stamp(&mut self, serial: u64) {
        if let Some(v) = &mut self.0
            && v.iter().any(|t| t.serial == u64::MAX)
        {
            Rc::make_mut(v).iter_mut().filter(|t| t.serial == u64::MAX).for_each(|t| t.serial = serial);
        }
    }

    /// The tests remembered since `serial` (after it) of objects before `l0`.
    pub fn since(&self, serial: u64, l0: ObjId) -> Vec<Taken> {
        self.0.as_ref().map(|v| v.iter().filter(|t| t.serial > serial && t.root < l0).cloned().collect()).unwrap_or_default()
    }

    /// Keep the tests `o` remembers alike (a merge of two paths).
    pub fn meet(&mut self, o: &Tests) {
        match (&self.0, &o.0) {
            (Some(a), Some(b)) if Rc::ptr_eq(a, b) => {}
            (_, None) => self.0 = None,
            (None, _) => {}
            (Some(_), Some(b)) => {
                let b = b.clone();
                self.retain(|t| b.iter().any(|u| u.root == t.root && u.key == t.key && u.attr == t.attr && u.truth == t.truth));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(root: ObjId, attr: &str, truth: bool) -> Taken {
        Taken { root, attr: Name::from(attr), key: 7, truth, serial: 1 }
    }

    fn sides(t: &Tests) -> Vec<(ObjId, bool)> {
        t.0.as_ref().map(|v| v.iter().map(|t| (t.root, t.truth)).collect()).unwrap_or_default()
    }

    #[test]
    fn a_store_forgets_the_tests_of_its_value_only() {
        let mut t = Tests::default();
        t.remember(taken(1, "wide", true));
        t.remember(taken(1, "deep", false));
        t.remember(taken(2, "wide", true));
        t.stored(1, &Name::from("wide"));
        assert_eq!(sides(&t), vec![(1, false), (2, true)]);
        t.written(1);
        assert_eq!(sides(&t), vec![(2, true)]);
        t.forget();
        assert!(t.is_empty());
    }

    #[test]
    fn merged_paths_keep_the_tests_both_took_alike() {
        let mut a = Tests::default();
        a.remember(taken(1, "wide", true));
        a.remember(taken(2, "wide", true));
        let mut b = Tests::default();
        b.remember(taken(1, "wide", false));
        b.remember(taken(2, "wide", true));
        a.meet(&b);
        assert_eq!(sides(&a), vec![(2, true)]);
        a.meet(&Tests::default());
        assert!(a.is_empty());
    }

    #[test]
    fn dead_objects_take_their_tests_along() {
        let mut t = Tests::default();
        for root in [3, 5, 8] {
            t.remember(taken(root, "x", true));
        }
        t.dropped(4, |id| id != 8);
        assert_eq!(sides(&t), vec![(3, true), (8, true)]);
    }

    #[test]
    fn the_oldest_test_goes_past_the_bound() {
        let mut t = Tests::default();
        for root in 0..MAX_TESTS + 1 {
            t.remember(taken(root, "x", true));
        }
        assert!(t.get(0, &Name::from("x"), 7).is_none());
        assert!(t.get(MAX_TESTS, &Name::from("x"), 7).is_some());
    }

    #[test]
    fn only_values_no_unseen_write_changes_are_remembered() {
        assert!(rememberable(&Value::Unknown) && rememberable(&Value::Str(None)));
        assert!(!rememberable(&Value::Bool(true)) && !rememberable(&Value::None));
    }
}
