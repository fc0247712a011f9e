# real exported models: ResNet-18 and a BERT-like encoder from torch.onnx.export (random weights), tinygrad vs onnxruntime to 1e-4
import numpy as np
import pytest
torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
from tinygrad import Tensor, TinyJit  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402
from extra.onnx_torch_models import resnet18, bert_like, export  # noqa: E402

def _ort(model: bytes, feed: dict) -> list:
  return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)

def test_resnet18_matches_onnxruntime():
  torch.manual_seed(0)
  net = resnet18(num_classes=10)
  for m in net.modules():   # non-trivial batchnorm statistics
    if isinstance(m, torch.nn.BatchNorm2d): m.running_mean.uniform_(-0.1, 0.1); m.running_var.uniform_(0.5, 1.5)
  x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
  model = export(net, (torch.from_numpy(x),), ["x"])
  out = OnnxRunner(model)({"x": x})["out"].numpy()
  np.testing.assert_allclose(out, _ort(model, {"x": x})[0], rtol=1e-4, atol=1e-4)

def test_bert_like_matches_onnxruntime_under_jit():
  torch.manual_seed(0)
  rng = np.random.default_rng(0)
  ids = torch.from_numpy(rng.integers(0, 1000, (2, 32)))
  mask = torch.ones(2, 32, dtype=torch.int64)
  mask[1, 20:] = 0
  model = export(bert_like(), (ids, mask), ["ids", "mask"])
  runner = OnnxRunner(model)
  jit = TinyJit(lambda i, m: runner({"ids": i, "mask": m})["out"].realize())
  for step in range(6):   # the eager call, the capture and four replays
    ids_np = rng.integers(0, 1000, (2, 32)).astype(np.int64)
    out = jit(Tensor(ids_np), Tensor(mask.numpy())).numpy()
    np.testing.assert_allclose(out, _ort(model, {"ids": ids_np, "mask": mask.numpy()})[0], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")

def test_bert_like_dynamic_axes_under_jit():
  # exported with dynamic batch and sequence dims, the graph computes its reshapes from Shape -> Gather -> Concat: shape maths the runner
  # does once, also while TinyJit captures, so its values can be read there
  import io
  torch.manual_seed(0)
  rng = np.random.default_rng(1)
  net = bert_like().eval()
  ids, mask = rng.integers(0, 1000, (2, 32)), np.ones((2, 32), np.int64)
  f = io.BytesIO()
  with torch.no_grad():
    torch.onnx.export(net, (torch.from_numpy(ids), torch.from_numpy(mask)), f, input_names=["ids", "mask"], output_names=["out"], opset_version=17,
                      dynamo=False, dynamic_axes={"ids": {0: "b", 1: "s"}, "mask": {0: "b", 1: "s"}})
  model = f.getvalue()
  runner = OnnxRunner(model)
  assert any(n.op_type == "Shape" for n in runner.exec_graph.node)
  jit = TinyJit(lambda i, m: runner({"ids": i, "mask": m})["out"].realize())
  for step in range(3):
    ids_np = rng.integers(0, 1000, (2, 32)).astype(np.int64)
    mask[1, 10 + step:] = 0
    out = jit(Tensor(ids_np), Tensor(mask)).numpy()
    np.testing.assert_allclose(out, _ort(model, {"ids": ids_np, "mask": mask})[0], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
  # another length is another capture, with its own shape values
  ids_np, mask_np = rng.integers(0, 1000, (3, 20)).astype(np.int64), np.ones((3, 20), np.int64)
  out = OnnxRunner(model)({"ids": ids_np, "mask": mask_np})["out"].numpy()
  np.testing.assert_allclose(out, _ort(model, {"ids": ids_np, "mask": mask_np})[0], rtol=1e-4, atol=1e-4)
  # the runner's own replays (no TinyJit around it): shapes alternating, each call's answer right and kept
  sess, runner = ort.InferenceSession(model, providers=["CPUExecutionProvider"]), OnnxRunner(model)
  feeds = [{"ids": rng.integers(0, 1000, shp).astype(np.int64), "mask": np.ones(shp, np.int64)} for shp in [(2, 32)] * 4 + [(3, 20)] * 3 + [(2, 32)]]
  outs = [runner(feed)["out"] for feed in feeds]
  for step, (feed, got) in enumerate(zip(feeds, outs)):
    np.testing.assert_allclose(got.numpy(), sess.run(None, feed)[0], rtol=1e-4, atol=1e-4, err_msg=f"call {step}")
  assert sorted(j.cnt for j in runner._jits.values()) == [3, 5]   # 2x32: captured and 3 replays; 3x20: captured and 1 replay

def test_resnet18_numpy_replays_match_onnxruntime():
  # replays of numpy inputs (bound in place where the device computes on host memory): fresh arrays and one rewritten in place
  from tinygrad import Device
  torch.manual_seed(1)
  rng = np.random.default_rng(1)
  x = rng.standard_normal((1, 3, 96, 96)).astype(np.float32)   # 108 KiB: over IN_PLACE_MIN
  model = export(resnet18(num_classes=10), (torch.from_numpy(x),), ["x"])
  runner, sess = OnnxRunner(model), ort.InferenceSession(model, providers=["CPUExecutionProvider"])
  for step in range(6):
    if step == 4: x[:] = rng.standard_normal(x.shape)   # the same memory, new values
    elif step != 5: x = rng.standard_normal((1, 3, 96, 96)).astype(np.float32)
    np.testing.assert_allclose(runner({"x": x})["out"].numpy(), sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
  ((_, (xin,), _),) = runner._numpy_replays.values()
  assert xin.in_place == getattr(Device[Device.DEFAULT].allocator, "host_memory", False)
