#!/usr/bin/env python3
"""ONNX latency: ResNet-18 (1x3x224x224) and a BERT-like encoder exported from PyTorch, tinygrad (TinyJit) vs onnxruntime vs PyTorch.
  python3 extra/bench/bench_onnx.py [--runs N]"""
import argparse, pathlib, sys, time
sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])
import numpy as np  # noqa: E402
import torch  # noqa: E402
from tinygrad import Tensor, TinyJit  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402
from extra.onnx_torch_models import resnet18, bert_like, export  # noqa: E402

def best_ms(fn, runs: int) -> float:
  times = []
  for _ in range(runs):
    st = time.perf_counter()
    fn()
    times.append(time.perf_counter() - st)
  return min(times) * 1e3

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--runs", type=int, default=10)
  args = ap.parse_args()
  import onnxruntime as ort
  torch.manual_seed(0)
  rng = np.random.default_rng(0)
  cases = []
  x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
  cases.append(("resnet18", resnet18(), {"x": x}))
  ids, mask = rng.integers(0, 1000, (2, 32)).astype(np.int64), np.ones((2, 32), np.int64)
  cases.append(("bert_like", bert_like(), {"ids": ids, "mask": mask}))
  print(f"{'model':12s} {'tinygrad ms':>12s} {'onnxruntime ms':>15s} {'torch ms':>10s} {'tg/ort':>8s} {'max |diff|':>11s}")
  for name, net, feed in cases:
    model = export(net, tuple(torch.from_numpy(v) for v in feed.values()), list(feed))
    runner = OnnxRunner(model)
    jit = TinyJit(lambda **kw: runner(kw)["out"].realize())
    tg_feed = {k: Tensor(v) for k, v in feed.items()}
    def tg(): return jit(**tg_feed).numpy()
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    def ref(): return sess.run(None, feed)[0]
    tfeed = [torch.from_numpy(v) for v in feed.values()]
    def pt():
      with torch.no_grad(): return net(*tfeed)
    for _ in range(3): out = tg()   # JIT capture
    diff = float(np.abs(out - ref()).max())
    t_tg, t_ort, t_pt = best_ms(tg, args.runs), best_ms(ref, args.runs), best_ms(pt, args.runs)
    print(f"{name:12s} {t_tg:12.2f} {t_ort:15.2f} {t_pt:10.2f} {t_tg / t_ort:8.2f} {diff:11.2e}")

if __name__ == "__main__":
  main()
