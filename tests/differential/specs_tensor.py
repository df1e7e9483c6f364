"""Specs for tensor creation, elementwise, shape, reduction and matrix ops (functions and Tensor methods).

Generators mix valid and invalid shapes, dims and sizes so that both directions of the comparison
(torch runs / torch raises) are exercised. Families of APIs with one semantics (unary elementwise,
broadcasting binary ops, reductions) share one generator.
"""
from __future__ import annotations

import dataclasses
import random

from . import values
from .harness import B, D, L, Spec, T, near, shape

# ---------------------------------------------------------------- generators


def rank_shape(r: random.Random, lo: int = 0, hi: int = 4, dlo: int = 1, dhi: int = 4) -> tuple[int, ...]:
    return shape(r, r.randint(lo, hi), dlo, dhi)


def _meshgrid(r):
    """Grids of 1 to 3 inputs of 0 or 1 dims, 'ij' or 'xy' (now and then an input of 2 dims, or
    of another dtype, which torch refuses); each output is checked in turn."""
    n = r.randint(1, 3)
    ins = {}
    for k in range(n):
        rank = r.choice([1, 1, 1, 0, 2])
        ins[f"a{k}"] = (L if r.random() < 0.5 else T)(*[r.randint(1, 4) for _ in range(rank)])
    ind = r.choice(["", ", indexing='ij'", ", indexing='xy'"])
    which = r.randrange(n)
    return f"torch.meshgrid({', '.join(ins)}{ind})[{which}]", ins


def broadcast_pair(r: random.Random) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast about half the time."""
    a = rank_shape(r, 0, 4, 1, 4)
    b = list(a[r.randint(0, len(a)):]) if a else []
    b = [1 if r.random() < 0.3 else d for d in b]
    if r.random() < 0.2:
        b = [r.randint(1, 3)] + b
    if b and r.random() < 0.45:
        i = r.randrange(len(b))
        b[i] = b[i] + r.randint(1, 2)
    if r.random() < 0.5:
        return a, tuple(b)
    return tuple(b), a


def dim_arg(r: random.Random, rank: int) -> int:
    """A dim, out of range for the rank about a fifth of the time."""
    return r.randint(-rank - 1, rank) if rank else r.choice([-1, 0, 1])


def index_add_case(r: random.Random, method: str):
    """`x.index_add(dim, i, src)`: a source with one slice per index along `dim` and `x`'s sizes
    elsewhere, about half the time; else an index count, another size or a 2-D index off."""
    x = shape(r, r.randint(1, 3), 1, 4)
    d = dim_arg(r, len(x))
    k = d % len(x) if -len(x) <= d < len(x) else 0
    n = r.randint(1, 3)
    src = [near(r, n) if i == k else near(r, s) for i, s in enumerate(x)] if r.random() < 0.6 else list(x[:k]) + [n] + list(x[k + 1:])
    idx = (n,) if r.random() < 0.85 else (1, n)
    alpha = ", alpha=2" if r.random() < 0.3 else ""
    return f"x.{method}({d}, i, s{alpha})", {"x": T(*x), "i": L(*idx, high=x[k]), "s": T(*src)}


def fmt_shape(s) -> str:
    return ", ".join(map(str, s))


# ---------------------------------------------------------------- families

UNARY = [
    "abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "sigmoid", "relu", "floor", "ceil",
    "round", "trunc", "frac", "sign", "square", "reciprocal", "erf", "erfc", "isnan", "isinf", "isfinite",
    "logical_not", "nan_to_num", "sgn", "positive", "signbit", "deg2rad", "rad2deg", "lgamma", "digamma",
]
UNARY_METHODS_ONLY = ["abs_", "neg_", "exp_", "log_", "sqrt_", "sigmoid_", "tanh_", "relu_", "clone", "detach",
                      "contiguous", "float", "double", "half", "long", "int", "bool", "cpu", "requires_grad_", "zero_",
                      "fill_", "normal_", "uniform_", "bernoulli", "exponential_"]
METHOD_ARGS = {"fill_": "0.5", "bernoulli": "", "bernoulli_": "0.5"}


def unary_fn(name):
    return lambda r: (f"torch.{name}(x)", {"x": T(*rank_shape(r))})


def unary_method(name):
    arg = METHOD_ARGS.get(name, "")
    if name == "bernoulli":
        return lambda r: ("x.sigmoid().bernoulli()", {"x": T(*rank_shape(r))})
    return lambda r: (f"x.{name}({arg})", {"x": T(*rank_shape(r))})


BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum",
          "minimum", "fmax", "fmin", "atan2", "hypot", "eq", "ne", "lt", "le", "gt", "ge", "copysign",
          "logical_and", "logical_or", "logical_xor", "xlogy", "subtract", "multiply", "divide", "greater",
          "less", "not_equal", "greater_equal", "less_equal"]
OPERATORS = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__floordiv__": "//",
             "__mod__": "%", "__pow__": "**", "__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=",
             "__gt__": ">", "__ge__": ">=", "__and__": "&", "__or__": "|", "__xor__": "^"}
INPLACE = ["add_", "sub_", "mul_", "div_", "pow_", "clamp_min_", "copy_"]


def binary_fn(name):
    def gen(r):
        a, b = broadcast_pair(r)
        return f"torch.{name}(a, b)", {"a": T(*a), "b": T(*b)}
    return gen


def binary_method(name):
    def gen(r):
        a, b = broadcast_pair(r)
        return f"a.{name}(b)", {"a": T(*a), "b": T(*b)}
    return gen


def operator(op):
    bool_op = op in "&|^"

    def gen(r):
        a, b = broadcast_pair(r)
        mk = B if bool_op else T
        return f"a {op} b", {"a": mk(*a), "b": mk(*b)}
    return gen


def inplace(name):
    """In-place binary ops: the broadcast result must have self's shape."""
    def gen(r):
        a, b = broadcast_pair(r)
        if name == "clamp_min_":
            return f"a.clamp_min_(b)", {"a": T(*a), "b": T(*b)}
        return f"a.{name}(b)", {"a": T(*a), "b": T(*b)}
    return gen


REDUCE = ["sum", "mean", "prod", "std", "var", "amax", "amin", "logsumexp", "nansum", "nanmean", "norm",
          "count_nonzero", "any", "all"]
REDUCE_TUPLE = ["max", "min", "median", "mode", "kthvalue", "cummax", "cummin", "nanmedian"]
SCAN = ["cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax", "argsort"]


def reduce_gen(name, form):
    def gen(r):
        s = rank_shape(r, 1, 4)
        d = dim_arg(r, len(s))
        kd = r.choice(["", ", keepdim=True"])
        if name in ("any", "all", "count_nonzero"):
            kd = "" if name == "count_nonzero" else kd
        recv = "x" if form == "method" else "torch." + name + "(x"
        if form == "method":
            return f"x.{name}(dim={d}{kd})" if name != "count_nonzero" else f"x.count_nonzero(dim={d})", {"x": T(*s)}
        return f"{recv}, dim={d}{kd})", {"x": T(*s)}
    return gen


def reduce_all_gen(name, form):
    def gen(r):
        s = rank_shape(r, 0, 4)
        return (f"x.{name}()" if form == "method" else f"torch.{name}(x)"), {"x": T(*s)}
    return gen


def tuple_reduce_gen(name, form):
    def gen(r):
        s = rank_shape(r, 1, 4)
        d = dim_arg(r, len(s))
        kd = r.choice(["", ", keepdim=True"]) if not name.startswith("cum") else ""
        k = f"{r.randint(1, 4)}, " if name == "kthvalue" else ""
        part = r.choice([0, 1])
        call = f"x.{name}({k}dim={d}{kd})" if form == "method" else f"torch.{name}(x, {k}dim={d}{kd})"
        return f"{call}[{part}]", {"x": T(*s)}
    return gen


def scan_gen(name, form):
    def gen(r):
        s = rank_shape(r, 1, 4)
        d = dim_arg(r, len(s))
        return (f"x.{name}(dim={d})" if form == "method" else f"torch.{name}(x, dim={d})"), {"x": T(*s)}
    return gen


# ---------------------------------------------------------------- shape ops


