#!/usr/bin/env python3
"""Optimizer benchmark: GEMM, conv2d, softmax, layernorm with the heuristics and with BEAM search, against numpy and PyTorch
(threads = cores), measured side by side in one run.
Usage: python3 extra/bench/bench_opt.py [--quick] [--no-beam] [--beam N] [--gemm-only] [--single] [--breakdown] [--variants]; GEMM_SIZES=1024,2048
picks the GEMM rows; --variants adds a.T @ b, a @ b + c and a batched product at each size. --breakdown: after each GEMM row, each of the
call's kernels (B's packing copy, the GEMM) timed where it runs in the call, and what the call costs beyond them (Python, launches).
'vs torch' is the heuristics' ratio, 'BEAM vs torch' the search's, '% peak' the better of the two against this machine's FMA peak measured
at start (all cores)."""
import sys, time, os
# --single: one thread everywhere (tinygrad, numpy's BLAS, torch), timed in the calling thread's CPU time: on a machine other processes load,
# time spent waiting for a core doesn't count, so the ratios hold. Everything runs on the core with the highest measured FMA peak (a VM's cores
# can differ by a third), and the runs of each row are interleaved
SINGLE = "--single" in sys.argv
if SINGLE: os.environ.update(CPU_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
CLOCK = time.thread_time if SINGLE else time.perf_counter
import numpy as np  # noqa: E402  (the thread counts above must be set first)
from tinygrad import Tensor, Device, Context  # noqa: E402
from tinygrad.engine.realize import method_cache, lower_schedule  # noqa: E402

QUICK, NO_BEAM = "--quick" in sys.argv, "--no-beam" in sys.argv
BEAM_N = int(sys.argv[sys.argv.index("--beam")+1]) if "--beam" in sys.argv else 2
# (--single: more rounds, as the best of 5 on a machine loaded 5x over its cores still moved the ratios by 10%; REPS=n overrides)
REPS = int(os.environ.get("REPS", 3 if QUICK else 12 if SINGLE else 5))

def best_of(fxns:list, reps=REPS) -> list[float]:
  """Each function's best time of `reps` runs, the runs interleaved (round by round), so a slow spell of a loaded machine hits them all
  alike and the ratios between them hold"""
  for f in fxns: f()
  ts = [float("inf")] * len(fxns)
  for _ in range(reps):
    for i, f in enumerate(fxns):
      st = CLOCK()
      f()
      ts[i] = min(ts[i], CLOCK() - st)
  return ts

def tg(make, beam=0):
  """(a function that runs the kernels picked with the heuristics (beam=0) or BEAM=beam, time of the first run: search and compile)"""
  method_cache.clear()
  ctx = dict(BEAM=beam, IGNORE_BEAM_CACHE=1 if beam else 0)
  with Context(**ctx):
    st = time.perf_counter()
    make().realize()
    first = time.perf_counter() - st
  def run():
    # the programs are cached per flags: under the same flags this finds the kernels picked above (no second search)
    with Context(**ctx): make().realize()
  return run, first

def breakdown(make, beam, torch_fxn):
  """Each kernel of one call's schedule timed in place (run in order, as the call runs them, so each one finds the caches the one before left),
  interleaved round by round with whole calls and torch's: the best of REPS rounds each. Printed as ms and as a share of the whole call."""
  # (the flags tg() ran under: the programs it compiled, and BEAM's pick, are found again, not searched for)
  with Context(BEAM=beam, IGNORE_BEAM_CACHE=1 if beam else 0):
    eis = [ei for _, ei in lower_schedule(make().schedule())]
    kernels, whole, t_torch = [float("inf")] * len(eis), float("inf"), float("inf")
    for _ in range(REPS):
      for i, ei in enumerate(eis):
        st = CLOCK()
        ei.run(wait=True)
        kernels[i] = min(kernels[i], CLOCK() - st)
      st = CLOCK()
      make().realize()
      whole = min(whole, CLOCK() - st)
      if torch_fxn is not None:
        st = CLOCK()
        torch_fxn()
        t_torch = min(t_torch, CLOCK() - st)
  parts = [f"{ei.prg.display_name} {t*1e3:.2f} ms ({100*t/whole:.1f}%)" for ei, t in zip(eis, kernels)]
  print(f"|   {'BEAM' if beam else 'heuristics'} breakdown: {', '.join(parts)}; rest of the call {(whole-sum(kernels))*1e3:.2f} ms; "
        f"whole {whole*1e3:.2f} ms"
        + (f"; torch {t_torch*1e3:.2f} ms: the GEMM kernel alone {t_torch/kernels[-1]:.2f}x torch, the whole call {t_torch/whole:.2f}x"
           if torch_fxn is not None else ""))

def main():
  try:
    import torch
    torch.set_num_threads(1 if SINGLE else os.cpu_count() or 1)
  except ImportError: torch = None
  rng = np.random.default_rng(0)
  print(f"device {Device.DEFAULT}, {os.cpu_count()} cores, torch {torch.__version__ if torch else 'missing'}")
  # this machine's fp32 FMA peak, measured now (a loaded machine gives less): the '% peak' column is of it
  peak, machine = float("nan"), getattr(Device[Device.DEFAULT].renderer, "machine", None)
  if machine is not None:
    from tinygrad.runtime.ops_cpu import find_cc, CFLAGS
    from tinygrad.runtime.support.cpu_model import FMAProbe, vector_flags
    if (cc := find_cc()) is not None:
      probe = FMAProbe(cc, CFLAGS + vector_flags(machine.simd_bytes), machine.simd_bytes, machine.vector_regs)
      if SINGLE and hasattr(os, "sched_setaffinity"):
        # the cores of a VM differ (one whose host hyperthread sibling is busy ran FMAs at 2/3 speed): --single runs everything on the
        # fastest one, so every row and every column of the table runs on the same core
        speed = {}
        for cpu in sorted(os.sched_getaffinity(0)):
          os.sched_setaffinity(0, {cpu})
          speed[cpu] = max(probe.gflops(1) for _ in range(3))
        os.sched_setaffinity(0, {(core := max(speed, key=lambda c: speed[c]))})
        print(f"pinned to core {core} (FMA GFLOP/s per core: {', '.join(f'{c}: {g:.0f}' for c, g in speed.items())})")
      peak = max(probe.gflops(1 if SINGLE else os.cpu_count() or 1) for _ in range(3))
      print(f"measured FMA peak: {max(probe.gflops(1) for _ in range(3)):.0f} GFLOP/s one core, "
            f"{peak:.0f} GFLOP/s {'one core (--single)' if SINGLE else 'all cores'}")
  print(f"machine model: {machine}")
  print(f"| {'case':28s} | {'tinygrad':>9s} | {f'BEAM={BEAM_N}':>9s} | {'search s':>8s} | {'numpy':>9s} | {'torch':>9s} | {'vs torch':>8s} | "
        f"{'BEAM vs torch':>13s} | {'% peak':>6s} |")
  print("|" + "|".join("-"*(w+2) for w in (28, 9, 9, 8, 9, 9, 8, 13, 6)) + "|")
  def report(name, unit_work, mk_tg, np_fxn, torch_fxn, unit="GFLOP/s"):
    run_h, _ = tg(mk_tg)
    run_b, search = (None, float("nan")) if NO_BEAM else tg(mk_tg, BEAM_N)
    fxns = [run_h, run_b, np_fxn, torch_fxn if torch else None]
    got = iter(best_of([f for f in fxns if f is not None]))
    t_h, t_b, t_np, t_t = (next(got) if f is not None else float("nan") for f in fxns)
    g = lambda t: unit_work / t / 1e9  # noqa: E731
    pct = f"{100*g(min(t_h, t_b) if not NO_BEAM else t_h)/peak:5.0f}%" if unit == "GFLOP/s" and peak == peak else "      "
    print(f"| {name:28s} | {g(t_h):9.1f} | {g(t_b):9.1f} | {search:8.1f} | {g(t_np):9.1f} | {g(t_t):9.1f} | {t_t/t_h:7.2f}x | {t_t/t_b:12.2f}x | "
          f"{pct} |  {unit}")
    if "--breakdown" in sys.argv and name.startswith("gemm"):
      for beam in (0,) + (() if NO_BEAM else (BEAM_N,)): breakdown(mk_tg, beam, torch_fxn if torch else None)
  for N in ((256, 512) if QUICK else tuple(int(x) for x in os.environ.get("GEMM_SIZES", "256,512,1024,2048").split(","))):
    an, bn = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
    a, b = Tensor(an).realize(), Tensor(bn).realize()
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-3, atol=1e-3)
    at, bt = (torch.from_numpy(an), torch.from_numpy(bn)) if torch else (None, None)
    report(f"gemm {N} fp32", 2*N**3, lambda: a @ b, lambda: an @ bn, (lambda: at @ bt) if torch else None)
    # the same with B counted as written before each call (a new B every call, as in training): its packed copy (schedule/packing.py),
    # otherwise reused while B is unchanged (run_schedule), is made again each time
    def fresh_b(): b.uop.buffer.written(); return a @ b
    report(f"gemm {N} fp32, B written", 2*N**3, fresh_b, lambda: an @ bn, (lambda: at @ bt) if torch else None)
    if "--variants" in sys.argv:
      # the same sizes read other ways: A transposed (a weight gradient's x.T @ g), a residual added to the sums, a batch of 8 products of
      # half the size (as many flops)
      cn = rng.standard_normal((N, N), dtype=np.float32)
      c, ct = Tensor(cn).realize(), torch.from_numpy(cn) if torch else None
      report(f"gemm {N} a.T @ b", 2*N**3, lambda: a.T @ b, lambda: an.T @ bn, (lambda: at.T @ bt) if torch else None)
      report(f"gemm {N} a @ b + c", 2*N**3, lambda: a @ b + c, lambda: an @ bn + cn, (lambda: at @ bt + ct) if torch else None)
      xn, yn = (rng.standard_normal((8, N//2, N//2), dtype=np.float32) for _ in range(2))
      x, y = Tensor(xn).realize(), Tensor(yn).realize()
      xt, yt = (torch.from_numpy(xn), torch.from_numpy(yn)) if torch else (None, None)
      report(f"bmm 8x{N//2} fp32", 2*N**3, lambda: x @ y, lambda: xn @ yn, (lambda: xt @ yt) if torch else None)
  if "--gemm-only" in sys.argv: return
  if hasattr(Tensor, "conv2d"):
    B, C, H = (8, 64, 32) if QUICK else (32, 64, 32)
    xn, wn = rng.standard_normal((B, C, H, H), dtype=np.float32), rng.standard_normal((C, C, 3, 3), dtype=np.float32)
    x, w = Tensor(xn).realize(), Tensor(wn).realize()
    xt, wt = (torch.from_numpy(xn), torch.from_numpy(wn)) if torch else (None, None)
    flops = 2 * B * C * C * 9 * (H-2) * (H-2)
    report(f"conv2d b{B} {C}->{C} 3x3 {H}x{H}", flops, lambda: x.conv2d(w), None, (lambda: torch.nn.functional.conv2d(xt, wt)) if torch else None)
  R, D = (1024, 1024) if QUICK else (4096, 1024)
  sn = rng.standard_normal((R, D), dtype=np.float32)
  s = Tensor(sn).realize()
  st_ = torch.from_numpy(sn) if torch else None
  def np_softmax():
    e = np.exp(sn - sn.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
  report(f"softmax {R}x{D}", R*D*4*2, lambda: s.softmax(1) if hasattr(s, "softmax") else (s - s.max(1, keepdim=True)).exp(), np_softmax,
         (lambda: torch.softmax(st_, 1)) if torch else None, unit="GB/s")
  def np_layernorm():
    m = sn.mean(axis=1, keepdims=True)
    return (sn - m) / np.sqrt(((sn - m)**2).mean(axis=1, keepdims=True) + 1e-5)
  def tg_layernorm():
    m = s.mean(1, keepdim=True)
    return (s - m) * ((s - m).square().mean(1, keepdim=True) + 1e-5).rsqrt()
  report(f"layernorm {R}x{D}", R*D*4*2, tg_layernorm, np_layernorm,
         (lambda: torch.nn.functional.layer_norm(st_, (D,))) if torch else None, unit="GB/s")

if __name__ == "__main__": main()
