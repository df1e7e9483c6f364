//! Abstract values, the heap, and the per-path state.

pub mod alike;
pub mod branches;
pub mod gc;
pub mod heap;
pub mod join;
pub mod origin;
pub mod pmap;
pub mod reads;
pub mod taken;
pub mod walks;

pub use branches::Branches;
pub use heap::Heap;
pub use join::reset_lineages;
pub use origin::{Origin, Why};
pub use pmap::{PMap, Vars};

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ir::{ClassDef, FuncDef, Name, Span};
use crate::shape::{Cond, Facts, Formula, Poly};

pub type ObjId = usize;

/// The outcomes of evaluating something on one path: one `(State, Value)` per outcome; none
/// when every outcome raised.
pub type Vals = Vec<(State, Value)>;

/// A suggested fix a model attaches to its next check (`ModelCtx::suggest_fix`): in the call
/// at `at` (a layer's constructor, a `view`), replacing the int argument at position `pos` (or
/// keyword `kw`) by `want` would make that check pass; `alts` lists the candidates. The report
/// keeps a fix only when exactly one candidate is an int literal (or an expression of int
/// literals) of the checked file, and `check_source` only when the fixed text analyses clean
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixHint {
    pub at: Span,
    pub alts: Vec<FixAlt>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixAlt {
    pub pos: usize,
    pub kw: &'static str,
    pub want: i128,
}

/// One tensor dimension: a symbolic integer (or unknown) and where it came from.
#[derive(Debug, Clone)]
pub struct Dim {
    pub v: Option<Poly>,
    pub why: Option<Why>,
}

impl PartialEq for Dim {
    fn eq(&self, o: &Dim) -> bool {
        self.v == o.v
    }
}

impl Dim {
    pub fn known(v: Poly, why: Option<Why>) -> Dim {
        Dim { v: Some(v), why }
    }
    pub fn konst(c: i128) -> Dim {
        Dim { v: Some(Poly::constant(c)), why: None }
    }
    pub fn unknown() -> Dim {
        Dim { v: None, why: None }
    }
    pub fn as_const(&self) -> Option<i128> {
        self.v.as_ref().and_then(|p| p.as_const())
    }
}

/// A shape: `dims`, preceded by an unknown list of dimensions when `prefix` is a shape
/// variable (`[*, 120]`). The state may bind the variable later ("refined by first use").
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub prefix: Option<u32>,
    pub dims: Vec<Dim>,
}

impl Shape {
    pub fn known(dims: Vec<Dim>) -> Shape {
        Shape { prefix: None, dims }
    }
    pub fn rank(&self) -> Option<usize> {
        if self.prefix.is_none() { Some(self.dims.len()) } else { None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Float,
    Double,
    Half,
    BFloat16,
    Long,
    Int,
    Bool,
    /// `uint8` (images from `PILToTensor`/`read_image`, MNIST's `.data`, `.byte()`).
    Byte,
    /// A dtype the core does not tell apart (int8, int16, complex, ...).
    Other,
}

/// Where a tensor lives, as far as the device rules tell them apart (SHP201): the CPU, a
/// CUDA device (any index: only CPU against an accelerator is ever reported) or Apple's MPS.
/// Other devices (`meta`, `xla`, ...) are not modelled: a tensor on one has no known device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Cuda,
    Mps,
}

impl Device {
    /// The device a device string names (`"cuda"`, `"cuda:1"`, `"cpu"`, `"mps"`).
    pub fn parse(s: &str) -> Option<Device> {
        let kind = s.split(':').next().unwrap_or(s);
        match kind {
            "cpu" => Some(Device::Cpu),
            "cuda" => Some(Device::Cuda),
            "mps" => Some(Device::Mps),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
            Device::Mps => "mps",
        }
    }
}

impl DType {
    /// A floating-point dtype (`float16`, `bfloat16`, `float32`, `float64`).
    pub fn is_floating(self) -> bool {
        matches!(self, DType::Float | DType::Double | DType::Half | DType::BFloat16)
    }
    /// An integer dtype the core tells apart (`int64`, `int32`, `uint8`).
    pub fn is_integer(self) -> bool {
        matches!(self, DType::Long | DType::Int | DType::Byte)
    }
}

#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Shape,
    pub dtype: Option<DType>,
    /// The device, when known (`models/torch/device.rs`: set by creation, moves and the data
    /// models, carried through every other op by the dispatch).
    pub device: Option<Device>,
    /// The strides, when known (`None`: not known, never reported). Set by the few models whose
    /// strides are proven against torch (`models/torch/layout.rs`); `tensor()` leaves it `None`.
    pub layout: Option<Layout>,
    /// Known bounds of the (integer) values, `None` when not known (see [`IntBounds`]).
    pub values: Option<Rc<IntBounds>>,
    /// An `nn.Parameter` or a registered buffer: it moves with its module (`model.to(device)`);
    /// a plain tensor attribute of a module does not.
    pub registered: bool,
    /// The probabilities a softmax or sigmoid made, and where (SHP308): kept by the ops that
    /// only move or reshape values (`models/torch/activation.rs`).
    pub act: Option<(Act, crate::ir::Span)>,
    /// Whether autograd records it (`models/torch/autograd.rs`).
    pub grad: Grad,
    /// What of it autograd saved for backward, and whether an in-place op broke that (SHP310).
    pub saved: Option<Rc<Saved>>,
}

/// How often a path made each graph node since it was last freed (`State::made`), by node: 1
/// or 2. A persistent map (`pmap`): the states of a long run share it, so a path's first change
/// after a fork copies a few nodes, not every node the run made, and [`Made::grown_since`]
/// compares only the nodes that differ.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Made(pub PMap<Node, u8>);

impl Made {
    /// How often `n` was made (0, 1, or 2 for more).
    pub fn count(&self, n: &Node) -> u8 {
        self.0.get(n).copied().unwrap_or(0)
    }

