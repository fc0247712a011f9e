"""Compilers for AMD GPUs, each built from the arch name (AMDLLVMCompiler("gfx1100")) with compile(src) -> bytes, an HSA code object (ELF):
AMDLLVMCompiler takes the LLVM IR of renderer/llvmir.py's AMDLLVMRenderer through libLLVM's AMDGPU target and links it with ld.lld;
HIPCompiler takes the HIP C++ of renderer/cstyle.py's AMDRenderer through hiprtc (ROCm)."""
from __future__ import annotations
import ctypes, functools, os, re, shutil, subprocess, tempfile
from typing import Any
from tinygrad.device import Compiler, CompileError, load_library
from tinygrad.renderer import Renderer
from tinygrad.renderer.llvmir import AMDLLVMRenderer, check_amd_arch
from tinygrad.runtime.ops_llvm import LLVMCompiler, llvm, _numbered
from tinygrad.helpers import getenv

MIN_LLVM = {"gfx90a": 13, "gfx1030": 12, "gfx1100": 15}   # the first LLVM that knows the arch (older ones may abort on it)
LLD_HINT = "install lld, e.g. `apt-get install -y lld-15`"
ROCM_HINT = "install ROCm's HIP runtime (https://rocm.docs.amd.com, e.g. `apt-get install -y hip-runtime-amd`)"

def find_lld() -> str:
  for name in [getenv("LLD_PATH", "")] + [f"ld.lld-{v}" for v in range(19, 13, -1)] + ["ld.lld"]:
    if name and (path := shutil.which(name)): return path
  raise RuntimeError(f"AMD code objects are linked by ld.lld, which is not installed: {LLD_HINT}")

@functools.cache
def _init_amdgpu() -> None:
  lib, _ = llvm()
  for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
    if (fn := getattr(lib, f"LLVMInitializeAMDGPU{part}", None)) is None: raise RuntimeError("this libLLVM was built without the AMDGPU target")
    fn()

class AMDLLVMCompiler(LLVMCompiler):
  """LLVM IR -> an AMDGPU object (libLLVM, amdgcn-amd-amdhsa, -mcpu=arch) -> `ld.lld -shared` -> a code object the HIP runtime loads."""
  def __init__(self, arch:str="gfx1100"):
    self.arch = check_amd_arch(arch)   # before LLVM sees it
    self.lld = find_lld()
    _init_amdgpu()
    if 0 < (ver := llvm()[1]) < MIN_LLVM[arch]: raise ValueError(f"AMD arch {arch} needs LLVM {MIN_LLVM[arch]} or newer, this libLLVM is {ver}")
    super().__init__(2, ("amdgcn-amd-amdhsa", arch, ""))
    self.cachekey = f"compile_amdllvm_{arch}_{self.version}"
  def compile(self, src:str) -> bytes:
    obj = super().compile(src)
    with tempfile.TemporaryDirectory() as tmp:
      with open(os.path.join(tmp, "k.o"), "wb") as f: f.write(obj)
      ret = subprocess.run([self.lld, "-shared", "-o", os.path.join(tmp, "k.hsaco"), os.path.join(tmp, "k.o")], capture_output=True, text=True)
      if ret.returncode != 0: raise CompileError(f"ld.lld failed to link the {self.arch} code object:\n{ret.stderr}\nsource:\n{_numbered(src)}")
      with open(os.path.join(tmp, "k.hsaco"), "rb") as f: return f.read()

@functools.cache
def hiprtc() -> Any:
  names = [n for n in (getenv("HIPRTC_PATH", ""),) if n] + ["libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5", "/opt/rocm/lib/libhiprtc.so"]
  lib = load_library("HIPCompiler", names, f"{ROCM_HINT}, or set HIPRTC_PATH")
  for fn in ("hiprtcGetProgramLog", "hiprtcGetCode"): getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
  for fn in ("hiprtcGetProgramLogSize", "hiprtcGetCodeSize"): getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
  lib.hiprtcCreateProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                      ctypes.c_void_p]
  lib.hiprtcCompileProgram.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
  lib.hiprtcDestroyProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
  return lib

class HIPCompiler(Compiler):
  """HIP C++ -> a code object for arch, through hiprtc."""
  def __init__(self, arch:str="gfx1100"):
    # hiprtc knows more archs than our LLVM; it reports an unknown one in its log instead of aborting, so only the form is checked here
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", arch): raise ValueError(f"bad AMD arch {arch!r}: expected a name like gfx90a or gfx1100")
    self.arch, self.lib = arch, hiprtc()
    super().__init__(f"compile_hip_{arch}")
  def compile(self, src:str) -> bytes:
    lib, prog, size = self.lib, ctypes.c_void_p(), ctypes.c_size_t()
    if (rc := lib.hiprtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.hip", 0, None, None)): raise CompileError(f"hiprtc error {rc}")
    try:
      opts = [f"--offload-arch={self.arch}".encode(), b"-O3"]
      if (rc := lib.hiprtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))):
        lib.hiprtcGetProgramLogSize(prog, ctypes.byref(size))
        lib.hiprtcGetProgramLog(prog, log := ctypes.create_string_buffer(size.value + 1))
        raise CompileError(f"hiprtc failed ({rc}) for {self.arch}:\n{log.value.decode(errors='replace')}\nsource:\n{_numbered(src)}")
      lib.hiprtcGetCodeSize(prog, ctypes.byref(size))
      lib.hiprtcGetCode(prog, code := ctypes.create_string_buffer(size.value))
      return code.raw
    finally: lib.hiprtcDestroyProgram(ctypes.byref(prog))

def cross_target(arch:str="gfx1100") -> tuple[Renderer, Compiler]:
  """The AMD renderer and compiler for compile-only runs without a GPU (a cross-compile hook registers it as e.g. AMD:gfx90a)."""
  return AMDLLVMRenderer(arch), AMDLLVMCompiler(arch)
