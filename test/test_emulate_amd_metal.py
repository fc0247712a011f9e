"""The AMD (RDNA3 WMMA, wave32), AMD_MFMA (CDNA MFMA, wave64) and METAL renderer rules run on the PYTHON device (EMULATE=...): tensor cores,
local memory with barriers, vector types, half and bfloat16, checked against numpy through the whole Tensor path."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.engine import realize
from tinygrad.engine.realize import CompiledRunner, get_program
from tinygrad.opt.kernel import Opt, OptOps, KernelOptError
from tinygrad.renderer import ProgramSpec
from tinygrad.uop import Ops
from tinygrad.runtime.ops_python import PythonRenderer
from tinygrad.helpers import getenv, Context

FAMS = ["AMD", "AMD_MFMA", "METAL"]

@pytest.fixture(params=FAMS)
def emulated(request, monkeypatch):
  """The PYTHON device with the family's renderer rules; yields a function giving the programs run so far."""
  monkeypatch.setattr(Device["PYTHON"], "renderer", PythonRenderer(request.param))
  monkeypatch.setattr(realize, "method_cache", {})
  # programs read back from the disk cache carry no uops: build them here
  with Context(CACHELEVEL=0): yield lambda: [r.p for r in realize.method_cache.values()]

def _rand(*shape, dt=np.float32, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(dt)
def _uops(progs, op): return [u for p in progs for u in (p.uops or []) if u.op is op]

def test_tensor_core_matmul(emulated):
  ren = Device["PYTHON"].renderer
  tc = ren.tensor_cores[0]
  an, bn = _rand(32, 64, dt=np.float16), _rand(64, 48, dt=np.float16, seed=1)
  got = (Tensor(an, device="PYTHON") @ Tensor(bn, device="PYTHON")).numpy()
  np.testing.assert_allclose(got, an.astype(np.float32) @ bn.astype(np.float32), rtol=1e-2, atol=1e-2)
  wmmas = _uops(emulated(), Ops.WMMA)
  assert wmmas and all(w.arg[5] == tc.threads for w in wmmas), "the heuristic picked the family's tensor core"

def _run(out:Tensor, opts:list[Opt]) -> tuple[np.ndarray, ProgramSpec]:
  # the last kernel of out with these opts, on the emulating PYTHON device (its inputs realized first)
  sched = out.schedule()
  for si in sched[:-1]: realize.run_schedule([si])
  p = get_program(sched[-1].ast, Device["PYTHON"].renderer, opts)
  for b in sched[-1].bufs: b.ensure_allocated()
  CompiledRunner(p).exec(list(sched[-1].bufs))
  return sched[-1].bufs[0].numpy(), p

def test_locals_and_barrier(emulated):
  # a long reduce over few outputs, split over a workgroup whose threads share partial sums in local memory
  xn = _rand(4, 4096)
  x = Tensor(xn, device="PYTHON").realize()
  got, p = _run(x.sum(1), [Opt(OptOps.GROUPTOP, 0, 64), Opt(OptOps.UNROLL, 0, 4)])
  np.testing.assert_allclose(got, xn.sum(1), rtol=1e-4, atol=1e-3)
  assert _uops([p], Ops.DEFINE_LOCAL) and _uops([p], Ops.BARRIER) and p.local_size is not None and np.prod(p.local_size) == 64
  with pytest.raises(KernelOptError): _run(x.sum(1), [Opt(OptOps.GROUPTOP, 0, 4096)])   # more than the family's local memory or threads

def test_vector_types(emulated):
  xn, yn = _rand(64, 64), _rand(64, 64, seed=1)
  x, y = Tensor(xn, device="PYTHON").realize(), Tensor(yn, device="PYTHON").realize()
  got, p = _run(x * 2 + y, [Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.LOCAL, 0, 16)])
  np.testing.assert_allclose(got.reshape(64, 64), xn * 2 + yn, rtol=1e-6)
  assert any(u.dtype.count == 4 for u in _uops([p], Ops.LOAD)) and any(u.dtype.count == 4 for u in _uops([p], Ops.STORE) for u in u.src[1:2])

