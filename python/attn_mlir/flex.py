"""flex_attention with PyTorch FlexAttention's signature, on numpy arrays.

    def rel_bias(score, b, h, q_idx, kv_idx):
        return score + bias[h, kv_idx - q_idx + 127]

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    mask = attn_mlir.create_block_mask(causal, None, None, 128, 128)
    out = attn_mlir.flex_attention(q, k, v, score_mod=rel_bias, block_mask=mask)

score_mod and mask_mod are ordinary Python functions. They are traced once
with symbolic arguments into the score_mod and mask_mod regions of one
attn.sdpa (docs/ScoreFunctions.md): arithmetic, comparisons, & | ~, abs,
min/max, where, tanh, exp, log, sqrt, sigmoid (numpy's, torch's or this
module's), and reads of arrays they close over (`bias[h, kv_idx - q_idx]`:
each such array becomes a capture, passed at every call, so new values
never recompile; indices are clamped into the array). The compiler bounds
a mask function of q_idx and kv_idx at compile time (causal, windows,
chunks, prefix-LM and their & |), skipping the blocks it drops, for every
length: the graph is compiled once per function, dtype and head shape, for
any batch and lengths. What the tracer cannot express is a TraceError
naming the operation and the line.
"""
import functools
import inspect
import operator
import os
import types

import numpy as np

from ._tools import check_bool, check_int, check_number, compile_graph, mlir_elt
from .sdpa import _check_qkv, _f32_literal, _ttype, attention_results


class TraceError(ValueError):
    """A score_mod or mask_mod the tracer cannot turn into a region."""


def _user_line():
    """'file:line' of the innermost frame outside this module (the user's
    function being traced)."""
    here = os.path.abspath(__file__)
    for frame in inspect.stack()[1:]:
        if os.path.abspath(frame.filename) != here:
            return f"{frame.filename}:{frame.lineno}"
    return "?"


def _fail(what):
    raise TraceError(f"{what} (at {_user_line()}): a score_mod or mask_mod may use "
                     "arithmetic, comparisons, & | ~, abs, min/max, where, tanh, exp, "
                     "log, sqrt, sigmoid and reads of arrays it closes over")


_INT = ("index", "i32", "i64")
_FLOAT_OPS = {"+": "addf", "-": "subf", "*": "mulf", "/": "divf"}
_INT_OPS = {"+": "addi", "-": "subi", "*": "muli", "//": "floordivsi"}
_CMP_F = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
_CMP_I = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_MATH = {"tanh": "math.tanh", "exp": "math.exp", "log": "math.log", "sqrt": "math.sqrt"}


class _Region:
    """The body of one region being traced: its lines and SSA names."""

    def __init__(self, tables):
        self.lines, self.n, self.tables = [], 0, tables

    def emit(self, rhs, ty):
        name = f"%t{self.n}"
        self.n += 1
        self.lines.append(f"    {name} = {rhs}")
        return Sym(self, name, ty)

    def const(self, value, ty):
        if ty == "f32":
            # inf, -inf and NaN by their bits (MLIR has no literal for them).
            text = (_f32_literal(value) if np.isfinite(value) else
                    f"0x{np.array(value, np.float32).view(np.uint32).item():08X}")
            return self.emit(f"arith.constant {text} : f32", ty)
        if ty == "i1":
            return self.emit(f"arith.constant {'true' if value else 'false'}", ty)
        return self.emit(f"arith.constant {int(value)} : {ty}", ty)


