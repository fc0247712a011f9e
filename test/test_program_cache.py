# The program cache on disk (codegen/program.py): a kernel made in one process is a lookup in the next, keyed by everything that changes
# it; corrupt entries are rebuilt; CACHELEVEL=0 turns it off. And BEAM leaves tiny kernels to the heuristic. Counts, never times.
import json, os, pathlib, sqlite3, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, Context, Device
from tinygrad import helpers
from tinygrad.codegen import program
from tinygrad.opt import search

ROOT = pathlib.Path(__file__).resolve().parents[1]

# a child process: runs one small training-like graph (matmul, relu, sum, backward) on CPU, counts the kernels codegen lowered and
# rendered (to_program) and optimized (hand_coded_optimizations), and prints the counts and the results as JSON
CHILD = """
import json, numpy as np
from tinygrad import Tensor
from tinygrad.codegen import program
counts = {"to_program": 0, "optimize": 0}
def counted(name, fxn):
  def wrapper(*a, **kw):
    counts[name] += 1
    return fxn(*a, **kw)
  return wrapper
program.to_program = counted("to_program", program.to_program)
program.hand_coded_optimizations = counted("optimize", program.hand_coded_optimizations)
rng = np.random.default_rng(0)
x, w = Tensor(rng.standard_normal((8, 12), dtype=np.float32)), Tensor(rng.standard_normal((12, 5), dtype=np.float32), requires_grad=True)
loss = (x @ w).relu().sum()
loss.backward()
result = {"loss": loss.item(), "grad": w.grad.numpy().tolist()}
print(json.dumps({**counts, **result}))
"""

def _ref():
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((8, 12), dtype=np.float32), rng.standard_normal((12, 5), dtype=np.float32)
  y = x @ w
  return float(np.maximum(y, 0).sum()), x.T @ (y > 0).astype(np.float32)

def run_child(db:pathlib.Path, **env) -> dict:
  full = {**os.environ, "PYTHONPATH": str(ROOT), "CACHEDB": str(db), "DEV": "CPU", **{k: str(v) for k, v in env.items()}}
  for k in ("CPU", "LLVM", "GPU", "PYTHON"): full.pop(k, None)
  ret = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=300)
  assert ret.returncode == 0, ret.stderr
  out = json.loads(ret.stdout.strip().splitlines()[-1])
  loss, grad = _ref()
  np.testing.assert_allclose(out["loss"], loss, rtol=1e-4)
  np.testing.assert_allclose(np.array(out["grad"]), grad, rtol=1e-4, atol=1e-4)
  return out

def _cpu():
  try: Device["CPU"]
  except Exception as e: pytest.skip(f"CPU is not available: {e}")

def test_second_process_lowers_nothing(tmp_path):
  _cpu()
  db = tmp_path / "cache.db"
  first = run_child(db)
  assert first["to_program"] >= 2 and first["optimize"] == first["to_program"]
  second = run_child(db)
  assert second["to_program"] == 0 and second["optimize"] == 0, second
  # CACHELEVEL=0: no lookups, everything built again (and nothing written: the next process still finds the old entries)
  assert run_child(db, CACHELEVEL=0)["to_program"] == first["to_program"]

@pytest.mark.parametrize("k", ["CPU_THREADS", "NOOPT", "THREAD_MIN_WORK", "IGNORE_OOB"])
def test_changed_flag_misses(tmp_path, k):
  _cpu()
  db = tmp_path / "cache.db"
  built = run_child(db)["to_program"]
  v = 1 if k != "IGNORE_OOB" else 1 - helpers.IGNORE_OOB.value   # the test conftest sets IGNORE_OOB=0
  # at least the kernels that the flag changes are built again; under the same flag again, nothing is
  assert run_child(db, **{k: v})["to_program"] >= 1
  assert run_child(db, **{k: v})["to_program"] == 0
  assert run_child(db)["to_program"] == 0 and built >= 2

def _rows(db:pathlib.Path) -> list[tuple[str, str]]:
  conn = sqlite3.connect(db)
  tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'") if t.startswith("program_")]
  assert len(tables) == 1, tables
  return [(tables[0], k) for (k,) in conn.execute(f'SELECT key FROM "{tables[0]}"')]

