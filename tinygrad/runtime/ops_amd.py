"""The AMD device: ROCm's HIP runtime (libamdhip64) through ctypes. Kernels are HIP C++ (cstyle.AMDRenderer) compiled by hiprtc, or with
AMD_LLVM=1 (or without hiprtc) LLVM IR (llvmir.AMDLLVMRenderer) compiled by libLLVM and linked by ld.lld: both give a code object that
hipModuleLoadData loads. The arch comes from the kernel driver's topology (or AMD_ARCH)."""
from __future__ import annotations
import ctypes, functools, glob, struct
from typing import Any
from tinygrad.device import Compiled, LRUAllocator, BufferSpec, Compiler, load_library
from tinygrad.renderer import Renderer
from tinygrad.helpers import getenv, flat_mv, AMD_LLVM
from tinygrad.runtime.support.compiler_amd import ROCM_HINT

_PROTOS = {"hipInit": "u", "hipGetDeviceCount": "p", "hipSetDevice": "i", "hipMalloc": "pz", "hipFree": "p", "hipMemcpy": "ppzi",
           "hipModuleLoadData": "pp", "hipModuleUnload": "p", "hipModuleGetFunction": "pps", "hipModuleLaunchKernel": "puuuuuuupppp",
           "hipDeviceSynchronize": "", "hipEventCreate": "p", "hipEventRecord": "pp", "hipEventSynchronize": "p",
           "hipEventElapsedTime": "ppp", "hipEventDestroy": "p"}
_CT = {"p": ctypes.c_void_p, "u": ctypes.c_uint32, "i": ctypes.c_int, "z": ctypes.c_size_t, "s": ctypes.c_char_p}

@functools.cache
def _hip() -> Any:
  names = [n for n in (getenv("HIP_LIB_PATH", ""),) if n] + ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"]
  lib = load_library("AMD", names, f"{ROCM_HINT}, or set HIP_LIB_PATH")
  for fn, proto in _PROTOS.items(): getattr(lib, fn).argtypes, getattr(lib, fn).restype = [_CT[c] for c in proto], ctypes.c_int
  lib.hipGetErrorString.argtypes, lib.hipGetErrorString.restype = [ctypes.c_int], ctypes.c_char_p
  return lib

def check(status:int, what:str) -> None:
  if status != 0: raise RuntimeError(f"HIP {what} failed: {(_hip().hipGetErrorString(status) or b'').decode()} ({status})")

def gpu_arch(idx:int) -> str:
  """gfx<major><minor><step> of the idx-th GPU in the kernel driver's topology (gfx_target_version 90010 is gfx90a), or AMD_ARCH."""
  if (arch := getenv("AMD_ARCH", "")): return arch
  vers = []
  for f in sorted(glob.glob("/sys/class/kfd/kfd/topology/nodes/*/properties")):
    with open(f) as fh: props = dict(ln.split() for ln in fh if len(ln.split()) == 2)
    if int(props.get("gfx_target_version", 0)): vers.append(int(props["gfx_target_version"]))
  if idx >= len(vers): raise RuntimeError("AMD: the GPU's arch is unknown (no /sys/class/kfd topology); set AMD_ARCH, e.g. AMD_ARCH=gfx1100")
  v = vers[idx]
  return f"gfx{v // 10000}{(v // 100) % 100:x}{v % 100:x}"

class AMDAllocator(LRUAllocator[int]):
  def _alloc(self, size:int, options:BufferSpec) -> int:
    check(_hip().hipMalloc(ctypes.byref(ptr := ctypes.c_void_p()), max(size, 1)), f"hipMalloc({size})")
    return ptr.value or 0
  def _free(self, opaque:int, options:BufferSpec) -> None: check(_hip().hipFree(opaque), "hipFree")
  def _copyin(self, dest:int, src:memoryview) -> None:
    host = ctypes.create_string_buffer(bytes(flat_mv(src)), src.nbytes)   # a copy: src may be read-only
    check(_hip().hipMemcpy(dest, host, src.nbytes, 1), "hipMemcpy(host to device)")
  def _copyout(self, dest:memoryview, src:int) -> None:
    check(_hip().hipMemcpy((ctypes.c_char * dest.nbytes).from_buffer(dest), src, dest.nbytes, 2), "hipMemcpy(device to host)")
  def _transfer(self, dest:int, src:int, sz:int, src_dev:Any, dest_dev:Any) -> None: check(_hip().hipMemcpy(dest, src, sz, 3), "hipMemcpy")