@pytest.mark.parametrize("dt", [dtypes.half, dtypes.bfloat16])
def test_half_bfloat16(emulated, dt):
  xn, yn = _rand(16, 32), _rand(16, 32, seed=1)
  x, y = Tensor(xn, device="PYTHON").cast(dt), Tensor(yn, device="PYTHON").cast(dt)
  def q(a): return (a.astype(np.float16) if dt == dtypes.half else (a.view(np.uint32) + 0x7fff + ((a.view(np.uint32) >> 16) & 1) >> 16 << 16)
                    .astype(np.uint32).view(np.float32)).astype(np.float32)
  got = (x * y + x.exp()).float().numpy()
  ref = q(q(q(xn) * q(yn)) + q(np.exp(q(xn))))
  np.testing.assert_allclose(got, ref, rtol=2e-2 if dt == dtypes.bfloat16 else 2e-3, atol=1e-2)
  assert (x.sum(1, dtype=dtypes.float).numpy() == x.float().sum(1).numpy()).all() or \
    np.allclose(x.sum(1, dtype=dtypes.float).numpy(), q(xn).sum(1), rtol=1e-5, atol=1e-5)

def test_metal_refuses_float64(monkeypatch):
  monkeypatch.setattr(Device["PYTHON"], "renderer", PythonRenderer("METAL"))
  monkeypatch.setattr(realize, "method_cache", {})
  with pytest.raises(RuntimeError, match="can't compute dtypes.double"): (Tensor([1.0, 2.0], device="PYTHON").cast(dtypes.float64) * 2).numpy()

def test_emulate_env_mfma(monkeypatch):
  monkeypatch.setenv("EMULATE", "amd_mfma")
  getenv.cache_clear()
  try: r = PythonRenderer()
  finally: getenv.cache_clear()
  assert r.tensor_cores and r.tensor_cores[0].threads == 64 and r.emulate == "AMD_MFMA"

def test_mfma_layout_matches_emulator():
  # tc.py's bit layout of v_mfma_f32_16x16x16f16 against the emulator's formulas (written from AMD's documentation independently)
  from tinygrad.renderer.tc import amd_mfma_tcs
  from tinygrad.runtime import ops_python
  tc = amd_mfma_tcs[0]
  fmaps = ops_python._amd_maps(tc.dims, tc.threads)
  for op, fmap, ept in zip("abc", fmaps, tc.elements_per_thread):
    held = [fmap(t, e) for t in range(tc.threads) for e in range(ept)]
    assert [tc.coords(op, t, e) for t in range(tc.threads) for e in range(ept)] == held, op
    assert sorted(held) == [(r, c) for r in range(16) for c in range(16)], f"{op}: every element once (no copies in wave64)"

@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 16, 48), (16, 64, 32)])
def test_mfma_matmul_shapes(shape, monkeypatch):
  monkeypatch.setattr(Device["PYTHON"], "renderer", PythonRenderer("AMD_MFMA"))
  monkeypatch.setattr(realize, "method_cache", {})
  M, N, K = shape
  an, bn = _rand(M, K, dt=np.float16, seed=M), _rand(K, N, dt=np.float16, seed=N)
  a, b = Tensor(an, device="PYTHON").realize(), Tensor(bn, device="PYTHON").realize()
  got, p = _run((a.reshape(M, 1, K) * b.T.reshape(1, N, K)).sum(-1, dtype=dtypes.float), [Opt(OptOps.TC, 0, (0, 0))])
  np.testing.assert_allclose(got.reshape(M, N), an.astype(np.float64) @ bn.astype(np.float64), rtol=1e-3, atol=1e-3)
  assert [u.arg[5] for u in _uops([p], Ops.WMMA)] == [64] and p.local_size is not None and np.prod(p.local_size) % 64 == 0