class Sym:
    """A scalar of a traced function: an SSA value of the region."""
    __hash__ = None

    def __init__(self, region, name, ty):
        self.region, self.name, self.ty = region, name, ty

    def __bool__(self):
        _fail("a traced value used as a Python bool (if, and, or, not, a chained "
              "comparison): use where(c, a, b), &, | and ~")

    def __index__(self):
        _fail("a traced value used as a Python int (an index into a list, range(), "
              "an array other than one the function closes over)")

    __int__ = __index__

    def __float__(self):
        _fail("a traced value given to a function of Python's math module (use "
              "numpy's, torch's or attn_mlir.flex's tanh, exp, ...)")

    def _lift(self, x):
        """x as a Sym of this region (Python numbers become constants)."""
        if isinstance(x, Sym):
            if x.region is not self.region:
                _fail("a value of another traced function")
            return x
        if isinstance(x, (bool, np.bool_)):
            return self.region.const(bool(x), "i1")
        if isinstance(x, (int, np.integer)):
            return self.region.const(int(x), "f32" if self.ty == "f32" else "index")
        if isinstance(x, (float, np.floating)):
            return self.region.const(float(x), "f32")
        _fail(f"an operand of type {type(x).__name__}")

    def to(self, ty):
        """This value converted to `ty` (index, f32 or i1 -> itself)."""
        r = self.region
        if self.ty == ty:
            return self
        if ty == "f32" and self.ty in ("f16", "bf16"):
            return r.emit(f"arith.extf {self.name} : {self.ty} to f32", "f32")
        if ty == "f32" and self.ty in _INT:
            i64 = self.to("i64") if self.ty == "index" else self
            return r.emit(f"arith.sitofp {i64.name} : {i64.ty} to f32", "f32")
        if self.ty == "index" and ty in ("i32", "i64"):
            return r.emit(f"arith.index_cast {self.name} : index to {ty}", ty)
        if self.ty in ("i32", "i64") and ty == "index":
            return r.emit(f"arith.index_cast {self.name} : {self.ty} to index", ty)
        _fail(f"a {self.ty} value where a {ty} value is needed")

    def _pair(self, other):
        """Both operands in one type: f32 if either is a float, else index."""
        a, b = self, self._lift(other)
        if "i1" in (a.ty, b.ty):
            if a.ty == b.ty == "i1":
                return a, b, "i1"
            _fail("arithmetic on a bool (use where)")
        ty = "f32" if "f32" in (a.ty, b.ty) or a.ty in ("f16", "bf16") or \
            b.ty in ("f16", "bf16") else "index"
        return a.to(ty), b.to(ty), ty

    def _binary(self, op, other, swap=False):
        a, b, ty = self._pair(other)
        if swap:
            a, b = b, a
        if ty == "f32":
            if op == "//":
                q = a.region.emit(f"arith.divf {a.name}, {b.name} : f32", ty)
                return q.region.emit(f"math.floor {q.name} : f32", ty)
            if op not in _FLOAT_OPS:
                _fail(f"'{op}' on floats")
            return a.region.emit(f"arith.{_FLOAT_OPS[op]} {a.name}, {b.name} : f32", ty)
        if ty == "i1" or op == "/":
            _fail(f"'{op}' on {'bools' if ty == 'i1' else 'integers (use //)'}")
        if op == "%":  # Python's modulo: the sign of the divisor
            rem = a.region.emit(f"arith.remsi {a.name}, {b.name} : index", ty)
            zero = a.region.const(0, "index")
            fix = a.region.emit(f"arith.addi {rem.name}, {b.name} : index", ty)
            neg = a.region.emit(
                f"arith.xori {(rem < zero).name}, {(b < zero).name} : i1", "i1")
            nz = rem != zero
            return where(neg & nz, fix, rem)
        return a.region.emit(f"arith.{_INT_OPS[op]} {a.name}, {b.name} : index", ty)

    def _compare(self, op, other):
        a, b, ty = self._pair(other)
        if ty == "f32":
            return a.region.emit(f"arith.cmpf {_CMP_F[op]}, {a.name}, {b.name} : f32", "i1")
        return a.region.emit(f"arith.cmpi {_CMP_I[op]}, {a.name}, {b.name} : {ty}", "i1")

    def _logic(self, op, other):
        a, b = self, self._lift(other)
        if a.ty != "i1" or b.ty != "i1":
            _fail(f"'{op}' on non-bool values (use it on comparisons)")
        name = {"&": "andi", "|": "ori", "^": "xori"}[op]
        return a.region.emit(f"arith.{name} {a.name}, {b.name} : i1", "i1")

    def __invert__(self):
        if self.ty != "i1":
            _fail("'~' on a non-bool value")
        return self._logic("^", True)

    def __neg__(self):
        return self._lift(0)._binary("-", self)

    def __pos__(self):
        return self

    def __abs__(self):
        if self.ty == "i1":
            _fail("abs of a bool")
        if self.ty in ("f32", "f16", "bf16"):
            f = self.to("f32")
            return self.region.emit(f"math.absf {f.name} : f32", "f32")
        x = self if self.ty == "i64" else self.to("index").to("i64")
        return self.region.emit(f"math.absi {x.name} : i64", "i64").to("index")

    def __pow__(self, n):
        if not isinstance(n, (int, np.integer)) or not 1 <= n <= 8:
            _fail("'**' with an exponent other than an int constant in [1, 8]")
        out = self
        for _ in range(int(n) - 1):
            out = out * self
        return out

    # numpy (np.tanh(score), np.where(...)) and torch (torch.tanh(score)).
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _NUMPY_UFUNCS.get(ufunc.__name__)
        if method != "__call__" or fn is None or kwargs:
            _fail(f"numpy.{ufunc.__name__}")
        return fn(*inputs)

    def __array_function__(self, func, types_, args, kwargs):
        fn = _NUMPY_FUNCS.get(func.__name__)
        if fn is None or kwargs:
            _fail(f"numpy.{func.__name__}")
        return fn(*args)

    @classmethod
    def __torch_function__(cls, func, types_, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        fn = _NUMPY_FUNCS.get(name) or _NUMPY_UFUNCS.get(name)
        if fn is None or kwargs:
            _fail(f"torch.{name}")
        return fn(*args)


def _operator_methods():
    """Sym's arithmetic, comparison and logic operators, each forwarding to
    _binary / _compare / _logic with its symbol (reflected forms swap the
    operands; & | ^ commute)."""
    def bind(method, op, *flag):
        return lambda self, other: getattr(self, method)(op, other, *flag)
    for name, op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                     ("floordiv", "//"), ("mod", "%")):
        setattr(Sym, f"__{name}__", bind("_binary", op))
        setattr(Sym, f"__r{name}__", bind("_binary", op, True))
    for name, op in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="),
                     ("ne", "!=")):
        setattr(Sym, f"__{name}__", bind("_compare", op))
    for name, op in (("and", "&"), ("or", "|"), ("xor", "^")):
        setattr(Sym, f"__{name}__", bind("_logic", op))
        setattr(Sym, f"__r{name}__", bind("_logic", op))


