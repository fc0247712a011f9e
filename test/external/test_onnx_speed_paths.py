# the runner's speed paths give the same answers as the plain ones: realized matmul operands, the float32 erf, Gather as one load per
# element (codegen's reduce_gather), the max pool over unflattened windows
import math
import numpy as np
import pytest
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402
from tinygrad import Tensor, TinyJit  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402
from tinygrad.engine.jit import GraphRunner  # noqa: E402
from tinygrad.device import Device  # noqa: E402
from tinygrad.codegen.program import get_program  # noqa: E402
from extra.onnx import OnnxRunner  # noqa: E402
from extra import onnx_ops  # noqa: E402

def _model(nodes, inputs, outputs, initializers=(), opset=17):
  g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
def _vi(name, shape, dt=TensorProto.FLOAT): return helper.make_tensor_value_info(name, dt, shape)

def _kernel_asts(jit: TinyJit) -> list:
  items = [x for ei in jit.jit_cache for x in (ei.prg.jit_cache if isinstance(ei.prg, GraphRunner) else [ei])]
  return [ei.prg.p.ast for ei in items]

def test_erf_float32_within_3_ulp():
  x = np.concatenate([np.linspace(-9, 9, 40001), [0.0, -0.0, 1e-30, -1e-7, 0.99999994, 1.0, -1.0, 3.9, 10.0]]).astype(np.float32)
  got = onnx_ops.Erf(Tensor(x)).numpy()
  want = np.array([math.erf(float(v)) for v in x])
  ulp = np.abs(got - want) / np.maximum(np.spacing(np.abs(want).astype(np.float32)), np.float32(1e-45))
  assert ulp.max() <= 3, (ulp.max(), x[ulp.argmax()])
  assert np.signbit(got[40002]) and not np.signbit(got[40001]) and got[-1] == 1.0   # erf(-0.0) is -0.0
  special = onnx_ops.Erf(Tensor(np.array([np.inf, -np.inf, np.nan], np.float32))).numpy()
  assert special[0] == 1 and special[1] == -1 and np.isnan(special[2])

def test_gelu_between_matmuls_is_computed_once_under_jit():
  # MatMul -> Gelu (erf form, as exported) -> MatMul: the gelu is stored once (fused into the first GEMM), not recomputed in the second
  rng = np.random.default_rng(0)
  w1, w2 = rng.standard_normal((16, 64)).astype(np.float32) / 4, rng.standard_normal((64, 8)).astype(np.float32) / 8
  nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h"]), helper.make_node("Div", ["h", "sqrt2"], ["hd"]), helper.make_node("Erf", ["hd"], ["e"]),
           helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["g2"]), helper.make_node("Mul", ["g2", "half"], ["g"]),
           helper.make_node("MatMul", ["g", "w2"], ["y"])]
  b1 = rng.standard_normal(64).astype(np.float32)
  inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.float32(math.sqrt(2)), "sqrt2"),
           numpy_helper.from_array(np.float32(1), "one"), numpy_helper.from_array(np.float32(0.5), "half")]
  runner = OnnxRunner(_model(nodes, [_vi("x", [4, 16])], [_vi("y", [4, 8])], inits))
  jit = TinyJit(lambda x: runner({"x": x})["y"].realize())
  for _ in range(3):
    x = rng.standard_normal((4, 16)).astype(np.float32)
    out = jit(Tensor(x)).numpy()
    h = x @ w1 + b1
    want = (h * 0.5 * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))) @ w2
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
  # two kernels, GEMM+bias+gelu then GEMM: the exp of the erf is in the first only, not recomputed by the second for every output column
  kernels = _kernel_asts(jit)
  assert len(kernels) == 2 and [any(u.op in (Ops.EXP, Ops.EXP2) for u in k.toposort()) for k in kernels] == [True, False]

def _gather_model(table: np.ndarray, idx_shape):
  return _model([helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)], [_vi("ids", idx_shape, TensorProto.INT64)],
                [_vi("y", list(idx_shape) + list(table.shape[1:]))], [numpy_helper.from_array(table, "table")])

