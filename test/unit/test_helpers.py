import ctypes, gzip, http.server, math, multiprocessing, os, pathlib, pickle, sqlite3, threading
import pytest
from tinygrad import helpers
from tinygrad.helpers import getenv, ContextVar, Context, DEBUG, BEAM, prod, dedup, argfix, argsort, all_same, all_int, colored, colorize_float, ansistrip
from tinygrad.helpers import ansilen, make_tuple, flatten, fully_flatten, fromimport, strip_parens, ceildiv, round_up, lo32, hi32, data64, data64_le
from tinygrad.helpers import merge_dicts, partition, unwrap, get_single_element, get_child, word_wrap, to_function_name, pluralize, polyN, getbits, i2u
from tinygrad.helpers import to_mv, mv_address, from_mv, init_c_var, init_c_struct_t, cpu_time_execution, Timing, Profiling, GlobalCounters, tqdm, trange
from tinygrad.helpers import temp, diskcache_get, diskcache_put, diskcache_clear, diskcache, fetch

class TestGetenv:
  def test_types(self, monkeypatch):
    getenv.cache_clear()
    monkeypatch.setenv("TG_TEST_INT", "3")
    monkeypatch.setenv("TG_TEST_STR", "abc")
    monkeypatch.setenv("TG_TEST_FLOAT", "2.5")
    monkeypatch.setenv("TG_TEST_EMPTY", "")
    monkeypatch.setenv("TG_TEST_BOOL", "0")
    assert getenv("TG_TEST_INT") == 3 and getenv("TG_TEST_INT", 0) == 3
    assert getenv("TG_TEST_STR", "") == "abc" and getenv("TG_TEST_FLOAT", 0.0) == 2.5
    assert getenv("TG_TEST_MISSING") == 0 and getenv("TG_TEST_MISSING", "x") == "x"
    assert getenv("TG_TEST_EMPTY", 7) == 7 and getenv("TG_TEST_EMPTY", "d") == ""
    assert getenv("TG_TEST_BOOL", True) is False
    getenv.cache_clear()

  def test_cached(self, monkeypatch):
    getenv.cache_clear()
    monkeypatch.setenv("TG_TEST_CACHED", "1")
    assert getenv("TG_TEST_CACHED") == 1
    monkeypatch.setenv("TG_TEST_CACHED", "2")
    assert getenv("TG_TEST_CACHED") == 1   # read once, like tinygrad
    getenv.cache_clear()
    assert getenv("TG_TEST_CACHED") == 2
    getenv.cache_clear()

class TestContextVar:
  def test_compare(self):
    v = ContextVar("TG_TEST_VAR", 2)
    assert v == 2 and v >= 2 and v > 1 and v <= 2 and v < 3 and bool(v) and v.value == 2 and v.key == "TG_TEST_VAR"
    assert ContextVar("TG_TEST_VAR", 5) is v and ContextVar._cache["TG_TEST_VAR"] is v
    assert not ContextVar("TG_TEST_ZERO", 0)

  def test_context_restores(self):
    old_debug, old_beam = DEBUG.value, BEAM.value
    with Context(DEBUG=5, BEAM=3):
      assert DEBUG == 5 and BEAM.value == 3
      with Context(DEBUG=1): assert DEBUG == 1
      assert DEBUG == 5
    assert DEBUG.value == old_debug and BEAM.value == old_beam

  def test_context_restores_on_exception(self):
    old = DEBUG.value
    with pytest.raises(ZeroDivisionError):
      with Context(DEBUG=4): _ = 1 / 0
    assert DEBUG.value == old

  def test_context_decorator(self):
    old = DEBUG.value
    @Context(DEBUG=6)
    def f(depth): return DEBUG.value if depth == 0 else f(depth - 1)   # re-entering the same Context must still restore
    assert f(3) == 6 and DEBUG.value == old

  def test_unknown(self):
    with pytest.raises(KeyError, match="NOT_A_FLAG"): Context(NOT_A_FLAG=1)

