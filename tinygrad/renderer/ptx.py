"""PTX for NVIDIA GPUs, from the linear uops: every value is one untyped register per lane (.b16/.b32/.b64, .pred for bools), so vectors are
lists of registers and the instruction carries the type. half and bfloat16 are computed in f32 and rounded after every op (like the LLVM
renderer); 8-bit ints live in 16-bit registers. ptxas (runtime/support/compiler_cuda.py) assembles it for the arch in `.target`."""
from __future__ import annotations
import math, struct
from typing import cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, ThreadKind
from tinygrad.dtype import DType, DTYPES_DICT, PtrDType, dtypes, truncate
from tinygrad.renderer import Renderer
from tinygrad.renderer.cstyle import with_sources, index_of, buffer_of, mem_gate, load_alt, _nonzero_const, _EXACT_OPS, _BOOL_OPS
from tinygrad.renderer.tc import cuda_tcs

_HALF = (dtypes.float16, dtypes.bfloat16, *dtypes.fp8s)   # narrow floats: 16 or 8 bits in memory, f32 in registers
def rtype(dt:DType) -> str:
  """The instruction type of a value of dt in a register."""
  s = dt.scalar()
  if s == dtypes.bool: return "pred"
  if s in _HALF or s == dtypes.float32: return "f32"
  if s == dtypes.float64: return "f64"
  return f"{'u' if dtypes.is_unsigned(s) else 's'}{max(16, s.itemsize*8)}"
def mtype(dt:DType) -> str:
  """The type of an element in memory."""
  s = dt.scalar()
  if s == dtypes.bool or s in dtypes.fp8s: return "u8"
  return "b16" if s in _HALF else f"{'u' if dtypes.is_unsigned(s) else 's'}8" if s.itemsize == 1 else rtype(s)
def bits(dt:DType) -> str: return "pred" if (t := rtype(dt)) == "pred" else f"b{t[1:]}"

def pconst(x, dt:DType) -> str:
  s = dt.scalar()
  if s == dtypes.bool: return "1" if x else "0"
  if dtypes.is_float(s):
    v = truncate[s](float(x))
    if s == dtypes.float64: return "0d%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", v if not math.isnan(v) else math.nan))[0]
  return str(int(x) & ((1 << (s.itemsize*8)) - 1) if dtypes.is_unsigned(s) else int(x))

class PTXCtx:
  def __init__(self, fp8_cvt:bool=False) -> None:
    self.fp8_cvt = fp8_cvt   # sm_89+: cvt converts between f32/f16 and fp8 in hardware
    self.r: dict[UOp, list[str]] = {}
    self.lines: list[str] = []
    self.counts: dict[str, int] = {}
    self.loops: dict[UOp, int] = {}   # RANGE -> its label number
    self.n = 0
  def reg(self, dt:DType) -> str:
    kind = bits(dt)
    self.counts[kind] = (n := self.counts.get(kind, 0)) + 1
    return f"%{ {'pred': 'p', 'b16': 'h', 'b32': 'r', 'b64': 'rd'}[kind]}{n}"
  def emit(self, dt:DType, ins:str, *args:str) -> str:
    self.lines.append(f"  {ins} {', '.join([d := self.reg(dt), *args])};")
    return d
  def label(self) -> int:
    self.n += 1
    return self.n

def round_half(ctx:PTXCtx, v:str, dt:DType) -> str:
  """An f32 rounded to half, bfloat16 or fp8 (nearest even), kept as an f32."""
  return from_half_bits(ctx, to_bits(ctx, v, dt.scalar()), dt)