_operator_methods()


def _region_of(*xs):
    for x in xs:
        if isinstance(x, Sym):
            return x
    return None


def _math(op, x):
    s = _region_of(x)
    if s is None:
        return getattr(np, op)(x)
    f = s._lift(x).to("f32")
    if op == "sigmoid":
        e = f.region.emit(f"math.exp {(-f).name} : f32", "f32")
        return 1.0 / (e + 1.0)
    return f.region.emit(f"{_MATH[op]} {f.name} : f32", "f32")


def tanh(x):
    """tanh of a traced score (or of a number)."""
    return _math("tanh", x)


def exp(x):
    """e^x of a traced value."""
    return _math("exp", x)


def log(x):
    """The natural logarithm of a traced value."""
    return _math("log", x)


def sqrt(x):
    """The square root of a traced value."""
    return _math("sqrt", x)


def sigmoid(x):
    """1 / (1 + e^-x) of a traced value."""
    return _math("sigmoid", x)


def where(cond, a, b):
    """a where cond holds, else b (traced: arith.select)."""
    s = _region_of(cond, a, b)
    if s is None:
        return np.where(cond, a, b)
    c = s._lift(cond)
    if c.ty != "i1":
        _fail("where() with a condition that is not a comparison")
    x, y, ty = s._lift(a)._pair(b)
    return c.region.emit(f"arith.select {c.name}, {x.name}, {y.name} : {ty}", ty)


def _extreme(pick, a, b):
    s = _region_of(a, b)
    if s is None:
        return pick(a, b)
    x, y, ty = s._lift(a)._pair(b)
    if ty == "i1":
        _fail("min/max of bools")
    op = ("maximumf" if pick is max else "minimumf") if ty == "f32" else \
        ("maxsi" if pick is max else "minsi")
    return x.region.emit(f"arith.{op} {x.name}, {y.name} : {ty}", ty)


def maximum(a, b):
    """The larger of two traced values."""
    return _extreme(max, a, b)


def minimum(a, b):
    """The smaller of two traced values."""
    return _extreme(min, a, b)


_NUMPY_UFUNCS = {"tanh": tanh, "exp": exp, "log": log, "sqrt": sqrt, "sigmoid": sigmoid,
                 "maximum": maximum, "minimum": minimum, "absolute": abs, "abs": abs,
                 "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
                 "true_divide": operator.truediv, "floor_divide": operator.floordiv,
                 "negative": operator.neg, "logical_and": operator.and_,
                 "logical_or": operator.or_, "logical_not": operator.invert,
                 "bitwise_and": operator.and_, "bitwise_or": operator.or_,
                 "invert": operator.invert}
