#!/usr/bin/env python3
"""The same cases on every device that runs here, one column per device, beside numpy and torch, in one run.
Usage: python3 extra/bench/bench_devices.py [--quick] [--devices CPU,LLVM,GPU,WEBGPU]
Devices that can't open are listed with the reason and left out. PYTHON (the emulator) runs only with --devices naming it, as does
REMOTE (it needs REMOTE_HOST pointing at a running server). Every figure is checked against numpy before it is printed."""
import argparse, time
from typing import Callable
import numpy as np
from tinygrad import Tensor, Device

def best(fxn:Callable[[], object], reps:int) -> float:
  times = []
  for _ in range(reps):
    st = time.perf_counter()
    fxn()
    times.append(time.perf_counter() - st)
  return min(times)

def cases(quick:bool):
  # name, unit, work (bytes or flops per run), numpy inputs, tinygrad fn, numpy fn, torch fn name
  rng = np.random.default_rng(0)
  n = 1 << (20 if quick else 22)
  abc = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
  yield f"a*b+c, {n>>20}M floats", "GB/s", 4*n*4, abc, lambda a,b,c: a*b+c, lambda a,b,c: a*b+c
  s = [rng.standard_normal(n*4, dtype=np.float32)]
  yield f"sum, {n*4>>20}M floats", "GB/s", n*4*4, s, lambda a: a.sum(), lambda a: a.sum(dtype=np.float32)
  e = [rng.standard_normal(n, dtype=np.float32)]
  yield f"exp, {n>>20}M floats", "GB/s", 2*n*4, e, lambda a: a.exp(), np.exp
  rows, cols = (1024, 1024) if quick else (4096, 1024)
  sm = [rng.standard_normal((rows, cols), dtype=np.float32)]
  def np_softmax(x):
    y = np.exp(x - x.max(axis=-1, keepdims=True))
    return y / y.sum(axis=-1, keepdims=True)
  yield f"softmax {rows}x{cols}", "GB/s", 2*rows*cols*4, sm, lambda a: a.softmax(-1), np_softmax
  for N in ((256,) if quick else (512, 1024)):
    mm = [rng.standard_normal((N, N), dtype=np.float32) for _ in range(2)]
    yield f"matmul {N}x{N} fp32", "GFLOP/s", 2*N**3, mm, lambda a,b: a@b, lambda a,b: a@b
  cx = [rng.standard_normal((8, 32, 32, 32), dtype=np.float32), rng.standard_normal((32, 32, 3, 3), dtype=np.float32)]
  def np_conv(x, w):  # direct conv through an im2col view, padding 1
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # b c h w 3 3
    return np.einsum("bchwij,ocij->bohw", win, w, optimize=True)
  yield "conv2d b8 32->32 3x3 32x32", "GFLOP/s", 2*8*32*32*32*32*9, cx, lambda x,w: x.conv2d(w, padding=1), np_conv

def torch_fn(name:str):
  import torch
  table = {"a*b+c": lambda a,b,c: a*b+c, "sum": lambda a: a.sum(), "exp": torch.exp, "softmax": lambda a: a.softmax(-1),
           "matmul": lambda a,b: a@b, "conv2d": lambda x,w: torch.nn.functional.conv2d(x, w, padding=1)}
  return torch, table[name.split(",")[0].split(" ")[0]]

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
  ap.add_argument("--devices", default="", help="comma-separated devices (default: every device that opens and computes, but PYTHON/REMOTE)")
  args = ap.parse_args()
  reps = 3 if args.quick else 5
  wanted = [d.strip().upper() for d in args.devices.split(",") if d.strip()] or \
           [d for d in Device._devices if d not in ("PYTHON", "REMOTE", "NULL", "DISK", "NPY")]
  devices = []
  for d in wanted:
    try:
      dev = Device[d]
      if dev.program is None or not dev.computes: continue
      Tensor([1.0], device=d).add(1).realize()
      devices.append(d)
    except Exception as e: print(f"{d}: not used ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
  try:
    import torch
    torch.manual_seed(0)
    torch_threads = torch.get_num_threads()
  except ImportError: torch, torch_threads = None, 0
  cols = devices + ["numpy"] + (["torch"] if torch is not None else [])
  print(f"devices: {', '.join(devices)}; torch threads: {torch_threads}")
  print(f"| {'case':28s} | {'unit':7s} | " + " | ".join(f"{c:>9s}" for c in cols) + " |")
  print("|" + "-"*30 + "|" + "-"*9 + "|" + "|".join("-"*11 for _ in cols) + "|")
  for name, unit, work, inputs, tg, ref in cases(args.quick):
    expected = ref(*inputs)
    figures = []
    for d in devices:
      try:
        ts = [Tensor(x, device=d).realize() for x in inputs]
        out = tg(*ts).realize()
        np.testing.assert_allclose(out.numpy(), expected, rtol=2e-3, atol=2e-3)
        # a device that queues work (GPU, WEBGPU) is waited for: realize only submits it
        figures.append(work / best(lambda: (tg(*ts).realize(), Device[d].synchronize()), reps) / 1e9)
      except Exception as e:
        print(f"  {name} on {d}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        figures.append(float("nan"))
    figures.append(work / best(lambda: ref(*inputs), reps) / 1e9)
    if torch is not None:
      _, fn = torch_fn(name)
      tts = [torch.from_numpy(x) for x in inputs]
      figures.append(work / best(lambda: fn(*tts), reps) / 1e9)
    print(f"| {name:28s} | {unit:7s} | " + " | ".join(f"{f:9.2f}" for f in figures) + " |")

if __name__ == "__main__":
  main()
