from __future__ import annotations
import os, sys, re, time, string, functools, itertools, operator, contextlib, contextvars, tempfile, pathlib, platform, pickle, hashlib
import sqlite3, ctypes, subprocess, cProfile, pstats, gzip, shutil, http.client, urllib.request, urllib.error
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Generic, Iterable, Iterator, Sequence, TypeVar, TypeGuard, cast

T = TypeVar("T")
U = TypeVar("U")

OSX, WIN = platform.system() == "Darwin", sys.platform == "win32"
CI = os.getenv("CI", "") != ""

# ***** small utilities *****

def prod(x: Iterable[T]) -> T|int: return functools.reduce(operator.mul, x, 1)
def dedup(x: Iterable[T]) -> list[T]: return list(dict.fromkeys(x))   # keeps the first occurrence's order
def argfix(*x: Any) -> tuple:
  if x and x[0].__class__ in (tuple, list):
    if len(x) != 1: raise ValueError(f"bad arguments {x}: pass either one tuple/list or several values, not both")
    return tuple(x[0])
  return x
def argsort(x: Sequence) -> list[int]: return sorted(range(len(x)), key=x.__getitem__)
def all_same(items: Sequence) -> bool: return all(x == items[0] for x in items)
# (map over a generator: no Python frame resumed per element, and this runs for every binary op with a scalar)
def all_int(t: Sequence[Any]) -> TypeGuard[tuple[int, ...]]: return all(map(isinstance, t, itertools.repeat(int)))
def make_tuple(x: int|Sequence[int], cnt: int) -> tuple[int, ...]: return (x,)*cnt if isinstance(x, int) else tuple(x)
def flatten(l: Iterable[Iterable[T]]) -> list[T]: return [item for sublist in l for item in sublist]
def fully_flatten(l: Any) -> list:
  if hasattr(l, "__len__") and hasattr(l, "__getitem__") and not isinstance(l, (str, bytes)):
    if hasattr(l, "shape") and l.shape == (): return [l[()]]   # 0-d numpy arrays have a length-less shape
    return [x for li in l for x in fully_flatten(li)]
  return [l]
def fromimport(mod: str, frm: str) -> Any: return getattr(__import__(mod, fromlist=[frm]), frm)
def strip_parens(fst: str) -> str:
  # only strip when the first '(' closes at the very end, so "(a)+(b)" stays intact
  if not (fst.startswith("(") and fst.endswith(")")): return fst
  depth = 0
  for i, c in enumerate(fst):
    depth += (c == "(") - (c == ")")
    if depth == 0 and i != len(fst) - 1: return fst
  return fst[1:-1]
