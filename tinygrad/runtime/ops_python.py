"""The PYTHON device: an interpreter for the linear UOp program, and the reference semantics every other device is checked against.

All threads of a workgroup (and of a batch of workgroups) run the program together: every value is a list with one entry per thread,
workgroup after workgroup and ordered by local id inside one (lidx0 fastest), so BARRIER holds trivially. IFs and uneven loops mask threads.
ALU ops follow exec_alu (python_alu + truncate to the dtype). Vectors are tuples."""
from __future__ import annotations
import base64, ctypes, functools, itertools, pickle, struct, time
from array import array
from typing import Any, Callable, Sequence, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, python_alu, exec_alu, ThreadKind
from tinygrad.dtype import DType, PtrDType, dtypes, truncate, fp8_to_float, float_to_fp8
from tinygrad.device import Compiled, Compiler, Allocator, BufferSpec
from tinygrad.renderer import Renderer
from tinygrad.renderer.cstyle import with_sources, mem_gate, load_alt, buffer_of
from tinygrad.helpers import flat_mv, getenv

# ***** values <-> memory *****

@functools.cache
def _half_table() -> tuple[float, ...]: return struct.unpack("<65536e", array("H", range(65536)).tobytes())
@functools.cache
def _bf16_table() -> tuple[float, ...]: return struct.unpack("<65536f", array("I", (i << 16 for i in range(65536))).tobytes())
@functools.cache
def _fp8_table(dt:DType) -> tuple[float, ...]: return tuple(fp8_to_float(i, dt) for i in range(256))

def _half_bits(x:float) -> int: return struct.unpack("<H", struct.pack("<e", truncate[dtypes.float16](x)))[0]
def _bf16_bits(x:float) -> int:
  bits = struct.unpack("<I", struct.pack("<f", truncate[dtypes.float32](x)))[0]
  if (bits & 0x7fffffff) > 0x7f800000: return (bits >> 16) | 0x40   # nan stays a quiet nan
  return (bits + 0x7fff + ((bits >> 16) & 1)) >> 16                # round to nearest even, as the C renderer does

# dtypes memoryview can't hold: the raw format, raw -> value, value -> raw
def _raw(dt:DType) -> tuple[str, Callable|None, Callable|None]:
  if dt == dtypes.float16: return "H", _half_table().__getitem__, _half_bits
  if dt == dtypes.bfloat16: return "H", _bf16_table().__getitem__, _bf16_bits
  if dt in dtypes.fp8s: return "B", _fp8_table(dt).__getitem__, lambda x: float_to_fp8(x, dt)
  if dt.fmt is None: raise NotImplementedError(f"no memory format for {dt}")
  return dt.fmt, None, None

def _zero(dt:DType) -> Any:
  z = False if dt.scalar() == dtypes.bool else 0.0 if dtypes.is_float(dt) else 0
  return (z,)*dt.count if dt.count > 1 else z

