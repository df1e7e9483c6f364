//! Files a program writes and reads back in the same run: `torch.save(obj, path)`, then
//! `torch.load(path)` of the same known path gives back what was saved (a preprocessing cache
//! saved by one function and loaded by the next: `torch.save(images, "images.pt")` ...
//! `images = torch.load("images.pt")`); likewise `np.save(path, array)` and `np.load` (NumPy
//! adds `.npy` to a path without it; an array is kept as its shape and dtype).
//!
//! What was saved lives in the module scope of the code that saved it, in the variable
//! [`FILES`] (a name no program can write): a tuple of `(path, value, format)` triples, the
//! format the library that wrote it (a file of the other one is not known). A variable of a
//! scope, it is carried, joined and summarised as every other one is: paths that saved
//! different things keep no value for that file. Only values with no object in them are kept
//! (tensors, ints, floats, strings, tuples of them), as copies: a tensor is a new leaf with
//! its shape, dtype, device and known values (`map_location` moves it); a later in-place op on
//! the program's tensor does not reach the file. Anything else saved (a dict, a model, a
//! list) leaves the file not known, and `torch.load` gives what `models::torch::checkpoint`
//! makes of an unknown file (the keys of a checkpoint, SHP312). A save to a path not known
//! may have replaced any file: every file is forgotten.
//!
//! What is not seen: a file written by other means between the save and the load (another
//! library, another process, a file deleted). The load gives what `torch.save` wrote.

use std::rc::Rc;

use super::{Ctx, Interp};
use crate::ir::Name;
use crate::models::arg;
use crate::value::*;

/// The module-scope variable holding the files saved so far.
pub const FILES: &str = "_<files>";

/// A copy of `v` as a file holds it, when it holds no object: tensors (new leaves, their shape
/// resolved), plain scalars and tuples of them.
fn stored(st: &State, v: &Value, depth: u8) -> Option<Value> {
    match v {
        Value::Tensor(t) => {
            let t = Tensor { shape: st.resolve(&t.shape), layout: None, registered: false, act: None, grad: Grad::Unknown, saved: None, ..(**t).clone() };
            Some(Value::Tensor(Rc::new(t)))
        }
        Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_) | Value::None => Some(v.clone()),
        Value::Tuple(items) if depth < 4 && items.len() <= 64 => {
            items.iter().map(|i| stored(st, i, depth + 1)).collect::<Option<Vec<_>>>().map(|v| Value::Tuple(Rc::new(v)))
        }
        _ => None,
    }
}

/// A call of the store: the library that writes or reads the file (its format, as the store
/// keeps it), and whether it saves.
fn file_call(f: &Value) -> Option<(&'static str, bool)> {
    let Value::Lib(p) = f else { return None };
    match &**p {
        "torch.save" => Some(("torch", true)),
        "torch.load" => Some(("torch", false)),
        "numpy.save" => Some(("numpy", true)),
        "numpy.load" => Some(("numpy", false)),
        _ => None,
    }
}

/// Whether calling `f` saves a file (`torch.save`, `np.save`): `note_saved` follows the call.
pub(super) fn saves(f: &Value) -> bool {
    matches!(file_call(f), Some((_, true)))
}

/// `v` loaded with `map_location` (`None`: not given): its tensors on the CPU for `"cpu"`, on
/// no known device for anything else.
fn relocated(v: &Value, map_location: Option<&Value>) -> Value {
    let Some(m) = map_location else { return v.clone() };
    let device = match m {
        Value::Str(Some(s)) if &**s == "cpu" => Some(Device::Cpu),
        _ => None,
    };
    match v {
        Value::Tensor(t) => Value::Tensor(Rc::new(Tensor { device, ..(**t).clone() })),
        Value::Tuple(items) => Value::Tuple(Rc::new(items.iter().map(|i| relocated(i, map_location)).collect())),
        v => v.clone(),
    }
}

