# the REMOTE device against a server on loopback that a fixture starts (a subprocess on a free port) and stops
import gc, json, os, random, socket, struct, subprocess, sys
import numpy as np
import pytest
import torch
from tinygrad import Tensor, dtypes
from tinygrad.device import CompileError, Device
from tinygrad.runtime.ops_remote import RemoteConnection, RemoteDevice, RemoteProgram, RemoteServer, pack, renderer_from_info, unpack

MAX_MEM, MAX_BODY = 64 << 20, 1 << 20   # a small body limit, so big copies go in chunks

def start_server(*extra:str, env:dict[str, str]|None=None) -> tuple[subprocess.Popen, int]:
  proc = subprocess.Popen([sys.executable, "-m", "tinygrad.runtime.ops_remote", "--serve", "--port", "0", "--max-mem", str(MAX_MEM),
                           "--max-body", str(MAX_BODY), *extra], stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "REMOTEDEV": "CPU", **(env or {})})
  assert proc.stdout is not None
  line = proc.stdout.readline()   # "REMOTE serving CPU on 127.0.0.1:PORT", printed once the socket listens
  if not line.startswith("REMOTE serving"):
    proc.kill()
    pytest.fail(f"the server didn't start: {line!r}")
  return proc, int(line.rsplit(":", 1)[1])

def stop_server(proc:subprocess.Popen) -> None:
  proc.terminate()
  try: proc.wait(timeout=10)
  except subprocess.TimeoutExpired: proc.kill()

@pytest.fixture(scope="module")
def server():
  proc, port = start_server()
  old = os.environ.get("REMOTE_HOST")
  os.environ["REMOTE_HOST"] = f"127.0.0.1:{port}"
  Device._opened.pop("REMOTE", None)   # a REMOTE opened before (another server) is not ours
  yield proc, port
  Device._opened.pop("REMOTE", None)
  if old is None: del os.environ["REMOTE_HOST"]
  else: os.environ["REMOTE_HOST"] = old
  stop_server(proc)

def info(port:int) -> dict:
  (ret,), _ = RemoteConnection(f"127.0.0.1:{port}", 30).flush(["info"])
  return ret

# ***** the op suite, a representative slice: every family once *****

rng = np.random.default_rng(0)
A, B = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
I = rng.integers(-50, 50, (3, 4)).astype(np.int32)
X, W = rng.standard_normal((2, 3, 6, 6)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
CASES = {
  "add_mul": (lambda t: t(A) * 2 + t(A), lambda: A * 2 + A),
  "exp_sqrt_where": (lambda t: (t(A) > 0).where(t(A).abs().sqrt(), t(A).exp()), lambda: np.where(A > 0, np.sqrt(np.abs(A)), np.exp(A))),
  "maximum": (lambda t: t(A).maximum(t(A) * -1), lambda: np.maximum(A, -A)),
  "sum_axis": (lambda t: t(A).sum(1), lambda: A.sum(1)),
  "max_mean": (lambda t: t(A).max(0) + t(A).mean(), lambda: A.max(0) + A.mean()),
  "matmul": (lambda t: t(A) @ t(B), lambda: A @ B),
  "permute_pad_flip": (lambda t: t(A).permute(1, 0).pad(((1, 0), (0, 2))).flip(0), lambda: np.pad(A.T, ((1, 0), (0, 2)))[::-1]),
  "shrink_expand": (lambda t: t(A)[1:3, 2:4].reshape(2, 1, 2).expand(2, 3, 2), lambda: np.broadcast_to(A[1:3, 2:4].reshape(2, 1, 2), (2, 3, 2))),
  "fancy_index": (lambda t: t(A)[t(np.array([3, 0, 1], np.int32))], lambda: A[[3, 0, 1]]),
  "gather": (lambda t: t(A).gather(1, t(np.array([[0, 4]] * 4, np.int32))), lambda: np.take_along_axis(A, np.array([[0, 4]] * 4), 1)),
  "conv2d": (lambda t: t(X).conv2d(t(W), padding=1), lambda: torch.nn.functional.conv2d(torch.tensor(X), torch.tensor(W), padding=1).numpy()),
  "int32": (lambda t: (t(I) * 3 - t(I) // 7) % 11, lambda: (I * 3 - I // 7) % 11),
  "uint8_cast": (lambda t: t(I).cast(dtypes.uint8) + 250, lambda: I.astype(np.uint8) + np.uint8(250)),
  "half": (lambda t: t(A).cast(dtypes.half).sum(), lambda: A.astype(np.float16).sum()),
  "int64_bool": (lambda t: (t(I).cast(dtypes.int64) * 2**33 > 0).cast(dtypes.int32).sum(), lambda: (I.astype(np.int64) * 2**33 > 0).sum()),
}

@pytest.mark.parametrize("name", list(CASES))
def test_ops(server, name):
  fn, ref = CASES[name]
  out = fn(lambda a: Tensor(a, device="REMOTE"))
  assert out.device == "REMOTE"
  expected = ref()
  got = out.numpy()
  assert got.shape == np.shape(expected)
  np.testing.assert_allclose(got, expected, rtol=1e-2 if name == "half" else 1e-5, atol=1e-2 if name == "half" else 1e-5)

# ***** copies, batching, errors a client sees *****

@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.float64])
def test_copies_cpu_remote(server, dtype):
  # over the body limit, so the copies go in chunks
  a = (np.random.default_rng(1).standard_normal(300_000) * 100).astype(dtype)
  r = Tensor(a, device="CPU").to("REMOTE")
  back = (r + 0).to("CPU")   # a kernel on the server, then the copy back
  assert back.device == "CPU"
  np.testing.assert_array_equal(back.numpy(), a)
  np.testing.assert_array_equal(Tensor(a, device="REMOTE").numpy(), a)

def test_views(server):
  a = np.arange(24, dtype=np.float32)
  parts = Tensor(a, device="REMOTE").realize().chunk(3)
  np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts]), a)
  np.testing.assert_array_equal((parts[2] * 2).numpy(), a[16:] * 2)

