import pickle, shutil, threading
import numpy as np
import pytest
from tinygrad import device as device_mod
from tinygrad.device import Device, _Device, Buffer, BufferSpec, Compiled, Compiler, CompileError, LRUAllocator, MallocAllocator, _MallocAllocator
from tinygrad.device import is_dtype_supported
from tinygrad.dtype import dtypes
from tinygrad.helpers import GlobalCounters
from tinygrad.runtime.ops_cpu import CPUCompiler, CPUProgram, find_cc

needs_cc = pytest.mark.skipif(find_cc() is None, reason="no C compiler")

@pytest.fixture
def cpu(monkeypatch):
  # Buffer tests need Device["CPU"].allocator only; when the renderer isn't importable, stand in a renderer-less CPU device
  try: Device["CPU"]
  except Exception: monkeypatch.setitem(Device._opened, "CPU", Compiled("CPU", MallocAllocator, None, None, None))
  return "CPU"

# *** Buffer ***

def test_roundtrip(cpu):
  data = np.arange(10, dtype=np.float32) * 1.5
  buf = Buffer(cpu, 10, dtypes.float32).allocate()
  assert buf.is_allocated() and buf.nbytes == 40
  buf.copyin(memoryview(data))
  out = np.empty(10, dtype=np.float32)
  buf.copyout(memoryview(out))
  np.testing.assert_equal(out, data)
  np.testing.assert_equal(buf.numpy(), data)

def test_initial_value_and_readonly_source(cpu):
  data = np.array([1, -2, 3], dtype=np.int32)
  buf = Buffer(cpu, 3, dtypes.int32, initial_value=data.tobytes())
  np.testing.assert_equal(buf.numpy(), data)

def test_copyin_wrong_size(cpu):
  buf = Buffer(cpu, 4, dtypes.float32).allocate()
  with pytest.raises(ValueError, match="12 bytes into a buffer of 16"): buf.copyin(memoryview(bytearray(12)))

def test_not_allocated(cpu):
  with pytest.raises(RuntimeError, match="allocated"): Buffer(cpu, 4, dtypes.float32).copyout(memoryview(bytearray(16)))

def test_zero_size(cpu):
  buf = Buffer(cpu, 0, dtypes.float32).allocate()
  assert buf.numpy().shape == (0,)
  buf.copyin(memoryview(bytearray(0)))
  with pytest.raises(ValueError): Buffer(cpu, -1, dtypes.float32)

def test_zero_copy(cpu):
  buf = Buffer(cpu, 4, dtypes.int32, initial_value=np.zeros(4, np.int32).tobytes())
  mv = buf.as_buffer(force_zero_copy=True)
  np.frombuffer(mv, dtype=np.int32)[:] = [5, 6, 7, 8]
  np.testing.assert_equal(buf.numpy(), [5, 6, 7, 8])
  assert buf.as_buffer() is not mv  # a plain as_buffer is a copy

def test_alignment():
  for sz in [1, 3, 64, 1000]: assert device_mod.ctypes.addressof(MallocAllocator.alloc(sz, BufferSpec(nolru=True))) % 64 == 0

def test_big_buffers_page_aligned_and_roundtrip():
  # a big buffer comes from fresh pages on 2 MiB boundaries (huge pages where the OS gives them): it reads back what was written,
  # starts zeroed, and views into it work
  a = _MallocAllocator()
  for sz in (2 << 20, (3 << 20) + 5):
    buf = a.alloc(sz, BufferSpec(nolru=True))
    assert device_mod.ctypes.addressof(buf) % 64 == 0 and len(buf) == sz
    assert not any(bytes(a._as_buffer(buf)[:4096])) and not any(bytes(a._as_buffer(buf)[-4096:]))
    data = np.random.default_rng(sz).integers(0, 256, sz, dtype=np.uint8)
    a._copyin(buf, memoryview(data.tobytes()))
    out = bytearray(sz)
    a._copyout(memoryview(out), buf)
    np.testing.assert_equal(np.frombuffer(out, np.uint8), data)
    np.testing.assert_equal(np.frombuffer(a._offset(buf, 100, sz - 100), np.uint8), data[-100:])

def test_views(cpu):
  base = Buffer(cpu, 16, dtypes.float32, initial_value=np.arange(16, dtype=np.float32).tobytes())
  v = base.view(4, dtypes.float32, 8)
  assert v.base is base and v.offset == 8 and v.nbytes == 16
  np.testing.assert_equal(v.ensure_allocated().numpy(), [2, 3, 4, 5])
  vv = v.view(2, dtypes.float32, 4)  # a view of a view points at the base with the offsets added
  assert vv.base is base and vv.offset == 12
  np.testing.assert_equal(vv.ensure_allocated().numpy(), [3, 4])
  vv.copyin(memoryview(np.array([-1, -2], dtype=np.float32)))
  np.testing.assert_equal(base.numpy()[:6], [0, 1, 2, -1, -2, 5])
  iv = base.view(1, dtypes.int32, 0).ensure_allocated()  # reinterpreting bytes
  assert iv.numpy()[0] == 0
  with pytest.raises(ValueError, match="out of bounds"): base.view(4, dtypes.float32, 56)

