#!/usr/bin/env python3
"""Run any ONNX model with tinygrad: random inputs from the graph's input shapes (or .npy/.pb files), outputs and timings printed,
compared with onnxruntime when it is installed.

  python3 examples/onnx_run.py MODEL.onnx [--input NAME=FILE.npy|FILE.pb ...] [--dim NAME=SIZE ...] [--runs N] [--no-jit]
"""
import argparse, pathlib, sys, time
sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])   # the repo root, so `extra` imports
import numpy as np  # noqa: E402
from tinygrad import Tensor, dtypes  # noqa: E402
from tinygrad.tensor import _to_np_dtype  # noqa: E402
from extra.onnx import OnnxRunner, onnx_load_message, message_value, onnx_dtype  # noqa: E402

def random_input(shape, dtype, dims: dict[str, int], rng) -> np.ndarray:
  concrete = [d if isinstance(d, int) and d > 0 else dims.get(str(d), 1) for d in shape]
  npdt = np.dtype(_to_np_dtype(dtype)) if dtype != dtypes.bool else np.dtype(bool)
  if npdt.kind == "f": return rng.standard_normal(concrete).astype(npdt)
  if npdt.kind == "b": return rng.random(concrete) > 0.5
  return rng.integers(0, 4, concrete).astype(npdt)

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("model")
  ap.add_argument("--input", action="append", default=[], help="NAME=FILE (.npy or TensorProto .pb)")
  ap.add_argument("--dim", action="append", default=[], help="NAME=SIZE for a symbolic dim (default 1)")
  ap.add_argument("--runs", type=int, default=3)
  ap.add_argument("--no-jit", action="store_true", help="run the graph in Python every call (by default calls from the third on replay kernels)")
  ap.add_argument("--seed", type=int, default=0)
  args = ap.parse_args()

  st = time.perf_counter()
  runner = OnnxRunner(args.model, jit=not args.no_jit)
  g = runner.graph
  print(f"loaded {args.model}: opsets {runner.opsets}, {len(g.node)} nodes, {len(runner.initializers)} initializers "
        f"in {(time.perf_counter() - st) * 1e3:.1f} ms")
  dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
  files = dict(i.split("=", 1) for i in args.input)
  rng = np.random.default_rng(args.seed)
  inputs: dict[str, np.ndarray] = {}
  for vi in runner.inputs:
    if vi.name in files:
      fn = files[vi.name]
      inputs[vi.name] = np.load(fn) if fn.endswith(".npy") else message_value(onnx_load_message(fn)).numpy()
    else: inputs[vi.name] = random_input(vi.shape or (), onnx_dtype(vi.elem_type or 1), dims, rng)
    print(f"  input {vi.name}: {inputs[vi.name].shape} {inputs[vi.name].dtype}")

  def run(feed): return {k: v.realize() if isinstance(v, Tensor) else v for k, v in runner(feed).items()}
  outs, times = {}, []
  for i in range(max(args.runs, 1)):
    st = time.perf_counter()
    feed = {k: Tensor(v) for k, v in inputs.items()}
    outs = run(feed)
    for v in outs.values():
      if isinstance(v, Tensor): v.numpy()
    times.append(time.perf_counter() - st)
    print(f"\rrun {i + 1}/{args.runs}: {times[-1] * 1e3:9.2f} ms ({runner.node_count} nodes)", end="", flush=True)
  print()
  for name, v in outs.items():
    arr = v.numpy() if isinstance(v, Tensor) else v
    print(f"  output {name}: {getattr(arr, 'shape', None)} {getattr(arr, 'dtype', type(arr).__name__)}")
    print(f"    {np.array2string(np.asarray(arr).reshape(-1)[:8])}")
  print(f"tinygrad: first {times[0] * 1e3:.2f} ms, best {min(times) * 1e3:.2f} ms")

  try: import onnxruntime as ort
  except ImportError:
    print("onnxruntime is not installed: no comparison")
    return
  sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
  ort_times = []
  for _ in range(max(args.runs, 1)):
    st = time.perf_counter()
    ref = sess.run(None, inputs)
    ort_times.append(time.perf_counter() - st)
  print(f"onnxruntime: best {min(ort_times) * 1e3:.2f} ms")
  for (name, v), r in zip(outs.items(), ref):
    arr = np.asarray(v.numpy() if isinstance(v, Tensor) else v)
    if arr.dtype.kind in "fc":
      err = float(np.max(np.abs(arr.astype(np.float64) - r.astype(np.float64)))) if arr.size else 0.0
      print(f"  {name}: max abs difference {err:.3g}")
    else: print(f"  {name}: {'equal' if np.array_equal(arr, r) else 'DIFFERENT'}")

if __name__ == "__main__":
  main()
