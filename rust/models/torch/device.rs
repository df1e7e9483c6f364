//! Where tensors live and what their layers hold: devices (SHP201) and the dtypes that layers,
//! products and losses reject (SHP202).
//!
//! A tensor's device is set where it is born (creation functions: `device=`, else the CPU;
//! `DataLoader` batches: the CPU; `.to(...)`, `.cuda()`, `.cpu()`) and carried through every
//! other op by the dispatch (`around_*` below): a result whose model left its device unset is
//! on the device of the inputs (a method's: its receiver's, unless it is a 0-dim tensor).
//! A module's parameters are on the CPU and float32 unless built with `device=`/`dtype=` or
//! moved with `.to(...)`/`.cuda()`/`.half()` (`move_module`: the module, its submodules and
//! the tensors it holds). Where the source changes the defaults (`set_default_device`,
//! `set_default_dtype`, `with torch.device(...)`) or runs under `autocast`, the defaults are
//! not known (`Defaults`).
//!
//! `torch.cuda.is_available()` is a condition the machine answers (`ModelCtx::flag`), the same
//! at every ask: a mismatch on its true side is reported `(when CUDA is available)`.

use std::cell::Cell;
use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::rules::device_dtype::DeviceMismatch;
use crate::shape::Tri;
use crate::value::*;

/// The attribute of a module object holding where its parameters were moved (a device string,
/// Unknown) and the one holding their dtype after a cast (a dtype, Unknown).
pub const DEVICE_ATTR: &str = "<device>";
pub const DTYPE_ATTR: &str = "<dtype>";
/// The attribute marking a module wrapped by `nn.DataParallel`, which scatters its inputs to the
/// module's devices: where it is moved is no precondition on its inputs.
pub const SCATTERED: &str = "<scattered>";

/// What the checked source does to torch's defaults (read from its text once per analysis).
#[derive(Clone, Copy, Default)]
pub struct Defaults {
    /// `set_default_device`, `set_default_tensor_type`, a `with torch.device(...)` block.
    pub device_changed: bool,
    /// `set_default_dtype`, `set_default_tensor_type`.
    pub dtype_changed: bool,
    /// `autocast` (mixed precision casts the inputs of layers and products).
    pub autocast: bool,
    /// Some `backward` is called: what autograd records is followed (`autograd.rs`); in a
    /// program without one no training-loop rule has anything to check, and the loops over
    /// blocks settle sooner without it.
    pub backward: bool,
}

thread_local! {
    static DEFAULTS: Cell<Defaults> = Cell::new(Defaults::default());
    /// A `forward` analysed on its own: its module may have been moved to any device first.
    static MODULES_ANYWHERE: Cell<bool> = const { Cell::new(false) };
}

/// The state of a new thread: torch's defaults, modules on known devices.
pub fn reset_thread() {
    DEFAULTS.with(|d| d.set(Defaults::default()));
    MODULES_ANYWHERE.with(|m| m.set(false));
}

/// Set whether the modules' parameters and buffers are on devices not known (a `forward`
/// analysed on its own); returns the previous setting.
pub fn modules_anywhere(on: bool) -> bool {
    MODULES_ANYWHERE.with(|m| m.replace(on))
}

/// Whether `forward` is analysed on its own (`modules_anywhere`): its module may have been
/// moved to any device, or switched to either mode, first.
pub fn anywhere() -> bool {
    MODULES_ANYWHERE.with(|m| m.get())
}

/// A parameter or buffer read off a module: on a device not known in a `forward` analysed on
/// its own.
pub fn read_off_module(t: &Rc<Tensor>) -> Option<Rc<Tensor>> {
    (t.registered && t.device.is_some() && MODULES_ANYWHERE.with(|m| m.get())).then(|| Rc::new((**t).clone().on(None)))
}

/// Read the defaults the checked file changes (at the start of its analysis).
pub fn set_defaults(source: &str) {
    DEFAULTS.with(|d| d.set(Defaults::default()));
    note_source(source);
}

/// Add the defaults another file of the project changes (when it is loaded).
pub fn note_source(source: &str) {
    note(defaults_of(source));
}

