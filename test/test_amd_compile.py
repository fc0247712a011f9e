"""AMD without an AMD GPU: every kernel of the op set (test/vendor_kernels.py) lowered for AMDLLVMRenderer and compiled to a code object for
gfx90a and gfx1100 through libLLVM and ld.lld; the HIP renderer's source through clang's HIP front end where clang has the AMDGPU target;
the arch checks, the tensor cores (WMMA on RDNA3, MFMA on CDNA), and the clean errors of a machine without ROCm."""
import shutil, struct, subprocess, pytest
from tinygrad import Tensor, dtypes, Device
from tinygrad.codegen.program import get_program
from tinygrad.device import CompileError
from tinygrad.opt.kernel import Opt, OptOps
from tinygrad.renderer.cstyle import AMDRenderer
from tinygrad.renderer.llvmir import AMDLLVMRenderer, AMD_ARCHS
from tinygrad.uop import Ops
from test.vendor_kernels import lower_all, DEV

def _amd_llvm_missing() -> str|None:
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  try: AMDLLVMCompiler("gfx1100")
  except (RuntimeError, ValueError) as e: return str(e)   # no libLLVM/AMDGPU target/ld.lld, or an LLVM older than 15
  return None

needs_amd_llvm = pytest.mark.skipif((why := _amd_llvm_missing()) is not None, reason=f"no libLLVM with AMDGPU or no ld.lld: {why}")

def _is_code_object(lib:bytes, name:str) -> bool:
  # an ELF shared object for AMDGPU (e_machine 224) that holds the kernel's descriptor symbol
  return lib[:4] == b"\x7fELF" and struct.unpack_from("<HH", lib, 16) == (3, 224) and f"{name}.kd".encode() in lib

@needs_amd_llvm
@pytest.mark.parametrize("arch", ["gfx90a", "gfx1100"])
def test_op_set_compiles(arch):
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  comp = AMDLLVMCompiler(arch)
  def check(p):
    if not _is_code_object(lib := comp.compile(p.src), p.name): raise AssertionError(f"not an AMDGPU code object with {p.name}.kd ({len(lib)} bytes)")
  ok, failed = lower_all(AMDLLVMRenderer(arch), check)
  print(f"AMD {arch}: {ok} kernels compiled, {len(failed)} failed" + "".join(f"\n  {f}" for f in failed))
  assert ok >= 60 and not failed, failed

def _tc_kernel(arch:str):
  a, b = Tensor.empty(32, 64, dtype=dtypes.half, device=DEV), Tensor.empty(32, 64, dtype=dtypes.half, device=DEV)
  ast = (a.reshape(32, 1, 64) * b.reshape(1, 32, 64)).sum(-1, dtype=dtypes.float).schedule()[-1].ast
  return get_program(ast, AMDLLVMRenderer(arch), [Opt(OptOps.TC, 0, (0, 0))])

@needs_amd_llvm
@pytest.mark.parametrize("arch,intrinsic,wave", [("gfx1100", "llvm.amdgcn.wmma.f32.16x16x16.f16", 32), ("gfx90a", "llvm.amdgcn.mfma.f32.16x16x16f16", 64)])
def test_tensor_core_compiles(arch, intrinsic, wave):
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  p = _tc_kernel(arch)
  assert p.uops is not None and any(u.op is Ops.WMMA and u.arg[5] == wave for u in p.uops)
  assert f"call <{8 if wave == 32 else 4} x float> @{intrinsic}(" in p.src
  lib = AMDLLVMCompiler(arch).compile(p.src)
  assert _is_code_object(lib, p.name)
  if (objdump := shutil.which("llvm-objdump-15")):
    dis = subprocess.run([objdump, "-d", "--mcpu=" + arch, "/dev/stdin"], input=lib, capture_output=True).stdout.decode()
    assert ("v_wmma_f32_16x16x16_f16" if wave == 32 else "v_mfma_f32_16x16x16f16") in dis

def test_no_tensor_cores_on_gfx1030():
  assert AMDLLVMRenderer("gfx1030").tensor_cores == [] and AMDLLVMRenderer("gfx90a").tensor_cores[0].threads == 64