def from_half_bits(ctx:PTXCtx, h:str, dt:DType) -> str:
  """The f32 of the bits of a narrow float (in the low bits of a 16-bit register)."""
  u32 = lambda ins, *a: ctx.emit(dtypes.uint32, ins, *a)  # noqa: E731
  if (dt := dt.scalar()) == dtypes.float16: return ctx.emit(dtypes.float32, "cvt.f32.f16", h)
  if dt == dtypes.fp8e5m2: return ctx.emit(dtypes.float32, "cvt.f32.f16", ctx.emit(dtypes.uint16, "shl.b16", h, "8"))   # the top byte of a half
  if dt == dtypes.bfloat16: return u32("shl.b32", u32("cvt.u32.u16", h), "16")   # bfloat16 is the top half of an f32
  if ctx.fp8_cvt:
    lo, hi = ctx.reg(dtypes.uint16), ctx.reg(dtypes.uint16)
    ctx.lines.append(f"  mov.b32 {{{lo}, {hi}}}, {u32('cvt.rn.f16x2.e4m3x2', h)};")
    return ctx.emit(dtypes.float32, "cvt.f32.f16", lo)
  # e4m3fn: its exponent and mantissa placed in an f32's, scaled by 2**(127-7) (this makes its subnormals too); 0x7f is nan
  x = u32("cvt.u32.u16", h)
  f = ctx.emit(dtypes.float32, "mul.rn.f32", u32("shl.b32", (m := u32("and.b32", x, "0x7f")), "20"), "0f7B800000")
  f = u32("selp.b32", "0f7FC00000", f, ctx.emit(dtypes.bool, "setp.eq.u32", m, "0x7f"))
  return u32("or.b32", f, u32("shl.b32", u32("and.b32", x, "0x80"), "24"))

# fp8 as torch has them: (mantissa bits, exponent bias to f32's, f32 bits of its smallest normal, 2**(its subnormals' exponent), largest code)
_FP8 = {dtypes.fp8e4m3: (3, 120, 0x3c800000, "0f44000000", 0x7e), dtypes.fp8e5m2: (2, 112, 0x38800000, "0f47800000", 0x7c)}
def to_fp8(ctx:PTXCtx, v:str, dt:DType) -> str:
  """f32 -> fp8 bits, nearest even: e4m3fn saturates to 448 (inf too), e5m2 overflows to inf; nan -> 0x7f with the sign."""
  u32 = lambda ins, *a: ctx.emit(dtypes.uint32, ins, *a)  # noqa: E731
  if ctx.fp8_cvt:
    d = ctx.emit(dtypes.uint16, f"cvt.rn.satfinite.{'e4m3' if dt == dtypes.fp8e4m3 else 'e5m2'}x2.f32", v, v)
    if dt == dtypes.fp8e4m3: return d
    # satfinite stops e5m2 at 57344: from halfway to the next power of two up (61440) it is inf
    big = ctx.emit(dtypes.bool, "setp.ge.f32", ctx.emit(dtypes.float32, "abs.f32", v), "0f47700000")
    return ctx.emit(dtypes.uint16, "selp.b16", ctx.emit(dtypes.uint16, "or.b16", ctx.emit(dtypes.uint16, "and.b16", d, "0x80"), "0x7c"), d, big)
  mbits, bias, small, scale, top = _FP8[dt]
  a, shift = u32("and.b32", v, "0x7fffffff"), 23 - mbits
  # round to nearest even in the integer bits: add half an ulp less one, plus the kept lowest bit; a carry moves the exponent
  r = u32("shr.u32", u32("add.u32", a, u32("add.u32", u32("and.b32", u32("shr.u32", a, str(shift)), "1"), str((1 << (shift-1)) - 1))), str(shift))
  r = u32("min.u32", u32("sub.u32", r, str(bias << mbits)), str(top))
  # below the smallest normal: a multiple of the subnormal step
  sub = u32("cvt.rni.u32.f32", ctx.emit(dtypes.float32, "mul.rn.f32", a, scale))
  r = u32("selp.b32", sub, r, ctx.emit(dtypes.bool, "setp.lt.u32", a, str(small)))
  r = u32("selp.b32", "0x7f", r, ctx.emit(dtypes.bool, "setp.gt.u32", a, "0x7f800000"))
  return ctx.emit(dtypes.uint16, "cvt.u16.u32", u32("or.b32", r, u32("and.b32", u32("shr.u32", v, "24"), "0x80")))

