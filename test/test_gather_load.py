# indexing with an int Tensor (x[idx], embeddings) is a sum over the indexed dim of (idx == r) ? x[r] : 0; codegen turns that into one gated
# load (uop/symbolic.py reduce_gather). Values against numpy, including negative and out-of-range indices (they read 0), and the loop gone.
from dataclasses import replace
import numpy as np
import pytest
from tinygrad import Tensor, Device, Context
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops
from tinygrad.codegen.program import get_program
from tinygrad.opt.kernel import Opt, OptOps

def _take(x:np.ndarray, idx:np.ndarray, axis:int=0) -> np.ndarray:
  # numpy.take with negative indices wrapped once and anything still outside [0, n) reading 0 (tinygrad's Tensor-index semantics)
  n = x.shape[axis]
  i = np.where(idx < 0, idx + n, idx)
  ok = (i >= 0) & (i < n)
  out = np.take(x, np.where(ok, i, 0), axis=axis)
  mask = ok.reshape((1,) * axis + ok.shape + (1,) * (x.ndim - axis - 1))
  return np.where(mask, out, 0).astype(x.dtype)

def _programs(t:Tensor, opts=None) -> list:
  return [get_program(si.ast, Device[Device.DEFAULT].renderer, opts) for si in t.schedule() if si.ast.op is Ops.SINK]

def _loop_sizes(prg) -> list:
  return [u.src[0].arg for u in prg.uops if u.op is Ops.RANGE and u.src[0].op is Ops.CONST]

IDX = np.array([[3, 5, -1, 999], [0, 1000, 7, -1001], [-1000, 2**30, -2**31, 500]], dtype=np.int32)

def test_rows_vs_numpy(device):
  x = np.random.default_rng(0).standard_normal((1000, 16)).astype(np.float32)
  got = Tensor(x)[Tensor(IDX)].numpy()
  np.testing.assert_array_equal(got, _take(x, IDX))

@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.int64, dtypes.int8])
def test_index_dtypes(device, dtype):
  x = np.arange(100 * 3, dtype=np.int32).reshape(100, 3) - 7
  idx = np.array([0, 99, -1, -100, 100, -101, 42], dtype=dtype.name if dtype != dtypes.int8 else "int8")
  if dtype == dtypes.int8: idx = np.array([0, 99, -1, -100, 100, -101, 42], dtype=np.int8)
  np.testing.assert_array_equal(Tensor(x)[Tensor(idx, dtype=dtype)].numpy(), _take(x, idx.astype(np.int64)))

def test_inner_axis_and_two_indices(device):
  rng = np.random.default_rng(1)
  x = rng.standard_normal((4, 50, 6)).astype(np.float32)
  i = np.array([[1, -1, 60], [0, 49, -51]], dtype=np.int32)
  np.testing.assert_array_equal(Tensor(x)[:, Tensor(i)].numpy(), _take(x, i, axis=1))
  # two index tensors: the flat index into (50, 6) picks one element of each (4,) row
  a, b = np.array([0, 49, 3, -1], dtype=np.int32), np.array([5, 0, -6, 2], dtype=np.int32)
  np.testing.assert_array_equal(Tensor(x)[:, Tensor(a), Tensor(b)].numpy(), x[:, a, b])

def test_nonfinite_table_is_exact(device):
  x = np.array([[np.inf, 1.0], [np.nan, -np.inf], [-0.0, 2.0]], dtype=np.float32)
  idx = np.array([2, 0, 1, 5, -1], dtype=np.int32)
  got, want = Tensor(x)[Tensor(idx)].numpy(), _take(x, idx)
  np.testing.assert_array_equal(got, want)   # a one-hot product would give nan for every row next to an inf

def test_gradient_still_scatters(device):
  x = Tensor(np.arange(12, dtype=np.float32).reshape(6, 2), requires_grad=True)
  idx = Tensor(np.array([1, 1, -1, 9], dtype=np.int32))
  (x[idx] * Tensor(np.array([[1, 2]] * 4, dtype=np.float32))).sum().backward()
  want = np.zeros((6, 2), np.float32)
  want[1] = [2, 4]
  want[5] = [1, 2]
  np.testing.assert_array_equal(x.grad.numpy(), want)

