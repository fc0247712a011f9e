# state dicts and weight files: round trips against torch / safetensors layout / the gguf package, and malformed or hostile files
import io, json, os, pickle, struct, tarfile, zipfile
import numpy as np, pytest, torch
from tinygrad import Tensor, dtypes, nn
from tinygrad.nn.state import (safe_load, safe_save, safe_load_metadata, torch_load, gguf_load, tar_extract, get_state_dict, get_parameters,
                               load_state_dict)

class Net:
  def __init__(self): self.c, self.bn, self.l = nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), [nn.Linear(12, 4)]
  def __call__(self, x): return self.l[0](self.bn(self.c(x)).relu().max_pool2d(2).flatten(1))
class TNet(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.c, self.bn, self.l = torch.nn.Conv2d(1, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.ModuleList([torch.nn.Linear(12, 4)])
  def forward(self, x): return self.l[0](torch.nn.functional.max_pool2d(self.bn(self.c(x)).relu(), 2).flatten(1))

def test_get_state_dict_names():
  sd = get_state_dict(Net())
  assert list(sd) == ["c.weight", "c.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked", "l.0.weight", "l.0.bias"]
  assert set(sd) == set(TNet().state_dict())
  assert len(get_parameters(Net())) == 9

def test_torch_save_roundtrip_model_outputs(tmp_path):
  tnet = TNet()
  with torch.no_grad():
    tnet.bn.running_mean.uniform_(-1, 1); tnet.bn.running_var.uniform_(0.5, 2)
  tnet.eval()
  x = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
  for legacy in (False, True):
    fn = tmp_path / f"m{legacy}.pth"
    torch.save(tnet.state_dict(), fn, _use_new_zipfile_serialization=not legacy)
    net = Net()
    load_state_dict(net, torch_load(fn))
    np.testing.assert_allclose(net(Tensor(x)).numpy(), tnet(torch.tensor(x)).detach().numpy(), atol=1e-5)

def test_torch_load_dtypes_views_transposes(tmp_path):
  base = torch.arange(24, dtype=torch.float32)
  sd = {"t": base.reshape(4, 6).t(), "view": base[5:11], "h": torch.randn(3, 2).half(), "i": torch.arange(7), "b": torch.tensor([True, False]),
        "bf": torch.randn(5).bfloat16(), "p": torch.nn.Parameter(torch.ones(2)), "e": torch.zeros(0, 3), "nested": {"x": [torch.ones(1) * 3, 5]}}
  for legacy in (False, True):
    fn = tmp_path / f"d{legacy}.pth"
    torch.save(sd, fn, _use_new_zipfile_serialization=not legacy)
    r = torch_load(fn)
    for k in ("t", "view", "h", "i", "b", "p", "e"): np.testing.assert_array_equal(r[k].numpy(), sd[k].detach().numpy(), err_msg=k)
    np.testing.assert_array_equal(r["bf"].to("CPU").cast(dtypes.float32).numpy(), sd["bf"].float().numpy())
    with pytest.raises(RuntimeError, match="can't run kernels"): (r["view"] + 1).realize()
    assert r["nested"]["x"][0].tolist() == [3.0] and r["nested"]["x"][1] == 5
    assert r["h"].dtype == dtypes.float16 and r["i"].dtype == dtypes.int64

def _legacy_tar(fn, arr):
  # the oldest torch format, written by hand: storages, tensors and pickle members
  def p(o): return pickle.dumps(o, protocol=2)
  storages = p(1) + b"\x80\x02X\x01\x00\x00\x000X\x03\x00\x00\x00cpuctorch\nFloatStorage\n\x87." + struct.pack("<q", arr.size) + arr.tobytes()
  tensors = p(1) + p(("t0", "0", None)) + struct.pack("<i", arr.ndim) + struct.pack(f"<{arr.ndim}q", *arr.shape) + \
    struct.pack(f"<{arr.ndim}q", *[s // 4 for s in arr.strides]) + struct.pack("<q", 0)
  pick = b"\x80\x02}X\x01\x00\x00\x00wX\x02\x00\x00\x00t0Qs."
  with tarfile.open(fn, "w") as tar:
    for name, data in (("sys_info", p({})), ("pickle", pick), ("tensors", tensors), ("storages", storages)):
      info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))

def test_torch_load_legacy_tar(tmp_path):
  arr = np.arange(6, dtype=np.float32).reshape(2, 3)
  _legacy_tar(tmp_path / "old.tar", arr)
  np.testing.assert_array_equal(torch_load(tmp_path / "old.tar")["w"].numpy(), arr)

def _evil_pickles():
  yield "os.system", b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R."
  yield "numpy.testing", b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\rnumpy.testing\x8c\tos.system\x93X\x04\x00\x00\x00echo\x85R."
  yield "numpy.testing", b"\x80\x02cnumpy.testing\nos\n."
  yield "__builtins__", b"\x80\x04\x8c\x0ctorch._utils\x8c\x14__builtins__.getattr\x93."
  yield "builtins.eval", b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R."
  yield "builtins.eval", b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R."
  yield "torch._utils.__builtins__", b"\x80\x02ctorch._utils\n__builtins__\n."
  yield "collections.OrderedDict.fromkeys", b"\x80\x04\x8c\x0bcollections\x8c\x14OrderedDict.fromkeys\x93."

@pytest.mark.parametrize("name,payload", list(_evil_pickles()))
def test_refuses_callables_outside_allow_list(tmp_path, name, payload):
  fn = tmp_path / "evil.pth"
  with zipfile.ZipFile(fn, "w") as z: z.writestr("archive/data.pkl", payload)
  with pytest.raises(ValueError, match="refusing to load"): torch_load(fn)
  # the legacy format goes through the same unpickler
  fn2 = tmp_path / "evil_legacy.pth"
  fn2.write_bytes(pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2) + pickle.dumps({}, protocol=2) + payload)
  with pytest.raises(ValueError, match="refusing to load"): torch_load(fn2)

def test_torch_load_bad_files(tmp_path):
  fn = tmp_path / "m.pth"
  torch.save({"a": torch.arange(1000.)}, fn)
  raw = fn.read_bytes()
  for cut in (10, len(raw) // 2, len(raw) - 30):
    (tmp_path / "cut.pth").write_bytes(raw[:cut])
    with pytest.raises(ValueError, match="cut.pth"): torch_load(tmp_path / "cut.pth")
  (tmp_path / "junk.pth").write_bytes(os.urandom(4000))
  with pytest.raises(ValueError, match="junk.pth"): torch_load(tmp_path / "junk.pth")
  # a huge length field in the pickle: an error, not an allocation
  huge = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2) + pickle.dumps({}, protocol=2) + b"\x80\x02X\xff\xff\xff\x7fab"
  (tmp_path / "huge.pth").write_bytes(huge)
  with pytest.raises(ValueError, match="huge.pth"): torch_load(tmp_path / "huge.pth")
  # deep nesting, impossible sizes and broken opcodes: ValueError, never RecursionError or MemoryError
  n = 200000
  for name, payload in (("deep", b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b"."), ("marks", b"\x80\x02" + b"(" * n + b"."),
                        ("bytes8", b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"ab."), ("memo", b"\x80\x02h\x05."), ("empty", b"")):
    with zipfile.ZipFile(tmp_path / f"{name}.pth", "w") as z: z.writestr("archive/data.pkl", payload)
    with pytest.raises(ValueError, match=f"{name}.pth"): torch_load(tmp_path / f"{name}.pth")
  # a tensor claiming more elements than its storage holds
  with zipfile.ZipFile(tmp_path / "over.pth", "w") as z:
    z.writestr("archive/data.pkl", b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\xff\x85K\x01\x85\x89NtR.")
    z.writestr("archive/data/0", b"\x00" * 16)
  with pytest.raises(ValueError, match="over.pth"): torch_load(tmp_path / "over.pth")

def test_safetensors_roundtrip_bit_exact(tmp_path):
  rng = np.random.default_rng(0)
  ts = {"f": Tensor(rng.standard_normal((3, 5)).astype(np.float32)), "h": Tensor(rng.standard_normal(7).astype(np.float16)),
        "i": Tensor(rng.integers(-100, 100, (2, 2, 2)).astype(np.int64)), "u": Tensor(rng.integers(0, 255, 9).astype(np.uint8)),
        "b": Tensor([True, False, True]), "bf": Tensor([1.5, -2.25, 3e38], dtype=dtypes.bfloat16), "nan": Tensor([np.nan, np.inf, -0.0]),
        "e": Tensor.empty(0, 4), "s": Tensor(3.5)}
  safe_save(ts, tmp_path / "a.safetensors", metadata={"format": "pt"})
  loaded = safe_load(tmp_path / "a.safetensors")
  assert list(loaded) == list(ts)
  for k, v in ts.items():
    assert loaded[k].shape == v.shape and loaded[k].dtype == v.dtype, k
    assert bytes(loaded[k].to("CPU")._host_bytes()) == bytes(v._host_bytes()), k
  assert str(loaded["f"].device).startswith("DISK:")   # zero-copy: views of the file
  _, n, header = safe_load_metadata(tmp_path / "a.safetensors")
  assert header["__metadata__"] == {"format": "pt"} and (8 + n) % 8 == 0
  # the layout is the safetensors one: torch's reference reader would see the same bytes
  raw = (tmp_path / "a.safetensors").read_bytes()
  b, e = header["f"]["data_offsets"]
  np.testing.assert_array_equal(np.frombuffer(raw[8+n+b:8+n+e], np.float32).reshape(3, 5), ts["f"].numpy())

def _safe_file(path, header, data=b""):
  raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
  path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
  return path

@pytest.mark.parametrize("header,data,msg", [
  ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, b"\0" * 8, "data_offsets"),
  ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, "overlap"),
  ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, "data_offsets"),
  ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "needs 12 bytes"),
  ({"a": {"dtype": "X99", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, "dtype"),
  ({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, "shape"),
  ([1, 2], b"", "json object"),
  (b"{not json", b"", "not valid json"),
  (b"[" * 200000 + b"]" * 200000, b"", "nested too deeply"),
])
def test_safetensors_bad_headers(tmp_path, header, data, msg):
  fn = _safe_file(tmp_path / "bad.safetensors", header, data)
  with pytest.raises(ValueError, match=msg) as e: safe_load(fn)
  assert "bad.safetensors" in str(e.value)

def test_safetensors_truncated_and_huge(tmp_path):
  safe_save({"a": Tensor.ones(100)}, tmp_path / "ok.safetensors")
  raw = (tmp_path / "ok.safetensors").read_bytes()
  for cut in (0, 5, 20, len(raw) - 1):
    (tmp_path / "t.safetensors").write_bytes(raw[:cut])
    with pytest.raises(ValueError, match="t.safetensors"): safe_load(tmp_path / "t.safetensors")
  (tmp_path / "h.safetensors").write_bytes(struct.pack("<Q", 1 << 62) + b"{}")
  with pytest.raises(ValueError, match="header length"): safe_load(tmp_path / "h.safetensors")

def test_load_state_dict_errors():
  net = Net()
  sd = {k: v.clone() for k, v in get_state_dict(Net()).items()}
  load_state_dict(net, sd)
  with pytest.raises(RuntimeError, match="c.bias"): load_state_dict(net, {k: v for k, v in sd.items() if k != "c.bias"})
  with pytest.raises(RuntimeError, match="extra"): load_state_dict(net, {**sd, "extra": Tensor.ones(1)})
  load_state_dict(net, {**sd, "extra": Tensor.ones(1)}, strict=False)
  with pytest.raises(RuntimeError, match="l.0.weight"): load_state_dict(net, {**sd, "l.0.weight": Tensor.ones(3, 12)})
  with pytest.raises(RuntimeError, match="c.weight"): load_state_dict(net, {**sd, "c.weight": sd["c.weight"].half()})

def test_load_state_dict_from_disk(tmp_path):
  a, b = Net(), Net()
  safe_save(get_state_dict(a), tmp_path / "n.safetensors")
  load_state_dict(b, safe_load(tmp_path / "n.safetensors"))
  x = Tensor.randn(1, 1, 6, 6)
  np.testing.assert_allclose(a(x).numpy(), b(x).numpy())
  assert b.c.weight.device == Tensor.ones(1).device

def test_gguf_roundtrip(tmp_path):
  gguf = pytest.importorskip("gguf")
  from gguf import quants, GGMLQuantizationType as Q
  rng = np.random.default_rng(0)
  a = rng.standard_normal((4, 256)).astype(np.float32)
  w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
  w.add_uint32("test.n", 7); w.add_string("test.s", "hi"); w.add_array("test.arr", [1, 2, 3])
  w.add_tensor("f32", a); w.add_tensor("f16", a.astype(np.float16))
  expect = {"f32": a, "f16": a.astype(np.float16).astype(np.float32)}
  for q in (Q.Q4_0, Q.Q4_1, Q.Q8_0):
    qa = quants.quantize(a, q)
    w.add_tensor(q.name, qa, raw_dtype=q)
    expect[q.name] = quants.dequantize(qa, q)
  # gguf-py can't quantize Q6_K: random blocks with a sane scale, dequantized by gguf-py as the reference
  q6 = rng.integers(0, 256, (4, 210), dtype=np.uint8)
  q6[:, 208:210] = np.frombuffer(np.full(4, 0.01, np.float16).tobytes(), np.uint8).reshape(4, 2)
  w.add_tensor("Q6_K", q6, raw_dtype=Q.Q6_K)
  expect["Q6_K"] = quants.dequantize(q6, Q.Q6_K)
  w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
  kv, ts = gguf_load(tmp_path / "m.gguf")
  assert kv["test.n"] == 7 and kv["test.s"] == "hi" and kv["test.arr"] == [1, 2, 3]
  for k, v in expect.items():
    assert ts[k].shape == (4, 256), k
    np.testing.assert_allclose(ts[k].numpy(), v, atol=1e-6, rtol=1e-5, err_msg=k)
  for k in ("Q4_0", "Q4_1"): np.testing.assert_allclose(ts[k].numpy(), a, atol=0.35)   # within quantization error of the original
  np.testing.assert_allclose(ts["Q8_0"].numpy(), a, atol=0.03)

def _gguf_header(n_tensors=0, kvs=b"", n_kv=0): return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs

@pytest.mark.parametrize("raw,msg", [
  (b"GGUX" + b"\0" * 20, "magic"),
  (_gguf_header()[:10], "truncated"),
  (_gguf_header(n_kv=1, kvs=struct.pack("<Q", 1 << 60)), "too long"),
  (_gguf_header(n_kv=1, kvs=struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 4, 1 << 40)), "array"),
  (_gguf_header(n_kv=1, kvs=struct.pack("<Q", 1) + b"k" + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 50 + struct.pack("<IQ", 4, 0)), "nested"),
  (_gguf_header(n_tensors=1, kvs=struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 8, 0, 1 << 40)), "past the end"),
  (_gguf_header(n_tensors=1, kvs=struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 8, 99, 0)), "GGML type"),
  (_gguf_header(n_tensors=1 << 50), "can't fit"),
])
def test_gguf_bad_files(tmp_path, raw, msg):
  (tmp_path / "bad.gguf").write_bytes(raw)
  with pytest.raises(ValueError, match=msg) as e: gguf_load(tmp_path / "bad.gguf")
  assert "bad.gguf" in str(e.value)

