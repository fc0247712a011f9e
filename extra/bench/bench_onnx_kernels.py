#!/usr/bin/env python3
"""ResNet-18 kernel by kernel: each kernel the jit replays (its own run time, best of --runs, one thread) next to onnxruntime's per-node
profile (SessionOptions.enable_profiling, one thread, best of --runs per node) in the same run, grouped by what the kernel or node computes.
On a loaded machine a kernel's best of 10 can sit 10-20% above its best of 40 (the more it reads, the more): compare kernels by best and
median over 40 or more runs.
  python3 extra/bench/bench_onnx_kernels.py [--runs N] [--top K]"""
import argparse, json, os, pathlib, sys, tempfile, time
sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])
ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--top", type=int, default=40)
args = ap.parse_args()
os.environ["CPU_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402
from tinygrad.engine.jit import GraphRunner  # noqa: E402
from tinygrad.engine.realize import CompiledRunner  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402
from extra.onnx_torch_models import resnet18, export  # noqa: E402

def main():
  import onnxruntime as ort
  torch.manual_seed(0)
  feed = {"x": np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)}
  model = export(resnet18(), (torch.from_numpy(feed["x"]),), ["x"])
  runner = OnnxRunner(model)
  for _ in range(3): runner(feed)["out"].numpy()
  kernels = [k for jit in runner._jits.values() if jit is not None for ei in jit.jit_cache
             for k in (ei.prg.jit_cache if isinstance(ei.prg, GraphRunner) else [ei])]
  times: list[list[float]] = [[] for _ in kernels]
  opts = ort.SessionOptions()
  opts.intra_op_num_threads, opts.inter_op_num_threads, opts.enable_profiling = 1, 1, True
  opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
  sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
  ort_best: dict[str, float] = {}
  ort_op: dict[str, str] = {}
  t_ort = float("inf")
  for _ in range(args.runs):
    for i, ei in enumerate(kernels): times[i].append(ei.run({}, wait=True) or 0.0)
    st = time.process_time()
    sess.run(None, feed)
    t_ort = min(t_ort, time.process_time() - st)
  with open(sess.end_profiling()) as f: events = json.load(f)
  for e in events:
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
      node = e["name"][:-len("_kernel_time")]
      ort_best[node] = min(ort_best.get(node, float("inf")), e["dur"] * 1e-6)
      ort_op[node] = e["args"]["op_name"]
  best, median = [min(t) for t in times], [float(np.median(t)) for t in times]
  sizes = [[b.size for b in ei.bufs if b is not None] for ei in kernels]
  names = [ei.prg.p.name if isinstance(ei.prg, CompiledRunner) else ei.prg.display_name for ei in kernels]
  ops = [ei.prg.p.estimates.ops if isinstance(ei.prg, CompiledRunner) else 0 for ei in kernels]
  print(f"tinygrad kernels: {len(kernels)}, sum {sum(best)*1e3:.2f} ms   onnxruntime nodes: {len(ort_best)}, "
        f"sum {sum(ort_best.values())*1e3:.2f} ms, whole run {t_ort*1e3:.2f} ms")
  print(f"{'#':>3s} {'ms':>7s} {'median':>7s} {'GFLOPS':>7s}  kernel  [buffer sizes, output first]")
  for i, (t, med, name, op, sz) in enumerate(zip(best, median, names, ops, sizes)):
    print(f"{i:3d} {t*1e3:7.3f} {med*1e3:7.3f} {float(op)/max(t, 1e-9)*1e-9:7.1f}  {name}  {sz}")
  # reduces with a weight (convs, the gemm), the other reduces (pools, means), elementwise copies
  kinds = {"conv/gemm": 0.0, "pool/mean": 0.0, "copy/elementwise": 0.0}
  for t, name, sz in zip(best, names, sizes):
    kinds["copy/elementwise" if not name.startswith("r_") else "conv/gemm" if len(sz) >= 3 else "pool/mean"] += t
  print("tinygrad by kind: " + ", ".join(f"{k} {v*1e3:.2f} ms" for k, v in kinds.items()))
  by_op: dict[str, float] = {}
  for node, t in ort_best.items(): by_op[ort_op[node]] = by_op.get(ort_op[node], 0.0) + t
  print("onnxruntime by op: " + ", ".join(f"{k} {v*1e3:.2f} ms" for k, v in sorted(by_op.items(), key=lambda kv: -kv[1])))
  print(f"{'ms':>7s}  onnxruntime node")
  for node, t in ort_best.items(): print(f"{t*1e3:7.3f}  {ort_op[node]:12s} {node}")

if __name__ == "__main__":
  main()