class TestUtils:
  def test_prod(self):
    assert prod([]) == 1 and prod((2, 3, 4)) == 24 and prod([2.5, 2]) == 5.0
    class Sym:
      def __init__(self, s): self.s = s
      def __mul__(self, o): return Sym(f"{self.s}*{o.s if isinstance(o, Sym) else o}")
      def __rmul__(self, o): return Sym(f"{o}*{self.s}")
    assert prod([Sym("a"), Sym("b")]).s == "1*a*b"

  def test_seq_helpers(self):
    assert dedup([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert argfix(1, 2) == (1, 2) and argfix((1, 2)) == (1, 2) and argfix([3]) == (3,) and argfix() == ()
    with pytest.raises(ValueError): argfix((1, 2), 3)
    assert argsort([3, 1, 2]) == [1, 2, 0]
    assert all_same([1, 1, 1]) and not all_same([1, 2]) and all_same([])
    assert all_int((1, 2)) and not all_int((1, 2.0))
    assert make_tuple(3, 2) == (3, 3) and make_tuple([1, 2], 2) == (1, 2)
    assert flatten([[1, 2], [3], []]) == [1, 2, 3]
    assert fully_flatten([[1, [2, 3]], 4, [[[5]]]]) == [1, 2, 3, 4, 5] and fully_flatten("ab") == ["ab"]
    np = pytest.importorskip("numpy")
    assert fully_flatten(np.arange(6).reshape(2, 3)) == [0, 1, 2, 3, 4, 5] and fully_flatten(np.array(3.0)) == [3.0]
    assert merge_dicts([{"a": 1}, {"b": 2}, {"a": 1}]) == {"a": 1, "b": 2}
    with pytest.raises(ValueError): merge_dicts([{"a": 1}, {"a": 2}])
    assert partition(range(6), lambda x: x % 2 == 0) == ([0, 2, 4], [1, 3, 5])
    assert unwrap(0) == 0
    with pytest.raises(AssertionError): unwrap(None)
    assert get_single_element([7]) == 7
    with pytest.raises(AssertionError): get_single_element([1, 2])

  def test_math(self):
    assert ceildiv(7, 2) == 4 and ceildiv(8, 2) == 4 and ceildiv(-7, 2) == -3 and ceildiv(7.0, 2) == 4 and isinstance(ceildiv(7.0, 2), int)
    assert round_up(5, 4) == 8 and round_up(8, 4) == 8 and round_up(0, 4) == 0
    assert lo32(0x123456789) == 0x23456789 and hi32(0x123456789) == 1
    assert data64(0x1_0000_0002) == (1, 2) and data64_le(0x1_0000_0002) == (2, 1)
    assert getbits(0b101100, 2, 3) == 0b11 and i2u(8, -1) == 255 and i2u(8, 5) == 5
    assert polyN(2.0, [1.0, 0.0, -3.0]) == 1.0 and polyN(0.5, []) == 0.0   # 2^2 - 3, highest degree first
    assert math.isclose(polyN(3.0, [2.0, 1.0]), 7.0)

  def test_strings(self):
    assert strip_parens("(a+b)") == "a+b" and strip_parens("(a)+(b)") == "(a)+(b)" and strip_parens("((a))") == "(a)" and strip_parens("a") == "a"
    s = colored("hi", "red")
    assert s == "\x1b[31mhi\x1b[0m" and colored("hi", "RED") == "\x1b[91mhi\x1b[0m" and colored("hi", "red", background=True) == "\x1b[41mhi\x1b[0m"
    assert colored("hi", None) == "hi" and ansistrip(s) == "hi" and ansilen(s) == 2 and ansistrip(colorize_float(0.5)).strip() == "0.50x"
    assert to_function_name("r_4_4") == "r_4_4" and to_function_name("a.b c") == "a2Eb20c" and to_function_name(colored("k", "green")) == "k"
    assert to_function_name("4x").startswith("_") and to_function_name("4x").isidentifier()
    assert pluralize("kernel", 1) == "1 kernel" and pluralize("kernel", 3) == "3 kernels"
    assert word_wrap("a" * 10, 4) == "aaaa\naaaa\naa" and word_wrap("ab\ncd", 4) == "ab\ncd"

  def test_get_child_fromimport(self):
    obj = {"layers": [{"w": 1}, type("L", (), {"bias": 5})()]}
    assert get_child(obj, "layers.0.w") == 1 and get_child(obj, "layers.1.bias") == 5
    assert fromimport("os.path", "join") is os.path.join

  def test_ctypes_helpers(self):
    buf = bytearray(b"hello world")
    addr = mv_address(memoryview(buf))
    mv = to_mv(addr, len(buf))
    assert bytes(mv) == b"hello world"
    mv[0] = ord("j")
    assert buf[:5] == b"jello"
    arr = from_mv(memoryview(buf))
    assert bytes(arr)[:5] == b"jello" and ctypes.addressof(arr) == addr
    v = init_c_var(ctypes.c_int(0), lambda x: setattr(x, "value", 42))
    assert v.value == 42
    S = init_c_struct_t((("a", ctypes.c_uint8), ("b", ctypes.c_uint32)))
    assert ctypes.sizeof(S) == 5   # packed
    assert cpu_time_execution(lambda: None, True) >= 0 and cpu_time_execution(lambda: None, False) is None

  def test_timing_profiling_counters(self, capsys):
    with Timing("x", enabled=False): pass
    assert capsys.readouterr().out == ""
    with Profiling(enabled=False): pass
    GlobalCounters.global_ops, GlobalCounters.kernel_count, GlobalCounters.mem_used = 10, 2, 100
    GlobalCounters.reset()
    assert GlobalCounters.global_ops == 0 and GlobalCounters.kernel_count == 0 and GlobalCounters.time_sum_s == 0 and GlobalCounters.global_mem == 0
    assert GlobalCounters.mem_used == 100   # live memory is not a counter of the last run
    GlobalCounters.mem_used = 0

  def test_timing_output(self, capsys):
    with Timing("took "): pass
    out = capsys.readouterr().out
    assert out.startswith("took ") and out.strip().endswith("ms")

  def test_tqdm(self, capsys):
    assert list(tqdm([1, 2, 3], desc="x")) == [1, 2, 3]
    assert list(trange(5)) == list(range(5))
    err = capsys.readouterr().err
    assert "x: 100%" in err and "5/5" in err
    t = tqdm(total=10, desc="bytes", unit="B", unit_scale=True)
    t.update(4)
    t.set_description("renamed")
    t.update(6, close=True)
    assert "renamed: 100%" in capsys.readouterr().err
    assert list(tqdm(range(3), disable=True)) == [0, 1, 2] and capsys.readouterr().err == ""

  def test_temp(self):
    assert temp("abc").endswith("abc") and os.path.isabs(temp("abc")) and temp("abc", append_user=True).startswith(temp("abc") + ".")

# ***** disk cache *****

@pytest.fixture
def cachedb(tmp_path, monkeypatch):
  db = str(tmp_path / "cache.db")
  monkeypatch.setattr(helpers, "CACHEDB", db)
  monkeypatch.setenv("CACHEDB", db)
  yield db

def _writer(args):
  # runs in a fresh (spawned) process: CACHEDB comes from the environment
  wid, n = args
  for i in range(n): diskcache_put("concurrent", f"k{wid}_{i}", {"wid": wid, "i": i})
  for i in range(n): assert diskcache_get("concurrent", f"k{wid}_{i}") == {"wid": wid, "i": i}
  diskcache_put("concurrent", "shared", wid)
  return wid

@diskcache
def _square(x): return x * x

class TestDiskCache:
  def test_roundtrip(self, cachedb):
    assert diskcache_get("t", "missing") is None
    assert diskcache_put("t", "k", [1, 2, 3]) == [1, 2, 3]
    assert diskcache_get("t", "k") == [1, 2, 3] and diskcache_get("other", "k") is None
    diskcache_put("t", {"a": 1, "b": "x"}, "dictkey")
    assert diskcache_get("t", {"b": "x", "a": 1}) == "dictkey"   # key order doesn't matter
    diskcache_put("t", "pre", pickle.dumps((1, 2)), prepickled=True)
    assert diskcache_get("t", "pre") == (1, 2)
    diskcache_put("t", "k", "new")
    assert diskcache_get("t", "k") == "new"
    assert os.path.isfile(cachedb)
    diskcache_clear()
    assert diskcache_get("t", "k") is None

  def test_disabled(self, cachedb):
    with Context(CACHELEVEL=0):
      assert diskcache_put("t", "k", 1) == 1 and diskcache_get("t", "k") is None
    assert diskcache_get("t", "k") is None

  def test_decorator(self, cachedb):
    assert _square(4) == 16 and diskcache_get("cache__square", (_square.__module__, "_square", (4,), ())) == 16 and _square(4) == 16

  def test_stale_entry_is_a_miss(self, cachedb):
    diskcache_put("t", "k", b"\x80not a pickle", prepickled=True)
    assert diskcache_get("t", "k") is None

  def test_concurrent_processes(self, cachedb):
    n = 200
    with multiprocessing.get_context("spawn").Pool(2) as pool: assert sorted(pool.map(_writer, [(0, n), (1, n)])) == [0, 1]
    for wid in range(2):
      for i in range(n): assert diskcache_get("concurrent", f"k{wid}_{i}") == {"wid": wid, "i": i}
    assert diskcache_get("concurrent", "shared") in (0, 1)
    assert sqlite3.connect(cachedb).execute("PRAGMA journal_mode").fetchone()[0] == "wal"

# ***** fetch *****

class _Handler(http.server.BaseHTTPRequestHandler):
  files: dict[str, bytes] = {}
  def do_GET(self):
    if self.path == "/short":   # promises more than it sends
      self.send_response(200)
      self.send_header("Content-Length", "1000")
      self.end_headers()
      self.wfile.write(b"x" * 10)
      return
    if self.path not in self.files:
      self.send_error(404)
      return
    self.send_response(200)
    self.send_header("Content-Length", str(len(self.files[self.path])))
    self.end_headers()
    self.wfile.write(self.files[self.path])
  def log_message(self, *args): pass

@pytest.fixture
def server():
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
  thread = threading.Thread(target=srv.serve_forever, daemon=True)
  thread.start()
  yield f"http://127.0.0.1:{srv.server_address[1]}", srv
  srv.shutdown()
  srv.server_close()

@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  monkeypatch.setattr(helpers, "_cache_dir", str(tmp_path / "cache"))
  yield tmp_path / "cache"

class TestFetch:
  def test_http(self, server, cache_dir):
    url, srv = server
    data = os.urandom(3 << 20)   # more than one read chunk
    _Handler.files["/blob"] = data
    fp = fetch(url + "/blob", name="blob.bin", subdir="sub")
    assert fp == cache_dir / "tinygrad" / "downloads" / "sub" / "blob.bin" and fp.read_bytes() == data
    _Handler.files["/blob"] = b"changed"
    assert fetch(url + "/blob", name="blob.bin", subdir="sub").read_bytes() == data   # cached
    assert fetch(url + "/blob", name="blob.bin", subdir="sub", allow_caching=False).read_bytes() == b"changed"
    assert list(fp.parent.iterdir()) == [fp]   # no temp files left behind

  def test_http_default_name_and_gunzip(self, server, cache_dir):
    url, _ = server
    _Handler.files["/x.gz"] = gzip.compress(b"hello gzip")
    fp = fetch(url + "/x.gz", gunzip=True)
    assert fp.read_bytes() == b"hello gzip" and fp.parent == cache_dir / "tinygrad" / "downloads"

  def test_http_size_mismatch(self, server, cache_dir):
    url, _ = server
    with pytest.raises(RuntimeError, match="short"): fetch(url + "/short", name="short")
    assert not (cache_dir / "tinygrad" / "downloads" / "short").exists()
    assert list((cache_dir / "tinygrad" / "downloads").iterdir()) == []

  def test_http_404(self, server, cache_dir):
    url, _ = server
    with pytest.raises(RuntimeError, match="404"): fetch(url + "/nope")

  def test_file_url_and_path(self, tmp_path, cache_dir):
    src = tmp_path / "data.bin"
    src.write_bytes(b"local data")
    assert fetch(src.as_uri(), name="d").read_bytes() == b"local data"
    assert fetch(str(src)) == src
    gz = tmp_path / "data.gz"
    gz.write_bytes(gzip.compress(b"zipped"))
    assert fetch(str(gz), gunzip=True).read_bytes() == b"zipped"
    with pytest.raises(RuntimeError, match="could not fetch"): fetch((tmp_path / "missing").as_uri())

  def test_unreachable(self, cache_dir):
    with pytest.raises(RuntimeError, match=r"could not fetch http://127\.0\.0\.1:1/x"): fetch("http://127.0.0.1:1/x")

def test_imports_stay_stdlib():
  # the library must import with the standard library alone
  import subprocess, sys
  code = "import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None; import tinygrad.helpers, tinygrad.dtype"
  ret = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=pathlib.Path(__file__).resolve().parents[2])
  assert ret.returncode == 0, ret.stderr
