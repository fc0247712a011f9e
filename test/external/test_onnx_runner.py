# OnnxRunner behaviour (input checks, opset semantics, errors, TinyJit) and the model suites the onnx wheel ships under backend/test/data
import os, pathlib
import numpy as np
import pytest
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402
from tinygrad import Tensor, TinyJit  # noqa: E402
from tinygrad.device import Device  # noqa: E402
from extra.onnx import OnnxRunner, onnx_load  # noqa: E402
from extra.onnx_conformance import run_tinygrad, compare  # noqa: E402
from extra.onnx import message_value  # noqa: E402
from extra.onnx_parser import onnx_load_message  # noqa: E402

DATA = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data"
MODEL_DEVICE = Device.DEFAULT   # whole networks run on the real default device, not the emulator

@pytest.fixture(autouse=True)
def onnx_device(monkeypatch):
  monkeypatch.setitem(Device.__dict__, "DEFAULT", os.environ.get("ONNX_TEST_DEVICE", "PYTHON"))

def _model(nodes, inputs, outputs, opset=17, initializers=()):
  g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

def _vi(name, shape, dt=TensorProto.FLOAT): return helper.make_tensor_value_info(name, dt, shape)

def test_runner_basic_and_output_order():
  m = _model([helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Mul", ["x", "y"], ["p"])],
             [_vi("x", ["n", 3]), _vi("y", [1, 3])], [_vi("p", ["n", 3]), _vi("s", ["n", 3])])
  x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[1, 2, 3]], np.float32)
  out = OnnxRunner(m)({"x": x, "y": Tensor(y)})
  assert list(out) == ["p", "s"]
  np.testing.assert_equal(out["p"].numpy(), x * y)
  np.testing.assert_equal(out["s"].numpy(), x + y)

def test_runner_checks_inputs():
  r = OnnxRunner(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["n", 3])], [_vi("y", ["n", 3])]))
  with pytest.raises(RuntimeError, match="dim 1 must be 3"): r({"x": np.zeros((2, 4), np.float32)})
  with pytest.raises(RuntimeError, match="2 dims"): r({"x": np.zeros((3,), np.float32)})
  with pytest.raises(TypeError, match="expected dtype"): r({"x": np.zeros((2, 3), np.int32)})
  with pytest.raises(KeyError, match="missing input"): r({})
  with pytest.raises(KeyError, match="unknown inputs"): r({"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)})

def test_unsupported_op_names_op_domain_opset():
  g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")], "g", [_vi("x", [1])], [_vi("y", [1])])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 3)])
  with pytest.raises(NotImplementedError, match=r"Frobnicate.*com\.example.*3"): OnnxRunner(m.SerializeToString())({"x": np.ones(1, np.float32)})

@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_axes_attribute_vs_input(opset):
  x = np.zeros((1, 3, 1), np.float32)
  if opset < 13: m = _model([helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [_vi("x", [1, 3, 1])], [_vi("y", None)], opset)
  else:
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    m = _model([helper.make_node("Squeeze", ["x", "axes"], ["y"])], [_vi("x", [1, 3, 1])], [_vi("y", None)], opset, [axes])
  assert OnnxRunner(m)({"x": x})["y"].shape == (3, 1)

@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axis_semantics_by_opset(opset):
  x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
  m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [_vi("x", [2, 3, 4])], [_vi("y", [2, 3, 4])], opset)
  y = OnnxRunner(m)({"x": x})["y"].numpy()
  if opset < 13: e = np.exp(x.reshape(2, 12)); ref = (e / e.sum(1, keepdims=True)).reshape(2, 3, 4)   # flattened to 2-D from axis on
  else: e = np.exp(x); ref = e / e.sum(1, keepdims=True)
  np.testing.assert_allclose(y, ref, rtol=1e-5)

def test_tinyjit():
  w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32), "w")
  r = OnnxRunner(_model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                        [_vi("x", [2, 4])], [_vi("y", [2, 5])], initializers=[w]))
  jit = TinyJit(lambda x: r({"x": x})["y"].realize())
  for i in range(4):
    x = np.random.default_rng(i).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(jit(Tensor(x)).numpy(), np.maximum(x @ numpy_helper.to_array(w), 0), rtol=1e-5, atol=1e-6)

def test_tensor_of_bytes_and_onnx_load_reexport():
  raw = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
  assert onnx_load(raw).graph.node[0].op_type == "Neg"
  np.testing.assert_equal(OnnxRunner(Tensor(raw))({"x": np.array([1, -2], np.float32)})["y"].numpy(), [-1, 2])

def test_if_loop_control_flow():
  then = helper.make_graph([helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array([1.0], np.float32)))], "then", [],
                           [_vi("t", [1])])
  other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", [1])])
  m = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [_vi("c", [], TensorProto.BOOL), _vi("x", [1])],
             [_vi("y", [1])])
  r = OnnxRunner(m)
  assert r({"c": np.array(True), "x": np.array([5.0], np.float32)})["y"].tolist() == [1.0]
  assert r({"c": np.array(False), "x": np.array([5.0], np.float32)})["y"].tolist() == [-5.0]

def _dirs(suite): return sorted(p.name for p in (DATA / suite).iterdir() if (p / "model.onnx").exists())

@pytest.mark.parametrize("suite_case", [f"{s}/{c}" for s in ("simple", "pytorch-converted", "pytorch-operator") for c in _dirs(s)])
def test_shipped_suites(suite_case):
  if "test_gradient_of" in suite_case: pytest.xfail("the Gradient op (ai.onnx.preview.training) is not supported")
  run_tinygrad(DATA / suite_case)

LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet", "vgg19", "zfnet512"]
@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT)
def test_light_models(name, monkeypatch):
  monkeypatch.setitem(Device.__dict__, "DEFAULT", MODEL_DEVICE)
  # input as onnx's backend runner makes it for these models: arange(n) / n; expected output shipped next to the model
  model = onnx_load(DATA / "light" / f"light_{name}.onnx")
  r = OnnxRunner(model)
  feed = {}
  for vi in r.inputs:
    shape = tuple(d if isinstance(d, int) else 1 for d in vi.shape)
    n = int(np.prod(shape))
    feed[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
  out = list(r(feed).values())[0]
  expected = message_value(onnx_load_message(DATA / "light" / f"light_{name}_output_0.pb"))
  compare(expected, out, 2e-3, 1e-5, name)
