# REMOTE: a device in another process, maybe on another machine. The client (REMOTE=1) queues allocations, frees, copies and launches and
# sends them in one HTTP request at the next copyout, synchronize or compile. The server (python -m tinygrad.runtime.ops_remote --serve)
# runs them on its own device (REMOTEDEV, default CPU). A body is a 4 byte little endian header length, a JSON header, then raw bytes:
# nothing from the wire is unpickled or run as Python. Kernels travel as source and the server compiles them (they are code: serve only
# clients you trust, which is why the server binds 127.0.0.1 unless told otherwise).
from __future__ import annotations
import argparse, atexit, dataclasses, functools, http.client, http.server, importlib, itertools, json, os, struct, uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from tinygrad.device import Allocator, BufferSpec, Compiled, Compiler, CompileError, Device
from tinygrad.dtype import DTYPES_DICT, INVERSE_DTYPES_DICT
from tinygrad.helpers import DEBUG
from tinygrad.renderer import MachineModel

DEFAULT_PORT = 6667
EXEC_BUFS = 256   # the most buffers one exec request names
# the renderers a client builds from the server's answer, by class name. Not PythonRenderer: its "source" is a pickle
RENDERERS = {**{n: "tinygrad.renderer.cstyle" for n in ("ClangRenderer", "OpenCLRenderer", "CUDARenderer", "MetalRenderer", "AMDRenderer",
             "IntelRenderer")}, "LLVMRenderer": "tinygrad.renderer.llvmir", "WGSLRenderer": "tinygrad.renderer.wgsl"}
RENDERER_OPTIONS = ("simd_bytes", "has_local", "has_shared", "has_threads", "vector_alu_lanes", "supports_float4", "global_max", "local_max",
                    "loop_max", "shared_max", "max_bufs")

def pack(header:dict, data:bytes|bytearray|memoryview=b"") -> bytes:
  head = json.dumps(header).encode()
  return struct.pack("<I", len(head)) + head + bytes(data)

def unpack(body:bytes) -> tuple[dict, memoryview]:
  if len(body) < 4: raise ValueError(f"a body starts with a 4 byte header length, got {len(body)} bytes")
  n = struct.unpack_from("<I", body)[0]
  if n > len(body) - 4: raise ValueError(f"the header length {n} is past the end of a {len(body)} byte body")
  header = json.loads(body[4:4+n])
  if not isinstance(header, dict): raise ValueError(f"the header must be a JSON object, got {type(header).__name__}")
  return header, memoryview(body)[4+n:]

# ***** server *****

# op name -> argument types (checked exactly: a bool is not an int). Every int argument must be >= 0
OPS: dict[str, tuple[type, ...]] = {"info": (), "sync": (), "close": (), "alloc": (int, int), "free": (int,), "view": (int, int, int, int),
  "copyin": (int, int, int, int), "copyout": (int, int, int), "program": (int, str, str), "free_program": (int,),
  "exec": (int, list, list, list, list, bool)}
NOLRU = BufferSpec(nolru=True)   # freed memory goes back to the device at once, so what the server holds is what it counts