def ceildiv(num: Any, amt: Any) -> Any: return int(ret) if isinstance((ret := -(num//-amt)), float) else ret
def round_up(num: Any, amt: int) -> Any: return (num+amt-1)//amt*amt
def round_down(num: Any, amt: int) -> Any: return num - num % amt
def lo32(x: Any) -> Any: return x & 0xFFFFFFFF
def hi32(x: Any) -> Any: return x >> 32
def data64(data: Any) -> tuple[Any, Any]: return (data >> 32, data & 0xFFFFFFFF)
def data64_le(data: Any) -> tuple[Any, Any]: return (data & 0xFFFFFFFF, data >> 32)
def getbits(value: int, start: int, end: int) -> int: return (value >> start) & ((1 << (end-start+1)) - 1)
def cdiv(x: int, y: int) -> int: return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) if y != 0 else 0   # C's division: toward zero
def cmod(x: int, y: int) -> int: return x - y * cdiv(x, y)   # C's remainder: the sign of x
def is_numpy_ndarray(x: Any) -> bool: return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray"
def time_to_str(t: float, w: int = 8) -> str:   # seconds as s, ms or us, w wide
  return f"{t:{w}.2f}s " if t > 10 else f"{t*1e3:{w}.2f}ms" if t > 10e-3 else f"{t*1e6:{w}.2f}us"
def i2u(bits: int, value: int) -> int: return value if value >= 0 else (1 << bits) + value
def merge_dicts(ds: Iterable[dict[T, U]]) -> dict[T, U]:
  kvs = set((k, v) for d in ds for k, v in d.items())
  if len(keys := set(k for k, _ in kvs)) != len(kvs): raise ValueError(f"cannot merge, {kvs} contains different values for the same key")
  return {k: v for d in ds for k, v in d.items() if k in keys}
def partition(itr: Iterable[T], fxn: Callable[[T], bool]) -> tuple[list[T], list[T]]:
  ret: tuple[list[T], list[T]] = ([], [])
  for s in itr: ret[0 if fxn(s) else 1].append(s)
  return ret
def unwrap(x: T|None) -> T:
  assert x is not None, "unexpected None"
  return x
def get_single_element(x: Sequence[T]) -> T:
  assert len(x) == 1, f"expected one element, got {len(x)}: {x}"
  return x[0]
def get_child(obj: Any, key: str) -> Any:
  for k in key.split("."):
    if k.isnumeric(): obj = obj[int(k)]
    elif isinstance(obj, dict): obj = obj[k]
    else: obj = getattr(obj, k)
  return obj
def pluralize(st: str, cnt: int) -> str: return f"{cnt} {st}" + ("" if cnt == 1 else "s")
def polyN(x: T, p: Sequence[float]) -> T: return functools.reduce(lambda acc, c: acc*x+c, p, cast(Any, 0.0))  # Horner, highest degree first
def to_function_name(s: str) -> str:
  ret = "".join(c if c in (string.ascii_letters+string.digits+"_") else f"{ord(c):02X}" for c in ansistrip(s))
  return "_"+ret if ret[:1].isdigit() else ret

# ***** terminal output *****

_COLORS = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]
def colored(st: str, color: str|None, background: bool = False) -> str:
  # an upper-case color name means the bright variant
  if color is None: return st
  return f"\u001b[{10*background + 60*(color.upper() == color) + 30 + _COLORS.index(color.lower())}m{st}\u001b[0m"
def colorize_float(x: float) -> str: return colored(f"{x:7.2f}x", "green" if x < 0.75 else "red" if x > 1.15 else "yellow")
def ansistrip(s: str) -> str: return re.sub("\x1b\\[(K|.*?m)", "", s)
def ansilen(s: str) -> int: return len(ansistrip(s))
def word_wrap(x: str, wrap: int = 80) -> str:
  out: list[str] = []
  for line in x.split("\n"):
    while ansilen(line) > wrap: out, line = out + [line[:wrap]], line[wrap:]
    out.append(line)
  return "\n".join(out)

# ***** env flags *****

@functools.cache
def getenv(key: str, default: Any = 0) -> Any:
  val = os.getenv(key)
  if val is None or (val == "" and not isinstance(default, str)): return default   # `DEBUG= cmd` means unset
  if isinstance(default, bool): return val.lower() not in ("", "0", "false", "no", "off")
  return type(default)(val)

class ContextVar(Generic[T]):
  _cache: ClassVar[dict[str, ContextVar]] = {}
  value: T
  key: str
  def __new__(cls, key: str, default_value: T) -> ContextVar[T]:
    # the same key always gives the same variable, so modules can declare the flags they read
    if (ret := ContextVar._cache.get(key)) is not None: return ret
    instance = ContextVar._cache[key] = super().__new__(cls)
    instance.value, instance.key = getenv(key, default_value), key
    return instance
  def __bool__(self) -> bool: return bool(self.value)
  def __eq__(self, x: object) -> bool: return self.value == x
  def __hash__(self) -> int: return hash(self.key)
  # (no typing.cast: it is a Python call, and `DEBUG >= n` runs on hot paths)
  def __ge__(self, x: Any) -> bool: return self.value >= x  # type: ignore[operator]
  def __gt__(self, x: Any) -> bool: return self.value > x  # type: ignore[operator]
  def __le__(self, x: Any) -> bool: return self.value <= x  # type: ignore[operator]
  def __lt__(self, x: Any) -> bool: return self.value < x  # type: ignore[operator]
  def __repr__(self) -> str: return f"ContextVar({self.key!r}, {self.value!r})"

class Context(contextlib.ContextDecorator):
  def __init__(self, **kwargs: Any):
    if (unknown := [k for k in kwargs if k not in ContextVar._cache]):
      raise KeyError(f"unknown ContextVar(s) {unknown}, known: {sorted(ContextVar._cache)}")
    self.kwargs, self.stack = kwargs, cast(list[dict[str, Any]], [])   # a stack so the same Context can be re-entered
  def __enter__(self) -> Context:
    self.stack.append({k: ContextVar._cache[k].value for k in self.kwargs})
    for k, v in self.kwargs.items(): ContextVar._cache[k].value = v
    return self
  def __exit__(self, *args: Any) -> None:
    for k, v in self.stack.pop().items(): ContextVar._cache[k].value = v

DEBUG, IMAGE, BEAM, NOOPT, JIT = ContextVar("DEBUG", 0), ContextVar("IMAGE", 0), ContextVar("BEAM", 0), ContextVar("NOOPT", 0), ContextVar("JIT", 1)
JITBEAM, VIZ, PROFILE, CACHELEVEL = ContextVar("JITBEAM", 0), ContextVar("VIZ", 0), ContextVar("PROFILE", 0), ContextVar("CACHELEVEL", 2)
# BEAM search knobs (read by tinygrad/opt/search.py); here so Context() knows them before the search is imported
BEAM_UPCAST_MAX, BEAM_LOCAL_MAX = ContextVar("BEAM_UPCAST_MAX", 256), ContextVar("BEAM_LOCAL_MAX", 1024)
BEAM_MIN_PROGRESS, BEAM_TIMEOUT_SEC = ContextVar("BEAM_MIN_PROGRESS", 0.01), ContextVar("BEAM_TIMEOUT_SEC", 60.0)   # ms, s
BEAM_COMPILE_TIMEOUT, BEAM_TEST_GLOBAL = ContextVar("BEAM_COMPILE_TIMEOUT", 10), ContextVar("BEAM_TEST_GLOBAL", 65536)
BEAM_DEBUG, BEAM_CHECK, BEAM_PROGRESS = ContextVar("BEAM_DEBUG", 0), ContextVar("BEAM_CHECK", 0), ContextVar("BEAM_PROGRESS", 0)
IGNORE_BEAM_CACHE, PARALLEL = ContextVar("IGNORE_BEAM_CACHE", 0), ContextVar("PARALLEL", os.cpu_count() or 1)
TRANSCENDENTAL, AMD_LLVM, CAPTURING = ContextVar("TRANSCENDENTAL", 1), ContextVar("AMD_LLVM", 0), ContextVar("CAPTURING", 1)
SPLIT_REDUCEOPS, USE_TC, TC_OPT = ContextVar("SPLIT_REDUCEOPS", getenv("SPLIT_REDUCEOP", 1)), ContextVar("USE_TC", 1), ContextVar("TC_OPT", 0)
TC_SELECT = ContextVar("TC_SELECT", -1)
PICKLE_BUFFERS = ContextVar("PICKLE_BUFFERS", 1)
CPU_THREADS, TRACEMETA = ContextVar("CPU_THREADS", 0), ContextVar("TRACEMETA", 1)
LRU, SCHEDULE_CACHE = ContextVar("LRU", 1), ContextVar("SCHEDULE_CACHE", 1)
# matmuls with at least this many multiply-adds read B from a copy in column panels where the renderer packs_operands (schedule/packing.py)
PACKED_DOT_MIN = ContextVar("PACKED_DOT_MIN", 1 << 24)
# convolutions with at least this many multiply-adds get a weight copy with the output channels innermost (schedule/packing.py)
PACKED_CONV_MIN = ContextVar("PACKED_CONV_MIN", 1 << 24)
PACK_REUSE = ContextVar("PACK_REUSE", 1)
# where the renderer packs_operands, a conv's weight gradient sums the batch in chunks of about this many bytes of x and g (schedule/packing.py)
CONV_GRAD_CHUNK = ContextVar("CONV_GRAD_CHUNK", 1 << 19)
# kernels with at least this many loop iterations split their outermost global axis over CPU_THREADS host threads
THREAD_MIN_WORK = ContextVar("THREAD_MIN_WORK", 1 << 17)
# every flag the optimizer and codegen read: a program made under other values is another program, so these are part of the runner
# cache key (engine/realize.py) and of BEAM's disk cache key. A flag read anywhere in opt/ or codegen/ belongs here.
# BEAM searches only kernels with at least this many loop iterations: below it a kernel runs in microseconds, the search costs seconds
BEAM_MIN_WORK = ContextVar("BEAM_MIN_WORK", 1 << 16)
PROGRAM_FLAGS: tuple[ContextVar, ...] = (BEAM, NOOPT, TRANSCENDENTAL, CPU_THREADS, USE_TC, TC_SELECT, TC_OPT, THREAD_MIN_WORK, BEAM_UPCAST_MAX,
                                         BEAM_LOCAL_MAX, BEAM_MIN_WORK)
_flag_value = operator.attrgetter("value")
def program_flags() -> tuple: return tuple(map(_flag_value, PROGRAM_FLAGS))   # (in C: this is in every kernel launch's cache key)
# tinygrad's flags, accepted so its scripts run: SPLIT_REDUCEOP is SPLIT_REDUCEOPS; aranges are always fused; no winograd convs
# IGNORE_OOB=0: codegen checks every kernel's memory accesses (tinygrad/codegen/__init__.py)
IGNORE_OOB, FUSE_ARANGE, WINO = ContextVar("IGNORE_OOB", 1), ContextVar("FUSE_ARANGE", 1), ContextVar("WINO", 0)
SPLIT_REDUCEOP, TRACK_MATCH_STATS = ContextVar._cache.setdefault("SPLIT_REDUCEOP", SPLIT_REDUCEOPS), ContextVar("TRACK_MATCH_STATS", 0)

@dataclass(frozen=True)
class Metadata:
  name: str
  caller: str
  backward: bool = False
  def __hash__(self) -> int: return hash(self.name)
  def __repr__(self) -> str: return str(self) + (f" - {self.caller}" if self.caller else "")
  def __str__(self) -> str: return self.name + (" bw" if self.backward else "")
_METADATA: contextvars.ContextVar[Metadata|None] = contextvars.ContextVar("_METADATA", default=None)

# ***** timing and profiling *****

class _GlobalCounters:
  # one instance (GlobalCounters): a write to an instance attribute is a dict store, to a class attribute it also empties the class's
  # attribute cache (each kernel launch writes three of these)
  def __init__(self) -> None:
    self.global_ops, self.global_mem, self.time_sum_s, self.kernel_count = 0, 0, 0.0, 0
    self.mem_used = 0   # tracks live allocations, so reset() leaves it alone
  def reset(self) -> None: self.global_ops, self.global_mem, self.time_sum_s, self.kernel_count = 0, 0, 0.0, 0
GlobalCounters = _GlobalCounters()

class Timing(contextlib.ContextDecorator):
  def __init__(self, prefix: str = "", on_exit: Callable[[int], str]|None = None, enabled: bool = True):
    self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
  def __enter__(self) -> Timing:
    self.st = time.perf_counter_ns()
    return self
  def __exit__(self, *exc: Any) -> None:
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et*1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))

