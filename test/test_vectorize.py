# the CPU renderer's vector code: one upcast axis becomes GNU C vectors (codegen/expander.py); results must match numpy
import re
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop import Ops
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.opt.kernel import Opt, OptOps

pytestmark = pytest.mark.skipif(Device.DEFAULT != "CPU", reason="vector code is the CPU renderer's")

def _kernel(out:Tensor):
  return [si for si in out.schedule() if si.ast.op is Ops.SINK][-1]

def _run(si, opts):
  p = get_program(si.ast, Device["CPU"].renderer, opts)
  bufs = [b.ensure_allocated() for b in si.bufs]
  CompiledRunner(p)([bufs[i] for i in p.globals], {}, wait=True)
  return p, np.frombuffer(bytes(bufs[0].as_buffer()), dtype=np.float32 if si.ast.src[0].src[-1].dtype.itemsize == 4 else np.float64)

def test_matmul_tile_is_vector_code():
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((32, 48), dtype=np.float32), rng.standard_normal((48, 64), dtype=np.float32)
  si = _kernel(Tensor(a).realize() @ Tensor(b).realize())
  p, got = _run(si, [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UNROLL, 0, 4)])
  # B's rows are loaded as whole vectors and the accumulators are vectors; A's values are broadcast
  assert "(float16*)" in p.src and "float16 acc" in p.src, p.src
  np.testing.assert_allclose(got.reshape(32, 64), a @ b, rtol=1e-5, atol=1e-4)

def test_strided_vector_axis_is_gathered():
  # the vector axis walks A^T with stride 48: lanes are gathered, the sum is still right
  rng = np.random.default_rng(1)
  a = rng.standard_normal((48, 32), dtype=np.float32)
  si = _kernel(Tensor(a).realize().T * 2 + 1)
  p, got = _run(si, [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 0, 8)])
  np.testing.assert_allclose(got.reshape(32, 48), a.T * 2 + 1, rtol=1e-6)

def test_padded_and_gated_loads():
  # conv padded in height: the vector axis is the output columns, the input loads are gated by the row, the weights broadcast
  rng = np.random.default_rng(2)
  x, w = rng.standard_normal((2, 8, 9, 10), dtype=np.float32), rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
  import torch
  ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=(1, 0)).numpy()
  si = _kernel(Tensor(x).realize().conv2d(Tensor(w).realize(), padding=(1, 0)))
  p, got = _run(si, [Opt(OptOps.UPCAST, 3, 8)])
  assert "float8 acc" in p.src and "?" in p.src, p.src
  assert "(float8*)(data1" in p.src, "the row-gated input lanes are one gated vector load"
  np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("n", [2, 4, 8, 16, 32])
def test_vector_widths_float64(n):
  rng = np.random.default_rng(3)
  a, b = rng.standard_normal((8, 4*n)), rng.standard_normal((4*n,))
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  out = ta * tb - ta.sum(1, keepdim=True).realize() / 3
  si = _kernel(out)
  p, got = _run(si, [Opt(OptOps.UPCAST, 1, n)])
  assert f"double{n}" in p.src
  np.testing.assert_allclose(got.reshape(8, 4*n), a * b - a.sum(1, keepdims=True) / 3, rtol=1e-12)

@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduced_vector_axis_is_a_vector_accumulator(op):
  # with no output axis to vectorize, the unrolled reduce axis is the vector: one vector accumulator, lanes combined after the loop
  rng = np.random.default_rng(4)
  a = rng.standard_normal((16, 64), dtype=np.float32)
  si = _kernel(getattr(Tensor(a).realize(), op)(1))
  p, got = _run(si, [Opt(OptOps.UNROLL, 0, 16)])
  assert "float16 acc" in p.src, p.src
  np.testing.assert_allclose(got, getattr(a, op)(1), rtol=1e-5, atol=1e-5)

# ***** every elementwise op as GNU C vector code, checked against numpy with clang and with gcc *****

def _cc_run(si, opts, cc:str, monkeypatch) -> tuple[str, np.ndarray]:
  # the same kernel compiled by the named compiler (CC is read when a CPUCompiler is made), run on the schedule's buffers
  from tinygrad.runtime.ops_cpu import CPUCompiler
  from tinygrad.tensor import _to_np_dtype
  import shutil
  if shutil.which(cc) is None: pytest.skip(f"{cc} is not installed")
  monkeypatch.setenv("CC", cc)
  p = get_program(si.ast, Device["CPU"].renderer, opts)
  bufs = [b.ensure_allocated() for b in si.bufs]
  CompiledRunner(p, precompiled=CPUCompiler().compile(p.src))([bufs[i] for i in p.globals], {}, wait=True)
  out = bufs[si.ast.src[0].src[0].arg]
  return p.src, np.frombuffer(bytes(out.as_buffer()), dtype=_to_np_dtype(out.dtype))

