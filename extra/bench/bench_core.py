#!/usr/bin/env python3
"""First-light benchmark: this library against numpy (and torch when installed) in one run, on the default device.
Usage: python3 extra/bench/bench_core.py [--quick] [--elementwise] [--torch-compile] [--one-thread] [--e2e]
  --elementwise: only the elementwise table; --torch-compile: add torch.compile (Inductor) for the fused rows, also to --one-thread's
    gelu(x)*2+1 (its first compile is slow)
  --one-thread: one thread on every side, timed as process CPU time (fair on a loaded machine): each row end to end (build the graph,
    schedule, run, as a user calls it) and kernels only, against torch eager (numpy for matmul), and the per-call cost of small graphs
  --e2e: only GEMM 256 and 512 end to end against numpy (a new graph each call, .realize() and .numpy()), and the Python around a kernel
    (with --one-thread: one thread on every side, timed as process CPU time)
The machine's FMA peak and memory bandwidth are measured first (CPU), and every row says how close it gets to the one that bounds it."""
import ctypes, os, sys, time, statistics
if "--one-thread" in sys.argv:   # before numpy and tinygrad read them
  for k in ("CPU_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ[k] = "1"
import numpy as np
from tinygrad import Tensor, Device, Context
from tinygrad.helpers import GlobalCounters

QUICK = "--quick" in sys.argv
TORCH_COMPILE = "--torch-compile" in sys.argv
REPS = 3 if QUICK else 7

def best(fxn, reps=REPS) -> float:
  times = []
  for _ in range(reps):
    st = time.perf_counter()
    fxn()
    times.append(time.perf_counter() - st)
  return min(times)

def tg_time(make):
  # time only the kernels: inputs are realized first, the graph is rebuilt each run (scheduling is cached by hash-consing)
  def run():
    GlobalCounters.reset()
    make().realize()
  run()
  return best(run)

# ***** the machine's roofs, measured with our own compiled kernels: independent FMA chains in registers, and a streaming copy *****

_PEAK_SRC = """typedef float v16 __attribute__((vector_size(64)));
void fma_peak(float* restrict out, const int core_id) {
  v16 a[12], b = (v16){} + 0.999999f, c = (v16){} + 1e-7f;
  for (int j = 0; j < 12; j++) a[j] = (v16){} + (float)(j + core_id);
  for (int i = 0; i < %d; i++) for (int j = 0; j < 12; j++) a[j] = a[j]*b + c;   /* 12 chains cover latency x 2 pipes */
  v16 s = a[0]; for (int j = 1; j < 12; j++) s += a[j];
  out[core_id] = s[0] + s[15];
}
void stream_copy(float* restrict dst, const float* restrict src, const int core_id) {
  const long n = %d, lo = n * core_id / %d, hi = n * (core_id + 1) / %d;
  for (long i = lo; i < hi; i += 16) *(v16*)(dst + i) = *(const v16*)(src + i);
}"""

def machine_roofs() -> tuple[float, float, int]|None:
  """(FMA GFLOP/s, copy GB/s counting read + write, threads) on all the threads our CPU kernels use; None off the CPU device"""
  if Device.DEFAULT != "CPU": return None
  from tinygrad.runtime.ops_cpu import CPUProgram
  from tinygrad.opt.heuristic import cpu_threads
  threads, iters, n = cpu_threads(), 1 << 20, 1 << 26
  lib = Device["CPU"].compiler.compile(_PEAK_SRC % (iters, n, threads, threads))
  peak, copy = CPUProgram("fma_peak", lib), CPUProgram("stream_copy", lib)
  out = (ctypes.c_float * threads)()
  dst, src = np.zeros(n, np.float32), np.ones(n, np.float32)
  gs = (threads, 1, 1)
  t_fma = min(peak(out, global_size=gs, wait=True) for _ in range(3))
  t_copy = min(copy(dst.ctypes.data, src.ctypes.data, global_size=gs, wait=True) for _ in range(5))
  return threads * iters * 12 * 16 * 2 / t_fma / 1e9, 2 * n * 4 / t_copy / 1e9, threads

def row(name, unit, ours, ref, ref_name="numpy", higher_is_better=True, torch_ref=None, roof=None):
  ratio = ours / ref if higher_is_better else ref / ours
  extra = (f" {ours/torch_ref:5.2f}x torch |" if torch_ref else " " * 14 + "|") + (f" {100*ours/roof:5.1f}% |" if roof else " " * 8 + "|")
  print(f"| {name:34s} | {ours:10.2f} {unit:7s} | {ref:10.2f} {unit:7s} ({ref_name}) | {ratio:5.2f}x |" + extra)

def _torch():
  try:
    import torch
    torch.set_num_threads(_threads())
    return torch
  except ImportError: return None
def _threads() -> int:
  from tinygrad.opt.heuristic import cpu_threads
  return cpu_threads()

def main(roofs=None):
  rng = np.random.default_rng(0)
  print(f"device {Device.DEFAULT}")
  torch = _torch()
  fma, bw = (roofs[0], roofs[1]) if roofs else (None, None)
  print(f"| {'case':34s} | {'tinygrad':18s} | {'reference':28s} | ratio | {'vs torch':12s} | % roof |")
  print("|" + "-"*36 + "|" + "-"*20 + "|" + "-"*30 + "|-------|" + "-"*14 + "|--------|")
  n = (1 << 22) if QUICK else (1 << 24)
  an, bn, cn = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
  a, b, c = [Tensor(x).realize() for x in (an, bn, cn)]
  t = tg_time(lambda: a*b+c)
  tn = best(lambda: an*bn+cn)
  tt = None
  if torch:
    at, bt, ct = (torch.from_numpy(v) for v in (an, bn, cn))
    tt = best(lambda: at*bt+ct)
  row(f"a*b+c, {n>>20}M floats", "GB/s", 4*n*4/t/1e9, 4*n*4/tn/1e9, torch_ref=4*n*4/tt/1e9 if tt else None, roof=bw)
  m = (1 << 24) if QUICK else (1 << 26)
  sn = rng.standard_normal(m, dtype=np.float32)
  s = Tensor(sn).realize()
  t = tg_time(lambda: s.sum())
  tn = best(lambda: sn.sum())
  tt = best(lambda: st.sum()) if torch and (st := torch.from_numpy(sn)) is not None else None
  # a reduce only reads: its roof is the read half of the copy's traffic at the copy's rate
  row(f"sum, {m>>20}M floats", "GB/s", m*4/t/1e9, m*4/tn/1e9, torch_ref=m*4/tt/1e9 if tt else None, roof=bw)
  np.testing.assert_allclose(s.sum().item(), sn.astype(np.float64).sum(), rtol=1e-3, atol=1)
  for N in ((256, 512) if QUICK else (512, 1024)):
    xn, yn = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
    x, y = Tensor(xn).realize(), Tensor(yn).realize()
    t = tg_time(lambda: x @ y)
    tn = best(lambda: xn @ yn)
    tt = best(lambda: xt2 @ yt2) if torch and (xt2 := torch.from_numpy(xn)) is not None and (yt2 := torch.from_numpy(yn)) is not None else None
    row(f"matmul {N}x{N} fp32", "GFLOP/s", 2*N**3/t/1e9, 2*N**3/tn/1e9, torch_ref=2*N**3/tt/1e9 if tt else None, roof=fma)
    np.testing.assert_allclose((x @ y).numpy(), xn @ yn, rtol=1e-3, atol=1e-3)
  # a fresh kernel from graph to first result: schedule, lower, render, compile (no disk cache), run
  with Context(CACHELEVEL=0):
    z = Tensor(rng.standard_normal((37, 41), dtype=np.float32)).realize()
    st = time.perf_counter()
    ((z * 1.2345 + 0.6789).exp2().sum(axis=0)).realize()
    cold = time.perf_counter() - st
  print(f"| {'fresh kernel: schedule..compile+run':34s} | {cold*1e3:10.2f} ms      | {'':28s} |       |")
  # a 1,000-op chain from cold
  with Context(CACHELEVEL=0):
    w = Tensor(rng.standard_normal(16, dtype=np.float32)).realize()
    st = time.perf_counter()
    y = w
    for i in range(1000): y = y * 1.0001 + 0.00003 * i
    y.realize()
    chain = time.perf_counter() - st
  print(f"| {'1,000-op chain, cold':34s} | {chain*1e3:10.2f} ms      | {'':28s} |       |")
  # round trip of a tiny op whose kernel is compiled already
  p, q = Tensor([1.0, 2.0, 3.0, 4.0]).realize(), Tensor([4.0, 3.0, 2.0, 1.0]).realize()
  (p + q).realize()
  lat = statistics.median([best(lambda: (p + q).realize(), reps=1) for _ in range(200 if not QUICK else 50)])
  pn, qn = p.numpy(), q.numpy()
  latn = statistics.median([best(lambda: pn + qn, reps=1) for _ in range(200)])
  print(f"| {'(a+b).realize(), 4 floats':34s} | {lat*1e3:10.3f} ms      | {latn*1e3:10.3f} ms      (numpy) |       |")

def elementwise(roofs):
  """Elementwise ops, softmax and layernorm on 4096x1024 fp32 against numpy and torch eager (torch on as many threads as ours), GB/s counting
  the read and the write once (what a perfect fused kernel moves), and that as a share of the measured copy bandwidth"""
  try:
    import torch
    torch.set_num_threads(roofs[2] if roofs else (os.cpu_count() or 1))
  except ImportError: torch = None
  rng = np.random.default_rng(0)
  shape = (1024, 1024) if QUICK else (4096, 1024)
  xn = rng.standard_normal(shape, dtype=np.float32)
  x, xt = Tensor(xn).realize(), (torch.from_numpy(xn) if torch else None)
  nbytes = 2 * xn.nbytes
  F = torch.nn.functional if torch else None
  def np_softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
  def np_layernorm(v):
    m = v - v.mean(-1, keepdims=True)
    return m / np.sqrt((m * m).mean(-1, keepdims=True) + 1e-5)
  def np_gelu(v): return 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))
  # (name, ours, numpy, torch eager, fused: also torch.compile); gelu is the tanh form on every side (tinygrad's default)
  cases = [("exp", Tensor.exp, np.exp, lambda v: torch.exp(v), False),
           ("sigmoid", Tensor.sigmoid, lambda v: 1 / (1 + np.exp(-v)), lambda v: torch.sigmoid(v), False),
           ("tanh", Tensor.tanh, np.tanh, lambda v: torch.tanh(v), False),
           ("gelu (tanh)", Tensor.gelu, np_gelu, lambda v: F.gelu(v, approximate="tanh"), False),
           ("log(abs)", lambda v: v.abs().log(), lambda v: np.log(np.abs(v)), lambda v: v.abs().log(), False),
           ("relu", Tensor.relu, lambda v: np.maximum(v, 0), lambda v: torch.relu(v), False),
           ("sin", Tensor.sin, np.sin, lambda v: torch.sin(v), False),
           ("gelu(x)*2+1, fused", lambda v: v.gelu()*2+1, lambda v: np_gelu(v)*2+1, lambda v: F.gelu(v, approximate="tanh")*2+1, True),
           ("x*y+x, fused", lambda v: v*v+v, lambda v: v*v+v, lambda v: v*v+v, True),
           ("softmax(-1)", lambda v: v.softmax(-1), np_softmax, lambda v: v.softmax(-1), True),
           ("layernorm(-1)", lambda v: v.layernorm(), np_layernorm, lambda v: F.layer_norm(v, v.shape[-1:]), True)]
  bw = f", copy roof {roofs[1]:.1f} GB/s" if roofs else ""
  tthreads = torch.get_num_threads() if torch else "-"
  print(f"\nelementwise {shape[0]}x{shape[1]} fp32, GB/s (read + write), {roofs[2] if roofs else '?'} threads (torch {tthreads}){bw}")
  cols = ("ours", "numpy", "torch", "vs torch", "% roof") + (("compile", "vs comp") if TORCH_COMPILE else ())
  print(f"| {'op':20s} | " + " | ".join(f"{c:>8s}" for c in cols) + " |")
  print("|" + "-"*22 + "|" + "|".join("-"*10 for _ in cols) + "|")
  for name, ours, npf, tf, fused in cases:
    t = tg_time(lambda: ours(x))
    tn = best(lambda: npf(xn), reps=3)
    tt = best(lambda: tf(xt)) if torch else float("nan")
    vals = [nbytes/t/1e9, nbytes/tn/1e9, nbytes/tt/1e9, tt/t, 100*nbytes/t/1e9/roofs[1] if roofs else float("nan")]
    if TORCH_COMPILE:
      tc = float("nan")
      if torch and fused:
        try:
          cf = torch.compile(tf)
          cf(xt)
          tc = best(lambda: cf(xt))
        except Exception as e: print(f"torch.compile failed on {name}: {type(e).__name__}: {e}")
      vals += [nbytes/tc/1e9, tc/t]
    print(f"| {name:20s} | " + " | ".join(f"{v:8.2f}" if i in (3, 6) else f"{v:8.1f}" for i, v in enumerate(vals)) + " |")