class Profiling(contextlib.ContextDecorator):
  def __init__(self, enabled: bool = True, sort: str = "cumtime", frac: float = 0.2, fn: str|None = None, ts: int = 1):
    self.enabled, self.sort, self.frac, self.fn, self.time_scale = enabled, sort, frac, fn, 1e3/ts
  def __enter__(self) -> Profiling:
    self.pr = cProfile.Profile()
    if self.enabled: self.pr.enable()
    return self
  def __exit__(self, *exc: Any) -> None:
    if not self.enabled: return
    self.pr.disable()
    if self.fn: self.pr.dump_stats(self.fn)
    stats = pstats.Stats(self.pr).strip_dirs().sort_stats(self.sort)
    for fcn in cast(Any, stats).fcn_list[0:int(len(cast(Any, stats).fcn_list)*self.frac)]:
      (_, num_calls, tottime, cumtime, callers) = cast(Any, stats).stats[fcn]
      scallers = sorted(callers.items(), key=lambda x: -x[1][2])
      print(f"n:{num_calls:8d}  tm:{tottime*self.time_scale:7.2f}ms  tot:{cumtime*self.time_scale:7.2f}ms",
            colored(f"{fcn[0]}:{fcn[1]}:{fcn[2]}".ljust(50), "yellow"),
            colored(f"<- {(scallers[0][1][2]/tottime)*100:3.0f}% {scallers[0][0][2]}", "BLACK") if scallers and tottime > 0 else "")