class _Mem:
  """A buffer for the interpreter: bounds-checked loads and stores of one value per active thread.
  Shared memory holds one copy per workgroup of the batch; offs gives each thread's copy."""
  def __init__(self, data:Any, size:int, to_val:Callable|None, to_raw:Callable|None, what:str, offs:list[int]|None=None):
    self.data, self.size, self.to_val, self.to_raw, self.what, self.offs = data, size, to_val, to_raw, what, offs
  @staticmethod
  def wrap(buf:Any, dt:DType, what:str) -> _Mem:
    fmt, to_val, to_raw = _raw(dt)
    mv = flat_mv(memoryview(buf))
    if mv.nbytes % struct.calcsize(fmt): raise ValueError(f"{what}: {mv.nbytes} bytes is not a whole number of {dt}")
    data = cast(Any, mv).cast(fmt)
    return _Mem(data, len(data), to_val, to_raw, what)
  @staticmethod
  def local(dt:DType, size:int, what:str, slots:list[int], nslots:int) -> _Mem:
    return _Mem([_zero(dt)]*(size*nslots), size, None, None, what, [s*size for s in slots])
  def _addr(self, idxs:list[int], cnt:int, act:list[bool]|None) -> list[int]:
    offs = self.offs
    if act is not None:
      sel = [t for t, on in enumerate(act) if on]
      idxs, offs = [idxs[t] for t in sel], (None if offs is None else [offs[t] for t in sel])
    if idxs and (min(idxs) < 0 or max(idxs) + cnt > self.size):
      bad = next(i for i in idxs if i < 0 or i + cnt > self.size)
      raise IndexError(f"{self.what}: access at {bad}" + (f" (+{cnt} elements)" if cnt > 1 else "") + f" is out of bounds of {self.size} elements")
    return idxs if offs is None else [i + o for i, o in zip(idxs, offs)]
  def load(self, idxs:list[int], cnt:int, act:list[bool]|None) -> list:
    """the values at idxs (cnt consecutive ones as a tuple when cnt > 1) for the active threads"""
    d, f, addr = self.data, self.to_val, self._addr(idxs, cnt, act)
    if cnt == 1: return [d[i] for i in addr] if f is None else [f(d[i]) for i in addr]
    if f is None: return [tuple(d[i:i+cnt]) for i in addr]
    return [tuple(f(d[i+k]) for k in range(cnt)) for i in addr]
  def store(self, idxs:list[int], vals:list, cnt:int, act:list[bool]|None) -> None:
    d, f, addr = self.data, self.to_raw, self._addr(idxs, cnt, act)
    if act is not None: vals = [x for x, on in zip(vals, act) if on]
    if f is not None: vals = [f(x) for x in vals] if cnt == 1 else [tuple(f(e) for e in x) for x in vals]
    if cnt == 1:
      for i, x in zip(addr, vals): d[i] = x
    else:
      for i, x in zip(addr, vals):
        for k in range(cnt): d[i+k] = x[k]

# ***** bitcasts: through bytes *****

def _pack(dt:DType) -> Callable[[Any], bytes]:
  fmt, _, to_raw = _raw(dt)
  s = struct.Struct("<" + fmt)
  return s.pack if to_raw is None else lambda x: s.pack(to_raw(x))
def _unpack(dt:DType) -> Callable[[bytes], Any]:
  fmt, to_val, _ = _raw(dt)
  s = struct.Struct("<" + fmt)
  return (lambda b: s.unpack(b)[0]) if to_val is None else lambda b: to_val(s.unpack(b)[0])

def _bitcast_fn(src:DType, dst:DType) -> Callable[[Any], Any]:
  if src.itemsize != dst.itemsize: raise ValueError(f"BITCAST needs equal sizes, got {src} -> {dst}")
  pk, up, sz = _pack(src.scalar()), _unpack(dst.scalar()), dst.scalar().itemsize
  def fxn(x:Any) -> Any:
    b = b"".join(pk(e) for e in x) if src.count > 1 else pk(x)
    return tuple(up(b[i:i+sz]) for i in range(0, len(b), sz)) if dst.count > 1 else up(b)
  return fxn

# ***** ALU: exec_alu's rules, with the per-element dispatch hoisted out of the loop *****

_BOOL_ALU = {Ops.ADD: Ops.OR, Ops.MUL: Ops.AND, Ops.MAX: Ops.OR}

