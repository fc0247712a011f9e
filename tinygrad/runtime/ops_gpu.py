"""The GPU device: OpenCL through ctypes over libOpenCL (an ICD loader: PoCL on a CPU, or a GPU vendor's driver), OpenCL C from cstyle.py."""
from __future__ import annotations
import ctypes, ctypes.util, functools, hashlib, os, pathlib
from typing import Any, cast
from tinygrad.device import Compiled, Compiler, CompileError, LRUAllocator, BufferSpec
from tinygrad.dtype import DTYPES_DICT, dtypes
from tinygrad.renderer.cstyle import OpenCLRenderer
from tinygrad.helpers import flat_mv

INSTALL_HINT = "install an OpenCL driver and the ICD loader, e.g. `apt-get install -y pocl-opencl-icd ocl-icd-libopencl1`"
_ERRORS = {-1: "DEVICE_NOT_FOUND", -4: "MEM_OBJECT_ALLOCATION_FAILURE", -5: "OUT_OF_RESOURCES", -6: "OUT_OF_HOST_MEMORY",
           -11: "BUILD_PROGRAM_FAILURE",
           -30: "INVALID_VALUE", -38: "INVALID_MEM_OBJECT", -42: "INVALID_BINARY", -46: "INVALID_KERNEL_NAME", -48: "INVALID_KERNEL",
           -51: "INVALID_ARG_SIZE", -52: "INVALID_KERNEL_ARGS", -54: "INVALID_WORK_GROUP_SIZE", -55: "INVALID_WORK_ITEM_SIZE",
           -61: "INVALID_BUFFER_SIZE", -63: "INVALID_GLOBAL_WORK_SIZE", -1001: "PLATFORM_NOT_FOUND_KHR"}
# argument types, one letter each: p pointer/handle, u cl_uint, q cl_bitfield/cl_ulong, z size_t; functions returning a handle end in "->p"
_PROTOS = {"clGetPlatformIDs": "upp", "clGetDeviceIDs": "pqupp", "clGetDeviceInfo": "puzpp", "clCreateContext": "pupppp->p",
           "clCreateCommandQueue": "ppqp->p", "clCreateBuffer": "pqzpp->p", "clCreateSubBuffer": "pqupp->p", "clReleaseMemObject": "p",
           "clEnqueueWriteBuffer": "ppuzzpupp", "clEnqueueReadBuffer": "ppuzzpupp", "clCreateProgramWithSource": "puppp->p",
           "clCreateProgramWithBinary": "puppppp->p", "clBuildProgram": "pupppp", "clGetProgramBuildInfo": "ppuzpp",
           "clGetProgramInfo": "puzpp", "clCreateKernel": "ppp->p", "clSetKernelArg": "puzp", "clEnqueueNDRangeKernel": "ppupppupp",
           "clWaitForEvents": "up", "clGetEventProfilingInfo": "puzpp", "clReleaseEvent": "p", "clReleaseKernel": "p", "clReleaseProgram": "p",
           "clFinish": "p"}
_CT = {"p": ctypes.c_void_p, "u": ctypes.c_uint32, "q": ctypes.c_uint64, "z": ctypes.c_size_t}

@functools.cache
def _cl() -> Any:
  try: lib = ctypes.CDLL(ctypes.util.find_library("OpenCL") or "libOpenCL.so.1")
  except OSError: raise RuntimeError(f"GPU (OpenCL) needs libOpenCL.so.1, which is not installed: {INSTALL_HINT}") from None
  for name, proto in _PROTOS.items():
    args, _, ret = proto.partition("->")
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = [_CT[c] for c in args], ctypes.c_void_p if ret else ctypes.c_int32
  return lib

