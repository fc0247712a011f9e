#!/usr/bin/env python3
"""Weight-panel prefetch (OptOps.PREFETCH) on ResNet-18's late convs, one thread, CPU time, best of --reps.
Default: each conv alone, its weights (packed once, as the ONNX runner does) rotated over --copies copies so every call reads them from
L3 or memory as the model does; the kernel with the heuristic's opts without PREFETCH, with it, and PyTorch (its weights rotated too), calls
taking turns. --model: the ONNX ResNet-18's kernels in model order, call after call, each kernel the heuristic prefetches alternating
between that program and the one without PREFETCH, so both see the caches as the model leaves them.
  python3 extra/bench/bench_prefetch.py [--reps N] [--copies N] [--model]"""
import argparse, os, pathlib, sys, time
sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])
os.environ["CPU_THREADS"] = "1"   # read when tinygrad's CPU device starts
import numpy as np  # noqa: E402
from tinygrad import Tensor, Device  # noqa: E402
from tinygrad.opt.kernel import Kernel, OptOps  # noqa: E402
from tinygrad.opt.heuristic import hand_coded_optimizations  # noqa: E402
from tinygrad.engine.realize import CompiledRunner, get_program  # noqa: E402

# name: (cin, cout, size, stride)
CASES = {"256->256 3x3 14": (256, 256, 14, 1), "256->512 3x3/2 14": (256, 512, 14, 2), "512->512 3x3 7": (512, 512, 7, 1)}

def _without_prefetch(p) -> CompiledRunner:
  return CompiledRunner(get_program(p.ast, Device[p.device].renderer, [o for o in p.applied_opts if o.op is not OptOps.PREFETCH]))

def convs(reps:int, copies:int):
  import torch
  torch.set_num_threads(1)
  rng, ren = np.random.default_rng(0), Device["CPU"].renderer
  print(f"one thread, CPU time, best of {reps}; weights rotated over {copies} copies; machine model {ren.machine}")
  print(f"| {'conv':18s} | {'weights MB':>10s} | {'no prefetch ms':>14s} | {'prefetch ms':>11s} | {'torch ms':>8s} | {'speedup':>7s} "
        f"| {'vs torch':>8s} |")
  print("|" + "|".join("-" * (w + 2) for w in (18, 10, 14, 11, 8, 7, 8)) + "|")
  for name, (cin, cout, size, stride) in CASES.items():
    x = Tensor(rng.standard_normal((1, cin, size, size), dtype=np.float32)).relu().realize()
    wn = [rng.standard_normal((cout, cin, 3, 3), dtype=np.float32) / 3 for _ in range(copies)]
    sis = []
    for w in wn:
      # the conv is the last kernel; the ones before it (the padded copy of its input) run once here
      *pre, si = x.conv2d(Tensor(w).pack_conv_weight().realize(), stride=stride, padding=1).schedule()
      for p in pre: CompiledRunner(get_program(p.ast, ren))([b.ensure_allocated() for b in p.bufs], {}, wait=True)
      sis.append(si)
      for b in si.bufs: b.ensure_allocated()
    opts = hand_coded_optimizations(Kernel(sis[0].ast, ren))
    with_pf = CompiledRunner(get_program(sis[0].ast, ren, opts))
    runners = {"no": _without_prefetch(with_pf.p), "pf": with_pf}
    xt, wt = torch.from_numpy(x.numpy()), [torch.from_numpy(w) for w in wn]
    best, calls = {"no": float("inf"), "pf": float("inf"), "torch": float("inf")}, 0
    for _ in range(reps):
      for k in best:
        st = time.process_time()
        if k == "torch": torch.nn.functional.conv2d(xt, wt[calls % copies], stride=stride, padding=1)
        else: runners[k](sis[calls % copies].bufs, {}, wait=True)
        best[k], calls = min(best[k], time.process_time() - st), calls + 1
    ref = torch.nn.functional.conv2d(xt, wt[0], stride=stride, padding=1).numpy()
    for r in runners.values():
      r(sis[0].bufs, {}, wait=True)
      np.testing.assert_allclose(sis[0].bufs[0].numpy().reshape(ref.shape), ref, rtol=1e-3, atol=1e-3)
    mb = 4 * cin * cout * 9 / 1e6
    print(f"| {name:18s} | {mb:10.1f} | {best['no']*1e3:14.3f} | {best['pf']*1e3:11.3f} | {best['torch']*1e3:8.3f} | {best['no']/best['pf']:6.2f}x | "
          f"{best['torch']/best['pf']:7.2f}x |")

def model(reps:int):
  import torch
  from tinygrad.engine.jit import GraphRunner
  from extra.onnx import OnnxRunner
  from extra.onnx_torch_models import resnet18, export
  torch.manual_seed(0)
  feed = {"x": np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)}
  runner = OnnxRunner(export(resnet18(), (torch.from_numpy(feed["x"]),), ["x"]))
  for _ in range(3): runner(feed)["out"].numpy()
  kernels = [k for jit in runner._jits.values() if jit is not None for ei in jit.jit_cache
             for k in (ei.prg.jit_cache if isinstance(ei.prg, GraphRunner) else [ei])]
  alt = {i: _without_prefetch(ei.prg.p) for i, ei in enumerate(kernels)
         if isinstance(ei.prg, CompiledRunner) and any(o.op is OptOps.PREFETCH for o in ei.prg.p.applied_opts)}
  pf, no = [float("inf")] * len(kernels), [float("inf")] * len(kernels)
  for it in range(2 * reps):
    for i, ei in enumerate(kernels):
      st = time.process_time()
      if i in alt and it % 2: alt[i](ei.bufs, {}, wait=True)
      else: ei.run({}, wait=True)
      t = time.process_time() - st
      if i in alt and it % 2: no[i] = min(no[i], t)
      else: pf[i] = min(pf[i], t)
  print(f"ResNet-18 (ONNX) kernels in model order, one thread, CPU time, best of {reps} each way")
  print(f"| {'kernel':34s} | {'no prefetch ms':>14s} | {'prefetch ms':>11s} | {'speedup':>7s} |")
  print("|" + "|".join("-" * (w + 2) for w in (34, 14, 11, 7)) + "|")
  for i in alt: print(f"| {kernels[i].prg.p.name:34s} | {no[i]*1e3:14.3f} | {pf[i]*1e3:11.3f} | {no[i]/pf[i]:6.2f}x |")
  tot_no, tot_pf = sum(no[i] for i in alt) * 1e3, sum(pf[i] for i in alt) * 1e3
  print(f"| {'prefetched kernels':34s} | {tot_no:14.3f} | {tot_pf:11.3f} | {tot_no/tot_pf:6.2f}x |")
  print(f"all {len(kernels)} kernels: {sum(pf)*1e3:.2f} ms with prefetch, {sum(pf)*1e3 - tot_pf + tot_no:.2f} ms without")

if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--reps", type=int, default=20)
  ap.add_argument("--copies", type=int, default=16)
  ap.add_argument("--model", action="store_true")
  args = ap.parse_args()
  if args.model: model(args.reps)
  else: convs(args.reps, args.copies)
