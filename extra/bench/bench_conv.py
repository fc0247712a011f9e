#!/usr/bin/env python3
"""Convolution kernels, forward and both gradients (input and weight), against PyTorch (threads = cores) in one run: GFLOP/s and the
ratio. Cases: issue 14's conv2d b32 64->64 3x3 32x32 and the beautiful_mnist CNN's convs at batch 512.
Usage: python3 extra/bench/bench_conv.py [--quick] [--cpu-time] [--rounds N]   (--quick: smaller batches; --cpu-time: one thread each, timed
by this process's CPU time, so other processes' load on a shared machine doesn't skew the ratio; --rounds: ours and torch take turns N
times (default 3), each the best of its rounds, and the rounds' ratios are printed as a range)"""
import os, sys, time
import numpy as np
from tinygrad import Tensor, Device, TinyJit

QUICK, CPU_TIME = "--quick" in sys.argv, "--cpu-time" in sys.argv
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
if CPU_TIME: os.environ["CPU_THREADS"] = "1"
clock = time.process_time if CPU_TIME else time.perf_counter

def best(fxn, reps:int=3) -> float:
  fxn()
  ts = []
  for _ in range(reps):
    st = clock()
    fxn()
    ts.append(clock() - st)
  return min(ts)

def main():
  import torch
  torch.set_num_threads(1 if CPU_TIME else os.cpu_count() or 1)
  rng = np.random.default_rng(0)
  b = 8 if QUICK else 1
  cases = [("b32 64->64 3x3 32x32", 32, 64, 64, 32, 3), ("mnist conv1 1->32 5x5", 512//b, 1, 32, 28, 5),
           ("mnist conv2 32->32 5x5", 512//b, 32, 32, 24, 5), ("mnist conv3 32->64 3x3", 512//b, 32, 64, 12, 3),
           ("mnist conv4 64->64 3x3", 512//b, 64, 64, 10, 3)]
  print(f"device {Device.DEFAULT}, {os.cpu_count()} cores, torch {torch.__version__}; GFLOP/s, ratio = torch time / ours" +
        (" (CPU time, one thread each)" if CPU_TIME else ""))
  print(f"| {'case':24s} | {'fwd':>6s} | {'torch':>6s} | {'ratio':>6s} | {'dx':>6s} | {'torch':>6s} | {'ratio':>6s} | {'dw':>6s} | {'torch':>6s} | "
        f"{'ratio':>6s} |")
  print("|" + "|".join("-"*(w+2) for w in (24,) + (6,)*9) + "|")
  for name, bs, cin, cout, hw, k in cases:
    xn, wn = rng.standard_normal((bs, cin, hw, hw), dtype=np.float32), rng.standard_normal((cout, cin, k, k), dtype=np.float32)
    o = hw - k + 1
    gn = rng.standard_normal((bs, cout, o, o), dtype=np.float32)
    x, w, g = Tensor(xn).realize(), Tensor(wn).realize(), Tensor(gn).realize()
    xt, wt, gt = torch.from_numpy(xn), torch.from_numpy(wn), torch.from_numpy(gn)
    flops = 2 * bs * cout * cin * k * k * o * o
    def grads(): return x.conv2d(w).gradient(x, w, gradient=g)
    # jitted, like a training step: the kernels are timed, not the Python that builds the graph
    fwd, gdx, gdw = TinyJit(lambda: x.conv2d(w).realize()), TinyJit(lambda: grads()[0].realize()), TinyJit(lambda: grads()[1].realize())
    dx, dw = grads()
    tdx, tdw, _ = torch.ops.aten.convolution_backward(gt, xt, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    np.testing.assert_allclose(dx.numpy(), tdx.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(dw.numpy(), tdw.numpy(), rtol=1e-3, atol=1e-2)
    pairs = [(fwd, lambda: torch.nn.functional.conv2d(xt, wt)),
             (gdx, lambda: torch.ops.aten.convolution_backward(gt, xt, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])),
             (gdw, lambda: torch.ops.aten.convolution_backward(gt, xt, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False]))]
    # ours and torch take turns, ROUNDS times: a burst of load on a shared machine slows both alike, not only the one timed then. Each is
    # the best of its rounds; the ratios of the rounds (each round's torch time / ours) are given as a range
    timed = [[(best(f), best(tf)) for _ in range(ROUNDS)] for f, tf in pairs]
    ours, theirs = [min(t for t, _ in r) for r in timed], [min(tt for _, tt in r) for r in timed]
    cols = [f"{flops/t/1e9:6.1f} | {flops/tt/1e9:6.1f} | {tt/t:5.2f}x" for t, tt in zip(ours, theirs)]
    print(f"| {name:24s} | " + " | ".join(cols) + " |" +
          (" rounds: " + ", ".join(f"{min(b/a for a, b in r):.2f}-{max(b/a for a, b in r):.2f}x" for r in timed) if ROUNDS > 1 else ""))

if __name__ == "__main__": main()