def default_candidate() -> bool:
  """Whether probing for the default device should open OpenCL: not when every installed OpenCL driver (ICD) is PoCL, which runs on the host
  CPU (where the CPU device is the better default) and is slow to start."""
  vendors = pathlib.Path(os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors")
  icds = [vendors] if vendors.is_file() else sorted(vendors.glob("*.icd")) if vendors.is_dir() else []
  return not icds or any("pocl" not in p.read_text(errors="replace").lower() for p in icds)

def check(status:int, what:str) -> None:
  if status != 0: raise RuntimeError(f"OpenCL {what} failed: CL_{_ERRORS.get(status, 'ERROR')} ({status})")
def checked(what:str, fn, *args) -> Any:
  # the handle-returning calls report their status through a trailing errcode_ret pointer
  err = ctypes.c_int32()
  ret = fn(*args, ctypes.byref(err))
  check(err.value, what)
  return ret

def _info(getter, obj:Any, param:int, *pre:Any) -> bytes:
  sz = ctypes.c_size_t()
  check(getter(obj, *pre, param, 0, None, ctypes.byref(sz)), getter.__name__)
  buf = ctypes.create_string_buffer(sz.value)
  check(getter(obj, *pre, param, sz.value, buf, None), getter.__name__)
  return buf.raw

class CLView:
  """Part of a buffer (Buffer.view, the memory planner's slots). Copies address the base at the offset; a kernel gets a sub-buffer, which
  OpenCL makes only at offsets that are multiples of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN: a kernel refuses any other view."""
  def __init__(self, base:int, offset:int, size:int, align:int):
    self.base, self.offset, self.size, self.align, self.sub = base, offset, size, align, None
    if offset % align == 0 and size > 0:
      region = (ctypes.c_size_t * 2)(offset, size)
      self.sub = checked("clCreateSubBuffer", _cl().clCreateSubBuffer, base, 1, 0x1220, region)   # READ_WRITE, BUFFER_CREATE_TYPE_REGION
  def kernel_arg(self) -> int:
    if self.sub is None:
      raise RuntimeError(f"a kernel can't take a view at byte offset {self.offset} of an OpenCL buffer: this device's sub-buffers start at "
                         f"multiples of {self.align} bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN); copy it with .contiguous() on another device first")
    return self.sub
  def __del__(self) -> None:
    try:
      if self.sub is not None: _cl().clReleaseMemObject(self.sub)
    except Exception: pass

def _mem(buf:int|CLView) -> tuple[int, int]: return (buf, 0) if isinstance(buf, int) else (buf.base, buf.offset)

class GPUAllocator(LRUAllocator[int]):
  def __init__(self, dev:GPUDevice):
    self.dev, self.host_backed = dev, set[int]()
    super().__init__()
  def _alloc(self, size:int, options:BufferSpec) -> int:
    if options.external_ptr is not None:
      # CL_MEM_USE_HOST_PTR: the driver works in (or mirrors) memory the caller owns; launches on it finish before returning
      self.host_backed.add(ret := checked("clCreateBuffer", _cl().clCreateBuffer, self.dev.context, 1 | 8, size, options.external_ptr))
      return ret
    # CL_MEM_READ_WRITE; an empty buffer is invalid in OpenCL, so 0 bytes takes 1
    return checked("clCreateBuffer", _cl().clCreateBuffer, self.dev.context, 1, max(size, 1), None)
  def _free(self, opaque:int, options:BufferSpec) -> None: check(_cl().clReleaseMemObject(opaque), "clReleaseMemObject")
  def _offset(self, buf:int, size:int, offset:int) -> CLView: return CLView(buf, offset, size, self.dev.base_align)
  def _copyin(self, dest:int|CLView, src:memoryview) -> None:
    # blocking, so src may be released as soon as this returns; a read-only view is copied to get a pointer
    src, (mem, off) = flat_mv(src), _mem(dest)
    host = (ctypes.c_char * src.nbytes).from_buffer(src) if not src.readonly else ctypes.create_string_buffer(bytes(src), src.nbytes)
    check(_cl().clEnqueueWriteBuffer(self.dev.queue, mem, True, off, src.nbytes, host, 0, None, None), "clEnqueueWriteBuffer")
  def _copyout(self, dest:memoryview, src:int|CLView) -> None:
    host, (mem, off) = (ctypes.c_char * dest.nbytes).from_buffer(dest), _mem(src)
    check(_cl().clEnqueueReadBuffer(self.dev.queue, mem, True, off, dest.nbytes, host, 0, None, None), "clEnqueueReadBuffer")

def _numbered(src:str) -> str: return "\n".join(f"{i:4d} {line}" for i,line in enumerate(src.splitlines(), 1))

class GPUCompiler(Compiler):
  """OpenCL C -> the driver's program binary (CL_PROGRAM_BINARIES), so a cache hit skips the front end."""
  def __init__(self, dev:GPUDevice):
    self.dev = dev
    super().__init__(f"compile_gpu_{hashlib.sha256(dev.ident.encode()).hexdigest()[:16]}")
  def build(self, prg:int, src:str|None) -> None:
    dev = ctypes.c_void_p(self.dev.device_id)
    if (status := _cl().clBuildProgram(prg, 1, ctypes.byref(dev), None, None, None)) != 0:
      log = _info(_cl().clGetProgramBuildInfo, prg, 0x1183, self.dev.device_id).rstrip(b"\0").decode(errors="replace")   # BUILD_LOG
      _cl().clReleaseProgram(prg)
      raise CompileError(f"OpenCL build failed: CL_{_ERRORS.get(status, 'ERROR')} ({status})\n{log}" +
                         (f"\nsource:\n{_numbered(src)}" if src else ""))
  def compile(self, src:str) -> bytes:
    raw = ctypes.c_char_p(src.encode())
    prg = checked("clCreateProgramWithSource", _cl().clCreateProgramWithSource, self.dev.context, 1, ctypes.byref(raw), None)
    self.build(prg, src)
    size = ctypes.c_size_t.from_buffer_copy(_info(_cl().clGetProgramInfo, prg, 0x1165)).value   # BINARY_SIZES (one device)
    out = ctypes.create_string_buffer(size)
    ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(out))
    check(_cl().clGetProgramInfo(prg, 0x1166, ctypes.sizeof(ptrs), ptrs, None), "clGetProgramInfo(BINARIES)")
    _cl().clReleaseProgram(prg)
    return out.raw

