//! `shape-lint summary`: a torchinfo-like table of each model call the script makes, computed
//! without running anything. Off unless asked (`Interp::summary` is `None`: one test per call).
//!
//! A *model call* is a call of a module that is a user `nn.Module` (or a container:
//! `nn.Sequential`, ...) made while no other model call is running. During it, each call of a
//! library layer is recorded with its output shape and parameter count, in call order: the leaf
//! modules torch's forward hooks see. The total counts the parameters of every module the model
//! holds. What the analysis cannot tell (an unknown attribute of a module, a layer whose
//! parameters are not modelled, a call that forks into several outcomes) makes the record
//! incomplete (`complete: false`, with the reasons), never a guess.

use std::collections::BTreeMap;

use super::interp::{Interp, Vals};
use crate::models;
use crate::models::torch::layers::params;
use crate::value::*;

/// One dimension as shown: a constant, or a symbolic (or unknown: `?`) size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimText {
    Int(i128),
    Sym(String),
}

/// One leaf layer call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerCall {
    /// The qualified name in the model (`features.0`), as `named_modules()` gives it.
    pub name: Option<String>,
    /// torch's class name (`Conv2d`).
    pub kind: String,
    /// The output's shape when it is one tensor.
    pub output_shape: Option<Vec<DimText>>,
    pub params: Option<i128>,
    /// How deep the layer sits in the model (1: an attribute of the model).
    pub depth: usize,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCall {
    pub model: String,
    pub output_shape: Option<Vec<DimText>>,
    pub total_params: Option<i128>,
    pub layers: Vec<LayerCall>,
    /// Why the record may differ from what torch's hooks see (empty: complete).
    pub incomplete: Vec<String>,
    /// The 1-based line of the call.
    pub line: usize,
    /// With `--model` (inputs of symbolic sizes): the rank of each `forward` input this record
    /// reads them at (`None`: not known), one record per reading.
    pub input_ranks: Option<Vec<Option<usize>>>,
    /// With `--model` (inputs of symbolic sizes): what the inputs of this reading must satisfy
    /// for `forward` to run, one contract per way through it (`engine::contract`).
    pub accepts: Vec<super::contract::Contract>,
}

/// What the interpreter keeps while recording.
#[derive(Debug, Default)]
pub struct SummaryLog {
    pub calls: Vec<ModelCall>,
    /// Module calls in progress (the open model call's and those inside it).
    depth: usize,
    open: Option<(ModelCall, Names)>,
    /// The path's branches when the open model call began (`Branches::digest`): a layer
    /// called on a path that took a choice since is on one of several paths inside the call.
    open_branches: u64,
    /// The layers run by the user subclasses of library layers being called.
    inner: Vec<ObjId>,
}

/// What `begin` found out about the callee, for `end`.
pub struct Begun {
    opened: bool,
    /// A leaf (a library layer, or a user module holding no module).
    leaf: Option<Leaf>,
    id: ObjId,
    /// The layers called inside this call that torch's hooks do not see as such: the layer a
    /// user subclass of a library layer runs, a Transformer encoder's layer and norm (its
    /// children are recorded from `Leaf::inside`).
    skip: Vec<ObjId>,
    /// The path took a choice inside the model call (`SummaryLog::open_branches`).
    forked: bool,
}