class RemoteServer:
  def __init__(self, device:str, max_mem:int, max_body:int, max_programs:int=4096):
    # one thread does all device work: device contexts and the sqlite cache belong to the thread that made them
    if Device.canonicalize(device).startswith("REMOTE"): raise RuntimeError(f"a REMOTE server can't serve {device}: it serves a real device")
    self.worker = ThreadPoolExecutor(1, thread_name_prefix="tinygrad_remote")
    self.dev = self.worker.submit(Device.__getitem__, device).result()
    if type(self.dev.renderer).__name__ not in RENDERERS:
      raise RuntimeError(f"REMOTE can't serve {device}: its renderer {type(self.dev.renderer).__name__} isn't one of {', '.join(RENDERERS)}")
    self.max_mem, self.max_body, self.max_programs, self.held = max_mem, max_body, max_programs, 0
    # (session, id) -> [device buffer, nbytes, key of the base (a view) or None, live views of it]
    self.bufs: dict[tuple[str, int], list] = {}
    self.programs: dict[tuple[str, int], Any] = {}

  def run(self, header:dict, data:memoryview) -> tuple[list, bytearray]:
    session, ops = header.get("session"), header.get("ops")
    if type(session) is not str or not 0 < len(session) <= 64:
      raise ValueError(f"session must be a string of 1 to 64 characters, got {session!r:.80}")
    if type(ops) is not list: raise ValueError(f"ops must be a list, got {type(ops).__name__}")
    self.session, self.data, self.out = session, data, bytearray()
    results = []
    for i, op in enumerate(ops):
      try:
        if type(op) is not list or not op or type(op[0]) is not str: raise ValueError(f"an op is a list [name, args...], got {op!r:.80}")
        if (spec := OPS.get(op[0])) is None: raise ValueError(f"unknown op {op[0]!r:.40}, known ops are {', '.join(OPS)}")
        if len(args := op[1:]) != len(spec) or any(type(a) is not t or (type(a) is int and a < 0) for a, t in zip(args, spec)):
          raise TypeError(f"{op[0]} takes ({', '.join(t.__name__ for t in spec)}) with ints >= 0, got {args!r:.120}")
        results.append(getattr(self, f"op_{op[0]}")(*args))
      except CompileError: raise
      except Exception as e:
        err = RuntimeError(f"op {i} ({op[0] if isinstance(op, list) and op else '?'!s:.20}): {type(e).__name__}: {e}")
        err.index = i  # type: ignore[attr-defined]
        raise err from e
    return results, self.out

  def buf(self, bid:int) -> list:
    if (b := self.bufs.get((self.session, bid))) is None: raise KeyError(f"there is no buffer {bid}")
    return b
  def region(self, bid:int, offset:int, nbytes:int) -> Any:
    opaque, size, _, _ = self.buf(bid)
    if offset + nbytes > size: raise ValueError(f"{nbytes} bytes at offset {offset} are past the end of buffer {bid} of {size} bytes")
    if offset == 0 and nbytes == size: return opaque
    if (offset_fn := getattr(self.dev.allocator, "_offset", None)) is None: raise ValueError(f"{self.dev.device} has no sub-buffers")
    return offset_fn(opaque, nbytes, offset)

  def op_info(self) -> dict:
    ren = self.dev.renderer
    # the renderer's constructor arguments (an OpenCL device's half support, a GPU's arch) as its __reduce__ gives them: plain values only
    args = [a for a in ren.__reduce__()[1] if a is None or type(a) in (str, int, bool)]
    return {"device": self.dev.device, "renderer": type(ren).__name__, "args": args,
            # (a kernel's buffers: the device's limit, and at most the EXEC_BUFS an exec request may name)
            "options": {**{k: getattr(ren, k, None) for k in RENDERER_OPTIONS}, "max_bufs": min(ren.max_bufs or EXEC_BUFS, EXEC_BUFS)},
            "machine": dataclasses.asdict(ren.machine) if ren.machine is not None else None,
            "dtypes": None if ren.dtypes_supported is None else sorted(INVERSE_DTYPES_DICT[d.name] for d in ren.dtypes_supported),
            "held": self.held, "max_mem": self.max_mem, "max_body": self.max_body, "buffers": len(self.bufs), "programs": len(self.programs)}
  def op_sync(self) -> None: self.dev.synchronize()
  def op_alloc(self, bid:int, nbytes:int) -> None:
    if (self.session, bid) in self.bufs: raise ValueError(f"buffer {bid} already exists")
    if nbytes > self.max_mem - self.held:
      raise MemoryError(f"allocation of {nbytes} bytes refused: the server holds {self.held} of at most {self.max_mem} bytes")
    self.bufs[(self.session, bid)] = [self.dev.allocator.alloc(nbytes, NOLRU), nbytes, None, 0]
    self.held += nbytes
  def op_view(self, bid:int, base:int, nbytes:int, offset:int) -> None:
    if (self.session, bid) in self.bufs: raise ValueError(f"buffer {bid} already exists")
    if self.buf(base)[2] is not None: raise ValueError(f"buffer {base} is a view, views are made of base buffers")
    self.bufs[(self.session, bid)] = [self.region(base, offset, nbytes), nbytes, (self.session, base), 0]
    self.buf(base)[3] += 1
  def op_free(self, bid:int) -> None:
    opaque, nbytes, base, views = self.buf(bid)
    if views: raise ValueError(f"buffer {bid} still has {views} views")
    del self.bufs[(self.session, bid)]
    if base is not None: self.bufs[base][3] -= 1
    else:
      self.dev.allocator.free(opaque, nbytes, NOLRU)
      self.held -= nbytes
  def op_copyin(self, bid:int, offset:int, data_offset:int, nbytes:int) -> None:
    if data_offset + nbytes > len(self.data): raise ValueError(f"{nbytes} bytes at {data_offset} are past the end of the {len(self.data)} data bytes")
    region = self.region(bid, offset, nbytes)
    if nbytes: self.dev.allocator._copyin(region, self.data[data_offset:data_offset+nbytes])
  def op_copyout(self, bid:int, offset:int, nbytes:int) -> list[int]:
    region = self.region(bid, offset, nbytes)
    if len(self.out) + nbytes > self.max_body: raise ValueError(f"the answer would be over the server's body limit of {self.max_body} bytes")
    dest = memoryview(bytearray(nbytes))
    if nbytes: self.dev.allocator._copyout(dest, region)
    self.out += dest
    return [len(self.out) - nbytes, nbytes]
  def op_program(self, pid:int, name:str, src:str) -> None:
    if (self.session, pid) in self.programs: raise ValueError(f"program {pid} already exists")
    if len(self.programs) >= self.max_programs: raise MemoryError(f"the server holds its limit of {self.max_programs} programs")
    if not name.isidentifier(): raise ValueError(f"a kernel name is an identifier, got {name!r:.80}")
    if self.dev.program is None: raise RuntimeError(f"{self.dev.device} runs no kernels")
    self.programs[(self.session, pid)] = self.dev.program(name, self.dev.compiler.compile_cached(src))
  def op_free_program(self, pid:int) -> None:
    if self.programs.pop((self.session, pid), None) is None: raise KeyError(f"there is no program {pid}")
  def op_exec(self, pid:int, bufs:list, global_size:list, local_size:list, vals:list, wait:bool) -> float|None:
    if (prg := self.programs.get((self.session, pid))) is None: raise KeyError(f"there is no program {pid}")
    for what, xs, lo, hi, n in (("global_size", global_size, 1, 2**31-1, 3), ("local_size", local_size, 1, 2**31-1, 3),
                                ("vals", vals, -2**31, 2**31-1, 256), ("bufs", bufs, 0, 2**63, EXEC_BUFS)):
      if len(xs) > n or any(type(x) is not int or not lo <= x <= hi for x in xs): raise ValueError(f"{what} must be at most {n} ints in [{lo}, {hi}]")
    return prg(*[self.buf(b)[0] for b in bufs], global_size=tuple(global_size) or None, local_size=tuple(local_size) or None, vals=tuple(vals),
               wait=wait)
  def op_close(self) -> None:
    # views first: a base is freed once nothing points into it
    for key in sorted((k for k in self.bufs if k[0] == self.session), key=lambda k: self.bufs[k][2] is None): self.op_free(key[1])
    for key in [k for k in self.programs if k[0] == self.session]: del self.programs[key]

