# Tensor cores: every family's WMMA runs on the PYTHON device through its emulator, renders for its real device, and the TC opt says why
# it doesn't apply
import pickle, shutil, subprocess
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context, getenv
from tinygrad.uop import Ops
from tinygrad.engine import realize
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.opt.kernel import Kernel, Opt, OptOps, KernelOptError, AxisType
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.opt.tc import TensorCore, tensor_cores
from tinygrad.renderer.cstyle import CUDARenderer, AMDRenderer, MetalRenderer, IntelRenderer
from tinygrad.runtime import ops_python
from tinygrad.runtime.ops_python import PythonRenderer

FAMILIES = ["CUDA", "AMD", "METAL", "INTEL"]
ALL_TCS = [(fam, i) for fam in FAMILIES for i in range(len(tensor_cores[fam]))]

def _np(dt): return np.float16 if dt == dtypes.half else np.float32

def matmul_ast(M:int, N:int, K:int, din=dtypes.half, dout=dtypes.float, device="PYTHON", seed=0):
  """The kernel of out = a @ b with the products summed in dout, and its buffers (inputs filled), and the reference result."""
  rng = np.random.default_rng(seed)
  an, bn = rng.standard_normal((M, K)).astype(_np(din)), rng.standard_normal((K, N)).astype(_np(din))
  a, b = Tensor(an, dtype=din, device=device).realize(), Tensor(bn, dtype=din, device=device).realize()
  out = (a.reshape(M, 1, K) * b.T.reshape(1, N, K)).sum(-1, dtype=dout)
  si = out.schedule()[-1]
  ref = a.float().numpy().astype(np.float64) @ b.float().numpy().astype(np.float64)
  return si, ref

def run_tc(ren, si, opts) -> np.ndarray:
  p = get_program(si.ast, ren, opts)
  assert any(u.op is Ops.WMMA for u in p.uops), "the kernel has no WMMA"
  for buf in si.bufs: buf.ensure_allocated()
  CompiledRunner(p).exec(list(si.bufs))
  return si.bufs[0].numpy().astype(np.float64)

# ***** the layouts in tc.py agree with the vendors' formulas the emulators are written from *****

@pytest.mark.parametrize("fam,i", ALL_TCS)
def test_layout_matches_emulator(fam, i):
  tc: TensorCore = tensor_cores[fam][i]
  maps = {"CUDA": ops_python._cuda_maps, "AMD": ops_python._amd_maps, "METAL": ops_python._metal_maps, "INTEL": ops_python._intel_maps}[fam]
  fmaps = maps(tc.dims, tc.threads)
  n, m, k = tc.dims
  for op, fmap, ept, (rows, cols) in zip("abc", fmaps, tc.elements_per_thread, ((m, k), (k, n), (m, n))):
    seen: dict[tuple[int, int], int] = {}
    for t in range(tc.threads):
      for e in range(ept):
        assert tc.coords(op, t, e) == fmap(t, e), f"{tc} {op}: thread {t} element {e}"
        seen[fmap(t, e)] = seen.get(fmap(t, e), 0) + 1
    # every element of the matrix is held, each by the same number of threads
    assert set(seen) == {(r, c) for r in range(rows) for c in range(cols)} and len(set(seen.values())) == 1

def test_bad_layouts_rejected():
  with pytest.raises(ValueError): TensorCore((8, 8, 8), 32, (2, 2, 2), dtypes.half, dtypes.float, "METAL", a=(("t1", "t2", "t4"), ("e0", "t0", "t0")),
                                             b=(("t1", "t2", "t4"), ("e0", "t0", "t3")), c=(("t1", "t2", "t4"), ("e0", "t0", "t3")))
  with pytest.raises(ValueError): TensorCore((8, 8, 8), 32, (2, 2, 2), dtypes.half, dtypes.float, "METAL", a=(("t1", "t2"), ("e0", "t0", "t3")),
                                             b=(("t1", "t2", "t4"), ("e0", "t0", "t3")), c=(("t1", "t2", "t4"), ("e0", "t0", "t3")))

# ***** matmuls on the emulated tensor cores *****

