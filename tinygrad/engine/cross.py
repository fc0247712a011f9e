"""Cross-compiling while running: with CROSS_COMPILE=CUDA:sm_80,PTX:sm_90 (targets from runtime/support/targets.py), every kernel the engine
lowers for a device is also optimized, rendered and compiled for each target, and nothing of that runs. Each result is one JSON line in the
file CROSS_COMPILE_LOG names (many test processes may append to it); summarize() counts them per target and groups failures by reason.
`python -m tinygrad.device --compile TARGETS` runs the op suite this way and prints the summary."""
from __future__ import annotations
import hashlib, json, os, pathlib, re, subprocess, sys, tempfile, time
from collections import defaultdict
from tinygrad.uop.ops import UOp, Ops
from tinygrad.device import Compiler
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context, getenv
from tinygrad.renderer import Renderer, ProgramSpec
from tinygrad.codegen.program import get_program
from tinygrad.runtime.support.targets import parse_targets

_made: dict[tuple[str, str], tuple[Renderer, Compiler]|str] = {}
_seen: set[tuple[str, str, UOp]] = set()
_rendered: dict[tuple, ProgramSpec] = {}
_compiled_by: dict[tuple[str, str], str] = {}          # (target, source) -> the arch that compiled it first
_sampled: set[tuple[str, str, str, frozenset]] = set()  # (target, arch, test, dtypes) a later arch compiled a shared source for

def reason_of(e:Exception) -> str:
  """One line that groups failures of one cause: the compiler's first error line without file names, line numbers or kernel names."""
  lines = str(e).split("\nsource:\n")[0].splitlines()
  line = next((x for x in lines[1:] if re.search(r"error", x, re.I)), lines[0] if lines else "")
  line = re.sub(r"\S*(kernel\.ptx|<kernel>\.cu)\S*|line \d+;?|\(\d+\)", "", line)
  return f"{type(e).__name__}: {' '.join(re.sub(r'[rE]_[0-9_n]+', 'K', line).split())}"[:200]

def cross_compile(ast:UOp, spec:str, log:str) -> None:
  for target, arch in parse_targets(spec):
    if (target.name, arch, ast) in _seen: continue
    _seen.add((target.name, arch, ast))
    if (made := _made.get((target.name, arch))) is None:
      try: made = _made[(target.name, arch)] = (target.renderer(arch), target.compiler(arch))
      except Exception as e: made = _made[(target.name, arch)] = f"{type(e).__name__}: {e}".splitlines()[0]
    rec: dict = {"target": f"{target.name}:{arch}", "kernel": hashlib.sha256(str(ast).encode()).hexdigest()[:16]}
    st = time.perf_counter()
    try:
      if isinstance(made, str): raise RuntimeError(made)
      renderer, compiler = made
      # a kernel of a dtype the target doesn't compute (double on METAL) is not for it: counted as skipped, not as a failure
      dts = {u.dtype.base.scalar() for u in ast.toposort()} - {dtypes.void}
      if (bad := sorted(str(d) for d in dts if not renderer.supports_dtype(d))):
        rec["name"], rec["skipped"] = ast.arg.name if getattr(ast.arg, "name", None) else "kernel", f"{target.name} has no {', '.join(bad)}"
        _write(log, rec)
        continue
      # the target's own heuristics pick the opts (its locals, tensor cores, upcasts); BEAM would need the hardware to time on
      # archs of one renderer class render the same source (the compiler sets the arch: PTX's .target, LLVM's target cpu) unless
      # their tensor cores (whole: MFMA and WMMA share a name) differ on a reduce of their input dtype, or their fp8 conversions on an
      # fp8 kernel: it is rendered once
      tcs = tuple(tc for tc in renderer.tensor_cores if tc.dtype_in in dts) if any(u.op is Ops.REDUCE_AXIS for u in ast.toposort()) else ()
      rkey = (type(renderer), tcs, getattr(renderer, "fp8_cvt", None) if dts & set(dtypes.fp8s) else None, ast)
      if (prg := _rendered.get(rkey)) is None:
        with Context(BEAM=0): prg = _rendered[rkey] = get_program(ast, renderer)
      rec |= {"name": prg.name, "kernel": hashlib.sha256(prg.src.encode()).hexdigest()[:16]}
      # CROSS_ARCH_SAMPLE=1: a source an earlier arch of the target compiled already (one IR or PTX, the compiler sets the arch) is compiled
      # for this arch once per test and dtype set, so every op family and dtype still reaches each arch's backend; what is the arch's own
      # (its tensor cores, its fp8 conversions) is always compiled
      first = _compiled_by.setdefault((target.name, prg.src), arch)
      sample = (target.name, arch, os.environ.get("PYTEST_CURRENT_TEST", "").split("[")[0].split(" ")[0], frozenset(dts))
      if first != arch and getenv("CROSS_ARCH_SAMPLE") and sample in _sampled:
        rec["shared"] = first
        _write(log, rec)
        continue
      _sampled.add(sample)
      rec["bytes"] = len(compiler.compile_cached(prg.src))
      rec["s"] = round(time.perf_counter() - st, 4)   # rendering (the first arch of a source) and compiling
    except Exception as e:
      rec |= {"error": reason_of(e), "detail": str(e)[:4000]}
      if getenv("CROSS_COMPILE_RAISE"): raise
    _write(log, rec)

