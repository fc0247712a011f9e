# the ONNX wire-format parser against the onnx package's own encoder, plus malformed input
import pathlib, random
import numpy as np
import pytest
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402
from extra.onnx_parser import onnx_load, onnx_load_message, OnnxParser, MAX_DEPTH  # noqa: E402

DATA = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data"

def _varint(v: int) -> bytes:
  out = bytearray()
  while True:
    out.append((v & 0x7f) | (0x80 if v > 0x7f else 0))
    v >>= 7
    if not v: return bytes(out)

def _len_field(num: int, payload: bytes) -> bytes: return _varint(num << 3 | 2) + _varint(len(payload)) + payload

def _small_model() -> onnx.ModelProto:
  w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
  b = helper.make_tensor("b", TensorProto.INT64, [3], [-1, 2, -(2**40)])   # int64_data, negative varints
  h = helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.5, -2.0])   # int32_data holding float16 bits
  sub = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "sub", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
  nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
           helper.make_node("If", ["c"], ["o"], then_branch=sub, else_branch=sub),
           helper.make_node("Foo", [], ["f"], domain="com.example", alpha=0.5, n=-3, s="hi", fs=[1.0, 2.5], ns=[1, -2], ss=["a", "b"], t=w)]
  g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], initializer=[w, b, h])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 2)], producer_name="test")
  helper.set_model_props(m, {"author": "me"})
  return m

