"""ONNX node-test conformance: write the onnx package's node test cases to disk once, run them with tinygrad's OnnxRunner (or onnxruntime)
and count the passes. Test data (.pb) is read back with our own parser.

  python3 extra/onnx_conformance.py [--backend tinygrad|onnxruntime|both] [-k SUBSTRING] [-j JOBS] [--failures]
"""
from __future__ import annotations
import argparse, collections, json, multiprocessing, os, pathlib, re, shutil, sys, time, traceback
from typing import Any

CACHE = pathlib.Path(os.environ.get("ONNX_NODE_TESTS", pathlib.Path.home() / ".cache" / "tinygrad" / "onnx_node_tests"))

def cache_dir() -> pathlib.Path:
  import onnx
  return CACHE / onnx.__version__

def write_node_tests(out: pathlib.Path|None = None) -> pathlib.Path:
  """Writes every node test case as <name>/model.onnx + test_data_set_N/{input,output}_K.pb once; returns the folder."""
  import numpy as np
  from onnx import numpy_helper, TensorProto
  from onnx.backend.test.case import node
  final = out or cache_dir()
  if (final / "done.json").exists(): return final
  # written to a private folder and renamed into place: parallel test workers never see half a cache
  out = final.parent / f"{final.name}.tmp{os.getpid()}"
  out.mkdir(parents=True, exist_ok=True)
  def encode(v: Any, vi: Any) -> bytes:
    if vi.type.HasField("sequence_type"): return numpy_helper.from_list(v, vi.name).SerializeToString()
    if vi.type.HasField("optional_type"): return numpy_helper.from_optional(v, vi.name).SerializeToString()
    if vi.type.HasField("map_type"): return numpy_helper.from_dict(v, vi.name).SerializeToString()
    if isinstance(v, TensorProto): return v.SerializeToString()
    return numpy_helper.from_array(np.asarray(v), vi.name).SerializeToString()
  names = []
  for case in node.collect_testcases():
    d = out / case.name
    d.mkdir(exist_ok=True)
    (d / "model.onnx").write_bytes(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
      sd = d / f"test_data_set_{i}"
      sd.mkdir(exist_ok=True)
      for j, v in enumerate(inputs): (sd / f"input_{j}.pb").write_bytes(encode(v, case.model.graph.input[j]))
      for j, v in enumerate(outputs): (sd / f"output_{j}.pb").write_bytes(encode(v, case.model.graph.output[j]))
    (d / "tolerance.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
    names.append(case.name)
  (out / "done.json").write_text(json.dumps(sorted(names)))
  try: out.rename(final)
  except OSError: shutil.rmtree(out, ignore_errors=True)   # another process finished first
  return final

def case_names(root: pathlib.Path) -> list[str]: return json.loads((root / "done.json").read_text())

def _kind(vi: Any) -> str:
  t = vi.type
  if t is None: return "tensor"
  return "sequence" if t.sequence_type is not None else "optional" if t.optional_type is not None else "tensor"

def read_data(path: pathlib.Path, vi: Any) -> Any:
  """A test-data .pb as a runner value (Tensor, list for a sequence, None for an empty optional), decoded by our parser."""
  from extra.onnx_parser import onnx_load_message
  from extra.onnx import message_value
  kind = _kind(vi)
  return message_value(onnx_load_message(path, {"sequence": "SequenceProto", "optional": "OptionalProto"}.get(kind, "OnnxTensor")))

def load_case(d: pathlib.Path) -> tuple[Any, list[tuple[list, list]], float, float]:
  from extra.onnx_parser import onnx_load
  model = onnx_load(d / "model.onnx")
  sets = []
  for sd in sorted(d.glob("test_data_set_*")):
    ins = [read_data(sd / f"input_{j}.pb", vi) for j, vi in enumerate(model.graph.input) if (sd / f"input_{j}.pb").exists()]
    outs = [read_data(sd / f"output_{j}.pb", vi) for j, vi in enumerate(model.graph.output)]
    sets.append((ins, outs))
  tol = json.loads((d / "tolerance.json").read_text()) if (d / "tolerance.json").exists() else {"rtol": 1e-3, "atol": 1e-7}   # onnx's defaults
  return model, sets, tol["rtol"], tol["atol"]

def to_numpy(v: Any) -> Any:
  from tinygrad import Tensor, dtypes
  if isinstance(v, list): return [to_numpy(x) for x in v]
  if isinstance(v, Tensor): return (v.cast(dtypes.float32) if v.dtype in (dtypes.bfloat16,) + dtypes.fp8s else v).numpy()
  return v

def compare(expected: Any, got: Any, rtol: float, atol: float, name: str = "") -> None:
  """expected: a runner value; got: a runner value or numpy (onnxruntime). dtype, shape and values must match."""
  import numpy as np
  from tinygrad import Tensor
  if expected is None or got is None:
    if expected is not got: raise AssertionError(f"{name}: expected {expected!r}, got {got!r}")
    return
  if isinstance(expected, list):
    if not isinstance(got, list) or len(got) != len(expected): raise AssertionError(f"{name}: expected a sequence of {len(expected)}, got {got!r}")
    for i, (e, g) in enumerate(zip(expected, got)): compare(e, g, rtol, atol, f"{name}[{i}]")
    return
  if isinstance(expected, Tensor) and isinstance(got, Tensor) and got.dtype != expected.dtype:
    raise AssertionError(f"{name}: dtype {got.dtype}, expected {expected.dtype}")
  e, g = to_numpy(expected), np.asarray(to_numpy(got))
  if e.dtype == object:
    if g.shape != e.shape or [str(v) for v in g.reshape(-1)] != [str(v) for v in e.reshape(-1)]:
      raise AssertionError(f"{name}: strings differ: expected {e!r}, got {g!r}")
    return
  if not isinstance(got, Tensor) and g.dtype != e.dtype: raise AssertionError(f"{name}: dtype {g.dtype}, expected {e.dtype}")
  if g.shape != e.shape: raise AssertionError(f"{name}: shape {g.shape}, expected {e.shape}")
  if e.dtype.kind in "fc": np.testing.assert_allclose(g.astype(e.dtype), e, rtol=rtol, atol=atol, err_msg=name)
  else: np.testing.assert_array_equal(g, e, err_msg=name)

def run_tinygrad(d: pathlib.Path) -> None:
  from extra.onnx import OnnxRunner
  model, sets, rtol, atol = load_case(d)
  runner = OnnxRunner(model)
  for ins, outs in sets:
    res = list(runner({vi.name: v for vi, v in zip(model.graph.input, ins)}).values())
    for i, (e, g) in enumerate(zip(outs, res)): compare(e, g, rtol, atol, model.graph.output[i].name)

def run_onnxruntime(d: pathlib.Path) -> None:
  import onnxruntime as ort
  model, sets, rtol, atol = load_case(d)
  so = ort.SessionOptions()
  so.log_severity_level = 3
  sess = ort.InferenceSession(str(d / "model.onnx"), so, providers=["CPUExecutionProvider"])
  for ins, outs in sets:
    res = sess.run(None, {vi.name: to_numpy(v) for vi, v in zip(model.graph.input, ins)})
    for i, (e, g) in enumerate(zip(outs, res)): compare(e, g, rtol, atol, model.graph.output[i].name)

def op_of(d: pathlib.Path) -> str:
  """The op a case tests: the graph's op whose snake_case name starts the case name (longest match), else its first op."""
  from extra.onnx_parser import onnx_load
  g = onnx_load(d / "model.onnx", load_external_data=False).graph
  assert g is not None
  name = d.name[5:]
  best = ""
  for n in g.node:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", n.op_type).lower()
    if (name.startswith(snake) or name.startswith(n.op_type.lower())) and len(n.op_type) > len(best): best = n.op_type
  return best or (g.node[0].op_type if g.node else "?")

def _run_one(args: tuple[str, str]) -> tuple[str, str, str|None, float]:
  backend, d = args
  st = time.perf_counter()
  try:
    (run_tinygrad if backend == "tinygrad" else run_onnxruntime)(pathlib.Path(d))
    err = None
  except Exception as e:
    err = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
    if os.environ.get("TRACE"): traceback.print_exc()
  return backend, d, err, time.perf_counter() - st

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--backend", default="tinygrad", choices=["tinygrad", "onnxruntime", "both"])
  ap.add_argument("-k", default="", help="only cases whose name contains this")
  ap.add_argument("-j", type=int, default=1, help="worker processes")
  ap.add_argument("--failures", action="store_true", help="list each failing case with its error")
  ap.add_argument("--json", help="write {case: error or null} here")
  args = ap.parse_args()
  root = write_node_tests()
  names = [n for n in case_names(root) if args.k in n]
  backends = ["tinygrad", "onnxruntime"] if args.backend == "both" else [args.backend]
  for backend in backends:
    jobs = [(backend, str(root / n)) for n in names]
    st = time.perf_counter()
    if args.j > 1:
      with multiprocessing.Pool(args.j, maxtasksperchild=50) as pool: results = list(pool.imap_unordered(_run_one, jobs, chunksize=4))
    else: results = [_run_one(j) for j in jobs]
    fails = {pathlib.Path(d).name: e for _, d, e, _ in results if e is not None}
    print(f"{backend}: {len(names) - len(fails)} of {len(names)} node tests pass ({time.perf_counter() - st:.0f} s)")
    by_op: dict[str, list[str]] = collections.defaultdict(list)
    for n in fails: by_op[op_of(root / n)].append(n)
    for op, cases in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0])):
      print(f"  {op:28s} {len(cases):3d}  {' '.join(c[5:] for c in sorted(cases))[:200]}")
      if args.failures:
        for c in sorted(cases): print(f"      {c}: {fails[c]}")
    if args.json: pathlib.Path(args.json.replace("%s", backend)).write_text(json.dumps({pathlib.Path(d).name: e for _, d, e, _ in results}, indent=1))

if __name__ == "__main__":
  sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])   # extra/ itself first would shadow the onnx package with extra/onnx.py
  main()