def _alu(ctx:PTXCtx, x:UOp, op:Ops, sdt:DType, a:list[str]) -> str:
  t, s = rtype(sdt), sdt.scalar()
  isf, dt = dtypes.is_float(s), x.dtype.scalar()
  if op is Ops.WHERE:
    if t != "pred": return ctx.emit(dt, f"selp.{bits(sdt)}", a[1], a[2], a[0])
    return ctx.emit(dt, "or.pred", ctx.emit(dt, "and.pred", a[0], a[1]), ctx.emit(dt, "and.pred", ctx.emit(dt, "not.pred", a[0]), a[2]))
  if t == "pred":   # bools: comparisons become logic
    if op is Ops.CMPNE: return ctx.emit(dt, "xor.pred", *a)
    if op is Ops.CMPEQ: return ctx.emit(dt, "not.pred", ctx.emit(dt, "xor.pred", *a))
    if op is Ops.CMPLT: return ctx.emit(dt, "and.pred", ctx.emit(dt, "not.pred", a[0]), a[1])
    if op is Ops.NEG: return ctx.emit(dt, "not.pred", a[0])
    return ctx.emit(dt, f"{op.name.lower()}.pred", *a)
  if op is Ops.MAX: return ctx.emit(dt, f"selp.{bits(sdt)}", a[1], a[0], ctx.emit(dtypes.bool, f"setp.gt.{t}", a[1], a[0]))
  if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
    return ctx.emit(dtypes.bool, f"setp.{ {Ops.CMPLT: 'lt', Ops.CMPNE: 'neu' if isf else 'ne', Ops.CMPEQ: 'eq'}[op]}.{t}", *a)
  if op in (Ops.IDIV, Ops.MOD) and isf:   # float remainder: a - b*trunc(a/b)
    q = ctx.emit(s, f"cvt.rzi.{t}.{t}", ctx.emit(s, f"div.rn.{t}", *a))
    return ctx.emit(s, f"sub.rn.{t}", a[0], ctx.emit(s, f"mul.rn.{t}", a[1], q))
  if op in (Ops.IDIV, Ops.MOD):
    # division by 0 gives 0, as on CPU and PYTHON: divide by 1 there, then pick 0
    ins = f"{'div' if op is Ops.IDIV else 'rem'}.{t}"
    if _nonzero_const(x.src[1]): return ctx.emit(s, ins, *a)
    z = ctx.emit(dtypes.bool, f"setp.eq.{t}", a[1], "0")
    return ctx.emit(s, f"selp.{bits(s)}", "0", ctx.emit(s, ins, a[0], ctx.emit(s, f"selp.{bits(s)}", "1", a[1], z)), z)
  if op in (Ops.SHL, Ops.SHR):
    amt = a[1] if t[1:] == "32" else ctx.emit(dtypes.uint32, f"cvt.u32.{rtype(x.src[1].dtype)}", a[1])
    return ctx.emit(s, f"shl.b{t[1:]}" if op is Ops.SHL else f"shr.{t}", a[0], amt)
  if op is Ops.NEG: return ctx.emit(s, f"neg.{t}", a[0]) if t[0] != "u" else ctx.emit(s, f"sub.{t}", "0", a[0])
  ins = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.FDIV: "div.rn", Ops.RECIP: "rcp.rn", Ops.SQRT: "sqrt.rn", Ops.TRUNC: "cvt.rzi",
         Ops.MULACC: "fma.rn", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor"}[op]
  if op in (Ops.AND, Ops.OR, Ops.XOR): return ctx.emit(s, f"{ins}.{bits(s)}", *a)
  if op is Ops.TRUNC: return ctx.emit(s, f"cvt.rzi.{t}.{t}", *a)
  if isf: return ctx.emit(s, f"{ins}.rn.{t}" if op in (Ops.ADD, Ops.SUB, Ops.MUL) else f"{ins}.{t}", *a)
  return ctx.emit(s, {Ops.MUL: "mul.lo", Ops.MULACC: "mad.lo"}.get(op, ins) + f".{t}", *a)

def render_alu(ctx:PTXCtx, x:UOp) -> list[str]:
  sdt = x.src[-1].dtype if x.op is Ops.WHERE else x.src[0].dtype
  op = _BOOL_OPS.get(x.op, x.op) if sdt.scalar() == dtypes.bool else x.op
  out = []
  for i in range(x.dtype.count):
    v = _alu(ctx, x, op, sdt, [ctx.r[s][i if len(ctx.r[s]) > 1 else 0] for s in x.src])
    out.append(round_half(ctx, v, x.dtype) if x.dtype.scalar() in _HALF and x.op not in _EXACT_OPS else v)
  return out