class AMDProgram:
  def __init__(self, name:str, lib:bytes):
    self.name, self.lib, hip = name, lib, _hip()
    check(hip.hipModuleLoadData(ctypes.byref(mod := ctypes.c_void_p()), lib), "hipModuleLoadData")
    self.module = mod
    check(hip.hipModuleGetFunction(ctypes.byref(fxn := ctypes.c_void_p()), self.module, name.encode()), f"hipModuleGetFunction({name})")
    self.fxn = fxn
  def __del__(self) -> None:
    try:
      if hasattr(self, "module"): _hip().hipModuleUnload(self.module)
    except Exception: pass
  def __call__(self, *bufs:int, global_size:tuple[int, ...]|None=(1, 1, 1), local_size:tuple[int, ...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    hip = _hip()
    # the kernel arguments as one packed block: 8-byte pointers, then 4-byte ints
    args = ctypes.create_string_buffer(struct.pack(f"<{len(bufs)}Q{len(vals)}i", *bufs, *vals))
    size = ctypes.c_size_t(len(args.raw) - 1)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(args), 2, ctypes.addressof(size), 3)   # BUFFER_POINTER, BUFFER_SIZE, END
    gs, ls = (tuple(global_size or ()) + (1, 1, 1))[:3], (tuple(local_size or ()) + (1, 1, 1))[:3]
    if wait:
      evs = [ctypes.c_void_p(), ctypes.c_void_p()]
      for e in evs: check(hip.hipEventCreate(ctypes.byref(e)), "hipEventCreate")
      check(hip.hipEventRecord(evs[0], None), "hipEventRecord")
    check(hip.hipModuleLaunchKernel(self.fxn, *gs, *ls, 0, None, None, extra), f"launch of {self.name}")
    if not wait: return None
    check(hip.hipEventRecord(evs[1], None), "hipEventRecord")
    check(hip.hipEventSynchronize(evs[1]), "hipEventSynchronize")
    check(hip.hipEventElapsedTime(ctypes.byref(ms := ctypes.c_float()), evs[0], evs[1]), "hipEventElapsedTime")
    for e in evs: hip.hipEventDestroy(e)
    return ms.value * 1e-3

class AMDDevice(Compiled):
  def __init__(self, device:str):
    hip, idx = _hip(), int(device.split(":")[1]) if ":" in device else 0
    check(hip.hipInit(0), "hipInit")
    check(hip.hipGetDeviceCount(ctypes.byref(cnt := ctypes.c_int())), "hipGetDeviceCount")
    if idx >= cnt.value: raise RuntimeError(f"AMD: device {device} asked for, {cnt.value} AMD GPUs found")
    check(hip.hipSetDevice(idx), "hipSetDevice")
    self.arch = gpu_arch(idx)
    renderer, compiler = amd_renderer_compiler(self.arch)
    super().__init__(device, AMDAllocator(), renderer, compiler, AMDProgram)
  def synchronize(self) -> None: check(_hip().hipDeviceSynchronize(), "hipDeviceSynchronize")

def amd_renderer_compiler(arch:str) -> tuple[Renderer, Compiler]:
  """HIP C++ through hiprtc; LLVM IR through libLLVM and ld.lld with AMD_LLVM=1 or where hiprtc is missing."""
  from tinygrad.renderer.cstyle import AMDRenderer
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  from tinygrad.runtime.support.compiler_amd import HIPCompiler, AMDLLVMCompiler
  if not AMD_LLVM:
    try: compiler: Compiler = HIPCompiler(arch)
    except RuntimeError: pass
    else: return AMDRenderer(arch), compiler
  return AMDLLVMRenderer(arch), AMDLLVMCompiler(arch)
