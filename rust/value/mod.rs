//! Abstract values, the heap, and the per-path state.

pub mod gc;
pub mod reads;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ir::{ClassDef, FuncDef, Name, Span};
use crate::shape::{Cond, Facts, Formula, Poly};

pub type ObjId = usize;

/// The outcomes of evaluating something on one path: one `(State, Value)` per outcome; none
/// when every outcome raised.
pub type Vals = Vec<(State, Value)>;

/// One tensor dimension: a symbolic integer (or unknown) and where it came from.
#[derive(Debug, Clone)]
pub struct Dim {
    pub v: Option<Poly>,
    pub why: Option<Rc<str>>,
}

impl PartialEq for Dim {
    fn eq(&self, o: &Dim) -> bool {
        self.v == o.v
    }
}

impl Dim {
    pub fn known(v: Poly, why: Option<Rc<str>>) -> Dim {
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
    Other,
}

impl DType {
    /// A floating-point dtype (`float16`, `bfloat16`, `float32`, `float64`).
    pub fn is_floating(self) -> bool {
        matches!(self, DType::Float | DType::Double | DType::Half | DType::BFloat16)
    }
}

#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Shape,
    pub dtype: Option<DType>,
    /// The strides, when known (`None`: not known, never reported). Set by the few models whose
    /// strides are proven against torch (`models/torch/layout.rs`); `tensor()` leaves it `None`.
    pub layout: Option<Layout>,
}

thread_local! {
    /// Tensor equality ignores layouts while paths are compared for merging ([`layout_blind`]).
    static LAYOUT_BLIND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with tensor equality blind to layouts: path merging compares states this way, then
/// [`State::join_layouts`] forgets the layouts the merged paths disagree on, so that a known
/// layout never multiplies paths (everywhere else, e.g. call summaries, layouts are compared).
pub fn layout_blind<R>(f: impl FnOnce() -> R) -> R {
    let was = LAYOUT_BLIND.with(|b| b.replace(true));
    let r = f();
    LAYOUT_BLIND.with(|b| b.set(was));
    r
}

impl PartialEq for Tensor {
    fn eq(&self, o: &Tensor) -> bool {
        self.shape == o.shape && self.dtype == o.dtype && (self.layout == o.layout || LAYOUT_BLIND.with(|b| b.get()))
    }
}

/// `a` with the layouts it disagrees on with `b` (an equal value but for layouts) forgotten.
pub fn join_layouts(a: &Value, b: &Value) -> Option<Value> {
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) if x.layout != y.layout => Some(Value::Tensor(Rc::new((**x).clone().with_layout(None)))),
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
            (Scope { vars: a, parent }, Scope { vars: b, .. }) => join_map(a, b).map(|vars| Scope { vars, parent: *parent }),
            (Namespace { kind, attrs: a }, Namespace { attrs: b, .. }) => join_map(a, b).map(|attrs| Namespace { kind: kind.clone(), attrs }),
            _ => None,
        }
    }
}

impl Tensor {
    /// The tensor with the given layout (`None`: the strides are not known).
    pub fn with_layout(mut self, layout: Option<Layout>) -> Tensor {
        self.layout = layout;
        self
    }
}

/// Known strides: those of a contiguous tensor permuted by `perm` (dim `i` of the tensor is dim
/// `perm[i]` of a contiguous base; the identity is a contiguous tensor). `origin` is the op that
/// made it non-contiguous and its line, for messages; it is not part of equality.
#[derive(Debug, Clone)]
pub struct Layout {
    pub perm: Rc<[u8]>,
    pub origin: Option<(&'static str, usize)>,
}

impl PartialEq for Layout {
    fn eq(&self, o: &Layout) -> bool {
        self.perm == o.perm
    }
}

impl Layout {
    /// A contiguous tensor of rank `rank`.
    pub fn contiguous(rank: usize) -> Layout {
        Layout { perm: (0..rank as u8).collect(), origin: None }
    }
    pub fn is_contiguous(&self) -> bool {
        self.perm.iter().enumerate().all(|(i, p)| *p as usize == i)
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
    Scope { vars: BTreeMap<Name, Value>, parent: Option<ObjId> },
    /// `argparse.Namespace`, `SimpleNamespace`, parser objects: plain attributes.
    Namespace { kind: Rc<str>, attrs: BTreeMap<Name, Value> },
}

impl PartialEq for Obj {
    fn eq(&self, o: &Obj) -> bool {
        use Obj::*;
        match (self, o) {
            (List(a), List(b)) => a == b,
            (Dict(a), Dict(b)) => a == b,
            (Instance { class: c1, attrs: a1 }, Instance { class: c2, attrs: a2 }) => c1 == c2 && a1 == a2,
            (Class { name: n1, def: d1, bases: b1, attrs: a1 }, Class { name: n2, def: d2, bases: b2, attrs: a2 }) => {
                n1 == n2
                    && match (d1, d2) {
                        (Some(x), Some(y)) => Rc::ptr_eq(x, y),
                        (None, None) => true,
                        _ => false,
                    }
                    && b1 == b2
                    && a1 == a2
            }
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
    pub fn as_dtype(&self) -> Option<DType> {
        match self {
            Value::DType(d) => Some(*d),
            _ => None,
        }
    }
}

/// One branch decision on a path.
#[derive(Debug, Clone, PartialEq)]
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
    pub heap: Rc<Vec<Rc<Obj>>>,
    pub facts: Facts,
    pub branches: Vec<Branch>,
    /// The path went through an opaque choice that is still open.
    pub tainted: bool,
    /// Bindings of shape variables (refinement of unknown shapes by first use).
    pub shapes: Rc<BTreeMap<u32, Shape>>,
    /// Inside a `try` that catches errors: violations are not reported.
    pub in_try: u32,
    /// The preconditions of the checks the core left undecided on this path, in order: the
    /// executions that go on past such a check are those where it held. Kept only with
    /// `Settings::export_undecided`, for the SMT-LIB context of later checks; never read by the
    /// core's own decisions. A `RefCell` because `Interp::check` sees the state by reference;
    /// cloning a state copies the list (copy on write), so paths never share pushes.
    pub assumed: RefCell<Rc<Vec<Formula>>>,
}

impl State {
    pub fn new() -> State {
        State {
            heap: Rc::new(Vec::new()),
            facts: Facts::default(),
            branches: Vec::new(),
            tainted: false,
            shapes: Rc::new(BTreeMap::new()),
            in_try: 0,
            assumed: RefCell::new(Rc::new(Vec::new())),
        }
    }