def view_gen(method):
    def gen(r):
        s = rank_shape(r, 1, 3)
        n = 1
        for d in s:
            n *= d
        dims = [r.choice([-1, 1, 2, 3, 4, 6, n]) for _ in range(r.randint(1, 3))]
        if -1 in dims:
            first = dims.index(-1)
            dims = [d if (d != -1 or i == first or r.random() < 0.1) else 2 for i, d in enumerate(dims)]
        call = f"x.{method}({fmt_shape(dims)})" if method != "torch.reshape" else f"torch.reshape(x, ({fmt_shape(dims)},))"
        return call, {"x": T(*s)}
    return gen


def permute_gen(form):
    def gen(r):
        s = rank_shape(r, 1, 4)
        p = list(range(len(s)))
        r.shuffle(p)
        if r.random() < 0.3:
            p[r.randrange(len(p))] = r.randint(-len(s) - 1, len(s))
        if r.random() < 0.15:
            p = p[:-1] or [0, 0]
        return (f"x.permute({fmt_shape(p)})" if form == "method" else f"torch.permute(x, ({fmt_shape(p)},))"), {"x": T(*s)}
    return gen


def two_dims_gen(call):
    def gen(r):
        s = rank_shape(r, 1, 4)
        return call.format(a=dim_arg(r, len(s)), b=dim_arg(r, len(s))), {"x": T(*s)}
    return gen


def one_dim_gen(call, extra_rank=0, lo=0):
    def gen(r):
        s = rank_shape(r, lo, 4)
        return call.format(d=dim_arg(r, len(s) + extra_rank), n=r.randint(0, 4), k=r.randint(1, 4)), {"x": T(*s)}
    return gen


def cat_gen(fn):
    def gen(r):
        a = rank_shape(r, 1, 3, 1, 3)
        b = list(a)
        if r.random() < 0.5:
            b[r.randrange(len(b))] = r.randint(1, 3)
        if r.random() < 0.1:
            b = b + [2]
        d = dim_arg(r, len(a) + (1 if fn in ("stack",) else 0))
        if fn in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
            return f"torch.{fn}([a, b])", {"a": T(*a), "b": T(*b)}
        return f"torch.{fn}([a, b], dim={d})", {"a": T(*a), "b": T(*b)}
    return gen


def expand_gen(method):
    def gen(r):
        s = rank_shape(r, 0, 3, 1, 3)
        sizes = [r.choice([-1, 1, 2, 3]) for _ in range(r.randint(max(1, len(s)), 4))]
        if method == "broadcast_to":
            return f"torch.broadcast_to(x, ({fmt_shape(sizes)},))", {"x": T(*s)}
        if method == "Tensor.broadcast_to":
            return f"x.broadcast_to(({fmt_shape(sizes)},))", {"x": T(*s)}
        return f"x.{method}({fmt_shape(sizes)})", {"x": T(*s)}
    return gen


def split_gen(call):
    def gen(r):
        s = rank_shape(r, 1, 3, 1, 6)
        d = dim_arg(r, len(s))
        return call.format(d=d, k=r.randint(1, 4), i=r.randint(0, 2)), {"x": T(*s)}
    return gen


def matmul_pair(r: random.Random, ranks=(1, 2, 3, 4)):
    ra, rb = r.choice(ranks), r.choice(ranks)
    k = r.randint(1, 4)
    a = list(shape(r, ra, 1, 3))
    b = list(shape(r, rb, 1, 3))
    a[-1] = k
    b[-2 if rb > 1 else 0] = k if r.random() < 0.6 else r.randint(1, 4)
    if ra > 2 and rb > 2 and r.random() < 0.5:
        b[:-2] = a[-len(b) + 2:-2] if len(a) >= len(b) else b[:-2]
    return tuple(a), tuple(b)


def matmul_gen(call, ranks=(1, 2, 3, 4)):
    def gen(r):
        a, b = matmul_pair(r, ranks)
        return call, {"a": T(*a), "b": T(*b)}
    return gen


def mat3_gen(call, ranks):
    def gen(r):
        ra, rb = ranks
        n, k, m, bsz = (r.randint(1, 4) for _ in range(4))
        a = [bsz, n, k][-ra:]
        b = [bsz, k if r.random() < 0.6 else r.randint(1, 4), m][-rb:]
        out = [bsz, n, m][-max(ra, rb):] if rb > 1 else [n]
        c = list(out)
        if r.random() < 0.3:
            c = c[1:]
        if c and r.random() < 0.2:
            c[-1] += 1
        return call, {"c": T(*c), "a": T(*a), "b": T(*b)}
    return gen


def creation_gen(fn):
    def gen(r):
        s = rank_shape(r, 0, 4, 0, 4)
        form = r.choice(["args", "tuple", "size"])
        dims = fmt_shape(s)
        arg = {"args": dims or "()", "tuple": f"({dims},)" if s else "()", "size": f"size=({dims},)" if s else "size=()"}[form]
        if fn == "full":
            return f"torch.full(({dims},), 2.0)" if s else "torch.full((), 2.0)", {}
        if fn == "randint":
            return f"torch.randint(0, 5, ({dims},))" if s else "torch.randint(0, 5, ())", {}
        return f"torch.{fn}({arg})", {}
    return gen


def like_gen(fn):
    def gen(r):
        extra = ", 3" if fn == "full_like" else ""
        if fn == "randint_like":
            return "torch.randint_like(x, 5)", {"x": T(*rank_shape(r))}
        return f"torch.{fn}(x{extra})", {"x": T(*rank_shape(r))}
    return gen


def new_gen(fn):
    def gen(r):
        s = rank_shape(r, 0, 3, 0, 4)
        extra = ", 1.5" if fn == "new_full" else ""
        return f"x.{fn}(({fmt_shape(s)}{',' if len(s) == 1 else ''}){extra})", {"x": T(*rank_shape(r))}
    return gen


def index_gen(r):
    s = rank_shape(r, 1, 4, 1, 4)
    parts = []
    for _ in range(r.randint(1, len(s) + 1)):
        parts.append(r.choice([str(r.randint(-4, 3)), ":", "1:", ":2", "::2", "None", "...", "-1", "1:3", "True", "False"]))
    if parts.count("...") > 1:
        parts = [p for p in parts if p != "..."] + ["..."]
    if parts.count("True") + parts.count("False") > 1:
        # several bools are one advanced index together (not modelled): keep the first
        first = next(i for i, p in enumerate(parts) if p in ("True", "False"))
        parts = [p for i, p in enumerate(parts) if i == first or p not in ("True", "False")]
    return f"x[{', '.join(parts)}]", {"x": T(*s)}


def unfold_gen(r: random.Random):
    """`x.unfold(dimension, size, step)`: sizes up to a bit past the dim, now and then a negative size or a step <= 0."""
    x = rank_shape(r, 0, 3, 1, 6)
    d = dim_arg(r, len(x))
    n = x[d] if x and -len(x) <= d < len(x) else 1
    size = r.randint(0, n + 1) if r.random() < 0.9 else -1
    step = r.randint(1, 3) if r.random() < 0.85 else r.choice([0, -1])
    if r.random() < 0.3:
        return f"x.unfold(dimension={d}, size={size}, step={step})", {"x": T(*x)}
    return f"x.unfold({d}, {size}, {step})", {"x": T(*x)}


def bincount_case(r, template):
    """`bincount` of an integer tensor whose values are known (present, or only bounded), with a
    `minlength` or float weights of its length."""
    n, v = r.randint(1, 5), r.randint(0, 5)
    x = r.choice([f"torch.arange({n})", f"torch.full(({n},), {v})", f"torch.tensor([{v}, 1, {r.randint(0, 4)}])",
                  f"torch.randint(0, {v + 1}, ({r.randint(0, 4)},))"])
    rest = r.choice(["", f"minlength={r.randint(0, 8)}", f"weights=torch.ones({n}), minlength={r.randint(0, 3)}"])
    if "weights" in rest:
        x = f"torch.arange({n})"
    if template.startswith("torch.") and rest:
        rest = ", " + rest
    return template.format(x=x, rest=rest), {}


SPECS: list[Spec] = []
for _n in UNARY:
    SPECS.append(Spec(f"torch.{_n}", "function", unary_fn(_n), cases=12))
    if _n not in ("positive",):
        SPECS.append(Spec(f"Tensor.{_n}", "method", unary_method(_n), cases=12))
for _n in UNARY_METHODS_ONLY:
    SPECS.append(Spec(f"Tensor.{_n}", "method", unary_method(_n), cases=12))