def test_batched(server, monkeypatch):
  conn = Device["REMOTE"].conn
  requests = []
  real = conn.request
  monkeypatch.setattr(conn, "request", lambda ops, data: (requests.append([o[0] for o in ops]), real(ops, data))[1])
  def step():
    x = Tensor(np.ones((8, 8), np.float32), device="REMOTE")
    return ((x * 2).sum(0).exp().reshape(8, 1) @ Tensor.ones(1, 4, device="REMOTE")).numpy()
  first = step()
  requests.clear()
  np.testing.assert_allclose(step(), first)
  # the kernels are compiled already: the allocs, the copy in and every launch go in the one request that reads the result back
  assert len(requests) == 1, requests
  assert requests[0].count("exec") >= 2 and "copyin" in requests[0] and requests[0][-1] == "copyout"

def test_compile_error(server):
  with pytest.raises(CompileError, match="not_c") as e:
    RemoteProgram(Device["REMOTE"].conn, "bad", b"this is not_c;\nint k(void) { return undeclared_thing; }")
  # the server's compiler's message and the source with line numbers, as a local compile error shows them
  assert "error" in str(e.value) and "   2 int k(void) { return undeclared_thing; }" in str(e.value), str(e.value)
  np.testing.assert_array_equal((Tensor([1, 2], device="REMOTE") + 1).numpy(), [2, 3])   # the connection goes on