    /// The nodes made more often here than in `before`, by how many more times, in node order;
    /// `None` when some node of `before` was freed since.
    pub fn grown_since(&self, before: &Made) -> Option<Vec<(Node, u8)>> {
        let mut out = Vec::new();
        let kept = self.0.diff(&before.0, |k, mine, theirs| {
            let (m, t) = (mine.copied().unwrap_or(0), theirs.copied().unwrap_or(0));
            if m > t {
                out.push((*k, m - t));
            }
            m >= t
        });
        kept.then_some(out)
    }
}

/// A graph node that saved tensors for backward: the span of the op that made it, and where the
/// layer it called was built (the default span for a function or an operator).
pub type Node = (Span, Span);

/// The tensors autograd saved for backward that a tensor's graph needs unchanged, by the span of
/// the op that saved them (`models/torch/autograd.rs`, SHP310).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Saved {
    /// This tensor's values (its storage) were saved by the op at this span (`h = tanh(...)`; a
    /// view of `h` too): an in-place op on it breaks every graph that needs them.
    pub storage: Option<Span>,
    /// The saved storages its graph needs (at most [`Saved::MAX`]: a longer list forgets some,
    /// which can only miss a report).
    pub needs: Vec<Span>,
    /// An in-place op (the first span) changed a storage its graph needs (saved at the second).
    pub broken: Option<(Span, Span)>,
    /// The library layers (by the span that built them) whose parameters its graph reaches,
    /// the ones `backward()` gives gradients (at most [`Saved::MAX_LAYERS`]; more: `layers_lost`).
    pub layers: Vec<Span>,
    /// Some layer of its graph is not in `layers`.
    pub layers_lost: bool,
    /// The nodes of its graph that saved tensors for backward, by the span of the op that made
    /// them (at most [`Saved::MAX`]: a longer list forgets some, which can only miss a report).
    /// A span names one node only while the path made it once since it was last freed
    /// (`State::made`); `backward()` frees those of its loss (SHP314).
    pub nodes: Vec<Node>,
    /// The `backward()` at the span freed the saved tensors of a node of its graph: a
    /// `backward()` through it raises.
    pub freed: Option<(Span, Node)>,
}

impl Saved {
    pub const MAX: usize = 8;
    pub const MAX_LAYERS: usize = 32;
}

/// Whether autograd records ops: on (the default), off since a span (`with torch.no_grad()`,
/// `@torch.no_grad()`, `torch.inference_mode()`), or not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradMode {
    On,
    Off(Span),
    Unknown,
}

/// Whether a tensor is part of an autograd graph (requires grad or has a grad_fn), for
/// `backward()` (SHP309): not known, tracked, or certainly not and why. Two untracked tensors
/// are equal whatever the reason (which only a message shows): paths and loop iterations that
/// differ only there merge.
#[derive(Debug, Clone, Copy, Eq, Default)]
pub enum Grad {
    #[default]
    Unknown,
    /// the result of an op autograd records
    Tracked,
    /// a leaf that requires grad (`requires_grad=True`, `nn.Parameter`), or a view of one: an
    /// in-place op on it raises outside `torch.no_grad()`
    Leaf,
    Untracked(NoGrad, Span),
}

impl PartialEq for Grad {
    fn eq(&self, o: &Grad) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(o)
    }
}

/// Why a tensor has no graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoGrad {
    /// computed while autograd was off (the span: where it was turned off)
    Mode,
    /// `.detach()`ed (the span: the call)
    Detached,
    /// computed only from tensors that need no gradient (the span: the last op)
    Constant,
}

/// A function whose outputs are probabilities, which some losses apply themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Softmax,
    Sigmoid,
}

impl Tensor {
    /// A tensor of this shape and dtype whose strides and values are not known.
    pub fn new(shape: Shape, dtype: Option<DType>) -> Tensor {
        Tensor { shape, dtype, device: None, layout: None, values: None, registered: false, act: None, grad: Grad::Unknown, saved: None }
    }
    /// A 0-d tensor of an integer dtype (one Python int, by `operator.index`).
    pub fn is_int_scalar(&self) -> bool {
        self.dtype.is_some_and(DType::is_integer) && self.shape.prefix.is_none() && self.shape.dims.is_empty()
    }
    /// The int that `operator.index(t)` gives (a slice bound, `int(t)`): of a 0-d integer
    /// tensor whose value is a known int of the path (`IntBounds::each`).
    pub fn index_value(&self) -> Option<Poly> {
        self.is_int_scalar().then(|| self.values.as_ref()?.each.clone())?
    }
    /// The same tensor with these value bounds.
    pub fn with_values(mut self, values: Option<Rc<IntBounds>>) -> Tensor {
        if values.is_some() {
            BOUNDED.with(|b| b.set(true));
        }
        self.values = values;
        self
    }
}

/// Bounds of the values of an integer tensor: every element is in `[lo, hi]`, and when
/// `lo_seen`/`hi_seen`, some element equals `lo`/`hi` (if the tensor has any element).
/// Where the values came from, for messages: `src` (`torch.arange`) at `span`.
///
/// Set only where exact (`arange`, `full`, `zeros`/`ones` of an integer dtype, integer
/// literals, `randint`, `randperm`) and kept only by the ops that keep the values (views,
/// `long()`, `clone()`, ...; indexing keeps the bounds but not `*_seen`; `x + k` shifts them).
/// Tensors are values here, not storage: an in-place write through any alias is not seen
/// on the others, so every mutation the engine sees (`x[i] = v`, `x += k`, `x.f_()`, `out=`,
/// `inplace=True`) and every call it cannot see into forgets all known values on the path
/// ([`State::forget_values`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IntBounds {
    pub lo: i128,
    pub hi: i128,
    pub lo_seen: bool,
    pub hi_seen: bool,
    pub src: &'static str,
    pub span: Span,
    /// Every element equals this int (a symbol of the path, within `[lo, hi]`): an element of
    /// `torch.randint(...)` taken by iteration (`for i in ix`), which a slice bound or `int()`
    /// reads as that int (`Tensor::index_value`).
    pub each: Option<Poly>,
}