def _shapes(tc:TensorCore) -> list[tuple[int, int, int]]:
  n, m, k = tc.dims
  return [(m, n, k), (2*m, n, 2*k), (m, 2*n, k)]

@pytest.mark.parametrize("fam,i", ALL_TCS)
def test_matmul(fam, i):
  ren = PythonRenderer(fam)
  tc = ren.tensor_cores[i]
  for M, N, K in _shapes(tc):
    si, ref = matmul_ast(M, N, K, tc.dtype_in, tc.dtype_out)
    got = run_tc(ren, si, [Opt(OptOps.TC, 0, (i, 0))])
    tol = 5e-2 if tc.dtype_out == dtypes.half else 1e-4
    np.testing.assert_allclose(got.reshape(M, N), ref, rtol=tol, atol=tol, err_msg=f"{tc} {(M, N, K)}")

# TC with more opts: two WMMAs per thread (UPCAST of an output axis), two per K step (UNROLL), more warps per workgroup (LOCAL)
EXTRA = [[Opt(OptOps.UPCAST, 0, 2)], [Opt(OptOps.UNROLL, 0, 2)], [Opt(OptOps.LOCAL, 0, 2)], [Opt(OptOps.UPCAST, 1, 2), Opt(OptOps.LOCAL, 0, 2)]]

@pytest.mark.parametrize("fam", FAMILIES)
@pytest.mark.parametrize("extra", EXTRA, ids=lambda e: "+".join(f"{o.op.name}{o.axis}" for o in e))
def test_matmul_more_opts(fam, extra):
  ren = PythonRenderer(fam)
  tc = ren.tensor_cores[0]
  n, m, k = tc.dims
  M, N, K = 2*m, 4*n, 2*k
  si, ref = matmul_ast(M, N, K, tc.dtype_in, tc.dtype_out, seed=1)
  p = get_program(si.ast, ren, [Opt(OptOps.TC, 0, (0, 0)), *extra])
  assert sum(u.op is Ops.WMMA for u in p.uops) == (2 if extra[0].op in (OptOps.UPCAST, OptOps.UNROLL) else 1)
  np.testing.assert_allclose(run_tc(ren, si, [Opt(OptOps.TC, 0, (0, 0)), *extra]).reshape(M, N), ref, rtol=1e-4, atol=1e-4)

def test_matmul_any_tc_and_factors():
  # tc_select -1 takes the first tensor core that fits; tc_opt 1 lets the factors be expressions of loads
  ren = PythonRenderer("CUDA")
  rng = np.random.default_rng(2)
  an, bn = rng.standard_normal((32, 16)).astype(np.float16), rng.standard_normal((16, 8)).astype(np.float16)
  a, b = Tensor(an, device="PYTHON").realize(), Tensor(bn, device="PYTHON").realize()
  out = ((a * 2).reshape(32, 1, 16) * (b + 1).T.reshape(1, 8, 16)).sum(-1, dtype=dtypes.float)
  si = out.schedule()[-1]
  with pytest.raises(KernelOptError, match="must be loads"): get_program(si.ast, ren, [Opt(OptOps.TC, 0, (-1, 0))])
  got = run_tc(ren, si, [Opt(OptOps.TC, 0, (-1, 1))])
  ref = (an.astype(np.float32) * 2).astype(np.float16).astype(np.float64) @ (bn.astype(np.float32) + 1).astype(np.float16).astype(np.float64)
  np.testing.assert_allclose(got.reshape(32, 8), ref, rtol=1e-3, atol=1e-3)

def test_heuristic_uses_tc(monkeypatch):
  ren = PythonRenderer("AMD")
  si, ref = matmul_ast(32, 16, 32)
  k = Kernel(si.ast, ren)
  assert hand_coded_optimizations(k) == [Opt(OptOps.TC, 0, (-1, 0))]
  with Context(USE_TC=0): assert all(o.op is not OptOps.TC for o in hand_coded_optimizations(k))
  assert all(o.op is not OptOps.TC for o in hand_coded_optimizations(Kernel(si.ast, PythonRenderer())))
  # the whole path: the device's renderer emulates AMD, a @ b picks the tensor core by itself
  monkeypatch.setattr(Device["PYTHON"], "renderer", ren)
  monkeypatch.setattr(realize, "method_cache", {})
  rng = np.random.default_rng(3)
  an, bn = rng.standard_normal((16, 32)).astype(np.float16), rng.standard_normal((32, 32)).astype(np.float16)
  got = (Tensor(an, device="PYTHON") @ Tensor(bn, device="PYTHON")).numpy()
  np.testing.assert_allclose(got, an.astype(np.float32) @ bn.astype(np.float32), rtol=1e-2, atol=1e-2)