class _Handler(http.server.BaseHTTPRequestHandler):
  server_version, timeout = "tinygrad-remote", 30   # a client that stops sending mid-request is dropped after 30 seconds
  def do_POST(self) -> None:
    srv: RemoteServer = self.server.remote  # type: ignore[attr-defined]
    try:
      if self.path != "/batch": return self.reply(404, {"error": f"unknown path {self.path[:80]!r}, requests go to /batch"})
      try: n = int(self.headers.get("Content-Length", ""))
      except ValueError: return self.reply(411, {"error": "a Content-Length header with the body's size is required"})
      if not 0 <= n <= srv.max_body: return self.reply(413, {"error": f"a body of {n} bytes is over the server's limit of {srv.max_body}"})
      if len(body := self.rfile.read(n)) != n: return self.reply(400, {"error": f"the body was cut short: {len(body)} of {n} bytes"})
      header, data = unpack(body)
      results, out = srv.worker.submit(srv.run, header, data).result()
      self.reply(200, {"results": results}, out)
    except Exception as e:
      if DEBUG >= 2: print(f"REMOTE request failed: {type(e).__name__}: {e}")
      self.reply(500 if isinstance(e, CompileError) else 400, {"error": f"{type(e).__name__}: {e}", "kind": type(e).__name__,
                                                               "index": getattr(e, "index", None)})
  def reply(self, code:int, header:dict, data:bytes|bytearray=b"") -> None:
    try:
      body = pack(header, data)
      self.send_response(code)
      self.send_header("Content-Length", str(len(body)))
      self.end_headers()
      self.wfile.write(body)
    except OSError: self.close_connection = True   # the client went away
  def log_message(self, format:str, *args:Any) -> None:
    if DEBUG >= 3: super().log_message(format, *args)

