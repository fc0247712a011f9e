"""The WEBGPU device: WGSL (renderer/wgsl.py) run by wgpu-native, whose C library (webgpu.h, as the `wgpu` PyPI package ships it) is reached
through ctypes. On a machine without a GPU it runs on Mesa's lavapipe (Vulkan on the CPU)."""
from __future__ import annotations
import ctypes, functools, importlib.util, os, pathlib, time
from typing import Any
from tinygrad.device import Compiled, Compiler, CompileError, LRUAllocator, BufferSpec, DeviceUnavailable
from tinygrad.renderer.wgsl import WGSLRenderer
from tinygrad.helpers import round_up

INSTALL_HINT = "`pip install --no-deps wgpu cffi pycparser` (it ships libwgpu_native) and a Vulkan driver, e.g. " \
               "`apt-get install -y mesa-vulkan-drivers libvulkan1` (lavapipe); or point WEBGPU_PATH at libwgpu_native"
c_p, c_u32, c_u64, c_sz, c_i32 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int32

def _struct(name:str, *fields:tuple[str, Any]) -> type[ctypes.Structure]: return type(name, (ctypes.Structure,), {"_fields_": list(fields)})
# the structs of webgpu.h (wgpu-native 25 and newer: strings are (data, length) views, async calls take a callback info and return a future)
StringView = _struct("WGPUStringView", ("data", ctypes.c_char_p), ("length", c_sz))
def _sv(s:bytes) -> Any: return StringView(s, len(s))
def _callback_info(name:str, cb:Any) -> type[ctypes.Structure]:
  return _struct(name, ("nextInChain", c_p), ("mode", c_i32), ("callback", cb), ("userdata1", c_p), ("userdata2", c_p))
AdapterCB = ctypes.CFUNCTYPE(None, c_i32, c_p, StringView, c_p, c_p)      # status, adapter (or device), message, userdata1/2
MapCB = ctypes.CFUNCTYPE(None, c_i32, StringView, c_p, c_p)               # status, message
ErrorScopeCB = ctypes.CFUNCTYPE(None, c_i32, c_i32, StringView, c_p, c_p)  # status, error type, message
UncapturedCB = ctypes.CFUNCTYPE(None, c_p, c_i32, StringView, c_p, c_p)   # device*, error type, message
AdapterCBInfo, MapCBInfo = _callback_info("WGPURequestAdapterCallbackInfo", AdapterCB), _callback_info("WGPUBufferMapCallbackInfo", MapCB)
ErrorScopeCBInfo = _callback_info("WGPUPopErrorScopeCallbackInfo", ErrorScopeCB)
DeviceLostCBInfo = _callback_info("WGPUDeviceLostCallbackInfo", c_p)
UncapturedCBInfo = _struct("WGPUUncapturedErrorCallbackInfo", ("nextInChain", c_p), ("callback", UncapturedCB), ("userdata1", c_p),
                           ("userdata2", c_p))
LIMIT_NAMES = ("maxTextureDimension1D maxTextureDimension2D maxTextureDimension3D maxTextureArrayLayers maxBindGroups "
  "maxBindGroupsPlusVertexBuffers maxBindingsPerBindGroup maxDynamicUniformBuffersPerPipelineLayout maxDynamicStorageBuffersPerPipelineLayout "
  "maxSampledTexturesPerShaderStage "
  "maxSamplersPerShaderStage maxStorageBuffersPerShaderStage maxStorageTexturesPerShaderStage maxUniformBuffersPerShaderStage "
  "maxUniformBufferBindingSize:64 maxStorageBufferBindingSize:64 minUniformBufferOffsetAlignment minStorageBufferOffsetAlignment maxVertexBuffers "
  "maxBufferSize:64 maxVertexAttributes maxVertexBufferArrayStride maxInterStageShaderVariables maxColorAttachments maxColorAttachmentBytesPerSample "
  "maxComputeWorkgroupStorageSize maxComputeInvocationsPerWorkgroup maxComputeWorkgroupSizeX maxComputeWorkgroupSizeY maxComputeWorkgroupSizeZ "
  "maxComputeWorkgroupsPerDimension maxImmediateSize").split()
