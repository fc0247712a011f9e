# CUDA without a GPU: NVRTC and ptxas compile what the CUDA C and PTX renderers make (tensor cores included), the cross-compile hook counts
# every kernel per target, and the runtime says what is missing. The compiler tests skip where the `cuda` extra isn't installed.
import json, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.device import CompileError, DeviceUnavailable
from tinygrad.engine.realize import get_program
from tinygrad.engine import cross
from tinygrad.opt.kernel import Opt, OptOps
from tinygrad.renderer.cstyle import CUDARenderer
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.runtime.support import compiler_cuda
from tinygrad.runtime.support.compiler_cuda import NVRTCCompiler, PTXCompiler
from tinygrad.runtime.support.targets import parse_targets, TARGETS

def _have(fn) -> bool:
  try: fn()
  except DeviceUnavailable: return False
  return True
needs_nvrtc = pytest.mark.skipif(not _have(compiler_cuda.nvrtc), reason="needs NVRTC: pip install 'tinygrad[cuda]'")
needs_ptxas = pytest.mark.skipif(not _have(compiler_cuda.ptxas), reason="needs ptxas: pip install 'tinygrad[cuda]'")

def asts(*tensors:Tensor) -> list:
  return [si.ast for t in tensors for si in t.schedule() if si.ast.op.name == "SINK"]

def sample_kernels() -> list:
  a, b = Tensor.rand(33, 17, device="CPU"), Tensor.rand(17, 9, device="CPU")
  return asts(a @ b, a.exp().sum(1), (a > 0.5).where(a, -a).max(0), a.half().sum(), a.cast(dtypes.bfloat16) * 3, a.cast(dtypes.int8) // 3,
              a.bitcast(dtypes.int32) >> 3, a.cast(dtypes.int64).cumsum(1), Tensor.arange(100, device="CPU").reshape(10, 10).argmax(1),
              a.softmax(1), a.double().sqrt(), a.half().pow(a.half()), a.cast(dtypes.bfloat16).reciprocal())

@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_compiles_cuda_c(arch):
  c = NVRTCCompiler(arch)
  for ast in sample_kernels():
    lib = c.compile(get_program(ast, CUDARenderer(arch)).src)
    assert lib[:4] == b"\x7fELF"   # a cubin is an ELF file

@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_assembles_ptx_renderer(arch):
  c = PTXCompiler(arch)
  for ast in sample_kernels():
    src = get_program(ast, PTXRenderer(arch)).src
    assert f".target {arch}" in src and ".visible .entry" in src
    assert c.compile(src)[:4] == b"\x7fELF"

@needs_nvrtc
@needs_ptxas
@pytest.mark.parametrize("ren", [CUDARenderer, PTXRenderer])
def test_tensor_cores_compile(ren):
  # every CUDA tensor core, through mma.sync in each renderer, with an UNROLL so one thread runs two of them per K step
  comp = NVRTCCompiler("sm_80") if ren is CUDARenderer else PTXCompiler("sm_80")
  for i, tc in enumerate(ren("sm_80").tensor_cores):
    n, m, k = tc.dims
    a = Tensor(np.random.rand(m, 2*k).astype(np.float32), device="CPU").cast(tc.dtype_in).realize()
    b = Tensor(np.random.rand(2*k, 2*n).astype(np.float32), device="CPU").cast(tc.dtype_in).realize()
    ast = asts((a.reshape(m, 1, 2*k) * b.T.reshape(1, 2*n, 2*k)).sum(-1, dtype=tc.dtype_out))[-1]
    p = get_program(ast, ren("sm_80"), [Opt(OptOps.TC, 0, (i, 0)), Opt(OptOps.UNROLL, 0, 2)])
    assert "mma.sync.aligned" in p.src
    assert comp.compile(p.src)[:4] == b"\x7fELF"

