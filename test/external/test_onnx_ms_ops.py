# com.microsoft contrib ops of exported transformers, tinygrad vs onnxruntime (which implements them)
import os
import numpy as np
import pytest
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, TensorProto  # noqa: E402
from tinygrad.device import Device  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402

@pytest.fixture(autouse=True)
def onnx_device(monkeypatch):
  monkeypatch.setitem(Device.__dict__, "DEFAULT", os.environ.get("ONNX_TEST_DEVICE", "PYTHON"))

RNG = np.random.default_rng(0)
def f32(*shape): return RNG.standard_normal(shape).astype(np.float32)

def _check(op, feeds: dict, n_out=1, attrs=None, in_names=None, dtypes=None, out_dtypes=None):
  names = in_names or list(feeds)
  node = helper.make_node(op, names, [f"y{i}" for i in range(n_out)], domain="com.microsoft", **(attrs or {}))
  ins = [helper.make_tensor_value_info(k, (dtypes or {}).get(k, TensorProto.FLOAT), v.shape) for k, v in feeds.items()]
  outs = [helper.make_tensor_value_info(f"y{i}", (out_dtypes or [TensorProto.FLOAT] * n_out)[i], None) for i in range(n_out)]
  model = helper.make_model(helper.make_graph([node], "g", ins, outs),
                            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]).SerializeToString()
  ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
  got = OnnxRunner(model)(feeds)
  for r, g in zip(ref, got.values()): np.testing.assert_allclose(g.numpy(), r, rtol=1e-4, atol=1e-5, err_msg=op)

def test_gelus():
  x, b = f32(2, 5, 8), f32(8)
  _check("FastGelu", {"x": x, "b": b})
  _check("BiasGelu", {"x": x, "b": b})
  _check("QuickGelu", {"x": x}, attrs={"alpha": 1.5})

def test_skip_layer_normalization():
  _check("SkipLayerNormalization", {"x": f32(2, 5, 8), "skip": f32(2, 5, 8), "gamma": f32(8), "beta": f32(8), "bias": f32(8)}, attrs={"epsilon": 1e-5})

def test_attention_with_mask():
  b, s, h, heads = 2, 5, 8, 2
  mask = np.ones((b, s), np.int32)
  mask[1, 3:] = 0
  _check("Attention", {"x": f32(b, s, h), "w": f32(h, 3 * h), "bias": f32(3 * h), "mask": mask}, attrs={"num_heads": heads},
         dtypes={"mask": TensorProto.INT32})

def test_embed_layer_normalization():
  ids = RNG.integers(0, 10, (2, 4)).astype(np.int32)
  seg = RNG.integers(0, 2, (2, 4)).astype(np.int32)
  feeds = {"ids": ids, "seg": seg, "word": f32(10, 8), "pos": f32(4, 8), "segemb": f32(2, 8), "gamma": f32(8), "beta": f32(8)}
  _check("EmbedLayerNormalization", feeds, n_out=2, out_dtypes=[TensorProto.FLOAT, TensorProto.INT32], attrs={"epsilon": 1e-5}, dtypes={"ids": TensorProto.INT32, "seg": TensorProto.INT32})