def test_refused_allocation_recovers(server):
  big = Tensor.ones(MAX_MEM // 4 + 1, device="REMOTE").contiguous()   # one float past the server's memory limit
  with pytest.raises(RuntimeError, match="refused"):
    big.realize()
    Device["REMOTE"].synchronize()
  del big
  gc.collect()   # the buffer the server never had is freed now: the client must not send that free
  np.testing.assert_array_equal((Tensor([1, 2], device="REMOTE") * 2).numpy(), [2, 4])

def test_renderer_from_server(server):
  ren = Device["REMOTE"].renderer
  assert type(ren).__name__ == type(Device["CPU"].renderer).__name__ and ren.simd_bytes == Device["CPU"].renderer.simd_bytes

def test_server_machine_model(tmp_path):
  # the server poses as a machine with 3 cores and a small L2: the client optimizes for it (threads, cache blocks), not for itself
  host = Device["CPU"].renderer.machine
  spec = tmp_path/"server_cpu.json"
  spec.write_text(json.dumps({"simd_bytes": host.simd_bytes, "cores": 3, "l2": 256 << 10}))
  proc, port = start_server(env={"CPU_MODEL": str(spec)})
  try:
    conn = RemoteConnection(f"127.0.0.1:{port}", 30)
    (got,), _ = conn.flush(["info"])
    ren = renderer_from_info(got)
    assert ren.machine is not None and (ren.machine.name, ren.machine.cores, ren.machine.l2) == ("server_cpu", 3, 256 << 10)
    assert ren.machine != host
    with pytest.raises(RuntimeError, match="machine model"): renderer_from_info({**got, "machine": {**got["machine"], "cores": "3"}})
    with pytest.raises(RuntimeError, match="machine model"): renderer_from_info({**got, "machine": {"name": "x"}})
    conn.flush(["close"])
  finally: stop_server(proc)

def test_renderer_arguments_from_server():
  # an OpenCL server without half support: the client's renderer stores half as bits too
  ren = renderer_from_info({"renderer": "OpenCLRenderer", "args": [False], "options": {}})
  assert ren.fp16 is False and dtypes.float16 in ren.storage_types
  assert renderer_from_info({"renderer": "CUDARenderer", "args": ["sm_90"], "options": {}}).arch == "sm_90"
  # the launch limits a server's device declares reach the client's codegen (a WEBGPU server's lavapipe loop limit too)
  wgsl = renderer_from_info({"renderer": "WGSLRenderer", "args": [False], "options": {"global_max": [7, 5, 3], "loop_max": 1000}})
  assert wgsl.global_max == (7, 5, 3) and wgsl.loop_max == 1000
  with pytest.raises(RuntimeError, match="plain values"): renderer_from_info({"renderer": "OpenCLRenderer", "args": [[1]], "options": {}})
  with pytest.raises(RuntimeError, match="can't be made"): renderer_from_info({"renderer": "ClangRenderer", "args": [1, 2], "options": {}})

def test_refuses_python_device():
  # the PYTHON device's "source" is a pickle: it is never served
  with pytest.raises(RuntimeError, match="PythonRenderer"): RemoteServer("PYTHON", MAX_MEM, MAX_BODY)
  with pytest.raises(RuntimeError, match="can't serve REMOTE"): RemoteServer("REMOTE", MAX_MEM, MAX_BODY)

def test_dead_server():
  proc, port = start_server()
  old = os.environ.get("REMOTE_HOST")
  os.environ["REMOTE_HOST"] = f"127.0.0.1:{port}"
  try:
    dev = RemoteDevice("REMOTE")
    buf = dev.allocator.alloc(16)
    stop_server(proc)
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}"): dev.allocator._copyout(memoryview(bytearray(16)), buf)
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}"): RemoteDevice("REMOTE")
  finally:
    if old is None: del os.environ["REMOTE_HOST"]
    else: os.environ["REMOTE_HOST"] = old
    stop_server(proc)

def test_silent_server_times_out():
  # a server that takes the connection and never answers: the socket timeout ends the wait
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    s.listen()
    conn = RemoteConnection(f"127.0.0.1:{s.getsockname()[1]}", 0.5)
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{s.getsockname()[1]}.*timed out"): conn.flush(["info"])

def test_bad_host():
  with pytest.raises(ValueError, match="host:port"): RemoteConnection("nohostport", 1)

# ***** the server survives malformed requests *****

def raw_request(port:int, body:bytes, length:str|None=None, path:str="/batch") -> tuple[int, dict]:
  """POSTs body with any Content-Length (None: the true one) and returns the status and the decoded answer."""
  with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\n" + (f"Content-Length: {len(body) if length is None else length}\r\n" if length != "" else "")
    s.sendall(head.encode() + b"\r\n" + body)
    s.shutdown(socket.SHUT_WR)   # a truncated body ends here instead of waiting for the server's timeout
    raw = b""
    while chunk := s.recv(1 << 16): raw += chunk
  status_line, _, rest = raw.partition(b"\r\n")
  header, _ = unpack(rest.partition(b"\r\n\r\n")[2])
  return int(status_line.split()[1]), header

def malformed(r:random.Random, session:str) -> tuple[bytes, str|None, str]:
  def ops(*o) -> bytes: return pack({"session": session, "ops": list(o)})
  junk = [None, True, 1.5, -1, 2**70, "x", [], {}, [[1]], "9" * 50]
  kind = r.randrange(14)
  if kind == 0: return bytes(r.getrandbits(8) for _ in range(r.randrange(64))), None, "/batch"
  if kind == 1: return ops(["info"]), str(r.randrange(10_000, 100_000)), "/batch"             # truncated
  if kind == 2: return b"", str(MAX_BODY + 1 + r.randrange(2**40)), "/batch"                   # oversized
  if kind == 3: return ops(["info"]), r.choice(["abc", "-5", "", "1e3"]), "/batch"             # bad length
  if kind == 4: return struct.pack("<I", r.randrange(2**32)) + b"{}", None, "/batch"           # header length past the end
  if kind == 5: return pack(r.choice([[], {"ops": []}, {"session": r.choice([j for j in junk if type(j) is not str] + ["s" * 65, ""]), "ops": []}, {"session": session, "ops": r.choice([j for j in junk if j != []])}])), None, "/batch"
  if kind == 6: return ops([r.choice(["nope", "", "__init__", "run", "buf", "region"])], r.choice(junk)), None, "/batch"   # unknown ops
  if kind == 7: return ops([r.choice(["alloc", "free", "copyin", "copyout", "view", "exec", "program"]), *r.choices(junk, k=r.randrange(7))]), None, "/batch"
  if kind == 8: return ops(r.choice([["free", 999], ["copyout", 999, 0, 4], ["copyin", 999, 0, 0, 0], ["exec", 999, [], [], [], [], False],
                                     ["free_program", 5], ["view", 1000, 999, 4, 0]])), None, "/batch"   # ids that don't exist
  if kind == 9:   # copies past the end of a buffer, and views out of bounds
    return ops(["alloc", 1, 16], r.choice([["copyin", 1, 8, 0, 16], ["copyout", 1, 12, 8], ["copyin", 1, 0, 0, 32], ["view", 2, 1, 8, 12]])), None, "/batch"
  if kind == 10: return ops(["alloc", r.randrange(100), r.choice([2**62, MAX_MEM + 1, 2**40])]), None, "/batch"   # huge sizes
  if kind == 11: return ops(["exec", 0, [0], [0], [], [], False]), None, "/batch"              # launch sizes out of range / no program
  if kind == 12: return b"[" * 100_000, None, "/batch"                                          # deep JSON
  return ops(["info"]), None, r.choice(["/", "/x", "/batch/../etc"])                            # unknown paths