def alu_fn(op:Ops, dtype:DType) -> Callable[..., list]:
  """A function from the operand lists (one entry per thread) to the result list, equal to exec_alu(op, dtype, ...) element by element."""
  if dtype.count > 1: return lambda *srcs: [exec_alu(op, dtype, list(a)) for a in zip(*srcs)]
  if dtype == dtypes.bool and op in _BOOL_ALU: op = _BOOL_ALU[op]
  if dtypes.is_int(dtype) and op is Ops.RECIP: raise ValueError(f"RECIP is a float op, got {dtype}")
  f: Callable = python_alu[op]
  tr: Callable = truncate.get(dtype, lambda x: x)
  if dtype == dtypes.float32:
    # array('f') rounds a whole list to float32 in C (inf on overflow, like truncate)
    def f32(*srcs:list) -> list:
      res = [f(*a) for a in zip(*srcs)]
      try: return array("f", res).tolist()
      except (OverflowError, TypeError): return [tr(x) for x in res]
    return f32
  if op in GroupOp.Binary: return lambda a, b: [tr(f(x, y)) for x, y in zip(a, b)]
  return lambda *srcs: [tr(f(*a)) for a in zip(*srcs)]

def _cast_fn(dtype:DType) -> Callable[[list], list]:
  tr = truncate[dtype.scalar()]
  if dtype.count > 1: return lambda a: [tuple(tr(e) for e in x) for x in a]
  return lambda a: [tr(x) for x in a]

# WMMA emulation: key (the WMMA arg's name, or its device) -> fxn(arg, a, b, c, threads per workgroup), each operand a list with one
# entry per thread, workgroup after workgroup, lidx0 fastest inside one. The arg is (name, (N, M, K), dtype_in, dtype_out, device, threads, ...).
WMMA_EMULATORS: dict[str, Callable[[Any, list, list, list, int], list]] = {}

# Where element i of lane l's fragment sits, (row, col), written from each vendor's documentation independently of the bit layouts in
# tinygrad/renderer/tc.py, so a kernel only gets right answers when the two agree. A is M x K, B is K x N, C and D are M x N.
Frag = Callable[[int, int], tuple[int, int]]
def _cuda_maps(dims:tuple[int, int, int], threads:int) -> tuple[Frag, Frag, Frag]:
  # PTX ISA, mma.m16n8k16 / mma.m16n8k8 floating point fragments: groupID = lane >> 2, threadID_in_group = lane % 4
  def c(l:int, i:int) -> tuple[int, int]: return (l >> 2) + 8*(i >> 1), (l % 4)*2 + (i & 1)
  if dims == (8, 16, 16):
    return (lambda l, i: ((l >> 2) + 8*((i >> 1) & 1), (l % 4)*2 + (i & 1) + 8*(i >> 2)), lambda l, i: ((l % 4)*2 + (i & 1) + 8*(i >> 1), l >> 2), c)
  if dims == (8, 16, 8): return (lambda l, i: ((l >> 2) + 8*(i >> 1), (l % 4)*2 + (i & 1)), lambda l, i: ((l % 4)*2 + i, l >> 2), c)
  raise NotImplementedError(f"no CUDA tensor core {dims}")