def test_view_allocates_base(cpu):
  base = Buffer(cpu, 8, dtypes.int32)
  v = base.view(2, dtypes.int32, 4).ensure_allocated()
  assert base.is_allocated() and base.allocated_views == 1
  v.deallocate()
  assert base.allocated_views == 0 and base.is_allocated()

def test_refcount(cpu):
  base = Buffer(cpu, 8, dtypes.int32, lb_refcount=1)
  v = base.view(2, dtypes.int32, 4)
  v.ref(2)
  assert base.lb_refcount == 3 and v.lb_refcount == 3

def test_mem_used(cpu):
  start = GlobalCounters.mem_used
  buf = Buffer(cpu, 100, dtypes.float32).allocate()
  assert GlobalCounters.mem_used == start + 400
  v = buf.view(10, dtypes.float32, 0).ensure_allocated()
  assert GlobalCounters.mem_used == start + 400  # views own no memory
  v.deallocate()
  buf.deallocate()
  assert GlobalCounters.mem_used == start
  Buffer(cpu, 25, dtypes.float32).allocate()  # freed when garbage collected
  assert GlobalCounters.mem_used == start

def test_pickle(cpu):
  data = np.arange(6, dtype=np.int32)
  buf = Buffer(cpu, 6, dtypes.int32, initial_value=data.tobytes(), lb_refcount=2)
  buf2 = pickle.loads(pickle.dumps(buf))
  assert buf2 is not buf and buf2.is_allocated() and buf2.lb_refcount == 2 and buf2.dtype == dtypes.int32
  np.testing.assert_equal(buf2.numpy(), data)
  assert not pickle.loads(pickle.dumps(Buffer(cpu, 6, dtypes.int32))).is_allocated()
  v2 = pickle.loads(pickle.dumps(buf.view(2, dtypes.int32, 8).ensure_allocated()))
  np.testing.assert_equal(v2.numpy(), [2, 3])

def test_repr(cpu):
  assert "size:3" in repr(Buffer(cpu, 3, dtypes.float32)) and "real:False" in repr(Buffer(cpu, 3, dtypes.float32))

# *** Allocators ***

def test_allocator_sizes():
  a = _MallocAllocator()
  assert len(memoryview(a.alloc(0))) == 0
  with pytest.raises(ValueError): a.alloc(-1)

def test_lru_reuse():
  a = _MallocAllocator()
  x = a.alloc(128)
  a.free(x, 128)
  assert a.alloc(128) is x
  a.free(x, 128)
  assert a.alloc(64) is not x and a.alloc(128, BufferSpec(host=True)) is not x  # size and options are both part of the key
  assert a.alloc(128, None) is x  # None and the default spec are the same key
  a.free(x, 128, BufferSpec(nolru=True))
  assert sum(len(v) for v in a.cache.values()) == 0
  a.free(a.alloc(32), 32)
  a.free_cache()
  assert sum(len(v) for v in a.cache.values()) == 0

def test_lru_memory_error_frees_cache():
  class Flaky(LRUAllocator):
    def __init__(self):
      super().__init__()
      self.fail, self.freed = True, []
    def _alloc(self, size, options):
      if self.fail and self.cache[(16, None)]:   # (a plain buffer is kept under options None)
        self.fail = False
        raise MemoryError
      return bytearray(size)
    def _free(self, opaque, options): self.freed.append(opaque)
  a = Flaky()
  x = a.alloc(16)
  a.free(x, 16)
  assert len(a.alloc(32)) == 32 and a.freed == [x]

# *** Device ***

def test_canonicalize():
  assert Device.canonicalize("cpu") == "CPU"
  assert Device.canonicalize("cpu:0") == "CPU"
  assert Device.canonicalize("CPU:1") == "CPU:1"
  assert Device.canonicalize("disk:/tmp/x") == "DISK:/tmp/x"
  dev = _Device()
  dev.DEFAULT = "PYTHON"
  assert dev.canonicalize(None) == "PYTHON"

def test_devices_listed():
  assert "CPU" in Device._devices and "DISK" in Device._devices

def test_unknown_device():
  with pytest.raises(ValueError, match=r"unknown device 'nope'.*CPU"): Device["nope"]