    pub fn alloc(&mut self, o: Obj) -> ObjId {
        let h = Rc::make_mut(&mut self.heap);
        h.push(Rc::new(o));
        h.len() - 1
    }

    /// An object (the read is logged for call summaries, `super::memo`).
    pub fn get(&self, id: ObjId) -> &Obj {
        reads::note_read(id);
        &self.heap[id]
    }

    /// A scope, to look up the variable `name` in it (only that name is logged as read).
    pub fn get_var(&self, id: ObjId, name: &str) -> &Obj {
        reads::note_var_read(id, name);
        &self.heap[id]
    }

    pub fn get_mut(&mut self, id: ObjId) -> &mut Obj {
        reads::note_read(id);
        let h = Rc::make_mut(&mut self.heap);
        Rc::make_mut(&mut h[id])
    }

    /// The shape with bound prefix variables substituted.
    pub fn resolve(&self, s: &Shape) -> Shape {
        let mut s = s.clone();
        let mut guard = 0;
        while let Some(v) = s.prefix {
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

    pub fn bind_shape(&mut self, var: u32, s: Shape) {
        Rc::make_mut(&mut self.shapes).insert(var, s);
    }

    /// Same program state (heap, shape bindings), ignoring how the path got here.
    pub fn same_state(&self, o: &State) -> bool {
        self.in_try == o.in_try
            && self.heap.len() == o.heap.len()
            && (Rc::ptr_eq(&self.shapes, &o.shapes) || self.shapes == o.shapes)
            && (Rc::ptr_eq(&self.heap, &o.heap)
                || self.heap.iter().zip(o.heap.iter()).all(|(a, b)| Rc::ptr_eq(a, b) || a == b))
    }

    /// After `same_state` compared blind to layouts ([`layout_blind`]): forget the layouts
    /// this state's heap disagrees on with `o`'s.
    pub fn join_layouts(&mut self, o: &State) {
        if Rc::ptr_eq(&self.heap, &o.heap) {
            return;
        }
        let mut changed: Vec<(usize, Obj)> = Vec::new();
        for (i, (a, b)) in self.heap.iter().zip(o.heap.iter()).enumerate() {
            if !Rc::ptr_eq(a, b)
                && let Some(j) = a.join_layouts(b)
            {
                changed.push((i, j));
            }
        }
        if !changed.is_empty() {
            let heap = Rc::make_mut(&mut self.heap);
            for (i, j) in changed {
                heap[i] = Rc::new(j);
            }
        }
    }

    /// Merge a path with the same program state into this one: the path condition becomes
    /// the common prefix of both (the union of both paths' executions, over-approximated).
    pub fn absorb(&mut self, o: &State) {
        let n = self.branches.iter().zip(o.branches.iter()).take_while(|(a, b)| a == b).count();
        let a_rest = &self.branches[n..];
        let b_rest = &o.branches[n..];
        let complementary = a_rest.len() == 1
            && b_rest.len() == 1
            && match (&a_rest[0], &b_rest[0]) {
                (Branch::Opaque(s1, x, 2), Branch::Opaque(s2, y, 2)) => s1 == s2 && x != y,
                (Branch::Sym(c1), Branch::Sym(c2)) => c1.negate().as_ref() == Some(c2),
                _ => false,
            };
        let opaque_rest = a_rest.iter().chain(b_rest).any(|b| matches!(b, Branch::Opaque(..) | Branch::Assume(..)));
        let prefix_tainted = self.branches[..n].iter().any(|b| matches!(b, Branch::Opaque(..) | Branch::Assume(..)));
        self.tainted = if complementary {
            prefix_tainted || (self.tainted && o.tainted && !opaque_rest)
        } else {
            self.tainted || o.tainted || opaque_rest
        };
        self.branches.truncate(n);
        // the preconditions both sides assumed: their common prefix
        {
            let mut mine = self.assumed.borrow_mut();
            let theirs = o.assumed.borrow();
            if !Rc::ptr_eq(&mine, &theirs) {
                let k = mine.iter().zip(theirs.iter()).take_while(|(a, b)| a == b).count();
                if k < mine.len() {
                    Rc::make_mut(&mut mine).truncate(k);
                }
            }
        }
        // keep only the facts both sides share
        if self.facts != o.facts {
            self.facts = self.facts.common(&o.facts);
        }
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