_rng = np.random.default_rng(5)
# values that reach the special cases: signed zeros, halves, big and tiny magnitudes, inf and nan
_F = np.concatenate([_rng.standard_normal(200) * 4, [0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1e-30, -1e-30, 1e30, -1e30, 88.5, -103.0, 8388607.5,
                                                     -8388609.0, 1e10, np.inf, -np.inf, np.nan, 700.0, -745.0, 3.0, -3.75, 1e6, -1e-6]]).astype(np.float32)
_F = np.concatenate([_F, _rng.standard_normal(256 - len(_F)).astype(np.float32)])
_I = np.concatenate([_rng.integers(-2**31, 2**31, 200), [0, 1, -1, 2**31-1, -2**31, 7, -7, 100, -100]]).astype(np.int32)
_I = np.concatenate([_I, _rng.integers(-1000, 1000, 256 - len(_I)).astype(np.int32)])

def _erf(x): return np.vectorize(__import__("math").erf, otypes=[x.dtype])(x)

# name: (tinygrad op, numpy reference, input dtype, rtol)
FLOAT_CASES = {
  "exp": (Tensor.exp, np.exp, 2e-6), "log": (lambda t: t.abs().log(), lambda a: np.log(np.abs(a)), 2e-6),
  "sin": (Tensor.sin, np.sin, 2e-6), "sigmoid": (Tensor.sigmoid, lambda a: 1 / (1 + np.exp(-a.astype(np.float64))), 4e-6),
  "tanh": (Tensor.tanh, np.tanh, 4e-6), "erf": (Tensor.erf, _erf, 4e-6),
  # 1 + erf(x) cancels for x << 0 (in any precision): an absolute tolerance
  "gelu": (Tensor.gelu, lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))), 4e-6),   # tinygrad's gelu is the tanh form
  "trunc": (Tensor.trunc, np.trunc, 0), "floor": (Tensor.floor, np.floor, 0), "round": (Tensor.round, np.round, 0),
  "relu": (Tensor.relu, lambda a: np.where(a <= 0, 0, a), 0), "abs": (Tensor.abs, np.abs, 0),
}

@pytest.mark.parametrize("cc", ["clang", "gcc"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FLOAT_CASES))
def test_unary_float_vector(name, dt, cc, monkeypatch):
  fxn, ref, rtol = FLOAT_CASES[name]
  a = _F.astype(dt).reshape(16, 16)
  src, got = _cc_run(_kernel(fxn(Tensor(a).realize())), [Opt(OptOps.UPCAST, 0, 16 if dt == np.float32 else 8)], cc, monkeypatch)
  # whole-vector code: no lane of a vector is taken apart (x[3]) anywhere in the kernel
  assert re.search(r"\w\[\d+\]", src) is None, src
  with np.errstate(all="ignore"): want = ref(a).astype(dt)
  atol = 1e-6 if name == "gelu" else 1e-30 if dt == np.float64 else 1e-37
  np.testing.assert_allclose(got.reshape(16, 16), want, rtol=rtol, atol=atol, equal_nan=True)
  if name == "trunc": np.testing.assert_array_equal(np.signbit(got.reshape(16, 16)), np.signbit(want))

BINARY_CASES = {
  "where_lt": (lambda x, y: (x < y).where(x, y), lambda x, y: np.where(x < y, x, y)),
  "where_ne_eq": (lambda x, y: (x != y).where(x * 2, (x == y).where(y, x - y)), lambda x, y: np.where(x != y, x * 2, np.where(x == y, y, x - y))),
  "maximum": (Tensor.maximum, np.maximum), "minimum": (Tensor.minimum, np.minimum),
  "add_mul_sub": (lambda x, y: x * y - (x + y), lambda x, y: x * y - (x + y)),
  "lt_as_num": (lambda x, y: (x < y).cast(x.dtype) + (x >= y).cast(x.dtype) * 3, lambda x, y: (x < y).astype(x.dtype) + (x >= y).astype(x.dtype) * 3),
  "bool_logic": (lambda x, y: ((x < y) ^ (x < 0) | (y > 2)).where(x, y), lambda x, y: np.where((x < y) ^ (x < 0) | (y > 2), x, y)),
}

