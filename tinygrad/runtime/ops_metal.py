"""The METAL device: Apple's Metal through the Objective-C runtime (objc_msgSend via ctypes), Metal Shading Language from cstyle.MetalRenderer,
built into a library by the driver when a program is loaded. macOS only: elsewhere opening it says so."""
from __future__ import annotations
import ctypes, functools, platform, sys
from typing import Any
from tinygrad.device import Compiled, Compiler, CompileError, LRUAllocator, BufferSpec
from tinygrad.renderer.cstyle import MetalRenderer
from tinygrad.helpers import flat_mv

@functools.cache
def _objc() -> Any:
  if sys.platform != "darwin": raise RuntimeError(f"no Metal (macOS only): METAL needs Apple's Metal framework, this is {platform.system()}")
  objc = ctypes.CDLL("/usr/lib/libobjc.dylib")
  for fw in ("Foundation", "Metal"): ctypes.CDLL(f"/System/Library/Frameworks/{fw}.framework/{fw}")
  objc.objc_getClass.argtypes, objc.objc_getClass.restype = [ctypes.c_char_p], ctypes.c_void_p
  objc.sel_registerName.argtypes, objc.sel_registerName.restype = [ctypes.c_char_p], ctypes.c_void_p
  return objc

class MTLSize(ctypes.Structure): _fields_ = [("width", ctypes.c_ulong), ("height", ctypes.c_ulong), ("depth", ctypes.c_ulong)]

@functools.cache
def _sender(restype:Any, argtypes:tuple) -> Any:
  # objc_msgSend called through the exact prototype of the method (required on arm64)
  return ctypes.CFUNCTYPE(restype, ctypes.c_void_p, ctypes.c_void_p, *argtypes)(ctypes.cast(_objc().objc_msgSend, ctypes.c_void_p).value or 0)

def msg(obj:Any, sel:str, *args:tuple[Any, Any], restype:Any=ctypes.c_void_p) -> Any:
  """[obj sel...] with args given as (ctypes type, value) pairs."""
  return _sender(restype, tuple(t for t, _ in args))(obj, _objc().sel_registerName(sel.encode()), *(v for _, v in args))

def nsstring(s:str) -> Any: return msg(_objc().objc_getClass(b"NSString"), "stringWithUTF8String:", (ctypes.c_char_p, s.encode()))
def nserror(err:Any) -> str:
  return msg(msg(err, "localizedDescription"), "UTF8String", restype=ctypes.c_char_p).decode(errors="replace") if err else "unknown error"

def _numbered(src:str) -> str: return "\n".join(f"{i:4d} {line}" for i,line in enumerate(src.splitlines(), 1))

class MetalAllocator(LRUAllocator[int]):
  def __init__(self, dev:MetalDevice):
    self.dev = dev
    super().__init__()
  def _alloc(self, size:int, options:BufferSpec) -> int:
    if not (buf := msg(self.dev.device, "newBufferWithLength:options:", (ctypes.c_ulong, max(size, 1)), (ctypes.c_ulong, 0))):   # shared storage
      raise MemoryError(f"METAL: can't allocate {size} bytes")
    return buf
  def _free(self, opaque:int, options:BufferSpec) -> None: msg(opaque, "release")
  def _contents(self, buf:int, size:int) -> Any: return (ctypes.c_char * size).from_address(msg(buf, "contents"))
  def _copyin(self, dest:int, src:memoryview) -> None:
    self.dev.synchronize()
    ctypes.memmove(self._contents(dest, src.nbytes), bytes(flat_mv(src)), src.nbytes)
  def _copyout(self, dest:memoryview, src:int) -> None:
    self.dev.synchronize()
    ctypes.memmove((ctypes.c_char * dest.nbytes).from_buffer(dest), self._contents(src, dest.nbytes), dest.nbytes)

class MetalProgram:
  def __init__(self, dev:MetalDevice, name:str, lib:bytes):
    self.dev, self.name, self.lib, err = dev, name, lib, ctypes.c_void_p()
    mlib = msg(dev.device, "newLibraryWithSource:options:error:", (ctypes.c_void_p, nsstring(lib.decode())), (ctypes.c_void_p, None),
               (ctypes.c_void_p, ctypes.addressof(err)))
    if not mlib: raise CompileError(f"Metal failed to compile {name}:\n{nserror(err.value)}\nsource:\n{_numbered(lib.decode())}")
    if not (fxn := msg(mlib, "newFunctionWithName:", (ctypes.c_void_p, nsstring(name)))): raise RuntimeError(f"no function {name!r} in the library")
    self.pipeline = msg(dev.device, "newComputePipelineStateWithFunction:error:", (ctypes.c_void_p, fxn), (ctypes.c_void_p, ctypes.addressof(err)))
    if not self.pipeline: raise RuntimeError(f"Metal failed to make a pipeline for {name}: {nserror(err.value)}")
  def __call__(self, *bufs:int, global_size:tuple[int, ...]|None=(1, 1, 1), local_size:tuple[int, ...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    cb = msg(self.dev.queue, "commandBuffer")
    enc = msg(cb, "computeCommandEncoder")
    msg(enc, "setComputePipelineState:", (ctypes.c_void_p, self.pipeline))
    for i, b in enumerate(bufs): msg(enc, "setBuffer:offset:atIndex:", (ctypes.c_void_p, b), (ctypes.c_ulong, 0), (ctypes.c_ulong, i))
    for i, v in enumerate(vals, len(bufs)):
      iv = ctypes.c_int32(v)   # alive until the call has copied it
      msg(enc, "setBytes:length:atIndex:", (ctypes.c_void_p, ctypes.addressof(iv)), (ctypes.c_ulong, 4), (ctypes.c_ulong, i))
    gs, ls = (tuple(global_size or ()) + (1, 1, 1))[:3], (tuple(local_size or ()) + (1, 1, 1))[:3]
    msg(enc, "dispatchThreadgroups:threadsPerThreadgroup:", (MTLSize, MTLSize(*gs)), (MTLSize, MTLSize(*ls)))
    msg(enc, "endEncoding")
    msg(cb, "commit")
    self.dev.pending = cb
    if not wait: return None
    msg(cb, "waitUntilCompleted")
    return msg(cb, "GPUEndTime", restype=ctypes.c_double) - msg(cb, "GPUStartTime", restype=ctypes.c_double)

class MetalDevice(Compiled):
  def __init__(self, device:str):
    _objc()
    mtl = ctypes.CDLL("/System/Library/Frameworks/Metal.framework/Metal")
    mtl.MTLCreateSystemDefaultDevice.restype = ctypes.c_void_p
    if not (dev := mtl.MTLCreateSystemDefaultDevice()): raise RuntimeError("METAL: no Metal GPU found")
    self.device, self.pending = dev, None
    self.queue = msg(dev, "newCommandQueue")
    # the source is the "binary": the driver builds it when the program is loaded
    super().__init__(device, MetalAllocator(self), MetalRenderer(), Compiler(), functools.partial(MetalProgram, self))
  def synchronize(self) -> None:
    if self.pending is not None: msg(self.pending, "waitUntilCompleted")
    self.pending = None