/// `note_source` for a file whose bytes hash to `hash` (`project::read_stamped`): its text is
/// read once per process (a large module that every analysis of a repository loads was read
/// again by each).
pub fn note_file(hash: u64, source: &str) {
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<rustc_hash::FxHashMap<u64, Defaults>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let kept = seen.lock().ok().and_then(|m| m.get(&hash).copied());
    let d = kept.unwrap_or_else(|| {
        let d = defaults_of(source);
        if let Ok(mut m) = seen.lock() {
            if m.len() >= 1 << 16 {
                m.clear();
            }
            m.insert(hash, d);
        }
        d
    });
    note(d);
}

fn note(n: Defaults) {
    DEFAULTS.with(|d| {
        let o = d.get();
        d.set(Defaults { device_changed: o.device_changed || n.device_changed, dtype_changed: o.dtype_changed || n.dtype_changed, autocast: o.autocast || n.autocast, backward: o.backward || n.backward })
    });
}

/// The defaults `source` changes, read off its text.
fn defaults_of(source: &str) -> Defaults {
    // (memchr's vectorised search: `str::contains` took 2% of a library corpus's run, eleven
    // scans of every loaded text)
    let bytes = source.as_bytes();
    let has = |p: &str| memchr::memmem::find(bytes, p.as_bytes()).is_some();
    // (most files call no `set_default_*`: one scan for the three)
    let set_default = has("set_default_");
    let tensor_type = set_default && has("set_default_tensor_type");
    Defaults {
        device_changed: (set_default && has("set_default_device")) || tensor_type || ["with torch.device", "DeviceMode", "init_module", "init_empty_weights"].iter().any(|p| has(p)),
        dtype_changed: (set_default && has("set_default_dtype")) || tensor_type,
        autocast: has("autocast"),
        backward: has("backward") || has("requires_grad"),
    }
}

fn defaults() -> Defaults {
    DEFAULTS.with(|d| d.get())
}

/// Whether the analysed sources call `backward` (`Defaults::backward`).
pub fn follows_autograd() -> bool {
    defaults().backward
}

/// Whether the source runs under `autocast` (mixed precision casts the inputs of layers and
/// products: their dtype checks are off).
pub fn autocast() -> bool {
    defaults().autocast
}

/// Where a new tensor is made when no `device=` says.
pub fn default_device() -> Option<Device> {
    (!defaults().device_changed).then_some(Device::Cpu)
}

/// The device a value names: a device string (`torch.device("cuda")` is the string `"cuda"`),
/// a CUDA index, a tensor's device.
pub fn named(v: &Value) -> Option<Device> {
    match v {
        Value::Str(Some(s)) => Device::parse(s),
        Value::Int(p) if p.as_const().is_some_and(|i| i >= 0) => Some(Device::Cuda),
        Value::Tensor(t) => t.device,
        _ => None,
    }
}

/// `torch.device(...)`: the device's string (`"cuda:0"`), when it names a known device.
pub fn construct(args: &[Value], kwargs: &[(Name, Value)]) -> Value {
    let first = args.first().or(kwargs.iter().find(|(k, _)| &**k == "type").map(|(_, v)| v));
    match first {
        Some(Value::Str(Some(s))) if Device::parse(s).is_some() => match args.get(1).and_then(|i| i.as_const_int()) {
            Some(i) if !s.contains(':') => Value::Str(Some(Rc::from(format!("{s}:{i}")))),
            _ => Value::Str(Some(s.clone())),
        },
        _ => Value::Unknown,
    }
}

/// The question `torch.cuda.is_available()` asks, as each answer reads in a message.
const CUDA: (&str, &str) = ("CUDA is available", "CUDA is not available");

/// `torch.cuda.is_available()`, `torch.backends.mps.is_available()`.
pub fn is_available(cx: &mut dyn ModelCtx, path: &str) -> Option<Value> {
    let c = match path {
        "torch.cuda.is_available" => cx.flag("cuda_available", CUDA),
        "torch.backends.mps.is_available" => cx.flag("mps_available", ("MPS is available", "MPS is not available")),
        _ => return None,
    };
    Some(Value::Cond(c))
}

/// Whether putting a tensor or a module on `dev` raises on this path: CUDA where the program
/// asked `torch.cuda.is_available()` and this path is the side where it is not ("Torch not
/// compiled with CUDA enabled", "No CUDA GPUs are available"). Such a path ends there: a
/// mismatch after it, on a line it never reaches, is not reported for it.
pub fn unreachable_device(cx: &dyn ModelCtx, st: &State, dev: Option<Device>) -> bool {
    // (the path took the other side of the question)
    dev == Some(Device::Cuda) && cx.syms().asked(CUDA).is_some_and(|c| st.branch_decides(&c) == Tri::False)
}