def test_small_model_fields():
  m = onnx_load(_small_model().SerializeToString())
  assert m.opsets == {"": 17, "com.example": 2} and m.producer_name == "test" and m.metadata_props[0].key == "author"
  g = m.graph
  assert [n.op_type for n in g.node] == ["MatMul", "If", "Foo"] and g.node[2].domain == "com.example"
  assert g.input[0].shape == ("batch", 3) and g.input[0].elem_type == TensorProto.FLOAT
  w, b, h = g.initializer
  np.testing.assert_equal(w.to_tensor().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
  np.testing.assert_equal(b.to_tensor().numpy(), [-1, 2, -(2**40)])
  np.testing.assert_equal(h.to_tensor().numpy(), np.array([1.5, -2], np.float16))
  attrs = {a.name: a.value for a in g.node[2].attribute}
  assert attrs["alpha"] == 0.5 and attrs["n"] == -3 and attrs["s"] == b"hi" and attrs["fs"] == [1.0, 2.5] and attrs["ns"] == [1, -2]
  assert attrs["ss"] == [b"a", b"b"] and attrs["t"].shape == (3, 4)
  then = {a.name: a.value for a in g.node[1].attribute}["then_branch"]
  assert then.node[0].op_type == "Identity" and then.output[0].shape is None

def test_payload_is_a_view_of_the_file():
  raw = _small_model().SerializeToString()
  m = onnx_load(raw)
  assert isinstance(m.graph.initializer[0].raw_data, memoryview) and m.graph.initializer[0].raw_data.obj is memoryview(raw).obj

def test_light_models_parse_like_onnx():
  for fn in sorted((DATA / "light").glob("*.onnx")):
    ref, ours = onnx.load(str(fn)), onnx_load(fn)
    assert [n.op_type for n in ref.graph.node] == [n.op_type for n in ours.graph.node]
    for rt, ot in zip(ref.graph.initializer[:5], ours.graph.initializer[:5]):
      np.testing.assert_equal(numpy_helper.to_array(rt), ot.to_tensor().numpy())

def test_tensor_pb():
  arr = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
  t = onnx_load_message(numpy_helper.from_array(arr, "a").SerializeToString())
  assert t.name == "a"
  np.testing.assert_equal(t.to_tensor().numpy(), arr)

def test_external_data(tmp_path):
  m = _small_model()
  onnx.save_model(m, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
  ours = onnx_load(tmp_path / "m.onnx")
  np.testing.assert_equal(ours.graph.initializer[0].to_tensor().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
  lazy = onnx_load(tmp_path / "m.onnx", load_external_data=False)
  assert lazy.graph.initializer[0].is_external and lazy.graph.initializer[0].raw_data is None
  with pytest.raises(ValueError, match="not loaded"): lazy.graph.initializer[0].to_tensor()

@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../x.bin"])
def test_external_data_outside_folder_refused(tmp_path, location):
  m = _small_model()
  t = m.graph.initializer[0]
  t.ClearField("raw_data")
  t.data_location = TensorProto.EXTERNAL
  t.external_data.add(key="location", value=location)
  (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
  with pytest.raises(ValueError, match="model's folder"): onnx_load(tmp_path / "m.onnx")
  onnx_load(tmp_path / "m.onnx", load_external_data=False)   # not read, not refused

def test_external_data_past_end(tmp_path):
  m = _small_model()
  t = m.graph.initializer[0]
  t.ClearField("raw_data")
  t.data_location = TensorProto.EXTERNAL
  for k, v in {"location": "w.bin", "offset": "8", "length": "48"}.items(): t.external_data.add(key=k, value=v)
  (tmp_path / "w.bin").write_bytes(b"\0" * 50)
  (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
  with pytest.raises(ValueError, match="outside"): onnx_load(tmp_path / "m.onnx")

GRAPH = 7   # ModelProto.graph

@pytest.mark.parametrize("data, match", [
  (_varint(GRAPH << 3 | 0) + _varint(1), "wire type"),                    # a message field sent as a varint
  (_varint(GRAPH << 3 | 2) + _varint(100) + b"abc", "claims 100 bytes"),  # length past the end
  (_varint(GRAPH << 3 | 2) + _varint(2**40), "claims"),                   # 2^40-byte length
  (_varint(1 << 3) + b"\xff" * 11, "longer than 10"),                     # varint over 10 bytes
  (_varint(1 << 3) + b"\xff\xff", "truncated"),                           # varint cut off
  (_varint(99 << 3 | 5) + b"\x00", "runs past"),                          # unknown fixed32 field cut off
  (_varint(99 << 3 | 3), "wire type 3"),                                  # groups
])
def test_malformed(data, match):
  with pytest.raises(ValueError, match=match): onnx_load(data)

def test_unknown_fields_skipped():
  raw = _small_model().SerializeToString()
  extra = _varint(99 << 3 | 0) + _varint(2**63) + _varint(98 << 3 | 1) + b"12345678" + _varint(97 << 3 | 5) + b"1234" + _len_field(96, b"xyz")
  assert onnx_load(extra + raw + extra).graph.node[0].op_type == "MatMul"

def test_deep_nesting():
  # ValueInfo.type -> TypeProto.sequence_type -> SequenceTypeProto.elem_type -> TypeProto ... 10,000 deep
  inner = b""
  for _ in range(10_000): inner = _len_field(4, _len_field(1, inner))
  data = _len_field(GRAPH, _len_field(11, _len_field(1, b"x") + _len_field(2, inner)))
  with pytest.raises(ValueError, match="nested deeper"): onnx_load(data)
  ok = b""
  for _ in range(MAX_DEPTH // 2 - 3): ok = _len_field(4, _len_field(1, ok))
  assert onnx_load(_len_field(GRAPH, _len_field(11, _len_field(1, b"x") + _len_field(2, ok)))).graph.input[0].name == "x"

def test_truncated():
  raw = _small_model().SerializeToString()
  g_start = raw.index(bytes([GRAPH << 3 | 2]))
  for cut in range(g_start + 1, g_start + 200):
    with pytest.raises(ValueError): onnx_load(raw[:cut])

def test_fuzz_mutations():
  rng = random.Random(1234)
  raws = [_small_model().SerializeToString(), (DATA / "pytorch-converted" / "test_Conv2d" / "model.onnx").read_bytes()]
  for i in range(3000):
    b = bytearray(raws[i % 2])
    for _ in range(rng.randint(1, 4)):
      pos = rng.randrange(len(b))
      op = rng.random()
      if op < 0.6: b[pos] = rng.randrange(256)
      elif op < 0.8: del b[pos:pos + rng.randint(1, 8)]
      else: b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    try:
      m = onnx_load(bytes(b))
      for t in m.graph.initializer:
        try: t.payload()
        except ValueError: pass
    except ValueError: pass

def test_parser_class():
  t = OnnxParser(numpy_helper.from_array(np.array([1, 2], np.int32)).SerializeToString()).parse("OnnxTensor")
  np.testing.assert_equal(t.to_tensor().numpy(), [1, 2])
  with pytest.raises(ValueError, match="unknown message"): OnnxParser(b"").parse("Nope")

def test_disk_tensor(tmp_path):
  from tinygrad import Tensor, dtypes
  raw = _small_model().SerializeToString()
  (tmp_path / "m.onnx").write_bytes(raw)
  t = Tensor.empty(len(raw), dtype=dtypes.uint8, device=f"DISK:{tmp_path / 'm.onnx'}")
  assert onnx_load(t).graph.node[0].op_type == "MatMul"
  with pytest.raises(TypeError, match="uint8"): onnx_load(Tensor([1.0, 2.0]))