def one_thread():
  """end to end and kernel-only times, process CPU time, one thread everywhere; the median of the better half of the runs"""
  import torch
  from tinygrad.engine.realize import lower_schedule
  torch.set_num_threads(1)
  pt, reps = time.process_time, (5 if QUICK else 11)
  def cpu(*fs) -> list[float]:
    # the sides of a row in turns (the order rotating), so that a loaded machine's slow spells fall on every side alike, not on whichever was
    # timed then (timed one after the other, a row's ratio swung 0.7x-1.05x between runs). Each side's timed call follows an untimed one of
    # its own: its inputs are as warm in cache as when it runs alone, whatever the other sides read before it
    ts: list[list[float]] = [[] for _ in fs]
    for r in range(reps):
      for i in range(len(fs)):
        (f := fs[j := (i + r) % len(fs)])()
        st = pt()
        f()
        ts[j].append(pt() - st)
    return [statistics.median(sorted(t)[:max(1, reps // 2)]) for t in ts]
  def kernels_only(make):
    eis = [ei for _, ei in lower_schedule(make().schedule())]
    for ei in eis: ei.bufs = [b.ensure_allocated() for b in ei.bufs]
    def run():
      for ei in eis: ei.run()
    run()
    return run
  rng = np.random.default_rng(0)
  shape = (1024, 1024) if QUICK else (4096, 1024)
  xn, yn = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
  x, y, xt, yt = Tensor(xn).realize(), Tensor(yn).realize(), torch.from_numpy(xn), torch.from_numpy(yn)
  labels_n = rng.integers(0, shape[1], shape[0]).astype(np.int32)   # class targets for cross_entropy over the rows
  labels, labels_t = Tensor(labels_n).realize(), torch.from_numpy(labels_n).long()
  F = torch.nn.functional
  rows = [("exp", lambda: x.exp(), lambda: torch.exp(xt)), ("sigmoid", lambda: x.sigmoid(), lambda: torch.sigmoid(xt)),
          ("tanh", lambda: x.tanh(), lambda: torch.tanh(xt)), ("gelu (tanh)", lambda: x.gelu(), lambda: F.gelu(xt, approximate="tanh")),
          ("log(abs)", lambda: x.abs().log(), lambda: xt.abs().log()), ("relu", lambda: x.relu(), lambda: torch.relu(xt)),
          ("softmax(-1)", lambda: x.softmax(-1), lambda: xt.softmax(-1)),
          ("log_softmax(-1)", lambda: x.log_softmax(-1), lambda: xt.log_softmax(-1)),
          ("cross_entropy", lambda: x.cross_entropy(labels), lambda: F.cross_entropy(xt, labels_t)),
          ("layernorm(-1)", lambda: x.layernorm(), lambda: F.layer_norm(xt, xt.shape[-1:])),
          ("gelu(x)*2+1", lambda: x.gelu()*2+1, lambda: F.gelu(xt, approximate="tanh")*2+1),
          ("a*b+c", lambda: x*y+x, lambda: xt*yt+xt), ("sum", lambda: x.sum(), lambda: xt.sum())]
  print(f"\none thread, process CPU time, {shape[0]}x{shape[1]} fp32 (matmul: NxN), ratio = reference time / ours (>1: ours faster)")
  print(f"| {'case':18s} | {'ours e2e':>9s} | {'kernels':>9s} | {'reference':>15s} | {'e2e ratio':>9s} | {'kernel ratio':>12s} |")
  print("|" + "|".join("-"*(w+2) for w in (18, 9, 9, 15, 9, 12)) + "|")
  def line(name, e2e, kern, ref, ref_name):
    print(f"| {name:18s} | {e2e*1e3:6.2f} ms | {kern*1e3:6.2f} ms | {ref*1e3:6.2f} ms {ref_name:5s} | {ref/e2e:8.2f}x | {ref/kern:11.2f}x |")
  for name, ours, ref in rows:
    ours().realize()
    line(name, *cpu(lambda: ours().realize(), kernels_only(ours), ref), "torch")
    if TORCH_COMPILE and name == "gelu(x)*2+1":   # the fused chain against Inductor's generated C++ (its first compile is slow)
      try:
        cf = torch.compile(lambda v: F.gelu(v, approximate="tanh")*2+1)
        st = time.perf_counter()
        cf(xt)
        print(f"| {'  torch.compile':18s} | first call (compile) {time.perf_counter() - st:.1f} s")
        line("  vs torch.compile", *cpu(lambda: ours().realize(), kernels_only(ours), lambda: cf(xt)), "comp")
      except Exception as e: print(f"torch.compile failed: {type(e).__name__}: {e}")
  for n in ((128, 256) if QUICK else (256, 512)):
    an, bn = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    a, b = Tensor(an).realize(), Tensor(bn).realize()
    (a @ b).realize()
    line(f"matmul {n}", *cpu(lambda: (a @ b).realize(), kernels_only(lambda: a @ b), lambda: an @ bn), "numpy")
  # the Python around a kernel: small graphs seen before, per call
  s = [Tensor(rng.standard_normal((16, 16), dtype=np.float32)).realize() for _ in range(3)]
  small = [("a*b+c 16x16", lambda: (s[0]*s[1]+s[2]).realize()), ("sum 256", lambda: s[0].sum().realize()),
           ("matmul 16x16", lambda: (s[0]@s[1]).realize())]
  print("\nper call, graphs seen before (schedule cache hit, kernels compiled): " + ", ".join(
    f"{name} {cpu(lambda: [f() for _ in range(100)])[0]*1e4:.0f} us" for name, f in small))

def end_to_end():
  """GEMM 256 and 512 as a user writes them: (a @ b) built anew on every call, scheduled (plan cache hit), run, and .realize()d or read back
  with .numpy(), against numpy's a @ b (which allocates its result each call too). Per call: the median of many calls, and the median of the
  faster half (what a call costs when no other process takes the core). Kernel only: the same kernel run without the Python around it."""
  from tinygrad.engine.realize import lower_schedule
  clock = time.process_time if "--one-thread" in sys.argv else time.perf_counter
  def per_call(fs, n) -> list[tuple[float, float]]:
    # in turns, each timed call after an untimed one of its own, as in --one-thread's rows
    ts: list[list[float]] = [[] for _ in fs]
    for r in range(n):
      for i in range(len(fs)):
        (f := fs[j := (i + r) % len(fs)])()
        st = clock()
        f()
        ts[j].append(clock() - st)
    return [(statistics.median(t), statistics.median(sorted(t)[:len(t)//2])) for t in ts]
  rng = np.random.default_rng(0)
  print(f"end to end, {'one thread, process CPU time' if clock is time.process_time else f'{_threads()} threads, wall time'}, us per call "
        "(median / median of the faster half); ratio = numpy time / ours (>1: ours faster)")
  print(f"| {'case':12s} | {'ours .realize()':>17s} | {'ours .numpy()':>17s} | {'kernel only':>17s} | {'numpy a@b':>17s} | {'realize':>7s} | "
        f"{'numpy()':>7s} |")
  print("|" + "|".join("-"*(w+2) for w in (12, 17, 17, 17, 17, 7, 7)) + "|")
  for n in (256, 512):
    an, bn = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    a, b = Tensor(an).realize(), Tensor(bn).realize()
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-3, atol=1e-3)
    eis = [ei for _, ei in lower_schedule((a @ b).schedule())]
    for ei in eis: ei.bufs = [x.ensure_allocated() for x in ei.bufs]
    calls = (400 if n == 256 else 100) // (4 if QUICK else 1)
    r, nu, k, ref = per_call((lambda: (a @ b).realize(), lambda: (a @ b).numpy(), lambda: [ei.run() for ei in eis], lambda: an @ bn), calls)
    print(f"| {f'matmul {n}':12s} | " + " | ".join(f"{m*1e6:7.0f} / {f*1e6:7.0f}" for m, f in (r, nu, k, ref)) +
          f" | {ref[0]/r[0]:6.2f}x | {ref[0]/nu[0]:6.2f}x |")
  s = [Tensor(rng.standard_normal((16, 16), dtype=np.float32)).realize() for _ in range(3)]
  small = [("a*b+c 16x16", lambda: (s[0]*s[1]+s[2]).realize()), ("relu 16x16", lambda: s[0].relu().realize()),
           ("sum 16x16", lambda: s[0].sum().realize()), ("matmul 16x16", lambda: (s[0]@s[1]).realize())]
  print("the Python around a kernel, graphs seen before, us per call: " +
        ", ".join(f"{name} {per_call((f,), 500)[0][0]*1e6:.0f}" for name, f in small))
  # the same as counts that no other process changes: Python bytecodes run and Python functions entered per call (a loaded machine's timings
  # swing 2-3x; these don't)
  print("the same in bytecodes / Python calls per call: " + ", ".join(f"{name} {b:.0f} / {c:.0f}" for name, f in small for b, c in [_py_work(f)]))

def _py_work(f, n:int=20) -> tuple[float, float]:
  counts = [0, 0]
  def tracer(frame, event, arg):
    if event == "call":
      counts[1] += 1
      frame.f_trace_opcodes = True
    elif event == "opcode": counts[0] += 1
    return tracer
  f()
  sys.settrace(tracer)
  try:
    for _ in range(n): f()
  finally: sys.settrace(None)
  return counts[0] / n, counts[1] / n

if __name__ == "__main__":
  if "--e2e" in sys.argv:
    end_to_end()
    sys.exit(0)
  if "--one-thread" in sys.argv:
    one_thread()
    sys.exit(0)
  roofs = machine_roofs()
  if roofs: print(f"machine: {roofs[2]} threads, FMA peak {roofs[0]:.0f} GFLOP/s (fp32), copy {roofs[1]:.1f} GB/s (read + write)")
  if "--elementwise" not in sys.argv: main(roofs)
  elementwise(roofs)
