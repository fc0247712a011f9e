# OnnxRunner behaviour (input checks, opset semantics, errors, TinyJit) and the model suites the onnx wheel ships under backend/test/data
import os, pathlib
import numpy as np
import pytest
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402
from tinygrad import Tensor, TinyJit, GlobalCounters  # noqa: E402
from tinygrad.device import Device  # noqa: E402
import extra.onnx  # noqa: E402
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

def test_node_reading_an_undefined_value_is_a_clear_error():
  # a malformed graph (found by the parser fuzz): a node reads a name that no input, initializer or earlier node defines
  r = OnnxRunner(_model([helper.make_node("Relu", ["nope"], ["y"])], [_vi("x", [2])], [_vi("y", [2])]))
  with pytest.raises(ValueError, match="reads 'nope', which no earlier node or input defines"): r({"x": np.zeros(2, np.float32)})

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

def _matmul_relu_runner(**kw):
  w = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
  r = OnnxRunner(_model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                        [_vi("x", ["n", 4])], [_vi("y", ["n", 5])], initializers=[numpy_helper.from_array(w, "w")]), **kw)
  return r, w

def test_repeated_calls_replay_and_keep_their_outputs():
  r, w = _matmul_relu_runner()
  xs = [np.random.default_rng(i).standard_normal((2 if i < 5 else 3, 4)).astype(np.float32) for i in range(7)]
  outs = [r({"x": x})["y"] for x in xs]   # a new batch size at call 5: captured anew
  for x, y in zip(xs, outs): np.testing.assert_allclose(y.numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)   # no output overwritten
  assert sorted(j.cnt for j in r._jits.values()) == [2, 5]   # n=2: captured in call 2, calls 3-5 replayed; n=3: captured in its call 2
  kernels, r.node_count = GlobalCounters.kernel_count, 0
  r({"x": xs[0]})
  assert GlobalCounters.kernel_count - kernels == 1 and r.node_count == 0   # a replay: the fused matmul+relu, no node run in Python
  for n in (4, 5, 6, 2, 2, 2):   # 4 signatures: only the MAX_JITS (here 2) used last keep a capture, the answers stay right
    with pytest.MonkeyPatch.context() as mp:
      mp.setattr(extra.onnx, "MAX_JITS", 2)
      x = np.full((n, 4), n, np.float32)
      np.testing.assert_allclose(r({"x": x})["y"].numpy(), np.maximum(x @ w, 0), rtol=1e-5)
  assert [k[0][1][0] for k in r._jits] == [6, 2]
  r_eager, _ = _matmul_relu_runner(jit=False)
  r_eager({"x": xs[0]}), r_eager({"x": xs[1]})
  assert r_eager._jits == {}