def test_locals_barrier_and_launch_bounds():
  a = Tensor.empty(4, 4096, device=DEV)
  ast = a.sum(1).schedule()[-1].ast
  p = get_program(ast, AMDLLVMRenderer("gfx1100"), [Opt(OptOps.GROUPTOP, 0, 64), Opt(OptOps.UNROLL, 0, 4)])
  for needle in ["addrspace(3) global [64 x <4 x float>]", "getelementptr inbounds <4 x float>, ptr addrspace(3) @temp0", "call void @llvm.amdgcn.s.barrier()", 'fence syncscope("workgroup") release', "define amdgpu_kernel void",
                 "@llvm.amdgcn.workitem.id.x()", "@llvm.amdgcn.workgroup.id.x()", '"amdgpu-flat-work-group-size"="1,64"', "ptr addrspace(1) noalias"]:
    assert needle in p.src, needle
  if _amd_llvm_missing() is None:
    from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
    assert _is_code_object(AMDLLVMCompiler("gfx1100").compile(p.src), p.name)

@pytest.mark.parametrize("arch", ["gfx9999", "gfx90", "sm_80", "", "GFX1100"])
def test_bad_arch_refused_before_llvm(arch):
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  for cls in (AMDLLVMRenderer, AMDLLVMCompiler):
    with pytest.raises(ValueError, match="expected one of gfx90a, gfx1030, gfx1100"): cls(arch)
  assert set(AMD_ARCHS) == {"gfx90a", "gfx1030", "gfx1100"}

@needs_amd_llvm
def test_compile_error_shows_source():
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  with pytest.raises(CompileError) as e: AMDLLVMCompiler("gfx1100").compile("define amdgpu_kernel void @k() {\nentry:\n  ret i32 0\n}\n")
  assert "   3   ret i32 0" in str(e.value) and "LLVM" in str(e.value)

def test_renderer_pickles_with_arch():
  import pickle
  r = pickle.loads(pickle.dumps(AMDLLVMRenderer("gfx90a")))
  assert r.arch == "gfx90a" and r.tensor_cores == AMD_ARCHS["gfx90a"] and repr(r) == "AMDLLVMRenderer('gfx90a')"

# ***** HIP C++ (cstyle.AMDRenderer): hiprtc where ROCm is installed, clang's HIP front end as a compile check otherwise *****

def test_hip_compiler_missing_is_clear(monkeypatch):
  from tinygrad.runtime.support import compiler_amd
  compiler_amd.hiprtc.cache_clear()
  monkeypatch.setenv("HIPRTC_PATH", "/nonexistent/libhiprtc.so")
  monkeypatch.setattr(compiler_amd, "getenv", lambda k, d="": "/nonexistent/libhiprtc.so" if k == "HIPRTC_PATH" else d)
  try:
    try: compiler_amd.HIPCompiler("gfx1100")
    except RuntimeError as e: assert "libhiprtc.so" in str(e) and "ROCm" in str(e)
  finally: compiler_amd.hiprtc.cache_clear()
  with pytest.raises(ValueError, match="gfx90a or gfx1100"): compiler_amd.HIPCompiler("sm_80")

def test_amd_device_missing_is_clear():
  from tinygrad.runtime import ops_amd
  try: ops_amd._hip()
  except RuntimeError as e: assert "libamdhip64.so" in str(e) and "ROCm" in str(e)
  else: pytest.skip("ROCm is installed")
  with pytest.raises(RuntimeError, match="libamdhip64"): Device["AMD"]

def test_gpu_arch_from_topology(monkeypatch):
  from tinygrad.runtime import ops_amd
  monkeypatch.setattr(ops_amd, "getenv", lambda k, d="": d)
  monkeypatch.setattr(ops_amd.glob, "glob", lambda p: ["a", "b", "c"])
  props = {"a": "gfx_target_version 0\n", "b": "cpu_cores_count 0\ngfx_target_version 90010\n", "c": "gfx_target_version 110000\n"}
  import builtins, io
  monkeypatch.setattr(builtins, "open", lambda f, *a, **k: io.StringIO(props[f]))
  assert ops_amd.gpu_arch(0) == "gfx90a" and ops_amd.gpu_arch(1) == "gfx1100"
  with pytest.raises(RuntimeError, match="AMD_ARCH"): ops_amd.gpu_arch(2)