@pytest.mark.parametrize("corrupt", [b"not json", b'{"sha256": "0", "body": "{}"}', None])
def test_corrupt_entry_is_rebuilt(tmp_path, corrupt):
  _cpu()
  db = tmp_path / "cache.db"
  built = run_child(db)["to_program"]
  rows = _rows(db)
  assert len(rows) == built
  conn = sqlite3.connect(db)
  for table, key in rows:
    if corrupt is None:   # a well-formed entry whose body was altered after its checksum was taken
      entry = json.loads(conn.execute(f'SELECT val FROM "{table}" WHERE key=?', (key,)).fetchone()[0])
      val = json.dumps({**entry, "body": entry["body"].replace('"src": "', '"src": "garbage ')}).encode()
    else: val = corrupt
    conn.execute(f'UPDATE "{table}" SET val=? WHERE key=?', (val, key))
  conn.commit()
  conn.close()
  assert run_child(db)["to_program"] == built   # every entry rebuilt, with the right results (run_child checks them)
  assert run_child(db)["to_program"] == 0       # and written back whole

def test_symbolic_kernels_not_stored(tmp_path, monkeypatch):
  # a kernel with variables is built in every process (its sizes are expressions): the cache keeps only plain data
  _cpu()
  from tinygrad import Variable
  from tinygrad.engine import realize
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  built = []
  real = program.to_program
  monkeypatch.setattr(program, "to_program", lambda *a, **kw: built.append(p := real(*a, **kw)) or p)
  a = Tensor.arange(10, device="CPU").reshape(10, 1).contiguous().realize()
  for _ in range(2):
    realize.method_cache.clear()   # as in a new process
    built.clear()
    assert (a.shrink(((0, Variable("n", 1, 10).bind(4)), (0, 1))) + 1).sum().item() == 10
  assert built and all(p.vars for p in built), [p.name for p in built]

def test_beam_skips_tiny_kernels(tmp_path, monkeypatch):
  _cpu()
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  searched, compiled = [], []
  real_search, real_compile = program.beam_search, search._compile_all
  monkeypatch.setattr(program, "beam_search", lambda *a, **kw: searched.append(a[2]) or real_search(*a, **kw))
  monkeypatch.setattr(search, "_compile_all", lambda kernels, *a, **kw: compiled.append(len(kernels)) or real_compile(kernels, *a, **kw))
  Tensor.manual_seed(3)
  with Context(BEAM=2, PARALLEL=0):
    x = Tensor.rand(128, 128, device="CPU").realize().numpy()
  assert searched == [] and compiled == [], "a 128x128 rand is below BEAM_MIN_WORK: no candidate is compiled"
  assert x.shape == (128, 128) and 0 <= x.min() and x.max() < 1 and 0.45 < x.mean() < 0.55
  # over the threshold (here lowered to 0), the same kernels are searched
  with Context(BEAM=2, PARALLEL=0, BEAM_MIN_WORK=0, BEAM_TIMEOUT_SEC=5):
    np.testing.assert_allclose((Tensor(x, device="CPU") * 2 + 1).numpy(), x * 2 + 1)
  assert searched == [2] and compiled and compiled[0] == 1

def test_other_library_source_misses(tmp_path, monkeypatch):
  # the key holds a hash of tinygrad's own source: code that lowers or renders differently never reuses an old entry
  _cpu()
  from tinygrad.engine import realize
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  built = []
  real = program.to_program
  monkeypatch.setattr(program, "to_program", lambda *a, **kw: built.append(1) or real(*a, **kw))
  x = np.arange(12, dtype=np.float32)
  for version, want in [("a", 1), ("a", 0), ("b", 1)]:
    realize.method_cache.clear()   # as in a new process
    monkeypatch.setattr(program, "_source_hash", version)
    built.clear()
    np.testing.assert_allclose((Tensor(x, device="CPU") * 5 - 2).numpy(), x * 5 - 2)
    assert len(built) == want, (version, built)

def test_compiles_run_ahead_once_each(tmp_path, monkeypatch):
  # run_schedule lowers every new kernel first and compiles on threads (CPU's compiler is a subprocess); each source compiles once
  _cpu()
  import threading
  from tinygrad.runtime.ops_cpu import CPUCompiler
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  threads = []
  real = CPUCompiler.compile
  monkeypatch.setattr(CPUCompiler, "compile", lambda self, src: threads.append(threading.current_thread() is threading.main_thread()) or real(self, src))
  x = np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32)
  t = Tensor(x, device="CPU")
  outs = [(t * 3.25 + 0.5).sum(0), (t - 1.75).exp2().max(1), (t * t).contiguous()]
  Tensor.realize(*outs)
  np.testing.assert_allclose(outs[0].numpy(), (x * 3.25 + 0.5).sum(0), rtol=1e-5)
  np.testing.assert_allclose(outs[1].numpy(), np.exp2(x - 1.75).max(1), rtol=1e-5)
  np.testing.assert_allclose(outs[2].numpy(), x * x, rtol=1e-6)
  assert len(threads) >= 3 and not any(threads), threads   # one compile per kernel, none on the caller's thread