def _cvt(ctx:PTXCtx, v:str, f:DType, t:DType) -> str:
  ft, tt = rtype(f), rtype(t)
  if f == t: return v
  if t == dtypes.bool: return ctx.emit(t, f"setp.{'neu' if dtypes.is_float(f) else 'ne'}.{ft}", v, pconst(0, f))
  if f == dtypes.bool: return ctx.emit(t, f"selp.{bits(t)}", pconst(1, t), pconst(0, t), v)
  if t.itemsize == 1 and dtypes.is_int(t):   # to an 8-bit int: wraps, sign/zero-extended into its 16-bit register
    if dtypes.is_float(f): v, ft = _cvt(ctx, v, f, dtypes.int32), "s32"
    return ctx.emit(t, f"cvt.{'u' if dtypes.is_unsigned(t) else 's'}8.{ft}", v)
  if ft == tt: ret = ctx.emit(t, f"mov.{bits(t)}", v)
  elif dtypes.is_float(f) and dtypes.is_float(t): ret = ctx.emit(t, f"cvt{'.rn' if t.itemsize < f.itemsize else ''}.{tt}.{ft}", v)
  elif dtypes.is_float(f): ret = ctx.emit(t, f"cvt.rzi.{tt}.{ft}", v)
  elif dtypes.is_float(t): ret = ctx.emit(t, f"cvt.rn.{tt}.{ft}", v)
  else: ret = ctx.emit(t, f"cvt.{tt}.{ft}", v)
  return round_half(ctx, ret, t) if t in _HALF and f != t else ret

def render_cast(ctx:PTXCtx, x:UOp) -> list[str]:
  if isinstance(x.dtype, PtrDType): return ctx.r[x.src[0]]
  return [_cvt(ctx, v, x.src[0].dtype.scalar(), x.dtype.scalar()) for v in ctx.r[x.src[0]]]

def to_bits(ctx:PTXCtx, v:str, dt:DType) -> str:
  """A register's value as the bits it has in memory (half/bfloat16: 16 bits, bool: 0/1)."""
  if dt in dtypes.fp8s: return to_fp8(ctx, v, dt)
  if dt in _HALF: return ctx.emit(dtypes.uint16, f"cvt.rn.{'f16' if dt == dtypes.float16 else 'bf16'}.f32", v)
  return ctx.emit(dtypes.uint16, "selp.b16", "1", "0", v) if dt == dtypes.bool else v

def render_bitcast(ctx:PTXCtx, x:UOp) -> list[str]:
  f, t = x.src[0].dtype.scalar(), x.dtype.scalar()
  out = []
  for v in ctx.r[x.src[0]]:
    b = to_bits(ctx, v, f)
    if t in _HALF: out.append(from_half_bits(ctx, b, t))
    elif t.itemsize == 1: out.append(ctx.emit(t, f"cvt.{mtype(t)}.u16", b))
    else: out.append(ctx.emit(t, f"mov.{bits(t)}", b))
  return out

def _addr(ctx:PTXCtx, x:UOp) -> tuple[str, str]:
  idx = index_of(x.src[0])
  buf = buffer_of(idx)
  return ctx.r[idx][0], "shared" if cast(PtrDType, buf.dtype).local else "global"

def vector_access(ctx:PTXCtx, x:UOp, dt:DType, n:int, addr:str) -> str|None:
  """ld/st .v2/.v4 need the vector's alignment: where the element index is a multiple of the lanes (so the buffer's alignment decides, which a
  sub-buffer's offset may break), the predicate that the address is aligned; the scalar accesses run where it isn't. None: no vector access."""
  if n not in (2, 4) or dt.itemsize not in (4, 8) or n * dt.itemsize > 16 or mem_gate(x) is not None or index_of(x.src[0]).src[1].divides(n) is None:
    return None
  return ctx.emit(dtypes.bool, "setp.eq.b64", ctx.emit(dtypes.uint64, "and.b64", addr, str(n * dt.itemsize - 1)), "0")