def cpu_time_execution(cb: Callable[[], Any], enable: bool) -> float|None:
  st = time.perf_counter() if enable else 0.0
  cb()
  return time.perf_counter() - st if enable else None

def cpu_objdump(lib: bytes, objdump_tool: str = "objdump") -> None:
  with tempfile.NamedTemporaryFile(delete=True) as f:
    pathlib.Path(f.name).write_bytes(lib)
    print(subprocess.check_output([objdump_tool, "-d", f.name]).decode("utf-8"))

# ***** ctypes helpers *****

def to_mv(ptr: int, sz: int) -> memoryview: return memoryview((ctypes.c_uint8 * sz).from_address(ptr)).cast("B")
def mv_address(mv: memoryview) -> int: return ctypes.addressof(ctypes.c_char.from_buffer(mv))
def from_mv(mv: memoryview, to_type: type[ctypes._SimpleCData] = ctypes.c_char) -> ctypes.Array:
  return ctypes.cast(ctypes.addressof(to_type.from_buffer(mv)), ctypes.POINTER(to_type * len(mv))).contents
def flat_mv(mv: memoryview) -> memoryview: return mv if len(mv) == 0 else mv.cast("B", shape=(mv.nbytes,))
def init_c_var(ctypes_var: T, creat_cb: Callable[[T], Any]) -> T: return (creat_cb(ctypes_var), ctypes_var)[1]
def init_c_struct_t(fields: tuple[tuple[str, Any], ...]) -> type[ctypes.Structure]:
  class CStruct(ctypes.Structure):
    _pack_, _fields_ = 1, fields
  return CStruct

