#!/usr/bin/env python3
"""First-light benchmark: this library against numpy (and torch when installed) in one run, on the default device.
Usage: python3 extra/bench/bench_core.py [--quick] [--elementwise]  (--elementwise: only the elementwise table)"""
import os, sys, time, statistics
import numpy as np
from tinygrad import Tensor, Device, Context
from tinygrad.helpers import GlobalCounters

QUICK = "--quick" in sys.argv
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

def row(name, unit, ours, ref, ref_name="numpy", higher_is_better=True):
  ratio = ours / ref if higher_is_better else ref / ours
  print(f"| {name:34s} | {ours:10.2f} {unit:7s} | {ref:10.2f} {unit:7s} ({ref_name}) | {ratio:5.2f}x |")

def main():
  rng = np.random.default_rng(0)
  print(f"device {Device.DEFAULT}")
  print(f"| {'case':34s} | {'tinygrad':18s} | {'reference':28s} | ratio |")
  print("|" + "-"*36 + "|" + "-"*20 + "|" + "-"*30 + "|-------|")
  n = (1 << 22) if QUICK else (1 << 24)
  an, bn, cn = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
  a, b, c = [Tensor(x).realize() for x in (an, bn, cn)]
  t = tg_time(lambda: a*b+c)
  tn = best(lambda: an*bn+cn)
  row(f"a*b+c, {n>>20}M floats", "GB/s", 4*n*4/t/1e9, 4*n*4/tn/1e9)
  m = (1 << 24) if QUICK else (1 << 26)
  sn = rng.standard_normal(m, dtype=np.float32)
  s = Tensor(sn).realize()
  t = tg_time(lambda: s.sum())
  tn = best(lambda: sn.sum())
  row(f"sum, {m>>20}M floats", "GB/s", m*4/t/1e9, m*4/tn/1e9)
  np.testing.assert_allclose(s.sum().item(), sn.astype(np.float64).sum(), rtol=1e-3, atol=1)
  for N in ((256, 512) if QUICK else (512, 1024)):
    xn, yn = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
    x, y = Tensor(xn).realize(), Tensor(yn).realize()
    t = tg_time(lambda: x @ y)
    tn = best(lambda: xn @ yn)
    row(f"matmul {N}x{N} fp32", "GFLOP/s", 2*N**3/t/1e9, 2*N**3/tn/1e9)
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

def elementwise():
  """Elementwise ops on 4096x1024 fp32 against torch eager (same threads), GB/s counting the read and the write."""
  try:
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
  except ImportError: torch = None
  rng = np.random.default_rng(0)
  shape = (1024, 1024) if QUICK else (4096, 1024)
  xn = rng.standard_normal(shape, dtype=np.float32)
  x, xt = Tensor(xn).realize(), (torch.from_numpy(xn) if torch else None)
  nbytes = 2 * xn.nbytes
  cases = [("exp", Tensor.exp, "exp"), ("sigmoid", Tensor.sigmoid, "sigmoid"), ("tanh", Tensor.tanh, "tanh"), ("gelu", Tensor.gelu, "gelu"),
           ("log(abs)", lambda v: v.abs().log(), lambda v: v.abs().log()), ("relu", Tensor.relu, "relu"), ("sin", Tensor.sin, "sin"),
           ("gelu(x)*2+1, fused", lambda v: v.gelu()*2+1, lambda v: torch.nn.functional.gelu(v)*2+1),
           ("softmax(-1)", lambda v: v.softmax(-1), lambda v: v.softmax(-1)), ("layernorm(-1)", lambda v: v.layernorm(), None)]
  print(f"\nelementwise {shape[0]}x{shape[1]} fp32, GB/s (read + write), {os.cpu_count()} threads")
  print(f"| {'op':22s} | {'ours':>7s} | {'torch':>7s} | {'ratio':>6s} |")
  print("|" + "|".join("-"*(w+2) for w in (22, 7, 7, 6)) + "|")
  for name, ours, ref in cases:
    t = tg_time(lambda: ours(x))
    if torch and ref is None: ref = lambda v: torch.nn.functional.layer_norm(v, v.shape[-1:])  # noqa: E731
    tfx = (lambda v: getattr(torch, ref)(v) if name != "gelu" else torch.nn.functional.gelu(v)) if isinstance(ref, str) else ref
    tt = best(lambda: tfx(xt)) if torch else float("nan")
    print(f"| {name:22s} | {nbytes/t/1e9:7.1f} | {nbytes/tt/1e9:7.1f} | {tt/t:5.2f}x |")

if __name__ == "__main__":
  if "--elementwise" not in sys.argv: main()
  elementwise()
