"""The GPU part of the heuristic (opt/heuristic.py gpu_workgroups): devices with workgroups get local sizes and grouped reduces without BEAM,
chosen from what the renderer declares (has_local, local_max, shared_max); the kernels stay correct on every such device that runs here."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.engine import realize
from tinygrad.engine.realize import get_program
from tinygrad.helpers import Context, prod
from tinygrad.opt.kernel import OptOps
from tinygrad.renderer.cstyle import OpenCLRenderer, CUDARenderer, MetalRenderer, AMDRenderer
from tinygrad.renderer.wgsl import WGSLRenderer
from tinygrad.runtime.ops_python import PythonRenderer
from tinygrad.uop import Ops

RENDERERS = {"OpenCL": OpenCLRenderer, "WGSL": WGSLRenderer, "CUDA": CUDARenderer, "Metal": MetalRenderer, "AMD": AMDRenderer,
             "PYTHON": PythonRenderer, "PYTHON_CUDA": lambda: PythonRenderer("CUDA")}

def _asts(t:Tensor) -> list:
  with Context(NOOPT=0, BEAM=0): return [si.ast for si in t.schedule() if si.ast.op is Ops.SINK]

def _local_size(p) -> int: return prod(p.local_size) if p.local_size is not None else 1

@pytest.mark.parametrize("name", RENDERERS)
def test_elementwise_gets_a_workgroup(name):
  ren = RENDERERS[name]()
  (ast,) = _asts(Tensor.empty(64, 256, device="PYTHON") * 2 + 1)
  p = get_program(ast, ren)
  assert 1 < _local_size(p) <= 128 and all(l <= m for l, m in zip(p.local_size, ren.local_max)), (p.local_size, p.applied_opts)

@pytest.mark.parametrize("name", RENDERERS)
def test_big_reduce_is_grouped(name):
  ren = RENDERERS[name]()
  ast = _asts(Tensor.empty(1 << 16, device="PYTHON").sum())[0]   # the scheduler may split it: the first kernel is the long reduce
  p = get_program(ast, ren)
  assert any(o.op is OptOps.GROUP for o in p.applied_opts) and _local_size(p) > 1, p.applied_opts
  # a matrix-vector product: few outputs, a long reduce
  ast = _asts(Tensor.empty(16, 4096, device="PYTHON") @ Tensor.empty(4096, device="PYTHON"))[0]
  assert any(o.op is OptOps.GROUP for o in get_program(ast, ren).applied_opts)

def test_limits_are_kept():
  # a device with small workgroups and little shared memory: the choices shrink to fit
  ren = OpenCLRenderer()
  ren.local_max, ren.shared_max = (8, 4, 2), 64
  (ast,) = _asts(Tensor.empty(64, 256, device="PYTHON") + 1)
  p = get_program(ast, ren)
  assert p.local_size is not None and all(l <= m for l, m in zip(p.local_size, ren.local_max)) and _local_size(p) > 1
  ast = _asts(Tensor.empty(1 << 16, device="PYTHON").sum())[0]
  p = get_program(ast, ren)
  group = [o.arg for o in p.applied_opts if o.op is OptOps.GROUP]
  assert group and all(g * 4 <= 64 and g <= 8 for g in group), p.applied_opts

def test_cpu_gets_no_workgroups():
  from tinygrad.renderer.cstyle import ClangRenderer
  ast = _asts(Tensor.empty(1 << 16, device="PYTHON").sum())[0]
  assert not any(o.op in (OptOps.LOCAL, OptOps.GROUP) for o in get_program(ast, ClangRenderer()).applied_opts)

CASES = {
  "elementwise": (lambda a, b: a * 2 + 1, lambda a, b: a * 2 + 1),
  "sum": (lambda a, b: a.sum(), lambda a, b: a.sum()),
  "row_max": (lambda a, b: a.max(axis=1), lambda a, b: a.max(axis=1)),
  "col_sum_exp": (lambda a, b: a.exp().sum(axis=0), lambda a, b: np.exp(a).sum(axis=0)),
  "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
  "matvec": (lambda a, b: a @ b[:, 0], lambda a, b: a @ b[:, 0]),
}

def _device(name:str) -> str:
  try: Device[name]
  except Exception as e: pytest.skip(f"{name} is not available: {e}")
  return name

@pytest.mark.parametrize("dev", ["GPU", "WEBGPU", "PYTHON_CUDA"])
@pytest.mark.parametrize("case", CASES)
def test_results_with_workgroups(dev, case, monkeypatch):
  if dev == "PYTHON_CUDA": monkeypatch.setattr(Device["PYTHON"], "renderer", PythonRenderer("CUDA"))
  d = _device(dev.split("_")[0])
  monkeypatch.setattr(realize, "method_cache", {})
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((32, 512)).astype(np.float32), rng.standard_normal((512, 64)).astype(np.float32)
  fn, ref = CASES[case]
  with Context(NOOPT=0, BEAM=0, CACHELEVEL=0):
    out = fn(Tensor(a, device=d), Tensor(b, device=d)).numpy()
    progs = [r.p for r in realize.method_cache.values()]
  np.testing.assert_allclose(out, ref(a, b), rtol=1e-4, atol=1e-3)
  assert any(_local_size(p) > 1 for p in progs), [p.applied_opts for p in progs]

@pytest.mark.parametrize("name", ["OpenCL", "WGSL", "CUDA"])
def test_prime_axes_are_padded_to_whole_workgroups(name):
  # nothing divides 100003: the output axis is padded to whole workgroups (the padding is gated off), a sum's axis to whole groups (zeros
  # add nothing); a max can't pad with zeros and keeps its single thread (or, over a loop limit, the lowerer's guarded workgroup)
  ren = RENDERERS[name]()
  (ast,) = _asts(Tensor.empty(100003, device="PYTHON") * 2 + 1)
  p = get_program(ast, ren)
  assert [o.op for o in p.applied_opts] == [OptOps.PADTO, OptOps.LOCAL] and _local_size(p) > 1, p.applied_opts
  assert p.global_size[0] * _local_size(p) >= 100003 and all(g <= m for g, m in zip(p.global_size, ren.global_max))
  with Context(SPLIT_REDUCEOPS=0): ast = _asts(Tensor.empty(100003, device="PYTHON").sum())[0]
  assert [o.op for o in get_program(ast, ren).applied_opts][-2:] == [OptOps.PADTO, OptOps.GROUP]
  with Context(SPLIT_REDUCEOPS=0): ast = _asts(Tensor.empty(100003, device="PYTHON").max())[0]
  assert OptOps.PADTO not in [o.op for o in get_program(ast, ren).applied_opts]