def test_replayed_outputs_are_not_copied_unless_held():
  # a replay hands out the capture's output buffer itself; the next replay overwrites it only if nothing holds the last call's output
  r, w = _matmul_relu_runner()
  xs = [np.random.default_rng(i).standard_normal((2, 4)).astype(np.float32) for i in range(8)]
  def ref(x): return np.maximum(x @ w, 0)
  for x in xs[:3]: np.testing.assert_allclose(r({"x": x})["y"].numpy(), ref(x), rtol=1e-5, atol=1e-6)
  first = id(r({"x": xs[3]})["y"])
  assert id(r({"x": xs[4]})["y"]) == first   # nothing held the last one: the same Tensor again, no copy made
  held = r({"x": xs[5]})["y"]
  lazy = held * 2 + 1   # a graph built from an output, not yet run
  sliced = held[1:]
  again = r({"x": xs[6]})["y"]
  assert again is not held
  np.testing.assert_allclose(held.numpy(), ref(xs[5]), rtol=1e-5, atol=1e-6)   # kept its values
  np.testing.assert_allclose(lazy.numpy(), ref(xs[5]) * 2 + 1, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(sliced.numpy(), ref(xs[5])[1:], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(again.numpy(), ref(xs[6]), rtol=1e-5, atol=1e-6)
  # a raw Buffer taken from an output (the Tensor itself dropped) keeps its values too
  raw = r({"x": xs[7]})["y"].uop.buffer
  np.testing.assert_allclose(r({"x": xs[0]})["y"].numpy(), ref(xs[0]), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(raw.numpy().reshape(2, -1), ref(xs[7]), rtol=1e-5, atol=1e-6)
  del raw
  first = id(r({"x": xs[1]})["y"])
  assert id(r({"x": xs[2]})["y"]) == first   # nothing held since: no copy again
  # an output fed back as the next call's input (a Tensor, the slow path) is read before the replay overwrites anything
  sq = OnnxRunner(_model([helper.make_node("Mul", ["x", "x"], ["y"])], [_vi("x", [3])], [_vi("y", [3])]))
  v = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
  for _ in range(4): v = sq({"x": v})["y"]
  np.testing.assert_allclose(v.numpy(), np.array([1.0, 2.0, 3.0]) ** 16, rtol=1e-6)

def test_numpy_inputs_replay_without_checks_or_graphs():
  # numpy inputs of a signature replayed before are copied straight into the capture's inputs: any order, layout, bool, 0-d
  m = _model([helper.make_node("Where", ["c", "a", "b"], ["w"]), helper.make_node("Mul", ["w", "s"], ["y"])],
             [_vi("c", [2, 3], TensorProto.BOOL), _vi("a", [2, 3]), _vi("b", [2, 3]), _vi("s", [])], [_vi("y", [2, 3])])
  r, rng = OnnxRunner(m), np.random.default_rng(0)
  for i in range(6):
    c, a, b = rng.standard_normal((2, 3)) > 0, rng.standard_normal((3, 2)).astype(np.float32).T, rng.standard_normal((2, 3)).astype(np.float32)
    sc = np.array(i, np.float32)
    feed = {"c": c, "a": a, "b": b, "s": sc} if i % 2 else {"s": sc, "b": b, "a": a, "c": c}
    r.node_count = 0
    np.testing.assert_allclose(r(feed)["y"].numpy(), np.where(c, a, b) * i, rtol=1e-6)
    if i >= 4: assert r.node_count == 0 and len(r._numpy_replays) == 2   # both orders replay, no node ran
  with pytest.raises(RuntimeError, match="dim 1 must be 3"): r({"c": c[:, :2], "a": a[:, :2], "b": b[:, :2], "s": sc})   # still checked
  with pytest.raises(TypeError, match="dtype"): r({"c": c, "a": a.astype(np.float64), "b": b, "s": sc})

def test_big_numpy_inputs_bound_in_place_without_copies(monkeypatch):
  # a replayed numpy input of IN_PLACE_MIN bytes or more on a device that computes on host memory is read where it lies: no copy per call;
  # small ones, and arrays that are not C-contiguous, aligned and writable, are copied. Every call reads the data the array holds then
  monkeypatch.setitem(Device.__dict__, "DEFAULT", MODEL_DEVICE)
  from tinygrad.device import Buffer
  copies = []
  orig = Buffer.copyin
  def counted(self, mv):
    copies.append(mv.nbytes)
    return orig(self, mv)
  monkeypatch.setattr(Buffer, "copyin", counted)
  m = _model([helper.make_node("Mul", ["x", "s"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], [_vi("x", [64, 1024]), _vi("s", [1, 1024])],
             [_vi("y", [64, 1024])])
  r, rng = OnnxRunner(m), np.random.default_rng(0)
  x, sc = rng.standard_normal((64, 1024)).astype(np.float32), rng.standard_normal((1, 1024)).astype(np.float32)
  for _ in range(3): np.testing.assert_allclose(r({"x": x, "s": sc})["y"].numpy(), np.maximum(x * sc, 0), rtol=1e-6)
  (key, (xin, sin), _), = r._numpy_replays.values()
  in_place = getattr(Device[MODEL_DEVICE].allocator, "host_memory", False)
  assert (xin.in_place, sin.in_place) == (in_place, False)   # 256 KiB bound in place, 4 KiB copied
  for i in range(4):
    copies.clear()
    if i == 1: x *= -1   # the same memory with new values: the same buffer over it, read anew
    elif i == 2: x = rng.standard_normal((64, 1024)).astype(np.float32)   # new memory
    feed = {"x": x if i != 3 else np.asfortranarray(x), "s": sc}   # a Fortran-order array: copied
    np.testing.assert_allclose(r(feed)["y"].numpy(), np.maximum(x * sc, 0), rtol=1e-6)
    assert copies == ([sc.nbytes] if in_place and i != 3 else [x.nbytes, sc.nbytes])
  if in_place: assert xin.ptr == x.ctypes.data and xin.buf.options.external_ptr == xin.ptr and xin.arr is x
  # an input a kernel writes (a jit that assigns into it) is never bound in place
  def step(a: Tensor, b: Tensor) -> Tensor:
    a.assign(a + b).realize()
    return (b * 2).contiguous()
  jit, acc = TinyJit(step), Tensor.zeros(4).contiguous().realize()
  for _ in range(4): jit(acc, Tensor.ones(4).contiguous().realize())
  assert jit.read_only_inputs == {1} and acc.tolist() == [4.0] * 4

def test_data_dependent_and_random_models_run_eagerly():
  # NonZero's output shape depends on the data: the capture fails and the runner stays eager, with the right answers every call
  r = OnnxRunner(_model([helper.make_node("NonZero", ["x"], ["y"])], [_vi("x", [6])], [_vi("y", None, TensorProto.INT64)]))
  for i in range(4):
    x = (np.random.default_rng(i).standard_normal(6) > 0).astype(np.float32)
    np.testing.assert_equal(r({"x": x})["y"].numpy(), np.array(np.nonzero(x)))
  assert list(r._jits.values()) == [None]
  # an output that is the input itself can't be a jit's output: eager too
  ident = OnnxRunner(_model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])]))
  for i in range(3): assert ident({"x": np.array([i, -i], np.float32)})["y"].tolist() == [i, -i]
  rnd = OnnxRunner(_model([helper.make_node("RandomUniformLike", ["x"], ["y"]), helper.make_node("Add", ["y", "x"], ["z"])], [_vi("x", [3])],
                          [_vi("z", [3])]))
  assert not rnd.jit and len({tuple(rnd({"x": np.zeros(3, np.float32)})["z"].tolist()) for _ in range(3)}) == 3   # new draws every call

def _png_bytes(img, filters):
  # an 8-bit PNG whose rows use the given filters (0 none, 1 sub, 2 up, 3 average, 4 paeth), encoded here with numpy
  import zlib, struct
  h, w, ch = img.shape
  raw, prev = bytearray(), np.zeros(w * ch, np.int64)
  for y in range(h):
    row, f, out = img[y].reshape(-1).astype(np.int64), filters[y % len(filters)], []
    for i in range(w * ch):
      a, c, up = (row[i - ch] if i >= ch else 0), (prev[i - ch] if i >= ch else 0), prev[i]
      pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
      out.append((row[i] - [0, a, up, (a + up) // 2, a if pa <= pb and pa <= pc else up if pb <= pc else c][f]) & 255)
    raw += bytes([f] + out)
    prev = row
  def chunk(k, d): return struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d))
  ihdr = struct.pack(">IIBBBBB", w, h, 8, {1: 0, 3: 2, 4: 6}[ch], 0, 0, 0)
  return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")

@pytest.mark.parametrize("ch", [1, 3, 4])
def test_image_decoder_png_filters_and_malformed(ch):
  img = np.random.default_rng(ch).integers(0, 256, (6, 5, ch), dtype=np.uint8)
  m = _model([helper.make_node("ImageDecoder", ["s"], ["y"], pixel_format="BGR")], [_vi("s", [None], TensorProto.UINT8)],
             [_vi("y", None, TensorProto.UINT8)], opset=20)
  data = np.frombuffer(_png_bytes(img, [0, 1, 2, 3, 4]), np.uint8)
  rgb = np.repeat(img, 3, -1) if ch == 1 else img[..., :3]
  np.testing.assert_equal(OnnxRunner(m)({"s": data})["y"].numpy(), rgb[..., ::-1])
  with pytest.raises(ValueError, match="PNG"): OnnxRunner(m)({"s": data[:60]})   # cut inside the compressed pixels

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
def test_shipped_suites(suite_case, monkeypatch):
  if "test_gradient_of" in suite_case: pytest.xfail("the Gradient op (ai.onnx.preview.training) is not supported")
  # the few cases with megabytes of data (a 2.5 MB conv input, two max pools) run on the real default device: on the emulator the conv alone
  # took 9 minutes of CI, and smaller cases of the same ops (Conv*, MaxPool*) run on the emulator
  if sum(p.stat().st_size for p in (DATA / suite_case).rglob("*.pb")) > 500_000: monkeypatch.setitem(Device.__dict__, "DEFAULT", MODEL_DEVICE)
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