@pytest.mark.parametrize("cc", ["clang", "gcc"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.uint32, np.int8, np.int16])
@pytest.mark.parametrize("name", list(BINARY_CASES))
def test_binary_vector(name, dt, cc, monkeypatch):
  fxn, ref = BINARY_CASES[name]
  if np.issubdtype(dt, np.floating): x, y = _F.astype(dt), np.roll(_F, 3).astype(dt)
  else: x, y = _I.astype(dt), np.roll(_I, 5).astype(dt)
  y[::7] = x[::7]   # some equal pairs
  x, y = x.reshape(16, 16), y.reshape(16, 16)
  src, got = _cc_run(_kernel(fxn(Tensor(x).realize(), Tensor(y).realize())), [Opt(OptOps.UPCAST, 0, 8)], cc, monkeypatch)
  assert re.search(r"\w\[\d+\]", src) is None, src
  with np.errstate(all="ignore"): want = ref(x, y).astype(dt)
  # gcc contracts x*y - z into one FMA (one rounding fewer); compares and selects are exact
  if name == "add_mul_sub" and dt in (np.float32, np.float64): np.testing.assert_allclose(got.reshape(16, 16), want, rtol=1e-6, atol=1e-6, equal_nan=True)
  else: np.testing.assert_array_equal(got.reshape(16, 16), want)

INT_CASES = {
  "shifts_bits": (lambda i: ((i << 3) ^ (i >> 2)) | (i & 0x55), lambda i: ((i << 3) ^ (i >> 2)) | (i & 0x55)),
  "int_arith": (lambda i: i * 3 - i + 17, lambda i: i * 3 - i + 17), "neg": (lambda i: -i, lambda i: -i),
  "to_bool_and_back": (lambda i: (i & 3).cast(dtypes.bool).where(i, (i & 3).logical_not().cast(i.dtype) * 5),
                       lambda i: np.where((i & 3).astype(bool), i, np.logical_not(i & 3).astype(i.dtype) * 5)),
  "to_float_and_back": (lambda i: (i.cast(dtypes.float32) * 0.5).cast(i.dtype), lambda i: (i.astype(np.float32) * 0.5).astype(i.dtype)),
  "to_double": (lambda i: i.cast(dtypes.float64) / 3, lambda i: i.astype(np.float64) / 3),
  "bitcast_roundtrip": (lambda i: (i.bitcast(dtypes.float32) * 1.0).bitcast(dtypes.int32) if i.dtype == dtypes.int32 else i + 0,
                        lambda i: ((i.view(np.float32) * 1.0).view(np.int32) if i.dtype == np.int32 else i + 0)),
}

@pytest.mark.parametrize("cc", ["clang", "gcc"])
@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint8])
@pytest.mark.parametrize("name", list(INT_CASES))
def test_int_vector(name, dt, cc, monkeypatch):
  fxn, ref = INT_CASES[name]
  i = _I.astype(dt).reshape(16, 16)
  if name == "bitcast_roundtrip": i = np.where(np.isnan(i.view(np.float32)), 0, i) if dt == np.int32 else i   # nan payloads may change
  src, got = _cc_run(_kernel(fxn(Tensor(i).realize())), [Opt(OptOps.UPCAST, 0, 8)], cc, monkeypatch)
  assert re.search(r"\w\[\d+\]", src) is None, src
  with np.errstate(all="ignore"): want = ref(i)
  np.testing.assert_array_equal(got.reshape(16, 16), want)

@pytest.mark.parametrize("cc", ["clang", "gcc"])
def test_float_to_int_casts(cc, monkeypatch):
  a = (_F[np.isfinite(_F) & (np.abs(_F) < 1e9)][:128]).reshape(16, 8)
  for dt, ndt in ((dtypes.int32, np.int32), (dtypes.int64, np.int64), (dtypes.int8, np.int8)):
    b = a if dt != dtypes.int8 else np.clip(a, -100, 100)
    src, got = _cc_run(_kernel(Tensor(b).realize().cast(dt)), [Opt(OptOps.UPCAST, 0, 8)], cc, monkeypatch)
    assert "__builtin_convertvector" in src, src
    np.testing.assert_array_equal(got.reshape(16, 8), b.astype(ndt))