/// The tensors among values (one level into tuples and lists).
pub fn tensors_in<'v>(st: &State, vals: impl Iterator<Item = &'v Value>) -> Vec<Rc<Tensor>> {
    let mut out = Vec::new();
    for v in vals {
        match v {
            Value::Tensor(t) => out.push(t.clone()),
            Value::Tuple(items) => out.extend(items.iter().filter_map(|i| if let Value::Tensor(t) = i { Some(t.clone()) } else { None })),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(items) => out.extend(items.iter().filter_map(|i| if let Value::Tensor(t) = i { Some(t.clone()) } else { None })),
                // a list a loop appended to: its item stands for each (`value::alike`)
                o => {
                    if let Some(Value::Tensor(t)) = crate::value::alike::item_of(o) {
                        out.push(t.clone());
                    }
                }
            },
            _ => {}
        }
    }
    out
}

/// Not 0-dim for certain (a known dim, or a rank not known but at least one).
fn nonscalar(st: &State, t: &Tensor) -> bool {
    !st.resolve(&t.shape).dims.is_empty()
}

/// The device of an op's result from its inputs: the device of the tensors that are not 0-dim
/// when they all agree (torch moves a 0-dim CPU tensor to the others), else of all of them.
pub fn common(st: &State, ts: &[Rc<Tensor>]) -> Option<Device> {
    let big: Vec<&Rc<Tensor>> = ts.iter().filter(|t| nonscalar(st, t)).collect();
    let pool: Vec<&Rc<Tensor>> = if big.is_empty() { ts.iter().collect() } else { big };
    let first = pool.first()?.device?;
    pool.iter().all(|t| t.device == Some(first)).then_some(first)
}

/// Two of these tensors that cannot meet: on known different devices, one not 0-dim, and the
/// other not a 0-dim CPU tensor (torch's exception for CPU scalars).
fn clash<'t>(st: &State, ts: &'t [(String, Rc<Tensor>)]) -> Option<(&'t (String, Rc<Tensor>), &'t (String, Rc<Tensor>))> {
    for a in ts {
        for b in ts {
            let (Some(da), Some(db)) = (a.1.device, b.1.device) else { continue };
            if da != db && nonscalar(st, &b.1) && (nonscalar(st, &a.1) || da != Device::Cpu) {
                return Some((a, b));
            }
        }
    }
    None
}

/// SHP201 over an op's named tensor arguments. False when the path ends here (torch raises).
pub fn check_operands(cx: &mut dyn ModelCtx, st: &State, op: &str, ts: &[(String, Rc<Tensor>)], span: Span) -> bool {
    let Some((a, b)) = clash(st, ts) else {
        passed_entries(cx, st, ts.iter().map(|(_, t)| t));
        return true;
    };
    let (a, b) = (a.clone(), b.clone());
    let op = op.to_string();
    // the tensor on the CPU is the one left behind: reported where it entered the code, if
    // it was handed in (`model(images)`), else here
    let cpu = if a.1.device == Some(Device::Cpu) { &a.1 } else { &b.1 };
    let mut passes = true;
    for site in cx.entry_sites(cpu, Some(span)) {
        let op = op.clone();
        passes &= cx.check(st, site, Tri::True, |cx| {
            (
                DeviceMismatch::Operands {
                    op,
                    a: a.0.clone(),
                    a_shape: cx.show_shape(st, &a.1.shape),
                    a_device: a.1.device.map(Device::name).unwrap_or("?").into(),
                    b: b.0.clone(),
                    b_shape: cx.show_shape(st, &b.1.shape),
                    b_device: b.1.device.map(Device::name).unwrap_or("?").into(),
                },
                Vec::new(),
            )
        });
    }
    passes
}

/// A mismatch is reported where the tensor entered the user's code (`entry_sites`): a path on
/// which these tensors meet without one passes that site (`ModelCtx::passes`), so that a
/// mismatch on another path (on CUDA only) is reported with its condition rather than as
/// failing on every path.
fn passed_entries<'t>(cx: &mut dyn ModelCtx, st: &State, ts: impl Iterator<Item = &'t Rc<Tensor>>) {
    for t in ts {
        for site in cx.entry_sites(t, None) {
            cx.passes(st, site);
        }
    }
}

