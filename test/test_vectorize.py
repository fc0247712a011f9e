# the CPU renderer's vector code: one upcast axis becomes GNU C vectors (codegen/expander.py); results must match numpy
import numpy as np
import pytest
from tinygrad import Tensor, Device
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

def test_int_kernels_untouched():
  a = np.arange(64, dtype=np.int32).reshape(4, 16)
  si = _kernel(Tensor(a).realize() * 3 + 1)
  p = get_program(si.ast, Device["CPU"].renderer, [Opt(OptOps.UPCAST, 0, 16)])
  assert "int16" not in p.src
  np.testing.assert_equal((Tensor(a) * 3 + 1).numpy(), a * 3 + 1)