def test_estimates_count_wmma_flops():
  si, _ = matmul_ast(32, 16, 48)
  p = get_program(si.ast, PythonRenderer("CUDA"), [Opt(OptOps.TC, 0, (0, 0))])
  assert p.estimates.ops == 2 * 32 * 16 * 48

# ***** the real renderers *****

@pytest.mark.parametrize("ren,fam,needles", [
  (CUDARenderer, "CUDA", ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                          "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"]),
  (AMDRenderer, "AMD", ["__builtin_amdgcn_wmma_f32_16x16x16_f16_w32"]),
  (MetalRenderer, "METAL", ["simdgroup_multiply_accumulate(mc, ma, mb, mc)", "simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_half8x8 mc"]),
  (IntelRenderer, "INTEL", ["intel_sub_group_f16_f16_matrix_mad_k16(as_int8(a), as_int8(b), c)", "intel_reqd_sub_group_size(16)"]),
])
def test_render(ren, fam, needles):
  assert ren.tensor_cores == tensor_cores[fam]
  srcs = []
  for i, tc in enumerate(ren.tensor_cores):
    n, m, k = tc.dims
    si, _ = matmul_ast(2*m, 2*n, 2*k, tc.dtype_in, tc.dtype_out, device="PYTHON")
    src = get_program(si.ast, ren(), [Opt(OptOps.TC, 0, (i, 0))]).src
    assert f"__{tc.name}(" in src
    srcs.append(src)
  for needle in needles: assert any(needle in s for s in srcs), needle

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_compiles(tmp_path):
  # ptxas checks the mma instructions, their operand counts and the register constraints
  for i, tc in enumerate(CUDARenderer.tensor_cores):
    n, m, k = tc.dims
    si, _ = matmul_ast(m, 2*n, 2*k, tc.dtype_in, tc.dtype_out)
    src = get_program(si.ast, CUDARenderer(), [Opt(OptOps.TC, 0, (i, 0)), Opt(OptOps.UNROLL, 0, 2)]).src
    assert "struct __align__(4) half2" not in src   # cuda_fp16.h has it
    (f := tmp_path / f"k{i}.cu").write_text(src)
    ret = subprocess.run(["nvcc", "-arch=sm_80", "-cubin", "-o", str(tmp_path / f"k{i}.cubin"), str(f)], capture_output=True, text=True)
    assert ret.returncode == 0, ret.stderr

def test_no_wmma_on_cpu_renderer():
  from tinygrad.renderer.cstyle import ClangRenderer
  si, _ = matmul_ast(16, 8, 16)
  uops = get_program(si.ast, PythonRenderer("CUDA"), [Opt(OptOps.TC, 0, (0, 0))]).uops
  assert uops is not None
  with pytest.raises(NotImplementedError): ClangRenderer().render("k", uops)

# ***** why a TC doesn't apply *****

def _tc_error(ast, ren, opt=Opt(OptOps.TC, 0, (0, 0))) -> str:
  with pytest.raises(KernelOptError) as e: Kernel(ast, ren).apply_opt(opt)
  return str(e.value)

def test_tc_non_matmul():
  ren = PythonRenderer("CUDA")
  x, y = Tensor.empty(16, 16, dtype=dtypes.half), Tensor.empty(16, 16, dtype=dtypes.half)
  for t in [x + y, x.sum(1, dtype=dtypes.float), (x * y).max(1), (x * y).sum(1, dtype=dtypes.float)]:
    assert "TC on a non-matmul kernel" in _tc_error(t.schedule()[-1].ast, ren)