def test_embedding_of_constant_table_is_exact():
  rng = np.random.default_rng(1)
  table = rng.standard_normal((300, 24)).astype(np.float32)
  table[7, 3] = -0.0
  runner = OnnxRunner(_gather_model(table, [3, 5]))
  ids = rng.integers(-300, 300, (3, 5)).astype(np.int64)
  ids[0, 0], ids[0, 1] = 7, -1
  np.testing.assert_array_equal(runner({"ids": ids})["y"].numpy(), table[ids])   # negative ids count from the end, like numpy
  # the same under TinyJit, with new ids each call
  jit = TinyJit(lambda i: runner({"ids": i})["y"].realize())
  for _ in range(3):
    ids = rng.integers(0, 300, (3, 5)).astype(np.int64)
    np.testing.assert_array_equal(jit(Tensor(ids)).numpy(), table[ids])
  # each output element is one load from the table: no kernel loops over its 300 rows
  for ast in _kernel_asts(jit):
    p = get_program(ast, Device[Device.DEFAULT].renderer)
    assert not any(u.op is Ops.RANGE and u.src[0].op is Ops.CONST and u.src[0].arg % 75 == 0 for u in p.uops), p.src

def test_embedding_of_table_with_inf_and_nan_keeps_them_to_their_rows():
  table = np.arange(40, dtype=np.float32).reshape(10, 4)
  table[2, 1], table[5, 0] = np.inf, np.nan
  ids = np.array([[0, 2, 5, 9], [1, 1, 3, 4]], np.int64)
  out = OnnxRunner(_gather_model(table, [2, 4]))({"ids": ids})["y"].numpy()
  np.testing.assert_array_equal(out, table[ids])   # a one-hot GEMM would spread 0 * inf = nan over every row

def test_embedding_of_graph_input_is_plain_gather():
  # data that is an input, not an initializer, may hold anything from call to call: the plain gather
  m = _model([helper.make_node("Gather", ["t", "ids"], ["y"], axis=0)], [_vi("t", [6, 2]), _vi("ids", [9], TensorProto.INT64)], [_vi("y", [9, 2])])
  r = OnnxRunner(m)
  ids = np.array([0, 1, 2, 3, 4, 5, 5, 0, 1], np.int64)
  for t in (np.arange(12, dtype=np.float32).reshape(6, 2), np.full((6, 2), np.inf, np.float32)):
    np.testing.assert_array_equal(r({"t": t, "ids": ids})["y"].numpy(), t[ids])

@pytest.mark.parametrize("k,s,p", [((3, 3), (2, 2), (1, 1, 1, 1)), ((2, 3), (1, 2), (0, 1, 1, 0))])
def test_maxpool_matches_torch(k, s, p):
  torch = pytest.importorskip("torch")
  x = np.random.default_rng(2).standard_normal((2, 3, 11, 10)).astype(np.float32)
  m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=list(k), strides=list(s), pads=list(p))], [_vi("x", [2, 3, 11, 10])],
             [_vi("y", None)])
  out = OnnxRunner(m)({"x": x})["y"].numpy()
  xt = torch.nn.functional.pad(torch.from_numpy(x), (p[1], p[3], p[0], p[2]), value=-math.inf)
  np.testing.assert_array_equal(out, torch.nn.functional.max_pool2d(xt, k, s).numpy())

def _conv_bn_model(with_bias: bool, extra_reader: bool = False):
  rng = np.random.default_rng(3)
  w = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
  b = rng.standard_normal(6).astype(np.float32)
  scale, shift = rng.uniform(0.5, 2, 6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
  mean, var = rng.standard_normal(6).astype(np.float32), rng.uniform(0.5, 2, 6).astype(np.float32)
  nodes = [helper.make_node("Conv", ["x", "w", "b"] if with_bias else ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
           helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["y"], epsilon=1e-3), helper.make_node("Relu", ["y"], ["z"])]
  outs = [_vi("z", [1, 6, 8, 8])]
  if extra_reader:
    nodes.append(helper.make_node("Neg", ["c"], ["n"]))
    outs.append(_vi("n", [1, 6, 8, 8]))
  inits = [numpy_helper.from_array(v, n) for v, n in ((w, "w"), (b, "b"), (scale, "scale"), (shift, "shift"), (mean, "mean"), (var, "var"))]
  return _model(nodes, [_vi("x", [1, 3, 8, 8])], outs, inits), (w, b if with_bias else None, scale, shift, mean, var)

@pytest.mark.parametrize("with_bias,extra_reader", [(True, False), (False, False), (True, True)])
def test_batchnorm_folded_into_conv(with_bias, extra_reader):
  torch = pytest.importorskip("torch")
  model, (w, b, scale, shift, mean, var) = _conv_bn_model(with_bias, extra_reader)
  runner = OnnxRunner(model)
  ops = [n.op_type for n in runner.exec_graph.node]
  assert ops == (["Conv", "BatchNormalization", "Relu", "Neg"] if extra_reader else ["Conv", "Relu"])   # a conv read elsewhere stays
  x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
  c = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b), padding=1)
  y = torch.nn.functional.batch_norm(c, torch.from_numpy(mean), torch.from_numpy(var), torch.from_numpy(scale), torch.from_numpy(shift), eps=1e-3)
  np.testing.assert_allclose(runner({"x": x})["z"].numpy(), y.relu().numpy(), rtol=1e-5, atol=1e-5)