/// SHP201 for a layer: each input tensor (and hidden state) on the device of its parameters.
pub fn check_layer(cx: &mut dyn ModelCtx, st: &State, op: &str, params: Device, inputs: &[(&str, Rc<Tensor>)], span: Span) -> bool {
    for (what, t) in inputs {
        let fine = match t.device {
            None => true,
            Some(d) => d == params || (d == Device::Cpu && !nonscalar(st, t)),
        };
        if fine {
            passed_entries(cx, st, std::iter::once(t));
            continue;
        }
        let Some(d) = t.device else { continue };
        let mut passes = true;
        for site in cx.entry_sites(t, Some(span)) {
            let (op, what, t) = (op.to_string(), what.to_string(), t.clone());
            passes &= cx.check(st, site, Tri::True, |cx| {
                (DeviceMismatch::Layer { op, what, shape: cx.show_shape(st, &t.shape), device: d.name().into(), params: params.name().into() }, Vec::new())
            });
        }
        if !passes {
            return false;
        }
    }
    true
}

/// SHP201 for a tensor handed to NumPy (`.numpy()`, `np.array(t)`): on the CPU, or torch raises
/// "can't convert cuda:0 device type tensor to numpy". False when the path ends.
pub fn to_numpy(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, span: Span) -> bool {
    let Some(d) = t.device.filter(|d| *d != Device::Cpu) else { return true };
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DeviceMismatch::ToNumpy { op, shape: cx.show_shape(st, &t.shape), device: d.name().into() }, Vec::new()))
}

/// The results with the devices their models left unset set to `dev` (inside tuples too).
pub fn stamp(out: Vals, dev: Option<Device>) -> Vals {
    if dev.is_none() {
        return out;
    }
    out.into_iter().map(|(st, v)| (st, stamp_value(v, dev, false))).collect()
}

/// The results on `dev` whatever their models said (a move: `.to(...)`, `.cuda()`).
pub fn place(out: Vals, dev: Option<Device>) -> Vals {
    out.into_iter().map(|(st, v)| (st, stamp_value(v, dev, true))).collect()
}

fn stamp_value(v: Value, dev: Option<Device>, force: bool) -> Value {
    match v {
        Value::Tensor(t) if force || t.device.is_none() => {
            if t.device == dev {
                Value::Tensor(t)
            } else {
                Value::Tensor(Rc::new((*t).clone().on(dev)))
            }
        }
        Value::Tuple(items) if items.iter().any(|i| matches!(i, Value::Tensor(t) if force || t.device.is_none())) => {
            Value::Tuple(Rc::new(items.iter().map(|i| stamp_value(i.clone(), dev, force)).collect()))
        }
        v => v,
    }
}

/// What a move (`.to(...)` and its forms) does to the device and to the dtype: `None` keeps
/// it, `Some(None)` makes it not known.
pub type Move = (Option<Option<Device>>, Option<Option<DType>>);

/// The move a method call makes, when `name` is one (`to`, `cuda`, `cpu`, `float`, ...).
pub fn move_of(name: &str, args: &[Value], kwargs: &[(Name, Value)]) -> Option<Move> {
    let cast = |d: DType| Some((None, Some(Some(d))));
    match name {
        "cpu" => Some((Some(Some(Device::Cpu)), None)),
        "cuda" => Some((Some(Some(Device::Cuda)), None)),
        "float" => cast(DType::Float),
        "double" => cast(DType::Double),
        "half" => cast(DType::Half),
        "bfloat16" => cast(DType::BFloat16),
        "type" => match args.first().or(kwargs.iter().find(|(k, _)| &**k == "dst_type" || &**k == "dtype").map(|(_, v)| v)) {
            Some(Value::DType(d)) => cast(*d),
            None => None,
            Some(_) => Some((Some(None), Some(None))),
        },
        // `x.type_as(other)`: other's type, its device included
        "type_as" => match args.first() {
            Some(Value::Tensor(t)) => Some((Some(t.device), Some(t.dtype))),
            _ => Some((Some(None), Some(None))),
        },
        "to" => {
            let (mut dev, mut dt) = (None, None);
            let named_args = kwargs.iter().filter(|(k, _)| matches!(&**k, "device" | "dtype" | "other" | "tensor")).map(|(_, v)| v);
            for v in args.iter().chain(named_args) {
                match v {
                    Value::DType(d) => dt = Some(Some(*d)),
                    Value::Str(Some(s)) => dev = Some(Device::parse(s)),
                    Value::Int(_) => dev = Some(named(v)),
                    Value::Tensor(t) => {
                        dev = Some(t.device);
                        dt = Some(t.dtype);
                    }
                    // `non_blocking`, `copy`
                    Value::Bool(_) | Value::None => {}
                    _ => {
                        dev = Some(None);
                        dt = Some(None);
                    }
                }
            }
            Some((dev, dt))
        }
        _ => None,
    }
}