@pytest.mark.parametrize("fam,shape,dim", [("CUDA", (24, 8, 16), "M"), ("CUDA", (16, 12, 16), "N"), ("CUDA", (16, 8, 24), "K"),
                                           ("AMD", (16, 16, 8), "K"), ("METAL", (8, 12, 8), "N"), ("INTEL", (8, 8, 24), "K")])
def test_tc_not_divisible(fam, shape, dim):
  ren = PythonRenderer(fam)
  tc = ren.tensor_cores[0]
  si, _ = matmul_ast(*shape, tc.dtype_in, tc.dtype_out)
  msg = _tc_error(si.ast, ren)
  assert f"{dim} axis" in msg and "is not a multiple" in msg and f"{dim}={dict(zip('NMK', tc.dims))[dim]}" in msg, msg

def test_tc_other_errors():
  ren = PythonRenderer("CUDA")
  si, _ = matmul_ast(16, 8, 16, dtypes.float, dtypes.float)
  assert "takes half" in _tc_error(si.ast, ren)                                        # no float32 tensor core on CUDA
  si, _ = matmul_ast(16, 8, 16)
  assert "has no tensor cores" in _tc_error(si.ast, PythonRenderer())
  assert "has 3 tensor cores" in _tc_error(si.ast, ren, Opt(OptOps.TC, 0, (7, 0)))
  assert "axis choices" in _tc_error(si.ast, ren, Opt(OptOps.TC, 5, (0, 0)))
  assert "padding" in _tc_error(si.ast, ren, Opt(OptOps.TC, 0, (0, 2)))
  k = Kernel(si.ast, ren)
  k.apply_opt(Opt(OptOps.UPCAST, 0, 2))
  with pytest.raises(KernelOptError, match="first opt"): k.apply_opt(Opt(OptOps.TC, 0, (0, 0)))
  # after the TC its axes are the tensor core's: no splitting the warp, no group reduce
  si, _ = matmul_ast(32, 16, 32)
  k = Kernel(si.ast, ren)
  k.apply_opt(Opt(OptOps.TC, 0, (0, 0)))
  warp = len(k.axes_of(AxisType.GLOBAL, AxisType.LOCAL)) - 1   # LOCAL's axis numbering: the globals, then the warp
  with pytest.raises(KernelOptError, match="belongs to the tensor core"): k.copy().apply_opt(Opt(OptOps.LOCAL, warp, 2))
  with pytest.raises(KernelOptError, match="group reduce"): k.copy().apply_opt(Opt(OptOps.GROUP, 0, 2))

# ***** the emulation switch *****

def test_python_renderer_emulate(monkeypatch):
  for fam, ren in zip(FAMILIES, (CUDARenderer, AMDRenderer, MetalRenderer, IntelRenderer)):
    r = PythonRenderer(fam)
    assert r.tensor_cores == ren.tensor_cores and r.local_max == ren.local_max and r.device == "PYTHON"
    assert pickle.loads(pickle.dumps(r)).tensor_cores == ren.tensor_cores
  def env(val:str|None):
    if val is None: monkeypatch.delenv("EMULATE", raising=False)
    else: monkeypatch.setenv("EMULATE", val)
    getenv.cache_clear()   # env flags are read once
  try:
    env("intel")
    assert PythonRenderer().tensor_cores == IntelRenderer.tensor_cores
    env("TPU")
    with pytest.raises(ValueError, match="emulates"): PythonRenderer()
    env(None)
    assert PythonRenderer().tensor_cores == []
  finally: getenv.cache_clear()

def test_emulator_checks_copies():
  # AMD's lanes 16-31 must repeat lanes 0-15 of A and B
  arg = ("WMMA_16_16_16_half_float", (16, 16, 16), dtypes.half, dtypes.float, "AMD", 32)
  a = [tuple(float(l % 16 + e) for e in range(16)) for l in range(32)]
  c = [(0.0,)*8]*32
  ops_python.WMMA_EMULATORS["AMD"](arg, a, a, c, 32)
  a[20] = (99.0,)*16
  with pytest.raises(ValueError, match="disagree"): ops_python.WMMA_EMULATORS["AMD"](arg, a, a, c, 32)