def test_fuzz_malformed_requests(server):
  proc, port = server
  np.testing.assert_array_equal((Tensor([1.0, 2.0], device="REMOTE") * 3).numpy(), [3.0, 6.0])
  held_before = info(port)["held"]
  r, session = random.Random(1234), "fuzz"
  statuses: dict[int, int] = {}
  for _ in range(2000):
    body, length, path = malformed(r, session)
    status, answer = raw_request(port, body, length, path)
    assert status in (400, 404, 411, 413) and answer["error"], (status, answer, body[:100])
    statuses[status] = statuses.get(status, 0) + 1
  assert set(statuses) == {400, 404, 411, 413}
  # memory a session may take is bounded: allocations past the limit are refused, and close gives it all back
  conn = RemoteConnection(f"127.0.0.1:{port}", 30)
  with pytest.raises(RuntimeError, match="refused"):
    for i in range(MAX_MEM // (8 << 20) + 1): conn.flush(["alloc", i, 8 << 20])
  assert held_before < info(port)["held"] <= MAX_MEM
  conn.flush(["close"])
  assert proc.poll() is None
  # the fuzz session's buffers (kind 9) go when it closes; then the server holds what it held before, and still computes
  fuzz = RemoteConnection(f"127.0.0.1:{port}", 30)
  fuzz.session = session
  fuzz.flush(["close"])
  assert info(port)["held"] == held_before
  np.testing.assert_array_equal((Tensor([1.0, 2.0], device="REMOTE") * 3 + 1).numpy(), [4.0, 7.0])

def test_wire_format():
  body = pack({"a": [1, "x"]}, b"\x00\xff")
  header, data = unpack(body)
  assert header == {"a": [1, "x"]} and bytes(data) == b"\x00\xff"
  for bad in (b"", b"\x01\x00", struct.pack("<I", 100) + b"{}", struct.pack("<I", 2) + b"[]", struct.pack("<I", 2) + b"\xff\xfe"):
    with pytest.raises(ValueError): unpack(bad)
  assert json.loads(body[4:4+struct.unpack_from("<I", body)[0]]) == {"a": [1, "x"]}

def test_two_servers_named(server, monkeypatch):
  # REMOTE_HOST lists servers, REMOTE:1 is the second: here the same server twice, as two sessions; copies between them go through the host
  host = os.environ["REMOTE_HOST"]
  monkeypatch.setenv("REMOTE_HOST", f"{host},{host}")
  Device._opened.pop("REMOTE:1", None)
  try:
    a = Tensor(np.arange(6, dtype=np.float32), device="REMOTE") * 2
    np.testing.assert_array_equal((a.to("REMOTE:1") + 1).numpy(), np.arange(6) * 2 + 1)
    with pytest.raises(RuntimeError, match="names 2 servers"): RemoteDevice("REMOTE:2")
  finally: Device._opened.pop("REMOTE:1", None)

if __name__ == "__main__":
  # CI's REMOTE run of the op suite: every test that takes the `device` fixture, on REMOTE, against a server on loopback started here
  # (from_blob wraps host memory, which a REMOTE buffer can't be)
  proc, port = start_server("--max-mem", str(4 << 30), "--max-body", str(256 << 20))
  os.environ["REMOTE_HOST"] = f"127.0.0.1:{port}"
  here = os.path.abspath(__file__)
  try: ret = pytest.main(["-q", "-k", "REMOTE and not from_blob", f"--ignore={here}", *sys.argv[1:], os.path.dirname(here)])
  finally: stop_server(proc)
  sys.exit(ret)
