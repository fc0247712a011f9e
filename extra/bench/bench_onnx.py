#!/usr/bin/env python3
"""ONNX latency: ResNet-18 (1x3x224x224) and a BERT-like encoder exported from PyTorch, tinygrad (OnnxRunner as a user calls it, numpy in
and out: it replays the captured kernels from the third call on; and with jit=False: the graph built, scheduled and run every call) vs
onnxruntime vs PyTorch, in one run. They take turns call by call, so a loaded machine slows them alike; each number is the best of --runs
calls. "kernels ms" is the time spent in the replayed kernels (their launch loop) within the best call, "python ms" the rest of that
call (input copies, signature lookup, replay bookkeeping, output hand-out and .numpy()): the per-call overhead.
  python3 extra/bench/bench_onnx.py [--runs N] [--threads T] [--only resnet18|bert_like]
--threads 1 (the default): one thread each (CPU_THREADS=1, intra_op_num_threads=1, torch.set_num_threads(1)), timed as this process's
CPU time, which other processes on the machine don't inflate. --threads T > 1: T threads each, timed by the wall clock."""
import argparse, gc, os, pathlib, sys, time
sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])
ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--only", default=None)
args = ap.parse_args()
os.environ["CPU_THREADS"] = str(args.threads)   # read when tinygrad's CPU device starts
import numpy as np  # noqa: E402
import torch  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402
from extra.onnx_torch_models import resnet18, bert_like, export  # noqa: E402

clock = time.process_time if args.threads == 1 else time.perf_counter

class _Timed:
  """Stands in for a captured item's runner and adds up the time spent in it: the kernels' share of a call, measured in that call."""
  def __init__(self, ei):
    self.prg, self.spent = ei.prg, 0.0
    ei.prg = self
  def __getattr__(self, name): return getattr(self.prg, name)
  def __call__(self, *args, **kwargs):
    st = clock()
    ret = self.prg(*args, **kwargs)
    self.spent += clock() - st
    return ret

def main():
  import onnxruntime as ort
  torch.set_num_threads(args.threads)
  torch.manual_seed(0)
  rng = np.random.default_rng(0)
  cases = []
  if args.only in (None, "resnet18"): cases.append(("resnet18", resnet18, {"x": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}))
  if args.only in (None, "bert_like"):
    ids, mask = rng.integers(0, 1000, (2, 32)).astype(np.int64), np.ones((2, 32), np.int64)
    mask[1, 24:] = 0   # the second sequence is padded
    cases.append(("bert_like", bert_like, {"ids": ids, "mask": mask}))
  how = "process CPU time, 1 thread each" if args.threads == 1 else f"wall time, {args.threads} threads each"
  print(f"best of {args.runs} calls, {how}")
  print(f"{'model':12s} {'tinygrad ms':>12s} {'kernels ms':>11s} {'python ms':>10s} {'tg no-jit ms':>13s} {'onnxruntime ms':>15s} {'torch ms':>10s} "
        f"{'tg/ort':>8s} {'tg/torch':>9s} {'max |diff|':>11s}")
  for name, make, feed in cases:
    net = make()
    model = export(net, tuple(torch.from_numpy(v) for v in feed.values()), list(feed))
    runner, eager = OnnxRunner(model), OnnxRunner(model, jit=False)
    def tg(): return runner(feed)["out"].numpy()
    def tg_eager(): return eager(feed)["out"].numpy()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    def ref(): return sess.run(None, feed)[0]
    tfeed = [torch.from_numpy(v) for v in feed.values()]
    def pt():
      with torch.no_grad(): return net(*tfeed)
    for _ in range(3): out = tg()   # the JIT captures on the second call
    diff = max(float(np.abs(out - ref()).max()), float(np.abs(tg_eager() - ref()).max()))
    timed = [_Timed(ei) for jit in runner._jits.values() if jit is not None for ei in jit.jit_cache]
    best, t_k = {f: float("inf") for f in (tg, tg_eager, ref, pt)}, 0.0
    for _ in range(args.runs):
      for f in best:
        for t in timed: t.spent = 0.0
        gc.collect()   # the garbage of the turn before (the eager run's graphs) is not collected on the next one's time
        st = clock()
        f()
        if (took := clock() - st) < best[f]: best[f], t_k = took, (sum(t.spent for t in timed) if f is tg else t_k)
    t_tg, t_eager, t_ort, t_pt = (best[f] * 1e3 for f in (tg, tg_eager, ref, pt))
    t_k *= 1e3
    print(f"{name:12s} {t_tg:12.2f} {t_k:11.2f} {t_tg - t_k:10.2f} {t_eager:13.2f} {t_ort:15.2f} {t_pt:10.2f} {t_tg / t_ort:8.2f} {t_tg / t_pt:9.2f} "
          f"{diff:11.2e}")

if __name__ == "__main__":
  main()