# ***** files and caches *****

def temp(x: str, append_user: bool = False) -> str:
  return os.path.join(tempfile.gettempdir(), f"{x}.{os.getenv('USER') or os.getenv('USERNAME') or os.getuid()}" if append_user else x)

_cache_dir: str = getenv("XDG_CACHE_HOME", os.path.expanduser("~/Library/Caches" if OSX else "~/.cache"))
CACHEDB: str = getenv("CACHEDB", os.path.abspath(os.path.join(_cache_dir, "tinygrad", "cache.db")))

VERSION = 1   # bump to orphan every table written by an older cache layout
_db_connection: sqlite3.Connection|None = None
_db_key: tuple[int, str]|None = None
_db_tables: set[str] = set()

def _retry_locked(fxn: Callable[[], T]) -> T:
  # the busy timeout covers most contention, but some lock upgrades fail at once with "database is locked"
  for i in itertools.count():
    try: return fxn()
    except sqlite3.OperationalError as e:
      if "locked" not in str(e) or i >= 50: raise
      time.sleep(min(0.01 * 2**i, 0.5))
  raise RuntimeError("unreachable")

def db_connection() -> sqlite3.Connection:
  global _db_connection, _db_key
  # a connection can't cross fork, and CACHEDB may be changed (tests do), so key it on both
  if _db_connection is None or _db_key != (os.getpid(), CACHEDB):
    if CACHEDB != ":memory:": os.makedirs(os.path.dirname(CACHEDB) or ".", exist_ok=True)
    _db_connection, _db_key = sqlite3.connect(CACHEDB, timeout=30, isolation_level=None), (os.getpid(), CACHEDB)
    _db_tables.clear()
    if CACHEDB != ":memory:": _retry_locked(lambda: unwrap(_db_connection).execute("PRAGMA journal_mode=WAL"))
    if DEBUG >= 7: unwrap(_db_connection).set_trace_callback(print)
  return _db_connection

def _key_hash(key: Any) -> str:
  # dicts are sorted so the same key built in a different order hits the same row
  return hashlib.sha256(pickle.dumps(tuple(sorted(key.items())) if isinstance(key, dict) else key, protocol=4)).hexdigest()

def _table(table: str) -> str: return f"{re.sub('[^a-zA-Z0-9_]', '_', table)}_v{VERSION}"

def diskcache_get(table: str, key: Any, raw: bool = False) -> Any:
  """The value stored under key, unpickled; raw=True: the stored bytes as they are (for values put prepickled in a format of their own)."""
  if CACHELEVEL == 0: return None
  conn = db_connection()
  try: row = _retry_locked(lambda: conn.execute(f'SELECT val FROM "{_table(table)}" WHERE key=?', (_key_hash(key),)).fetchone())
  except sqlite3.OperationalError as e:
    if "no such table" in str(e): return None
    raise
  if row is None or raw: return None if row is None else row[0]
  try: return pickle.loads(row[0])
  except Exception: return None   # a stale entry that no longer unpickles is a miss, not an error