def _clean_env(monkeypatch, dev):
  for d in dev._devices + ["DEV"]: monkeypatch.delenv(d, raising=False)

def test_default_from_env(monkeypatch):
  dev = _Device()
  dev._devices = ["CPU", "DISK", "PYTHON"]
  _clean_env(monkeypatch, dev)
  monkeypatch.setenv("CPU", "1")
  assert dev.DEFAULT == "CPU"
  dev.DEFAULT = "PYTHON"  # assignable
  assert dev.DEFAULT == "PYTHON" and dev.canonicalize(None) == "PYTHON"

def test_default_dev_env(monkeypatch):
  dev = _Device()
  _clean_env(monkeypatch, dev)
  monkeypatch.setenv("DEV", "cpu")
  assert dev.DEFAULT == "CPU"
  dev2 = _Device()
  monkeypatch.setenv("DEV", "NOTADEVICE")
  with pytest.raises(ValueError, match="NOTADEVICE"): dev2.DEFAULT

def test_default_conflict(monkeypatch):
  dev = _Device()
  dev._devices = ["CPU", "DISK", "PYTHON"]
  _clean_env(monkeypatch, dev)
  monkeypatch.setenv("CPU", "1")
  monkeypatch.setenv("PYTHON", "1")
  with pytest.raises(RuntimeError, match="only one device"): dev.DEFAULT

def test_default_probe(monkeypatch):
  dev = _Device()
  dev._devices = ["CPU", "CUDA", "PYTHON"]
  _clean_env(monkeypatch, dev)
  fake = Compiled("CPU", MallocAllocator, None, None, None)
  monkeypatch.setitem(dev._opened, "CPU", fake)
  assert dev.DEFAULT == "CPU"  # CUDA fails to import here, PYTHON is never a default

def test_default_probe_skips_host_opencl(monkeypatch, tmp_path):
  # OpenCL whose only driver is PoCL (OpenCL on the host CPU) is never opened to pick the default; another driver is
  from tinygrad.runtime import ops_gpu
  (tmp_path/"pocl.icd").write_text("libpocl.so.2\n")
  monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
  assert not ops_gpu.default_candidate()
  dev = _Device()
  dev._devices = ["CPU", "GPU", "PYTHON"]
  _clean_env(monkeypatch, dev)
  monkeypatch.setitem(dev._opened, "CPU", Compiled("CPU", MallocAllocator, None, None, None))
  assert dev.DEFAULT == "CPU" and "GPU" not in dev._opened
  (tmp_path/"nvidia.icd").write_text("libnvidia-opencl.so.1\n")
  assert ops_gpu.default_candidate()

def test_is_dtype_supported():
  assert is_dtype_supported(dtypes.float16, "CPU") and is_dtype_supported(dtypes.bfloat16, "CPU")
  assert is_dtype_supported(dtypes.float64, "PYTHON")
  from tinygrad.renderer.cstyle import MetalRenderer, OpenCLRenderer
  assert not MetalRenderer().supports_dtype(dtypes.float64) and MetalRenderer().supports_dtype(dtypes.float16)
  assert not OpenCLRenderer().supports_dtype(dtypes.bfloat16) and OpenCLRenderer().supports_dtype(dtypes.float64)
  assert is_dtype_supported(dtypes.float64, "DISK:/tmp/unused") and is_dtype_supported(dtypes.bfloat16, "NULL")

# *** CPU compiler and program ***

ADD = "void add(float* restrict a, float* restrict b, float* restrict c, int n) { for (int i = 0; i < n; i++) a[i] = b[i] + c[i]; }"

def _buf(arr:np.ndarray):
  opaque = MallocAllocator.alloc(arr.nbytes, BufferSpec(nolru=True))
  MallocAllocator._copyin(opaque, memoryview(arr.tobytes()))
  return opaque

def _np(opaque, dtype) -> np.ndarray: return np.frombuffer(MallocAllocator._as_buffer(opaque), dtype=dtype).copy()

@needs_cc
def test_compile_and_run():
  b, c = np.random.rand(100).astype(np.float32), np.random.rand(100).astype(np.float32)
  prg = CPUProgram("add", CPUCompiler().compile(ADD))
  a, bb, cc = _buf(np.zeros(100, np.float32)), _buf(b), _buf(c)
  assert prg(a, bb, cc, vals=(100,)) is None
  np.testing.assert_equal(_np(a, np.float32), b + c)
  assert prg(a, bb, cc, vals=(50,), wait=True) > 0  # variables change between launches