/// Move a module, its submodules and their parameters and buffers (`model.to(device)`,
/// `model.half()`): a cast changes only the floating-point ones, as `nn.Module` does. A plain
/// tensor attribute of a user module is neither (`Tensor::registered`): it stays.
pub fn move_module(cx: &dyn ModelCtx, st: &mut State, id: ObjId, mv: Move) {
    let (dev, dt) = mv;
    let dev_v = dev.map(|d| d.map(|d| Value::Str(Some(Rc::from(d.name())))).unwrap_or(Value::Unknown));
    let scattered: Name = Name::from(SCATTERED);
    let dt_v = dt.map(|d| d.map(Value::DType).unwrap_or(Value::Unknown));
    let move_tensor = |t: &Rc<Tensor>, scattered: bool| -> Value {
        let mut n = (**t).clone();
        if let Some(d) = dev {
            n.device = if scattered { None } else { d };
        }
        if let Some(d) = dt
            && t.dtype.is_none_or(|x| x.is_floating())
        {
            n.dtype = d;
        }
        Value::Tensor(Rc::new(n))
    };
    crate::models::for_each_module(cx, st, id, &mut |attrs, user| {
        let scattered = attrs.contains_key(&scattered);
        if let Some(v) = &dev_v {
            attrs.insert(Name::from(DEVICE_ATTR), if scattered { Value::Unknown } else { v.clone() });
        }
        if let Some(v) = &dt_v {
            attrs.insert(Name::from(DTYPE_ATTR), v.clone());
        }
        for v in attrs.values_mut() {
            // a user module's plain tensor attribute stays where it is (`self.pe = torch.zeros(...)`
            // without `register_buffer`)
            if let Value::Tensor(t) = v
                && (!user || t.registered)
            {
                *v = move_tensor(t, scattered);
            }
        }
    });
}

/// Where a module's parameters are: moved there, built there (`device=`), or the default.
pub fn module_device(attrs: &std::collections::BTreeMap<Name, Value>, args: &std::collections::BTreeMap<Rc<str>, Value>) -> Option<Device> {
    if MODULES_ANYWHERE.with(|m| m.get()) {
        return None;
    }
    match attrs.get(DEVICE_ATTR) {
        Some(v) => named(v),
        None => match args.get("device") {
            None | Some(Value::None) => default_device(),
            Some(v) => named(v),
        },
    }
}

/// The dtype of a module's parameters: cast to it, built with it (`dtype=`), or float32.
pub fn module_dtype(attrs: &std::collections::BTreeMap<Name, Value>, args: &std::collections::BTreeMap<Rc<str>, Value>) -> Option<DType> {
    match attrs.get(DTYPE_ATTR) {
        Some(v) => v.as_dtype(),
        None => match args.get("dtype") {
            None | Some(Value::None) => (!defaults().dtype_changed).then_some(DType::Float),
            Some(v) => v.as_dtype(),
        },
    }
}

/// The named tensor arguments of a library call: by the declared parameter names when the
/// registry has the API (`input`, `target`), else by position.
fn named_tensors(st: &State, api: Option<&crate::models::registry::Api>, recv: Option<&Value>, args: &[Value], kwargs: &[(Name, Value)]) -> Vec<(String, Rc<Tensor>)> {
    let mut out = Vec::new();
    if let Some(r) = recv {
        out.extend(tensors_in(st, std::iter::once(r)).into_iter().map(|t| ("self".to_string(), t)));
    }
    for (i, a) in args.iter().enumerate() {
        let name = api.and_then(|api| api.params.get(i)).map(|p| p.name.to_string()).unwrap_or_else(|| format!("argument {}", i + 1));
        out.extend(tensors_in(st, std::iter::once(a)).into_iter().map(|t| (name.clone(), t)));
    }
    for (k, v) in kwargs {
        out.extend(tensors_in(st, std::iter::once(v)).into_iter().map(|t| (k.to_string(), t)));
    }
    out
}