def test_no_tensor_cores_before_sm80():
  assert CUDARenderer("sm_75").tensor_cores == [] and PTXRenderer("sm_75").tensor_cores == []
  assert CUDARenderer("sm_90").tensor_cores and PTXRenderer("sm_80").tensor_cores

@needs_nvrtc
def test_nvrtc_error_shows_numbered_source_and_log():
  with pytest.raises(CompileError) as e: NVRTCCompiler("sm_80").compile('extern "C" __global__ void k(float *a) {\n  a[0] = undefined_thing;\n}')
  msg = str(e.value)
  assert "undefined_thing" in msg and "identifier" in msg and "   2   a[0] = undefined_thing;" in msg

@needs_ptxas
def test_ptxas_error_shows_numbered_source_and_log():
  src = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  bogus.instr %r0;\n  ret;\n}\n"
  with pytest.raises(CompileError) as e: PTXCompiler("sm_90").compile(src)
  assert "ptxas (sm_90)" in str(e.value) and "   6   bogus.instr %r0;" in str(e.value) and "   2 .target sm_90" in str(e.value)

def test_bad_arch_refused():
  for bad in ["gfx1100", "sm80", "80", "sm_8"]:
    with pytest.raises(ValueError, match="sm_80"): PTXCompiler(bad)

def test_missing_library_names_the_extra(monkeypatch):
  monkeypatch.setattr(compiler_cuda, "_find", lambda *a: None)
  compiler_cuda.nvrtc.cache_clear()
  compiler_cuda.ptxas.cache_clear()
  try:
    with pytest.raises(DeviceUnavailable, match=r"libnvrtc.*tinygrad\[cuda\]"): compiler_cuda.nvrtc()
    with pytest.raises(DeviceUnavailable, match=r"ptxas.*tinygrad\[cuda\]"): compiler_cuda.ptxas()
  finally:
    compiler_cuda.nvrtc.cache_clear()
    compiler_cuda.ptxas.cache_clear()

def test_cuda_device_without_driver_says_so():
  try: Device["CUDA"]
  except DeviceUnavailable as e: assert "no libcuda.so (NVIDIA driver)" in str(e)
  else: pytest.skip("an NVIDIA driver is present")

# ***** the cross-compile hook *****

def test_parse_targets():
  assert [(t.name, a) for t, a in parse_targets("CUDA:sm_86, ptx")] == [("CUDA", "sm_86"), ("PTX", "sm_80"), ("PTX", "sm_90")]
  with pytest.raises(ValueError, match="known targets are"): parse_targets("VULKAN")
  assert {"CUDA", "PTX"} <= set(TARGETS)

def test_reason_groups_failures():
  e1 = CompileError("ptxas (sm_80) failed:\nptxas /tmp/a/kernel.ptx, line 23; error   : Arguments mismatch for instruction 'setp'", "x")
  e2 = CompileError("ptxas (sm_80) failed:\nptxas /tmp/b/kernel.ptx, line 7; error   : Arguments mismatch for instruction 'setp'", "y")
  assert cross.reason_of(e1) == cross.reason_of(e2) == "CompileError: ptxas error : Arguments mismatch for instruction 'setp'"

@needs_nvrtc
@needs_ptxas
def test_cross_compile_logs_every_kernel(tmp_path, monkeypatch):
  log = str(tmp_path / "log.jsonl")
  monkeypatch.setattr(cross, "_seen", set())
  kernels = sample_kernels()
  for ast in kernels: cross.cross_compile(ast, "CUDA:sm_80,PTX:sm_90", log)
  for ast in kernels: cross.cross_compile(ast, "CUDA:sm_80,PTX:sm_90", log)   # seen ones are not compiled again
  recs = [json.loads(x) for x in open(log)]
  assert len(recs) == 2 * len(kernels) and all("error" not in r and r["bytes"] > 0 for r in recs)
  text, failed = cross.summarize(log)
  assert failed == 0 and "CUDA:sm_80" in text and "PTX:sm_90" in text