Limits = _struct("WGPULimits", ("nextInChain", c_p), *((n.split(":")[0], c_u64 if n.endswith(":64") else c_u32) for n in LIMIT_NAMES))
RequestAdapterOptions = _struct("WGPURequestAdapterOptions", ("nextInChain", c_p), ("featureLevel", c_i32), ("powerPreference", c_i32),
                                ("forceFallbackAdapter", c_u32), ("backendType", c_i32), ("compatibleSurface", c_p))
DeviceDescriptor = _struct("WGPUDeviceDescriptor", ("nextInChain", c_p), ("label", StringView), ("requiredFeatureCount", c_sz),
                           ("requiredFeatures", c_p), ("requiredLimits", ctypes.POINTER(Limits)), ("queueNext", c_p), ("queueLabel", StringView),
                           ("deviceLostCallbackInfo", DeviceLostCBInfo), ("uncapturedErrorCallbackInfo", UncapturedCBInfo))
BufferDescriptor = _struct("WGPUBufferDescriptor", ("nextInChain", c_p), ("label", StringView), ("usage", c_u64), ("size", c_u64),
                           ("mappedAtCreation", c_u32))
ShaderSourceWGSL = _struct("WGPUShaderSourceWGSL", ("next", c_p), ("sType", c_i32), ("code", StringView))
ShaderModuleDescriptor = _struct("WGPUShaderModuleDescriptor", ("nextInChain", c_p), ("label", StringView))
ComputePipelineDescriptor = _struct("WGPUComputePipelineDescriptor", ("nextInChain", c_p), ("label", StringView), ("layout", c_p),
                                    ("computeNext", c_p), ("module", c_p), ("entryPoint", StringView), ("constantCount", c_sz), ("constants", c_p))
BindGroupEntry = _struct("WGPUBindGroupEntry", ("nextInChain", c_p), ("binding", c_u32), ("buffer", c_p), ("offset", c_u64), ("size", c_u64),
                         ("sampler", c_p), ("textureView", c_p))
BindGroupDescriptor = _struct("WGPUBindGroupDescriptor", ("nextInChain", c_p), ("label", StringView), ("layout", c_p), ("entryCount", c_sz),
                              ("entries", ctypes.POINTER(BindGroupEntry)))
SPONTANEOUS, SUCCESS, ERROR_NONE, FEATURE_SHADER_F16 = 3, 1, 1, 0xB
USAGE_MAP_READ, USAGE_COPY_SRC, USAGE_COPY_DST, USAGE_UNIFORM, USAGE_STORAGE = 0x1, 0x4, 0x8, 0x40, 0x80
_PROTOS = {"wgpuCreateInstance": (c_p, c_p), "wgpuInstanceRequestAdapter": (c_u64, c_p, c_p, AdapterCBInfo),
           "wgpuInstanceProcessEvents": (None, c_p), "wgpuAdapterGetLimits": (c_i32, c_p, c_p), "wgpuAdapterHasFeature": (c_u32, c_p, c_i32),
           "wgpuAdapterRequestDevice": (c_u64, c_p, c_p, AdapterCBInfo), "wgpuDeviceGetQueue": (c_p, c_p),
           "wgpuDeviceCreateBuffer": (c_p, c_p, c_p), "wgpuBufferDestroy": (None, c_p), "wgpuBufferRelease": (None, c_p),
           "wgpuBufferMapAsync": (c_u64, c_p, c_u64, c_sz, c_sz, MapCBInfo), "wgpuBufferGetConstMappedRange": (c_p, c_p, c_sz, c_sz),
           "wgpuBufferUnmap": (None, c_p), "wgpuQueueWriteBuffer": (None, c_p, c_p, c_u64, c_p, c_sz),
           "wgpuDeviceCreateShaderModule": (c_p, c_p, c_p), "wgpuShaderModuleRelease": (None, c_p),
           "wgpuDeviceCreateComputePipeline": (c_p, c_p, c_p), "wgpuComputePipelineGetBindGroupLayout": (c_p, c_p, c_u32),
           "wgpuComputePipelineRelease": (None, c_p), "wgpuBindGroupLayoutRelease": (None, c_p), "wgpuDeviceCreateBindGroup": (c_p, c_p, c_p),
           "wgpuBindGroupRelease": (None, c_p), "wgpuDeviceCreateCommandEncoder": (c_p, c_p, c_p),
           "wgpuCommandEncoderBeginComputePass": (c_p, c_p, c_p), "wgpuComputePassEncoderSetPipeline": (None, c_p, c_p),
           "wgpuComputePassEncoderSetBindGroup": (None, c_p, c_u32, c_p, c_sz, c_p),
           "wgpuComputePassEncoderDispatchWorkgroups": (None, c_p, c_u32, c_u32, c_u32), "wgpuComputePassEncoderEnd": (None, c_p),
           "wgpuComputePassEncoderRelease": (None, c_p), "wgpuCommandEncoderCopyBufferToBuffer": (None, c_p, c_p, c_u64, c_p, c_u64, c_u64),
           "wgpuCommandEncoderFinish": (c_p, c_p, c_p), "wgpuCommandEncoderRelease": (None, c_p), "wgpuCommandBufferRelease": (None, c_p),
           "wgpuQueueSubmit": (None, c_p, c_sz, c_p), "wgpuDevicePoll": (c_u32, c_p, c_u32, c_p), "wgpuDevicePushErrorScope": (None, c_p, c_i32),
           "wgpuDevicePopErrorScope": (c_u64, c_p, ErrorScopeCBInfo), "wgpuGetVersion": (c_u32,)}