@pytest.mark.parametrize("cc", ["clang", "gcc"])
def test_compare_to_bool_buffer(cc, monkeypatch):
  x, y = _F.reshape(16, 16), np.roll(_F, 1).reshape(16, 16)
  for fxn in (lambda a, b: a < b, lambda a, b: a != b, lambda a, b: (a < b) & (b < 1)):
    _, got = _cc_run(_kernel(fxn(Tensor(x).realize(), Tensor(y).realize())), [Opt(OptOps.UPCAST, 0, 16)], cc, monkeypatch)
    np.testing.assert_array_equal(got.reshape(16, 16), fxn(x, y))

@pytest.mark.parametrize("cc", ["clang", "gcc"])
def test_half_storage(cc, monkeypatch):
  # half is stored as bits and computed in float: loads and stores per lane, the float maths between them vectors
  a = _F[np.isfinite(_F) & (np.abs(_F) < 10)][:128].astype(np.float16).reshape(16, 8)
  src, got = _cc_run(_kernel(Tensor(a).realize().cast(dtypes.float32).exp().sigmoid()), [Opt(OptOps.UPCAST, 0, 8)], cc, monkeypatch)
  assert "float8" in src
  np.testing.assert_allclose(got.reshape(16, 8), 1 / (1 + np.exp(-np.exp(a.astype(np.float64)))), rtol=4e-6)
  src, got = _cc_run(_kernel(Tensor(a).realize().exp()), [Opt(OptOps.UPCAST, 0, 8)], cc, monkeypatch)
  np.testing.assert_allclose(got.reshape(16, 8).astype(np.float32), np.exp(a.astype(np.float32)).astype(np.float16).astype(np.float32), rtol=1e-3)

@pytest.mark.parametrize("cc", ["clang", "gcc"])
def test_softmax_reduce_exp_is_vector_code(cc, monkeypatch):
  # the exp-and-sum kernel of softmax: the exp polynomial runs on the vector accumulator's lanes as vectors
  rng = np.random.default_rng(6)
  a = rng.standard_normal((8, 64), dtype=np.float32) * 5
  t = Tensor(a).realize()
  si = _kernel((t - t.max(1, keepdim=True).realize()).exp().sum(1))
  src, got = _cc_run(si, [Opt(OptOps.UNROLL, 0, 16)], cc, monkeypatch)
  assert "float16 acc" in src and "__builtin_convertvector" in src and "int16" in src, src
  np.testing.assert_allclose(got, np.exp(a - a.max(1, keepdims=True)).sum(1), rtol=2e-6)

def test_int_sum_vector_accumulator():
  a = _I.reshape(16, 16) >> 8
  si = _kernel(Tensor(a).realize().sum(1))
  p, _ = _run(si, [Opt(OptOps.UNROLL, 0, 16)])
  assert "int16 acc" in p.src, p.src
  np.testing.assert_equal((Tensor(a).sum(1)).numpy(), a.sum(1, dtype=np.int32))

@pytest.mark.parametrize("op", ["any", "all"])
def test_bool_vector_accumulator(op):
  # any/all over an unrolled axis: a mask accumulator (int lanes of -1/0), stored as 0/1 bools
  a = _F[:256].reshape(16, 16)
  si = _kernel(getattr(Tensor(a).realize() > 0.5, op)(1))
  p = get_program(si.ast, Device["CPU"].renderer, [Opt(OptOps.UNROLL, 0, 16)])
  bufs = [b.ensure_allocated() for b in si.bufs]
  CompiledRunner(p)([bufs[i] for i in p.globals], {}, wait=True)
  assert "int16 acc" in p.src, p.src
  np.testing.assert_array_equal(np.frombuffer(bytes(bufs[0].as_buffer()), dtype=np.bool_), getattr(a > 0.5, op)(1))

@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_int_vector_floordiv_mod_by_powers_of_two(dt):
  # division by 2**k becomes shifts; the sign shift must be the lane's width minus 1, not the whole vector's (a 255-bit shift was UB)
  a = np.array([-9, -8, -5, -4, -3, -1, 0, 1, 3, 4, 5, 9, -2**20, 2**20, -7, 7], dtype=dt)
  for d in (2, 4, -2, -8):
    np.testing.assert_array_equal((Tensor(a) // d).numpy(), a // d, err_msg=f"// {d}")
    np.testing.assert_array_equal((Tensor(a) % d).numpy(), a % d, err_msg=f"% {d}")