impl IntBounds {
    pub fn exact(lo: i128, hi: i128, src: &'static str, span: Span) -> Option<Rc<IntBounds>> {
        (lo <= hi).then(|| Rc::new(IntBounds { lo, hi, lo_seen: true, hi_seen: true, src, span, each: None }))
    }
    /// The values lie in `[lo, hi]`, neither bound is known to be present.
    pub fn within(lo: i128, hi: i128, src: &'static str, span: Span) -> Option<Rc<IntBounds>> {
        (lo <= hi).then(|| Rc::new(IntBounds { lo, hi, lo_seen: false, hi_seen: false, src, span, each: None }))
    }
    /// One element of a tensor of these bounds, equal to `each` (whose facts bound it as these do).
    pub fn element(&self, each: Poly) -> Rc<IntBounds> {
        Rc::new(IntBounds { lo_seen: false, hi_seen: false, each: Some(each), ..self.clone() })
    }
    /// The same bounds, no longer known to be attained (a subset of the elements).
    pub fn subset(&self) -> Rc<IntBounds> {
        Rc::new(IntBounds { lo_seen: false, hi_seen: false, ..self.clone() })
    }
    /// Every value shifted by `k`.
    pub fn shifted(&self, k: i128) -> Option<Rc<IntBounds>> {
        let each = self.each.as_ref().and_then(|p| p.add_const(k));
        Some(Rc::new(IntBounds { lo: self.lo.checked_add(k)?, hi: self.hi.checked_add(k)?, each, ..self.clone() }))
    }
    /// A value certainly present that is outside `[0, n)` (`n == None`: `[0, inf)`) and is
    /// not `exempt`, assuming the tensor has an element: `Some(Some(v))` a bound that is
    /// attained, `Some(None)` every value in the bounds is such a value.
    pub fn outside(&self, n: Option<i128>, exempt: Option<i128>) -> Option<Option<i128>> {
        let bad = |v: i128| (v < 0 || n.is_some_and(|n| v >= n)) && exempt != Some(v);
        if self.hi_seen && bad(self.hi) {
            return Some(Some(self.hi));
        }
        if self.lo_seen && bad(self.lo) {
            return Some(Some(self.lo));
        }
        let all = (self.hi < 0 || n.is_some_and(|n| self.lo >= n)) && exempt.is_none_or(|e| e < self.lo || e > self.hi);
        all.then_some(None)
    }
}

