"""The ops-v0 benchmarks written in TVM's tensor expressions (TE).

Each function mirrors the program of the same family in datasets/ops_suite.cc: same
inputs in the same order and layout, same padding stage, same output, so that the
kernel TVM builds takes TensorGym's buffers as they are. The weights of the
convolutions are layout-free placeholders (`LAYOUT_FREE`), as TOPI declares them and
as ops-v0 marks them constant: MetaSchedule's RewriteLayout may pack them, and tune.py
exports that pack as a function of its own, run once ahead of the timed runs. The sizes come from the
benchmark's shape text (`tensorgym benchmarks ops-v0 --json`), e.g.
"N=1 H=56 W=56 CI=64 CO=64 K=1 S=1 P=0". `tensorgym suite --metaschedule` runs every
kernel once on the same inputs as ours and refuses one whose output differs.
"""

from tvm import te
from tvm import tirx as tir

# The attribute TE's compute takes for weights a schedule may store in any layout.
LAYOUT_FREE = "layout_free_placeholders"


def parse_shape(text):
    """'N=1 H=56 ... G=4' -> {'N': 1, 'H': 56, ..., 'G': 4}."""
    out = {}
    for item in text.split():
        key, _, value = item.partition("=")
        if not value:
            raise ValueError(f"shape text {text!r}: {item!r} is not KEY=VALUE")
        out[key] = int(value)
    return out


def _pad(x, pads, name="P"):
    """Zero padding of the spatial axes (axis 2 on, after N and C): pads[i] on both sides of
    axis 2 + i; x itself when every pad is 0, as the programs do."""
    if not any(pads):
        return x
    spatial0 = 2  # N, C, then the spatial axes
    shape = list(x.shape)
    for i, p in enumerate(pads):
        shape[spatial0 + i] = shape[spatial0 + i] + 2 * p

    def body(*idx):
        conds, src = [], list(idx)
        for i, p in enumerate(pads):
            a = spatial0 + i
            if p:
                conds += [idx[a] >= p, idx[a] < x.shape[a] + p]
                src[a] = idx[a] - p
        return tir.if_then_else(tir.all(*conds), x[tuple(src)], tir.const(0.0, "float32"))

    return te.compute(shape, body, name=name)


def gmm(s):
    b = s.get("B", 0)
    n, m, k = s["N"], s["M"], s["K"]
    r = te.reduce_axis((0, k), name="k")
    if b:
        A = te.placeholder((b, n, k), name="A")
        B = te.placeholder((b, k, m), name="B")
        C = te.compute((b, n, m), lambda q, i, j: te.sum(A[q, i, r] * B[q, r, j], axis=r), name="C")
    else:
        A = te.placeholder((n, k), name="A")
        B = te.placeholder((k, m), name="B")
        C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return [A, B, C]