MIN_VERSION = 25   # the first wgpu-native with webgpu.h's string views and callback infos (the layouts above)

def library_path() -> str:
  """WEBGPU_PATH, else the libwgpu_native the `wgpu` package ships (found without importing the package)."""
  if (p := os.environ.get("WEBGPU_PATH")): return p
  if (spec := importlib.util.find_spec("wgpu")) is None or not spec.submodule_search_locations:
    raise DeviceUnavailable(f"WEBGPU needs libwgpu_native, which isn't installed here; install it with {INSTALL_HINT}")
  libs = sorted(x for d in spec.submodule_search_locations for x in (pathlib.Path(d)/"resources").glob("*wgpu_native*") if x.suffix != ".h")
  if not libs: raise DeviceUnavailable(f"WEBGPU: the wgpu package has no libwgpu_native in its resources; reinstall it with {INSTALL_HINT}")
  return str(libs[0])

@functools.cache
def wgpu() -> Any:
  try: lib = ctypes.CDLL(path := library_path())
  except OSError as e: raise DeviceUnavailable(f"WEBGPU can't load {e}; install it with {INSTALL_HINT}") from None
  for name, (ret, *args) in _PROTOS.items():
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ret, args
  if (ver := lib.wgpuGetVersion() >> 24) < MIN_VERSION:
    raise DeviceUnavailable(f"WEBGPU needs wgpu-native {MIN_VERSION} or newer, {path} is version {ver}: `pip install -U --no-deps wgpu`")
  return lib

class WGView:
  """Part of a buffer (Buffer.view, the memory planner's slots). Copies reach it through the base at the offset; a kernel binds the base at
  the offset, which WebGPU allows only at multiples of minStorageBufferOffsetAlignment (256): a kernel refuses any other view."""
  def __init__(self, base:int, offset:int, size:int, align:int): self.base, self.offset, self.size, self.align = base, offset, size, align
  def binding(self) -> tuple[int, int, int]:
    if self.offset % self.align:
      raise RuntimeError(f"a kernel can't take a view at byte offset {self.offset} of a WEBGPU buffer: storage bindings start at multiples of "
                         f"{self.align} bytes (minStorageBufferOffsetAlignment); copy it with .contiguous() on another device first")
    return self.base, self.offset, round_up(max(self.size, 4), 4)

def _region(buf:int|WGView) -> tuple[int, int]: return (buf, 0) if isinstance(buf, int) else (buf.base, buf.offset)