def _clang_hip() -> str|None:
  if (clang := shutil.which("clang-15") or shutil.which("clang")) is None: return None
  ret = subprocess.run([clang, "-x", "hip", "--offload-arch=gfx1100", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-S", "-o", "-", "-"],
                       input=b'extern "C" __attribute__((global)) void k(float* a) { a[0] = 1.0f; }', capture_output=True)
  return clang if ret.returncode == 0 else None

@pytest.mark.skipif(_clang_hip() is None, reason="no clang with the HIP front end and the AMDGPU target")
@pytest.mark.parametrize("arch", ["gfx1100"])
def test_hip_source_compiles_with_clang(arch):
  # the device code alone, to assembly: __ockl_* and the math library stay undefined, everything else is checked
  clang = _clang_hip()
  assert clang is not None
  def check(p):
    ret = subprocess.run([clang, "-x", "hip", f"--offload-arch={arch}", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-O1", "-S", "-o", "-", "-"],
                         input=p.src.encode(), capture_output=True)
    if ret.returncode != 0 or f"{p.name}:".encode() not in ret.stdout: raise CompileError(ret.stderr.decode()[:500])
  ok, failed = lower_all(AMDRenderer(), check)
  print(f"HIP {arch} (clang): {ok} kernels compiled, {len(failed)} failed" + "".join(f"\n  {f}" for f in failed))
  assert ok >= 60 and not failed, failed

@pytest.mark.skipif(_clang_hip() is None, reason="no clang with the HIP front end and the AMDGPU target")
@pytest.mark.parametrize("arch,instr", [("gfx1100", "v_wmma_f32_16x16x16_f16"), ("gfx90a", "v_mfma_f32_16x16x16f16")])
def test_hip_tensor_cores_compile_with_clang(arch, instr):
  ren = AMDRenderer(arch)
  assert ren.tensor_cores == AMD_ARCHS[arch] and repr(ren) == f"AMDRenderer({arch!r})"
  import pickle
  assert pickle.loads(pickle.dumps(ren)).tensor_cores == ren.tensor_cores   # BEAM's workers rebuild it
  a, b = Tensor.empty(32, 64, dtype=dtypes.half, device=DEV), Tensor.empty(32, 64, dtype=dtypes.half, device=DEV)
  ast = (a.reshape(32, 1, 64) * b.reshape(1, 32, 64)).sum(-1, dtype=dtypes.float).schedule()[-1].ast
  p = get_program(ast, ren, [Opt(OptOps.TC, 0, (0, 0))])
  ret = subprocess.run([str(_clang_hip()), "-x", "hip", f"--offload-arch={arch}", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-O1", "-S", "-o", "-",
                        "-"], input=p.src.encode(), capture_output=True)
  assert ret.returncode == 0 and instr in ret.stdout.decode(), ret.stderr.decode()[:2000]
  assert AMDRenderer("gfx1030").tensor_cores == []

def _llvm_missing() -> bool:
  try: Device["LLVM"]
  except Exception: return True
  return False

@pytest.mark.skipif(_llvm_missing(), reason="needs libLLVM (the LLVM device)")
@pytest.mark.parametrize("dt", dtypes.fp8s, ids=str)
def test_fp8_rules_run_on_llvm(dt):
  # the LLVM renderer's fp8 conversions (AMD's too) run on the CPU through the LLVM device: every code decodes and a wide spread of floats
  # (subnormals, ties, overflow) encodes bit for bit as the C renderer's (CPU's), vectors and scalars alike
  import numpy as np
  rng = np.random.default_rng(0)
  f = np.concatenate([rng.standard_normal(4096).astype(np.float32) * s for s in (1e-5, 1e-2, 1, 300, 1e5)] +
                     [np.array([0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 61440, 57344, 2**-9, 3 * 2**-10], np.float32)])
  codes = np.arange(256, dtype=np.uint8)
  for x, fn in ((codes, lambda t: t.bitcast(dt).float()), (f, lambda t: t.cast(dt).bitcast(dtypes.uint8)), (f, lambda t: t.cast(dt) * 3)):
    got, want = fn(Tensor(x, device="LLVM")).numpy(), fn(Tensor(x, device="CPU")).numpy()
    np.testing.assert_array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got, want.view(np.uint8) if want.dtype.itemsize == 1 else want)

@needs_amd_llvm
@pytest.mark.parametrize("arch", ["gfx90a", "gfx1100"])
def test_fp8_kernels_compile(arch):
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  outs = []
  for dt in dtypes.fp8s:
    a, b, i = Tensor.empty(64, device=DEV), Tensor.empty(64, dtype=dt, device=DEV), Tensor.empty(64, dtype=dtypes.int8, device=DEV)
    outs += [a.cast(dt), b.float(), b + b, (b * 2).sum(), b.cast(dtypes.half), i.bitcast(dt), (b > 0).where(b, 0)]
  for ast in (si.ast for o in outs for si in o.schedule() if si.ast.op is Ops.SINK):
    p = get_program(ast, AMDLLVMRenderer(arch))
    assert _is_code_object(AMDLLVMCompiler(arch).compile(p.src), p.name)

@needs_amd_llvm
def test_cross_compile_renders_once_where_archs_agree(tmp_path, monkeypatch):
  # AMD:gfx90a and AMD:gfx1100 share a kernel's LLVM IR (the compiler sets the arch) unless their tensor cores (MFMA, WMMA) apply to it
  import json
  from tinygrad.engine import cross
  monkeypatch.setattr(cross, "_seen", set())
  h = Tensor.empty(32, 64, dtype=dtypes.half, device=DEV)
  log = str(tmp_path / "log.jsonl")
  for t in ((h.reshape(32, 1, 64) * h.reshape(1, 32, 64)).sum(-1, dtype=dtypes.float), h.float().exp() + 1):
    for si in t.schedule(): cross.cross_compile(si.ast, "AMD:gfx90a,AMD:gfx1100", log)
  recs = [json.loads(x) for x in open(log)]
  assert all("error" not in r for r in recs) and len(recs) == 4
  (mm90, mm11), (ew90, ew11) = [(recs[i]["kernel"], recs[i + 1]["kernel"]) for i in (0, 2)]
  assert mm90 != mm11 and ew90 == ew11

@needs_amd_llvm
def test_cross_compile_samples_later_archs(tmp_path, monkeypatch):
  # CROSS_ARCH_SAMPLE=1: gfx1100 compiles the IR gfx90a compiled already once per test and dtype set (the second float kernel is left to
  # gfx90a, a half kernel is compiled), and its own tensor-core kernel always; the summary counts what was left as shared, not as compiled
  import json
  from tinygrad.engine import cross
  from tinygrad.helpers import getenv
  for name, val in (("_seen", set()), ("_compiled_by", {}), ("_sampled", set())): monkeypatch.setattr(cross, name, val)
  h, f = Tensor.empty(32, 64, dtype=dtypes.half, device=DEV), Tensor.empty(32, 64, device=DEV)
  log = str(tmp_path / "log.jsonl")
  with monkeypatch.context() as env:
    env.setenv("CROSS_ARCH_SAMPLE", "1")
    getenv.cache_clear()   # env flags are read once
    try:
      for t in (f.exp() + 1, f.sqrt() * 3, h.exp() + 1, (h.reshape(32, 1, 64) * h.reshape(1, 32, 64)).sum(-1, dtype=dtypes.float)):
        for si in t.schedule(): cross.cross_compile(si.ast, "AMD:gfx90a,AMD:gfx1100", log)
    finally: getenv.cache_clear()
  getenv.cache_clear()
  recs = [json.loads(x) for x in open(log)]
  assert all("error" not in r for r in recs) and len(recs) == 8
  assert [r["target"] for r in recs if "shared" in r] == ["AMD:gfx1100"] and all("bytes" in r for r in recs if r["target"] == "AMD:gfx90a")
  text, failed = cross.summarize(log)
  assert failed == 0 and any(line.split()[:6] == ["AMD:gfx1100", "4", "3", "0", "0", "1"] for line in text.splitlines()), text