def _write(log:str, rec:dict) -> None:
  # a log that can't be written loses the record, never the test run
  try:
    with open(log, "a") as f: f.write(json.dumps(rec) + "\n")
  except OSError as e: print(f"CROSS_COMPILE: can't write {log}: {e}")

def summarize(log:str) -> tuple[str, int]:
  """The summary text and the number of distinct kernels that failed, over every process that wrote to log."""
  results: dict[str, dict[str, dict]] = defaultdict(dict)
  if os.path.exists(log):
    for line in open(log):
      try: rec = json.loads(line)
      except ValueError: continue
      # a kernel one process compiled and another left to its earlier arch counts as compiled
      if "shared" in results[rec["target"]].setdefault(rec["kernel"], rec): results[rec["target"]][rec["kernel"]] = rec
  out, failed = ["target          kernels  compiled  failed  skipped (dtype the target lacks)  shared (an earlier arch compiled it)  seconds"], 0
  for target, recs in sorted(results.items()):
    bad, skipped = [r for r in recs.values() if "error" in r], [r for r in recs.values() if "skipped" in r]
    shared = sum("shared" in r for r in recs.values())
    failed += len(bad)
    secs = sum(r.get("s", 0) for r in recs.values())
    out.append(f"{target:15s} {len(recs):7d}  {len(recs)-len(bad)-len(skipped)-shared:8d}  {len(bad):6d}  {len(skipped):7d}{shared:33d}{secs:45.0f}")
  for target, recs in sorted(results.items()):
    by_reason: dict[str, list[dict]] = defaultdict(list)
    for r in recs.values():
      if "error" in r: by_reason[r["error"]].append(r)
    for reason, rs in sorted(by_reason.items(), key=lambda x: -len(x[1])):
      out.append(f"FAIL {target} x{len(rs)} {reason}  (e.g. {rs[0].get('name', rs[0]['kernel'])})")
  return "\n".join(out), failed

def op_suite(every:int) -> list[str]:
  """pytest arguments for the op suite (test/test_tensor_*.py) on the host's default device; every > 1: a representative subset, the first of
  each test's parametrizations and every `every`-th after it, so each op family, dtype and shape a test names is still there."""
  tests = sorted(str(p) for p in (pathlib.Path(__file__).parents[2]/"test").glob("test_tensor_*.py"))
  # the device-parametrized tests make the same kernels on every device: one device's run is enough
  args = [*tests, "-k", "not PYTHON and not LLVM and not GPU and not REMOTE"]
  if every <= 1: return args
  got = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args], capture_output=True, text=True)
  seen: dict[str, int] = defaultdict(int)
  out = []
  for test_id in (x for x in got.stdout.splitlines() if "::" in x):
    if seen[fn := test_id.split("[")[0]] % every == 0: out.append(test_id)
    seen[fn] += 1
  return out

def main(argv:list[str]) -> int:
  if not argv: raise SystemExit("usage: python -m tinygrad.device --compile TARGET[:ARCH][,...] [pytest args]  (CROSS_SUBSET=n: a subset)")
  parse_targets(argv[0])   # an unknown target is refused before the tests start
  args = argv[1:] or ["-n", str(min(4, os.cpu_count() or 1)), *op_suite(subset := getenv("CROSS_SUBSET", 0))]
  # the representative subset samples the later archs of a target too (CROSS_ARCH_SAMPLE, in cross_compile) unless told otherwise
  sample = {"CROSS_ARCH_SAMPLE": os.environ.get("CROSS_ARCH_SAMPLE", "1" if not argv[1:] and subset > 1 else "0")}
  with tempfile.TemporaryDirectory(prefix="tinygrad_cross_") as tmp:
    log = os.path.join(tmp, "cross.jsonl")
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                        env={**os.environ, "CROSS_COMPILE": argv[0], "CROSS_COMPILE_LOG": log, **sample}, stdout=subprocess.DEVNULL).returncode
    text, failed = summarize(log)
  print(f"op suite: pytest exit code {rc}\n{text}")
  return 1 if failed or rc not in (0, 1) else 0