class WEBGPUAllocator(LRUAllocator[int]):
  """Storage buffers, sized up to whole 32-bit words (WGSL reads and writes no smaller unit; copies move multiples of 4 bytes)."""
  def __init__(self, dev:WEBGPUDevice):
    self.dev = dev
    super().__init__()
  def _alloc(self, size:int, options:BufferSpec) -> int:
    if options.external_ptr is not None: raise RuntimeError("WEBGPU can't wrap host memory (external_ptr)")
    if size > self.dev.limits.maxBufferSize: raise MemoryError(f"WEBGPU buffer of {size} bytes is over the device's {self.dev.limits.maxBufferSize}")
    return self.dev.buffer(round_up(max(size, 4), 4), USAGE_STORAGE | USAGE_COPY_SRC | USAGE_COPY_DST)
  def _free(self, opaque:int, options:BufferSpec) -> None:
    wgpu().wgpuBufferDestroy(opaque)
    wgpu().wgpuBufferRelease(opaque)
  def _offset(self, buf:int, size:int, offset:int) -> WGView: return WGView(buf, offset, size, self.dev.limits.minStorageBufferOffsetAlignment)
  def _copyin(self, dest:int|WGView, src:memoryview) -> None:
    # writes are whole words at word offsets: a base buffer was sized for that, a view's partial words at either end keep their other bytes
    base, off = _region(dest)
    start, end = off - off % 4, round_up(off + src.nbytes, 4)
    data = bytearray(self.dev.read(base, end - start, start) if isinstance(dest, WGView) and (off % 4 or src.nbytes % 4) else end - start)
    data[off-start:off-start+src.nbytes] = src
    wgpu().wgpuQueueWriteBuffer(self.dev.queue, base, start, bytes(data), len(data))
  def _copyout(self, dest:memoryview, src:int|WGView) -> None:
    base, off = _region(src)
    dest[:] = self.dev.read(base, dest.nbytes, off)
  def can_transfer(self, src:Any) -> bool: return src is self   # buffers of one WebGPU device only: WEBGPU:1 is another device
  def _transfer(self, dest:int|WGView, src:int|WGView, nbytes:int, src_dev:Compiled, dest_dev:Compiled) -> None:
    (db, do), (sb, so) = _region(dest), _region(src)
    # a buffer copy moves whole words between word offsets; a view's partial word goes through host memory
    if do % 4 or so % 4 or (nbytes % 4 and isinstance(dest, WGView)): return self._copyin(dest, memoryview(self.dev.read(sb, nbytes, so)))
    self.dev.submit(lambda enc: wgpu().wgpuCommandEncoderCopyBufferToBuffer(enc, sb, so, db, do, round_up(nbytes, 4)))

class WEBGPUCompiler(Compiler):
  """WGSL is compiled by the driver when a pipeline is made; here naga validates it so errors come early, with the source, and the source
  itself is the binary."""
  def __init__(self, dev:WEBGPUDevice):
    self.dev = dev
    super().__init__(None)
  def compile(self, src:str) -> bytes:
    wgpu().wgpuShaderModuleRelease(self.dev.shader_module(src))
    return src.encode()