def test_tar_extract(tmp_path):
  with tarfile.open(tmp_path / "a.tar", "w") as tar:
    for name, data in (("x.bin", b"hello"), ("d/y.bin", bytes(range(200)))):
      info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
  r = tar_extract(tmp_path / "a.tar")
  assert bytes(r["x.bin"].data()) == b"hello" and r["d/y.bin"].tolist() == list(range(200))

def test_disk_slice_bitcast_tolist_copies(tmp_path):
  fn = tmp_path / "raw.bin"
  arr = np.arange(32, dtype=np.float32)
  fn.write_bytes(arr.tobytes())
  t = Tensor.empty(128, dtype=dtypes.uint8, device=f"DISK:{fn}")
  assert t[4:8].tolist() == list(arr[1:2].tobytes())
  f = t.bitcast(dtypes.float32)
  assert f[3:7].tolist() == [3.0, 4.0, 5.0, 6.0]
  assert f.reshape(4, 8)[1:3].to("CPU").numpy().tolist() == arr.reshape(4, 8)[1:3].tolist()
  assert t[8:16].bitcast(dtypes.uint32).tolist() == np.frombuffer(arr[2:4].tobytes(), np.uint32).tolist()
  assert f[10:12].to("PYTHON").tolist() == [10.0, 11.0]
  # and back: copies into a disk file from another device
  out = Tensor.empty(4, device=f"DISK:{tmp_path / 'out.bin'}")
  out.assign(Tensor([1.0, 2.0, 3.0, 4.0]).to(out.device)).realize()
  assert np.frombuffer((tmp_path / "out.bin").read_bytes(), np.float32).tolist() == [1, 2, 3, 4]
  with pytest.raises(RuntimeError, match="contiguous"): f.reshape(4, 8).permute(1, 0)

def test_disk_slice_assign_writes_its_range(tmp_path):
  # t[2:6].assign(x.to(DISK)) made a new DISK buffer for x (the file's first bytes: t[0:4] overwritten), then failed to run a kernel;
  # now x is copied straight into the slice's range, and every overlapping view of the file reads it
  fn = tmp_path / "f.bin"
  fn.write_bytes(np.arange(16, dtype=np.float32).tobytes())
  t = Tensor.empty(16, dtype=dtypes.float32, device=f"DISK:{fn}")
  a, b, r = t[2:6], t[4:8], t.reshape(4, 4)
  a.assign(Tensor([100.0, 101.0, 102.0, 103.0]).to(a.device))
  want = np.arange(16, dtype=np.float32)
  want[2:6] = [100, 101, 102, 103]
  assert t.tolist() == want.tolist() and b.tolist() == want[4:8].tolist() and r[1].tolist() == want[4:8].tolist()
  b.assign(t[8:12])   # disk to disk, overlapping a
  want[4:8] = want[8:12]
  assert a.tolist() == want[2:6].tolist() and np.frombuffer(fn.read_bytes(), np.float32).tolist() == want.tolist()
  with pytest.raises(RuntimeError, match="can't run kernels"): a += 1