def test_reduce_loop_is_gone():
  x, idx = Tensor.empty(1000, 16), Tensor.empty(2, 32, dtype=dtypes.int32)
  prgs = _programs(x[idx])
  assert prgs and all(1000 not in _loop_sizes(p) and 500 not in _loop_sizes(p) for p in prgs), [p.src for p in prgs]
  # one load of the table per output element (plus the index), not one per vocabulary entry
  assert sum(p.estimates.mem for p in prgs) < 4 * (2 * 32 * 16 * 3 + 2 * 32 * 4)

def test_split_reduce_axis_collapses_too():
  # the reduce axis unrolled by 4 (lanes) and looped over 250: still one load, solved digit by digit from the index
  x, idx = Tensor.empty(1000, 8), Tensor.empty(5, dtype=dtypes.int32)
  for opts in ([Opt(OptOps.UNROLL, 0, 4)], [Opt(OptOps.UPCAST, 1, 8), Opt(OptOps.UNROLL, 0, 4)]):
    for p in _programs(x[idx], opts): assert 250 not in _loop_sizes(p) and 1000 not in _loop_sizes(p)
  with Context(NOOPT=1):
    xs = np.random.default_rng(2).standard_normal((1000, 8)).astype(np.float32)
    i = np.array([0, 999, -3, 1000, 17], dtype=np.int32)
    np.testing.assert_array_equal(Tensor(xs)[Tensor(i)].numpy(), _take(xs, i))

def test_unroll_opts_values(device):
  xs = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32)
  i = np.array([0, 63, -3, 64, 17, -65], dtype=np.int32)
  t = Tensor(xs)[Tensor(i)]
  (si,) = [si for si in t.schedule() if si.ast.op is Ops.SINK]
  from tinygrad.engine.realize import CompiledRunner
  from tinygrad.device import Buffer
  for opts in ([Opt(OptOps.UNROLL, 0, 4)], [Opt(OptOps.UNROLL, 0, 8), Opt(OptOps.UPCAST, 0, 2)]):
    # the program runs on the fixture's device (REMOTE shares its server's renderer, whose device is the server's)
    prg = CompiledRunner(replace(get_program(si.ast, Device[Device.DEFAULT].renderer, opts), device=Device.DEFAULT))
    bufs = [Buffer(b.device, b.size, b.dtype).ensure_allocated() if n == 0 else b for n, b in enumerate(si.bufs)]
    prg([b.ensure_allocated() for b in bufs], {})
    out = np.frombuffer(bufs[0].as_buffer(), dtype=np.float32).reshape(-1)
    np.testing.assert_array_equal(np.sort(out), np.sort(_take(xs, i).reshape(-1)))

def test_arange_is_the_index():
  # Tensor.arange sums binary digits; the index maths folds them back to the loop variable
  for n in (1, 10, 1000, 30522):
    (p,) = _programs(Tensor.arange(n))
    assert not any(u.op in (Ops.WHERE, Ops.MOD, Ops.IDIV, Ops.SHR, Ops.AND) for u in p.uops), p.src
    np.testing.assert_array_equal(Tensor.arange(n).numpy(), np.arange(n))

def test_symbolic_length_is_left_a_loop(device):
  # a loop whose length is a bound Variable may run short of its bound: indices past the bound value read 0, not the buffer beyond
  from tinygrad import Variable
  xs = np.arange(10, dtype=np.float32) + 1
  v = Variable("v", 1, 10).bind(4)
  idx = Tensor(np.array([0, 3, 5, 9], dtype=np.int32))
  x = Tensor(xs).shrink(((0, v),))
  out = (idx.reshape(4, 1) == Tensor.arange(v).reshape(1, v)).where(x.reshape(1, v), 0).sum(1)
  np.testing.assert_array_equal(out.numpy(), [1, 4, 0, 0])

def test_workgroup_reduce_collapses_too():
  # few outputs and a long reduce: devices with workgroups share it among a group's threads (GROUP); those threads are one more digit
  xs = np.arange(4000, dtype=np.float32).reshape(1000, 4)
  i = np.array([3, -1, 1000], dtype=np.int32)
  t = Tensor(xs, device="PYTHON")[Tensor(i, device="PYTHON")]
  (si,) = [si for si in t.schedule() if si.ast.op is Ops.SINK]
  p = get_program(si.ast, Device["PYTHON"].renderer)
  assert any(o.op is OptOps.GROUP for o in p.applied_opts) and not _loop_sizes(p) and p.local_size is None, (p.applied_opts, p.src)
  np.testing.assert_array_equal(Tensor(xs, device="PYTHON")[Tensor(i, device="PYTHON")].numpy(), _take(xs, i))
