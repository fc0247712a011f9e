"""The CUDA device: the driver API (libcuda, from the NVIDIA driver) through ctypes. CUDA C from cstyle.py compiled by NVRTC, or with PTX=1
PTX from renderer/ptx.py assembled by ptxas (runtime/support/compiler_cuda.py), both to a cubin for the GPU's own arch. NV=1 is this device."""
from __future__ import annotations
import ctypes, ctypes.util, functools
from typing import Any, Callable, cast
from tinygrad.device import Compiled, LRUAllocator, BufferSpec, DeviceUnavailable
from tinygrad.helpers import DEBUG, flat_mv
from tinygrad.renderer.cstyle import CUDARenderer
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.runtime.support.compiler_cuda import NVRTCCompiler, PTXCompiler, PTX

# argument types, one letter each: p pointer/handle, i int, u unsigned int, z size_t, q CUdeviceptr (u64)
_PROTOS = {"cuInit": "u", "cuDeviceGetCount": "p", "cuDeviceGet": "pi", "cuDeviceGetAttribute": "pii", "cuDeviceGetName": "pii",
           "cuDevicePrimaryCtxRetain": "pi", "cuCtxSetCurrent": "p", "cuCtxSynchronize": "", "cuStreamCreate": "pu", "cuStreamSynchronize": "p",
           "cuMemAlloc_v2": "pz", "cuMemFree_v2": "q", "cuMemAllocHost_v2": "pz", "cuMemFreeHost": "p", "cuMemcpyHtoDAsync_v2": "qpzp",
           "cuMemcpyDtoHAsync_v2": "pqzp", "cuMemcpyPeerAsync": "qpqpzp", "cuModuleLoadData": "pp", "cuModuleUnload": "p",
           "cuModuleGetFunction": "ppp", "cuLaunchKernel": "puuuuuuuppp", "cuEventCreate": "pu", "cuEventRecord": "pp",
           "cuEventSynchronize": "p", "cuEventElapsedTime": "ppp", "cuEventDestroy_v2": "p", "cuGetErrorString": "ip", "cuGraphCreate": "pu",
           "cuGraphAddKernelNode": "pppzp", "cuGraphInstantiateWithFlags": "ppq", "cuGraphLaunch": "pp", "cuGraphExecKernelNodeSetParams": "ppp",
           "cuGraphExecDestroy": "p", "cuGraphDestroy": "p"}
_CT = {"p": ctypes.c_void_p, "i": ctypes.c_int, "u": ctypes.c_uint, "z": ctypes.c_size_t, "q": ctypes.c_uint64}

@functools.cache
def _cuda() -> Any:
  try: lib = ctypes.CDLL(ctypes.util.find_library("cuda") or "libcuda.so.1")
  except OSError: raise DeviceUnavailable("no libcuda.so (NVIDIA driver): CUDA/NV need an NVIDIA GPU and its driver") from None
  for name, proto in _PROTOS.items(): getattr(lib, name).argtypes, getattr(lib, name).restype = [_CT[c] for c in proto], ctypes.c_int
  return lib

def check(status:int, what:str) -> None:
  if status != 0:
    msg = ctypes.c_char_p()
    _cuda().cuGetErrorString(status, ctypes.byref(msg))
    raise RuntimeError(f"CUDA {what} failed: {(msg.value or b'unknown error').decode()} ({status})")

class CUDAAllocator(LRUAllocator[int]):
  """Device memory; copies are queued on the device's stream. A copy in goes through pinned host memory, kept until the next synchronize."""
  def __init__(self, dev:CUDADevice):
    self.dev = dev
    super().__init__()
  def _alloc(self, size:int, options:BufferSpec) -> int:
    self.dev.make_current()
    ptr = ctypes.c_uint64()
    if (st := _cuda().cuMemAlloc_v2(ctypes.byref(ptr), max(size, 1))) == 2: raise MemoryError(f"CUDA out of memory allocating {size} bytes")
    check(st, "cuMemAlloc")
    return ptr.value
  def _free(self, opaque:int, options:BufferSpec) -> None: check(_cuda().cuMemFree_v2(opaque), "cuMemFree")
  def _copyin(self, dest:int, src:memoryview) -> None:
    self.dev.make_current()
    host = ctypes.c_void_p()
    check(_cuda().cuMemAllocHost_v2(ctypes.byref(host), src.nbytes), "cuMemAllocHost")
    ctypes.memmove(host, bytes(flat_mv(src)), src.nbytes)
    self.dev.pinned.append(host)
    check(_cuda().cuMemcpyHtoDAsync_v2(dest, host, src.nbytes, self.dev.stream), "cuMemcpyHtoDAsync")
  def _copyout(self, dest:memoryview, src:int) -> None:
    self.dev.make_current()
    host = (ctypes.c_char * dest.nbytes).from_buffer(dest)
    check(_cuda().cuMemcpyDtoHAsync_v2(host, src, dest.nbytes, self.dev.stream), "cuMemcpyDtoHAsync")
    self.dev.synchronize()
  def _offset(self, buf:int, size:int, offset:int) -> int: return buf + offset
  def _transfer(self, dest:int, src:int, nbytes:int, src_dev:CUDADevice, dest_dev:CUDADevice) -> None:
    src_dev.synchronize()   # the source's writes land first, then the copy is queued on the destination's stream
    check(_cuda().cuMemcpyPeerAsync(dest, dest_dev.context, src, src_dev.context, nbytes, dest_dev.stream), "cuMemcpyPeerAsync")

