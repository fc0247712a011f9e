#!/usr/bin/env python3
"""Deep graphs and small front-end calls: a long elementwise chain with sines realized from cold (no program cache: schedule, lower,
render, compile, run) at growing lengths, with its kernel count (MAX_KERNEL_OPS cuts it); Tensor.arange per call and a small setitem into a
big tensor, against PyTorch in the same run.
Usage: python3 extra/bench/bench_deep.py [--long]   (--long adds chains of 2000 and 4000 ops: minutes)"""
import sys, time
from tinygrad import Tensor, Device, Context, GlobalCounters

def chain(n:int) -> Tensor:
  x = Tensor.ones(1024).contiguous().realize()
  # the constants change along the chain, so no two kernels are the same program (a compile cache would hide the cost)
  for i in range(n): x = (x * (1.0001 + i * 1e-7) + 0.5).sin() if i % 3 == 0 else x * 0.999 + 0.001
  return x

def per_call(fn, calls:int) -> float:
  fn()
  st = time.perf_counter()
  for _ in range(calls): fn()
  return (time.perf_counter() - st) / calls

def main():
  print(f"device {Device.DEFAULT}\n| {'chain ops':>9s} | {'kernels':>7s} | {'realize s':>9s} | {'ms/op':>7s} |")
  print("|" + "-"*11 + "|" + "-"*9 + "|" + "-"*11 + "|" + "-"*9 + "|")
  for n in (125, 250, 500, 1000) + ((2000, 4000) if "--long" in sys.argv else ()):
    x = chain(n)
    with Context(CACHELEVEL=0):
      GlobalCounters.reset()
      st = time.perf_counter()
      x.realize()
      t = time.perf_counter() - st
    print(f"| {n:9d} | {GlobalCounters.kernel_count:7d} | {t:9.2f} | {t / n * 1e3:7.2f} |")
  rows = [("Tensor.arange(100)", per_call(lambda: Tensor.arange(100), 2000)),
          ("Tensor.arange(i, i+100), new start", per_call(lambda: Tensor.arange(7, 107), 2000))]
  big = Tensor.zeros(1 << 22).contiguous().realize()
  def small_set(): big[3:5] = 1.0
  rows.append(("t[3:5] = 1 on 4M floats, realized", per_call(small_set, 50)))
  ref: list[float] = []
  try:
    import torch
    tbig = torch.zeros(1 << 22)
    def tset(): tbig[3:5] = 1.0
    ref = [per_call(lambda: torch.arange(100), 2000), per_call(lambda: torch.arange(7, 107), 2000), per_call(tset, 50)]
  except ImportError: pass
  print(f"\n| {'call':38s} | {'us/call':>9s} | {'torch us':>9s} | {'vs torch':>8s} |")
  print("|" + "-"*40 + "|" + "-"*11 + "|" + "-"*11 + "|" + "-"*10 + "|")
  for i, (name, t) in enumerate(rows):
    r = ref[i] if ref else float("nan")
    print(f"| {name:38s} | {t*1e6:9.1f} | {r*1e6:9.1f} | {t/r:7.1f}x |")

if __name__ == "__main__": main()