for _n in BINARY:
    SPECS.append(Spec(f"torch.{_n}", "function", binary_fn(_n), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", binary_method(_n), cases=30))
for _n, _op in OPERATORS.items():
    SPECS.append(Spec(f"Tensor.{_n}", "method", operator(_op), cases=30))
for _n in INPLACE:
    SPECS.append(Spec(f"Tensor.{_n}", "method", inplace(_n), cases=30))
for _n in REDUCE:
    SPECS.append(Spec(f"torch.{_n}", "function", reduce_gen(_n, "function"), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", reduce_gen(_n, "method"), cases=30))
for _n in REDUCE_TUPLE:
    SPECS.append(Spec(f"torch.{_n}", "function", tuple_reduce_gen(_n, "function"), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", tuple_reduce_gen(_n, "method"), cases=30))
for _n in SCAN:
    SPECS.append(Spec(f"torch.{_n}", "function", scan_gen(_n, "function"), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", scan_gen(_n, "method"), cases=30))
for _n in ("argmax", "argmin"):
    SPECS.append(Spec(f"torch.{_n}", "function", reduce_gen(_n, "function"), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", reduce_gen(_n, "method"), cases=30))

SPECS += [
    Spec("Tensor.view", "method", view_gen("view")),
    Spec("Tensor.reshape", "method", view_gen("reshape")),
    Spec("torch.reshape", "function", view_gen("torch.reshape")),
    Spec("Tensor.permute", "method", permute_gen("method")),
    Spec("torch.permute", "function", permute_gen("function")),
    Spec("Tensor.transpose", "method", two_dims_gen("x.transpose({a}, {b})")),
    Spec("torch.transpose", "function", two_dims_gen("torch.transpose(x, {a}, {b})")),
    Spec("Tensor.swapaxes", "method", two_dims_gen("x.swapaxes({a}, {b})")),
    Spec("Tensor.movedim", "method", two_dims_gen("x.movedim({a}, {b})")),
    Spec("torch.movedim", "function", two_dims_gen("torch.movedim(x, {a}, {b})")),
    Spec("torch.moveaxis", "function", two_dims_gen("torch.moveaxis(x, {a}, {b})")),
    Spec("Tensor.flatten", "method", two_dims_gen("x.flatten({a}, {b})")),
    Spec("torch.flatten", "function", two_dims_gen("torch.flatten(x, {a}, {b})")),
    Spec("Tensor.t", "method", lambda r: ("x.t()", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("torch.t", "function", lambda r: ("torch.t(x)", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.T", "method", lambda r: ("x.T", {"x": T(*rank_shape(r, 0, 2))})),
    Spec("Tensor.mT", "method", lambda r: ("x.mT", {"x": T(*rank_shape(r, 0, 4))})),
    Spec("Tensor.unsqueeze", "method", one_dim_gen("x.unsqueeze({d})", 1)),
    Spec("torch.unsqueeze", "function", one_dim_gen("torch.unsqueeze(x, {d})", 1)),
    Spec("Tensor.squeeze", "method", lambda r: r.choice([one_dim_gen("x.squeeze({d})"), lambda r2: ("x.squeeze()", {"x": T(*shape(r2, r2.randint(0, 4), 1, 2))})])(r)),
    Spec("torch.squeeze", "function", one_dim_gen("torch.squeeze(x, {d})")),
    Spec("Tensor.narrow", "method", one_dim_gen("x.narrow({d}, {n}, 1)", lo=1)),
    Spec("torch.narrow", "function", one_dim_gen("torch.narrow(x, {d}, {n}, 1)", lo=1)),
    Spec("Tensor.select", "method", one_dim_gen("x.select({d}, {n})", lo=1)),
    Spec("torch.select", "function", one_dim_gen("torch.select(x, {d}, {n})", lo=1)),
    Spec("Tensor.flip", "method", one_dim_gen("x.flip({d})", lo=1)),
    Spec("torch.flip", "function", one_dim_gen("torch.flip(x, ({d},))", lo=1)),
    Spec("torch.fliplr", "function", lambda r: ("torch.fliplr(x)", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("torch.flipud", "function", lambda r: ("torch.flipud(x)", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.roll", "method", one_dim_gen("x.roll({k}, {d})", lo=1)),
    Spec("torch.roll", "function", one_dim_gen("torch.roll(x, {k}, {d})", lo=1)),
    Spec("torch.tril", "function", lambda r: (f"torch.tril(x, {r.randint(-1, 1)})", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("torch.triu", "function", lambda r: (f"torch.triu(x, {r.randint(-1, 1)})", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.tril", "method", lambda r: ("x.tril()", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.triu", "method", lambda r: ("x.triu(1)", {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.expand", "method", expand_gen("expand")),
    Spec("torch.broadcast_to", "function", expand_gen("broadcast_to")),
    Spec("Tensor.expand_as", "method", lambda r: ("a.expand_as(b)", dict(zip("ab", map(lambda s: T(*s), broadcast_pair(r)))))),
    Spec("Tensor.view_as", "method", lambda r: ("a.view_as(b)", {"a": T(*rank_shape(r, 1, 3, 1, 3)), "b": T(*rank_shape(r, 1, 3, 1, 3))})),
    Spec("Tensor.reshape_as", "method", lambda r: ("a.reshape_as(b)", {"a": T(*rank_shape(r, 1, 3, 1, 3)), "b": T(*rank_shape(r, 1, 3, 1, 3))})),
    Spec("Tensor.repeat", "method", lambda r: ("x.repeat(" + fmt_shape(shape(r, r.randint(1, 4), 1, 3)) + ")", {"x": T(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("Tensor.tile", "method", lambda r: ("x.tile((" + fmt_shape(shape(r, r.randint(1, 4), 1, 3)) + ",))", {"x": T(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("torch.tile", "function", lambda r: ("torch.tile(x, (" + fmt_shape(shape(r, r.randint(1, 4), 1, 3)) + ",))", {"x": T(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("torch.cat", "function", cat_gen("cat")),
    Spec("torch.concat", "function", cat_gen("concat")),
    Spec("torch.stack", "function", cat_gen("stack")),
    Spec("torch.hstack", "function", cat_gen("hstack")),
    Spec("torch.vstack", "function", cat_gen("vstack")),
    Spec("torch.chunk", "function", split_gen("torch.chunk(x, {k}, dim={d})[0]")),
    Spec("Tensor.chunk", "method", split_gen("x.chunk({k}, {d})[-1]")),
    Spec("torch.split", "function", split_gen("torch.split(x, {k}, dim={d})[0]")),
    Spec("Tensor.split", "method", lambda r: r.choice([split_gen("x.split({k}, {d})[-1]"), split_gen("x.split([{k}, 2], dim={d})[1]")])(r)),
    Spec("torch.unbind", "function", split_gen("torch.unbind(x, {d})[0]")),
    Spec("Tensor.unbind", "method", split_gen("x.unbind({d})[{i}]")),
    Spec("torch.tensor_split", "function", split_gen("torch.tensor_split(x, {k}, dim={d})[0]")),
    Spec("Tensor.unfold", "method", unfold_gen, cases=50),
    Spec("Tensor.unflatten", "method", lambda r: (f"x.unflatten({r.randint(-1, 1)}, ({r.choice([2, 3, -1])}, {r.choice([2, 3])}))", {"x": T(*shape(r, 2, 1, 6))})),
    Spec("Tensor.__getitem__", "method", index_gen, cases=60),
    Spec("Tensor.masked_fill", "method", lambda r: ("a.masked_fill(m, 0.0)", {"a": T(*broadcast_pair(r)[0]), "m": B(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("torch.where", "function", lambda r: ("torch.where(c, a, b)", {"c": B(*rank_shape(r, 0, 2, 1, 3)), "a": T(*rank_shape(r, 0, 2, 1, 3)), "b": T(*rank_shape(r, 0, 2, 1, 3))})),
    Spec("Tensor.index_select", "method", lambda r: (f"x.index_select({dim_arg(r, 2)}, i)", {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, r.randint(0, 2), 1, 3), high=2)})),
    Spec("Tensor.index_add", "method", lambda r: index_add_case(r, "index_add")),
    Spec("Tensor.index_add_", "method", lambda r: index_add_case(r, "index_add_")),
    Spec("torch.index_select", "function", lambda r: (f"torch.index_select(x, {dim_arg(r, 2)}, i)", {"x": T(*shape(r, 2, 2, 4)), "i": L(r.randint(1, 4), high=2)})),
    Spec("Tensor.gather", "method", lambda r: (f"x.gather({dim_arg(r, 2)}, i)", {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, r.randint(1, 3), 1, 2), high=2)})),
    Spec("torch.gather", "function", lambda r: (f"torch.gather(x, {dim_arg(r, 2)}, i)", {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, r.randint(1, 3), 1, 2), high=2)})),
    Spec("Tensor.scatter", "method", lambda r: (f"x.scatter({dim_arg(r, 2)}, i, 1.0)", {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, r.randint(1, 3), 1, 2), high=2)})),
    Spec("Tensor.scatter_add", "method", lambda r: (f"x.scatter_add({dim_arg(r, 2)}, i, s)", {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, 2, 1, 2), high=2), "s": T(*shape(r, 2, 1, 3))})),
    Spec("torch.topk", "function", lambda r: (f"torch.topk(x, {r.randint(1, 4)}, dim={dim_arg(r, 2)})[{r.randint(0, 1)}]", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("Tensor.topk", "method", lambda r: (f"x.topk({r.randint(1, 4)})[0]", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("torch.sort", "function", lambda r: (f"torch.sort(x, dim={dim_arg(r, 2)})[{r.randint(0, 1)}]", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("Tensor.sort", "method", lambda r: (f"x.sort({dim_arg(r, 2)}, descending=True)[0]", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("torch.matmul", "function", matmul_gen("torch.matmul(a, b)")),
    Spec("Tensor.matmul", "method", matmul_gen("a.matmul(b)")),
    Spec("Tensor.__matmul__", "method", matmul_gen("a @ b")),
    Spec("torch.mm", "function", matmul_gen("torch.mm(a, b)", (2,))),
    Spec("Tensor.mm", "method", matmul_gen("a.mm(b)", (1, 2, 3))),
    Spec("torch.bmm", "function", matmul_gen("torch.bmm(a, b)", (3,))),
    Spec("Tensor.bmm", "method", matmul_gen("a.bmm(b)", (2, 3))),
    Spec("torch.mv", "function", matmul_gen("torch.mv(a, b)", (1, 2))),
    Spec("torch.dot", "function", matmul_gen("torch.dot(a, b)", (1,))),
    Spec("torch.outer", "function", lambda r: ("torch.outer(a, b)", {"a": T(*rank_shape(r, 1, 2)), "b": T(*rank_shape(r, 1, 2))})),
    Spec("torch.addmm", "function", mat3_gen("torch.addmm(c, a, b)", (2, 2))),
    Spec("torch.baddbmm", "function", mat3_gen("torch.baddbmm(c, a, b)", (3, 3))),
    Spec("torch.einsum", "function", lambda r: (r.choice(["torch.einsum('ij,jk->ik', a, b)", "torch.einsum('bij,bjk->bik', a, b)", "torch.einsum('ij,ij->i', a, b)", "torch.einsum('...j,kj->...k', a, b)"]), {"a": T(*rank_shape(r, 2, 3, 1, 3)), "b": T(*rank_shape(r, 2, 3, 1, 3))})),
]
for _fn in ("zeros", "ones", "empty", "rand", "randn", "full", "randint"):
    SPECS.append(Spec(f"torch.{_fn}", "function", creation_gen(_fn), cases=20))
for _fn in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like", "randint_like"):
    SPECS.append(Spec(f"torch.{_fn}", "function", like_gen(_fn), cases=12))
for _fn in ("new_zeros", "new_ones", "new_empty", "new_full"):
    SPECS.append(Spec(f"Tensor.{_fn}", "method", new_gen(_fn), cases=12))
SPECS += [
    Spec("torch.arange", "function", lambda r: (r.choice([f"torch.arange({r.randint(0, 6)})", f"torch.arange({r.randint(0, 3)}, {r.randint(0, 8)})", f"torch.arange(0, {r.randint(1, 9)}, {r.randint(1, 3)})"]), {}), cases=20),
    Spec("torch.linspace", "function", lambda r: (f"torch.linspace(0, 1, {r.randint(0, 6)})", {}), cases=12),
    Spec("torch.eye", "function", lambda r: (r.choice([f"torch.eye({r.randint(0, 4)})", f"torch.eye({r.randint(0, 4)}, {r.randint(0, 4)})"]), {}), cases=12),
    Spec("torch.randperm", "function", lambda r: (f"torch.randperm({r.randint(0, 6)})", {}), cases=12),
    Spec("torch.triu_indices", "function", lambda r: (f"torch.triu_indices({r.randint(0, 5)}, {r.randint(0, 5)}, {r.randint(-2, 2)})", {}), cases=20),
    Spec("torch.tril_indices", "function", lambda r: (f"torch.tril_indices({r.randint(0, 5)}, {r.randint(0, 5)}, {r.randint(-2, 2)})", {}), cases=20),
    Spec("torch.bincount", "function", lambda r: bincount_case(r, "torch.bincount({x}{rest})"), cases=20),
    Spec("Tensor.bincount", "method", lambda r: bincount_case(r, "{x}.bincount({rest})"), cases=20),
    Spec("Tensor.size", "method", lambda r: (f"torch.zeros(x.size({dim_arg(r, 3)}))", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("Tensor.shape", "method", lambda r: (f"torch.zeros(x.shape[{dim_arg(r, 3)}])", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("Tensor.dim", "method", lambda r: ("torch.zeros(x.dim())", {"x": T(*rank_shape(r, 0, 4))}), cases=12),
    Spec("Tensor.numel", "method", lambda r: ("torch.zeros(x.numel())", {"x": T(*rank_shape(r, 0, 3))}), cases=12),
    Spec("Tensor.to", "method", lambda r: (r.choice(["x.to(torch.float64)", "x.to(torch.long)", "x.to('cpu')", "x.to(dtype=torch.bool)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.type_as", "method", lambda r: ("x.type_as(i)", {"x": T(*rank_shape(r)), "i": L(2)}), cases=12),
    Spec("torch.clamp", "function", lambda r: ("torch.clamp(x, min=0.0, max=1.0)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.clamp", "method", lambda r: ("x.clamp(min=0.0)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.clip", "function", lambda r: ("torch.clip(x, -1.0, 1.0)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.clip", "method", lambda r: ("x.clip(max=1.0)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.lerp", "function", lambda r: ("torch.lerp(a, b, 0.5)", dict(zip("ab", map(lambda s: T(*s), broadcast_pair(r))))), cases=30),
    Spec("torch.addcmul", "function", lambda r: ("torch.addcmul(a, b, b)", dict(zip("ab", map(lambda s: T(*s), broadcast_pair(r))))), cases=30),
    Spec("torch.addcdiv", "function", lambda r: ("torch.addcdiv(a, b, b)", dict(zip("ab", map(lambda s: T(*s), broadcast_pair(r))))), cases=30),
    Spec("torch.diag", "function", lambda r: ("torch.diag(x)", {"x": T(*rank_shape(r, 0, 3))}), cases=20),
    Spec("torch.diagonal", "function", lambda r: ("torch.diagonal(x)", {"x": T(*rank_shape(r, 1, 4))}), cases=20),
    Spec("torch.trace", "function", lambda r: ("torch.trace(x)", {"x": T(*rank_shape(r, 1, 3))}), cases=20),
    Spec("torch.repeat_interleave", "function", lambda r: (f"torch.repeat_interleave(x, {r.randint(1, 3)}, dim={dim_arg(r, 2)})", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("torch.broadcast_tensors", "function", lambda r: ("torch.broadcast_tensors(a, b)[0]", dict(zip("ab", map(lambda s: T(*s), broadcast_pair(r)))))),
    Spec("torch.ravel", "function", lambda r: ("torch.ravel(x)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.meshgrid", "function", _meshgrid, cases=30),
    Spec("Tensor.ravel", "method", lambda r: ("x.ravel()", {"x": T(*rank_shape(r))}), cases=12),
]

# ---------------------------------------------------------------- aliases and in-place forms
# (the pointwise tables of rust/models/torch/pointwise.rs: each alias and in-place form proven
# on its own)

UNARY_ALIASES = ["absolute", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "atanh",
                 "erfinv", "fix", "i0", "isneginf", "isposinf", "isreal", "logit", "negative", "sinc", "conj",
                 "resolve_conj", "resolve_neg", "clone", "detach"]
UNARY_ALIAS_METHODS = [n for n in UNARY_ALIASES if n not in ("clone", "detach")] + ["positive", "share_memory_"]
# floating unary ops in place: an integer `self` cannot hold the float result (torch raises
# "result type Float can't be cast to the desired output type Long")
INPLACE_FLOATING_METHODS = ["acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin",
                            "asinh", "atan", "atanh", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv",
                            "exp2", "expm1", "i0", "lgamma", "log10", "log1p", "log2", "logit", "rad2deg",
                            "reciprocal", "rsqrt", "sin", "sinc", "sinh", "tan"]
INPLACE_FLOATING_FNS = ["acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin",
                        "asinh", "atan", "atanh", "cos", "cosh", "deg2rad", "erf", "erfc", "exp", "exp2", "expm1",
                        "i0", "log", "log10", "log1p", "log2", "logit", "rad2deg", "reciprocal", "rsqrt", "sigmoid",
                        "sin", "sinc", "sinh", "sqrt", "tan", "tanh"]
# unary ops that keep the dtype in place (`logical_not_` writes bools into `self`'s dtype)
INPLACE_SAME_METHODS = ["absolute", "ceil", "detach", "fix", "floor", "frac", "nan_to_num", "negative", "round",
                        "sgn", "sign", "square", "trunc", "logical_not"]
INPLACE_SAME_FNS = ["abs", "ceil", "detach", "fix", "floor", "frac", "nan_to_num", "neg", "negative", "relu", "round",
                    "square", "trunc", "zero"]


def inplace_unary(call: str, floating: bool):
    """`x.f_()` / `torch.f_(x)`: the result is `self`, its shape and dtype; a floating op on an
    integer `self` raises."""
    def gen(r):
        s = rank_shape(r)
        kind = r.choice(["float", "float", "double", "long"] if floating else ["float", "double"])
        mk = {"float": T, "double": D, "long": lambda *d: L(*d, high=3)}[kind]
        return call, {"x": mk(*s)}
    return gen


def alias_method(name):
    return lambda r: (f"x.{name}()", {"x": T(*rank_shape(r))})


for _n in UNARY_ALIASES:
    SPECS.append(Spec(f"torch.{_n}", "function", unary_fn(_n), cases=12))
for _n in UNARY_ALIAS_METHODS:
    SPECS.append(Spec(f"Tensor.{_n}", "method", alias_method(_n), cases=12))
for _n in INPLACE_FLOATING_METHODS:
    SPECS.append(Spec(f"Tensor.{_n}_", "method", inplace_unary(f"x.{_n}_()", True), cases=16))
for _n in INPLACE_FLOATING_FNS:
    SPECS.append(Spec(f"torch.{_n}_", "function", inplace_unary(f"torch.{_n}_(x)", True), cases=16))
for _n in INPLACE_SAME_METHODS:
    SPECS.append(Spec(f"Tensor.{_n}_", "method", inplace_unary(f"x.{_n}_()", False), cases=12))
for _n in INPLACE_SAME_FNS:
    SPECS.append(Spec(f"torch.{_n}_", "function", inplace_unary(f"torch.{_n}_(x)", False), cases=12))

_MK = {"float": T, "double": D, "long": lambda *d: L(*d, high=3), "bool": B}

BINARY_ALIASES = ["arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "clamp_max", "clamp_min"]
INPLACE_BINARY = ["arctan2_", "atan2_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "clamp_max_", "copysign_",
                  "divide_", "eq_", "floor_divide_", "fmod_", "ge_", "greater_", "greater_equal_", "gt_", "hypot_",
                  "le_", "less_", "less_equal_", "logical_and_", "logical_or_", "logical_xor_", "lt_", "multiply_",
                  "ne_", "not_equal_", "remainder_", "subtract_", "true_divide_", "xlogy_"]


def binary_kinds(name: str) -> list[str]:
    """The operand dtypes to draw from: bitwise ops take integers and bools (floats raise)."""
    if name.startswith("bitwise"):
        return ["long", "long", "long", "bool", "float"]
    if name.startswith("logical"):
        return ["float", "long", "bool"]
    if name.startswith(("remainder", "fmod", "floor_divide")):
        # an integer divisor can be 0, and torch raises ZeroDivisionError on the values: floats only
        return ["float"]
    return ["float", "float", "long"]


def binary_dtypes(call: str, name: str):
    """`call` with `a` and `b` of broadcasting shapes (about half the time) and mixed dtypes; in
    place, `self` must keep its shape and hold the result's dtype."""
    def gen(r):
        a, b = broadcast_pair(r)
        kinds = binary_kinds(name)
        return call, {"a": _MK[r.choice(kinds)](*a), "b": _MK[r.choice(kinds)](*b)}
    return gen


def ternary_gen(call: str):
    def gen(r):
        a, b = broadcast_pair(r)
        return call, {"a": T(*a), "b": T(*b)}
    return gen


for _n in BINARY_ALIASES:
    SPECS.append(Spec(f"torch.{_n}", "function", binary_dtypes(f"torch.{_n}(a, b)", _n), cases=30))
    SPECS.append(Spec(f"Tensor.{_n}", "method", binary_dtypes(f"a.{_n}(b)", _n), cases=30))
SPECS.append(Spec("torch.rsub", "function", binary_dtypes("torch.rsub(a, b)", "rsub"), cases=30))
for _n in INPLACE_BINARY:
    SPECS.append(Spec(f"Tensor.{_n}", "method", binary_dtypes(f"a.{_n}(b)", _n), cases=30))
for _n in ("clamp_max_", "clamp_min_", "xlogy_"):
    SPECS.append(Spec(f"torch.{_n}", "function", binary_dtypes(f"torch.{_n}(a, b)", _n), cases=30))
for _n in ("lerp", "lerp_"):
    SPECS.append(Spec(f"Tensor.{_n}", "method", ternary_gen(f"a.{_n}(b, 0.5)" if _n == "lerp" else "a.lerp_(b, b)"), cases=30))
for _n in ("addcmul", "addcmul_", "addcdiv", "addcdiv_"):
    SPECS.append(Spec(f"Tensor.{_n}", "method", ternary_gen(f"a.{_n}(b, b)"), cases=30))
SPECS += [
    Spec("Tensor.clamp_", "method", lambda r: (r.choice(["x.clamp_(min=0.0)", "x.clamp_(-1.0, 1.0)", "x.clamp_(max=0.5)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.clamp_", "function", lambda r: (r.choice(["torch.clamp_(x, min=0.0)", "torch.clamp_(x, -1.0, 1.0)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.clip_", "method", lambda r: (r.choice(["x.clip_(min=0.0)", "x.clip_(-1.0, 1.0)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.clip_", "function", lambda r: (r.choice(["torch.clip_(x, max=0.0)", "torch.clip_(x, -1.0, 1.0)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.fill_", "function", lambda r: ("torch.fill_(x, 0.5)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.bernoulli_", "method", lambda r: (r.choice(["x.bernoulli_()", "x.bernoulli_(0.3)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("torch.bernoulli", "function", lambda r: ("torch.bernoulli(x.sigmoid())", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.cauchy_", "method", lambda r: ("x.cauchy_()", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.log_normal_", "method", lambda r: ("x.log_normal_()", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.geometric_", "method", lambda r: ("x.geometric_(0.5)", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.random_", "method", lambda r: (r.choice(["x.random_()", "x.random_(0, 5)", "x.random_(3)"]), {"x": T(*rank_shape(r))}), cases=12),
]


# ---------------------------------------------------------------- matrix, shape and indexing forms


def scatter_gen(call: str):
    """`scatter`-like calls on a 2-d `x`: an index of rank 1..3 (rank mismatches raise), a `src`
    as large as the index or smaller, a dim out of range now and then."""
    def gen(r):
        return call.format(d=dim_arg(r, 2)), {"x": T(*shape(r, 2, 2, 4)), "i": L(*shape(r, r.choice([1, 2, 2, 2, 3]), 1, 2), high=2),
                                              "s": T(*shape(r, 2, 1, 3))}
    return gen


def fliplr_gen(call: str):
    return lambda r: (call, {"x": T(*rank_shape(r, 0, 3))})


SPECS += [
    Spec("Tensor.addmm", "method", mat3_gen("c.addmm(a, b)", (2, 2))),
    Spec("Tensor.baddbmm", "method", mat3_gen("c.baddbmm(a, b)", (3, 3))),
    Spec("Tensor.mv", "method", matmul_gen("a.mv(b)", (1, 2))),
    Spec("Tensor.dot", "method", matmul_gen("a.dot(b)", (1,))),
    Spec("Tensor.vdot", "method", matmul_gen("a.vdot(b)", (1,))),
    Spec("torch.vdot", "function", matmul_gen("torch.vdot(a, b)", (1,))),
    Spec("Tensor.outer", "method", lambda r: ("a.outer(b)", {"a": T(*rank_shape(r, 1, 2)), "b": T(*rank_shape(r, 1, 2))})),
    Spec("Tensor.ger", "method", lambda r: ("a.ger(b)", {"a": T(*rank_shape(r, 1, 2)), "b": T(*rank_shape(r, 1, 2))})),
    Spec("torch.ger", "function", lambda r: ("torch.ger(a, b)", {"a": T(*rank_shape(r, 1, 2)), "b": T(*rank_shape(r, 1, 2))})),
    Spec("Tensor.diag", "method", lambda r: ("x.diag()", {"x": T(*rank_shape(r, 0, 3))}), cases=20),
    Spec("Tensor.diagonal", "method", lambda r: ("x.diagonal()", {"x": T(*rank_shape(r, 1, 4))}), cases=20),
    Spec("Tensor.trace", "method", lambda r: ("x.trace()", {"x": T(*rank_shape(r, 1, 3))}), cases=20),
    Spec("Tensor.fliplr", "method", fliplr_gen("x.fliplr()")),
    Spec("Tensor.flipud", "method", fliplr_gen("x.flipud()")),
    Spec("Tensor.mH", "method", lambda r: ("x.mH", {"x": T(*rank_shape(r, 0, 4))})),
    Spec("Tensor.tril_", "method", lambda r: (r.choice(["x.tril_()", "x.tril_(1)"]), {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.triu_", "method", lambda r: (r.choice(["x.triu_()", "x.triu_(-1)"]), {"x": T(*rank_shape(r, 0, 3))})),
    Spec("Tensor.broadcast_to", "method", expand_gen("Tensor.broadcast_to")),
    Spec("Tensor.moveaxis", "method", two_dims_gen("x.moveaxis({a}, {b})")),
    Spec("Tensor.swapdims", "method", two_dims_gen("x.swapdims({a}, {b})")),
    Spec("torch.swapdims", "function", two_dims_gen("torch.swapdims(x, {a}, {b})")),
    Spec("torch.swapaxes", "function", two_dims_gen("torch.swapaxes(x, {a}, {b})")),
    Spec("Tensor.tensor_split", "method", split_gen("x.tensor_split({k}, dim={d})[0]")),
    Spec("Tensor.repeat_interleave", "method", lambda r: (f"x.repeat_interleave({r.randint(1, 3)}, dim={dim_arg(r, 2)})", {"x": T(*rank_shape(r, 1, 3))})),
    Spec("torch.unflatten", "function", lambda r: (f"torch.unflatten(x, {r.randint(-1, 1)}, ({r.choice([2, 3, -1])}, {r.choice([2, 3])}))", {"x": T(*shape(r, 2, 1, 6))})),
    Spec("torch.row_stack", "function", cat_gen("row_stack")),
    Spec("Tensor.masked_fill_", "method", lambda r: ("a.masked_fill_(m, 0.0)", {"a": T(*broadcast_pair(r)[0]), "m": B(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("torch.masked_fill", "function", lambda r: ("torch.masked_fill(a, m, 0.0)", {"a": T(*broadcast_pair(r)[0]), "m": B(*rank_shape(r, 0, 3, 1, 3))})),
    Spec("torch.scatter", "function", scatter_gen("torch.scatter(x, {d}, i, s)")),
    Spec("torch.scatter_add", "function", scatter_gen("torch.scatter_add(x, {d}, i, s)")),
    Spec("torch.scatter_reduce", "function", scatter_gen("torch.scatter_reduce(x, {d}, i, s, 'sum')")),
    Spec("Tensor.scatter_", "method", scatter_gen("x.scatter_({d}, i, s)")),
    Spec("Tensor.scatter_add_", "method", scatter_gen("x.scatter_add_({d}, i, s)")),
    Spec("Tensor.scatter_reduce", "method", scatter_gen("x.scatter_reduce({d}, i, s, 'amax')")),
    Spec("Tensor.scatter_reduce_", "method", scatter_gen("x.scatter_reduce_({d}, i, s, 'prod')")),
]

# ---------------------------------------------------------------- creation, conversion and sizes


def nested(r: random.Random) -> str:
    """A nested list literal of floats: ragged now and then (torch raises)."""
    s = rank_shape(r, 1, 3, 1, 3)

    def build(dims):
        if not dims:
            return str(round(r.random(), 2))
        items = [build(dims[1:]) for _ in range(dims[0])]
        return "[" + ", ".join(items) + "]"
    lit = build(list(s))
    if len(s) >= 2 and r.random() < 0.2:
        lit = lit[:-1] + ", [0.5]]"
    return lit


def numpy_array(r: random.Random) -> str:
    """A NumPy array expression: a creation function, a cast, arithmetic (float64 by default)."""
    s = ", ".join(map(str, rank_shape(r, 1, 3, 1, 4)))
    base = r.choice([f"np.random.rand({s})", f"np.zeros(({s},))", f"np.ones(({s},), dtype=np.int32)", f"np.random.randint(0, 5, size=({s},))",
                     f"np.random.default_rng(0).normal(size=({s},))", f"np.full(({s},), 7, dtype=np.uint8)", "np.arange(6)", "np.linspace(0, 1, 5)",
                     "np.array([[1, 2], [3, 4]])", "np.array([0.5, 1.5])"])
    return r.choice([base, f"{base}.astype(np.float32)", f"({base} * 2)", f"({base} / 2)", f"({base} > 1)", f"{base}[1:]"])


def legacy(ctor: str):
    """`torch.LongTensor(...)`: of sizes, of data (a list, ragged now and then, an array), of nothing."""
    def gen(r: random.Random):
        arg = r.choice([", ".join(map(str, rank_shape(r, 1, 3, 1, 4))), "[[1, 2, 3], [4, 5, 6]]", "[1, 0, 1]", "[[1], [2, 3]]", numpy_array(r), ""])
        return (f"{ctor}({arg})", {})
    return gen


SPECS += [
    Spec("torch.from_numpy", "function", lambda r: (f"torch.from_numpy({numpy_array(r)})", {}), cases=40),
    *[Spec(c, "function", legacy(c), cases=16) for c in ("torch.Tensor", "torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.LongTensor", "torch.IntTensor", "torch.ByteTensor", "torch.BoolTensor")],
    Spec("Tensor.byte", "method", lambda r: ("x.byte()", {"x": L(*rank_shape(r), high=4)}), cases=12),
    # a bool the core decides: the branch taken gives the shape
    Spec("Tensor.is_floating_point", "method", lambda r: ("torch.zeros(2) if x.is_floating_point() else torch.zeros(3)", {"x": r.choice([T, D, L, B])(*rank_shape(r))}), cases=12),
    Spec("torch.is_floating_point", "function", lambda r: ("torch.zeros(2) if torch.is_floating_point(x) else torch.zeros(3)", {"x": r.choice([T, D, L, B])(*rank_shape(r))}), cases=12),
    Spec("Tensor.dtype", "method", lambda r: (r.choice(["torch.zeros(2) if x.dtype == torch.bool else torch.zeros(3)", "torch.zeros(2) if x.dtype.is_floating_point else torch.zeros(3)", "torch.zeros(2) if x.dtype in (torch.float16, torch.float32) else torch.zeros(3)"]), {"x": r.choice([T, D, L, B])(*rank_shape(r))}), cases=12),
    Spec("torch.tensor", "function", lambda r: (r.choice(["torch.tensor({})", "torch.tensor({}, dtype=torch.float64)"]).format(nested(r)), {}), cases=20),
    Spec("torch.as_tensor", "function", lambda r: r.choice([(f"torch.as_tensor({nested(r)})", {}), ("torch.as_tensor(x)", {"x": T(*rank_shape(r))})]), cases=20),
    Spec("torch.logspace", "function", lambda r: (f"torch.logspace(0, 1, {r.randint(0, 6)})", {}), cases=12),
    Spec("torch.numel", "function", lambda r: ("torch.zeros(torch.numel(x))", {"x": T(*rank_shape(r, 0, 3))}), cases=12),
    Spec("Tensor.nelement", "method", lambda r: ("torch.zeros(x.nelement())", {"x": T(*rank_shape(r, 0, 3))}), cases=12),
    Spec("Tensor.ndimension", "method", lambda r: ("torch.zeros(x.ndimension())", {"x": T(*rank_shape(r, 0, 4))}), cases=12),
    Spec("Tensor.ndim", "method", lambda r: ("torch.zeros(x.ndim)", {"x": T(*rank_shape(r, 0, 4))}), cases=12),
    Spec("torch.dropout", "function", lambda r: (r.choice(["torch.dropout(x, 0.5, True)", "torch.dropout(x, 0.1, False)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.bfloat16", "method", lambda r: ("x.bfloat16()", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.type", "method", lambda r: (r.choice(["x.type(torch.float64)", "x.type(torch.long)", "x.type(dtype=torch.int32)"]), {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.data", "method", lambda r: ("x.data", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.real", "method", lambda r: ("x.real", {"x": T(*rank_shape(r))}), cases=12),
    Spec("Tensor.tolist", "method", lambda r: (r.choice(["torch.tensor(x.tolist())", "torch.tensor(x.long().tolist())", "torch.tensor([v * 2 for v in x.tolist()])"]), {"x": T(*r.choice([(), (r.randint(1, 6),)]))}), cases=12),
    Spec("torch.is_tensor", "function", lambda r: ("torch.zeros(2) if torch.is_tensor(x) else torch.zeros(3)", {"x": T(*rank_shape(r))}), cases=12),
]

# Declared, and no spec can express them (the harness compares a tensor `y`):
# - they return no tensor or only act by side effects: `Tensor.backward`, `Tensor.retain_grad`
#   (None), `Tensor.item` (a Python number the core does not know: `torch.zeros(int(x.item()))`
#   is always silent), `torch.manual_seed` (a Generator), `torch.save`, `torch.set_default_dtype`,
#   `torch.set_grad_enabled`, `torch.set_num_threads`, `torch.set_printoptions`;
# - they need an accelerator, and torch raises on this CPU-only build: `Tensor.cuda`,
#   `Tensor.pin_memory`;
# - `torch.concat`, `torch.concatenate`: aliases the core rewrites to `torch.cat` before the
#   lookup (`canon_path`), so a spec of them proves `torch.cat`'s entry (the `torch.concat` spec
#   above) and their own entries are never consulted.


# ---------------------------------------------------------------- provoked errors (issue 9, item 3)
# Fixed cases per API, each making torch raise one error of its catalogue (with a valid case or
# two beside them); the generated cases above stay as they were.

def _dim_lists(call: str) -> tuple:
    """A reduction or flip over a dim list: a dim twice ("dim d appears multiple times in the list
    of dims"), also as d and d - rank, and distinct dims."""
    x3, x2, x0 = {"x": T(2, 3, 4)}, {"x": T(2, 3)}, {"x": T()}
    return ((call.format(d="(1, 1)"), x3), (call.format(d="(0, -3)"), x3), (call.format(d="[2, 0, -1]"), x3),
            (call.format(d="(-1, 1)"), x2), (call.format(d="(0, -1)"), x0), (call.format(d="(0, 2)"), x3))


PROVOKE: dict[str, tuple] = {
    "Tensor.flip": _dim_lists("x.flip({d})"),
    "torch.flip": _dim_lists("torch.flip(x, {d})"),
    "Tensor.permute": (("x.permute(0, 0, 1)", {"x": T(2, 3, 4)}), ("x.permute(1, -1)", {"x": T(2, 3)})),
    "torch.permute": (("torch.permute(x, (1, -2, 0))", {"x": T(2, 3, 4)}),),
    "torch.prod": (("torch.prod(x, (0, 1))", {"x": T(2, 3)}),),
    "Tensor.prod": (("x.prod((0, 1))", {"x": T(2, 3)}),),
}
for _n in ("sum", "mean", "std", "var", "amax", "amin", "logsumexp", "nansum", "nanmean", "norm", "count_nonzero", "any", "all"):
    kw = "" if _n == "count_nonzero" else ", keepdim=True"
    PROVOKE[f"Tensor.{_n}"] = _dim_lists(f"x.{_n}(dim={{d}}{kw})")
    PROVOKE[f"torch.{_n}"] = _dim_lists(f"torch.{_n}(x, {{d}})" if _n != "norm" else "torch.norm(x, dim={d})")


def _movedim(fn: str) -> tuple:
    """movedim's lists: repeated in source or destination, of different lengths, valid, and an int
    against a list (a TypeError: no such overload)."""
    x3, x0 = {"x": T(2, 3, 4)}, {"x": T()}
    return tuple((fn.format(a=a, b=b), x) for a, b, x in [
        ("(0, 0)", "(1, 2)", x3), ("(0, 1)", "(2, -1)", x3), ("(0, 1)", "(2,)", x3), ("[0, -1]", "[1, 0]", x3),
        ("(0, 2)", "(-1, 0)", x3), ("[1]", "[0]", x3), ("0", "(1,)", x3), ("(0, -1)", "(0, 0)", x0), ("(1, 0, 2)", "(0, 1, 2)", x3)])


for _api, _fn in (("Tensor.movedim", "x.movedim({a}, {b})"), ("torch.movedim", "torch.movedim(x, {a}, {b})"),
                  ("torch.moveaxis", "torch.moveaxis(x, {a}, {b})"), ("Tensor.moveaxis", "x.moveaxis({a}, {b})")):
    PROVOKE[_api] = _movedim(_fn)


def _roll(call: str) -> tuple:
    """roll: one shift without dims (the flattened tensor), or one shift per dim; anything else
    raises ("shifts and dimensions must align", "`shifts` required"). A dim may repeat."""
    x = {"x": T(2, 3, 4)}
    return tuple((call.format(s=sh, d=d), x) for sh, d in [
        ("(1, 2)", "(0,)"), ("1", "(0, 1)"), ("(1, 2)", "None"), ("(1, 2)", "0"), ("[]", "0"), ("(1,)", "()"),
        ("1", "()"), ("(1, 1)", "(0, 0)"), ("(1, -2)", "(0, 2)"), ("(1,)", "None"), ("[1, 2, 3]", "[0, 1]")])


PROVOKE["Tensor.roll"] = _roll("x.roll({s}, {d})")
PROVOKE["torch.roll"] = _roll("torch.roll(x, {s}, dims={d})")


# ---- the catalogue's families not provoked above (catalogue.py; tests/test_catalogue.py); a case
# may unpack the pieces of chunk/split in a statement before the expression (harness.split_case)
def _more(api: str, *cases: tuple) -> None:
    PROVOKE[api] = PROVOKE.get(api, ()) + tuple(cases)


_more("torch.einsum", ("torch.einsum('ij')", {}))
_more("torch.dot", ("torch.dot(a, b)", {"a": T(2, 3), "b": T(3)}))
_more("torch.matmul", ("torch.matmul(a, b)", {"a": T(), "b": T(3)}))
_more("torch.cat", ("torch.cat([a, b])", {"a": T(), "b": T()}), ("torch.cat([])", {}))
_more("torch.stack", ("torch.stack([])", {}))
_more("Tensor.view", ("x.t().view(6)", {"x": T(2, 3)}))
_more("Tensor.expand", ("x.expand(-1, 3)", {"x": T(3)}))
_more("torch.repeat_interleave", ("torch.repeat_interleave(x, torch.tensor([1, 2]))", {"x": T(3)}),
      ("torch.repeat_interleave(x, torch.tensor([1, 2, 1]))", {"x": T(3)}))
_more("torch.chunk", ("torch.chunk(x, 0)[0]", {"x": T(3)}), ("a, b, c = torch.chunk(x, 2)\na", {"x": T(4, 3)}),
      ("a, b = torch.chunk(x, 2)\na", {"x": T(4, 3)}))
_more("Tensor.chunk", ("a, b, c = x.chunk(2, 1)\nc", {"x": T(4, 4)}))
_more("torch.split", ("torch.split(x, -1)[0]", {"x": T(3)}), ("a, b = torch.split(x, 1)\na", {"x": T(3, 2)}))
_more("Tensor.split", ("a, b, c = x.split([1, 3])\na", {"x": T(4, 2)}))
_more("Tensor.unbind", ("a, b = x.unbind()\na", {"x": T(3, 2)}))
_more("torch.linspace", ("torch.linspace(0, 1, -1)", {}))

# ---- splits into many parts (issue 9, item 4): more parts than a loop unrolls (512) are a
# sequence whose items are alike; the element keeps its shape through indexing and loops
def _many_parts(call: str, n: int) -> tuple:
    """`call` (with `{n}`) on x [2, n, 3]: an item viewed or multiplied, right and wrong, and a
    loop over the parts whose body multiplies each by w (torch raises when w does not fit)."""
    x = T(2, n, 3)
    return (
        (f"{call.format(n=n)}[5].reshape(-1) @ w", {"x": x, "w": T(6, 4)}),
        (f"{call.format(n=n)}[-1].reshape(-1) @ w", {"x": x, "w": T(5, 4)}),
        (f"for p in {call.format(n=n)}:\n    z = p.reshape(2, -1) @ w\nx", {"x": x, "w": T(3, 4)}),
        (f"for p in {call.format(n=n)}:\n    z = p.reshape(2, -1) @ w\nx", {"x": x, "w": T(4, 4)}),
    )


for _n in (100, 600):
    _more("Tensor.split", *_many_parts("x.split(1, 1)", _n))
    _more("torch.split", *_many_parts("torch.split(x, 1, dim=1)", _n))
    _more("Tensor.unbind", *_many_parts("x.unbind(1)", _n))
    _more("torch.unbind", *_many_parts("torch.unbind(x, 1)", _n))
    _more("Tensor.chunk", *_many_parts("x.chunk({n}, 1)", _n))
    _more("torch.chunk", *_many_parts("torch.chunk(x, {n}, dim=1)", _n))


def _grouped(r, dims: list) -> list:
    """A view target of `dims` cut into random runs of consecutive dims, each run's product."""
    k = len(dims)
    cuts = sorted(r.sample(range(1, k), r.randint(0, k - 1))) if k > 1 else []
    bounds = [0] + cuts + [k]
    target = []
    for lo, hi in zip(bounds, bounds[1:]):
        prod = 1
        for d in dims[lo:hi]:
            prod *= d
        target.append(prod)
    return target


def _strided_views(n: int, seed: str, method: str) -> tuple:
    """`view`/`reshape` of a tensor made non-contiguous by transpose, permute, t(), .mT or movedim
    (sometimes twice, or through relu, which keeps the strides, or softmax, which does not), with
    random shapes, many of them with size-1 dims (which make many views legal), and targets that
    group the permuted dims (often across a stride gap: torch's view raises, reshape copies),
    split a dim, or infer one with -1 (SHP112; issue 9, item 4)."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        rank = r.randint(2, 4)
        s = [r.choice([2, 3, 4]) if r.random() < 0.7 else 1 for _ in range(rank)]
        dims = list(range(rank))
        kind = r.choice(["transpose", "transpose", "permute", "permute", "t", "mT", "movedim", "twice", "relu", "softmax"])
        a, b = r.sample(range(rank), 2)
        if kind == "permute":
            p = dims[:]
            r.shuffle(p)
            op, perm = f"permute({fmt_shape(p)})", p
        elif kind == "t" and rank == 2:
            op, perm = "t()", [1, 0]
        elif kind == "mT":
            perm = dims[:-2] + [rank - 1, rank - 2]
            op = "mT"
        elif kind == "movedim":
            perm = dims[:]
            perm.insert(b, perm.pop(a))
            op = f"movedim({a}, {b})"
        else:
            perm = dims[:]
            perm[a], perm[b] = perm[b], perm[a]
            op = f"transpose({a}, {b})"
            if kind == "twice":
                c, d = r.sample(range(rank), 2)
                perm[c], perm[d] = perm[d], perm[c]
                op += f".transpose({c}, {d})"
            elif kind in ("relu", "softmax"):
                op += f".{kind}({'-1' if kind == 'softmax' else ''})"
        ps = [s[i] for i in perm]
        # group the permuted dims (consecutive runs), then maybe split a group or infer one
        target = _grouped(r, ps)
        if r.random() < 0.2:
            k = r.randrange(len(target))
            if target[k] % 2 == 0 and target[k] > 2:
                target[k:k + 1] = [2, target[k] // 2]
        if r.random() < 0.15:
            target.insert(r.randrange(len(target) + 1), 1)
        if r.random() < 0.3:
            target[r.randrange(len(target))] = -1
        out.append((f"x.{op}.{method}({fmt_shape(target)})", {"x": T(*s)}))
    return tuple(out)


def _sliced_views(n: int, seed: str, method: str) -> tuple:
    """`view`/`reshape` of a basic slice (slices with bounds and steps, ints, `...`, `narrow`)
    of a contiguous or permuted tensor: a slice keeps its input's strides, so a transposed
    tensor stays transposed, and cutting a dim leaves gaps unless every dim outer to it in
    memory has size 1 (`x.t()[1:3].view(-1)` raises, `x[1:].view(-1)` of a contiguous `x`
    does not). Targets group the sliced dims as `_strided_views` does."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        rank = r.randint(2, 4)
        s = [r.choice([2, 3, 4, 5]) if r.random() < 0.8 else 1 for _ in range(rank)]
        perm = list(range(rank))
        op = ""
        kind = r.choice(["contiguous", "transpose", "transpose", "permute", "t"])
        if kind == "permute":
            r.shuffle(perm)
            op = f".permute({fmt_shape(perm)})"
        elif kind == "t" and rank == 2:
            perm, op = [1, 0], ".t()"
        elif kind in ("transpose", "t"):
            a, b = r.sample(range(rank), 2)
            perm[a], perm[b] = perm[b], perm[a]
            op = f".transpose({a}, {b})"
        ps = [s[i] for i in perm]
        result = []
        if r.random() < 0.2:
            d = r.randrange(rank)
            start = r.randrange(ps[d])
            length = r.randint(1, ps[d] - start)
            index = f".narrow({d}, {start}, {length})"
            result = ps[:d] + [length] + ps[d + 1:]
        else:
            parts = []
            for size in ps[: r.randint(1, rank)]:
                c = r.random()
                if c < 0.3:
                    parts.append(":")
                    result.append(size)
                elif c < 0.55:
                    lo, hi = sorted(r.sample(range(size + 1), 2)) if size > 1 else (0, 1)
                    parts.append(f"{lo}:{hi}")
                    result.append(len(range(size)[lo:hi]))
                elif c < 0.75:
                    parts.append("::2")
                    result.append(len(range(size)[::2]))
                else:
                    parts.append(str(r.randrange(size)))
            result += ps[len(parts):]
            if r.random() < 0.15 and len(parts) < rank:
                parts.append("...")
            index = f"[{', '.join(parts)}]"
        if not result or 0 in result:
            continue
        target = _grouped(r, result)
        if r.random() < 0.3:
            target[r.randrange(len(target))] = -1
        out.append((f"x{op}{index}.{method}({fmt_shape(target)})", {"x": T(*s)}))
    return tuple(out)


PROVOKE["Tensor.view"] = PROVOKE.get("Tensor.view", ()) + _strided_views(160, "strided-view", "view")
PROVOKE["Tensor.view"] = PROVOKE["Tensor.view"] + _sliced_views(160, "sliced-view", "view")
PROVOKE["Tensor.reshape"] = PROVOKE.get("Tensor.reshape", ()) + _sliced_views(40, "sliced-reshape", "reshape")
PROVOKE["Tensor.reshape"] = PROVOKE.get("Tensor.reshape", ()) + _strided_views(60, "strided-reshape", "reshape")

SPECS = [dataclasses.replace(s, provoke=s.provoke + PROVOKE.get(s.api, ())) for s in SPECS]
# index tensors with known values at the API's bound (differential/values.py)
SPECS = [dataclasses.replace(s, provoke=s.provoke + values.CASES.get(s.api, ())) for s in SPECS]
