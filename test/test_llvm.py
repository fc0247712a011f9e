# the LLVM device: libLLVM through ctypes, the in-process ELF loader, threads, the compile cache, the default fallback; ops run in the op suite
import ctypes, struct
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes, Context
from tinygrad.device import _Device, Compiled, CompileError, MallocAllocator
from tinygrad.engine.realize import get_program, method_cache

try:
  from tinygrad.runtime.ops_llvm import LLVMCompiler, LLVMProgram, llvm
  from tinygrad.runtime.support.elf import ElfImage, ElfError
  Device["LLVM"]
except Exception as e: pytest.skip(f"LLVM is not available: {e}", allow_module_level=True)

AXPY = """define void @axpy(ptr noalias %out, ptr noalias %x, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%next, %loop]
  %p = getelementptr inbounds float, ptr %x, i32 %i
  %v = load float, ptr %p
  %r = frem float %v, 0x4008000000000000
  %y = fmul float %r, 0x3FE0000000000000
  %q = getelementptr inbounds float, ptr %out, i32 %i
  store float %y, ptr %q
  %next = add i32 %i, 1
  %c = icmp slt i32 %next, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}
"""

def _run(prg, n:int, x:np.ndarray) -> np.ndarray:
  out = np.zeros(n, np.float32)
  prg(out.ctypes.data, x.ctypes.data, vals=(n,), global_size=(1, 1, 1))
  return out

def test_compile_and_load_with_external_call():
  # frem becomes a call to libm's fmodf: the loader resolves it in the process and jumps there through its stub
  lib = LLVMCompiler().compile(AXPY)
  assert lib[:4] == b"\x7fELF"
  x = np.linspace(-7, 7, 37, dtype=np.float32)
  np.testing.assert_allclose(_run(LLVMProgram("axpy", lib), 37, x), np.fmod(x, 3) * 0.5, rtol=1e-6)

def test_compile_error_shows_numbered_source_and_llvm_message():
  bad = AXPY.replace("%y = fmul float %r,", "%y = fmul float %nope,")
  with pytest.raises(CompileError) as e: LLVMCompiler().compile(bad)
  msg = str(e.value)
  assert "%nope" in msg and "   9   %y = fmul float %nope" in msg and "  1 define void @axpy" in msg

def test_verifier_error():
  # parses, but %x doesn't dominate its use: invalid IR, caught before it reaches the optimizer
  src = "define i32 @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\na:\n  %x = add i32 1, 2\n  br label %b\nb:\n  ret i32 %x\n}\n"
  with pytest.raises(CompileError, match="(?s)verifying.*dominate"): LLVMCompiler().compile(src)

def test_missing_library_message(monkeypatch):
  def no_lib(*a, **k): raise OSError("not found")
  monkeypatch.setattr(ctypes, "CDLL", no_lib)
  with pytest.raises(RuntimeError, match=r"libLLVM.*apt-get install -y libllvm15"): llvm.__wrapped__()

def test_host_cpu_features_are_used():
  c = LLVMCompiler()
  flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "").split()
  feats = c.features.decode().split(",")
  assert ("+avx2" in feats) == ("avx2" in flags) and ("+avx512f" in feats) == ("avx512f" in flags)
  assert c.cpu and c.cpu != b"generic"

def test_elf_rejects_malformed():
  lib = LLVMCompiler().compile(AXPY)
  with pytest.raises(ElfError, match="not an ELF"): ElfImage(b"hello world" * 10)
  with pytest.raises(ElfError): ElfImage(lib[:200])             # section headers cut off
  bad = bytearray(lib)
  struct.pack_into("<H", bad, 18, 183)                          # e_machine: aarch64
  with pytest.raises(ElfError, match="x86-64"): ElfImage(bytes(bad))

def test_threads_split_the_outer_axis():
  a = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
  with Context(CPU_THREADS=2):
    p = get_program((Tensor(a, device="LLVM") * 2 + 1).schedule()[-1].ast, Device["LLVM"].renderer)
    assert p.global_size is not None and p.global_size[0] > 1 and "i32 %core_id" in p.src
    np.testing.assert_allclose((Tensor(a, device="LLVM") * 2 + 1).numpy(), a * 2 + 1, rtol=1e-6)

def test_vector_ir_for_upcast_lanes():
  a = np.arange(64*64, dtype=np.float32).reshape(64, 64)
  p = get_program((Tensor(a, device="LLVM") @ Tensor(a, device="LLVM")).schedule()[-1].ast, Device["LLVM"].renderer)
  assert " x float>" in p.src and "llvm.fmuladd.v" in p.src
  np.testing.assert_allclose((Tensor(a, device="LLVM") @ Tensor(a, device="LLVM")).numpy(), a @ a, rtol=1e-5)

def test_compiles_once_per_source(monkeypatch):
  calls = []
  orig = LLVMCompiler.compile
  monkeypatch.setattr(LLVMCompiler, "compile", lambda self, src: calls.append(src) or orig(self, src))
  method_cache.clear()
  x = Tensor(np.arange(10, dtype=np.float32) + 123.25, device="LLVM")   # a constant no other test uses: a fresh kernel
  np.testing.assert_equal((x * 3.5).numpy(), (np.arange(10) + 123.25) * 3.5)
  method_cache.clear()
  np.testing.assert_equal((x * 3.5).numpy(), (np.arange(10) + 123.25) * 3.5)
  assert len(calls) <= 1   # the second run hits the compiler's cache (the first may too, from an earlier process)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16, dtypes.float64, dtypes.int64, dtypes.uint8, dtypes.bool], ids=str)
def test_dtypes_roundtrip_and_math(dt):
  vals = [0, 1, 3, 7, 100] if dt != dtypes.bool else [True, False, True, True, False]
  t = Tensor(vals, dtype=dt, device="LLVM")
  assert t.tolist() == Tensor(vals, dtype=dt, device="PYTHON").tolist()
  if dt != dtypes.bool:
    assert (t * 3 + t).tolist() == (Tensor(vals, dtype=dt, device="PYTHON") * 3 + Tensor(vals, dtype=dt, device="PYTHON")).tolist()

def test_default_falls_back_to_llvm_without_a_c_compiler(monkeypatch):
  dev = _Device()
  dev._devices = ["CPU", "LLVM", "PYTHON"]
  for d in dev._devices + ["DEV"]: monkeypatch.delenv(d, raising=False)
  no_cc = Compiled("CPU", MallocAllocator, None, None, None)
  no_cc.default_ok = False   # type: ignore[attr-defined]
  monkeypatch.setitem(dev._opened, "CPU", no_cc)
  monkeypatch.setitem(dev._opened, "LLVM", Compiled("LLVM", MallocAllocator, None, None, None))
  assert dev.DEFAULT == "LLVM"

def test_elf_fuzzed_objects_raise_cleanly():
  # corrupted objects load or raise ElfError: never a crash, a hang or a read past the end (nothing is executed)
  lib = LLVMCompiler().compile(AXPY)
  rng = np.random.default_rng(0)
  for _ in range(300):
    bad = bytearray(lib)
    for pos in rng.integers(16, len(bad), size=rng.integers(1, 4)): bad[pos] = int(rng.integers(0, 256))
    try: ElfImage(bytes(bad))
    except (ElfError, MemoryError): pass