def _amd_maps(dims:tuple[int, int, int], threads:int) -> tuple[Frag, Frag, Frag]:
  # CDNA wave64 v_mfma_f32_16x16x16f16: lane l holds row l % 16 of A and column l % 16 of B at k = 4*(l // 16) + i; D is row 4*(l // 16) + i
  def k(l:int, i:int) -> int: return 4*(l // 16) + i
  if threads == 64: return (lambda l, i: (l % 16, k(l, i))), (lambda l, i: (k(l, i), l % 16)), (lambda l, i: (k(l, i), l % 16))
  # RDNA3 wave32 WMMA: lane l holds row l % 16 of A, column l % 16 of B (lanes 16-31 repeat 0-15); D element i is row 2i + l // 16
  return (lambda l, i: (l % 16, i)), (lambda l, i: (i, l % 16)), (lambda l, i: (2*i + l // 16, l % 16))
def _metal_maps(dims:tuple[int, int, int], threads:int) -> tuple[Frag, Frag, Frag]:
  # simdgroup 8x8 thread_elements(): the same placement for A, B and C
  def f(l:int, i:int) -> tuple[int, int]: return ((l >> 1) & 3) + 4*(l >> 4), i + 2*(l & 1) + 4*((l >> 3) & 1)
  return f, f, f
def _intel_maps(dims:tuple[int, int, int], threads:int) -> tuple[Frag, Frag, Frag]:
  # cl_intel_subgroup_matrix_multiply_accumulate: vector component r is row r; work item j is column j of B and C, and holds A's
  # columns 2j, 2j+1 (subgroup 8, packed in one int per row) or column j (subgroup 16)
  def bc(l:int, i:int) -> tuple[int, int]: return i, l
  if threads == 8: return (lambda l, i: (i >> 1, 2*l + (i & 1))), bc, bc
  return bc, bc, bc

def _wmma_emulator(maps:Callable[[tuple[int, int, int], int], tuple[Frag, Frag, Frag]]) -> Callable[[Any, list, list, list, int], list]:
  def emulate(arg:Any, a:list, b:list, c:list, wg:int) -> list:
    (n, m, k), dtype_out, threads = arg[1], arg[3], arg[5]
    if wg % threads: raise ValueError(f"{arg[0]}: a workgroup of {wg} threads isn't whole warps of {threads}")
    amap, bmap, cmap = maps(arg[1], threads)
    tr = truncate[dtype_out]
    out: list = []
    for w in range(0, len(a), threads):
      A: list[list[Any]] = [[None]*k for _ in range(m)]
      B: list[list[Any]] = [[None]*n for _ in range(k)]
      for mat, frags, fmap, what in ((A, a, amap, "A"), (B, b, bmap, "B")):
        for lane in range(threads):
          for i, v in enumerate(frags[w+lane]):
            r, col = fmap(lane, i)
            if mat[r][col] is not None and mat[r][col] != v: raise ValueError(f"{arg[0]}: threads disagree on the copies of {what}[{r}][{col}]")
            mat[r][col] = v
      for lane in range(threads):
        out.append(tuple(tr(sum(A[r][kk] * B[kk][col] for kk in range(k)) + acc)
                         for i, acc in enumerate(c[w+lane]) for r, col in (cmap(lane, i),)))
    return out
  return emulate

WMMA_EMULATORS.update({"CUDA": _wmma_emulator(_cuda_maps), "AMD": _wmma_emulator(_amd_maps), "METAL": _wmma_emulator(_metal_maps),
                       "INTEL": _wmma_emulator(_intel_maps)})

# ***** the interpreter *****

# workgroups run together in batches of about this many threads: one pass over the program serves them all
BATCH_THREADS = 4096

class _Warp:
  """The run state of one batch of workgroups: thread t is local thread t % wg of workgroup t // wg of the batch."""
  __slots__ = ("n", "wg", "gids", "lids", "lsz", "slots", "nslots", "mask", "masks", "ends")
  def __init__(self, wgs:list[tuple[int, ...]], lids:list[tuple[int, ...]], lsz:tuple[int, ...]):
    self.n, self.wg, self.lsz, self.nslots = len(wgs)*len(lids), len(lids), lsz, len(wgs)
    self.gids = [[g[d] for g in wgs for _ in lids] for d in range(3)]
    self.lids = [[l[d] for _ in wgs for l in lids] for d in range(3)]
    self.slots = [k for k in range(len(wgs)) for _ in lids]
    self.mask: list[bool]|None = None   # the active threads inside IFs and uneven loops, None when all are
    self.masks: list[list[bool]|None] = []
    self.ends: dict[int, int|list] = {}

def _active(mask:list[bool]|None, gate:list|None) -> list[bool]|None:
  if gate is None: return mask
  return [bool(g) for g in gate] if mask is None else [m and bool(g) for m, g in zip(mask, gate)]

def _rebuild(items:list[tuple[Ops, DType, list[int], Any]]) -> list[UOp]:
  # back to UOps, sources first (a DEFINE_ACC's ranges come after it in the list, so list order is not enough)
  out: list[UOp|None] = [None]*len(items)
  for i in range(len(items)):
    stack, busy = [i], set()
    while stack:
      j = stack[-1]
      if out[j] is not None:
        stack.pop()
        continue
      if (missing := [s for s in items[j][2] if out[s] is None]):
        if j in busy: raise ValueError(f"the program has a cycle through uop {j} ({items[j][0]})")
        busy.add(j)
        stack.extend(missing)
        continue
      op, dt, src, arg = items[j]
      out[j] = UOp(op, dt, tuple(cast(UOp, out[s]) for s in src), arg)
      stack.pop()
  return cast(list[UOp], out)

def _nop(v:list, w:_Warp) -> None: return None

class PythonProgram:
  def __init__(self, name:str, lib:bytes):
    self.name = name
    self.uops = _rebuild(pickle.loads(lib))
    self._build()

  def _build(self) -> None:
    uops, pos = self.uops, {u: i for i, u in enumerate(self.uops)}
    self.globals = sorted(((u.arg, i) for i, u in enumerate(uops) if u.op is Ops.DEFINE_GLOBAL))
    self.vars = sorted(((u.arg[0], i) for i, u in enumerate(uops) if u.op is Ops.DEFINE_VAR))
    self.consts: list[tuple[int, Any]] = []
    ends = {pos[u.src[0]]: i for i, u in enumerate(uops) if u.op is Ops.ENDRANGE}
    endifs = {pos[u.src[0]]: i for i, u in enumerate(uops) if u.op is Ops.ENDIF}
    self.fns: list[Callable[[list, _Warp], int|None]] = [self._instr(i, u, pos, ends, endifs) for i, u in enumerate(uops)]

  def _instr(self, i:int, u:UOp, pos:dict[UOp, int], ends:dict[int, int], endifs:dict[int, int]) -> Callable[[list, _Warp], int|None]:
    op, dt, src = u.op, u.dtype, [pos[s] for s in u.src]
    if op in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR, Ops.BARRIER): return _nop   # globals and vars are filled in before the run
    if op in (Ops.CONST, Ops.VCONST):
      val = tuple(truncate[dt.scalar()](x) for x in u.arg) if op is Ops.VCONST else truncate[dt.scalar()](u.arg)
      self.consts.append((i, (val,)*dt.count if dt.count > 1 and op is Ops.CONST else val))
      return _nop
    if op is Ops.SPECIAL:
      d = u.arg.dim
      if u.arg.kind is ThreadKind.LOCAL:
        def special(v:list, w:_Warp) -> None: v[i] = w.lids[d]
      else:   # a host thread (CORE) is launched like a workgroup of dimension 0
        def special(v:list, w:_Warp) -> None: v[i] = w.gids[d]
      return special
    if op is Ops.DEFINE_LOCAL:
      ldt = cast(PtrDType, dt)
      def define_local(v:list, w:_Warp) -> None: v[i] = _Mem.local(ldt.base, ldt.size, f"local {u.arg}", w.slots, w.nslots)
      return define_local
    if op is Ops.RANGE:
      after = ends[i] + 1
      def rng(v:list, w:_Warp) -> int|None:
        e = v[src[0]]
        if (m := w.mask) is None and e.count(e[0]) == len(e) or m is not None and len({x for x, on in zip(e, m) if on}) == 1:
          # every active thread runs the same trips: one counter, no mask
          if (end := int(e[0] if m is None else next(x for x, on in zip(e, m) if on))) <= 0: return after
          w.ends[i] = end
        else:
          # uneven trip counts: threads past their end sit out the rest of the loop
          w.masks.append(m)
          if not any(new := [on and x > 0 for on, x in zip(m or [True]*w.n, e)]):
            w.mask = w.masks.pop()
            return after
          w.mask, w.ends[i] = new, e
        v[i] = [0]*w.n
        return None
      return rng
    if op is Ops.ENDRANGE:
      r = src[0]
      def endrange(v:list, w:_Warp) -> int|None:
        c, e = v[r][0] + 1, w.ends[r]
        if isinstance(e, int):
          if c < e:
            v[r] = [c]*w.n
            return r + 1
          return None
        if any(new := [on and c < x for on, x in zip(w.masks[-1] or [True]*w.n, e)]):
          w.mask, v[r] = new, [c]*w.n
          return r + 1
        w.mask = w.masks.pop()
        return None
      return endrange
    if op is Ops.IF:
      endif = endifs[i]
      def if_(v:list, w:_Warp) -> int|None:
        w.masks.append(w.mask)
        new = cast(list[bool], _active(w.mask, v[src[0]]))
        w.mask = None if all(new) else new
        return endif if not any(new) else None
      return if_
    if op is Ops.ENDIF:
      def endif_(v:list, w:_Warp) -> None: w.mask = w.masks.pop()
      return endif_
    if op is Ops.DEFINE_ACC:
      # its ASSIGNs start out as the initial value too: after a loop that ran no trips they still read the accumulator
      targets = [i] + [j for j, x in enumerate(self.uops) if x.op is Ops.ASSIGN and _acc_of(x) is u]
      def define_acc(v:list, w:_Warp) -> None:
        for t in targets: v[t] = v[src[0]]
      return define_acc
    if op is Ops.ASSIGN:
      acc = pos[_acc_of(u)]
      def assign(v:list, w:_Warp) -> None:
        v[acc] = v[i] = v[src[1]] if w.mask is None else [n if m else o for n, o, m in zip(v[src[1]], v[acc], w.mask)]
      return assign
    if op is Ops.INDEX:
      def index(v:list, w:_Warp) -> None: v[i] = (v[src[0]], v[src[1]])
      return index
    if op in (Ops.CAST, Ops.NOOP) and (isinstance(dt, PtrDType) or op is Ops.NOOP):
      def passthrough(v:list, w:_Warp) -> None: v[i] = v[src[0]]
      return passthrough
    if op is Ops.LOAD: return self._load(i, u, pos)
    if op is Ops.STORE: return self._store(u, pos)
    if op is Ops.PREFETCH:   # a cache hint does nothing here, but its address must be inside the buffer like a load's
      def prefetch(v:list, w:_Warp) -> None: v[src[0]][0].load(v[src[0]][1], 1, _active(w.mask, v[src[1]] if len(src) > 1 else None))
      return prefetch
    if op in GroupOp.ALU:
      fxn = alu_fn(op, dt)
      if len(src) == 2:
        a, b = src
        def alu2(v:list, w:_Warp) -> None: v[i] = fxn(v[a], v[b])
        return alu2
      def alu(v:list, w:_Warp) -> None: v[i] = fxn(*[v[s] for s in src])
      return alu
    if op is Ops.CAST:
      cfn = _cast_fn(dt)
      def cast_(v:list, w:_Warp) -> None: v[i] = cfn(v[src[0]])
      return cast_
    if op is Ops.BITCAST:
      bfn = _bitcast_fn(u.src[0].dtype, dt)
      def bitcast(v:list, w:_Warp) -> None: v[i] = [bfn(x) for x in v[src[0]]]
      return bitcast
    if op is Ops.VECTORIZE:
      def vectorize(v:list, w:_Warp) -> None: v[i] = list(zip(*[v[s] for s in src]))
      return vectorize
    if op is Ops.GEP:
      lanes, scalar = u.arg, u.src[0].dtype.count == 1
      if scalar:
        def gep(v:list, w:_Warp) -> None: v[i] = v[src[0]] if len(lanes) == 1 else [(x,)*len(lanes) for x in v[src[0]]]
      elif len(lanes) == 1:
        k = lanes[0]
        def gep(v:list, w:_Warp) -> None: v[i] = [x[k] for x in v[src[0]]]
      else:
        def gep(v:list, w:_Warp) -> None: v[i] = [tuple(x[k] for k in lanes) for x in v[src[0]]]
      return gep
    if op is Ops.WMMA:
      key = u.arg[0] if isinstance(u.arg, tuple) and u.arg else u.arg
      dev = u.arg[4] if isinstance(u.arg, tuple) and len(u.arg) > 4 else None
      if (emu := WMMA_EMULATORS.get(key) or WMMA_EMULATORS.get(str(dev))) is None: raise NotImplementedError(f"no WMMA emulation for {u.arg}")
      def wmma(v:list, w:_Warp) -> None: v[i] = emu(u.arg, v[src[0]], v[src[1]], v[src[2]], w.wg)
      return wmma
    raise NotImplementedError(f"the PYTHON device can't run {op}")

  def _load(self, i:int, u:UOp, pos:dict[UOp, int]) -> Callable[[list, _Warp], int|None]:
    # a local of vectors (a group reduce of vector accumulators) holds one vector per element
    a, cnt = pos[u.src[0]], u.dtype.count // _elem_lanes(u.src[0])
    g = pos[gate] if (gate := mem_gate(u)) is not None else None
    alt = pos[al] if (al := load_alt(u)) is not None else None
    zero = _zero(u.dtype)
    def load(v:list, w:_Warp) -> None:
      mem, idx = v[a]
      if (act := _active(w.mask, v[g] if g is not None else None)) is None:
        v[i] = mem.load(idx, cnt, None)
        return
      got = iter(mem.load(idx, cnt, act))
      alts = v[alt] if alt is not None else [zero]*w.n
      v[i] = [next(got) if on else z for on, z in zip(act, alts)]
    return load

  def _store(self, u:UOp, pos:dict[UOp, int]) -> Callable[[list, _Warp], int|None]:
    a, x, cnt = pos[u.src[0]], pos[u.src[1]], u.src[1].dtype.count // _elem_lanes(u.src[0])
    g = pos[gate] if (gate := mem_gate(u)) is not None else None
    def store(v:list, w:_Warp) -> None:
      mem, idx = v[a]
      mem.store(idx, v[x], cnt, _active(w.mask, v[g] if g is not None else None))
    return store

  def __call__(self, *bufs, global_size:Sequence[int]|None=(1,1,1), local_size:Sequence[int]|None=(1,1,1), vals:Sequence[int]=(),
               wait:bool=False) -> float|None:
    st = time.perf_counter()
    if len(bufs) != len(self.globals): raise TypeError(f"{self.name} takes {len(self.globals)} buffers, got {len(bufs)}")
    if len(vals) != len(self.vars): raise TypeError(f"{self.name} takes {len(self.vars)} variables ({[v[0] for v in self.vars]}), got {len(vals)}")
    gs, ls = _dims(global_size), _dims(local_size)
    lids = [t[::-1] for t in itertools.product(*[range(x) for x in ls[::-1]])]   # lidx0 varies fastest
    mems = [(p, _Mem.wrap(b, cast(PtrDType, self.uops[p].dtype).base, f"buffer {arg} of {self.name}")) for (arg, p), b in zip(self.globals, bufs)]
    fns, nfns = self.fns, len(self.fns)
    wgs = (t[::-1] for t in itertools.product(*[range(x) for x in gs[::-1]]))  # gidx0 varies fastest
    while (batch := list(itertools.islice(wgs, max(1, BATCH_THREADS // len(lids))))):
      w = _Warp(batch, lids, ls)
      v: list[Any] = [None]*nfns
      for p, m in mems: v[p] = m
      for (_, p), val in zip(self.vars, vals): v[p] = [int(val)]*w.n
      for p, c in self.consts: v[p] = [c]*w.n
      pc = 0
      while pc < nfns:
        r = fns[pc](v, w)
        pc = pc + 1 if r is None else r
    return time.perf_counter() - st if wait else None

def _elem_lanes(addr:UOp) -> int: return b.dtype.base.count if isinstance((b := buffer_of(addr)).dtype, PtrDType) else 1

def _acc_of(u:UOp) -> UOp:
  while u.op is Ops.ASSIGN: u = u.src[0]
  return u

def _dims(x:Sequence[int]|None) -> tuple[int, ...]:
  ret = tuple(int(s) for s in x) if x is not None else ()
  if len(ret) > 3: raise ValueError(f"at most 3 launch dimensions, got {x}")
  return ret + (1,)*(3-len(ret))

# ***** renderer, compiler, allocator, device *****

class PythonRenderer(Renderer):
  """emulate (or env EMULATE) = CUDA, AMD (RDNA3), AMD_MFMA (CDNA), METAL or INTEL: take that family's tensor cores, workgroup limits, dtypes
  and vector widths, to run their kernels here."""
  device = "PYTHON"
  supports_prefetch = True
  has_local = True
  has_shared = True
  supports_float4 = True
  global_max: tuple[int, ...]|None = (2**31-1,)*3
  local_max: tuple[int, ...]|None = (1024, 1024, 1024)
  shared_max = 1 << 20
  code_for_op = {op: (lambda *a, dtype: "") for op in python_alu}
  def __init__(self, emulate:str|None=None):
    self.emulate = (getenv("EMULATE", "") if emulate is None else emulate).upper()
    if self.emulate:
      from tinygrad.renderer.cstyle import CUDARenderer, AMDRenderer, MetalRenderer, IntelRenderer
      from tinygrad.renderer.llvmir import AMDLLVMRenderer
      families: dict[str, type[Renderer]|Renderer] = {"CUDA": CUDARenderer, "AMD": AMDRenderer, "AMD_MFMA": AMDLLVMRenderer("gfx90a"),
                                                      "METAL": MetalRenderer, "INTEL": IntelRenderer}
      if (fam := families.get(self.emulate)) is None: raise ValueError(f"EMULATE={self.emulate}: the PYTHON device emulates {sorted(families)}")
      self.tensor_cores, self.global_max, self.local_max, self.shared_max = fam.tensor_cores, fam.global_max, fam.local_max, fam.shared_max
      self.dtypes_supported = fam.dtypes_supported   # METAL has no float64
      self.vector_alu_lanes, self.vector_alu_ops, self.vector_alu_dtypes = fam.vector_alu_lanes, fam.vector_alu_ops, fam.vector_alu_dtypes
  def __reduce__(self): return self.__class__, (self.emulate,)
  def __repr__(self): return f"PythonRenderer({self.emulate!r})" if self.emulate else "PythonRenderer()"
  def render(self, name:str, uops:list[UOp]) -> str:
    uops = with_sources(uops)
    pos = {u: i for i, u in enumerate(uops)}
    try: items = [(u.op, u.dtype, [pos[s] for s in u.src], u.arg) for u in uops]
    except KeyError as e: raise ValueError(f"a source is missing from the program: {e.args[0].op}") from None
    return base64.b64encode(pickle.dumps(items)).decode()

class PythonCompiler(Compiler):
  def compile(self, src:str) -> bytes: return base64.b64decode(src)

class PythonAllocator(Allocator[memoryview]):
  """Host memory: a memoryview of a bytearray."""
  def _alloc(self, size:int, options:BufferSpec) -> memoryview:
    # external_ptr: host memory someone else owns (Tensor.from_blob), used in place
    if options.external_ptr is not None: return memoryview((ctypes.c_uint8 * size).from_address(options.external_ptr)).cast("B")
    return memoryview(bytearray(size))
  def _as_buffer(self, src:memoryview) -> memoryview: return src
  def _copyin(self, dest:memoryview, src:memoryview) -> None: dest[:] = flat_mv(src)
  def _copyout(self, dest:memoryview, src:memoryview) -> None: dest[:] = src
  def _offset(self, buf:memoryview, size:int, offset:int) -> memoryview: return buf[offset:offset+size]

class PythonDevice(Compiled):
  def __init__(self, device:str): super().__init__(device, PythonAllocator(), PythonRenderer(), PythonCompiler(), PythonProgram)