/// Ops whose tensor arguments must be on one device, by the registry family that models them
/// (the pointwise ops, matrix products, `cat`/`stack`) and by name (`masked_fill`, `where`),
/// minus the ones that read only a size or copy across devices.
fn colocated(family: &str, name: &str) -> bool {
    matches!(name, "masked_fill" | "masked_fill_" | "where")
        || matches!(family, "pointwise" | "matmul" | "join")
        && !matches!(name, "copy_" | "to" | "cuda" | "cpu" | "type_as" | "expand_as" | "view_as" | "reshape_as" | "set_" | "new_tensor" | "clone" | "detach" | "contiguous" | "pin_memory")
        && !name.starts_with("new_")
}

/// A `torch.`/`torch.nn.functional.` function call with its devices: the arguments checked to
/// be on one device (SHP201), the result on `device=` when given, else on the inputs' device,
/// else (a creation function) on the default device.
pub fn around_function(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span, model: impl FnOnce(&mut dyn ModelCtx, State, Vec<Value>, Vec<(Name, Value)>) -> Vals) -> Vals {
    // which results are probabilities (`activation.rs`, SHP308)
    let short = path.rsplit('.').next().unwrap_or(path);
    // a value the core does not follow, as the input of `torch.softmax`, `F.sigmoid` and the
    // like: a tensor of unknown shape on every path that goes on (torch raises for anything
    // else), so that its result is marked as probabilities
    let mut args = args;
    if matches!(path, "torch.softmax" | "torch.sigmoid" | "torch.nn.functional.softmax" | "torch.nn.functional.sigmoid") && matches!(args.first(), Some(Value::Unknown)) {
        args[0] = cx.any_tensor();
    }
    let src = args.first().cloned();
    // what autograd records of the results (`autograd.rs`, SHP309)
    let inputs = tensors_in(&st, args.iter().chain(kwargs.iter().filter(|(k, _)| &**k != "out").map(|(_, v)| v)));
    // (`zeros_like(x)` and the other `*_like` make a new tensor, that requires no grad unless
    // `requires_grad=True`, whatever `x` is)
    let source = if (inputs.is_empty() && !path.starts_with("torch.nn.functional.")) || short.ends_with("_like") {
        super::autograd::Source::Created { requires_grad: super::autograd::requires_grad_arg(&kwargs) }
    } else {
        super::autograd::Source::Inputs { params: false }
    };
    let unfollowed = super::autograd::any_unfollowed(args.iter().chain(kwargs.iter().map(|(_, v)| v)));
    let out = around_function_inner(cx, st, path, args, kwargs, span, model);
    let out = super::autograd::stamp(out, &inputs, source, short, span);
    let out = super::autograd::unfollowed(out, unfollowed);
    super::activation::after(out, short, src.as_ref(), span)
}

#[allow(clippy::too_many_arguments)]
fn around_function_inner(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span, model: impl FnOnce(&mut dyn ModelCtx, State, Vec<Value>, Vec<(Name, Value)>) -> Vals) -> Vals {
    let api = crate::models::resolve_api(path);
    let functional = path.starts_with("torch.nn.functional.");
    let short = path.rsplit('.').next().unwrap_or(path);
    let ts = named_tensors(&st, api, None, &args, &kwargs);
    let checked = (functional && short != "ctc_loss") || api.is_some_and(|a| colocated(a.family, short));
    if checked && ts.len() > 1 {
        let op = if functional { format!("F.{short}") } else { format!("torch.{short}") };
        if !check_operands(cx, &st, &op, &ts, span) {
            return Vec::new();
        }
    }
    // the dtypes torch rejects there (SHP202, `dtype.rs`), when the model reads every argument
    if api.is_some_and(|a| a.accepts(&args, &kwargs)) && !super::dtype::check_call(cx, &st, short, functional, &ts, &args, &kwargs, span) {
        return Vec::new();
    }
    let explicit = kwargs.iter().find(|(k, _)| &**k == "device").map(|(_, v)| named(v));
    if unreachable_device(cx, &st, explicit.flatten()) {
        return Vec::new();
    }
    let inputs: Vec<Rc<Tensor>> = ts.into_iter().map(|(_, t)| t).collect();
    let dev = if inputs.is_empty() { if functional { None } else { default_device() } } else { common(&st, &inputs) };
    let out = model(cx, st, args, kwargs);
    match explicit {
        Some(d) => place(out, d),
        None => stamp(out, dev),
    }
}