_NUMPY_FUNCS = {"where": where, "tanh": tanh, "exp": exp, "log": log, "sqrt": sqrt,
                "sigmoid": sigmoid, "maximum": maximum, "minimum": minimum, "abs": abs}


_TABLE_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32",
                np.dtype(np.bool_): "i1"}


class _Table:
    """An array a traced function closes over: reads become tensor.extract
    of a capture."""

    def __init__(self, tables, array):
        self.tables, self.array = tables, array
        self.shape, self.ndim = array.shape, array.ndim

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        s = _region_of(*idx)
        if s is None:
            return self.array[idx]
        if len(idx) != self.ndim or any(i is Ellipsis or isinstance(i, slice) for i in idx):
            _fail(f"a read of a {list(self.shape)} array with {len(idx)} indices "
                  "(one scalar index per dimension)")
        n = self.tables.index_of(self)
        ty = self.tables.types[n]
        ix = ", ".join(s._lift(i).to("index").name for i in idx)
        value = s.region.emit(f"tensor.extract %c{n}[{ix}] : {self.tables.tensor_type(n)}",
                              ty)
        return value.to("f32") if ty in ("f16", "bf16") else value

    def __getattr__(self, name):
        _fail(f"'.{name}' of an array the function closes over")


class _Tables:
    """The arrays the traced functions read: the captures, in order."""

    def __init__(self):
        self.arrays, self.types, self.ids, self.functions = [], [], {}, {}

    def wrap(self, x):
        """x with the arrays in it wrapped (functions rebound, tuples and
        lists of them wrapped element by element)."""
        if isinstance(x, _Table):
            return x
        if _is_array(x):
            return _Table(self, x)
        # (This module's own functions, tanh or where, read no array.)
        if isinstance(x, types.FunctionType) and not (
                x.__module__ == __name__ and x.__closure__ is None):
            if id(x) not in self.functions:
                self.functions[id(x)] = x  # a recursive function: itself
                self.functions[id(x)] = _rebound(x, self)
            return self.functions[id(x)]
        if isinstance(x, (tuple, list)):
            return type(x)(self.wrap(e) for e in x)
        return x

    def index_of(self, table):
        key = id(table.array)
        if key not in self.ids:
            a = _as_capture(table.array)
            self.ids[key] = len(self.arrays)
            self.arrays.append(a)
            self.types.append(_TABLE_TYPES.get(a.dtype) or mlir_elt(a.dtype))
        return self.ids[key]

    def tensor_type(self, n):
        return _ttype(("?",) * self.arrays[n].ndim, self.types[n])


def _is_array(x):
    return isinstance(x, np.ndarray) or type(x).__module__.startswith("torch")


def _as_capture(a):
    """An array a function reads, as the runtime takes it: f32 / f16 / bf16
    floats, int32 integers (int64 within range), bool; C-contiguous."""
    a = np.asarray(a.detach().cpu()) if hasattr(a, "detach") else np.asarray(a)
    if a.ndim == 0 or a.size == 0:
        raise TraceError(f"an array a score_mod or mask_mod reads must have at least one "
                         f"dimension and one element, got shape {list(a.shape)}")
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    elif np.issubdtype(a.dtype, np.integer) and a.dtype != np.int32:
        if a.size and (a.min() < -2 ** 31 or a.max() >= 2 ** 31):
            raise TraceError("an integer array a function reads must fit in int32")
        a = a.astype(np.int32)
    if a.dtype not in _TABLE_TYPES:
        mlir_elt(a.dtype)  # float16 and bfloat16 pass, the rest is a ValueError
    return np.ascontiguousarray(a)