thread_local! {
    /// Whether any tensor with known values was built (else forgetting them is a no-op).
    static BOUNDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a tensor with known values was built in this analysis: until then forgetting
/// values is a no-op, so call summaries recorded before must not be replayed after
/// (`engine::memo::EntryFacts`).
pub fn values_tracked() -> bool {
    BOUNDED.with(|b| b.get())
}

/// A new analysis: no tensor with known values yet.
pub fn reset_values_tracking() {
    BOUNDED.with(|b| b.set(false));
}

/// What a path-wide change does to a tensor ([`State::forget_values`],
/// [`State::forget_grads`], [`State::replace_tensor`]): the value it becomes, `None` when it
/// stays.
type Forget<'f> = &'f dyn Fn(&Rc<Tensor>) -> Option<Value>;

fn no_values(t: &Rc<Tensor>) -> Option<Value> {
    t.values.is_some().then(|| Value::Tensor(Rc::new(Tensor { values: None, ..(**t).clone() })))
}

/// (an integer or bool tensor never requires grad: it stays untracked)
fn no_untracked(t: &Rc<Tensor>) -> Option<Value> {
    may_track(t).then(|| Value::Tensor(Rc::new(Tensor { grad: Grad::Unknown, ..(**t).clone() })))
}

fn may_track(t: &Tensor) -> bool {
    matches!(t.grad, Grad::Untracked(..)) && t.dtype.is_none_or(|d| d.is_floating())
}

/// `v` with its tensors changed by `f`; `None` when none changes.
fn forget_in(v: &Value, f: Forget) -> Option<Value> {
    let many = |vs: &[Value]| -> Option<Vec<Value>> {
        let k = vs.iter().position(|v| forget_in(v, f).is_some())?;
        Some(vs.iter().enumerate().map(|(i, v)| if i < k { v.clone() } else { forget_in(v, f).unwrap_or_else(|| v.clone()) }).collect())
    };
    match v {
        Value::Tensor(t) => f(t),
        Value::Tuple(items) => many(items).map(|v| Value::Tuple(Rc::new(v))),
        Value::Bound(r, c) => forget_in(r, f).map(|r| Value::Bound(Box::new(r), c.clone())),
        Value::LibMethod(r, n) => forget_in(r, f).map(|r| Value::LibMethod(Box::new(r), n.clone())),
        Value::Super(c, r) => forget_in(r, f).map(|r| Value::Super(*c, Box::new(r))),
        Value::Func(c) => {
            let d = many(&c.defaults);
            let kw: Vec<Option<Value>> = c.kw_defaults.iter().map(|v| v.as_ref().and_then(|v| forget_in(v, f))).collect();
            if d.is_none() && kw.iter().all(|v| v.is_none()) {
                return None;
            }
            let mut c2 = (**c).clone();
            if let Some(d) = d {
                c2.defaults = d;
            }
            for (slot, new) in c2.kw_defaults.iter_mut().zip(kw) {
                if new.is_some() {
                    *slot = new;
                }
            }
            Some(Value::Func(Rc::new(c2)))
        }
        Value::Gen(c, a, k) => {
            let a2 = many(a);
            let kv: Vec<Value> = k.iter().map(|(_, v)| v.clone()).collect();
            let k2 = many(&kv);
            if a2.is_none() && k2.is_none() {
                return None;
            }
            let a = a2.map(Rc::new).unwrap_or_else(|| a.clone());
            let k = match k2 {
                Some(vs) => Rc::new(k.iter().zip(vs).map(|((n, _), v)| (n.clone(), v)).collect()),
                None => k.clone(),
            };
            Some(Value::Gen(c.clone(), a, k))
        }
        _ => None,
    }
}

/// Change the tensors of a map of values by `f`; true when one changed.
fn forget_map<K>(m: &mut BTreeMap<K, Value>, f: Forget) -> bool {
    let mut changed = false;
    for v in m.values_mut() {
        if let Some(n) = forget_in(v, f) {
            *v = n;
            changed = true;
        }
    }
    changed
}

/// Whether `v` holds a tensor for which `p` holds.
fn has(v: &Value, p: &dyn Fn(&Tensor) -> bool) -> bool {
    let h = |v: &Value| has(v, p);
    match v {
        Value::Tensor(t) => p(t),
        Value::Tuple(items) => items.iter().any(h),
        Value::Bound(r, _) | Value::LibMethod(r, _) | Value::Super(_, r) => h(r),
        Value::Func(c) => c.defaults.iter().any(h) || c.kw_defaults.iter().flatten().any(h),
        Value::Gen(_, a, k) => a.iter().any(h) || k.iter().any(|(_, v)| h(v)),
        _ => false,
    }
}

fn obj_has(o: &Obj, p: &dyn Fn(&Tensor) -> bool) -> bool {
    let has_here = |v: &Value| has(v, p);
    match o {
        Obj::List(items) => items.iter().any(has_here),
        Obj::Dict(items) => items.iter().any(|(k, v)| has_here(k) || has_here(v)),
        Obj::Instance { attrs, .. } | Obj::Namespace { attrs, .. } => attrs.values().any(has_here),
        Obj::Class { bases, attrs, .. } => bases.iter().any(has_here) || attrs.values().any(has_here),
        Obj::Layer(l) => l.args.values().any(has_here) || l.attrs.values().any(has_here),
        Obj::Container { items, attrs, .. } => items.iter().any(|(_, v)| has_here(v)) || attrs.values().any(has_here),
        Obj::Scope { vars, .. } => vars.values().any(has_here),
    }
}

fn forget_obj(o: &mut Obj, f: Forget) -> bool {
    let mut changed = false;
    let mut list = |vs: &mut dyn Iterator<Item = &mut Value>| {
        for v in vs {
            if let Some(n) = forget_in(v, f) {
                *v = n;
                changed = true;
            }
        }
    };
    match o {
        Obj::List(items) => list(&mut items.iter_mut()),
        Obj::Dict(items) => list(&mut items.iter_mut().flat_map(|(k, v)| [k, v])),
        Obj::Instance { attrs, .. } | Obj::Namespace { attrs, .. } => return forget_map(attrs, f),
        Obj::Class { bases, attrs, .. } => {
            list(&mut bases.iter_mut());
            return forget_map(attrs, f) || changed;
        }
        Obj::Layer(l) => {
            let a = forget_map(&mut l.args, f);
            return forget_map(&mut l.attrs, f) || a;
        }
        Obj::Container { items, attrs, .. } => {
            list(&mut items.iter_mut().map(|(_, v)| v));
            return forget_map(attrs, f) || changed;
        }
        Obj::Scope { vars, .. } => return vars.update(|_, v| forget_in(v, f)),
    }
    changed
}

thread_local! {
    /// Tensor equality ignores layouts while paths are compared for merging ([`layout_blind`]).
    static LAYOUT_BLIND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with tensor equality blind to layouts: path merging compares states this way, then
/// [`State::join_layouts`] forgets the layouts the merged paths disagree on, so that a known
/// layout never multiplies paths (everywhere else, e.g. call summaries, layouts are compared).
pub fn layout_blind<R>(f: impl FnOnce() -> R) -> R {
    with_layout_blind(true, f)
}

/// Whether tensor equality is blind to layouts now ([`layout_blind`]).
pub(super) fn is_layout_blind() -> bool {
    LAYOUT_BLIND.with(|b| b.get())
}

/// Tensor equality not blind to layouts (a new analysis on this thread).
pub fn reset_layout_blind() {
    LAYOUT_BLIND.with(|b| b.set(false));
}

/// Run `f` with tensor equality blind to layouts or not (`blind`), as it was after.
pub(super) fn with_layout_blind<R>(blind: bool, f: impl FnOnce() -> R) -> R {
    let was = LAYOUT_BLIND.with(|b| b.replace(blind));
    let r = f();
    LAYOUT_BLIND.with(|b| b.set(was));
    r
}

impl PartialEq for Tensor {
    fn eq(&self, o: &Tensor) -> bool {
        // (paths compared for merging ignore what only adds precision to a rule: layouts, the
        // autograd facts and the probability marks; `join_layouts` forgets where they differ)
        self.shape == o.shape
            && self.dtype == o.dtype
            && self.device == o.device
            && self.values == o.values
            && self.registered == o.registered
            && ((self.layout == o.layout && self.act == o.act && self.grad == o.grad && self.saved == o.saved) || LAYOUT_BLIND.with(|b| b.get()))
    }
}

/// `a` with the layouts (and the autograd facts and probability marks) it disagrees on with `b`
/// (an equal value but for those) forgotten.
pub fn join_layouts(a: &Value, b: &Value) -> Option<Value> {
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y))
            if x.layout != y.layout || x.act != y.act || std::mem::discriminant(&x.grad) != std::mem::discriminant(&y.grad) || x.saved != y.saved =>
        {
            let mut t = (**x).clone();
            if x.layout != y.layout {
                t.layout = None;
            }
            if x.act != y.act {
                t.act = None;
            }
            if std::mem::discriminant(&x.grad) != std::mem::discriminant(&y.grad) {
                t.grad = Grad::Unknown;
            }
            if x.saved != y.saved {
                // the layers both graphs reach; whether they reach others is not known (no
                // saved facts at all would read as a graph that reaches no layer: a backward
                // of it would give no optimizer gradients)
                let (a, b) = (x.saved.as_deref().map_or(&[][..], |s| &s.layers[..]), y.saved.as_deref().map_or(&[][..], |s| &s.layers[..]));
                t.saved = Some(Rc::new(Saved { layers: a.iter().filter(|l| b.contains(l)).copied().collect(), layers_lost: true, ..Saved::default() }));
            }
            Some(Value::Tensor(Rc::new(t)))
        }
        (Value::Tuple(xs), Value::Tuple(ys)) if !Rc::ptr_eq(xs, ys) => join_all(xs, ys).map(|v| Value::Tuple(Rc::new(v))),
        (Value::LibMethod(x, n), Value::LibMethod(y, _)) => join_layouts(x, y).map(|v| Value::LibMethod(Box::new(v), n.clone())),
        (Value::Bound(x, c), Value::Bound(y, _)) => join_layouts(x, y).map(|v| Value::Bound(Box::new(v), c.clone())),
        _ => None,
    }
}

