# The host CPU as the heuristics see it: vector width and registers, how many independent FMA chains keep the FMA pipes busy (measured
# with a tiny C kernel), cache sizes from sysfs, cores. Measured once per machine and cached on disk. CPU_MODEL=<profile name or a JSON
# file of MachineModel fields> poses as another machine (tests use it to run the heuristics of an AVX2 machine with one FMA pipe).
from __future__ import annotations
import ctypes, dataclasses, hashlib, json, os, pathlib, platform, subprocess, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from tinygrad.helpers import diskcache_get, diskcache_put
from tinygrad.renderer import MachineModel

KB, MB = 1 << 10, 1 << 20
PROFILES = {m.name: m for m in (
  MachineModel("avx512-2fma", simd_bytes=64, vector_regs=32, fma_chains=8, fma_gflops=140.0, l1=48*KB, l2=2*MB, l3=32*MB, cores=2),
  MachineModel("avx2-1fma", simd_bytes=32, vector_regs=16, fma_chains=4, fma_gflops=40.0, l1=32*KB, l2=256*KB, l3=8*MB, cores=2),
  MachineModel("avx2-2fma", simd_bytes=32, vector_regs=16, fma_chains=10, fma_gflops=100.0, l1=32*KB, l2=1*MB, l3=16*MB, cores=4),
  MachineModel("neon", simd_bytes=16, vector_regs=32, fma_chains=16, fma_gflops=50.0, l1=64*KB, l2=4*MB, l3=16*MB, cores=4))}

def cpu_flags() -> set[str]:
  try: return set(next((ln for ln in open("/proc/cpuinfo") if ln.startswith(("flags", "Features"))), ":").split(":", 1)[1].split())
  except OSError: return set()

def vector_flags(simd_bytes:int) -> tuple[str, ...]:
  # compilers split wide vector types into 256-bit halves on AVX-512 hosts unless told: the register tiles assume the full width
  return (f"-mprefer-vector-width={simd_bytes*8}",) if platform.machine() in ("x86_64", "AMD64") and simd_bytes >= 32 else ()

def _cache_sizes() -> dict[int, int]:
  ret: dict[int, int] = {}
  for d in pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
    try: level, kind, size = ((d/f).read_text().strip() for f in ("level", "type", "size"))
    except OSError: continue
    if kind != "Instruction" and size[:-1].isdigit(): ret[int(level)] = int(size[:-1]) * {"K": KB, "M": MB, "G": 1 << 30}.get(size[-1], 1)
  return ret

def _fma_src(simd_bytes:int, chains:int) -> str:
  # `chains` independent vector FMA chains, 4 steps each per iteration; m and c come from memory so nothing folds away
  accs = [f"a{i}" for i in range(chains)]
  step = " ".join(f"{a} = {a}*m + c;" for a in accs)
  return (f"typedef float vf __attribute__((vector_size({simd_bytes}), aligned(4)));\n"
          f"void fma{chains}(float *buf, long iters) {{ vf m = *(vf*)buf, c = *(vf*)(buf+{simd_bytes//4});\n"
          f"  vf {', '.join(f'{a} = c + {i}.0f' for i, a in enumerate(accs))};\n"
          f"  for (long i = 0; i < iters; i++) {{ {step} {step} {step} {step} }}\n  *(vf*)buf = {' + '.join(accs)};\n}}\n")

class FMAProbe:
  """A compiled FMA throughput / latency kernel for one vector width."""
  def __init__(self, cc:list[str], cflags:tuple[str, ...], simd_bytes:int, vector_regs:int):
    self.simd_bytes, self.many = simd_bytes, max(4, vector_regs - 4)
    with tempfile.TemporaryDirectory(prefix="tinygrad_fma_") as tmp:
      src = _fma_src(simd_bytes, 1) + _fma_src(simd_bytes, self.many)
      subprocess.run([*cc, *cflags, "-", "-o", f"{tmp}/fma.so"], input=src.encode(), check=True, capture_output=True, timeout=60)
      self.lib = ctypes.CDLL(f"{tmp}/fma.so")
  def seconds_per_fma(self, chains:int, iters:int, reps:int=5) -> float:
    # short runs, best of several: on a loaded machine a long run is cut by other processes' time slices
    lanes = self.simd_bytes // 4
    fxn, buf = getattr(self.lib, f"fma{chains}"), (ctypes.c_float * (2 * lanes))(*([0.999] * lanes + [1e-3] * lanes))
    fxn.argtypes = [ctypes.c_void_p, ctypes.c_long]
    best = float("inf")
    for _ in range(reps):
      st = time.perf_counter()
      fxn(buf, iters)
      best = min(best, time.perf_counter() - st)
    return best / (iters * 4 * chains)
  def gflops(self, threads:int=1, iters:int=50_000) -> float:
    """fp32 FMA peak of `threads` cores together (ctypes drops the GIL, so the threads really run at once)"""
    with ThreadPoolExecutor(threads) as pool: ts = list(pool.map(lambda _: self.seconds_per_fma(self.many, iters), range(threads)))
    return sum(2 * self.simd_bytes // 4 / t for t in ts) / 1e9

def host_model(cc:list[str]|None, cflags:tuple[str, ...]) -> MachineModel:
  if (spec := os.environ.get("CPU_MODEL", "")):
    if spec in PROFILES: return PROFILES[spec]
    if not os.path.isfile(spec): raise ValueError(f"CPU_MODEL={spec!r}: expected one of {sorted(PROFILES)} or a JSON file of MachineModel fields")
    fields = json.loads(pathlib.Path(spec).read_text())
    names = {f.name for f in dataclasses.fields(MachineModel)}
    if not isinstance(fields, dict) or (bad := set(fields) - names): raise ValueError(f"CPU_MODEL={spec!r}: unknown fields {bad}, expected {names}")
    return dataclasses.replace(PROFILES["avx2-1fma"], **{"name": pathlib.Path(spec).stem, **fields})
  flags, arm = cpu_flags(), platform.machine() in ("aarch64", "arm64")
  simd = 64 if "avx512f" in flags else 32 if "avx2" in flags else 16
  regs = 32 if "avx512f" in flags or arm else 16
  caches, cores = _cache_sizes(), os.cpu_count() or 1
  key = (platform.machine(), sorted(flags), cc, cflags, cores, sorted(caches.items()))
  if (ret := diskcache_get("cpu_model", key)) is not None: return ret
  chains, gflops = 2 * (regs // 8), 8.0 * simd / 4   # without a compiler: two pipes of latency 4 per 16 registers, ~4 GHz
  if cc is not None:
    try:
      probe = FMAProbe(cc, cflags + vector_flags(simd), simd, regs)
      lat, thr = probe.seconds_per_fma(1, 100_000), probe.seconds_per_fma(probe.many, 50_000)
      chains, gflops = max(2, min(probe.many, round(lat / thr))), 2 * simd / 4 / thr / 1e9
    except (OSError, subprocess.SubprocessError, AttributeError): pass
  isa = 'avx512' if simd == 64 else 'avx2' if simd == 32 else platform.machine()
  name = f"{isa}-{chains}chains-" + hashlib.sha256(repr(key).encode()).hexdigest()[:6]
  return diskcache_put("cpu_model", key, MachineModel(name, simd, regs, chains, round(gflops, 1), caches.get(1, 32*KB), caches.get(2, 256*KB),
                                                      caches.get(3, 8*MB), cores))
