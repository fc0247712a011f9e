#!/usr/bin/env python3
"""TinyJit replay overhead: a function of 100 tiny kernels, called eagerly, replayed kernel by kernel (JIT=2) and replayed through the
device's graph (JIT=1), against the same 100 ops in PyTorch eager (when installed), in one run.
Usage: python3 extra/bench/bench_jit.py [--quick]"""
import sys, time
from tinygrad import Tensor, TinyJit, Device, Context

KERNELS, CALLS = 100, (50 if "--quick" in sys.argv else 300)

def chain(x):
  for _ in range(KERNELS): x = (x * 1.0001 + 0.5).contiguous()
  return x

def per_call(fn, x, calls=CALLS) -> float:
  for _ in range(3): fn(x)   # the first call runs eagerly, the second captures
  st = time.perf_counter()
  for _ in range(calls): fn(x)
  return (time.perf_counter() - st) / calls

def main():
  x = Tensor.ones(16).contiguous().realize()
  rows = [("eager (schedule + run every call)", per_call(lambda t: chain(t).realize(), x, max(CALLS // 10, 5)))]
  with Context(JIT=2): rows.append(("TinyJit replay, per kernel (JIT=2)", per_call(TinyJit(chain), x)))
  graph = Device[Device.DEFAULT].graph
  name = "GraphRunner" if graph is True else graph.__name__ if graph else "(none)"   # True: the engine's base GraphRunner
  rows.append((f"TinyJit replay, graph {name}", per_call(TinyJit(chain), x)))
  try:
    import torch
    tx = torch.ones(16)
    rows.append(("torch eager (reference)", per_call(lambda t: chain(t), tx)))
  except ImportError: pass
  ref = rows[-1][1]
  print(f"device {Device.DEFAULT}, {KERNELS} kernels of 16 floats per call")
  print(f"| {'case':40s} | {'us/call':>9s} | {'us/kernel':>9s} | {'vs ' + ('torch' if len(rows) == 4 else 'graph'):>8s} |")
  print("|" + "-"*42 + "|" + "-"*11 + "|" + "-"*11 + "|" + "-"*10 + "|")
  for name, t in rows: print(f"| {name:40s} | {t*1e6:9.0f} | {t*1e6/KERNELS:9.2f} | {t/ref:7.2f}x |")

if __name__ == "__main__": main()