class CUDAProgram:
  def __init__(self, dev:CUDADevice, name:str, lib:bytes):
    self.dev, self.name, self.lib = dev, name, lib
    dev.make_current()
    self.module, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
    check(_cuda().cuModuleLoadData(ctypes.byref(self.module), lib), f"cuModuleLoadData of {name}")
    check(_cuda().cuModuleGetFunction(ctypes.byref(self.fn), self.module, name.encode()), f"cuModuleGetFunction({name})")
  def __del__(self) -> None:
    try:
      if self.module: _cuda().cuModuleUnload(self.module)
    except Exception: pass
  def __call__(self, *bufs:int, global_size:tuple[int,...]|None=(1,1,1), local_size:tuple[int,...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    args = [ctypes.c_uint64(b) for b in bufs] + [ctypes.c_int32(v) for v in vals]
    params = (ctypes.c_void_p * max(len(args), 1))(*[ctypes.addressof(a) for a in args])
    return self.dev.launch(lambda: _cuda().cuLaunchKernel(self.fn, *dims(global_size), *dims(local_size), 0, self.dev.stream, params, None),
                           f"launch of {self.name}", wait)

def dims(size:tuple[int, ...]|None) -> tuple[int, ...]: return (tuple(size or ()) + (1, 1, 1))[:3]

class KernelNodeParams(ctypes.Structure):   # CUDA_KERNEL_NODE_PARAMS (v1)
  _fields_ = [("func", ctypes.c_void_p), *((f"{k}Dim{d}", ctypes.c_uint) for k in ("grid", "block") for d in "XYZ"),
              ("sharedMemBytes", ctypes.c_uint), ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p)]

def CUDAGraph(base:type, jit_cache:list, input_rawbuffers:list, var_vals:dict) -> Any:
  """TinyJit's graph runner for CUDA (Compiled.graph): a run of captured kernels becomes one CUDA graph, a chain of kernel nodes in launch
  order, instantiated once; a replay updates the nodes whose input buffers or variable values changed (cuGraphExecKernelNodeSetParams) and
  submits the whole graph with one cuGraphLaunch. A driver that can't build the graph gets the engine's host-side GraphRunner instead."""
  try: return _graph_runner(base)(jit_cache, input_rawbuffers, var_vals)
  except RuntimeError as e:
    if DEBUG >= 1: print(f"CUDA graph not built ({e}): the kernels are launched one by one")
    return base(jit_cache, input_rawbuffers, var_vals)

@functools.cache
def _graph_runner(base:type) -> type:
  class CUDAGraphRunner(base):   # type: ignore[valid-type,misc]  # base is the engine's GraphRunner, passed in by TinyJit
    def __init__(self, jit_cache:list, input_rawbuffers:list, var_vals:dict):
      super().__init__(jit_cache, input_rawbuffers, var_vals)
      self.cu_dev: CUDADevice = cast(CUDAProgram, self.programs[0]).dev
      self.cu_dev.make_current()
      self.graph, self.graph_exec, self.nodes = ctypes.c_void_p(), ctypes.c_void_p(), []
      self.args: list[list] = []   # per node: its argument values, then the pointers to them that the driver reads
      check(_cuda().cuGraphCreate(ctypes.byref(self.graph), 0), "cuGraphCreate")
      self.params = [KernelNodeParams(cast(CUDAProgram, prg).fn) for prg in self.programs]
      for j, prg in enumerate(self.programs):
        bufs, _, _, vals = self.launches[j]
        args: list = [ctypes.c_uint64(b) for b in bufs] + [ctypes.c_int32(v) for v in vals]
        self.args.append([args, ptrs := (ctypes.c_void_p * max(len(args), 1))(*[ctypes.addressof(a) for a in args])])
        self.params[j].kernelParams = ctypes.cast(ptrs, ctypes.c_void_p)
        self._set(j)
        self.nodes.append(node := ctypes.c_void_p())
        deps = (ctypes.c_void_p * 1)(self.nodes[-2]) if j else None
        check(_cuda().cuGraphAddKernelNode(ctypes.byref(node), self.graph, deps, 1 if j else 0, ctypes.byref(self.params[j])), "cuGraphAddKernelNode")
      check(_cuda().cuGraphInstantiateWithFlags(ctypes.byref(self.graph_exec), self.graph, 0), "cuGraphInstantiate")
    def _set(self, j:int) -> bool:
      """Write launch j's arguments and sizes into its node's parameters; True where something changed."""
      bufs, global_size, local_size, vals = self.launches[j]
      args, p, names, sizes = self.args[j][0], self.params[j], [f[0] for f in KernelNodeParams._fields_[1:7]], dims(global_size) + dims(local_size)
      changed = [getattr(p, n) for n in names] != list(sizes) or [a.value for a in args] != [*bufs, *vals]
      for n, v in zip(names, sizes): setattr(p, n, v)
      for a, v in zip(args, [*bufs, *vals]): a.value = v
      return changed
    def __call__(self, rawbufs:list, var_vals:dict, wait=False) -> float|None:
      for (j, i), k in self.input_replace.items(): self.launches[j][0][i] = rawbufs[k]._buf
      for j in self.symbolic: self.launches[j][1:] = self._launch(self.jit_cache[j], var_vals)[1:]
      self.cu_dev.make_current()
      for j in sorted({j for j, _ in self.input_replace} | set(self.symbolic)):
        if self._set(j): check(_cuda().cuGraphExecKernelNodeSetParams(self.graph_exec, self.nodes[j], ctypes.byref(self.params[j])), "graph update")
      return self.cu_dev.launch(lambda: _cuda().cuGraphLaunch(self.graph_exec, self.cu_dev.stream), "cuGraphLaunch", wait)
    def __del__(self) -> None:
      try:
        if self.graph_exec: _cuda().cuGraphExecDestroy(self.graph_exec)
        if self.graph: _cuda().cuGraphDestroy(self.graph)
      except Exception: pass
  return CUDAGraphRunner

class CUDADevice(Compiled):
  def __init__(self, device:str):
    cu, idx = _cuda(), int(device.split(":")[1]) if ":" in device else 0
    check(cu.cuInit(0), "cuInit")
    count = ctypes.c_int()
    check(cu.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    if idx >= count.value: raise DeviceUnavailable(f"{device}: {count.value} NVIDIA GPUs found")
    self.cu_device, self.context, self.stream = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(self.cu_device), idx), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.cu_device), "cuDevicePrimaryCtxRetain")
    self.make_current()
    check(cu.cuStreamCreate(ctypes.byref(self.stream), 1), "cuStreamCreate")   # CU_STREAM_NON_BLOCKING
    self.events = [ctypes.c_void_p(), ctypes.c_void_p()]
    for e in self.events: check(cu.cuEventCreate(ctypes.byref(e), 0), "cuEventCreate")
    self.pinned: list[ctypes.c_void_p] = []
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, self.cu_device), "cuDeviceGetAttribute")   # COMPUTE_CAPABILITY_MAJOR
    check(cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.cu_device), "cuDeviceGetAttribute")   # COMPUTE_CAPABILITY_MINOR
    self.arch = f"sm_{major.value}{minor.value}"
    renderer, compiler = (PTXRenderer(self.arch), PTXCompiler(self.arch)) if PTX else (CUDARenderer(self.arch), NVRTCCompiler(self.arch))
    self.allocator: CUDAAllocator
    super().__init__(device, CUDAAllocator(self), renderer, compiler, functools.partial(CUDAProgram, self), graph=CUDAGraph)
  def make_current(self) -> None: check(_cuda().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
  def launch(self, submit:Callable[[], int], what:str, wait:bool) -> float|None:
    """Queue work on the stream; with wait, between two events, and return its time on the GPU in seconds."""
    self.make_current()
    if wait: check(_cuda().cuEventRecord(self.events[0], self.stream), "cuEventRecord")
    check(submit(), what)
    if not wait: return None
    check(_cuda().cuEventRecord(self.events[1], self.stream), "cuEventRecord")
    check(_cuda().cuEventSynchronize(self.events[1]), "cuEventSynchronize")
    ms = ctypes.c_float()
    check(_cuda().cuEventElapsedTime(ctypes.byref(ms), *self.events), "cuEventElapsedTime")
    return ms.value * 1e-3
  def synchronize(self) -> None:
    self.make_current()
    check(_cuda().cuStreamSynchronize(self.stream), "cuStreamSynchronize")
    for p in self.pinned: _cuda().cuMemFreeHost(p)
    self.pinned.clear()