def diskcache_put(table: str, key: Any, val: Any, prepickled: bool = False) -> Any:
  if CACHELEVEL == 0: return val
  conn, tbl = db_connection(), _table(table)
  if tbl not in _db_tables:
    _retry_locked(lambda: conn.execute(f'CREATE TABLE IF NOT EXISTS "{tbl}" (key TEXT PRIMARY KEY, val BLOB)'))
    _db_tables.add(tbl)
  blob = val if prepickled else pickle.dumps(val)
  _retry_locked(lambda: conn.execute(f'INSERT OR REPLACE INTO "{tbl}" (key, val) VALUES (?, ?)', (_key_hash(key), blob)))
  return val

def diskcache_clear() -> None:
  conn = db_connection()
  for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
    _retry_locked(lambda: conn.execute(f'DROP TABLE IF EXISTS "{name}"'))
  _db_tables.clear()

def diskcache(func: Callable[..., T]) -> Callable[..., T]:
  @functools.wraps(func)
  def wrapper(*args: Any, **kwargs: Any) -> T:
    key = (func.__module__, func.__qualname__, args, tuple(sorted(kwargs.items())))
    if (ret := diskcache_get(f"cache_{func.__name__}", key)) is not None: return ret
    return diskcache_put(f"cache_{func.__name__}", key, func(*args, **kwargs))
  return wrapper

# ***** progress bar *****