/// A tensor method call with its devices: a move (`to`, `cuda`, `cpu`, `type`) places the
/// result, other ops keep the receiver's device (a 0-dim receiver: the inputs').
#[allow(clippy::too_many_arguments)]
pub fn around_method(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span, model: impl FnOnce(&mut dyn ModelCtx, State, Value, Vec<Value>, Vec<(Name, Value)>) -> Vals) -> Vals {
    let mut st = st;
    // an in-place op: on a leaf that requires grad torch raises; on a tensor autograd saved,
    // the graphs that need it break (`autograd.rs`, SHP310)
    let written = match &recv {
        Value::Tensor(t) if super::autograd::changes_values(name) => match super::autograd::in_place(cx, &mut st, &format!(".{name}()"), t, span) {
            Some(w) => Some(w),
            None => return Vec::new(),
        },
        _ => None,
    };
    // which results are probabilities (`activation.rs`, SHP308)
    let src = recv.clone();
    // what autograd records of the results (`autograd.rs`, SHP309)
    let inputs = tensors_in(&st, std::iter::once(&recv).chain(args.iter()).chain(kwargs.iter().map(|(_, v)| v)));
    let source = match name {
        "detach" | "detach_" => super::autograd::Source::Detached,
        // `x.new_zeros(...)` and its kin: a new tensor
        _ if name.starts_with("new_") => super::autograd::Source::Created { requires_grad: super::autograd::requires_grad_arg(&kwargs) },
        "requires_grad_" => super::autograd::Source::RequiresGrad(match args.first().or(kwargs.iter().find(|(k, _)| &**k == "requires_grad").map(|(_, v)| v)) {
            None => Some(true),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => None,
        }),
        _ => super::autograd::Source::Inputs { params: false },
    };
    let mut out = around_method_inner(cx, st, recv, name, args, kwargs, span, model);
    if name.ends_with('_') {
        // the receiver changes in place, in every alias of it (`buf.copy_(w * 2)` makes it
        // part of autograd's graph)
        for (st, _) in out.iter_mut() {
            st.forget_grads();
            // (`p.requires_grad_(False)` on a parameter may freeze a module)
            st.params_frozen |= name == "requires_grad_";
        }
    }
    let out = if matches!(src, Value::Tensor(_)) { super::autograd::stamp(out, &inputs, source, name, span) } else { out };
    let out = match written {
        Some(w) => super::autograd::written(out, &w),
        None => out,
    };
    super::activation::after(out, name, Some(&src), span)
}

#[allow(clippy::too_many_arguments)]
fn around_method_inner(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span, model: impl FnOnce(&mut dyn ModelCtx, State, Value, Vec<Value>, Vec<(Name, Value)>) -> Vals) -> Vals {
    let Value::Tensor(r) = &recv else { return model(cx, st, recv, args, kwargs) };
    let r = r.clone();
    if let Some((dev, dt)) = move_of(name, &args, &kwargs) {
        if unreachable_device(cx, &st, dev.flatten()) {
            return Vec::new();
        }
        // `x.to(other)`: other's device and dtype
        if name == "to"
            && args.iter().any(|a| matches!(a, Value::Tensor(_)))
            && kwargs.iter().all(|(k, _)| matches!(&**k, "non_blocking" | "copy" | "memory_format"))
        {
            let t = Tensor { dtype: dt.flatten(), device: dev.flatten(), layout: None, values: None, registered: false, act: None, grad: Grad::Unknown, saved: None, shape: r.shape.clone() };
            return vec![(st, Value::Tensor(Rc::new(t)))];
        }
        let out = model(cx, st, recv, args, kwargs);
        return match dev {
            Some(d) => place(out, d),
            None => stamp(out, r.device),
        };
    }
    if name == "numpy" && !to_numpy(cx, &st, ".numpy()", &r, span) {
        return Vec::new();
    }
    if name == "pin_memory" {
        return place(model(cx, st, recv, args, kwargs), Some(Device::Cpu));
    }
    let api = crate::models::registry::lookup_in("torch.Tensor", name);
    let ts = named_tensors(&st, api, Some(&recv), &args, &kwargs);
    if ts.len() > 1 && api.is_some_and(|a| colocated(a.family, name)) && !check_operands(cx, &st, &format!(".{name}()"), &ts, span) {
        return Vec::new();
    }
    if api.is_some_and(|a| a.accepts(&args, &kwargs)) && !super::dtype::check_call(cx, &st, name, false, &ts, &args, &kwargs, span) {
        return Vec::new();
    }
    let explicit = kwargs.iter().find(|(k, _)| &**k == "device").map(|(_, v)| named(v));
    if unreachable_device(cx, &st, explicit.flatten()) {
        return Vec::new();
    }
    let dev = if nonscalar(&st, &r) && r.device.is_some() { r.device } else { common(&st, &ts.into_iter().map(|(_, t)| t).collect::<Vec<_>>()) };
    let out = model(cx, st, recv, args, kwargs);
    match explicit {
        Some(d) => place(out, d),
        None => stamp(out, dev),
    }
}