def serve(host:str="127.0.0.1", port:int=DEFAULT_PORT, device:str="CPU", max_mem:int=4<<30, max_body:int=256<<20) -> None:
  srv = http.server.ThreadingHTTPServer((host, port), _Handler)
  srv.daemon_threads, srv.remote = True, RemoteServer(device, max_mem, max_body)  # type: ignore[attr-defined]
  print(f"REMOTE serving {device} on {host}:{srv.server_port}", flush=True)
  srv.serve_forever()

# ***** client *****

class RemoteConnection:
  def __init__(self, address:str, timeout:float):
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit(): raise ValueError(f"REMOTE_HOST must be host:port, got {address!r}")
    self.host, self.port, self.timeout, self.session, self.ids = host, int(port), timeout, uuid.uuid4().hex, itertools.count()
    self.ops: list[list] = []
    self.dead: set[int] = set()   # ids whose alloc/view/program was dropped by a failed batch: the server never had them
    self.data = bytearray()
  def request(self, ops:list, data:bytearray) -> tuple[list, memoryview]:
    where = f"REMOTE server {self.host}:{self.port}"
    try:
      conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
      try:
        conn.request("POST", "/batch", pack({"session": self.session, "ops": ops}, data))
        resp = conn.getresponse()
        status, raw = resp.status, resp.read()
      finally: conn.close()
      header, out = unpack(raw)
    except (OSError, http.client.HTTPException, ValueError) as e:
      raise RuntimeError(f"{where} didn't answer ({type(e).__name__}: {e}); start one with python -m tinygrad.runtime.ops_remote --serve") from e
    if status != 200:
      # the ops from the failed one on never ran: forget what they made, so freeing it later doesn't fail again
      if type(index := header.get("index")) is int: self.dead.update(op[1] for op in ops[index:] if op[0] in ("alloc", "view", "program"))
      raise (CompileError if header.get("kind") == "CompileError" else RuntimeError)(f"{where}: {header.get('error')}")
    return header["results"], out
  def flush(self, *ops:list) -> tuple[list, memoryview]:
    """Sends what is queued and ops; returns the results of ops and the data the server sent back."""
    queued, data = self.ops + list(ops), self.data
    self.ops, self.data = [], bytearray()
    if not queued: return [], memoryview(b"")
    results, out = self.request(queued, data)
    return results[len(queued)-len(ops):], out

class RemoteAllocator(Allocator[int]):
  def __init__(self, conn:RemoteConnection, chunk:int): self.conn, self.chunk = conn, chunk
  def _alloc(self, size:int, options:BufferSpec) -> int:
    if options.external_ptr is not None: raise RuntimeError("REMOTE buffers can't wrap host memory (external_ptr)")
    self.conn.ops.append(["alloc", bid := next(self.conn.ids), size])
    return bid
  def _free(self, opaque:int, options:BufferSpec) -> None:
    if opaque in self.conn.dead: self.conn.dead.discard(opaque)
    else: self.conn.ops.append(["free", opaque])
  def _offset(self, buf:int, size:int, offset:int) -> int:
    self.conn.ops.append(["view", bid := next(self.conn.ids), buf, size, offset])
    return bid
  def _copyin(self, dest:int, src:memoryview) -> None:
    for off in range(0, src.nbytes, self.chunk):
      part = src[off:off+self.chunk]
      self.conn.ops.append(["copyin", dest, off, len(self.conn.data), part.nbytes])
      self.conn.data += part   # a copy: src may change once this returns
      if len(self.conn.data) >= self.chunk: self.conn.flush()
  def _copyout(self, dest:memoryview, src:int) -> None:
    for off in range(0, dest.nbytes, self.chunk):
      ((start, n),), out = self.conn.flush(["copyout", src, off, min(self.chunk, dest.nbytes - off)])
      dest[off:off+n] = out[start:start+n]