def render_load(ctx:PTXCtx, x:UOp) -> list[str]:
  addr, space = _addr(ctx, x)
  gate, alt = mem_gate(x), load_alt(x)
  dt, out = x.dtype.scalar(), []
  if (ok := vector_access(ctx, x, dt, x.dtype.count, addr)) is not None:
    out = [ctx.reg(dt) for _ in range(x.dtype.count)]
    ctx.lines.append(f"  @{ok} ld.{space}.v{len(out)}.{mtype(dt)} {{{', '.join(out)}}}, [{addr}];")
    ctx.lines += [f"  @!{ok} ld.{space}.{mtype(dt)} {v}, [{addr}+{i*dt.itemsize}];" for i, v in enumerate(out)]
    return out
  for i in range(x.dtype.count):
    if dt in _HALF or dt == dtypes.bool:
      raw = ctx.reg(dtypes.uint16)
      if gate is not None: ctx.lines.append(f"  mov.b16 {raw}, 0;")
      ctx.lines.append(f"  {'@'+ctx.r[gate][0]+' ' if gate is not None else ''}ld.{space}.{mtype(dt)} {raw}, [{addr}+{i*dt.itemsize}];")
      v = from_half_bits(ctx, raw, dt) if dt in _HALF else ctx.emit(dt, "setp.ne.u16", raw, "0")
    else:
      v = ctx.reg(dt)
      if gate is not None: ctx.lines.append(f"  mov.{bits(dt)} {v}, {pconst(0, dt)};")
      ctx.lines.append(f"  {'@'+ctx.r[gate][0]+' ' if gate is not None else ''}ld.{space}.{mtype(dt)} {v}, [{addr}+{i*dt.itemsize}];")
    # a gated load with an alternative value: pick it where the gate is off
    if gate is not None and alt is not None: v = ctx.emit(dt, f"selp.{bits(dt)}", v, ctx.r[alt][i if len(ctx.r[alt]) > 1 else 0], ctx.r[gate][0]) \
      if dt != dtypes.bool else _alu(ctx, x, Ops.WHERE, dt, [ctx.r[gate][0], v, ctx.r[alt][i if len(ctx.r[alt]) > 1 else 0]])
    out.append(v)
  return out

def render_store(ctx:PTXCtx, x:UOp) -> list[str]:
  addr, space = _addr(ctx, x)
  gate, val = mem_gate(x), x.src[1]
  dt = val.dtype.scalar()
  if (ok := vector_access(ctx, x, dt, len(ctx.r[val]), addr)) is not None:
    ctx.lines.append(f"  @{ok} st.{space}.v{len(ctx.r[val])}.{mtype(dt)} [{addr}], {{{', '.join(ctx.r[val])}}};")
    ok = "!" + ok
  for i, v in enumerate(ctx.r[val]):
    pred = f"@{ok} " if ok is not None else f"@{ctx.r[gate][0]} " if gate is not None else ""
    ctx.lines.append(f"  {pred}st.{space}.{mtype(dt)} [{addr}+{i*dt.itemsize}], {to_bits(ctx, v, dt)};")
  return []

def render_index(ctx:PTXCtx, x:UOp) -> list[str]:
  base, i = ctx.r[x.src[0]][0], ctx.r[x.src[1]][0]
  size = cast(PtrDType, buffer_of(x).dtype).base.scalar().itemsize
  if rtype(x.src[1].dtype)[1:] == "64": return [ctx.emit(dtypes.uint64, "mad.lo.s64", i, str(size), base)]
  return [ctx.emit(dtypes.uint64, "add.s64", base, ctx.emit(dtypes.uint64, f"mul.wide.{rtype(x.src[1].dtype)}", i, str(size)))]

def render_range(ctx:PTXCtx, x:UOp) -> list[str]:
  n, t = ctx.label(), rtype(x.dtype)
  i = ctx.emit(x.dtype, f"mov.{bits(x.dtype)}", "0")
  ctx.lines.append(f"LOOP_{n}:")   # the exit test is inside the loop, after the label (emit appends its line as it is called)
  ctx.lines.append(f"  @{ctx.emit(dtypes.bool, f'setp.ge.{t}', i, ctx.r[x.src[0]][0])} bra EXIT_{n};")
  ctx.loops[x] = n
  return [i]

