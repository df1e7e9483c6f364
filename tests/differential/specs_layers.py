"""Specs for `torch.nn` layers and their `torch.nn.functional` twins.

Each generator mixes valid and invalid configurations (wrong channel count, rank, too-small
spatial size, bad construction arguments) so that both directions of agreement are exercised.
Elementwise activations have no invalid shapes: their generators vary rank and dtype instead.
"""
from __future__ import annotations

import dataclasses

from . import values
from .harness import B, D, L, Spec, T, near, shape




# ---- linear family ------------------------------------------------------------------------

def _linear(r):
    i, o = r.randint(1, 6), r.randint(1, 6)
    x = shape(r, r.randint(0, 3), 1, 4) + (near(r, i),)
    return f"nn.Linear({i}, {o})(x)", {"x": T(*x)}


def _f_linear(r):
    i, o = r.randint(1, 6), r.randint(1, 6)
    x = shape(r, r.randint(0, 3), 1, 4) + (near(r, i),)
    ins = {"x": T(*x), "w": T(o, i)}
    if r.random() < 0.3:
        ins["b"] = T(near(r, o))
        return "F.linear(x, w, b)", ins
    return "F.linear(x, w)", ins


def _bilinear(r, functional=False):
    i1, i2, o = r.randint(1, 5), r.randint(1, 5), r.randint(1, 5)
    batch = shape(r, r.randint(0, 2), 1, 4)
    b2 = batch if r.random() < 0.7 else shape(r, len(batch), 1, 4)
    ins = {"a": T(*batch, near(r, i1)), "b": T(*b2, near(r, i2))}
    if functional:
        ins["w"] = T(o, i1, i2)
        return "F.bilinear(a, b, w)", ins
    return f"nn.Bilinear({i1}, {i2}, {o})(a, b)", ins


def _identity(r):
    return "nn.Identity(3, k=4)(x)", {"x": T(*shape(r, r.randint(0, 4)))}


def _flatten(r):
    x = shape(r, r.randint(1, 4), 1, 4)
    s, e = r.randint(-4, 3), r.randint(-4, 3)
    return f"nn.Flatten({s}, {e})(x)", {"x": T(*x)}


def _unflatten(r):
    x = list(shape(r, r.randint(1, 3), 1, 4))
    d = r.randint(-3, 2)
    k = r.randint(0, len(x) - 1)
    x[k] = r.choice([4, 6, 8, 12])
    sizes = r.choice([(2, -1), (2, 2), (3, 4), (-1, 4), (2, 3), (1, -1, 2)])
    return f"nn.Unflatten({d}, {sizes})(x)", {"x": T(*x)}


# ---- convolutions and pools ---------------------------------------------------------------