def test_constant_subgraph_folded_at_load_and_overridable_initializer_not():
  # Transpose(w) of a weight runs once at load; a node reading an initializer that is also a graph input (a default) runs every call
  w = np.arange(6, dtype=np.float32).reshape(2, 3)
  nodes = [helper.make_node("Transpose", ["w"], ["wt"]), helper.make_node("MatMul", ["x", "wt"], ["y"]), helper.make_node("Neg", ["d"], ["nd"]),
           helper.make_node("Add", ["y", "nd"], ["z"])]
  m = _model(nodes, [_vi("x", [1, 3]), _vi("d", [1, 2])], [_vi("z", [1, 2])],
             [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.ones((1, 2), np.float32), "d")])
  runner = OnnxRunner(m)
  assert [n.op_type for n in runner.exec_graph.node] == ["MatMul", "Neg", "Add"]
  x = np.array([[1, 2, 3]], np.float32)
  np.testing.assert_array_equal(runner({"x": x})["z"].numpy(), x @ w.T - 1)
  np.testing.assert_array_equal(runner({"x": x, "d": np.full((1, 2), 5, np.float32)})["z"].numpy(), x @ w.T - 5)

def test_matrix_vector_operand_not_realized_separately():
  # a matrix-vector product reads each element of A once: the elementwise maths in front of it stays in the one kernel
  w = np.arange(4, dtype=np.float32).reshape(4, 1)
  m = _model([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])], [_vi("x", [3, 4])], [_vi("y", [3, 1])],
             [numpy_helper.from_array(w, "w")])
  runner = OnnxRunner(m)
  jit = TinyJit(lambda x: runner({"x": x})["y"].realize())
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  for _ in range(3): out = jit(Tensor(x)).numpy()
  np.testing.assert_allclose(out, np.exp(x) @ w, rtol=1e-6)
  assert len(_kernel_asts(jit)) == 1

def test_shape_maths_under_jit():
  # Reshape(x, Concat(Gather(Shape(x), 0), [-1])) and Range(0, Gather(Shape(x), 1)): the shape values are read while TinyJit captures
  nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Constant", [], ["i0"], value=numpy_helper.from_array(np.array([0], np.int64))),
           helper.make_node("Gather", ["s", "i0"], ["b"]), helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
           helper.make_node("Concat", ["b", "m1"], ["shp"], axis=0), helper.make_node("Reshape", ["x", "shp"], ["y"]),
           helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
           helper.make_node("Gather", ["s", "one"], ["n"]), helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
           helper.make_node("Range", ["zero", "n", "one"], ["r"])]
  runner = OnnxRunner(_model(nodes, [_vi("x", ["a", "b", 2])], [_vi("y", None), _vi("r", None, TensorProto.INT64)]))
  jit = TinyJit(lambda x: tuple(v.clone().realize() for v in runner({"x": x}).values()))
  for k in range(3):
    x = np.arange(24, dtype=np.float32).reshape(2, 6, 2) + k
    y, r = jit(Tensor(x))
    np.testing.assert_array_equal(y.numpy(), x.reshape(2, -1))
    np.testing.assert_array_equal(r.numpy(), np.arange(6))

def test_softmax_with_masks_matches_numpy():
  # differences below -80 exp to 0 (no denormals, which cost a microcode assist in every kernel reading them): an absolute error < 2e-35
  rng = np.random.default_rng(5)
  x = rng.standard_normal((3, 40)).astype(np.float32) * 4
  x[0, 5:] -= 10000.0
  x[1, :7] = -np.inf
  x[2, 3] = 80.0
  m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=-1), helper.make_node("LogSoftmax", ["x"], ["z"], axis=-1)],
             [_vi("x", [3, 40])], [_vi("y", [3, 40]), _vi("z", [3, 40])])
  out = OnnxRunner(m)({"x": x})
  xd = x.astype(np.float64)
  e = np.exp(xd - xd.max(-1, keepdims=True))
  y = out["y"].numpy()
  np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=2e-35)
  assert not ((y != 0) & (np.abs(y) < np.finfo(np.float32).tiny)).any()   # no denormal
  assert (y[0, 5:] == 0).all() and (y[1, :7] == 0).all()
  np.testing.assert_allclose(out["z"].numpy(), (xd - xd.max(-1, keepdims=True)) - np.log(e.sum(-1, keepdims=True)), rtol=1e-5)
