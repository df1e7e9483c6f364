//! Opaque tests decided by the side the path took before (`value::taken`): the key of a test
//! whose truth is a function of one stored value, and its lookup and record.
//!
//! `if self.config.separate_cls:` in a helper, after `__init__` took the same test on this
//! path: the value stored at `config` in `self` is unchanged, so the test is decided.
//!
//! A call summary (`engine::memo`) whose run decided a test by a side remembered from before
//! its call keys that lookup: it is replayed only where the caller remembers the same
//! (`Consulted`). Its forks on tests of objects from before it are noted (`Fork`): a replay
//! keeps only the caller's side of each.

use std::hash::{Hash, Hasher};

use super::{Ctx, Interp};
use crate::ir::*;
use crate::value::taken::{Taken, rememberable};
use crate::value::*;

/// A test of the value stored at `attr` in `root`: `key` names the test (the attributes read
/// below the stored value, the comparison and its constant); `neg` when the test is the
/// negation of the keyed one (`not x`, `x is not None`, `"a" not in x`).
#[derive(Debug, Clone)]
pub struct TestKey {
    pub root: ObjId,
    pub attr: Name,
    pub key: u64,
    pub neg: bool,
}

/// A test decided while a summarised call ran: by the side remembered as `truth`, with the
/// `serial` of that memory, to tell the tests from before the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consulted {
    pub root: ObjId,
    pub attr: Name,
    pub key: u64,
    pub truth: bool,
    pub serial: u64,
}

/// A fork on an opaque test made while a summarised call ran, of the test `key` of the value
/// at `attr` in `root` (`neg` as in `TestKey`), at `span`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    pub span: Span,
    pub root: ObjId,
    pub attr: Name,
    pub key: u64,
    pub neg: bool,
}

impl Fork {
    /// The branch of the side a path that remembers the test as `truth` cannot take.
    pub fn ruled_out(&self, truth: bool) -> Branch {
        // (`Interp::split` pushes side 1 on the true side of the value)
        let side = truth != self.neg;
        Branch::Opaque(self.span, u32::from(!side), 2)
    }
}

/// Where an expression's value lives: an object, or a value stored in one (and that value).
enum Place {
    Obj(ObjId),
    Stored(ObjId, Name, Value),
}

impl<'a> Interp<'a> {
    /// The place of `e` on `st` (a name, or attributes read off one), and the attributes read
    /// below a stored value (`rest`). Reads what the evaluation of `e` read.
    fn stored_place(&self, e: &Expr, st: &State, ctx: &Ctx, rest: &mut Vec<Name>) -> Option<Place> {
        match &e.kind {
            ExprKind::Name(n) => {
                let mut scope = Some(ctx.scope);
                for _ in 0..256 {
                    let id = scope?;
                    match st.get_var(id, n) {
                        Obj::Scope { vars, parent } => match vars.get(n) {
                            Some(Value::Ref(o)) => return Some(Place::Obj(*o)),
                            Some(v) => return Some(Place::Stored(id, n.clone(), v.clone())),
                            None => scope = *parent,
                        },
                        _ => return None,
                    }
                }
                None
            }
            ExprKind::Attr(base, name) => match self.stored_place(base, st, ctx, rest)? {
                Place::Obj(id) => {
                    let attrs = match st.get_named(id, name) {
                        Obj::Instance { attrs, .. } | Obj::Namespace { attrs, .. } | Obj::Container { attrs, .. } | Obj::Class { attrs, .. } => attrs,
                        _ => return None,
                    };
                    // (an attribute the instance does not hold is the class's, or a property's)
                    match attrs.get(name)? {
                        Value::Ref(o) => Some(Place::Obj(*o)),
                        v => Some(Place::Stored(id, name.clone(), v.clone())),
                    }
                }
                stored @ Place::Stored(..) => {
                    rest.push(name.clone());
                    Some(stored)
                }
            },
            _ => None,
        }
    }

    /// Whether `receiver.name(...)` calls a method that may change an unknown value in place:
    /// `receiver` is, or is read off, an unknown value stored in a variable or an attribute
    /// (`cfg.merge_from_file(path)`, `self.cfg.freeze()`), and `name` is no method known to
    /// leave its object as it is.
    pub(super) fn unknown_receiver(&self, receiver: &Expr, name: &str, st: &State, ctx: &Ctx) -> bool {
        // (asked on every path, with tests or not: a summary of the call replays the forgetting)
        if crate::value::taken::reader(name) {
            return false;
        }
        let mut rest = Vec::new();
        match self.stored_place(receiver, st, ctx, &mut rest) {
            Some(Place::Stored(_, _, v)) => v.is_unknown(),
            _ => false,
        }
    }