def render_endrange(ctx:PTXCtx, x:UOp) -> list[str]:
  i, n = ctx.r[x.src[0]][0], ctx.loops[x.src[0]]
  ctx.lines += [f"  add.{rtype(x.src[0].dtype)} {i}, {i}, 1;", f"  bra LOOP_{n};", f"EXIT_{n}:"]
  return []

def render_if(ctx:PTXCtx, x:UOp) -> list[str]:
  ctx.lines.append(f"  @!{ctx.r[x.src[0]][0]} bra ENDIF_{(n := ctx.label())};")
  return [str(n)]

def render_assign(ctx:PTXCtx, x:UOp) -> list[str]:
  # accumulators are registers that are written again: the value moves into the DEFINE_ACC's registers
  for d, v in zip(ctx.r[x.src[0]], ctx.r[x.src[1]]): ctx.lines.append(f"  mov.{bits(x.dtype)} {d}, {v};")
  return ctx.r[x.src[0]]

def render_const(ctx:PTXCtx, x:UOp) -> list[str]:
  vals = x.arg if isinstance(x.arg, tuple) else (x.arg,) * x.dtype.count
  return [ctx.emit(x.dtype, f"mov.{bits(x.dtype)}", pconst(v, x.dtype)) for v in vals]

def render_special(ctx:PTXCtx, x:UOp) -> list[str]:
  if x.arg.kind not in (ThreadKind.GLOBAL, ThreadKind.LOCAL): raise NotImplementedError(f"PTXRenderer has no thread index {x.arg[0]}")
  return [ctx.emit(dtypes.int32, "mov.u32", f"%{'ctaid' if x.arg.kind is ThreadKind.GLOBAL else 'tid'}.{'xyz'[x.arg.dim]}")]

def render_local(ctx:PTXCtx, x:UOp) -> list[str]:
  dt = cast(PtrDType, x.dtype)
  ctx.lines.insert(0, f"  .shared .align 16 .b8 smem{(n := ctx.label())}[{dt.size*dt.base.itemsize}];")
  return [ctx.emit(dtypes.uint64, "mov.u64", f"smem{n}")]

def render_wmma(ctx:PTXCtx, x:UOp) -> list[str]:
  # mma.sync: A and B travel as .b32 registers of two 16-bit elements (the lower one first), C and D as f32 registers
  (n, m, k), di, do = x.arg[1], x.arg[2], x.arg[3]
  def packed(u:UOp) -> list[str]:
    h = [to_bits(ctx, v, di) for v in ctx.r[u]]
    return [ctx.emit(dtypes.uint32, "mov.b32", f"{{{h[j]}, {h[j+1]}}}") for j in range(0, len(h), 2)]
  a, b, c = packed(x.src[0]), packed(x.src[1]), ctx.r[x.src[2]]
  if len(c) != x.dtype.count: c = c * x.dtype.count
  d = [ctx.reg(do) for _ in range(x.dtype.count)]
  tin = "f16" if di == dtypes.float16 else "bf16"
  ctx.lines.append(f"  mma.sync.aligned.m{m}n{n}k{k}.row.col.f32.{tin}.{tin}.f32 {{{', '.join(d)}}}, {{{', '.join(a)}}}, {{{', '.join(b)}}}, "
                   f"{{{', '.join(c)}}};")
  return d