fn join_all(xs: &[Value], ys: &[Value]) -> Option<Vec<Value>> {
    let mut out: Option<Vec<Value>> = None;
    for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
        if let Some(v) = join_layouts(x, y) {
            out.get_or_insert_with(|| xs.to_vec())[i] = v;
        }
    }
    out
}

fn join_map<K: Ord + Clone>(xs: &BTreeMap<K, Value>, ys: &BTreeMap<K, Value>) -> Option<BTreeMap<K, Value>> {
    let mut out: Option<BTreeMap<K, Value>> = None;
    for ((k, x), (_, y)) in xs.iter().zip(ys) {
        if let Some(v) = join_layouts(x, y) {
            out.get_or_insert_with(|| xs.clone()).insert(k.clone(), v);
        }
    }
    out
}

impl Obj {
    /// `self` with the layouts it disagrees on with `o` (an equal object but for layouts)
    /// forgotten; `None` when there are none.
    fn join_layouts(&self, o: &Obj) -> Option<Obj> {
        use Obj::*;
        let pairs = |a: &[(Value, Value)], b: &[(Value, Value)]| -> Option<Vec<(Value, Value)>> {
            let ka = join_all(&a.iter().map(|p| p.0.clone()).collect::<Vec<_>>(), &b.iter().map(|p| p.0.clone()).collect::<Vec<_>>());
            let va = join_all(&a.iter().map(|p| p.1.clone()).collect::<Vec<_>>(), &b.iter().map(|p| p.1.clone()).collect::<Vec<_>>());
            if ka.is_none() && va.is_none() {
                return None;
            }
            let ks = ka.unwrap_or_else(|| a.iter().map(|p| p.0.clone()).collect());
            let vs = va.unwrap_or_else(|| a.iter().map(|p| p.1.clone()).collect());
            Some(ks.into_iter().zip(vs).collect())
        };
        match (self, o) {
            (List(a), List(b)) => join_all(a, b).map(List),
            (Dict(a), Dict(b)) => pairs(a, b).map(Dict),
            (Instance { class, attrs: a }, Instance { attrs: b, .. }) => join_map(a, b).map(|attrs| Instance { class: *class, attrs }),
            (Class { name, def, bases, attrs: a }, Class { attrs: b, .. }) => join_map(a, b).map(|attrs| Class { name: name.clone(), def: def.clone(), bases: bases.clone(), attrs }),
            (Layer(a), Layer(b)) => {
                let (args, attrs) = (join_map(&a.args, &b.args), join_map(&a.attrs, &b.attrs));
                if args.is_none() && attrs.is_none() {
                    return None;
                }
                let mut l = a.clone();
                l.args = args.unwrap_or(l.args);
                l.attrs = attrs.unwrap_or(l.attrs);
                Some(Layer(l))
            }
            (Container { kind, items: a, attrs: x }, Container { items: b, attrs: y, .. }) => {
                let items = join_all(&a.iter().map(|p| p.1.clone()).collect::<Vec<_>>(), &b.iter().map(|p| p.1.clone()).collect::<Vec<_>>());
                let attrs = join_map(x, y);
                if items.is_none() && attrs.is_none() {
                    return None;
                }
                let items = items.map(|vs| a.iter().map(|p| p.0.clone()).zip(vs).collect()).unwrap_or_else(|| a.clone());
                Some(Container { kind: *kind, items, attrs: attrs.unwrap_or_else(|| x.clone()) })
            }
            (Scope { vars: a, parent }, Scope { vars: b, .. }) => {
                let mut vars = a.clone();
                let mut ys = b.values();
                vars.update(|_, x| join_layouts(x, ys.next()?)).then(|| Scope { vars, parent: *parent })
            }
            (Namespace { kind, attrs: a }, Namespace { attrs: b, .. }) => join_map(a, b).map(|attrs| Namespace { kind: kind.clone(), attrs }),
            _ => None,
        }
    }
}

impl Tensor {
    /// The tensor on the given device (`None`: not known).
    pub fn on(mut self, device: Option<Device>) -> Tensor {
        self.device = device;
        self
    }
    /// The tensor as a parameter or buffer of a module (it moves with the module).
    pub fn registered(mut self) -> Tensor {
        self.registered = true;
        self
    }
    /// The tensor with the given layout (`None`: the strides are not known).
    pub fn with_layout(mut self, layout: Option<Layout>) -> Tensor {
        self.layout = layout;
        self
    }
}