class tqdm(Generic[T]):
  """A progress bar that prints tqdm's own format: "desc: 50%|█████     | 5/10 [00:01<00:01, 4.99it/s]", or without a total
  "desc: 5it [00:01, 4.99it/s]"; unit_scale gives k/M/G suffixes (and "0.00it"), like tqdm."""
  def __init__(self, iterable: Iterable[T]|None = None, desc: str = "", disable: bool = False, unit: str = "it", unit_scale: bool = False,
               total: int|None = None, rate: int = 100):
    self.iterable, self.disable, self.unit, self.unit_scale, self.rate = iterable, disable, unit, unit_scale, rate
    self.st, self.i, self.n, self.skip, self.t = time.perf_counter(), -1, 0, 1, total
    if total is None and iterable is not None and hasattr(iterable, "__len__"): self.t = len(cast(Sequence, iterable))
    self.set_description(desc)
    self.update(0)
  def __iter__(self) -> Iterator[T]:
    assert self.iterable is not None, "tqdm needs an iterable to iterate"
    try:
      for item in self.iterable:
        yield item
        self.update(1)
    finally: self.update(close=True)
  def __enter__(self) -> tqdm[T]: return self
  def __exit__(self, *exc: Any) -> None: self.update(close=True)
  def set_description(self, desc: str) -> None: self.desc = desc if not desc or desc.endswith(": ") else f"{desc}: "
  def close(self) -> None: self.update(close=True)
  @classmethod
  def write(cls, s: str, file: Any = None, end: str = "\n") -> None: print(s, end=end, file=file or sys.stdout, flush=True)  # as tqdm.write
  def _num(self, x: float) -> str:
    # tqdm's sizes: 3 significant digits and a k/M/G... suffix with unit_scale, else the plain count
    if not self.unit_scale: return str(x)
    for suffix in ["", "k", "M", "G", "T", "P", "E", "Z"]:
      if abs(x) < 999.5: return (f"{x:1.2f}" if abs(x) < 9.995 else f"{x:2.1f}" if abs(x) < 99.95 else f"{x:3.0f}") + suffix
      x /= 1000
    return f"{x:3.1f}Y"
  def format_meter(self, n: int, elapsed: float, ncols: int) -> str:
    def interval(t: float) -> str:
      return f"{int(t)//3600:d}:{int(t)//60%60:02d}:{int(t)%60:02d}" if t >= 3600 else f"{int(t)//60:02d}:{int(t)%60:02d}"
    rate = n / elapsed if elapsed else None
    # a rate below 1/s shows as seconds per unit, as tqdm does
    if rate and 1/rate > 1: rate_str = (self._num(1/rate) if self.unit_scale else f"{1/rate:5.2f}") + f"s/{self.unit}"
    else: rate_str = ((self._num(rate) if self.unit_scale else f"{rate:5.2f}") if rate else "?") + f"{self.unit}/s"
    if not self.t: return f"{self.desc}{self._num(n)}{self.unit} [{interval(elapsed)}, {rate_str}]"
    remaining = interval((self.t - n) / rate) if rate else "?"
    l_bar, r_bar = f"{self.desc}{100*n/self.t:3.0f}%|", f"| {self._num(n)}/{self._num(self.t)} [{interval(elapsed)}<{remaining}, {rate_str}]"
    width = max(1, ncols - len(l_bar) - len(r_bar))
    # unicode eighth blocks, like tqdm's bar: full blocks, then one partial block, then spaces
    full, part = divmod(int(min(n / self.t, 1) * width * 8), 8)
    return l_bar + ("█" * full + (" ▏▎▍▌▋▊▉"[part] + " " * (width - full - 1) if full < width else "")) + r_bar
  def update(self, n: int = 0, close: bool = False) -> None:
    self.n, self.i = self.n + n, self.i + 1
    if self.disable or (not close and self.i % self.skip != 0): return
    elapsed = time.perf_counter() - self.st
    # print about `rate` times a second: adapt how many updates are skipped between prints
    if self.i / elapsed > self.rate and self.i: self.skip = max(int(self.i/elapsed)//self.rate, 1)
    print(f"\r{self.format_meter(self.n, elapsed, shutil.get_terminal_size().columns)}", end="\n" if close else "", file=sys.stderr, flush=True)

class trange(tqdm[int]):
  def __init__(self, n: int, **kwargs: Any): super().__init__(iterable=range(n), total=n, **kwargs)

# ***** http *****

def fetch(url: str, name: pathlib.Path|str|None = None, subdir: str|None = None, gunzip: bool = False,
          allow_caching: bool = not getenv("DISABLE_HTTP_CACHE")) -> pathlib.Path:
  if url.startswith(("/", ".")) and not gunzip: return pathlib.Path(url)   # a local path is its own cache
  if url.startswith(("/", ".")): url = pathlib.Path(url).resolve().as_uri()
  if isinstance(name, pathlib.Path): fp = name
  else:
    fn = name or hashlib.md5(url.encode("utf-8")).hexdigest() + (".gunzip" if gunzip else "")
    fp = pathlib.Path(_cache_dir) / "tinygrad" / "downloads" / (subdir or "") / fn
  if fp.is_file() and allow_caching: return fp
  try: r = urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "tinygrad"}), timeout=getenv("FETCH_TIMEOUT", 60))
  except urllib.error.HTTPError as e: raise RuntimeError(f"could not fetch {url}: the server answered HTTP {e.code} {e.reason}") from e
  except (urllib.error.URLError, OSError) as e:
    raise RuntimeError(f"could not fetch {url}: {getattr(e, 'reason', e)} (offline, or the host is unreachable?)") from e
  fp.parent.mkdir(parents=True, exist_ok=True)
  with r:
    length = int(r.headers.get("content-length") or 0)
    # write to a temp file next to the target and rename it in place, so a reader never sees half a file
    with tempfile.NamedTemporaryFile(dir=fp.parent, delete=False) as f:
      try:
        progress: tqdm[bytes] = tqdm(total=length or None, unit="B", unit_scale=True, desc=url, disable=CI or not sys.stderr.isatty())
        try:
          while (chunk := r.read(1 << 20)):
            f.write(chunk)
            progress.update(len(chunk))
        except (http.client.HTTPException, OSError) as e: raise RuntimeError(f"fetch of {url} failed while downloading: {e!r}") from e
        progress.close()
        f.close()
        if length and (got := os.path.getsize(f.name)) != length:
          raise RuntimeError(f"fetch of {url} is incomplete: got {got} bytes, expected {length}")
        if gunzip:
          with gzip.open(f.name, "rb") as src: data = src.read()
          pathlib.Path(f.name).write_bytes(data)
        os.replace(f.name, fp)
      except BaseException:
        with contextlib.suppress(FileNotFoundError): os.unlink(f.name)
        raise
  return fp
