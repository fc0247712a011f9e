"""NVIDIA compilers: CUDA C -> cubin with NVRTC (libnvrtc through ctypes), PTX -> cubin with ptxas. Both come in pip wheels (the `cuda` extra:
nvidia-cuda-nvrtc and nvidia-cuda-nvcc 13.0, kept on one version: ptxas rejects PTX newer than itself), or from a CUDA toolkit (CUDA_PATH)."""
from __future__ import annotations
import ctypes, functools, hashlib, importlib.util, os, pathlib, re, subprocess, tempfile
from tinygrad.device import Compiler, CompileError, DeviceUnavailable
from tinygrad.helpers import ContextVar

PTX = ContextVar("PTX", 0)   # the CUDA device renders PTX (renderer/ptx.py) instead of CUDA C
EXTRA_HINT = "pip install 'tinygrad[cuda]' (nvidia-cuda-nvrtc and nvidia-cuda-nvcc 13.0)"

def cuda_dirs() -> list[pathlib.Path]:
  """Where CUDA's libraries, headers and tools may be: the pip wheels (nvidia/cu13, older nvidia/cuda_nvrtc ...), then a toolkit."""
  out: list[pathlib.Path] = []
  if (spec := importlib.util.find_spec("nvidia")) is not None and spec.submodule_search_locations:
    for root in map(pathlib.Path, spec.submodule_search_locations): out += sorted(p for p in root.iterdir() if p.is_dir())
  return out + [pathlib.Path(p) for p in (os.environ.get("CUDA_PATH", ""), "/usr/local/cuda") if p]

def _find(pattern:str, sub:str) -> pathlib.Path|None:
  return next((p for d in cuda_dirs() for p in sorted((d/sub).glob(pattern)) if ".alt." not in p.name), None)

_NVRTC_PROTOS = {"nvrtcCreateProgram": [ctypes.c_void_p]*6, "nvrtcCompileProgram": [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p],
                 "nvrtcGetProgramLogSize": [ctypes.c_void_p]*2, "nvrtcGetProgramLog": [ctypes.c_void_p]*2, "nvrtcGetCUBINSize": [ctypes.c_void_p]*2,
                 "nvrtcGetCUBIN": [ctypes.c_void_p]*2, "nvrtcGetPTXSize": [ctypes.c_void_p]*2, "nvrtcGetPTX": [ctypes.c_void_p]*2,
                 "nvrtcDestroyProgram": [ctypes.c_void_p], "nvrtcVersion": [ctypes.c_void_p]*2}

@functools.cache
def nvrtc() -> ctypes.CDLL:
  if (path := _find("libnvrtc.so*", "lib") or _find("libnvrtc.so*", "lib64")) is None:
    raise DeviceUnavailable(f"no libnvrtc.so (NVRTC, the CUDA C compiler): {EXTRA_HINT}")
  # the 13.0 library has no RPATH: its builtins (loaded by name at the first compile) must already be in the process
  for b in sorted(path.parent.glob("libnvrtc-builtins.so*")):
    if ".alt." not in b.name: ctypes.CDLL(str(b), mode=ctypes.RTLD_GLOBAL)
  lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
  for name, args in _NVRTC_PROTOS.items(): getattr(lib, name).argtypes, getattr(lib, name).restype = args, ctypes.c_int
  return lib

def nvrtc_version() -> tuple[int, int]:
  major, minor = ctypes.c_int(), ctypes.c_int()
  nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
  return major.value, minor.value

def _check_arch(arch:str) -> str:
  if not re.fullmatch(r"sm_\d{2,3}[af]?", arch): raise ValueError(f"a CUDA arch looks like sm_80 or sm_90a, got {arch!r}")
  return arch

class NVRTCCompiler(Compiler):
  """CUDA C -> a cubin for arch (e.g. "sm_80"); ptx=True returns the PTX NVRTC made instead."""
  def __init__(self, arch:str, ptx:bool=False):
    self.arch, self.ptx = _check_arch(arch), ptx
    inc = _find("cuda_fp16.h", "include")
    self.options = [f"-arch={'compute_' + arch[3:] if ptx else arch}", "-std=c++17", "-default-device", "--use_fast_math"] + \
      ([f"-I{inc.parent}"] if inc is not None else [])
    super().__init__(f"compile_nvrtc_{arch}_{'ptx' if ptx else 'cubin'}_{'.'.join(map(str, nvrtc_version()))}")
  def compile(self, src:str) -> bytes:
    lib, prog = nvrtc(), ctypes.c_void_p()
    if (st := lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"<kernel>.cu", 0, None, None)) != 0:
      raise CompileError(f"nvrtcCreateProgram failed ({st})", src)
    try:
      opts = (ctypes.c_char_p * len(self.options))(*[o.encode() for o in self.options])
      st = lib.nvrtcCompileProgram(prog, len(self.options), opts)
      if st != 0:
        raise CompileError(f"NVRTC ({self.arch}) failed to compile the kernel:\n{self._get(prog, 'ProgramLog').decode(errors='replace')}", src)
      return self._get(prog, "PTX" if self.ptx else "CUBIN")
    finally: lib.nvrtcDestroyProgram(ctypes.byref(prog))
  def _get(self, prog:ctypes.c_void_p, what:str) -> bytes:
    size = ctypes.c_size_t()
    getattr(nvrtc(), f"nvrtcGet{what}Size")(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    getattr(nvrtc(), f"nvrtcGet{what}")(prog, buf)
    return buf.raw.rstrip(b"\0") if what != "CUBIN" else buf.raw
CUDACompiler = NVRTCCompiler

@functools.cache
def ptxas() -> pathlib.Path:
  if (path := _find("ptxas", "bin")) is None: raise DeviceUnavailable(f"no ptxas (the PTX assembler): {EXTRA_HINT}")
  return path

class PTXCompiler(Compiler):
  """PTX -> a cubin for arch with ptxas. The renderer's `.target` is set to arch here, so one PTX source serves every arch."""
  def __init__(self, arch:str):
    self.arch = _check_arch(arch)
    super().__init__(f"compile_ptxas_{arch}_{hashlib.sha256(str(ptxas()).encode()).hexdigest()[:8]}")
  def compile(self, src:str) -> bytes:
    src = re.sub(r"^\.target\s+\S+", f".target {self.arch}", src, count=1, flags=re.M)
    with tempfile.TemporaryDirectory() as tmp:
      (ptx := pathlib.Path(tmp)/"kernel.ptx").write_text(src)
      ret = subprocess.run([str(ptxas()), f"-arch={self.arch}", "-O3", str(ptx), "-o", str(out := pathlib.Path(tmp)/"kernel.cubin")],
                           capture_output=True, text=True)
      if ret.returncode != 0: raise CompileError(f"ptxas ({self.arch}) failed to assemble the kernel:\n{ret.stderr.strip()}", src)
      return out.read_bytes()
NVPTXCompiler = PTXCompiler