/// Known strides: those of a contiguous tensor permuted by `perm` (dim `i` of the tensor is dim
/// `perm[i]` of a contiguous base; the identity is a contiguous tensor). `origin` is the op that
/// made it non-contiguous and where, for messages; it is not part of equality. `gaps`: the
/// tensor is a slice of such a tensor (`x.t()[1:]`, `x[:, :3]`), whose strides keep the
/// order of `perm` but may skip elements, so that fewer of its dims merge in a `view` than
/// `perm` alone says.
#[derive(Debug, Clone)]
pub struct Layout {
    pub perm: Rc<[u8]>,
    pub origin: Option<(&'static str, crate::ir::Span)>,
    pub gaps: bool,
}

impl PartialEq for Layout {
    fn eq(&self, o: &Layout) -> bool {
        self.perm == o.perm && self.gaps == o.gaps
    }
}

impl Layout {
    /// A contiguous tensor of rank `rank`.
    pub fn contiguous(rank: usize) -> Layout {
        Layout { perm: (0..rank as u8).collect(), origin: None, gaps: false }
    }
    /// Whether the dims are in memory order (contiguous, or a slice of a contiguous tensor).
    pub fn is_identity(&self) -> bool {
        self.perm.iter().enumerate().all(|(i, p)| *p as usize == i)
    }
    pub fn is_contiguous(&self) -> bool {
        !self.gaps && self.is_identity()
    }
}

/// A library nn.Module instance (`nn.Linear(...)`): its kind and constructor arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// `Linear`, `Conv2d`, ...
    pub kind: Rc<str>,
    /// Arguments bound to parameter names.
    pub args: BTreeMap<Rc<str>, Value>,
    pub attrs: BTreeMap<Name, Value>,
    /// Where it was built, for messages: "fc2 (line 20)".
    pub label: Option<Rc<str>>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum Obj {
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Instance { class: ObjId, attrs: BTreeMap<Name, Value> },
    Class {
        name: Name,
        def: Option<Rc<ClassDef>>,
        bases: Vec<Value>,
        attrs: BTreeMap<Name, Value>,
    },
    Layer(Layer),
    /// `nn.Sequential` (`seq`), `nn.ModuleList`, `nn.ModuleDict` (keys present).
    Container { kind: ContainerKind, items: Vec<(Option<Rc<str>>, Value)>, attrs: BTreeMap<Name, Value> },
    /// A function scope: its names and the enclosing scope.
    Scope { vars: Vars, parent: Option<ObjId> },
    /// `argparse.Namespace`, `SimpleNamespace`, parser objects: plain attributes.
    Namespace { kind: Rc<str>, attrs: BTreeMap<Name, Value> },
}

/// The same class definition (the very same parsed `class` statement), or none on both sides.
pub(super) fn same_def(a: &Option<Rc<ClassDef>>, b: &Option<Rc<ClassDef>>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => Rc::ptr_eq(x, y),
        (None, None) => true,
        _ => false,
    }
}