def test_cross_compile_records_failures(tmp_path, monkeypatch):
  # a target whose compiler can't be made: every kernel fails with that reason, and the run goes on
  from tinygrad.runtime.support import targets
  def broken(arch): raise DeviceUnavailable(f"no compiler for {arch}")
  monkeypatch.setitem(targets.TARGETS, "BROKEN", targets.Target("BROKEN", lambda arch: CUDARenderer(arch), broken, ("sm_1",)))
  monkeypatch.setattr(cross, "_seen", set())
  log = str(tmp_path / "log.jsonl")
  for ast in sample_kernels()[:3]: cross.cross_compile(ast, "BROKEN", log)
  text, failed = cross.summarize(log)
  assert failed == 3 and "FAIL BROKEN:sm_1 x3 RuntimeError: DeviceUnavailable: no compiler for sm_1" in text

@needs_nvrtc
def test_compile_cli(tmp_path):
  # the engine hook end to end: a small op test file run by `python -m tinygrad.device --compile`
  (tmp_path / "test_small.py").write_text("from tinygrad import Tensor\ndef test_add(): assert (Tensor([1.0, 2.0]) + 1).tolist() == [2.0, 3.0]\n")
  out = subprocess.run([sys.executable, "-m", "tinygrad.device", "--compile", "CUDA:sm_80", "-p", "no:randomly", str(tmp_path / "test_small.py")],
                       capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "CPU": "1"})
  assert out.returncode == 0, out.stdout + out.stderr
  line = next(x for x in out.stdout.splitlines() if x.startswith("CUDA:sm_80"))
  assert line.split()[1:5] == ["1", "1", "0", "0"]

def test_ptx_renderer_numbers():
  # the PTX literals: floats in hex (exact, inf and nan too), unsigned ints wrapped
  from tinygrad.renderer.ptx import pconst
  assert pconst(1.0, dtypes.float32) == "0f3F800000" and pconst(float("inf"), dtypes.float32) == "0f7F800000"
  assert pconst(1.0, dtypes.float64) == "0d3FF0000000000000" and pconst(-1, dtypes.uint32) == "4294967295"
  assert np.float32(np.frombuffer(bytes.fromhex(pconst(0.1, dtypes.half)[2:])[::-1], np.float32)[0]) == np.float32(np.float16(0.1))

def test_ptx_vector_loads_and_stores():
  # float4 where the element index is a multiple of 4 (behind a runtime check of the address's alignment, a sub-buffer's offset may break
  # it), scalar where it isn't (a view starting at element 1)
  a, b = Tensor.empty(32, 36, device="PYTHON"), Tensor.empty(32, 36, device="PYTHON")
  src = {name: get_program(asts(t)[-1], PTXRenderer("sm_80")).src for name, t in (("aligned", a * b + 1), ("offset", a[:, 1:33] + 1))}
  assert src["aligned"].count("ld.global.v4.f32") == 2 and src["aligned"].count("st.global.v4.f32") == 1
  assert "@!%p0 ld.global.f32" in src["aligned"] and "and.b64" in src["aligned"]
  assert "ld.global.v4" not in src["offset"] and "ld.global.f32" in src["offset"] and "st.global.v4.f32" in src["offset"]
  if _have(compiler_cuda.ptxas):
    for s in src.values(): assert PTXCompiler("sm_80").compile(s)[:4] == b"\x7fELF"

# ***** the opts CUDA's heuristics pick, run on the PYTHON emulator (EMULATE=CUDA), then compiled for real with the same opts *****

