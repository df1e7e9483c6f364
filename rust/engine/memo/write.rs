//! What a summarised call wrote into the objects that existed before it, and how a replay
//! writes it again (`engine::memo`).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ir::Name;
use crate::value::*;

/// What a summarised call wrote into an object that existed before it, in the first call's
/// ids: a replay writes the same into the matching object.
pub(super) enum Write {
    /// The whole object, which the call read whole (so the match compared all of it).
    Whole(Rc<Obj>),
    /// Some attributes or variables of an object the call read name by name (an attribute
    /// store reads only its name): each name's new value, `None` when it was deleted.
    Names(Vec<(Name, Option<Value>)>),
}

/// The names whose values differ between two maps: each with its value in `new`.
fn changed_names(old: &BTreeMap<Name, Value>, new: &BTreeMap<Name, Value>) -> Vec<(Name, Option<Value>)> {
    let mut out: Vec<(Name, Option<Value>)> = new.iter().filter(|(k, v)| old.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    out.extend(old.keys().filter(|k| !new.contains_key(*k)).map(|k| (k.clone(), Option::None)));
    out
}

/// What replaying a change from `old` to `new` must write, when it can be replayed: the whole
/// object when the call read it whole, else the names of an object that only they changed.
pub(super) fn write_of(old: &Obj, new: &Rc<Obj>, read_whole: bool) -> Option<Write> {
    use Obj::*;
    if read_whole {
        return Some(Write::Whole(new.clone()));
    }
    Some(Write::Names(match (old, &**new) {
        (Instance { class: c1, attrs: a1 }, Instance { class: c2, attrs: a2 }) if c1 == c2 => changed_names(a1, a2),
        (Namespace { kind: k1, attrs: a1 }, Namespace { kind: k2, attrs: a2 }) if k1 == k2 => changed_names(a1, a2),
        (Container { kind: k1, items: i1, attrs: a1 }, Container { kind: k2, items: i2, attrs: a2 }) if k1 == k2 && i1 == i2 => changed_names(a1, a2),
        (Layer(l1), Layer(l2)) if l1.kind == l2.kind && l1.args == l2.args && l1.label == l2.label && l1.span == l2.span => changed_names(&l1.attrs, &l2.attrs),
        (Scope { vars: v1, parent: p1 }, Scope { vars: v2, parent: p2 }) if p1 == p2 => {
            let mut out = Vec::new();
            v2.diff(v1, |k, new, _| {
                out.push((k.clone(), new.cloned()));
                true
            });
            out
        }
        _ => return Option::None,
    }))
}

/// Write the names of a `Write::Names` into `o` (the object's kind was checked at the store).
pub(super) fn write_names(o: &mut Obj, names: &[(Name, Option<Value>)]) {
    use Obj::*;
    for (k, v) in names {
        match o {
            Instance { attrs, .. } | Namespace { attrs, .. } | Container { attrs, .. } | Layer(crate::value::Layer { attrs, .. }) => match v {
                Some(v) => {
                    attrs.insert(k.clone(), v.clone());
                }
                Option::None => {
                    attrs.remove(k);
                }
            },
            Scope { vars, .. } => match v {
                Some(v) => {
                    vars.insert(k.clone(), v.clone());
                }
                Option::None => {
                    vars.remove(k);
                }
            },
            List(_) | Dict(_) | Class { .. } => {}
        }
    }
}