def _conv(s, dims):
    """c1d, c2d, c3d, grp, dil: NC<spatial> data, (CO, CI/G, K...) weights."""
    n, ci, co, k, st, p = s["N"], s["CI"], s["CO"], s["K"], s["S"], s["P"]
    g, dil = s.get("G", 1), s.get("DIL", 1)
    sizes = {1: [s.get("L", 0)], 2: [s.get("H", 0), s.get("W", 0)], 3: [s.get("D", 0), s.get("H", 0), s.get("W", 0)]}[dims]
    X = te.placeholder((n, ci, *sizes), name="X")
    W = te.placeholder((co, ci // g, *([k] * dims)), name="W")
    P = _pad(X, [p] * dims)
    out = [(z + 2 * p - dil * (k - 1) - 1) // st + 1 for z in sizes]
    c = te.reduce_axis((0, ci // g), name="c")
    red = [te.reduce_axis((0, k), name=f"r{i}") for i in range(dims)]
    cin, cout = ci // g, co // g

    def body(nn, f, *xs):
        chan = c if g == 1 else f // cout * cin + c
        pos = [xs[i] * st + red[i] * dil for i in range(dims)]
        return te.sum(P[(nn, chan, *pos)] * W[(f, c, *red)], axis=[c, *red])

    Y = te.compute((n, co, *out), body, name="Y", attrs={LAYOUT_FREE: [W]})
    return [X, W, Y]


def c1d(s):
    return _conv(s, 1)


def c2d(s):
    return _conv(s, 2)


def c3d(s):
    return _conv(s, 3)


def grp(s):
    return _conv(s, 2)


def dil(s):
    return _conv(s, 2)


def dep(s):
    n, c, h, w, k, st, p = s["N"], s["C"], s["H"], s["W"], s["K"], s["S"], s["P"]
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((c, k, k), name="W")
    P = _pad(X, [p, p])
    oh, ow = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
    r = te.reduce_axis((0, k), name="r")
    q = te.reduce_axis((0, k), name="s")
    Y = te.compute((n, c, oh, ow), lambda nn, cc, y, x: te.sum(P[nn, cc, y * st + r, x * st + q] * W[cc, r, q], axis=[r, q]),
                   name="Y", attrs={LAYOUT_FREE: [W]})
    return [X, W, Y]


def t2d(s):
    """Transposed convolution as the program writes it: the input dilated by the stride and
    padded by K-1-P (stage D), then a stride-1 convolution with the flipped kernel."""
    n, ci, co, h, w, k, st, p = s["N"], s["CI"], s["CO"], s["H"], s["W"], s["K"], s["S"], s["P"]
    X = te.placeholder((n, ci, h, w), name="X")
    W = te.placeholder((ci, co, k, k), name="W")
    e = k - 1 - p
    dh, dw = (h - 1) * st + 1 + 2 * e, (w - 1) * st + 1 + 2 * e

    def dilated(nn, c, y, x):
        ok = tir.all(y >= e, y <= e + (h - 1) * st, (y - e) % st == 0, x >= e, x <= e + (w - 1) * st, (x - e) % st == 0)
        return tir.if_then_else(ok, X[nn, c, (y - e) // st, (x - e) // st], tir.const(0.0, "float32"))

    D = te.compute((n, ci, dh, dw), dilated, name="D")
    oh, ow = dh - k + 1, dw - k + 1
    c = te.reduce_axis((0, ci), name="c")
    r = te.reduce_axis((0, k), name="r")
    q = te.reduce_axis((0, k), name="s")
    Y = te.compute((n, co, oh, ow), lambda nn, f, y, x: te.sum(D[nn, c, y + r, x + q] * W[c, f, k - 1 - r, k - 1 - q], axis=[c, r, q]),
                   name="Y", attrs={LAYOUT_FREE: [W]})
    return [X, W, Y]


def cap(s):
    n, ci, co, h, w, k, st, p, cp = s["N"], s["CI"], s["CO"], s["H"], s["W"], s["K"], s["S"], s["P"], s["CAP"]
    X = te.placeholder((n, ci, h, w, cp, cp), name="X")
    W = te.placeholder((co, ci, k, k, cp, cp), name="W")
    P = _pad(X, [p, p])
    oh, ow = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
    c = te.reduce_axis((0, ci), name="c")
    r = te.reduce_axis((0, k), name="r")
    q = te.reduce_axis((0, k), name="s")
    kk = te.reduce_axis((0, cp), name="k")
    Y = te.compute(
        (n, co, oh, ow, cp, cp),
        lambda nn, f, y, x, i, j: te.sum(P[nn, c, y * st + r, x * st + q, i, kk] * W[f, c, r, q, kk, j], axis=[c, r, q, kk]),
        name="Y",
        attrs={LAYOUT_FREE: [W]},
    )
    return [X, W, Y]


def nrm(s):
    b, m, n = s["B"], s["M"], s["N"]
    A = te.placeholder((b, m, n), name="A")
    i = te.reduce_axis((0, m), name="i")
    j = te.reduce_axis((0, n), name="j")
    S = te.compute((b,), lambda q: te.sum(A[q, i, j] * A[q, i, j], axis=[i, j]), name="S")
    Y = te.compute((b,), lambda q: te.sqrt(S[q]), name="Y")
    return [A, Y]


FAMILIES = {"gmm": gmm, "c1d": c1d, "c2d": c2d, "c3d": c3d, "grp": grp, "dil": dil, "dep": dep, "t2d": t2d, "cap": cap, "nrm": nrm}


def tensors(name, shape_text):
    """The TE tensors of ops-v0/<name> ('c2d-3', 'gmm-1-b16'): its inputs, then its output."""
    family = name.split("-")[0]
    if family not in FAMILIES:
        raise KeyError(f"no TE workload for family {family!r} (families: {', '.join(FAMILIES)})")
    return FAMILIES[family](parse_shape(shape_text))


def prim_func(name, shape_text):
    """The PrimFunc of ops-v0/<name> with its shape text."""
    return te.create_prim_func(tensors(name, shape_text))