def _rebound(fn, tables):
    """`fn` with the arrays of its closure and globals wrapped as _Table
    (and the functions it calls rebound the same way)."""
    if not isinstance(fn, types.FunctionType):
        raise TraceError(f"score_mod and mask_mod must be Python functions (def or "
                         f"lambda), got {type(fn).__name__}")
    cells = None
    if fn.__closure__:
        cells = tuple(types.CellType(tables.wrap(c.cell_contents)) if _has(c) else c
                      for c in fn.__closure__)
    glb = fn.__globals__
    names = [n for n in fn.__code__.co_names if n in glb]
    if any(_is_array(glb[n]) or isinstance(glb[n], (types.FunctionType, tuple, list))
           for n in names):
        glb = dict(glb)
        for n in names:
            glb[n] = tables.wrap(glb[n])
    out = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, cells)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def _has(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _trace(fn, kind, tables):
    """The body of one region: (lines, the SSA name it yields)."""
    region = _Region(tables)
    args = [Sym(region, n, "index") for n in ("%b", "%h", "%i", "%j")]
    if kind == "score_mod":
        args = [Sym(region, "%s", "f32")] + args
    try:
        out = _rebound(fn, tables)(*args)
    except TraceError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure inside the user function
        raise TraceError(f"{kind} {getattr(fn, '__name__', fn)} failed while traced "
                         f"({type(e).__name__}: {e}); at {_traceback_line(e)}") from e
    want = "f32" if kind == "score_mod" else "i1"
    if not isinstance(out, Sym):
        if kind == "mask_mod" and isinstance(out, (bool, np.bool_)):
            out = region.const(bool(out), "i1")
        elif kind == "score_mod" and isinstance(out, (int, float, np.number)):
            out = region.const(float(out), "f32")
        else:
            raise TraceError(f"{kind} must return a {'score' if want == 'f32' else 'bool'}, "
                             f"got {type(out).__name__}")
    if want == "i1" and out.ty != "i1":
        raise TraceError(f"mask_mod must return a bool (a comparison), got a {out.ty} value")
    if want == "f32":
        if out.ty == "i1":
            raise TraceError("score_mod must return a score, got a bool")
        out = out.to("f32")
    return region.lines, out.name


def _traceback_line(e):
    tb, where_ = e.__traceback__, "?"
    here = os.path.abspath(__file__)
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) != here:
            where_ = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where_


def _region_text(kind, lines, result, tables):
    args = (["%s: f32"] if kind == "score_mod" else []) + [
        "%b: index", "%h: index", "%i: index", "%j: index"]
    args += [f"%c{n}: {tables.tensor_type(n)}" for n in range(len(tables.arrays))]
    ty = "f32" if kind == "score_mod" else "i1"
    return (f" {kind} {{\n  ^bb0({', '.join(args)}):\n" + "\n".join(lines)
            + f"\n    attn.yield {result} : {ty}\n  }}")


def noop_mask(b, h, q_idx, kv_idx):
    """A mask_mod that keeps every key."""
    return True


def and_masks(*mask_mods):
    """A mask_mod keeping what every one of `mask_mods` keeps."""
    if not mask_mods:
        raise ValueError("and_masks needs at least one mask_mod")

    def both(b, h, q_idx, kv_idx):
        return functools.reduce(lambda x, y: x & y,
                                (m(b, h, q_idx, kv_idx) for m in mask_mods))
    return both


def or_masks(*mask_mods):
    """A mask_mod keeping what any one of `mask_mods` keeps."""
    if not mask_mods:
        raise ValueError("or_masks needs at least one mask_mod")

    def either(b, h, q_idx, kv_idx):
        return functools.reduce(lambda x, y: x | y,
                                (m(b, h, q_idx, kv_idx) for m in mask_mods))
    return either


class BlockMask:
    """What create_block_mask made: the mask function and the shape it was
    made for (B and H None: any). The compiler derives the blocks to visit
    from the function itself, at compile time, for any length, so no block
    table is built or stored; `BLOCK_SIZE` is kept for FlexAttention's
    interface only."""

    def __init__(self, mask_mod, shape, block_size):
        self.mask_mod, self.shape, self.BLOCK_SIZE = mask_mod, shape, block_size

    def __repr__(self):
        return (f"BlockMask(mask_mod={getattr(self.mask_mod, '__name__', self.mask_mod)}, "
                f"shape={self.shape})")


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cpu", BLOCK_SIZE=128,
                      _compile=False):
    """FlexAttention's create_block_mask: a BlockMask of `mask_mod` for
    queries of Q_LEN and keys of KV_LEN (B and H: a size or None for any).
    The function is traced when flex_attention compiles (a TraceError then
    says what it cannot express); nothing is evaluated per block here."""
    if not callable(mask_mod):
        raise ValueError(f"mask_mod must be a function, got {type(mask_mod).__name__}")
    shape = tuple(None if x is None else check_int(n, x, 1)
                  for n, x in (("B", B), ("H", H), ("Q_LEN", Q_LEN), ("KV_LEN", KV_LEN)))
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return BlockMask(mask_mod, shape, check_int("BLOCK_SIZE", BLOCK_SIZE, 1))