    /// The key of `test` on `st`, when its truth is a function of one stored value that may be
    /// remembered (`value::taken::rememberable`): `x`, `x.a.b`, `not x`, `x OP constant` and
    /// `constant OP x` for one comparison.
    pub(super) fn test_key(&self, test: &Expr, st: &State, ctx: &Ctx) -> Option<TestKey> {
        let mut h = rustc_hash::FxHasher::default();
        let (place, neg) = match &test.kind {
            ExprKind::UnaryOp(UnaryOp::Not, x) => {
                let k = self.test_key(x, st, ctx)?;
                return Some(TestKey { neg: !k.neg, ..k });
            }
            ExprKind::Compare(l, ops) if ops.len() == 1 => {
                let (op, r) = &ops[0];
                let (x, c, flipped) = match (constant_key(l), constant_key(r)) {
                    (None, Some(c)) => (&**l, c, false),
                    (Some(c), None) => (r, c, true),
                    _ => return None,
                };
                let (op, neg) = match op {
                    CmpOp::NotEq => (CmpOp::Eq, true),
                    CmpOp::IsNot => (CmpOp::Is, true),
                    CmpOp::NotIn => (CmpOp::In, true),
                    op => (*op, false),
                };
                (op as u8).hash(&mut h);
                flipped.hash(&mut h);
                c.hash(&mut h);
                (x, neg)
            }
            _ => (test, false),
        };
        let mut rest = Vec::new();
        let Place::Stored(root, attr, v) = self.stored_place(place, st, ctx, &mut rest)? else { return None };
        if !rememberable(&v) {
            return None;
        }
        rest.hash(&mut h);
        Some(TestKey { root, attr, key: h.finish(), neg })
    }

    /// The side of `k` the path took before (what the test is, `neg` applied), logged for the
    /// summarised calls running.
    pub(super) fn recall(&mut self, st: &State, k: &TestKey) -> Option<bool> {
        let t = st.taken.get(k.root, &k.attr, k.key).filter(|t| t.serial > self.taken_floor);
        if self.summarising > 0
            && let Some(t) = t
        {
            self.consulted.push(Consulted { root: k.root, attr: k.attr.clone(), key: k.key, truth: t.truth, serial: t.serial });
        }
        t.map(|t| t.truth != k.neg)
    }

    /// A fork on the test `k` at `span`, noted for the summarised calls running.
    pub(super) fn forked(&mut self, k: &TestKey, span: Span) {
        if self.summarising > 0 {
            self.forks.push(Fork { span, root: k.root, attr: k.attr.clone(), key: k.key, neg: k.neg });
        }
    }

    /// What a summarised call that began at `start` (`Interp::memoised`: the lookups logged
    /// and the serial then, the store log's length, `forgets`) did with the opaque tests of
    /// objects before `l0`: the lookups of tests from before it, the first of each; the stores;
    /// whether it forgot every test. The logs end with the outermost call.
    pub(super) fn taken_of_call(&mut self, start: (usize, usize, u64, (usize, ObjId), u64), l0: ObjId) -> (Vec<(ObjId, Name, u64, bool)>, Vec<Fork>, Vec<(ObjId, Option<Name>)>, bool) {
        let (consulted0, forks0, serial0, stores0, forgets0) = start;
        let mut taken: Vec<(ObjId, Name, u64, bool)> = Vec::new();
        for c in &self.consulted[consulted0.min(self.consulted.len())..] {
            if c.serial <= serial0 && c.root < l0 && !taken.iter().any(|(r, a, k, _)| *r == c.root && *k == c.key && *a == c.attr) {
                taken.push((c.root, c.attr.clone(), c.key, c.truth));
            }
        }
        let stores = crate::value::taken::stores_since(stores0.0, l0);
        let forgot = crate::value::taken::forgets() != forgets0;
        // (a site that forked on two tests says no side; nor does a test of a value the call
        // stored, or may have changed: the caller's side may be of another value. Left out)
        let all = &self.forks[forks0.min(self.forks.len())..];
        let forks: Vec<Fork> = if all.is_empty() || forgot {
            Vec::new()
        } else {
            let mut at: rustc_hash::FxHashMap<Span, Option<&Fork>> = Default::default();
            for f in all {
                at.entry(f.span).and_modify(|g| if g.is_some_and(|g| g != f) { *g = None }).or_insert(Some(f));
            }
            let stored = |f: &Fork| stores.iter().any(|(id, name)| *id == f.root && name.as_ref().is_none_or(|n| *n == f.attr));
            let mut forks: Vec<Fork> = at.into_values().flatten().filter(|f| f.root < l0 && !stored(f)).cloned().collect();
            forks.sort_by_key(|f| f.span);
            forks
        };
        crate::value::taken::end_stores(self.summarising, stores0.1);
        if self.summarising == 0 {
            self.consulted.clear();
            self.forks.clear();
        }
        (taken, forks, stores, forgot)
    }

    /// Remember that the test `k` was `side` on `st`.
    pub(super) fn remember(&mut self, st: &mut State, k: &TestKey, side: bool) {
        self.taken_serial += 1;
        st.taken.remember(Taken { root: k.root, attr: k.attr.clone(), key: k.key, truth: side != k.neg, serial: self.taken_serial });
    }
}

/// A constant's key, for the constants a test compares with.
fn constant_key(e: &Expr) -> Option<u64> {
    let mut h = rustc_hash::FxHasher::default();
    match &e.kind {
        ExprKind::Const(Const::Str(s)) => (0u8, &**s).hash(&mut h),
        ExprKind::Const(Const::Int(i)) => (1u8, i).hash(&mut h),
        ExprKind::Const(Const::Bool(b)) => (2u8, b).hash(&mut h),
        ExprKind::Const(Const::None) => 3u8.hash(&mut h),
        ExprKind::Const(Const::Float(f)) => (4u8, f.to_bits()).hash(&mut h),
        _ => return None,
    }
    Some(h.finish())
}
