#!/usr/bin/env python3
"""Convolution forward kernels, one thread each, against PyTorch in one run: GFLOP/s, the ratio and the share of this core's FMA peak
(measured first). Cases: issue 14's conv2d b32 64->64 3x3 32x32, the beautiful_mnist CNN's convs at batch 512 (conv2..4 read a relu of
the last layer, as in the model), and ResNet-18's layers at batch 1 with their weights packed once (Tensor.pack_conv_weight, as the ONNX
runner does for constant weights). Timed by this process's CPU time (a loaded machine doesn't inflate it), ours and torch's calls taking
turns, best of --reps.
Usage: python3 extra/bench/bench_conv_fwd.py [--reps N] [--only NAME]"""
import argparse, os, time
os.environ["CPU_THREADS"] = "1"   # read when tinygrad's CPU device starts
import numpy as np  # noqa: E402
from tinygrad import Tensor, TinyJit, Device  # noqa: E402

# name: (batch, cin, cout, size, kernel, stride, padding, input relu'd, weight packed once)
CASES = {
  "issue14 b32 64->64 3x3 32": (32, 64, 64, 32, 3, 1, 0, False, False),
  "mnist conv1 1->32 5x5 28": (512, 1, 32, 28, 5, 1, 0, False, False),
  "mnist conv2 32->32 5x5 24": (512, 32, 32, 24, 5, 1, 0, True, False),
  "mnist conv3 32->64 3x3 12": (512, 32, 64, 12, 3, 1, 0, True, False),
  "mnist conv4 64->64 3x3 10": (512, 64, 64, 10, 3, 1, 0, True, False),
  "resnet stem 3->64 7x7/2 224": (1, 3, 64, 224, 7, 2, 3, False, True),
  "resnet 64->64 3x3 56": (1, 64, 64, 56, 3, 1, 1, True, True),
  "resnet 128->128 3x3 28": (1, 128, 128, 28, 3, 1, 1, True, True),
  "resnet 256->256 3x3 14": (1, 256, 256, 14, 3, 1, 1, True, True),
  "resnet 512->512 3x3 7": (1, 512, 512, 7, 3, 1, 1, True, True),
  "resnet 256->512 3x3/2 14": (1, 256, 512, 14, 3, 2, 1, True, True),
  "resnet 64->128 1x1/2 56": (1, 64, 128, 56, 1, 2, 0, True, True),
  "resnet 256->512 1x1/2 14": (1, 256, 512, 14, 1, 2, 0, True, True),
}

def fma_peak() -> float:
  """fp32 FMA GFLOP/s of one core: the machine model's probe (independent vector FMA chains), timed by CPU time, best of many short runs"""
  import ctypes
  from tinygrad.runtime.ops_cpu import find_cc, CFLAGS
  from tinygrad.runtime.support.cpu_model import FMAProbe, vector_flags
  m = Device["CPU"].renderer.machine
  assert m is not None, "the CPU device has no machine model"
  probe, lanes, iters = FMAProbe(find_cc(), CFLAGS + vector_flags(m.simd_bytes), m.simd_bytes, m.vector_regs), m.simd_bytes // 4, 200_000
  fxn, buf = getattr(probe.lib, f"fma{probe.many}"), (ctypes.c_float * (2 * lanes))(*([0.999] * lanes + [1e-3] * lanes))
  fxn.argtypes = [ctypes.c_void_p, ctypes.c_long]
  best = float("inf")
  for _ in range(20):
    st = time.process_time()
    fxn(buf, iters)
    best = min(best, time.process_time() - st)
  return 2 * lanes * 4 * probe.many * iters / best / 1e9

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--reps", type=int, default=10)
  ap.add_argument("--only", default=None)
  args = ap.parse_args()
  import torch
  torch.set_num_threads(1)
  peak = fma_peak()
  print(f"device {Device.DEFAULT}, machine model {Device['CPU'].renderer.machine}, torch {torch.__version__}")
  print(f"one thread each, CPU time, best of {args.reps}; measured FMA peak {peak:.1f} GFLOP/s (fp32, one core)")
  print(f"| {'case':28s} | {'ours GFLOP/s':>12s} | {'torch GFLOP/s':>13s} | {'ours/torch':>10s} | {'% of peak':>9s} |")
  print("|" + "|".join("-" * (w + 2) for w in (28, 12, 13, 10, 9)) + "|")
  rng = np.random.default_rng(0)
  for name, (bs, cin, cout, size, k, stride, pad, relu, packed) in CASES.items():
    if args.only is not None and args.only not in name: continue
    xn, wn = rng.standard_normal((bs, cin, size, size), dtype=np.float32), rng.standard_normal((cout, cin, k, k), dtype=np.float32) / k
    x, w = Tensor(xn).realize(), Tensor(wn).realize()
    if packed: w = w.pack_conv_weight()
    xt, wt = torch.from_numpy(xn), torch.from_numpy(wn)
    ours = TinyJit(lambda: (x.relu() if relu else x).conv2d(w, stride=stride, padding=pad).realize())
    def theirs(): return torch.nn.functional.conv2d(xt.relu() if relu else xt, wt, stride=stride, padding=pad)
    for _ in range(3): got = ours()
    np.testing.assert_allclose(got.numpy(), theirs().numpy(), rtol=1e-3, atol=1e-3)
    t_ours = t_theirs = float("inf")
    for _ in range(args.reps):
      for f in (ours, theirs):
        st = time.process_time()
        f()
        t = time.process_time() - st
        if f is ours: t_ours = min(t_ours, t)
        else: t_theirs = min(t_theirs, t)
    o = (size + 2 * pad - k) // stride + 1
    flops = 2 * bs * cout * cin * k * k * o * o
    print(f"| {name:28s} | {flops/t_ours/1e9:12.1f} | {flops/t_theirs/1e9:13.1f} | {t_theirs/t_ours:9.2f}x | {100*flops/t_ours/1e9/peak:8.0f}% |")

if __name__ == "__main__": main()