@needs_cc
def test_same_lib_twice():
  lib = CPUCompiler().compile(ADD)
  p1, p2 = CPUProgram("add", lib), CPUProgram("add", lib)
  a, b = _buf(np.zeros(4, np.float32)), _buf(np.ones(4, np.float32))
  p1(a, b, b, vals=(4,))
  p2(a, a, b, vals=(4,))
  np.testing.assert_equal(_np(a, np.float32), [3]*4)

@needs_cc
def test_missing_function():
  with pytest.raises(RuntimeError, match="nothere"): CPUProgram("nothere", CPUCompiler().compile(ADD))

@needs_cc
def test_threaded_launch():
  src = """#include <pthread.h>
void fill(int* restrict out, long* restrict tid, int n, int core_id) {
  int per = n / 4;
  for (int i = core_id*per; i < (core_id+1)*per; i++) out[i] = core_id * 1000 + i;
  tid[core_id] = (long)pthread_self();
}"""
  prg = CPUProgram("fill", CPUCompiler().compile(src))
  out, tid = _buf(np.zeros(64, np.int32)), _buf(np.zeros(4, np.int64))
  # threads take chunks as they come free, so the caller may run all 4 of a tiny launch before a worker wakes: over repeated launches,
  # some chunk really runs on another thread
  threads: set[int] = set()
  for _ in range(200):
    prg(out, tid, global_size=(4, 1, 1), vals=(64,))
    np.testing.assert_equal(_np(out, np.int32), [(i // 16) * 1000 + i for i in range(64)])
    if len(threads := threads | set(_np(tid, np.int64).tolist())) > 1: break
  assert len(threads) > 1  # really ran on several threads
  assert threading.active_count() > 1

@needs_cc
def test_compile_error():
  src = "void bad(float* a) {\n  a[0] = undefined_thing;\n}"
  with pytest.raises(CompileError) as e: CPUCompiler().compile(src)
  msg = str(e.value)
  assert "undefined_thing" in msg and "error" in msg  # the compiler's stderr
  assert "   2   a[0] = undefined_thing;" in msg  # the source with line numbers

def test_compile_cached(monkeypatch) -> None:
  store: dict = {}
  monkeypatch.setattr(device_mod, "diskcache_get", lambda table, key: store.get((table, key)))
  monkeypatch.setattr(device_mod, "diskcache_put", lambda table, key, val: store.setdefault((table, key), val))
  calls: list[str] = []
  class Counting(Compiler):
    def compile(self, src:str) -> bytes:
      calls.append(src)
      return src.encode() + b"!"
  c = Counting("test_cache_key")
  assert c.compile_cached("x") == b"x!" and c.compile_cached("x") == b"x!" and len(calls) == 1
  assert Counting("test_cache_key").compile_cached("x") == b"x!" and len(calls) == 1  # from the disk cache
  assert Counting(None).compile_cached("x") == b"x!" and len(calls) == 2  # no cachekey, no disk cache

def test_cachekey_names_compiler():
  if (cc := find_cc()) is None: pytest.skip("no C compiler")
  key = CPUCompiler().cachekey
  assert key is not None and key.startswith(f"compile_cpu_{cc[0].rsplit('/', 1)[-1]}_")

def test_gcc_fallback(monkeypatch):
  monkeypatch.delenv("CC", raising=False)
  monkeypatch.setattr(shutil, "which", lambda name: None if name == "clang" else f"/usr/bin/{name}")
  assert CPUCompiler().cc == ["gcc"]
  monkeypatch.setenv("CC", "ccache clang-17")
  assert CPUCompiler().cc == ["ccache", "clang-17"]

def test_no_compiler(monkeypatch):
  monkeypatch.delenv("CC", raising=False)
  monkeypatch.setattr(shutil, "which", lambda name: None)
  c = CPUCompiler()
  assert c.cc is None and c.cachekey is None
  with pytest.raises(CompileError, match="install clang or gcc"): c.compile(ADD)

# *** DISK ***

def test_disk(tmp_path):
  fn = tmp_path / "data.bin"
  buf = Buffer(f"disk:{fn}", 8, dtypes.int32).allocate()
  buf.copyin(memoryview(np.arange(8, dtype=np.int32)))
  v = buf.view(2, dtypes.int32, 8).ensure_allocated()
  np.testing.assert_equal(v.numpy(), [2, 3])
  assert GlobalCounters.mem_used >= 0 and fn.stat().st_size == 32
  v.deallocate()
  buf.deallocate()
  assert np.fromfile(fn, dtype=np.int32).tolist() == list(range(8))
  buf2 = Buffer(f"DISK:{fn}", 8, dtypes.int32).allocate()
  np.testing.assert_equal(buf2.numpy(), np.arange(8))

def test_disk_needs_file():
  with pytest.raises(ValueError, match="file name"): Device["DISK"]