def _emulated_cases():
  from tinygrad.uop import Ops
  rng = np.random.default_rng(0)
  def t(shape, dt): return Tensor(rng.standard_normal(shape).astype(np.float32), device="PYTHON").cast(dt).realize()
  a, b = t((32, 64), dtypes.half), t((64, 32), dtypes.half)
  # None: the heuristics' own opts
  yield "tensor cores", (a.reshape(32, 1, 64) * b.T.reshape(1, 32, 64)).sum(-1, dtype=dtypes.float), \
    a.float().numpy() @ b.float().numpy(), None, lambda p: any(u.op is Ops.WMMA for u in p.uops)
  x = t((4, 4096), dtypes.float)
  yield "locals (grouped reduce)", x.sum(1), x.numpy().sum(1), [Opt(OptOps.GROUPTOP, 0, 16)], \
    lambda p: any(u.op is Ops.DEFINE_LOCAL for u in p.uops)
  h = t((64, 64), dtypes.float)
  yield "vector types", h * 2 + 1, h.numpy() * 2 + 1, [Opt(OptOps.LOCAL, 0, 8), Opt(OptOps.UPCAST, 1, 4)], \
    lambda p: p.uops is not None
  bf = t((16, 256), dtypes.bfloat16)
  yield "bfloat16 reduce", bf.float().max(1), bf.float().numpy().max(1), None, lambda p: True

@pytest.mark.parametrize("case", range(4))
def test_emulated_cuda_opts(case):
  from tinygrad.engine.realize import CompiledRunner
  from tinygrad.runtime.ops_python import PythonRenderer
  name, out, ref, opts, has = list(_emulated_cases())[case]
  si = out.schedule()[-1]
  p = get_program(si.ast, PythonRenderer("CUDA"), opts)
  assert has(p), f"{name}: the CUDA heuristics didn't use it, opts {p.applied_opts}"
  for buf in si.bufs: buf.ensure_allocated()
  CompiledRunner(p).exec(list(si.bufs))
  np.testing.assert_allclose(si.bufs[0].numpy().astype(np.float32).reshape(ref.shape), ref, rtol=2e-2, atol=2e-2, err_msg=name)
  # the same opts through the real renderers and compilers
  for ren, comp in ((CUDARenderer, NVRTCCompiler), (PTXRenderer, PTXCompiler)):
    src = get_program(si.ast, ren("sm_80"), list(p.applied_opts)).src
    if name == "tensor cores": assert "mma.sync.aligned.m16n8k16" in src
    if _have(compiler_cuda.nvrtc) and _have(compiler_cuda.ptxas): assert comp("sm_80").compile(src)[:4] == b"\x7fELF", name

# ***** the runtime's ctypes plumbing against a stub libcuda (host memory, launches recorded): no GPU needed *****