impl Interp<'_> {
    /// Before a call of `f`: a module call is counted, and one outside any model call opens a
    /// record. `None` when not recording or `f` is not a module.
    pub fn summary_begin(&mut self, st: &State, f: &Value, args: &[Value], kwargs: &[(crate::ir::Name, Value)], span: crate::ir::Span) -> Option<Begun> {
        let log = self.summary.as_ref()?;
        let Value::Ref(id) = f else { return None };
        let id = *id;
        if !models::is_module(self, st, id) {
            return None;
        }
        let depth = log.depth;
        // the layer a user subclass of a library layer runs (`super().forward(x)`): not a
        // module call for torch's hooks, which saw the subclass's
        let inner = log.inner.contains(&id);
        let is_layer = matches!(st.get(id), Obj::Layer(_));
        let mut skip = Vec::new();
        let leaf = match st.get(id) {
            _ if inner || depth == 0 => None,
            Obj::Layer(l) => match params::hooks(l) {
                params::Hooks::Leaf => Some(Leaf { kind: l.kind.to_string(), params: params::count(l), followed: true, inside: None }),
                params::Hooks::Silent => None,
                params::Hooks::Children => {
                    // (`nn.Transformer`'s encoder rows have the shape of its `src`)
                    let src = match models::arg(args, kwargs, 0, "src") {
                        Some(Value::Tensor(t)) => self.dims_text(st, &st.resolve(&t.shape)),
                        _ => None,
                    };
                    match inside_of(st, l, src) {
                        Some((i, held)) if i.certain() => {
                            skip = held;
                            Some(Leaf { kind: l.kind.to_string(), params: Some(i.params()), followed: true, inside: Some(i) })
                        }
                        i => Some(Leaf { kind: l.kind.to_string(), params: params::count(l).or(i.map(|(i, _)| i.params())), followed: false, inside: None }),
                    }
                }
            },
            Obj::Instance { class, attrs } => {
                let name = match st.get(*class) {
                    Obj::Class { name, .. } => name.to_string(),
                    _ => "?".into(),
                };
                let layer = match attrs.get(models::LAYER) {
                    Some(Value::Ref(l)) => match st.get(*l) {
                        Obj::Layer(l2) => Some((*l, l2)),
                        _ => None,
                    },
                    _ => None,
                };
                let child = attrs.iter().any(|(k, v)| &**k != models::LAYER && matches!(v, Value::Ref(c) if models::is_module(self, st, *c)));
                let own = own_params(st, attrs);
                match layer {
                    // `class Head(nn.Linear)`: a leaf of its own class, with the layer's parameters
                    Some((lid, l)) if !child => {
                        skip = vec![lid];
                        let followed = params::hooks(l) == params::Hooks::Leaf;
                        Some(Leaf { kind: name, params: params::count(l).zip(own).map(|(a, b)| a + b), followed, inside: None })
                    }
                    None if !child && !attrs.contains_key(models::LAYER) => Some(Leaf { kind: name, params: own, followed: true, inside: None }),
                    _ => None,
                }
            }
            // an empty `nn.Sequential()` (a ResNet block's identity shortcut) holds no module:
            // torch's hooks see it as a leaf, its output its input
            Obj::Container { kind: ContainerKind::Sequential, items, attrs } if items.is_empty() && !attrs.values().any(|v| matches!(v, Value::Ref(c) if models::is_module(self, st, *c))) => {
                Some(Leaf { kind: "Sequential".into(), params: Some(0), followed: true, inside: None })
            }
            _ => None,
        };
        let mut opened = false;
        if depth == 0 && !is_layer {
            let model = match st.get(id) {
                Obj::Instance { class, .. } => match st.get(*class) {
                    Obj::Class { name, .. } => name.to_string(),
                    _ => "?".into(),
                },
                Obj::Container { kind, .. } => format!("{kind:?}"),
                _ => "?".into(),
            };
            let mut names = Names::default();
            let mut incomplete = Vec::new();
            // the path took a branch the analysis could not decide: the call may be one that
            // never runs, with a model or inputs that never are. A branch on a size that takes
            // each of its values in one run (the full batches and the last one) is no choice:
            // each side's call runs
            if st.branches.iter().any(|b| !matches!(b, Branch::Sym(c) if self.syms.every_value(c))) {
                incomplete.push(ON_A_CHOICE.to_string());
            }
            let total = self.walk_modules(st, id, &mut names, &mut incomplete);
            let line = self.line(span);
            let call = ModelCall { model, output_shape: None, total_params: total, layers: Vec::new(), incomplete, line, input_ranks: None, accepts: Vec::new() };
            let log = self.summary.as_mut()?;
            log.open = Some((call, names));
            log.open_branches = st.branches.digest();
            opened = true;
        }
        if depth == 0 && !opened {
            return None;
        }
        let log = self.summary.as_mut()?;
        log.depth += 1;
        log.inner.extend(skip.iter().copied());
        let forked = !opened && st.branches.digest() != log.open_branches;
        Some(Begun { opened, leaf, id, skip, forked })
    }

    /// After the call `begin` saw: a layer's call is recorded, a model call closed.
    pub fn summary_end(&mut self, b: Begun, out: &Vals) {
        // the output's shape: `None` when it is not one tensor; not known (`known` false) for a
        // tensor of unknown rank or a value not known
        let (shape, known) = match &out[..] {
            [(st, Value::Tensor(t))] => {
                let s = self.dims_text(st, &st.resolve(&t.shape));
                let known = s.is_some();
                (s, known)
            }
            [(_, v)] => (None, !v.is_unknown()),
            _ => (None, true),
        };
        let Some(log) = self.summary.as_mut() else { return };
        log.depth = log.depth.saturating_sub(1);
        let keep = log.inner.len().saturating_sub(b.skip.len());
        log.inner.truncate(keep);
        let Some((call, names)) = log.open.as_mut() else { return };
        if out.len() > 1 {
            call.incomplete.push(format!("a call of {} has {} outcomes", call.model, out.len()));
        }
        if let Some(Leaf { kind, params, followed, inside }) = b.leaf {
            if b.forked {
                // each path inside the call records its own layers into the one record: the
                // list holds the layers of several paths, of which one runs
                call.incomplete.push(format!("a {kind} called on one of several paths inside {}", call.model));
            }
            if !followed {
                call.incomplete.push(format!("{kind} holds modules not followed"));
            }
            let name = names.first.get(&b.id).cloned();
            if name.is_none() {
                call.incomplete.push(format!("a {kind} not held by the model"));
            }
            if names.shared.contains(&b.id) {
                call.incomplete.push(format!("a {kind} held under two names"));
            }
            if params.is_none() {
                call.incomplete.push(format!("the parameters of {kind} are not known"));
            }
            if !known {
                call.incomplete.push(format!("the output of {kind} is not known"));
            }
            match (inside, &shape, &name) {
                // the children torch's hooks see, named under the layer's name
                (Some(i), Some(s), Some(n)) => match i.calls(n, s) {
                    Some(calls) => call.layers.extend(calls),
                    None => call.incomplete.push(format!("the input of {kind} is not known")),
                },
                (Some(_), _, _) => {}
                (None, _, _) => {
                    let depth = name.as_ref().map_or(1, |n| n.split('.').count());
                    call.layers.push(LayerCall { name, kind, output_shape: shape.clone(), params, depth });
                }
            }
        }
        if b.opened {
            let (mut call, _) = log.open.take().unwrap();
            call.output_shape = shape;
            if !known {
                call.incomplete.push(format!("the output of {} is not known", call.model));
            }
            if out.is_empty() {
                call.incomplete.push("the call raises".into());
            }
            log.calls.push(call);
        }
    }

    /// A shape as shown: `None` for an unknown rank.
    ///
    /// (In a script's run, a symbolic size is one the analysis does not know: `sizes_known`.)
    /// A size the path's facts fix (`batch == 16` on the path of the full batches, the last
    /// batch's on its own) is that number.
    fn dims_text(&self, st: &State, s: &Shape) -> Option<Vec<DimText>> {
        if s.prefix.is_some() {
            return None;
        }
        Some(
            s.dims
                .iter()
                .map(|d| match d.v.as_ref().map(|p| st.facts.normalize(p)) {
                    // the loader's batch size taken for a batch of data of unknown length: the
                    // size a run sees may be smaller
                    // (or over a standard split, whose length the files decide)
                    Some(p) if matches!(d.why.as_deref().and_then(crate::value::Origin::said_text), Some(crate::models::torch::data::FULL_BATCH_ASSUMED | crate::models::torch::data::SPLIT_BATCH)) => {
                        DimText::Sym(format!("≤{}", p.display(&self.syms)))
                    }
                    Some(p) => match p.as_const() {
                        Some(c) => DimText::Int(c),
                        None => DimText::Sym(p.display(&self.syms)),
                    },
                    None => DimText::Sym("?".into()),
                })
                .collect(),
        )
    }

    /// Name every module held by the module `id` and count its parameters, as
    /// `named_modules()` and `parameters()` do (a module held twice counts once, buffers not
    /// at all). `None` when some count is not known.
    fn walk_modules(&self, st: &State, id: ObjId, names: &mut Names, why: &mut Vec<String>) -> Option<i128> {
        let mut total = Some(0i128);
        let mut todo = vec![(id, String::new())];
        let mut seen = std::collections::BTreeSet::new();
        let join = |p: &str, k: &str| if p.is_empty() { k.to_string() } else { format!("{p}.{k}") };
        let add = |total: &mut Option<i128>, n: Option<i128>| *total = total.zip(n).map(|(a, b)| a + b);
        while let Some((id, prefix)) = todo.pop() {
            if seen.len() > 4096 {
                why.push("too many modules".into());
                return None;
            }
            if !prefix.is_empty() {
                match names.first.get(&id) {
                    // torch names a module held twice by the first name in registration order,
                    // which the attributes' order here does not keep
                    Some(n) if *n != prefix => {
                        names.shared.insert(id);
                    }
                    Some(_) => {}
                    None => {
                        names.first.insert(id, prefix.clone());
                    }
                }
            }
            if !seen.insert(id) {
                continue;
            }
            match st.get(id) {
                Obj::Layer(l) => {
                    let n = params::count(l).or_else(|| inside_of(st, l, None).map(|(i, _)| i.params()));
                    if n.is_none() {
                        why.push(format!("the parameters of {} are not known", l.kind));
                    }
                    add(&mut total, n);
                }
                Obj::Container { items, attrs, .. } => {
                    for (i, (k, v)) in items.iter().enumerate() {
                        match v {
                            Value::Ref(c) if models::is_module(self, st, *c) => {
                                let key = k.as_deref().map(str::to_string).unwrap_or_else(|| i.to_string());
                                todo.push((*c, join(&prefix, &key)));
                            }
                            _ => {
                                why.push("a container item not known to be a module".into());
                                total = None;
                            }
                        }
                    }
                    if attrs.iter().any(|(k, v)| !hidden(k) && (v.is_unknown() || matches!(v, Value::Ref(_) | Value::Tensor(_)))) {
                        why.push("a container with attributes".into());
                        total = None;
                    }
                }
                Obj::Instance { attrs, .. } => {
                    let own = own_params(st, attrs);
                    if own.is_none() {
                        for (k, v) in attrs {
                            if v.is_unknown() && !hidden(k) {
                                why.push(format!("an unknown attribute `{k}`"));
                            } else if matches!(v, Value::Tensor(t) if t.registered) {
                                why.push(format!("the size of the parameter `{k}` is not known"));
                            }
                        }
                    }
                    add(&mut total, own);
                    for (k, v) in attrs.iter().rev() {
                        if let Value::Ref(c) = v
                            && models::is_module(self, st, *c)
                        {
                            let name = if &**k == models::LAYER { prefix.clone() } else { join(&prefix, k) };
                            // the Transformer a model subclasses (`class Seq2Seq(nn.Transformer)`):
                            // its children are the model's own for the hooks (`encoder.layers.0...`)
                            if name.is_empty() && matches!(st.get(*c), Obj::Layer(l) if params::hooks(l) == params::Hooks::Children) {
                                names.first.entry(*c).or_default();
                            }
                            todo.push((*c, name));
                        }
                    }
                }
                _ => {}
            }
        }
        total
    }
}