def _flex_graph(qs, ks, vs, elt, score_mod, mask_mod, scale, return_lse, tables):
    """The MLIR of @flex: one attn.sdpa on q, k, v (of shapes qs, ks, vs,
    element type `elt`) and the captures, with dynamic batch and lengths."""
    regions = ""
    traced = [(kind, fn) for kind, fn in (("score_mod", score_mod), ("mask_mod", mask_mod))
              if fn is not None]
    bodies = [(kind, *_trace(fn, kind, tables)) for kind, fn in traced]
    for kind, lines, result in bodies:
        regions += _region_text(kind, lines, result, tables)
    (_, Hq, _, D), (_, Hkv, _, _), Dv = qs, ks, vs[3]
    qt, kt, vt = (_ttype(("?", h, "?", d), elt) for h, d in ((Hq, D), (Hkv, D), (Hkv, Dv)))
    ot, lt = _ttype(("?", Hq, "?", Dv), elt), _ttype(("?", Hq, "?"), "f32")
    caps = [(f"%a{n}", tables.tensor_type(n)) for n in range(len(tables.arrays))]
    capture = (f" captures({', '.join(n for n, _ in caps)} : {', '.join(t for _, t in caps)})"
               if caps else "")
    attrs = f" {{scale = {_f32_literal(scale)} : f32}}" if scale is not None else ""
    results, lhs, ret = attention_results(ot, lt, return_lse)
    params = ", ".join([f"%q: {qt}", f"%k: {kt}", f"%v: {vt}"] + [f"{n}: {t}" for n, t in caps])
    return (f"func.func @flex({params}) -> ({results}) {{\n"
            f"  {lhs} = attn.sdpa %q, %k, %v{capture}{regions}{attrs}\n"
            f"      : {qt}, {kt}, {vt} -> {results}\n  return {ret}\n}}\n")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, device="cpu"):
    """FlexAttention on numpy arrays: softmax(score_mod(scale · q·k, b, h,
    q_idx, kv_idx)) · V over the keys block_mask's mask_mod keeps.

    query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv]
    (float32, float16 or bfloat16; Hq != Hkv needs enable_gqa=True). Returns
    the output, and the float32 log-sum-exp [B, Hq, Tq] with
    return_lse=True. A row whose every key is masked gives 0 (LSE -inf).
    device="cuda" runs the functions in the fused CUDA kernel (through
    attn-run, like scaled_dot_product_attention(..., device="cuda")).
    """
    enable_gqa, return_lse = check_bool("enable_gqa", enable_gqa), check_bool("return_lse",
                                                                               return_lse)
    if score_mod is not None and not callable(score_mod):
        raise ValueError(f"score_mod must be a function, got {type(score_mod).__name__}")
    if block_mask is not None and not isinstance(block_mask, BlockMask):
        raise ValueError("block_mask must come from attn_mlir.create_block_mask, got "
                         f"{type(block_mask).__name__}")
    scale = None if scale is None else check_number("scale", scale)
    q, k, v, unbatched = _check_qkv(query, key, value, enable_gqa)
    mask_mod = checked_block_mask(block_mask, q.shape, k.shape)
    tables = _Tables()
    mlir = _flex_graph(q.shape, k.shape, v.shape, mlir_elt(q.dtype), score_mod, mask_mod,
                       scale, return_lse, tables)
    outs = compile_graph(mlir, device=device)("flex", [q, k, v] + tables.arrays)
    if unbatched:
        outs = [o[0] for o in outs]
    return (outs[0], outs[1]) if return_lse else outs[0]


def checked_block_mask(block_mask, qs, ks):
    """The mask_mod of `block_mask` (None without one) after checking that
    it came from create_block_mask for queries of shape `qs` and keys of
    shape `ks` ([B, H, T, D])."""
    if block_mask is None:
        return None
    if not isinstance(block_mask, BlockMask):
        raise ValueError("block_mask must come from attn_mlir.create_block_mask, got "
                         f"{type(block_mask).__name__}")
    _check_block_mask_shape(block_mask, qs, ks)
    return block_mask.mask_mod


def _check_block_mask_shape(mask, qs, ks):
    B, H, QL, KL = mask.shape
    want = (qs[0], qs[1], qs[2], ks[2])
    for name, got, size in zip(("B", "H", "Q_LEN", "KV_LEN"), (B, H, QL, KL), want):
        if got is not None and got != size:
            raise ValueError(f"block_mask was made for {name} = {got}, the inputs have "
                             f"{size}: make it with create_block_mask for these sizes "
                             "(the compiled graph serves every size)")