STUB = r"""
#include <stdlib.h>
#include <string.h>
typedef unsigned long long u64;
int launches, grid[6]; u64 arg0;
int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) { *v = attr == 75 ? 8 : 6; return 0; }
int cuDeviceGetName(char *s, int n, int d) { strncpy(s, "stub", n); return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void*)1; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuStreamCreate(void **s, unsigned f) { *s = (void*)2; return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuMemAlloc_v2(u64 *p, size_t n) { if (n > (1ull << 40)) return 2; *p = (u64)malloc(n); return 0; }
int cuMemFree_v2(u64 p) { free((void*)p); return 0; }
int cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n); return 0; }
int cuMemFreeHost(void *p) { free(p); return 0; }
int cuMemcpyHtoDAsync_v2(u64 d, void *s, size_t n, void *st) { memcpy((void*)d, s, n); return 0; }
int cuMemcpyDtoHAsync_v2(void *d, u64 s, size_t n, void *st) { memcpy(d, (void*)s, n); return 0; }
int cuMemcpyPeerAsync(u64 d, void *dc, u64 s, void *sc, size_t n, void *st) { memcpy((void*)d, (void*)s, n); return 0; }
int cuModuleLoadData(void **m, const void *img) { *m = (void*)3; return memcmp(img, "\x7f" "ELF", 4) ? 200 : 0; }
int cuModuleUnload(void *m) { return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) { *f = (void*)4; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, void *st, void **params,
                   void **extra) { launches++; grid[0] = gx; grid[1] = gy; grid[2] = gz; grid[3] = bx; grid[4] = by; grid[5] = bz;
                   arg0 = *(u64*)params[0]; return 0; }
int cuEventCreate(void **e, unsigned f) { *e = (void*)5; return 0; }
int cuEventRecord(void *e, void *s) { return 0; }
int cuEventSynchronize(void *e) { return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 1.5f; return 0; }
int cuEventDestroy_v2(void *e) { return 0; }
int cuGetErrorString(int e, const char **s) { *s = e == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "error"; return 0; }
/* graphs: nodes are 100, 101, ...; each node's first two kernel arguments as last set */
typedef struct { void *func; unsigned dims[6]; unsigned shared; void **params; void **extra; } KNP;
int graphs, nodes, instantiated, graph_launches, node_updates; u64 node_args[64][2];
int cuGraphCreate(void **g, unsigned f) { *g = (void*)6; graphs++; return 0; }
int cuGraphAddKernelNode(void **n, void *g, void **deps, size_t nd, KNP *p) {
  if (nodes > 0 && (nd != 1 || deps[0] != (void*)(size_t)(100 + nodes - 1))) return 1;   /* a chain in launch order */
  node_args[nodes][0] = *(u64*)p->params[0]; node_args[nodes][1] = *(u64*)p->params[1]; *n = (void*)(size_t)(100 + nodes++); return 0; }
int graph_fail;   /* set: instantiating fails, as on a driver without graphs */
int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { if (graph_fail) return 801; *e = (void*)7; instantiated++; return 0; }
int cuGraphLaunch(void *e, void *s) { graph_launches++; return 0; }
int cuGraphExecKernelNodeSetParams(void *e, void *n, KNP *p) {
  node_updates++; node_args[(size_t)n - 100][0] = *(u64*)p->params[0]; node_args[(size_t)n - 100][1] = *(u64*)p->params[1]; return 0; }
int cuGraphExecDestroy(void *e) { return 0; }
int cuGraphDestroy(void *g) { return 0; }
"""

@pytest.fixture
def stub_cuda(tmp_path, monkeypatch):
  import ctypes, shutil
  from tinygrad.runtime import ops_cuda
  cc = shutil.which("clang") or shutil.which("gcc")
  if cc is None: pytest.skip("needs a C compiler for the stub libcuda")
  (tmp_path / "stub.c").write_text(STUB)
  subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib := tmp_path / "libcuda_stub.so"), str(tmp_path / "stub.c")], check=True)
  real_find = ctypes.util.find_library
  monkeypatch.setattr(ctypes.util, "find_library", lambda n: str(lib) if n == "cuda" else real_find(n))
  ops_cuda._cuda.cache_clear()
  yield ctypes.CDLL(str(lib))
  ops_cuda._cuda.cache_clear()

@needs_nvrtc
def test_runtime_against_stub_libcuda(stub_cuda):
  import ctypes
  from tinygrad.runtime.ops_cuda import CUDADevice, CUDAProgram
  dev = CUDADevice("CUDA")
  assert dev.arch == "sm_86" and isinstance(dev.renderer, CUDARenderer) and dev.renderer.arch == "sm_86"
  data = np.arange(16, dtype=np.float32)
  buf = dev.allocator.alloc(data.nbytes)
  dev.allocator._copyin(buf, memoryview(data.tobytes()))
  out = memoryview(bytearray(data.nbytes))
  dev.allocator._copyout(out, buf)
  np.testing.assert_equal(np.frombuffer(out, np.float32), data)
  assert dev.pinned == []   # the pinned staging copy is freed once the stream is synchronized
  lib = NVRTCCompiler("sm_86").compile('extern "C" __global__ void k(float *a) { a[threadIdx.x] = 1.0f; }')
  prg = CUDAProgram(dev, "k", lib)
  assert prg(buf, global_size=(4, 2, 1), local_size=(32, 1, 1), wait=True) == pytest.approx(1.5e-3)
  assert ctypes.c_int.in_dll(stub_cuda, "launches").value == 1 and list((ctypes.c_int * 6).in_dll(stub_cuda, "grid")) == [4, 2, 1, 32, 1, 1]
  assert ctypes.c_uint64.in_dll(stub_cuda, "arg0").value == buf
  with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_IMAGE"): CUDAProgram(dev, "k", b"not a cubin")
  with pytest.raises(MemoryError): dev.allocator._alloc(1 << 41, None)