/// Why a record opened on a path that took a choice the analysis could not decide may not be
/// the one the program makes (`paths_agree` drops it where that cannot be).
const ON_A_CHOICE: &str = "a call on one of several paths";

/// A script's model calls, the records of one call site on every path that reached it: where
/// those records are all the same (a call after `device = "cuda" if ... else "cpu"`, the
/// same model and sizes on both sides), whichever execution makes that call records that, so
/// it is one record, and the choices on the way do not make it incomplete. Where they differ,
/// each is kept, incomplete.
pub fn paths_agree(calls: &mut Vec<ModelCall>) {
    let key = |c: &ModelCall| (c.line, c.model.clone());
    let content = |c: &ModelCall| {
        let why: Vec<&String> = c.incomplete.iter().filter(|w| *w != ON_A_CHOICE).collect();
        (c.output_shape.clone(), c.total_params, c.layers.clone(), why.into_iter().cloned().collect::<Vec<_>>(), c.input_ranks.clone())
    };
    let mut agree: BTreeMap<(usize, String), bool> = BTreeMap::new();
    let mut first: BTreeMap<(usize, String), usize> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        let k = key(c);
        match first.get(&k) {
            None => {
                first.insert(k.clone(), i);
                agree.insert(k, true);
            }
            Some(&j) => {
                if content(&calls[j]) != content(c) {
                    agree.insert(k, false);
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    calls.retain_mut(|c| {
        let k = key(c);
        if !agree[&k] {
            return true;
        }
        c.incomplete.retain(|w| w != ON_A_CHOICE);
        // one record of identical ones (the paths, the iterations of a loop)
        seen.insert((k, format!("{:?}", content(c))))
    });
}

/// A script's model calls: a symbolic size in a record is a size the analysis does not know
/// (torch's hooks see a number there), which makes the record incomplete.
pub fn sizes_known(calls: &mut [ModelCall]) {
    let sym = |s: &Option<Vec<DimText>>| s.iter().flatten().find_map(|d| if let DimText::Sym(n) = d { Some(n.clone()) } else { None });
    for c in calls {
        let first = sym(&c.output_shape).or_else(|| c.layers.iter().find_map(|l| sym(&l.output_shape)));
        if let Some(n) = first {
            c.incomplete.push(format!("a size not known (`{n}`)"));
        }
    }
}

/// The modules of a model call by name (`named_modules()`): each one's first name here, and
/// those held under more than one name.
#[derive(Debug, Default)]
pub struct Names {
    first: BTreeMap<ObjId, String>,
    shared: std::collections::BTreeSet<ObjId>,
}

/// What torch's hooks see of a leaf call: its type, its parameters (`None`: not known), and
/// whether what it runs is followed (a Transformer layer's children are not).
struct Leaf {
    kind: String,
    params: Option<i128>,
    followed: bool,
    /// A Transformer layer, stack or model whose path is certain: the children its hooks see.
    inside: Option<Inside>,
}

/// Attributes that no program spells (`<layer>`, `<device>`) and the training flag.
fn hidden(k: &str) -> bool {
    k.starts_with('<') || k == "training"
}

/// The parameters a user module holds itself (`parameters(recurse=False)`): its registered
/// tensors that are not buffers (`register_buffer`, listed under `models::BUFFERS`). `None`
/// when one's size is not known, or an attribute is not known at all (it may be a parameter).
fn own_params(st: &State, attrs: &BTreeMap<crate::ir::Name, Value>) -> Option<i128> {
    let buffers = models::buffer_names(attrs)?;
    let mut n = 0i128;
    for (k, v) in attrs {
        match v {
            Value::Tensor(t) if t.registered && !buffers.contains(k) => {
                let shape = st.resolve(&t.shape);
                if shape.prefix.is_some() {
                    return None;
                }
                n += shape.dims.iter().map(|d| d.v.as_ref().and_then(|p| p.as_const())).product::<Option<i128>>()?;
            }
            v if v.is_unknown() && !hidden(k) => return None,
            _ => {}
        }
    }
    Some(n)
}

/// What a Transformer module calls inside that the hooks see: an encoder layer or stack, or a
/// whole `nn.Transformer` (its encoder stack run on `src`, whose shape is `src`, then its
/// decoder stack).
#[derive(Debug, Clone)]
enum Inside {
    Encoder(Encoder),
    Transformer { enc: Encoder, dec: Decoder, src: Option<Vec<DimText>> },
}

impl Inside {
    /// Whether the path torch takes, and so what the hooks see, is certain.
    fn certain(&self) -> bool {
        match self {
            Inside::Encoder(e) | Inside::Transformer { enc: e, .. } => e.fast.is_some(),
        }
    }

    /// `parameters()` of the module.
    fn params(&self) -> i128 {
        match self {
            Inside::Encoder(e) => e.params(),
            Inside::Transformer { enc, dec, .. } => enc.params() + dec.params(),
        }
    }

    /// The leaf calls the hooks record for the module named `name` whose output is `out`;
    /// `None` when an input's shape is not known.
    fn calls(&self, name: &str, out: &[DimText]) -> Option<Vec<LayerCall>> {
        match self {
            Inside::Encoder(e) => Some(e.calls(name, out)),
            Inside::Transformer { enc, dec, src } => {
                let mut v = enc.calls(&sub(name, "encoder"), src.as_ref()?);
                v.extend(dec.calls(&sub(name, "decoder"), out));
                Some(v)
            }
        }
    }
}

/// The child `k` of the module named `name` (the model itself when empty).
fn sub(name: &str, k: &str) -> String {
    if name.is_empty() { k.to_string() } else { format!("{name}.{k}") }
}

/// A linear layer's parameters.
fn linear(bias: bool, i: i128, o: i128) -> i128 {
    i * o + if bias { o } else { 0 }
}

/// A `LayerNorm(d)`'s parameters.
fn layer_norm(bias: bool, d: i128) -> i128 {
    d + if bias { d } else { 0 }
}

/// A leaf call the hooks record: `name` of `kind`, with this output and parameter count.
fn leaf_call(name: String, kind: &str, shape: &[DimText], params: i128) -> LayerCall {
    let depth = name.split('.').count();
    LayerCall { name: Some(name), kind: kind.into(), output_shape: Some(shape.to_vec()), params: Some(params), depth }
}

/// `out` with its last size the feed-forward width.
fn widened(out: &[DimText], ff: i128) -> Vec<DimText> {
    let mut wide = out.to_vec();
    if let Some(last) = wide.last_mut() {
        *last = DimText::Int(ff);
    }
    wide
}

/// A Transformer encoder layer (`nn.TransformerEncoderLayer`), alone or stacked
/// (`nn.TransformerEncoder`: `copies` deep copies, then its `norm`), and the path torch takes.
/// The slow path calls the layer's children as modules: in training mode (a module is, until
/// `.eval()`), or without `batch_first` or `bias`, or with an odd number of heads, or with
/// autograd recording and weights that require grad. Else, with autograd off, the fast path
/// calls none of them: the hooks see nothing inside a layer. (Torch also leaves the fast path
/// when hooks are attached to the layer itself, as torchinfo attaches them; the oracle's global
/// hooks are not.) What the hooks see of each layer on the slow path: `dropout1`, `norm1`,
/// `linear1`, `dropout`, `linear2`, `dropout2`, `norm2` (`norm1`, `dropout1`, `norm2`,
/// `linear1`, ... with `norm_first`); `self_attn` holds `out_proj` and is no leaf, and the
/// activation is a function.
#[derive(Debug, Clone)]
struct Encoder {
    d: i128,
    ff: i128,
    norm_first: bool,
    bias: bool,
    copies: i128,
    /// The stack's `norm` (a `LayerNorm`): its parameter count.
    norm: Option<i128>,
    /// A stack: its layers are `layers.0`, `layers.1`, ...
    stack: bool,
    /// Whether torch takes the fast path; `None` when not certain.
    fast: Option<bool>,
}

/// The sizes of a layer `l` (an encoder or decoder layer, or `nn.Transformer`, whose sizes
/// have defaults), as `(d_model, nhead, dim_feedforward, norm_first, bias, batch_first)`;
/// `None` when not known, or when the activation is a module (a child the hooks see; a name,
/// "gelu", or the default is a function).
fn sizes(l: &Layer) -> Option<(i128, i128, i128, bool, bool, bool)> {
    let defaults = &*l.kind == "Transformer";
    let int = |k: &str, default: i128| match l.args.get(k) {
        None if defaults => Some(default),
        None => None,
        Some(v) => v.as_const_int(),
    };
    let flag = |k: &str, default: bool| match l.args.get(k) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    };
    let (d, nhead) = (int("d_model", 512)?, int("nhead", 8)?);
    let ff = match l.args.get("dim_feedforward") {
        None => 2048,
        Some(v) => v.as_const_int()?,
    };
    if !matches!(l.args.get("activation"), None | Some(Value::Str(Some(_)))) || d <= 0 || ff <= 0 || nhead <= 0 {
        return None;
    }
    Some((d, nhead, ff, flag("norm_first", false)?, flag("bias", true)?, flag("batch_first", false)?))
}

/// What a Transformer layer, stack or model `l` calls inside, with the modules it calls that
/// the hooks see through its children instead (a stack's layer and norm objects); `src` is the
/// shape of `nn.Transformer`'s source. `None` when a size or the structure is not known.
fn inside_of(st: &State, l: &Layer, src: Option<Vec<DimText>>) -> Option<(Inside, Vec<ObjId>)> {
    match &*l.kind {
        "TransformerEncoderLayer" => Some((Inside::Encoder(encoder_layer(st, l, l)?), Vec::new())),
        "TransformerEncoder" => {
            let Some(Value::Ref(inner)) = l.args.get("encoder_layer") else { return None };
            let Obj::Layer(il) = st.get(*inner) else { return None };
            if &*il.kind != "TransformerEncoderLayer" {
                return None;
            }
            // the copies are in the stack's mode (the original layer object, held by no one,
            // is not)
            let mut e = encoder_layer(st, il, l)?;
            e.copies = l.args.get("num_layers")?.as_const_int().filter(|n| *n >= 1)?;
            e.stack = true;
            let mut inside = vec![*inner];
            match l.args.get("norm") {
                None | Some(Value::None) => {}
                Some(Value::Ref(n)) => match st.get(*n) {
                    Obj::Layer(nl) if &*nl.kind == "LayerNorm" => {
                        e.norm = Some(params::count(nl)?);
                        inside.push(*n);
                    }
                    _ => return None,
                },
                Some(_) => return None,
            }
            Some((Inside::Encoder(e), inside))
        }
        // its own encoder and decoder stacks, each with a final LayerNorm
        "Transformer" if !l.args.contains_key("custom_encoder") && !l.args.contains_key("custom_decoder") => {
            let layers = |k: &str| match l.args.get(k) {
                None => Some(6),
                Some(v) => v.as_const_int().filter(|n| *n >= 1),
            };
            let mut enc = encoder_layer(st, l, l)?;
            enc.copies = layers("num_encoder_layers")?;
            enc.stack = true;
            enc.norm = Some(layer_norm(enc.bias, enc.d));
            let dec = Decoder { d: enc.d, ff: enc.ff, norm_first: enc.norm_first, bias: enc.bias, copies: layers("num_decoder_layers")? };
            Some((Inside::Transformer { enc, dec, src }, Vec::new()))
        }
        _ => None,
    }
}

/// An encoder layer `l` in the mode of `mode` on the path `st`.
fn encoder_layer(st: &State, l: &Layer, mode: &Layer) -> Option<Encoder> {
    let (d, nhead, ff, norm_first, bias, batch_first) = sizes(l)?;
    let training = match mode.attrs.get("training") {
        None | Some(Value::Bool(true)) => Some(true),
        Some(Value::Bool(false)) => Some(false),
        Some(_) => None,
    };
    // (an activation given by name is "relu" or "gelu", which the fast path takes)
    let slow = match training {
        Some(t) => Some(t || !batch_first || !bias || nhead % 2 == 1),
        None => (!batch_first || !bias || nhead % 2 == 1).then_some(true),
    };
    // past those, the fast path runs unless autograd records: with grad off it certainly
    // does; with grad on and the weights requiring grad it certainly does not
    let fast = match (slow, st.grad_mode) {
        (Some(true), _) => Some(false),
        (Some(false), GradMode::Off(_)) => Some(true),
        (Some(false), GradMode::On) if !st.params_frozen => Some(false),
        _ => None,
    };
    Some(Encoder { d, ff, norm_first, bias, copies: 1, norm: None, stack: false, fast })
}

impl Encoder {
    /// `parameters()`: `self_attn` (`in_proj` and `out_proj`), `linear1`, `linear2`, `norm1`,
    /// `norm2`, for each copy, and the stack's norm.
    fn params(&self) -> i128 {
        let (b, d, ff) = (self.bias, self.d, self.ff);
        let attention = linear(b, d, 3 * d) + linear(b, d, d);
        let layer = attention + linear(b, d, ff) + linear(b, ff, d) + 2 * layer_norm(b, d);
        self.copies * layer + self.norm.unwrap_or(0)
    }

    /// The leaf calls the hooks record, for the layer or stack named `name` whose output is `out`.
    fn calls(&self, name: &str, out: &[DimText]) -> Vec<LayerCall> {
        let wide = widened(out, self.ff);
        let mut v = Vec::new();
        for i in (0..self.copies).filter(|_| self.fast == Some(false)) {
            let p = if self.stack { sub(name, &format!("layers.{i}")) } else { name.to_string() };
            let ln = layer_norm(self.bias, self.d);
            let (l1, l2) = (linear(self.bias, self.d, self.ff), linear(self.bias, self.ff, self.d));
            let order: [(&str, &str, &[DimText], i128); 7] = if self.norm_first {
                [("norm1", "LayerNorm", out, ln), ("dropout1", "Dropout", out, 0), ("norm2", "LayerNorm", out, ln), ("linear1", "Linear", &wide, l1), ("dropout", "Dropout", &wide, 0), ("linear2", "Linear", out, l2), ("dropout2", "Dropout", out, 0)]
            } else {
                [("dropout1", "Dropout", out, 0), ("norm1", "LayerNorm", out, ln), ("linear1", "Linear", &wide, l1), ("dropout", "Dropout", &wide, 0), ("linear2", "Linear", out, l2), ("dropout2", "Dropout", out, 0), ("norm2", "LayerNorm", out, ln)]
            };
            v.extend(order.iter().map(|(n, k, s, c)| leaf_call(sub(&p, n), k, s, *c)));
        }
        if let Some(n) = self.norm {
            v.push(leaf_call(sub(name, "norm"), "LayerNorm", out, n));
        }
        v
    }
}

/// `nn.Transformer`'s decoder stack: `copies` decoder layers, then its `norm` (a `LayerNorm`).
/// A decoder layer has no fast path: the hooks see `dropout1`, `norm1`, `dropout2`, `norm2`,
/// `linear1`, `dropout`, `linear2`, `dropout3`, `norm3` (`norm1`, `dropout1`, `norm2`,
/// `dropout2`, `norm3`, `linear1`, ... with `norm_first`); `self_attn` and `multihead_attn`
/// are no leaves.
#[derive(Debug, Clone)]
struct Decoder {
    d: i128,
    ff: i128,
    norm_first: bool,
    bias: bool,
    copies: i128,
}

impl Decoder {
    /// `parameters()`: two attentions, `linear1`, `linear2`, three norms for each copy, and the
    /// stack's norm.
    fn params(&self) -> i128 {
        let (b, d, ff) = (self.bias, self.d, self.ff);
        let attention = linear(b, d, 3 * d) + linear(b, d, d);
        let layer = 2 * attention + linear(b, d, ff) + linear(b, ff, d) + 3 * layer_norm(b, d);
        self.copies * layer + layer_norm(b, d)
    }

    /// The leaf calls the hooks record, for the stack named `name` whose output is `out`.
    fn calls(&self, name: &str, out: &[DimText]) -> Vec<LayerCall> {
        let wide = widened(out, self.ff);
        let ln = layer_norm(self.bias, self.d);
        let (l1, l2) = (linear(self.bias, self.d, self.ff), linear(self.bias, self.ff, self.d));
        let mut v = Vec::new();
        for i in 0..self.copies {
            let p = sub(name, &format!("layers.{i}"));
            let order: [(&str, &str, &[DimText], i128); 9] = if self.norm_first {
                [("norm1", "LayerNorm", out, ln), ("dropout1", "Dropout", out, 0), ("norm2", "LayerNorm", out, ln), ("dropout2", "Dropout", out, 0), ("norm3", "LayerNorm", out, ln), ("linear1", "Linear", &wide, l1), ("dropout", "Dropout", &wide, 0), ("linear2", "Linear", out, l2), ("dropout3", "Dropout", out, 0)]
            } else {
                [("dropout1", "Dropout", out, 0), ("norm1", "LayerNorm", out, ln), ("dropout2", "Dropout", out, 0), ("norm2", "LayerNorm", out, ln), ("linear1", "Linear", &wide, l1), ("dropout", "Dropout", &wide, 0), ("linear2", "Linear", out, l2), ("dropout3", "Dropout", out, 0), ("norm3", "LayerNorm", out, ln)]
            };
            v.extend(order.iter().map(|(n, k, s, c)| leaf_call(sub(&p, n), k, s, *c)));
        }
        v.push(leaf_call(sub(name, "norm"), "LayerNorm", out, ln));
        v
    }
}