/// An operator between values with its devices (SHP201 when two tensors cannot meet; `@` of
/// two dtypes, SHP202), the result on their device.
pub fn around_binop(cx: &mut dyn ModelCtx, st: State, op: &str, matmul: bool, a: &Value, b: &Value, span: Span, model: impl FnOnce(&mut dyn ModelCtx, State) -> Vals) -> Vals {
    let (Value::Tensor(x), Value::Tensor(y)) = (a, b) else {
        let mut ts = tensors_in(&st, [a, b].into_iter());
        // (an operand not followed may be a tensor autograd records: the result's grad is then
        // not known, unless the other one is recorded)
        if a.is_unknown() || b.is_unknown() {
            ts.push(Rc::new(Tensor::new(Shape::known(Vec::new()), None)));
        }
        let dev = ts.first().and_then(|t| t.device);
        let out = super::autograd::stamp(model(cx, st), &ts, super::autograd::Source::Inputs { params: false }, op, span);
        return stamp(out, dev);
    };
    let ts = vec![("left operand".to_string(), x.clone()), ("right operand".to_string(), y.clone())];
    if !check_operands(cx, &st, op, &ts, span) {
        return Vec::new();
    }
    if matmul && !super::dtype::check_same(cx, &st, op, &ts, span) {
        return Vec::new();
    }
    let dev = common(&st, &[x.clone(), y.clone()]);
    let out = super::autograd::stamp(model(cx, st), &[x.clone(), y.clone()], super::autograd::Source::Inputs { params: false }, op, span);
    stamp(out, dev)
}

/// A result read off a tensor (`x[i]`, `x.T`): on its device.
pub fn on_device_of(out: Vals, x: &Value) -> Vals {
    match x {
        Value::Tensor(t) => stamp(out, t.device),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_text_is_read_once_per_process_and_adds_to_the_analysis_defaults() {
        // (a hash no real file has in this test process)
        let hash = 0x5eed_0f_a11_f11e;
        set_defaults("");
        note_file(hash, "with torch.autocast('cpu'):\n    y = f(x)\n");
        assert!(autocast() && !follows_autograd());
        // the same bytes (the same hash): what was read of them the first time
        set_defaults("");
        note_file(hash, "");
        assert!(autocast());
        // a file without a hash is read as it is, and adds to what is there
        note_source("loss.backward()\n");
        assert!(autocast() && follows_autograd());
        set_defaults("");
        assert!(!autocast() && !follows_autograd());
    }

    #[test]
    fn each_marker_changes_its_default_and_no_other() {
        // (code, device, dtype, autocast, backward)
        let cases = [
            ("torch.set_default_device('cuda')", true, false, false, false),
            ("torch.set_default_tensor_type(torch.cuda.FloatTensor)", true, true, false, false),
            ("torch.set_default_dtype(torch.float64)", false, true, false, false),
            ("with torch.device('meta'):\n    m = M()", true, false, false, false),
            ("with TorchFunctionMode(): pass  # DeviceMode", true, false, false, false),
            ("fabric.init_module()", true, false, false, false),
            ("with init_empty_weights(): pass", true, false, false, false),
            ("with torch.autocast('cuda'): pass", false, false, true, false),
            ("loss.backward()", false, false, false, true),
            ("x.requires_grad_()", false, false, false, true),
            ("my.set_default_value(3)", false, false, false, false),
            ("", false, false, false, false),
        ];
        for (code, device, dtype, autocast, backward) in cases {
            let d = defaults_of(&format!("import torch\n{code}\n"));
            assert_eq!((d.device_changed, d.dtype_changed, d.autocast, d.backward), (device, dtype, autocast, backward), "{code}");
        }
    }
}