@needs_nvrtc
def test_jit_replays_one_cuda_graph(stub_cuda, monkeypatch):
  import ctypes
  from tinygrad import TinyJit
  from tinygrad.runtime.ops_cuda import CUDADevice
  monkeypatch.setitem(Device._opened, "CUDA", dev := CUDADevice("CUDA"))
  @TinyJit
  def f(a:Tensor, b:Tensor) -> Tensor: return (((a + b).contiguous() * 2).contiguous() + a).contiguous()
  stat = lambda name: ctypes.c_int.in_dll(stub_cuda, name).value  # noqa: E731
  for i in range(5):
    a, b = (Tensor(np.full((8, 8), i + j, np.float32), device="CUDA").realize() for j in range(2))
    before = (stat("launches"), stat("graph_launches"))
    f(a, b)
    if i >= 2:   # replays: one graph launch, no kernel launches; the first node reads this call's a and b
      assert (stat("launches"), stat("graph_launches")) == (before[0], before[1] + 1)
      assert list((ctypes.c_uint64 * 2).in_dll(stub_cuda, "node_args")) [1] == a.uop.base.realized._buf
  assert len(f.jit_cache) == 1 and type(f.jit_cache[0].prg).__name__ == "CUDAGraphRunner"
  # one graph of the three kernels, instantiated once; new input buffers update the nodes that read them
  assert (stat("graphs"), stat("nodes"), stat("instantiated"), stat("graph_launches")) == (1, 3, 1, 3) and stat("node_updates") >= 3
  dev.synchronize()

@needs_nvrtc
def test_cuda_graph_updates_variables(stub_cuda, monkeypatch):
  import ctypes
  from tinygrad import TinyJit, Variable
  from tinygrad.runtime.ops_cuda import CUDADevice
  monkeypatch.setitem(Device._opened, "CUDA", CUDADevice("CUDA"))
  @TinyJit
  def f(a:Tensor, n) -> Tensor: return ((a.shrink(((0, n), None)) + 1).contiguous() * 2).contiguous().sum(0).contiguous()
  stat = lambda name: ctypes.c_int.in_dll(stub_cuda, name).value  # noqa: E731
  a, v = Tensor(np.ones((16, 4), np.float32), device="CUDA").realize(), Variable("n", 1, 16)
  updates = []
  for i in range(5):
    f(a, v.bind(i + 3))
    updates.append(stat("node_updates"))
  # the same buffers every call: only the nodes whose launch takes n change, on every replay
  assert stat("graph_launches") == 3 and updates[2] < updates[3] < updates[4]

@needs_nvrtc
def test_cuda_graph_falls_back_to_launches(stub_cuda, monkeypatch):
  import ctypes
  from tinygrad import TinyJit
  from tinygrad.runtime.ops_cuda import CUDADevice
  monkeypatch.setitem(Device._opened, "CUDA", CUDADevice("CUDA"))
  ctypes.c_int.in_dll(stub_cuda, "graph_fail").value = 1
  @TinyJit
  def f(a:Tensor) -> Tensor: return ((a + 1).contiguous() * 2).contiguous()
  a = Tensor(np.ones(8, np.float32), device="CUDA").realize()
  for _ in range(3): f(a)
  # the replay launches both kernels one by one through the engine's GraphRunner
  assert type(f.jit_cache[0].prg).__name__ == "GraphRunner" and ctypes.c_int.in_dll(stub_cuda, "graph_launches").value == 0
  assert ctypes.c_int.in_dll(stub_cuda, "launches").value == 6