impl Interp<'_> {
    /// The files saved so far on this path, as seen from the module of `ctx`.
    fn files(&self, st: &State, ctx: &Ctx) -> Vec<(Rc<str>, Value, Value)> {
        let Obj::Scope { vars, .. } = st.get_var(ctx.module_scope, FILES) else { return Vec::new() };
        match vars.get(FILES) {
            Some(Value::Tuple(triples)) => triples
                .iter()
                .filter_map(|p| match p {
                    Value::Tuple(t) if t.len() == 3 => Some((Rc::from(t[0].as_str()?), t[1].clone(), t[2].clone())),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Keep `files` as the files saved on this path. No file known is no variable at all: a
    /// path that saved what is not kept (a checkpoint dict) and one that saved nothing are the
    /// same state, and merge (ten epochs that each may save the best model are one path, not
    /// a thousand).
    fn set_files(&self, st: &mut State, ctx: &Ctx, files: Vec<(Rc<str>, Value, Value)>) {
        let name = Name::from(FILES);
        if files.is_empty() {
            let held = matches!(st.get_var(ctx.module_scope, FILES), Obj::Scope { vars, .. } if vars.contains_key(FILES));
            if held && let Obj::Scope { vars, .. } = st.get_mut_var(ctx.module_scope, &name) {
                vars.remove(&name);
            }
            return;
        }
        let pairs = files.into_iter().map(|(k, v, f)| Value::Tuple(Rc::new(vec![Value::Str(Some(k)), v, f]))).collect();
        if let Obj::Scope { vars, .. } = st.get_mut_var(ctx.module_scope, &name) {
            vars.insert(name, Value::Tuple(Rc::new(pairs)));
        }
    }

    /// `torch.load(path)` or `np.load(path)` of a file this path saved: what was saved
    /// (`None`: not such a call, or a file not known).
    pub(super) fn load_saved(&self, f: &Value, args: &[Value], kwargs: &[(Name, Value)], st: &mut State, ctx: &Ctx) -> Option<Value> {
        let Some((format, false)) = file_call(f) else { return None };
        let path = arg(args, kwargs, 0, if format == "torch" { "f" } else { "file" })?.as_str()?;
        let (_, v, _) = self.files(st, ctx).into_iter().find(|(k, _, w)| &**k == path && w.as_str() == Some(format))?;
        match (format, v) {
            ("torch", v) => Some(relocated(&v, arg(args, kwargs, 1, "map_location"))),
            ("numpy", Value::Tensor(t)) => Some(crate::models::numpy::new_array(st, t.shape.clone(), t.dtype)),
            _ => None,
        }
    }

    /// After `torch.save(obj, path)` or `np.save(path, arr)` on `st`: the file holds a copy
    /// of what was saved when it holds no object (an array: its shape and dtype), else it is
    /// not known; a path not known forgets every file.
    pub(super) fn note_saved(&self, f: &Value, args: &[Value], kwargs: &[(Name, Value)], st: &mut State, ctx: &Ctx) {
        let Some((format, true)) = file_call(f) else { return };
        let (path, obj) = match format {
            "torch" => (arg(args, kwargs, 1, "f"), arg(args, kwargs, 0, "obj")),
            _ => (arg(args, kwargs, 0, "file"), arg(args, kwargs, 1, "arr")),
        };
        let path = path.and_then(|v| v.as_str()).map(|p| match format {
            "numpy" if !p.ends_with(".npy") => Rc::<str>::from(format!("{p}.npy")),
            _ => Rc::<str>::from(p),
        });
        let mut files = self.files(st, ctx);
        let Some(path) = path else {
            if !files.is_empty() {
                self.set_files(st, ctx, Vec::new());
            }
            return;
        };
        files.retain(|(k, _, _)| *k != path);
        let kept = match format {
            "torch" => obj.and_then(|v| stored(st, v, 0)),
            _ => obj.and_then(|v| crate::models::numpy::array_of(st, v)).map(|t| Value::Tensor(Rc::new(Tensor::new(st.resolve(&t.shape), t.dtype)))),
        };
        if let Some(v) = kept {
            files.push((path, v, Value::Str(Some(Rc::from(format)))));
        }
        self.set_files(st, ctx, files);
    }
}