impl PartialEq for Obj {
    fn eq(&self, o: &Obj) -> bool {
        use Obj::*;
        match (self, o) {
            (List(a), List(b)) => a == b,
            (Dict(a), Dict(b)) => a == b,
            (Instance { class: c1, attrs: a1 }, Instance { class: c2, attrs: a2 }) => c1 == c2 && a1 == a2,
            (Class { name: n1, def: d1, bases: b1, attrs: a1 }, Class { name: n2, def: d2, bases: b2, attrs: a2 }) => n1 == n2 && same_def(d1, d2) && b1 == b2 && a1 == a2,
            (Layer(a), Layer(b)) => a == b,
            (Container { kind: k1, items: i1, attrs: a1 }, Container { kind: k2, items: i2, attrs: a2 }) => k1 == k2 && i1 == i2 && a1 == a2,
            (Scope { vars: v1, parent: p1 }, Scope { vars: v2, parent: p2 }) => v1 == v2 && p1 == p2,
            (Namespace { kind: k1, attrs: a1 }, Namespace { kind: k2, attrs: a2 }) => k1 == k2 && a1 == a2,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    Sequential,
    ModuleList,
    ModuleDict,
}

#[derive(Debug, Clone)]
pub struct Closure {
    pub def: Rc<FuncDef>,
    pub scope: ObjId,
    pub defaults: Vec<Value>,
    pub kw_defaults: Vec<Option<Value>>,
    /// The class the function was defined in (for `super()`).
    pub class: Option<ObjId>,
    pub kind: FuncKind,
}

impl PartialEq for Closure {
    fn eq(&self, o: &Closure) -> bool {
        Rc::ptr_eq(&self.def, &o.def)
            && self.scope == o.scope
            && self.defaults == o.defaults
            && self.kw_defaults == o.kw_defaults
            && self.class == o.class
            && self.kind == o.kind
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuncKind {
    Plain,
    Static,
    ClassMethod,
    Property,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(Poly),
    Float(Option<f64>),
    Str(Option<Rc<str>>),
    Tuple(Rc<Vec<Value>>),
    Ref(ObjId),
    Tensor(Rc<Tensor>),
    Func(Rc<Closure>),
    /// A method bound to its receiver.
    Bound(Box<Value>, Rc<Closure>),
    /// A library object by qualified name: `torch`, `torch.nn.Linear`, `torch.nn.functional.relu`.
    Lib(Rc<str>),
    /// A library method bound to its receiver (`x.view`, `model.parameters`).
    LibMethod(Box<Value>, Rc<str>),
    /// A Python builtin (`len`, `range`, ...).
    Builtin(&'static str),
    /// `super()` inside a method of class `class`, bound to `self`.
    Super(ObjId, Box<Value>),
    /// A symbolic truth value.
    Cond(Cond),
    /// A generator: a generator function called with these arguments, not yet run.
    Gen(Rc<Closure>, Rc<Vec<Value>>, Rc<Vec<(Name, Value)>>),
    /// A half-open integer range with a known length.
    Range(Poly, Poly, Poly),
    /// A torch dtype (`torch.float32`, `torch.long`, ...).
    DType(DType),
    Unknown,
}

impl Value {
    pub fn int(c: i128) -> Value {
        Value::Int(Poly::constant(c))
    }
    pub fn as_int(&self) -> Option<&Poly> {
        match self {
            Value::Int(p) => Some(p),
            _ => None,
        }
    }
    pub fn as_const_int(&self) -> Option<i128> {
        match self {
            Value::Int(p) => p.as_const(),
            Value::Bool(b) => Some(*b as i128),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(Some(s)) => Some(s),
            _ => None,
        }
    }
    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }
    /// The same value with the known values of its tensors forgotten.
    pub fn forget_values(self) -> Value {
        forget_in(&self, &no_values).unwrap_or(self)
    }
    pub fn as_dtype(&self) -> Option<DType> {
        match self {
            Value::DType(d) => Some(*d),
            _ => None,
        }
    }
}

/// One branch decision on a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Branch {
    /// A condition over symbolic integers (expressible; may appear in messages).
    Sym(Cond),
    /// An opaque choice at a site (the result of unmodelled code, or an assumption about an
    /// unknown input): `true`/`false` side.
    /// `Opaque(site, side, number of sides)`.
    Opaque(Span, u32, u32),
    /// An assumption about an unknown input made at its first use (e.g. its rank):
    /// `Assume(site, alternative, number of alternatives)`.
    Assume(Span, u32, u32),
}

/// The state of one path.
#[derive(Debug, Clone)]
pub struct State {
    pub heap: Heap,
    pub facts: Facts,
    pub branches: Branches,
    /// The path went through an opaque choice that is still open.
    pub tainted: bool,
    /// Bindings of shape variables (refinement of unknown shapes by first use).
    pub shapes: Rc<BTreeMap<u32, Shape>>,
    /// Inside a `try` that catches errors: violations are not reported.
    pub in_try: u32,
    /// Whether autograd records the ops on this path (`with torch.no_grad()`, a function
    /// decorated with `@torch.no_grad()`, `torch.enable_grad()`).
    pub grad_mode: GradMode,
    /// Some parameter may have been frozen on this path (`p.requires_grad = False`,
    /// `model.requires_grad_(False)`): the parameters of a layer are no longer known to
    /// require grad.
    pub params_frozen: bool,
    /// The preconditions of the checks the core left undecided on this path, in order: the
    /// executions that go on past such a check are those where it held. Kept only with
    /// `Settings::export_undecided`, for the SMT-LIB context of later checks. The core reads it
    /// only to take the same precondition, checked again, as holding (`Interp::check`): that
    /// makes a Holds of an Undecided, never a finding, and spares Z3 the query. A `RefCell`
    /// because `Interp::check` sees the state by reference;
    /// cloning a state copies the list (copy on write), so paths never share pushes.
    pub assumed: RefCell<Rc<Vec<Formula>>>,
    /// The graph nodes that saved tensors for backward (`Saved::nodes`) this path made since
    /// each was last freed, by the op's span: 1 when made once (the span names that one node),
    /// 2 when made again (it names none: never freed by it). `models/torch/autograd.rs`.
    pub made: Rc<Made>,
    /// Which path this is, as far as branches cannot tell: 0 until a merge other than of the
    /// two sides of one choice, then a number of its own (`absorb`). Two paths merged from
    /// different ones can end with the same branches (the batch and single-map readings of an
    /// input, each merged across the two sides of an `if`); the report rule keeps their
    /// verdicts apart (`Interp::record`). Not part of the state's meaning: `same_state`
    /// ignores it.
    pub lineage: u32,
    /// The walks over the whole heap this path made since the innermost summarised call
    /// began (`walks::FORGOT_VALUES`, `walks::FORGOT_GRADS`): a replay of the call makes them
    /// again on the caller's objects (`engine::memo`). Not part of the state's meaning.
    pub walked: u8,
    /// The opaque tests this path took, while what they tested is unchanged (`taken`). Not
    /// part of the state's meaning: merged paths keep those both took alike.
    pub taken: taken::Tests,
}

impl State {
    pub fn new() -> State {
        State {
            heap: Heap::new(),
            facts: Facts::default(),
            branches: Branches::new(),
            tainted: false,
            shapes: Rc::new(BTreeMap::new()),
            in_try: 0,
            grad_mode: GradMode::On,
            params_frozen: false,
            assumed: RefCell::new(Rc::new(Vec::new())),
            made: Rc::new(Made::default()),
            lineage: 0,
            walked: 0,
            taken: taken::Tests::default(),
        }
    }

    pub fn alloc(&mut self, o: Obj) -> ObjId {
        self.heap.push(Rc::new(o));
        self.heap.len() - 1
    }

    /// Objects appended in order (a call summary's new objects, `engine::memo`).
    pub fn alloc_all(&mut self, objs: Vec<Rc<Obj>>) {
        self.heap.extend(objs);
    }

    /// An object (the read is logged for call summaries, `super::memo`).
    pub fn get(&self, id: ObjId) -> &Obj {
        reads::note_read(id);
        &self.heap[id]
    }

    /// [`State::get`], shared: the object as a count, to read while the state moves on (a copy
    /// of the object cost its attribute maps at every layer call).
    pub fn get_shared(&self, id: ObjId) -> Rc<Obj> {
        reads::note_read(id);
        self.heap[id].clone()
    }

    /// A scope, to look up the variable `name` in it (only that name is logged as read).
    /// As `get_var`, for a name the caller holds (no copy of the string).
    pub fn get_named(&self, id: ObjId, name: &Name) -> &Obj {
        reads::note_name_read(id, name);
        &self.heap[id]
    }

    pub fn get_var(&self, id: ObjId, name: &str) -> &Obj {
        reads::note_var_read(id, name);
        &self.heap[id]
    }

    /// A scope or an instance, to store the variable or attribute `name` in it (only that name
    /// is logged as read).
    pub fn get_mut_var(&mut self, id: ObjId, name: &Name) -> &mut Obj {
        reads::note_name_read(id, name);
        taken::note_store(id, Some(name));
        self.taken.stored(id, name);
        Rc::make_mut(self.heap.slot_mut(id))
    }

    /// [`State::get_mut`] (read whole) to store the attribute `name` (only its remembered
    /// tests are forgotten: `taken`).
    pub fn get_mut_storing(&mut self, id: ObjId, name: &Name) -> &mut Obj {
        reads::note_read(id);
        taken::note_store(id, Some(name));
        self.taken.stored(id, name);
        Rc::make_mut(self.heap.slot_mut(id))
    }

    pub fn get_mut(&mut self, id: ObjId) -> &mut Obj {
        reads::note_read(id);
        taken::note_store(id, None);
        self.taken.written(id);
        Rc::make_mut(self.heap.slot_mut(id))
    }

    /// The shape with bound prefix variables substituted.
    pub fn resolve(&self, s: &Shape) -> Shape {
        let mut s = s.clone();
        let mut guard = 0;
        while let Some(v) = s.prefix {
            reads::note_shape_var(v);
            let Some(b) = self.shapes.get(&v) else { break };
            let mut dims = b.dims.clone();
            dims.extend(s.dims);
            s = Shape { prefix: b.prefix, dims };
            guard += 1;
            if guard > 64 {
                break;
            }
        }
        s
    }

    /// The graph nodes made more often on this path than on `before`, when none was freed
    /// since (`None`: some was).
    pub fn made_more_than(&self, before: &State) -> Option<Vec<Node>> {
        if Rc::ptr_eq(&self.made, &before.made) {
            return Some(Vec::new());
        }
        Some(self.made.grown_since(&before.made)?.into_iter().map(|(k, _)| k).collect())
    }

    /// A graph node that saves tensors was made (`State::made`).
    pub fn make_node(&mut self, node: Node) {
        // (made twice already: nothing changes, and a shared list is not copied)
        match self.made.0.get(&node) {
            Some(n) if *n >= 2 => {}
            Some(_) => {
                Rc::make_mut(&mut self.made).0.insert(node, 2);
            }
            None => {
                Rc::make_mut(&mut self.made).0.insert(node, 1);
            }
        }
    }

    pub fn bind_shape(&mut self, var: u32, s: Shape) {
        reads::note_shape_var(var);
        Rc::make_mut(&mut self.shapes).insert(var, s);
    }

    /// Same program state (heap, shape bindings), ignoring how the path got here.
    pub fn same_state(&self, o: &State) -> bool {
        (Rc::ptr_eq(&self.made, &o.made) || self.made == o.made || LAYOUT_BLIND.with(|b| b.get())) && self.same_state_but_made(o)
    }

    /// [`State::same_state`] but for the graph nodes made (`loops`: an iteration that only
    /// made nodes again changed nothing else).
    pub fn same_state_but_made(&self, o: &State) -> bool {
        (Rc::ptr_eq(&self.shapes, &o.shapes) || self.shapes == o.shapes) && self.same_heap_noting(o, |_| {})
    }

    /// The same `try` depth, grad mode, frozen parameters and heap, calling `copy` with each
    /// object that is equal in both but not shared (`State::same_state_sharing`).
    pub(super) fn same_heap_noting(&self, o: &State, mut copy: impl FnMut(usize)) -> bool {
        self.in_try == o.in_try
            && self.grad_mode == o.grad_mode
            && self.params_frozen == o.params_frozen
            && self.heap.len() == o.heap.len()
            && (Heap::ptr_eq(&self.heap, &o.heap)
                || self.heap.all_changed(&o.heap, |i| {
                    let eq = self.heap[i] == o.heap[i];
                    if eq {
                        copy(i);
                    }
                    eq
                }))
    }

    /// After `same_state` compared blind to layouts ([`layout_blind`]): forget the layouts
    /// this state's heap disagrees on with `o`'s.
    pub fn join_layouts(&mut self, o: &State) {
        self.join_layouts_made(o);
        if Heap::ptr_eq(&self.heap, &o.heap) {
            return;
        }
        let mut changed: Vec<(usize, Obj)> = Vec::new();
        self.heap.all_changed(&o.heap, |i| {
            if let Some(j) = self.heap[i].join_layouts(&o.heap[i]) {
                changed.push((i, j));
            }
            true
        });
        for (i, j) in changed {
            self.heap.set(i, Rc::new(j));
        }
    }

    /// The graph nodes made on this path or `o` (`made`), joined: a span made once on each
    /// path names one node on each, so the most made on either.
    pub(super) fn join_layouts_made(&mut self, o: &State) {
        if !Rc::ptr_eq(&self.made, &o.made) {
            // (only the nodes the two count differently: the rest both share)
            let mut more = Vec::new();
            o.made.0.diff(&self.made.0, |k, theirs, mine| {
                let t = theirs.copied().unwrap_or(0);
                if t > mine.copied().unwrap_or(0) {
                    more.push((*k, t));
                }
                true
            });
            if !more.is_empty() {
                let made = Rc::make_mut(&mut self.made);
                for (k, t) in more {
                    made.0.insert(k, t);
                }
            }
        }
    }

    /// A condition this path's branch list already holds (True) or holds the negation of
    /// (False): a test taken earlier on the path, which the facts may not hold (a product's
    /// range, an inequality).
    pub fn branch_decides(&self, c: &Cond) -> crate::shape::Tri {
        self.branches
            .find_first(|b| match b {
                Branch::Sym(x) if x == c => Some(crate::shape::Tri::True),
                Branch::Sym(x) if x.is_negation_of(c) => Some(crate::shape::Tri::False),
                _ => None,
            })
            .unwrap_or(crate::shape::Tri::Unknown)
    }

    /// The same path facts, taint and assumed preconditions (what, besides the heap and the
    /// branches, decides what running on from a state records).
    pub fn same_path_facts(&self, o: &State) -> bool {
        self.tainted == o.tainted && self.facts == o.facts && *self.assumed.borrow() == *o.assumed.borrow()
    }
}

/// A shape in the path's terms (facts applied: `batch` is `1` on the path where `batch == 1`),
/// as messages show it: `[*, 120]`, `[B, 3, 32, 32]`, `?` for an unknown dim.
pub fn show_shape(syms: &crate::shape::Symbols, st: &State, s: &Shape) -> String {
    let s = st.resolve(s);
    let mut parts: Vec<String> = Vec::new();
    if s.prefix.is_some() {
        parts.push("*".into());
    }
    parts.extend(s.dims.iter().map(|d| match &d.v {
        Some(p) => st.facts.normalize(p).display(syms),
        None => "?".into(),
    }));
    format!("[{}]", parts.join(", "))
}