class RemoteProgram:
  def __init__(self, conn:RemoteConnection, name:str, lib:bytes):
    # compiled at once, so a kernel that doesn't compile fails here with the server's message
    self.conn, self.name, pid = conn, name, next(conn.ids)
    conn.flush(["program", pid, name, lib.decode()])
    self.pid = pid
  def __call__(self, *bufs:int, global_size:tuple[int, ...]|None=(1, 1, 1), local_size:tuple[int, ...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    op = ["exec", self.pid, list(bufs), [int(x) for x in global_size or ()], [int(x) for x in local_size or ()], [int(x) for x in vals], wait]
    if wait: return self.conn.flush(op)[0][0]
    self.conn.ops.append(op)
    return None
  def __del__(self) -> None:
    if hasattr(self, "pid"): self.conn.ops.append(["free_program", self.pid])

def renderer_from_info(info:dict) -> Any:
  if (name := info.get("renderer")) not in RENDERERS:
    raise RuntimeError(f"the REMOTE server's renderer {name!r:.80} isn't one of {', '.join(RENDERERS)}")
  args = info.get("args", [])
  if type(args) is not list or len(args) > 4 or not all(a is None or type(a) in (str, int, bool) for a in args):
    raise RuntimeError(f"the REMOTE server's renderer arguments {args!r:.80} must be a short list of plain values")
  try: ren = getattr(importlib.import_module(RENDERERS[name]), name)(*args)
  except (TypeError, ValueError) as e: raise RuntimeError(f"the REMOTE server's renderer {name}{tuple(args)!r:.80} can't be made: {e}") from None
  for k, v in info.get("options", {}).items():
    if k in RENDERER_OPTIONS and (v is None or type(v) in (int, bool) or (type(v) is list and all(type(x) is int for x in v))):
      setattr(ren, k, tuple(v) if isinstance(v, list) else v)
  if isinstance(names := info.get("dtypes"), list): ren.dtypes_supported = frozenset(DTYPES_DICT[n] for n in names if n in DTYPES_DICT)
  # the server's CPU, so kernels are tiled and threaded for the machine that runs them (not the client's)
  if isinstance(m := info.get("machine"), dict):
    # the field types are strings here (annotations are not evaluated); a JSON float may come as an int
    fields = {f.name: {"str": (str,), "int": (int,), "float": (float, int)}[str(f.type)] for f in dataclasses.fields(MachineModel)}
    if set(m) != set(fields) or not all(type(v) in fields[k] for k, v in m.items()):
      raise RuntimeError(f"the REMOTE server's machine model {m!r:.200} doesn't have the fields {', '.join(fields)}")
    ren.machine = MachineModel(**m)
  return ren

class RemoteDevice(Compiled):
  def __init__(self, device:str):
    # REMOTE_HOST may list several servers: REMOTE:1 is the second
    hosts = (os.environ.get("REMOTE_HOST") or f"127.0.0.1:{DEFAULT_PORT}").split(",")
    if (index := int(device.partition(":")[2] or 0)) >= len(hosts): raise RuntimeError(f"{device}: REMOTE_HOST names {len(hosts)} servers")
    self.conn = RemoteConnection(hosts[index].strip(), float(os.environ.get("REMOTE_TIMEOUT") or 300))
    (self.info,), _ = self.conn.flush(["info"])
    chunk = max(1 << 16, min(64 << 20, int(self.info.get("max_body", 0)) // 2))
    super().__init__(device, RemoteAllocator(self.conn, chunk), renderer_from_info(self.info), Compiler(),
                     functools.partial(RemoteProgram, self.conn))
    atexit.register(self.close)
  def synchronize(self) -> None: self.conn.flush(["sync"])
  def close(self) -> None:
    try: self.conn.flush(["close"])
    except RuntimeError: pass   # the server is gone: nothing is held for us any more

def main(argv:list[str]|None=None) -> None:
  p = argparse.ArgumentParser(prog="python -m tinygrad.runtime.ops_remote", description="serve a tinygrad device to REMOTE clients")
  p.add_argument("--serve", action="store_true", required=True, help="run the server")
  p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 serves every network: kernels are code)")
  p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}, 0 picks a free one)")
  p.add_argument("--device", default=os.environ.get("REMOTEDEV") or "CPU", help="the device served (default $REMOTEDEV or CPU)")
  p.add_argument("--max-mem", type=int, default=4<<30, help="bytes of device memory all clients together may hold")
  p.add_argument("--max-body", type=int, default=256<<20, help="the largest request or answer body in bytes")
  args = p.parse_args(argv)
  serve(args.host, args.port, args.device, args.max_mem, args.max_body)

if __name__ == "__main__":
  from tinygrad.runtime.ops_remote import main as the_main   # the classes Device and the server use live in the imported module
  the_main()