def _conv(n, transposed=False, functional=False):
    def gen(r):
        cin, cout = r.choice([1, 2, 3, 4, 6]), r.choice([1, 2, 4, 6])
        g = r.choice([1, 1, 1, 2, 3])
        k = r.randint(1, 4)
        s = r.randint(1, 3)
        d = r.randint(1, 2)
        p = r.randint(0, 2)
        sizes = [r.randint(1, 9) for _ in range(n)]
        batched = r.random() < 0.8
        c = near(r, cin)
        x = ([r.randint(1, 3)] if batched else []) + [c] + sizes
        if r.random() < 0.08:
            x = x[:1]  # wrong rank
        name = ("ConvTranspose" if transposed else "Conv") + f"{n}d"
        if functional:
            fname = ("conv_transpose" if transposed else "conv") + f"{n}d"
            if transposed:
                w = T(cin, cout // g if cout % g == 0 else cout, *([k] * n))
                op = r.randint(0, max(s, d) - 1) if r.random() < 0.8 else r.randint(0, 3)
                kw = f"stride={s}, padding={p}, output_padding={op}, groups={g}, dilation={d}"
            else:
                w = T(cout, cin // g if cin % g == 0 else cin, *([k] * n))
                pad = r.choice([p, p, "'same'", "'valid'"])
                kw = f"stride={s if pad != chr(39) + 'same' + chr(39) else 1}, padding={pad}, dilation={d}, groups={g}"
            return f"F.{fname}(x, w, {kw})", {"x": T(*x), "w": w}
        if transposed:
            op = r.randint(0, max(s, d) - 1) if r.random() < 0.8 else r.randint(0, 3)
            kw = f"stride={s}, padding={p}, output_padding={op}, groups={g}, dilation={d}"
        else:
            pad = r.choice([p, p, "'same'", "'valid'"])
            st = s if r.random() < 0.3 or pad != "'same'" else 1
            kw = f"stride={st}, padding={pad}, dilation={d}, groups={g}"
        return f"nn.{name}({cin}, {cout}, {k}, {kw})(x)", {"x": T(*x)}
    return gen


def _pool(n, kind, functional=False):
    def gen(r):
        k = r.randint(1, 4)
        s = r.choice([None, 1, 2, 3])
        p = r.randint(0, 2)
        ceil = r.random() < 0.3
        sizes = [r.randint(1, 9) for _ in range(n)]
        batched = r.random() < 0.7
        x = ([r.randint(1, 3)] if batched else []) + [r.randint(1, 3)] + sizes
        if r.random() < 0.08:
            x = x[-1:]  # too few dims
        kw = f"{k}, stride={s}, padding={p}, ceil_mode={ceil}"
        if kind == "max" and r.random() < 0.4:
            kw += f", dilation={r.randint(1, 2)}"
        if functional:
            return f"F.{kind}_pool{n}d(x, {kw})", {"x": T(*x)}
        return f"nn.{'Max' if kind == 'max' else 'Avg'}Pool{n}d({kw})(x)", {"x": T(*x)}
    return gen


def _adaptive(n, kind, functional=False):
    def gen(r):
        sizes = [r.randint(1, 9) for _ in range(n)]
        x = shape(r, r.choice([n, n + 1, n + 1, n + 2, n + 2, n + 3]), 1, 3)[: -n or None]
        x = tuple(x) + tuple(sizes) if len(x) + n <= n + 3 else tuple(sizes)
        if r.random() < 0.5:
            o = r.randint(1, 5)
        else:
            o = tuple(r.choice([None, 1, 2, 3, 4]) for _ in range(n))
            if n == 1:
                o = o[0] or 2
        name = f"adaptive_{kind}_pool{n}d"
        mod = f"Adaptive{'Avg' if kind == 'avg' else 'Max'}Pool{n}d"
        expr = f"F.{name}(x, {o!r})" if functional else f"nn.{mod}({o!r})(x)"
        return expr, {"x": T(*x)}
    return gen


# ---- normalization ------------------------------------------------------------------------

def _batchnorm(n, functional=False):
    def gen(r):
        c = r.randint(1, 5)
        rank = r.choice({1: [2, 3, 3, 4], 2: [4, 4, 4, 3, 5], 3: [5, 5, 5, 4]}[n])
        x = [r.randint(1, 3) for _ in range(rank)]
        x[1] = near(r, c)
        if functional:
            eval_ = r.random() < 0.4
            return f"F.batch_norm(x, m, v, training={not eval_})", {"x": T(*x), "m": T(c), "v": T(c)}
        return f"nn.BatchNorm{n}d({c})(x)", {"x": T(*x)}
    return gen


def _layernorm(r, functional=False, module="LayerNorm"):
    ns = shape(r, r.randint(1, 2), 1, 4)
    x = list(shape(r, r.randint(0, 2), 1, 3)) + [near(r, d) for d in ns]
    if r.random() < 0.1:
        x = x[-1:]
    if functional:
        return f"F.layer_norm(x, {list(ns)})", {"x": T(*x)}
    arg = ns[0] if len(ns) == 1 and r.random() < 0.5 else list(ns)
    return f"nn.{module}({arg})(x)", {"x": T(*x)}


def _groupnorm(r, functional=False):
    g = r.randint(1, 3)
    c = g * r.randint(1, 3) if r.random() < 0.8 else r.randint(1, 6)
    x = [r.randint(1, 3), near(r, c)] + list(shape(r, r.randint(0, 2), 1, 4))
    if functional:
        return f"F.group_norm(x, {g})", {"x": T(*x)}
    return f"nn.GroupNorm({g}, {c})(x)", {"x": T(*x)}


def _instancenorm(n, functional=False):
    def gen(r):
        c = r.randint(1, 4)
        rank = r.choice([n + 1, n + 2, n + 2, n + 3 if r.random() < 0.3 else n + 2])
        x = [r.randint(1, 3) for _ in range(rank)]
        if functional:
            return "F.instance_norm(x)", {"x": T(*x)}
        return f"nn.InstanceNorm{n}d({c})(x)", {"x": T(*x)}
    return gen


# ---- embeddings ---------------------------------------------------------------------------

def _embedding(r, functional=False):
    n, d = r.randint(2, 6), r.randint(1, 5)
    x = shape(r, r.randint(0, 3), 1, 4)
    ins = {"i": L(*x, high=n) if r.random() < 0.75 else T(*x)}
    if functional:
        ins["w"] = T(n, d)
        return "F.embedding(i, w)", ins
    return f"nn.Embedding({n}, {d})(i)", ins


def _embedding_bag(r, functional=False):
    n, d = r.randint(2, 6), r.randint(1, 5)
    if not functional and r.random() < 0.3:
        # a 1-D input of bags given by offsets (and, now and then, inputs torch refuses)
        x = shape(r, r.choice([1, 1, 1, 2]), 2, 6)
        offsets = r.choice(["torch.tensor([0])", "torch.tensor([0, 1])", "torch.tensor([0, 2, 2])", "torch.tensor([[0, 1]])", "torch.tensor([0, 1], dtype=torch.int32)"])
        mode = r.choice(["mean", "sum", "max"])
        return f"nn.EmbeddingBag({n}, {d}, mode={mode!r})(i, {offsets})", {"i": L(*x, high=n)}
    x = shape(r, r.choice([2, 2, 2, 1, 3]), 1, 4)
    ins = {"i": L(*x, high=n)}
    if functional:
        ins["w"] = T(n, d)
        return "F.embedding_bag(i, w)", ins
    return f"nn.EmbeddingBag({n}, {d}, mode={r.choice(['mean', 'sum', 'max'])!r})(i)", ins


def _f_embedding_bag(r):
    """Without offsets (a 2-D input: one bag per row) and, now and then, with them (a 1-D input)."""
    n, d = r.randint(2, 6), r.randint(1, 5)
    w = (D if r.random() < 0.2 else T)(n, d)
    if r.random() < 0.25:
        x = shape(r, r.choice([1, 1, 2]), 2, 6)
        offsets = r.choice(["torch.tensor([0])", "torch.tensor([0, 1])", "torch.tensor([0, 2, 2])", "torch.tensor([[0, 1]])"])
        mode = r.choice(["mean", "sum", "max"])
        return f"F.embedding_bag(i, w, {offsets}, mode={mode!r})", {"i": L(*x, high=n), "w": w}
    x = shape(r, r.choice([2, 2, 2, 1, 3]), 1, 4)
    i = L(*x, high=n) if r.random() < 0.9 else T(*x)
    if r.random() < 0.3:
        return f"F.embedding_bag(i, w, mode={r.choice(['mean', 'sum', 'max'])!r})", {"i": i, "w": w}
    return "F.embedding_bag(i, w)", {"i": i, "w": w}


def _one_hot(r):
    x = shape(r, r.randint(0, 3), 1, 4)
    k = r.randint(2, 5)
    return f"F.one_hot(i, {k})", {"i": L(*x, high=2) if r.random() < 0.8 else T(*x)}


# ---- recurrent ----------------------------------------------------------------------------

def _rnn(kind):
    def gen(r):
        i, h = r.randint(1, 5), r.randint(2, 5)
        nl = r.randint(1, 2)
        bf = r.random() < 0.4
        bi = r.random() < 0.4
        proj = r.choice([0, 0, 1, h - 1, h + 1]) if kind == "LSTM" else 0
        length, n = r.randint(1, 4), r.randint(1, 3)
        batched = r.random() < 0.75
        x = ([n, length] if bf else [length, n]) if batched else [length]
        x = x + [near(r, i)]
        extra = f", proj_size={proj}" if proj else ""
        ctor = f"nn.{kind}({i}, {h}, num_layers={nl}, batch_first={bf}, bidirectional={bi}{extra})"
        ins = {"x": T(*x)}
        which = r.choice([0, 0, 1])
        if r.random() < 0.4:
            dn = (2 if bi else 1) * nl
            hout = proj or h
            hs = [near(r, dn)] + ([near(r, n)] if batched else []) + [near(r, hout)]
            if r.random() < 0.1:
                hs = hs[1:] if batched else [1] + hs
            ins["h"] = T(*hs)
            if kind == "LSTM":
                ins["c"] = T(*([dn] + ([n] if batched else []) + [near(r, h)]))
                return f"{ctor}(x, (h, c))[{which}]" + ("[0]" if which else ""), ins
            return f"{ctor}(x, h)[{which}]", ins
        return f"{ctor}(x)[{which}]" + ("[0]" if which and kind == "LSTM" else ""), ins
    return gen


def _cell(kind):
    def gen(r):
        i, h = r.randint(1, 5), r.randint(1, 5)
        n = r.randint(1, 3)
        batched = r.random() < 0.75
        x = ([n] if batched else []) + [near(r, i)]
        if r.random() < 0.08:
            x = [1] + x
        ins = {"x": T(*x)}
        ctor = f"nn.{kind}({i}, {h})"
        if r.random() < 0.4:
            hs = ([near(r, n)] if batched else []) + [near(r, h)]
            ins["h"] = T(*hs)
            if kind == "LSTMCell":
                ins["c"] = T(*hs)
                return f"{ctor}(x, (h, c))[{r.randint(0, 1)}]", ins
            return f"{ctor}(x, h)", ins
        return f"{ctor}(x)" + (f"[{r.randint(0, 1)}]" if kind == "LSTMCell" else ""), ins
    return gen


# ---- attention ----------------------------------------------------------------------------

def _mha(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3) if r.random() < 0.9 else 3
    bf = r.random() < 0.4
    kd = r.choice([None, None, 2, 3])
    vd = r.choice([None, None, 2, 5])
    lq, s, n = r.randint(1, 3), r.randint(1, 3), r.randint(1, 3)
    batched = r.random() < 0.8

    def seq(length, last, nn_=n):
        if not batched:
            return [length, last]
        return [nn_, length, last] if bf else [length, nn_, last]

    q = seq(lq, near(r, e))
    n2 = near(r, n)
    k = seq(s, near(r, kd or e), n2)
    v = seq(near(r, s), near(r, vd or e), n2)
    kw = f"batch_first={bf}"
    if kd:
        kw += f", kdim={kd}"
    if vd:
        kw += f", vdim={vd}"
    ins = {"q": T(*q), "k": T(*k), "v": T(*v)}
    extra = ""
    if r.random() < 0.3:
        ins["m"] = T(*r.choice([[lq, s], [near(r, lq), near(r, s)], [n * h, lq, s]]))
        extra = ", attn_mask=m"
    return f"nn.MultiheadAttention({e}, {h}, {kw})(q, k, v{extra})[{r.choice([0, 0, 1])}]", ins


def _sdpa(r):
    batch = shape(r, r.randint(0, 2), 1, 3)
    lq, s, e, ev = r.randint(1, 4), r.randint(1, 4), r.randint(1, 4), r.randint(1, 4)
    b2 = batch if r.random() < 0.8 else shape(r, len(batch), 1, 3)
    ins = {"q": T(*batch, lq, e), "k": T(*b2, s, near(r, e)), "v": T(*b2, near(r, s), ev)}
    return "F.scaled_dot_product_attention(q, k, v)", ins


def _tel(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3) if r.random() < 0.9 else 3
    bf = r.random() < 0.4
    x = [r.randint(1, 3), r.randint(1, 3), near(r, e)] if r.random() < 0.8 else [r.randint(1, 3), near(r, e)]
    if r.random() < 0.06:
        x = [1] + x
    return f"nn.TransformerEncoderLayer({e}, {h}, dim_feedforward=8, dropout=0.0, batch_first={bf})(x)", {"x": T(*x)}


def _te(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3)
    x = [r.randint(1, 3), r.randint(1, 3), near(r, e)] if r.random() < 0.8 else [r.randint(1, 3), near(r, e)]
    return f"nn.TransformerEncoder(nn.TransformerEncoderLayer({e}, {h}, 8, 0.0), num_layers={r.randint(1, 2)}, enable_nested_tensor=False)(x)", {"x": T(*x)}


def _decoder_inputs(r, e, bf):
    n, t, s = r.randint(1, 3), r.randint(1, 3), r.randint(1, 3)
    if r.random() < 0.8:
        tgt = [n, t, near(r, e)] if bf else [t, n, near(r, e)]
        n2 = near(r, n)
        mem = [n2, s, near(r, e)] if bf else [s, n2, near(r, e)]
    else:
        tgt, mem = [t, near(r, e)], [s, near(r, e)]
    return {"t": T(*tgt), "m": T(*mem)}


def _decoder_masks(r, ins, bf, tgt="t", mem="m"):
    """Half of the time, decoder masks as keywords (a causal tgt_mask, key padding masks), of
    the right shape or near it: `(call text, inputs)` to append to the call."""
    if r.random() < 0.5:
        return "", {}
    t, m = ins[tgt].shape, ins[mem].shape
    if len(t) != 3 or len(m) != 3:
        return "", {}
    (n, lt), (n2, ls) = (t[0], t[1]) if bf else (t[1], t[0]), (m[0], m[1]) if bf else (m[1], m[0])
    out, args = {}, []
    if r.random() < 0.7:
        out["tm"] = (T if r.random() < 0.5 else B)(lt, near(r, lt))
        args.append("tgt_mask=tm")
    if r.random() < 0.5:
        out["tk"] = B(n, near(r, lt))
        args.append("tgt_key_padding_mask=tk")
    if r.random() < 0.5:
        out["mk"] = B(n2, near(r, ls))
        args.append("memory_key_padding_mask=mk")
    return "".join(", " + a for a in args), out


def _tdl(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3) if r.random() < 0.9 else 3
    bf = r.random() < 0.4
    ins = _decoder_inputs(r, e, bf)
    kw, masks = _decoder_masks(r, ins, bf)
    return f"nn.TransformerDecoderLayer({e}, {h}, dim_feedforward=8, dropout=0.0, batch_first={bf})(t, m{kw})", {**ins, **masks}


def _td(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3)
    ins = _decoder_inputs(r, e, False)
    kw, masks = _decoder_masks(r, ins, False)
    return f"nn.TransformerDecoder(nn.TransformerDecoderLayer({e}, {h}, 8, 0.0), num_layers={r.randint(1, 2)})(t, m{kw})", {**ins, **masks}


def _transformer(r):
    h = r.choice([1, 2])
    e = h * r.randint(1, 3) if r.random() < 0.9 else 3
    bf = r.random() < 0.4
    ins = _decoder_inputs(r, e, bf)
    ins = {"s": ins["m"], "t": ins["t"]}
    kw, masks = _decoder_masks(r, ins, bf, mem="s")
    return (f"nn.Transformer(d_model={e}, nhead={h}, num_encoder_layers=1, num_decoder_layers=1, "
            f"dim_feedforward=8, dropout=0.0, batch_first={bf})(s, t{kw})"), {**ins, **masks}


# ---- containers and pass-throughs ---------------------------------------------------------

def _mlp(r):
    """Modules for a container, the input they take, and the output size (for a second Linear)."""
    i, h, o = r.randint(1, 5), r.randint(1, 5), r.randint(1, 5)
    mods = [f"nn.Linear({i}, {h})", r.choice(["nn.ReLU()", "nn.Tanh()", "nn.Identity()"]), f"nn.Linear({near(r, h)}, {o})"]
    x = shape(r, r.randint(0, 2), 1, 3) + (near(r, i),)
    return mods, {"x": T(*x)}


def _sequential(r):
    mods, ins = _mlp(r)
    if r.random() < 0.2:
        mods = mods[:r.randint(0, 2)]  # an empty Sequential is the identity
    if r.random() < 0.1:
        keyed = ", ".join(f"{k!r}: {m}" for k, m in zip("abc", mods))
        return f"nn.Sequential({{{keyed}}})(x)", ins  # a plain dict is not a module
    return f"nn.Sequential({', '.join(mods)})(x)", ins


def _module_list(r):
    mods, ins = _mlp(r)
    k = r.choice([0, 0, 1, -1, -3])
    return f"nn.ModuleList([{', '.join(mods)}])[{k}](x)", ins


def _module_dict(r):
    mods, ins = _mlp(r)
    keyed = ", ".join(f"{k!r}: {m}" for k, m in zip("abc", mods))
    return f"nn.ModuleDict({{{keyed}}})[{r.choice(['a', 'a', 'b', 'c'])!r}](x)", ins


def _data_parallel(r):
    if r.random() < 0.5:
        mods, ins = _mlp(r)
        return f"nn.DataParallel({mods[0]})(x)", ins
    expr, ins = _conv(2)(r)
    return f"nn.DataParallel({expr[:-3]})(x)", ins


def _parameter(r):
    x = shape(r, r.randint(0, 3), 1, 4)
    make = r.choice([T, T, D, L, B])
    if r.random() < 0.3:
        return "nn.Parameter(x, requires_grad=False)", {"x": make(*x)}
    return "nn.Parameter(x)", {"x": make(*x)}


# ---- resampling and padding ---------------------------------------------------------------

def _upsample(r, functional=False, fname="F.interpolate"):
    rank = r.choice([3, 4, 5, 4, 2])
    x = shape(r, rank, 1, 4)
    n = max(rank - 2, 1)
    args = []
    if r.random() < 0.5:
        size = True
        args.append(f"size={r.randint(1, 6) if r.random() < 0.5 else tuple(r.randint(1, 6) for _ in range(n))}")
    else:
        size = False
        args.append(f"scale_factor={r.choice([1, 2, 3, 0.5, 1.5, 2.0])}")
    # mode, align_corners (only the interpolating modes take one), recompute_scale_factor and
    # antialias (bilinear/bicubic on 4-D only): each torch check provoked now and then
    if r.random() < 0.6:
        mode = r.choice(["nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact"])
        mode = {3: "linear", 4: r.choice(["bilinear", "bicubic"]), 5: "trilinear"}.get(rank, mode) if r.random() < 0.6 else mode
        args.append(f"mode={mode!r}")
        if r.random() < 0.6:
            args.append(f"align_corners={r.choice([True, False, False, None])}")
    elif r.random() < 0.3:
        args.append(f"align_corners={r.choice([True, False, None])}")
    if fname == "F.upsample":
        pass
    elif r.random() < 0.25:
        args.append(f"recompute_scale_factor={r.choice([True, False, None]) if not size else r.choice([True, False])}")
    elif functional and r.random() < 0.25:
        args.append(f"antialias={r.choice([True, False])}")
    arg = ", ".join(args)
    if functional:
        return f"{fname}(x, {arg})", {"x": T(*x)}
    return f"nn.Upsample({arg})(x)", {"x": T(*x)}


def _upsampling_2d(kind):
    def gen(r):
        rank = r.choice([4, 4, 4, 3, 5])
        x = shape(r, rank, 1, 4)
        if r.random() < 0.5:
            arg = f"size={r.randint(1, 6) if r.random() < 0.5 else tuple(r.randint(1, 6) for _ in range(r.choice([2, 2, 1, 3])))}"
        else:
            arg = f"scale_factor={r.choice([1, 2, 3, 0.5, 1.5, 2.0, (2, 2), (1.5, 2)])}"
        if r.random() < 0.05:
            arg = ""
        return f"nn.Upsampling{kind}2d({arg})(x)", {"x": T(*x)}
    return gen


def _pixel_shuffle(unshuffle, functional=False):
    def gen(r):
        f = r.randint(1, 3)
        lead = shape(r, r.randint(0, 2), 1, 3)
        if unshuffle:
            x = lead + (r.randint(1, 3), f * r.randint(1, 3) if r.random() < 0.7 else r.randint(1, 5), f * r.randint(1, 2))
        else:
            x = lead + (f * f * r.randint(1, 2) if r.random() < 0.7 else r.randint(1, 6), r.randint(1, 3), r.randint(1, 3))
        if r.random() < 0.1:
            x = x[-2:]
        name = "pixel_unshuffle" if unshuffle else "pixel_shuffle"
        mod = "PixelUnshuffle" if unshuffle else "PixelShuffle"
        return (f"F.{name}(x, {f})" if functional else f"nn.{mod}({f})(x)"), {"x": T(*x)}
    return gen


def _pad_module(kind, n):
    def gen(r):
        if r.random() < 0.4:
            pad = r.randint(0, 3)
        else:
            pad = tuple(r.randint(0, 3) for _ in range(2 * n))
        rank = r.choice([max(n - 1, 1), n, n + 1, n + 1, n + 2, n + 3])
        x = shape(r, rank, 1, 4)
        ctor = f"nn.{kind}{n}d({pad!r}" + (", 1.5)" if kind == "ConstantPad" else ")")
        return f"{ctor}(x)", {"x": T(*x)}
    return gen


def _f_pad(r):
    mode = r.choice(["constant", "constant", "reflect", "replicate", "circular"])
    n = r.randint(1, 3)
    pad = tuple(r.randint(0, 3) for _ in range(2 * n))
    if r.random() < 0.1:
        pad = pad[:-1]
    x = shape(r, r.randint(1, 5), 1, 4)
    return f"F.pad(x, {pad!r}, mode={mode!r})", {"x": T(*x)}


# ---- sliding blocks: Unfold (im2col) and Fold (col2im) -------------------------------------

def _pair_arg(r, lo, hi, bad=None):
    """An int or a pair in [lo, hi]; now and then `bad` (a non-positive value or a 3-tuple)."""
    if bad is not None and r.random() < 0.06:
        return bad
    if r.random() < 0.6:
        return r.randint(lo, hi)
    return (r.randint(lo, hi), r.randint(lo, hi))


def _blocks_kw(r):
    """Keyword arguments of a fold/unfold, sometimes invalid (zero stride/dilation, negative padding, a 3-tuple)."""
    ranges = {"dilation": (1, 2, 0), "padding": (0, 2, -1), "stride": (1, 3, 0)}
    kw = {}
    for n, (lo, hi, bad) in ranges.items():
        if r.random() < 0.5:
            kw[n] = _pair_arg(r, lo, hi, r.choice([bad, (1, 1, 1)]))
    return kw


def _two(v):
    return v if isinstance(v, tuple) else (v, v)


def _args(*positional, **kw):
    return ", ".join([repr(p) for p in positional] + [f"{k}={v!r}" for k, v in kw.items()])


def _unfold(functional=False):
    def gen(r):
        k = _pair_arg(r, 1, 4, r.choice([0, -1, (2, 2, 2)]))
        rank = r.choice([4, 4, 4, 3, 3, 2, 5])
        x = shape(r, rank, 1, 8)
        if rank >= 3 and r.random() < 0.05:
            x = x[:-3] + (0,) + x[-2:]  # a zero-size channel dim
        args = _args(k, **_blocks_kw(r))
        return (f"F.unfold(x, {args})" if functional else f"nn.Unfold({args})(x)"), {"x": T(*x)}
    return gen


def _fold(functional=False):
    def gen(r):
        k = _pair_arg(r, 1, 3, r.choice([0, (2, 2, 2)]))
        out = _pair_arg(r, 1, 7, r.choice([0, -1, (4, 4, 4)]))
        kw = _blocks_kw(r)
        pairs = [k, out, *kw.values()]
        c = r.randint(1, 3)
        if all(isinstance(v, int) or len(v) == 2 for v in pairs):
            (kh, kw_), (oh, ow) = _two(k), _two(out)
            (dh, dw), (ph, pw), (sh, sw) = (_two(kw.get(n, dv)) for n, dv in (("dilation", 1), ("padding", 0), ("stride", 1)))
            blocks = 1
            for size, kk, d, p, s in ((oh, kh, dh, ph, sh), (ow, kw_, dw, pw, sw)):
                blocks *= (size + 2 * p - d * (kk - 1) - 1) // s + 1 if s > 0 else 1
            cin = c * kh * kw_
        else:
            blocks, cin = r.randint(1, 16), r.randint(1, 12)
        if r.random() < 0.2:
            cin += r.choice([-1, 1, 2])  # not divisible by the kernel's size
        if r.random() < 0.2 or blocks < 1:
            blocks = max(1, blocks + r.choice([-1, 1, 3]))  # not the number of blocks
        x = ([r.randint(1, 3)] if r.random() < 0.7 else []) + [max(cin, 1), blocks]
        if r.random() < 0.06:
            x = [2] + x if len(x) == 3 else x[-1:]  # wrong rank
        args = _args(out, k, **kw)
        return (f"F.fold(x, {args})" if functional else f"nn.Fold({args})(x)"), {"x": T(*x)}
    return gen

# ---- activations --------------------------------------------------------------------------

def _elementwise(expr):
    def gen(r):
        x = shape(r, r.randint(0, 4), 1, 4)
        return expr, {"x": (D if r.random() < 0.3 else T)(*x)}
    return gen


def _softmax(expr):
    def gen(r):
        x = shape(r, r.randint(0, 4), 1, 4)
        return expr.format(d=r.randint(-4, 3)), {"x": T(*x)}
    return gen


def _glu(expr):
    def gen(r):
        x = shape(r, r.randint(1, 3), 1, 6)
        return expr.format(d=r.randint(-3, 2)), {"x": T(*x)}
    return gen


def _prelu(r):
    c = r.choice([1, 1, 2, 3])
    x = shape(r, r.randint(1, 4), 1, 4)
    if len(x) >= 2 and r.random() < 0.6:
        x = (x[0], c) + x[2:]
    return f"nn.PReLU({c})(x)", {"x": T(*x)}


ACTIVATIONS = ["ReLU", "ReLU6", "GELU", "Tanh", "Sigmoid", "LeakyReLU", "ELU", "SELU", "SiLU", "Mish", "Hardswish",
               "Hardsigmoid", "Softplus", "Hardtanh", "LogSigmoid", "Tanhshrink", "Softsign", "CELU", "Hardshrink",
               "Softshrink", "Dropout", "AlphaDropout", "RReLU"]
F_ACTIVATIONS = ["relu", "relu6", "gelu", "silu", "elu", "selu", "leaky_relu", "sigmoid", "tanh", "hardswish", "mish",
                 "softplus", "hardtanh", "logsigmoid", "dropout", "hardsigmoid", "softsign", "tanhshrink", "celu",
                 "normalize", "alpha_dropout", "relu_", "elu_", "leaky_relu_", "hardtanh_", "hardshrink", "softshrink",
                 "rrelu"]


def _feature_alpha_dropout(r):
    """Out of training (the default) any input; in training at least 2 dims."""
    x = shape(r, r.randint(0, 4), 1, 4)
    make = D if r.random() < 0.3 else T
    if r.random() < 0.3:
        return f"F.feature_alpha_dropout(x, 0.5, {r.choice(['True', 'False'])})", {"x": make(*x)}
    return "F.feature_alpha_dropout(x)", {"x": make(*x)}


def _dropout_nd(n, functional=False):
    def gen(r):
        x = shape(r, r.randint(n, n + 2), 1, 4)
        return (f"F.dropout{n}d(x)" if functional else f"nn.Dropout{n}d()(x)"), {"x": T(*x)}
    return gen


SPECS = [
    Spec("nn.Linear", "module", _linear),
    Spec("F.linear", "function", _f_linear),
    Spec("nn.Bilinear", "module", _bilinear),
    Spec("F.bilinear", "function", lambda r: _bilinear(r, True)),
    Spec("nn.Identity", "module", _identity),
    Spec("nn.Flatten", "module", _flatten),
    Spec("nn.Unflatten", "module", _unflatten),
    *[Spec(f"nn.Conv{n}d", "module", _conv(n)) for n in (1, 2, 3)],
    *[Spec(f"nn.ConvTranspose{n}d", "module", _conv(n, True)) for n in (1, 2, 3)],
    *[Spec(f"F.conv{n}d", "function", _conv(n, functional=True)) for n in (1, 2, 3)],
    *[Spec(f"F.conv_transpose{n}d", "function", _conv(n, True, True)) for n in (1, 2, 3)],
    *[Spec(f"nn.{k.title()}Pool{n}d", "module", _pool(n, k)) for k in ("max", "avg") for n in (1, 2, 3)],
    *[Spec(f"F.{k}_pool{n}d", "function", _pool(n, k, True)) for k in ("max", "avg") for n in (1, 2, 3)],
    *[Spec(f"nn.Adaptive{k.title()}Pool{n}d", "module", _adaptive(n, k)) for k in ("max", "avg") for n in (1, 2, 3)],
    *[Spec(f"F.adaptive_{k}_pool{n}d", "function", _adaptive(n, k, True)) for k in ("avg", "max") for n in (1, 2, 3)],
    Spec("nn.Unfold", "module", _unfold()),
    Spec("F.unfold", "function", _unfold(True)),
    Spec("nn.Fold", "module", _fold()),
    Spec("F.fold", "function", _fold(True)),
    *[Spec(f"nn.BatchNorm{n}d", "module", _batchnorm(n)) for n in (1, 2, 3)],
    Spec("F.batch_norm", "function", _batchnorm(1, True)),
    Spec("nn.LayerNorm", "module", _layernorm),
    Spec("nn.RMSNorm", "module", lambda r: _layernorm(r, module="RMSNorm")),
    Spec("F.layer_norm", "function", lambda r: _layernorm(r, True)),
    Spec("nn.GroupNorm", "module", _groupnorm),
    Spec("F.group_norm", "function", lambda r: _groupnorm(r, True)),
    *[Spec(f"nn.InstanceNorm{n}d", "module", _instancenorm(n)) for n in (1, 2, 3)],
    Spec("F.instance_norm", "function", _instancenorm(2, True)),
    Spec("nn.Embedding", "module", _embedding),
    Spec("F.embedding", "function", lambda r: _embedding(r, True)),
    Spec("nn.EmbeddingBag", "module", _embedding_bag),
    Spec("F.embedding_bag", "function", _f_embedding_bag),
    Spec("F.one_hot", "function", _one_hot),
    *[Spec(f"nn.{k}", "module", _rnn(k)) for k in ("RNN", "LSTM", "GRU")],
    *[Spec(f"nn.{k}", "module", _cell(k)) for k in ("RNNCell", "LSTMCell", "GRUCell")],
    Spec("nn.MultiheadAttention", "module", _mha),
    Spec("F.scaled_dot_product_attention", "function", _sdpa),
    Spec("nn.TransformerEncoderLayer", "module", _tel),
    Spec("nn.TransformerEncoder", "module", _te),
    Spec("nn.TransformerDecoderLayer", "module", _tdl),
    Spec("nn.TransformerDecoder", "module", _td),
    Spec("nn.Transformer", "module", _transformer),
    Spec("nn.Upsample", "module", _upsample, cases=80),
    Spec("F.interpolate", "function", lambda r: _upsample(r, True), cases=80),
    Spec("F.upsample", "function", lambda r: _upsample(r, True, "F.upsample")),
    Spec("nn.UpsamplingNearest2d", "module", _upsampling_2d("Nearest")),
    Spec("nn.UpsamplingBilinear2d", "module", _upsampling_2d("Bilinear")),
    Spec("nn.PixelShuffle", "module", _pixel_shuffle(False)),
    Spec("nn.PixelUnshuffle", "module", _pixel_shuffle(True)),
    Spec("F.pixel_shuffle", "function", _pixel_shuffle(False, True)),
    Spec("F.pixel_unshuffle", "function", _pixel_shuffle(True, True)),
    *[Spec(f"nn.{k}{n}d", "module", _pad_module(k, n)) for k in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad") for n in (1, 2, 3)],
    Spec("F.pad", "function", _f_pad),
    *[Spec(f"nn.{a}", "module", _elementwise(f"nn.{a}()(x)")) for a in ACTIVATIONS],
    *[Spec(f"F.{a}", "function", _elementwise(f"F.{a}(x)")) for a in F_ACTIVATIONS],
    *[Spec(f"nn.Dropout{n}d", "module", _dropout_nd(n)) for n in (1, 2, 3)],
    *[Spec(f"F.dropout{n}d", "function", _dropout_nd(n, True)) for n in (1, 2, 3)],
    Spec("nn.PReLU", "module", _prelu),
    Spec("nn.Threshold", "module", _elementwise("nn.Threshold(0.1, 20.0)(x)")),
    Spec("F.threshold", "function", _elementwise("F.threshold(x, 0.1, 20.0)")),
    Spec("nn.Sequential", "module", _sequential),
    Spec("nn.ModuleList", "module", _module_list),
    Spec("nn.ModuleDict", "module", _module_dict),
    Spec("nn.DataParallel", "module", _data_parallel),
    Spec("nn.Parameter", "function", _parameter),
    Spec("F.feature_alpha_dropout", "function", _feature_alpha_dropout),
    *[Spec(f"nn.{m}", "module", _softmax(f"nn.{m}(dim={{d}})(x)")) for m in ("Softmax", "LogSoftmax", "Softmin")],
    *[Spec(f"F.{m}", "function", _softmax(f"F.{m}(x, dim={{d}})")) for m in ("softmax", "log_softmax", "softmin")],
    Spec("nn.GLU", "module", _glu("nn.GLU({d})(x)")),
    Spec("F.glu", "function", _glu("F.glu(x, {d})")),
]


# ---- provoked errors (issue 9, item 3) --------------------------------------------------------
# Fixed cases per API, each making torch raise one error of its catalogue (with valid cases
# beside them); the generated cases above stay as they were.

def _modes(call: str) -> tuple:
    """interpolate's mode against the input's rank: linear needs 3-D, bilinear/bicubic 4-D,
    trilinear 5-D ("Got 4D input, but linear mode needs 3D input"); nearest/area take 3-D to 5-D."""
    shapes = {3: (1, 2, 4), 4: (1, 2, 3, 4), 5: (1, 2, 2, 3, 2)}
    return tuple((call.format(mode=m), {"x": T(*shapes[rank])})
                 for m in ("linear", "bilinear", "bicubic", "trilinear", "nearest", "area") for rank in (3, 4, 5))


PROVOKE: dict[str, tuple] = {
    "nn.Upsample": _modes("nn.Upsample(scale_factor=2, mode='{mode}')(x)"),
    "F.interpolate": _modes("F.interpolate(x, scale_factor=2, mode='{mode}')"),
    "F.upsample": _modes("F.upsample(x, size=5, mode='{mode}')"),
}


def _batch_stats(n: int) -> tuple:
    """BatchNorm in training mode needs more than one value per channel ("Expected more than 1
    value per channel when training"); a module built in the expression is in training mode until
    .eval()/.train(False); without running statistics it uses batch statistics in eval mode too."""
    one, more = (1, 3) + (1,) * (n if n > 1 else 0), (2, 3) + (1,) * (n if n > 1 else 0)
    m = f"nn.BatchNorm{n}d(3)"
    cases = [(f"{m}(x)", one), (f"{m}(x)", more), (f"{m}.eval()(x)", one), (f"{m}.train(False)(x)", one),
             (f"{m}.train()(x)", one), (f"{m}.eval().train()(x)", one), (f"{m}.train(mode=False)(x)", one),
             (f"nn.BatchNorm{n}d(3, track_running_stats=False).eval()(x)", one),
             (f"nn.BatchNorm{n}d(3, track_running_stats=False).eval()(x)", more)]
    if n == 1:
        cases += [(f"{m}(x)", (1, 3, 1)), (f"{m}(x)", (1, 3, 2)), (f"{m}.eval()(x)", (1, 3, 1))]
    return tuple((e, {"x": T(*s)}) for e, s in cases)


PROVOKE.update({f"nn.BatchNorm{n}d": _batch_stats(n) for n in (1, 2, 3)})
PROVOKE["F.batch_norm"] = tuple((f"F.batch_norm(x, m, v, training={tr})", {"x": T(*s), "m": T(3), "v": T(3)})
                                for tr in (True, False) for s in ((1, 3), (1, 3, 1), (2, 3), (1, 3, 1, 1)))
PROVOKE["nn.Sequential"] = (("nn.Sequential(nn.BatchNorm1d(3))(x)", {"x": T(1, 3)}),
                            ("nn.Sequential(nn.BatchNorm1d(3)).eval()(x)", {"x": T(1, 3)}),
                            ("nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).eval()(x)", {"x": T(1, 3)}))


def _key_padding() -> tuple:
    """MultiheadAttention's key_padding_mask: [N, S] for a batched query ([S, N, E], or [N, S, E]
    with batch_first), [S] for an unbatched one; a bool or float mask."""
    cases = []
    for bf, q in ((False, (5, 2, 4)), (True, (2, 5, 4))):
        m = "nn.MultiheadAttention(4, 2" + (", batch_first=True" if bf else "") + ")"
        for mask in (B(2, 5), B(3, 5), B(5, 2), B(2, 4), B(2), B(1, 2, 5), T(2, 5), T(5, 2)):
            cases.append((f"{m}(q, q, q, key_padding_mask=mask)[0]", {"q": T(*q), "mask": mask}))
    for mask in (B(5), B(4), B(1, 5), B(2, 5)):
        cases.append(("nn.MultiheadAttention(4, 2)(q, q, q, key_padding_mask=mask)[0]", {"q": T(5, 4), "mask": mask}))
    # key and value of another length: the mask follows the key
    for mask in (B(2, 3), B(2, 5)):
        cases.append(("nn.MultiheadAttention(4, 2)(q, k, k, key_padding_mask=mask)[0]", {"q": T(5, 2, 4), "k": T(3, 2, 4), "mask": mask}))
    return tuple(cases)


PROVOKE["nn.MultiheadAttention"] = _key_padding()


def _output_size(n: int) -> tuple:
    """ConvTranspose's output_size must lie in [min, min + stride - 1] per spatial dim ("requested
    an output size of ..., but valid sizes range from ... to ..."), given as the spatial sizes or
    as every dim; another length raises too."""
    x, xu = T(1, 2, *(4,) * n), T(2, *(4,) * n)
    # kernel 3, stride 2: min 9, max 10; padding 1 and dilation 2: min 9, max 10; stride 1: min = max = 6
    layers = [(f"nn.ConvTranspose{n}d(2, 3, 3, stride=2)", 9, 10), (f"nn.ConvTranspose{n}d(2, 3, 3, stride=2, padding=1, dilation=2)", 9, 10),
              (f"nn.ConvTranspose{n}d(2, 3, 3)", 6, 6), (f"nn.ConvTranspose{n}d(2, 3, 3, stride=2, output_padding=1)", 9, 10)]
    cases = []
    for m, lo, hi in layers:
        for size in (lo, hi, hi + 1, lo - 1):
            req = [size] + [lo] * (n - 1)
            cases.append((f"{m}(x, output_size={req})", {"x": x}))
        cases.append((f"{m}(x, output_size={[1, 3] + [hi] * n})", {"x": x}))
        cases.append((f"{m}(x, output_size={[hi] * n})", {"x": xu}))
        cases.append((f"{m}(x, output_size=({', '.join([str(hi + 1)] * n)},))", {"x": xu}))
    cases.append((f"nn.ConvTranspose{n}d(2, 3, 3, stride=2)(x, output_size={[9] * (n + 1)})", {"x": x}))
    return tuple(cases)


PROVOKE.update({f"nn.ConvTranspose{n}d": _output_size(n) for n in (1, 2, 3)})


def _feature_dropout(n: int, functional: bool) -> tuple:
    """Dropout2d/3d only warn about the rank, but their feature dropout raises in training below
    2 dims ("Feature dropout requires at least 2 dimensions in the input"; Dropout3d first adds a
    batch dim to an input that is not 5-D, so only a 0-D input fails); p 0 or 1 and an empty
    input take shortcuts; p outside [0, 1] raises a ValueError."""
    shapes = [(), (3,), (2, 3), (2, 3, 4), (0,)]
    calls = ([f"F.dropout{n}d(x)", f"F.dropout{n}d(x, 0.3, training=False)", f"F.dropout{n}d(x, p=0.0)", f"F.dropout{n}d(x, 1.5)", f"F.dropout{n}d(x, 0.2, True)"]
             if functional else
             [f"nn.Dropout{n}d()(x)", f"nn.Dropout{n}d(0.3).eval()(x)", f"nn.Dropout{n}d(p=0.0)(x)", f"nn.Dropout{n}d(p=1)(x)", f"nn.Dropout{n}d(0.2).train()(x)"])
    return tuple((c, {"x": T(*s)}) for c in calls for s in shapes)


PROVOKE.update({f"nn.Dropout{n}d": _feature_dropout(n, False) for n in (2, 3)})
PROVOKE.update({f"F.dropout{n}d": _feature_dropout(n, True) for n in (2, 3)})


def _src_key_padding() -> tuple:
    """TransformerEncoderLayer's src_key_padding_mask, in training (a fresh layer): [N, S] for a
    batched src, [S] unbatched; in eval or with a src_mask the core is silent."""
    m, mb = "nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0)", "nn.TransformerEncoderLayer(4, 2, 8, 0.0, batch_first=True)"
    cases = [(f"{m}(x, src_key_padding_mask=k)", {"x": T(5, 2, 4), "k": k}) for k in (B(2, 5), B(5, 2), B(3, 5), B(2, 4), B(2), T(2, 5))]
    cases += [(f"{mb}(x, src_key_padding_mask=k)", {"x": T(2, 5, 4), "k": k}) for k in (B(2, 5), B(5, 2))]
    cases += [(f"{m}(x, src_key_padding_mask=k)", {"x": T(5, 4), "k": k}) for k in (B(5), B(4), B(1, 5))]
    cases += [(f"{m}.eval()(x, src_key_padding_mask=k)", {"x": T(5, 2, 4), "k": B(2, 5)}),
              (f"{m}(x, None, k)", {"x": T(5, 2, 4), "k": B(3, 5)})]
    # src_mask: [S, S] (bool or float) in training; another 2-D shape raises; 3-D, eval and
    # both masks together
    cases += [(f"{m}(x, src_mask=k)", {"x": T(5, 2, 4), "k": k}) for k in (B(5, 5), T(5, 5), B(8, 8), T(2, 5), B(5, 2), T(4, 4))]
    cases += [(f"{mb}(x, src_mask=k)", {"x": T(2, 5, 4), "k": k}) for k in (B(5, 5), T(2, 2), B(6, 6))]
    cases += [(f"{m}(x, k)", {"x": T(5, 4), "k": k}) for k in (B(5, 5), B(4, 4))]
    cases += [(f"{m}(x, src_mask=k)", {"x": T(5, 2, 4), "k": k}) for k in (B(4, 5, 5), B(3, 5, 5))]
    cases += [(f"{m}.eval()(x, src_mask=k)", {"x": T(5, 2, 4), "k": B(5, 5)}),
              (f"{m}(x, src_mask=k, src_key_padding_mask=p)", {"x": T(5, 2, 4), "k": B(5, 5), "p": B(2, 5)}),
              (f"{m}(x, src_mask=k, src_key_padding_mask=p)", {"x": T(5, 2, 4), "k": B(6, 6), "p": B(2, 5)})]
    return tuple(cases)


PROVOKE["nn.TransformerEncoderLayer"] = _src_key_padding()


def _stack_masks() -> tuple:
    """TransformerEncoder hands its masks to each layer (`mask` as the layer's `src_mask`,
    positional or keyword; `is_causal` a hint), then applies its `norm`."""
    lay = "nn.TransformerEncoderLayer(4, 2, 8, 0.0, batch_first=True)"
    enc = f"nn.TransformerEncoder({lay}, 2, enable_nested_tensor=False)"
    normed = f"nn.TransformerEncoder({lay}, 2, norm=nn.LayerNorm(4), enable_nested_tensor=False)"
    bad_norm = f"nn.TransformerEncoder({lay}, 2, norm=nn.LayerNorm(3), enable_nested_tensor=False)"
    cases = [(f"{e}(x, src_key_padding_mask=k)", {"x": T(2, 5, 4), "k": k}) for e in (enc, normed) for k in (B(2, 5), B(5, 2), B(2, 4))]
    cases += [(f"{enc}(x, None, k)", {"x": T(2, 5, 4), "k": B(2, 5)}),
              (f"{enc}(x, mask=c, is_causal=True)", {"x": T(2, 5, 4), "c": T(5, 5)}),
              (f"{normed}(x)", {"x": T(2, 5, 4)}),
              (f"{enc}(x, mask=c)", {"x": T(2, 5, 4), "c": B(5, 5)}),
              (f"{enc}(x, c)", {"x": T(2, 5, 4), "c": B(7, 7)}),
              (f"{enc}(x, mask=c)", {"x": T(2, 5, 4), "c": T(3, 5)}),
              (f"{bad_norm}(x)", {"x": T(2, 5, 4)})]
    return tuple(cases)


def _square_mask(r):
    """`nn.Transformer.generate_square_subsequent_mask(sz)`, static or on an instance, its
    result used as a shape (`[sz, sz]`, float unless `dtype=`)."""
    sz = r.randint(0, 5)
    owner = r.choice(["nn.Transformer", "nn.Transformer(8, 2, 1, 1, 16, 0.0)"])
    dtype = r.choice(["", ", dtype=torch.float64", ", dtype=torch.bool"])
    return f"{owner}.generate_square_subsequent_mask({sz}{dtype})", {}


SPECS.append(Spec("nn.Transformer.generate_square_subsequent_mask", "function", _square_mask, cases=12))


PROVOKE["nn.TransformerEncoder"] = PROVOKE.get("nn.TransformerEncoder", ()) + _stack_masks()


# ---- the catalogue's families not provoked above (catalogue.py; tests/test_catalogue.py): one
# or two fixed cases each. Index values are literal tensors in the expression (the core may not
# track them yet: "silent" is allowed, a disagreement is not).
def _more(api: str, *cases: tuple) -> None:
    PROVOKE[api] = PROVOKE.get(api, ()) + tuple(cases)


_x3 = {"x": T(1, 2, 4)}
_more("F.interpolate", ("F.interpolate(x, size=4, scale_factor=2)", _x3), ("F.interpolate(x, size=8)", _x3))
_more("F.glu", ("F.glu(x)", {"x": T()}))
_more("F.hardtanh", ("F.hardtanh(x, 2.0, 1.0)", {"x": T(2, 3)}))
_more("nn.Hardtanh", ("nn.Hardtanh(2.0, 1.0)(x)", {"x": T(2, 3)}))
_more("nn.Embedding", ("nn.Embedding(3, 2, padding_idx=5)(i)", {"i": L(4, high=3)}),
      ("nn.Embedding(3, 2)(torch.tensor([0, 5]))", {}), ("nn.Embedding(3, 2)(torch.tensor([0, 2]))", {}))
_more("F.embedding", ("F.embedding(torch.tensor([1, 3]), w)", {"w": T(3, 2)}), ("F.embedding(i, w, padding_idx=4)", {"i": L(4, high=3), "w": T(3, 2)}),
      ("F.embedding(torch.tensor([[1, 2]]), w)", {"w": T(3, 2)}))
_more("F.one_hot", ("F.one_hot(torch.tensor([0, 3]), 3)", {}), ("F.one_hot(torch.tensor([-1, 0]), 3)", {}),
      ("F.one_hot(torch.tensor([0, 2]), 3)", {}))
_more("nn.EmbeddingBag", ("nn.EmbeddingBag(3, 2)(torch.tensor([[0, 5]]))", {}), ("nn.EmbeddingBag(3, 2, mode='median')(i)", {"i": L(2, 3, high=3)}))
_more("F.embedding_bag", ("F.embedding_bag(i, w)", {"i": L(2, 3, high=3), "w": T(3)}),
      ("F.embedding_bag(i, w, per_sample_weights=p, mode='sum')", {"i": L(2, 3, high=3), "w": T(3, 2), "p": T(2, 2)}),
      ("F.embedding_bag(i, w, mode='median')", {"i": L(2, 3, high=3), "w": T(3, 2)}))
_more("F.batch_norm", ("F.batch_norm(x, m, v, training=True, eps=-1.0)", {"x": T(2, 3), "m": T(3), "v": T(3)}))
_more("F.group_norm", ("F.group_norm(x, 1)", {"x": T(3)}))
_more("nn.GroupNorm", ("nn.GroupNorm(2, 3)(x)", {"x": T(2, 3, 4)}))
_mq = {"q": T(5, 2, 4)}
_more("nn.MultiheadAttention",
      ("nn.MultiheadAttention(4, 2)(q, q, q, attn_mask=m)[0]", {**_mq, "m": T(4, 5)}),
      ("nn.MultiheadAttention(4, 2)(q, q, q, attn_mask=m)[0]", {**_mq, "m": T(3, 5, 5)}),
      ("nn.MultiheadAttention(4, 2)(q, q, q, attn_mask=m)[0]", {**_mq, "m": T(4, 5, 5)}),
      ("nn.MultiheadAttention(4, 2)(q, q, q, attn_mask=m)[0]", {**_mq, "m": T(1, 1, 5, 5)}),
      ("nn.MultiheadAttention(4, 2)(q, k, k)[0]", {**_mq, "k": T(5, 4)}),
      ("nn.MultiheadAttention(4, 2)(q, q, q)[0]", {"q": T(2, 5, 2, 4)}),
      ("nn.MultiheadAttention(0, 2)(q, q, q)[0]", _mq))
_more("nn.InstanceNorm1d", ("nn.InstanceNorm1d(3, affine=True)(x)", {"x": T(2, 4, 5)}), ("nn.InstanceNorm1d(3, affine=True)(x)", {"x": T(2, 3, 5)}))
_xc = {"x": T(1, 4, 5, 5)}
_more("nn.Conv2d", ("nn.Conv2d(4, 4, 3, groups=0)(x)", _xc), ("nn.Conv2d(4, 4, 3, padding='full')(x)", _xc),
      ("nn.Conv2d(4, 4, 3, padding_mode='wrap')(x)", _xc))
_more("nn.ConvTranspose2d", ("nn.ConvTranspose2d(4, 4, 3, padding_mode='reflect')(x)", _xc))
_more("nn.RNN", ("nn.RNN(4, 3)(x)[0]", {"x": T(4)}), ("nn.RNN(4, 3, nonlinearity='gelu')(x)[0]", {"x": T(5, 4)}),
      ("nn.RNN(4, 3, proj_size=2)(x)[0]", {"x": T(5, 4)}))
_more("nn.LSTM", ("nn.LSTM(4, 3)(x)[0]", {"x": T(2, 3, 5, 4)}), ("nn.LSTM(4, 3, dropout=1.5)(x)[0]", {"x": T(5, 4)}))
_more("nn.GRU", ("nn.GRU(4, 3, proj_size=2)(x)[0]", {"x": T(5, 4)}), ("nn.GRU(4, 0)(x)[0]", {"x": T(5, 4)}))
_more("nn.GRUCell", ("nn.GRUCell(4, 3)(x, h)", {"x": T(2, 4), "h": T(1, 2, 3)}))
_more("nn.TransformerEncoderLayer", ("nn.TransformerEncoderLayer(4, 2, 8, 0.0, activation='tanh')(x)", {"x": T(5, 2, 4)}))
# constructor and call arguments torch checks by value (groups, sizes, strings, bounds)
_more("nn.Conv2d", ("nn.Conv2d(4, 4, 3, groups=-1)(x)", _xc))
_more("nn.ConvTranspose2d", ("nn.ConvTranspose2d(4, 4, 3, groups=0)(x)", _xc))
_more("F.conv2d", ("F.conv2d(x, w, groups=0)", {"x": T(1, 4, 5, 5), "w": T(4, 4, 3, 3)}))
_more("nn.RNN", ("nn.RNN(4, 3, proj_size=0)(x)[0]", {"x": T(5, 4)}), ("nn.RNN(4, 3, 1, 'relu')(x)[0]", {"x": T(5, 4)}))
_more("nn.LSTM", ("nn.LSTM(4, 3, dropout=-0.1)(x)[0]", {"x": T(5, 4)}), ("nn.LSTM(4, 3, num_layers=0)(x)[0]", {"x": T(5, 4)}),
      ("nn.LSTM(4, 3, 2, dropout=1)(x)[0]", {"x": T(5, 4)}))
_more("nn.GRU", ("nn.GRU(0, 3)(x)[0]", {"x": T(5, 4)}))
_more("nn.RNNCell", ("nn.RNNCell(4, 3, nonlinearity='gelu')(x)", {"x": T(2, 4)}))
_more("nn.TransformerDecoderLayer", ("nn.TransformerDecoderLayer(4, 2, 8, 0.0, activation='tanh')(t, m)", {"t": T(5, 2, 4), "m": T(6, 2, 4)}),
      ("nn.TransformerDecoderLayer(4, 2, 8, 0.0, activation='gelu')(t, m)", {"t": T(5, 2, 4), "m": T(6, 2, 4)}))
_more("nn.Hardtanh", ("nn.Hardtanh(1.0, 1.0)(x)", {"x": T(2, 3)}), ("nn.Hardtanh(min_value=2.0)(x)", {"x": T(2, 3)}))
_more("F.hardtanh", ("F.hardtanh(x, 1.0, 1.0)", {"x": T(2, 3)}))
_more("nn.Embedding", ("nn.Embedding(3, 2, padding_idx=-4)(i)", {"i": L(4, high=3)}), ("nn.Embedding(3, 2, padding_idx=-3)(i)", {"i": L(4, high=3)}))
_more("F.batch_norm", ("F.batch_norm(x, m, v, training=True, eps=0.0)", {"x": T(2, 3), "m": T(3), "v": T(3)}),
      ("F.batch_norm(x, m, v, eps=0.0)", {"x": T(2, 3), "m": T(3), "v": T(3)}))
_more("nn.BatchNorm1d", ("nn.BatchNorm1d(3, eps=-1.0)(x)", {"x": T(2, 3)}), ("nn.BatchNorm1d(3, eps=0)(x)", {"x": T(2, 3)}))
_more("nn.EmbeddingBag", ("nn.EmbeddingBag(3, 2, mode='max', sparse=True)(i)", {"i": L(2, 3, high=3)}))

# an LSTM's state as a list (torch takes any sequence of two tensors)
_more("nn.LSTM", ("nn.LSTM(4, 3)(x, [h, c])[1][1]", {"x": T(5, 2, 4), "h": T(1, 2, 3), "c": T(1, 2, 3)}),
      ("nn.LSTM(4, 3)(x, [h, c])[0]", {"x": T(5, 2, 4), "h": T(1, 2, 3), "c": T(1, 2, 2)}),
      ("nn.LSTM(4, 3)(x, [h, c])[0]", {"x": T(5, 2, 4), "h": T(1, 3, 3), "c": T(1, 2, 3)}))
_more("nn.LSTMCell", ("nn.LSTMCell(4, 3)(x, [h, c])[1]", {"x": T(2, 4), "h": T(2, 3), "c": T(2, 3)}),
      ("nn.LSTMCell(4, 3)(x, [h, c])[0]", {"x": T(2, 4), "h": T(2, 3), "c": T(2, 2)}))

SPECS = [dataclasses.replace(s, provoke=s.provoke + PROVOKE.get(s.api, ())) for s in SPECS]
# index tensors with known values at the API's bound (differential/values.py)
SPECS = [dataclasses.replace(s, provoke=s.provoke + values.CASES.get(s.api, ())) for s in SPECS]