class WEBGPUProgram:
  def __init__(self, dev:WEBGPUDevice, name:str, lib:bytes):
    self.dev, self.name, self.lib, lw = dev, name, lib, wgpu()
    self.nvals = lib.count(b"@binding(") - lib.count(b"var<storage")
    module = dev.shader_module(lib.decode())
    desc = ComputePipelineDescriptor(label=_sv(name.encode()), module=module, entryPoint=_sv(name.encode()))
    self.pipeline = dev.checked(f"making the pipeline of {name}", lambda: lw.wgpuDeviceCreateComputePipeline(dev.handle, ctypes.byref(desc)))
    lw.wgpuShaderModuleRelease(module)
    self.layout = lw.wgpuComputePipelineGetBindGroupLayout(self.pipeline, 0)
    self.vals_buf = dev.buffer(256, USAGE_UNIFORM | USAGE_COPY_DST) if self.nvals else None
  def __del__(self) -> None:
    try:
      if hasattr(self, "layout"): wgpu().wgpuBindGroupLayoutRelease(self.layout)
      if hasattr(self, "pipeline"): wgpu().wgpuComputePipelineRelease(self.pipeline)
      if getattr(self, "vals_buf", None): wgpu().wgpuBufferRelease(self.vals_buf)
    except Exception: pass
  def __call__(self, *bufs:int|WGView, global_size:tuple[int,...]|None=(1,1,1), local_size:tuple[int,...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    lw, dev = wgpu(), self.dev
    if vals and self.vals_buf is not None:
      vb = (ctypes.c_int32 * len(vals))(*vals)
      lw.wgpuQueueWriteBuffer(dev.queue, self.vals_buf, 0, vb, ctypes.sizeof(vb))
    # a whole buffer binds with WHOLE_SIZE, a view its own range
    handles = [(b, 0, 2**64-1) if isinstance(b, int) else b.binding() for b in bufs] + ([(self.vals_buf, 0, 2**64-1)] if vals else [])
    entries = (BindGroupEntry * len(handles))(*[BindGroupEntry(binding=i, buffer=b, offset=o, size=n) for i, (b, o, n) in enumerate(handles)])
    desc = BindGroupDescriptor(layout=self.layout, entryCount=len(handles), entries=entries)
    group = lw.wgpuDeviceCreateBindGroup(dev.handle, ctypes.byref(desc))
    gs = tuple(global_size or (1, 1, 1)) + (1, 1, 1)
    def encode(enc:int) -> None:
      cpass = lw.wgpuCommandEncoderBeginComputePass(enc, None)
      lw.wgpuComputePassEncoderSetPipeline(cpass, self.pipeline)
      lw.wgpuComputePassEncoderSetBindGroup(cpass, 0, group, 0, None)
      lw.wgpuComputePassEncoderDispatchWorkgroups(cpass, *gs[:3])
      lw.wgpuComputePassEncoderEnd(cpass)
      lw.wgpuComputePassEncoderRelease(cpass)
    st = time.perf_counter()
    dev.submit(encode)
    lw.wgpuBindGroupRelease(group)
    dev.raise_errors(f"launch of {self.name}")
    if not wait: return None
    dev.synchronize()
    return time.perf_counter() - st

class WEBGPUDevice(Compiled):
  def __init__(self, device:str):
    lw = self.lw = wgpu()
    self.errors: list[str] = []
    self.instance = lw.wgpuCreateInstance(None)
    if not self.instance: raise DeviceUnavailable("WEBGPU: wgpuCreateInstance failed")
    opts = RequestAdapterOptions(featureLevel=2, powerPreference=2)   # core features, high performance
    self.adapter = self._request(lw.wgpuInstanceRequestAdapter, self.instance, ctypes.byref(opts), "adapter")
    adapter_limits = Limits()
    if lw.wgpuAdapterGetLimits(self.adapter, ctypes.byref(adapter_limits)) != SUCCESS: raise RuntimeError("WEBGPU: wgpuAdapterGetLimits failed")
    # ask for everything the adapter has: the defaults (8 storage buffers, 256 MiB buffers) are too small for real kernels
    features = (c_i32 * 1)(FEATURE_SHADER_F16)
    f16 = bool(lw.wgpuAdapterHasFeature(self.adapter, FEATURE_SHADER_F16))
    self._on_error = UncapturedCB(lambda dev, typ, msg, u1, u2: self.errors.append(ctypes.string_at(msg.data, msg.length).decode(errors="replace")))
    desc = DeviceDescriptor(requiredFeatureCount=int(f16), requiredFeatures=ctypes.cast(features, c_p), requiredLimits=ctypes.pointer(adapter_limits),
                            uncapturedErrorCallbackInfo=UncapturedCBInfo(callback=self._on_error))
    self.handle = self._request(lw.wgpuAdapterRequestDevice, self.adapter, ctypes.byref(desc), "device")
    self.queue, self.limits = lw.wgpuDeviceGetQueue(self.handle), adapter_limits
    lim = adapter_limits
    renderer = WGSLRenderer(f16=f16)
    renderer.global_max = (lim.maxComputeWorkgroupsPerDimension,) * 3
    # per dim, and never over the invocations a whole workgroup may have (the optimizer keeps a workgroup's total under the largest dim's)
    renderer.local_max = tuple(min(x, lim.maxComputeInvocationsPerWorkgroup) for x in (lim.maxComputeWorkgroupSizeX, lim.maxComputeWorkgroupSizeY,
                                                                                         lim.maxComputeWorkgroupSizeZ))
    renderer.shared_max = lim.maxComputeWorkgroupStorageSize
    renderer.max_bufs = lim.maxStorageBuffersPerShaderStage
    self.allocator: WEBGPUAllocator
    super().__init__(device, WEBGPUAllocator(self), renderer, WEBGPUCompiler(self), functools.partial(WEBGPUProgram, self))

  def _request(self, fn:Any, obj:int, desc:Any, what:str) -> int:
    got: list[tuple[int, int|None, str]] = []
    cb = AdapterCB(lambda st, handle, msg, u1, u2: got.append((st, handle, ctypes.string_at(msg.data, msg.length).decode(errors="replace"))))
    fn(obj, desc, AdapterCBInfo(mode=SPONTANEOUS, callback=cb))
    while not got: self.lw.wgpuInstanceProcessEvents(self.instance)
    if got[0][0] != SUCCESS or not got[0][1]:
      raise DeviceUnavailable(f"WEBGPU: no {what} ({got[0][2] or 'none found'}); for a CPU fallback install {INSTALL_HINT}")
    return got[0][1]
  def buffer(self, size:int, usage:int) -> int:
    desc = BufferDescriptor(usage=usage, size=size)
    if not (buf := self.checked(f"allocating {size} bytes", lambda: self.lw.wgpuDeviceCreateBuffer(self.handle, ctypes.byref(desc)))):
      raise MemoryError(f"WEBGPU: can't allocate {size} bytes")
    return buf
  def checked(self, what:str, fn:Any) -> Any:
    """fn() inside a validation error scope: its error is raised here, with what was being done."""
    self.lw.wgpuDevicePushErrorScope(self.handle, 1)   # WGPUErrorFilter_Validation
    ret = fn()
    got: list[tuple[int, int, str]] = []
    cb = ErrorScopeCB(lambda st, typ, msg, u1, u2: got.append((st, typ, ctypes.string_at(msg.data, msg.length).decode(errors="replace"))))
    self.lw.wgpuDevicePopErrorScope(self.handle, ErrorScopeCBInfo(mode=SPONTANEOUS, callback=cb))
    while not got: self.lw.wgpuInstanceProcessEvents(self.instance)
    if got[0][1] != ERROR_NONE: raise CompileError(f"WEBGPU {what} failed:\n{got[0][2]}")
    return ret
  def raise_errors(self, what:str) -> None:
    if self.errors:
      errs, self.errors = self.errors, []
      raise RuntimeError(f"WEBGPU {what} failed:\n" + "\n".join(errs))
  def shader_module(self, src:str) -> int:
    code = ShaderSourceWGSL(sType=2, code=_sv(src.encode()))   # WGPUSType_ShaderSourceWGSL
    desc = ShaderModuleDescriptor(nextInChain=ctypes.cast(ctypes.pointer(code), c_p))
    try: return self.checked("compiling WGSL", lambda: self.lw.wgpuDeviceCreateShaderModule(self.handle, ctypes.byref(desc)))
    except CompileError as e: raise CompileError(str(e), src) from None
  def submit(self, encode:Any) -> None:
    enc = self.lw.wgpuDeviceCreateCommandEncoder(self.handle, None)
    encode(enc)
    cmd = self.lw.wgpuCommandEncoderFinish(enc, None)
    self.lw.wgpuQueueSubmit(self.queue, 1, ctypes.byref(c_p(cmd)))
    self.lw.wgpuCommandBufferRelease(cmd)
    self.lw.wgpuCommandEncoderRelease(enc)
  def read(self, src:int, nbytes:int, offset:int=0) -> bytes:
    """nbytes at offset in buffer src, through a mappable staging buffer (a copy of the whole words around them)."""
    start = offset - offset % 4
    size = round_up(max(offset + nbytes - start, 4), 4)
    staging = self.buffer(size, USAGE_MAP_READ | USAGE_COPY_DST)
    try:
      self.submit(lambda enc: self.lw.wgpuCommandEncoderCopyBufferToBuffer(enc, src, start, staging, 0, size))
      got: list[int] = []
      cb = MapCB(lambda st, msg, u1, u2: got.append(st))
      self.lw.wgpuBufferMapAsync(staging, 1, 0, size, MapCBInfo(mode=SPONTANEOUS, callback=cb))   # WGPUMapMode_Read
      while not got:
        self.lw.wgpuDevicePoll(self.handle, 1, None)
        self.lw.wgpuInstanceProcessEvents(self.instance)
      self.raise_errors("reading a buffer")
      if got[0] != SUCCESS: raise RuntimeError(f"WEBGPU: mapping a buffer for reading failed (status {got[0]})")
      ret = ctypes.string_at(self.lw.wgpuBufferGetConstMappedRange(staging, 0, size) + offset - start, nbytes)
      self.lw.wgpuBufferUnmap(staging)
      return ret
    finally:
      self.lw.wgpuBufferDestroy(staging)
      self.lw.wgpuBufferRelease(staging)
  def synchronize(self) -> None:
    self.lw.wgpuDevicePoll(self.handle, 1, None)
    self.raise_errors("waiting for the device")