class GPUProgram:
  def __init__(self, dev:GPUDevice, name:str, lib:bytes):
    self.dev, self.name, self.lib = dev, name, lib
    binary, devid = ctypes.c_char_p(lib), ctypes.c_void_p(dev.device_id)
    length, status = ctypes.c_size_t(len(lib)), ctypes.c_int32()
    self.prg = checked("clCreateProgramWithBinary", _cl().clCreateProgramWithBinary, dev.context, 1, ctypes.byref(devid), ctypes.byref(length),
                       ctypes.byref(binary), ctypes.byref(status))
    check(status.value, "clCreateProgramWithBinary")
    cast(GPUCompiler, dev.compiler).build(self.prg, None)
    self.kernel = checked("clCreateKernel", _cl().clCreateKernel, self.prg, name.encode())
  def __del__(self) -> None:
    try:
      if hasattr(self, "kernel"): _cl().clReleaseKernel(self.kernel)
      if hasattr(self, "prg"): _cl().clReleaseProgram(self.prg)
    except Exception: pass
  def __call__(self, *bufs:int|CLView, global_size:tuple[int,...]|None=(1,1,1), local_size:tuple[int,...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    cl, mems = _cl(), [b if isinstance(b, int) else b.kernel_arg() for b in bufs]
    for i, b in enumerate(mems): check(cl.clSetKernelArg(self.kernel, i, 8, ctypes.byref(ctypes.c_void_p(b))), f"clSetKernelArg({i})")
    for i, v in enumerate(vals, len(bufs)): check(cl.clSetKernelArg(self.kernel, i, 4, ctypes.byref(ctypes.c_int32(v))), f"clSetKernelArg({i})")
    # tinygrad's global size counts workgroups, OpenCL's counts work items; no local size would let the driver pick one, so it is always given
    lsz = tuple(local_size) if local_size is not None else (1, 1, 1)
    gsz = tuple(g*l for g, l in zip(global_size or (1, 1, 1), lsz))
    evt = ctypes.c_void_p()
    check(cl.clEnqueueNDRangeKernel(self.dev.queue, self.kernel, len(gsz), None, (ctypes.c_size_t * len(gsz))(*gsz),
                                    (ctypes.c_size_t * len(lsz))(*lsz), 0, None, ctypes.byref(evt) if wait else None), f"launch of {self.name}")
    if not wait:
      if not self.dev.allocator.host_backed.isdisjoint(_mem(b)[0] for b in bufs): self.dev.synchronize()
      return None
    check(cl.clWaitForEvents(1, ctypes.byref(evt)), "clWaitForEvents")
    start, end = [ctypes.c_uint64.from_buffer_copy(_info(cl.clGetEventProfilingInfo, evt, p)).value for p in (0x1282, 0x1283)]
    cl.clReleaseEvent(evt)
    return (end - start) * 1e-9

class GPUDevice(Compiled):
  def __init__(self, device:str):
    cl, idx = _cl(), int(device.split(":")[1]) if ":" in device else 0
    nplat = ctypes.c_uint32()
    if (st := cl.clGetPlatformIDs(0, None, ctypes.byref(nplat))) != 0 or nplat.value == 0:
      raise RuntimeError(f"GPU (OpenCL): no OpenCL platform found (CL_{_ERRORS.get(st, 'ERROR')}): {INSTALL_HINT}")
    plats = (ctypes.c_void_p * nplat.value)()
    check(cl.clGetPlatformIDs(nplat.value, plats, None), "clGetPlatformIDs")
    devs: list[int] = []
    for p in plats:
      n = ctypes.c_uint32()
      if cl.clGetDeviceIDs(p, 0xFFFFFFFF, 0, None, ctypes.byref(n)) != 0 or n.value == 0: continue   # CL_DEVICE_TYPE_ALL
      ids = (ctypes.c_void_p * n.value)()
      check(cl.clGetDeviceIDs(p, 0xFFFFFFFF, n.value, ids, None), "clGetDeviceIDs")
      devs += [d for d in ids if d is not None]
    if idx >= len(devs): raise RuntimeError(f"GPU (OpenCL): device {device} asked for, {len(devs)} OpenCL devices found")
    self.device_id = devs[idx]
    def info_str(p:int) -> str: return _info(cl.clGetDeviceInfo, self.device_id, p).rstrip(b"\0").decode(errors="replace")
    self.name, self.extensions = info_str(0x102B), set(info_str(0x1030).split())
    # a different device, driver or OpenCL version must never reuse a binary
    self.ident = "\0".join([self.name, info_str(0x102D), info_str(0x102F)])
    # OpenCL on the host CPU (PoCL) runs when asked for, but the CPU device is the better default there
    self.default_ok = ctypes.c_uint64.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1000)).value & 2 == 0   # CL_DEVICE_TYPE_CPU
    devid = ctypes.c_void_p(self.device_id)
    self.context = checked("clCreateContext", cl.clCreateContext, None, 1, ctypes.byref(devid), None, None)
    self.queue = checked("clCreateCommandQueue", cl.clCreateCommandQueue, self.context, self.device_id, 2)   # CL_QUEUE_PROFILING_ENABLE
    renderer = OpenCLRenderer(fp16="cl_khr_fp16" in self.extensions)
    # double is optional in OpenCL C; half without cl_khr_fp16, bfloat16 and fp8 are stored as bits and computed in float
    renderer.dtypes_supported = frozenset(d for d in DTYPES_DICT.values() if d != dtypes.float64 or "cl_khr_fp64" in self.extensions)
    self.max_workgroup = ctypes.c_size_t.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1004)).value
    # per dim, and never over the threads a whole workgroup may have (the optimizer keeps a workgroup's total under the largest dim's)
    renderer.local_max = tuple(min(self.max_workgroup, ctypes.c_size_t.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1005), i*8).value)
                               for i in range(3))
    renderer.shared_max = ctypes.c_uint64.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1023)).value
    # CL_DEVICE_MAX_PARAMETER_SIZE bounds a kernel's arguments: pointers, and a few ints for vars
    renderer.max_bufs = ctypes.c_size_t.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1017)).value // 8 - 4
    self.base_align = ctypes.c_uint32.from_buffer_copy(_info(cl.clGetDeviceInfo, self.device_id, 0x1019)).value // 8   # MEM_BASE_ADDR_ALIGN, bits
    self.allocator: GPUAllocator
    super().__init__(device, GPUAllocator(self), renderer, GPUCompiler(self), functools.partial(GPUProgram, self))
  def synchronize(self) -> None: check(_cl().clFinish(self.queue), "clFinish")