ptx_rewrite = PatternMatcher([
  (UPat((Ops.CONST, Ops.VCONST), name="x"), render_const),
  (UPat(Ops.SPECIAL, name="x"), render_special),
  (UPat(Ops.RANGE, name="x"), render_range),
  (UPat(Ops.ENDRANGE, name="x"), render_endrange),
  (UPat(Ops.IF, name="x"), render_if),
  (UPat(Ops.ENDIF, name="x"), lambda ctx, x: ctx.lines.append(f"ENDIF_{ctx.r[x.src[0]][0]}:") or []),
  (UPat(Ops.BARRIER), lambda ctx: ctx.lines.append("  bar.sync 0;") or []),
  (UPat(Ops.SINK), lambda ctx: []),
  (UPat(Ops.DEFINE_ACC, name="x"), lambda ctx, x: [ctx.emit(x.dtype, f"mov.{bits(x.dtype)}", v) for v in ctx.r[x.src[0]]]),
  (UPat(Ops.ASSIGN, name="x"), render_assign),
  (UPat(Ops.DEFINE_LOCAL, name="x"), render_local),
  (UPat(Ops.INDEX, name="x"), render_index),
  (UPat(Ops.LOAD, name="x"), render_load),
  (UPat(Ops.STORE, name="x"), render_store),
  (UPat(Ops.CAST, name="x"), render_cast),
  (UPat(Ops.BITCAST, name="x"), render_bitcast),
  (UPat(Ops.VECTORIZE, name="x"), lambda ctx, x: [r for s in x.src for r in ctx.r[s]]),
  (UPat(Ops.GEP, name="x"), lambda ctx, x: [ctx.r[x.src[0]][i] for i in x.arg]),
  (UPat(Ops.NOOP, name="x"), lambda ctx, x: ctx.r[x.src[0]]),
  (UPat(Ops.WMMA, name="x"), render_wmma),
  (UPat(GroupOp.ALU, name="x"), render_alu),
])

class PTXRenderer(Renderer):
  """PTX for arch (e.g. "sm_80"); `.target` is the arch, and PTXCompiler sets it again for the arch it assembles for."""
  device = "CUDA"
  suffix = "PTX"
  global_max = (2**31-1, 65535, 65535)
  local_max = (1024, 1024, 64)
  shared_max = 49152
  dtypes_supported = frozenset(DTYPES_DICT.values())
  vector_alu_lanes = 4   # the expander makes vector loads and stores (ld/st .v4), and vector float math, rendered lane by lane
  # what is written out above; exp2, log2, sin, pow are decomposed into exact polynomials (PTX has only approximate ones)
  code_for_op = {op: lambda *a, dtype: "" for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.CMPLT, Ops.CMPNE,
                 Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.TRUNC, Ops.WHERE, Ops.MULACC)}
  def __init__(self, arch:str="sm_80"):
    self.arch = arch
    sm = int("".join(c for c in arch[3:] if c.isdigit()) or 0)
    self.tensor_cores, self.fp8_cvt = cuda_tcs if sm >= 80 else [], sm >= 89
  def __reduce__(self): return self.__class__, (self.arch,)
  def __repr__(self): return f"PTXRenderer({self.arch!r})"
  def render(self, name:str, uops:list[UOp]) -> str:
    ctx, params = PTXCtx(self.fp8_cvt), []
    uops = with_sources(uops)
    for u in sorted((u for u in uops if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg):
      params.append(f".param .u64 data{u.arg}")
      ctx.r[u] = [ctx.emit(dtypes.uint64, "cvta.to.global.u64", ctx.emit(dtypes.uint64, "ld.param.u64", f"[data{u.arg}]"))]
    for u in sorted((u for u in uops if u.op is Ops.DEFINE_VAR), key=lambda u: u.arg[0]):
      params.append(f".param .{rtype(u.dtype)} var_{u.arg[0]}")
      ctx.r[u] = [ctx.emit(u.dtype, f"ld.param.{rtype(u.dtype)}", f"[var_{u.arg[0]}]")]
    for u in uops:
      if u in ctx.r: continue
      if (ret := ptx_rewrite.rewrite(u, ctx=ctx)) is None: raise NotImplementedError(f"PTXRenderer can't render {u.op}")
      ctx.r.setdefault(u, cast(list[str], ret))
    regs = [f"  .reg .{k} %{ {'pred': 'p', 'b16': 'h', 'b32': 'r', 'b64': 'rd'}[k]}<{n}>;" for k, n in ctx.counts.items()]
    # PTX 8.1: the first with cvt to fp8 on sm_89
    return "\n".join([f".version {'8.1' if self.fp8_cvt else '8.0'}", f".target {self.arch}", ".address_size 64", f".visible .entry {name}(",
                      ",\n".join(f"  {p}" for p in params),
                      ")", "{", *regs, *ctx.lines, "  ret;", "}"]) + "\n"
