"""LLVM IR for the LLVM device: one function over opaque pointers, loops as phi-counted blocks, accumulators as allocas (mem2reg makes them
registers), upcast lanes as IR vectors. half and bfloat16 are stored as i16 and computed in float, rounded after every op, like the C renderer."""
from __future__ import annotations
import math, struct
from typing import Any, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, ThreadKind
from tinygrad.dtype import DType, DTYPES_DICT, PtrDType, dtypes, truncate
from tinygrad.renderer import Renderer
from tinygrad.renderer.tc import TensorCore, amd_tcs, amd_mfma_tcs
from tinygrad.renderer.cstyle import with_sources, index_of, buffer_of, mem_gate, load_alt, _nonzero_const, _EXACT_OPS, _BOOL_OPS

_STORED = (dtypes.float16, dtypes.bfloat16, *dtypes.fp8s)   # i16 (fp8: i8) in memory, float in registers
_INT = {1: "i8", 2: "i16", 4: "i32", 8: "i64"}
_FLOAT = {dtypes.float32: "float", dtypes.float64: "double", **{d: "float" for d in _STORED}}

def ltype(dt:DType, mem:bool=False) -> str:
  """The LLVM type of a value (or of a buffer element with mem=True)."""
  if isinstance(dt, PtrDType): return "ptr"
  s = dt.scalar()
  if s == dtypes.bool: base = "i8" if mem else "i1"
  elif s in _STORED: base = f"i{s.itemsize*8}" if mem else "float"
  elif dtypes.is_float(s): base = _FLOAT[s]
  else: base = _INT[s.itemsize]
  return f"<{dt.count} x {base}>" if dt.count > 1 else base

def lconst(x:Any, dt:DType) -> str:
  """A literal of value type dt: floats in hex (exact, and the only way to write inf and nan), ints as their two's complement."""
  if dt.count > 1:
    return "<" + ", ".join(f"{ltype(dt.scalar())} {lconst(v, dt.scalar())}" for v in (x if isinstance(x, tuple) else [x]*dt.count)) + ">"
  if dt == dtypes.bool: return "true" if x else "false"
  if dtypes.is_float(dt):
    v = truncate[dt](float(x))
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v if not math.isnan(v) else math.nan))[0]
  bits = dt.itemsize*8
  v = int(x) & ((1 << bits) - 1)
  return str(v - (1 << bits) if v >> (bits-1) else v)

class LLVMCtx:
  def __init__(self) -> None:
    self.r: dict[UOp, str] = {}
    self.lines: list[str] = []
    self.allocas: list[str] = []
    self.mutable: set[UOp] = set()     # accumulators: r holds their alloca, every read is a load
    self.intrinsics: set[str] = set()
    self.block, self.n = "entry", 0
    self.gptr = "ptr"                  # the pointer type of a global buffer (AMDGPU: addrspace(1)); locals are addrspace(3)
    self.decls: list[str] = []         # module-level definitions: the kernel's local memory
  def ptr(self, u:UOp) -> str: return "ptr addrspace(3)" if buffer_of(u).op is Ops.DEFINE_LOCAL else self.gptr
  def tmp(self) -> str:
    self.n += 1
    return f"%v{self.n}"
  def emit(self, rhs:str) -> str:
    self.lines.append(f"  {(nm := self.tmp())} = {rhs}")
    return nm
  def label(self, nm:str) -> None:
    self.lines.append(f"{nm}:")
    self.block = nm
  def val(self, u:UOp) -> str:
    if u in self.mutable: return self.emit(f"load {ltype(u.dtype)}, ptr {self.r[u]}")
    return self.r[u]
  def call(self, fn:str, dt:DType, *args:str) -> str:
    t = ltype(dt)
    name = f"llvm.{fn}." + (f"v{dt.count}" if dt.count > 1 else "") + {"float": "f32", "double": "f64"}[ltype(dt.scalar())]
    self.intrinsics.add(f"declare {t} @{name}({', '.join([t]*len(args))})")
    return self.emit(f"call {t} @{name}({', '.join(f'{t} {a}' for a in args)})")

# ***** conversions between memory bits and register values *****

def round_stored(ctx:LLVMCtx, v:str, dt:DType) -> str:
  """A float value rounded to half or bfloat16 (nearest even), still a float: every result of those types goes through here."""
  return from_mem(ctx, to_mem(ctx, v, dt), dt)

def to_mem(ctx:LLVMCtx, v:str, dt:DType) -> str:
  s, n = dt.scalar(), dt.count
  if s == dtypes.bool: return ctx.emit(f"zext {ltype(dt)} {v} to {ltype(dt, True)}")
  if s == dtypes.float16:
    h = ctx.emit(f"fptrunc {ltype(dt)} {v} to {'<%d x half>' % n if n > 1 else 'half'}")
    return ctx.emit(f"bitcast {'<%d x half>' % n if n > 1 else 'half'} {h} to {ltype(dt, True)}")
  if s in _FP8: return fp8_to_mem(ctx, v, dt)
  if s == dtypes.bfloat16:
    i32, bt = ltype(dtypes.uint32.vec(n)), ltype(dtypes.bool.vec(n))
    def u32(c:int) -> str: return lconst(c, dtypes.uint32.vec(n))
    b = ctx.emit(f"bitcast {ltype(dt)} {v} to {i32}")
    # round to nearest even: add 0x7fff and the lowest kept bit; a nan keeps its top bits and is made quiet
    hi = ctx.emit(f"lshr {i32} {b}, {u32(16)}")
    lsb = ctx.emit(f"and {i32} {hi}, {u32(1)}")
    biased = ctx.emit(f"add {i32} {b}, {u32(0x7fff)}")
    rnd = ctx.emit(f"lshr {i32} {ctx.emit(f'add {i32} {biased}, {lsb}')}, {u32(16)}")
    qnan = ctx.emit(f"or {i32} {hi}, {u32(0x40)}")
    isnan = ctx.emit(f"fcmp uno {ltype(dt)} {v}, {v}")
    return ctx.emit(f"trunc {i32} {ctx.emit(f'select {bt} {isnan}, {i32} {qnan}, {i32} {rnd}')} to {ltype(dt, True)}")
  return v

def from_mem(ctx:LLVMCtx, v:str, dt:DType) -> str:
  s, n = dt.scalar(), dt.count
  if s == dtypes.bool: return ctx.emit(f"trunc {ltype(dt, True)} {v} to {ltype(dt)}")
  if s == dtypes.float16:
    h = ctx.emit(f"bitcast {ltype(dt, True)} {v} to {'<%d x half>' % n if n > 1 else 'half'}")
    return ctx.emit(f"fpext {'<%d x half>' % n if n > 1 else 'half'} {h} to {ltype(dt)}")
  if s in _FP8: return fp8_from_mem(ctx, v, dt)
  if s == dtypes.bfloat16:
    i32 = ltype(dtypes.uint32.vec(n))
    wide = ctx.emit(f"zext {ltype(dt, True)} {v} to {i32}")
    return ctx.emit(f"bitcast {i32} {ctx.emit(f'shl {i32} {wide}, {lconst(16, dtypes.uint32.vec(n))}')} to {ltype(dt)}")
  return v

# fp8 as torch has them: (mantissa bits, exponent bias to f32's, f32 bits of its smallest normal, its subnormals' step, largest code)
_FP8 = {dtypes.fp8e4m3: (3, 120, 0x3c800000, 2.0**-9, 0x7e), dtypes.fp8e5m2: (2, 112, 0x38800000, 2.0**-16, 0x7c)}
def fp8_to_mem(ctx:LLVMCtx, v:str, dt:DType) -> str:
  """float -> fp8 bits, nearest even: e4m3fn saturates to 448 (inf too), e5m2 overflows to inf; nan -> 0x7f with the sign."""
  (mbits, bias, small, step, top), n, shift = _FP8[dt.scalar()], dt.count, 23 - _FP8[dt.scalar()][0]
  i32, f32 = ltype(dtypes.uint32.vec(n)), ltype(dtypes.float32.vec(n))
  def c(x:int) -> str: return lconst(x, dtypes.uint32.vec(n))
  def op(ins:str, a:str, b:str) -> str: return ctx.emit(f"{ins} {i32} {a}, {b}")
  def sel(cond:str, a:str, b:str) -> str: return ctx.emit(f"select {ltype(dtypes.bool.vec(n))} {cond}, {i32} {a}, {i32} {b}")
  a = op("and", b := ctx.emit(f"bitcast {f32} {v} to {i32}"), c(0x7fffffff))
  # round to nearest even in the integer bits: add half an ulp less one, plus the kept lowest bit; a carry moves the exponent
  r = op("sub", op("lshr", op("add", op("add", a, c((1 << (shift-1)) - 1)), op("and", op("lshr", a, c(shift)), c(1))), c(shift)), c(bias << mbits))
  r = sel(op("icmp ugt", r, c(top)), c(top), r)
  # below the smallest normal: a multiple of the subnormal step
  scaled = ctx.emit(f"fmul {f32} {ctx.emit(f'bitcast {i32} {a} to {f32}')}, {lconst(1 / step, dtypes.float32.vec(n))}")
  sub = ctx.emit(f"fptoui {f32} {ctx.call('rint', dtypes.float32.vec(n), scaled)} to {i32}")
  r = sel(op("icmp ugt", a, c(0x7f800000)), c(0x7f), sel(op("icmp ult", a, c(small)), sub, r))
  return ctx.emit(f"trunc {i32} {op('or', r, op('and', op('lshr', b, c(24)), c(0x80)))} to {ltype(dt, True)}")

def fp8_from_mem(ctx:LLVMCtx, v:str, dt:DType) -> str:
  n, s = dt.count, dt.scalar()
  i32, f32, h = ltype(dtypes.uint32.vec(n)), ltype(dtypes.float32.vec(n)), f"<{n} x half>" if n > 1 else "half"
  if s == dtypes.fp8e5m2:   # the top byte of a half
    wide = ctx.emit(f"shl {ltype(dtypes.uint16.vec(n))} {ctx.emit(f'zext {ltype(dt, True)} {v} to {ltype(dtypes.uint16.vec(n))}')}, "
                    f"{lconst(8, dtypes.uint16.vec(n))}")
    return ctx.emit(f"fpext {h} {ctx.emit(f'bitcast {ltype(dtypes.uint16.vec(n))} {wide} to {h}')} to {f32}")
  def c(x:int) -> str: return lconst(x, dtypes.uint32.vec(n))
  def op(ins:str, a:str, b:str) -> str: return ctx.emit(f"{ins} {i32} {a}, {b}")
  def sel(cond:str, a:str, b:str, t:str) -> str: return ctx.emit(f"select {ltype(dtypes.bool.vec(n))} {cond}, {t} {a}, {t} {b}")
  # e4m3fn: its exponent and mantissa placed in an f32's (rebiased), its subnormals the mantissa times 2**-9; 0x7f is nan
  m = op("and", x := ctx.emit(f"zext {ltype(dt, True)} {v} to {i32}"), c(0x7f))
  normal = ctx.emit(f"bitcast {i32} {op('add', op('shl', m, c(20)), c(120 << 23))} to {f32}")
  mant = ctx.emit(f"uitofp {i32} {op('and', m, c(7))} to {f32}")
  sub = ctx.emit(f"fmul {f32} {mant}, {lconst(2.0**-9, dtypes.float32.vec(n))}")
  f = sel(op("icmp eq", m, c(0x7f)), lconst(math.nan, dtypes.float32.vec(n)), sel(op("icmp ult", m, c(8)), sub, normal, f32), f32)
  return sel(op("icmp ne", op("and", x, c(0x80)), c(0)), ctx.emit(f"fneg {f32} {f}"), f, f32)

# ***** one uop -> IR lines (appended to ctx), returning its value's name or literal *****

def _guarded(ctx:LLVMCtx, x:UOp, op:str, a:str, b:str) -> str:
  # int / and % by 0 give 0 (as on CPU and PYTHON) instead of LLVM's undefined behaviour: divide by 1 there, then pick 0
  t = ltype(x.dtype)
  if _nonzero_const(x.src[1]): return ctx.emit(f"{op} {t} {a}, {b}")
  z = ctx.emit(f"icmp eq {t} {b}, {lconst(0, x.dtype)}")
  q = ctx.emit(f"{op} {t} {a}, {ctx.emit(f'select {ltype(dtypes.bool.vec(x.dtype.count))} {z}, {t} {lconst(1, x.dtype)}, {t} {b}')}")
  return ctx.emit(f"select {ltype(dtypes.bool.vec(x.dtype.count))} {z}, {t} {lconst(0, x.dtype)}, {t} {q}")

def render_alu(ctx:LLVMCtx, x:UOp) -> str:
  sdt = x.src[-1].dtype if x.op is Ops.WHERE else x.src[0].dtype   # the operands' dtype (comparisons give bools)
  s, t, ops = sdt.scalar(), ltype(sdt), [ctx.val(v) for v in x.src]
  op = _BOOL_OPS.get(x.op, x.op) if s == dtypes.bool else x.op
  isf, uns = dtypes.is_float(s), dtypes.is_unsigned(s) or s == dtypes.bool
  a, b = ops[0], ops[-1]
  if op is Ops.WHERE: ret = ctx.emit(f"select {ltype(x.src[0].dtype)} {ops[0]}, {t} {ops[1]}, {t} {ops[2]}")
  elif op is Ops.MAX:
    gt = ctx.emit(f"fcmp ogt {t} {b}, {a}" if isf else f"icmp {'u' if uns else 's'}gt {t} {b}, {a}")
    ret = ctx.emit(f"select {ltype(dtypes.bool.vec(sdt.count))} {gt}, {t} {b}, {t} {a}")
  elif op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
    cmp = {Ops.CMPLT: "olt", Ops.CMPNE: "une", Ops.CMPEQ: "oeq"}[op] if isf else {Ops.CMPLT: "ult" if uns else "slt", Ops.CMPNE: "ne",
                                                                                    Ops.CMPEQ: "eq"}[op]
    ret = ctx.emit(f"{'f' if isf else 'i'}cmp {cmp} {t} {a}, {b}")
  elif op is Ops.NEG:
    ret = ctx.emit(f"fneg {t} {a}" if isf else f"xor {t} {a}, {lconst(True, sdt)}" if s == dtypes.bool else f"sub {t} {lconst(0, sdt)}, {a}")
  elif op is Ops.RECIP: ret = ctx.emit(f"fdiv {t} {lconst(1.0, sdt)}, {a}")
  elif op in (Ops.SQRT, Ops.TRUNC): ret = ctx.call(op.name.lower(), sdt, a)
  elif op is Ops.MULACC: ret = ctx.call("fmuladd", sdt, *ops) if isf else ctx.emit(f"add {t} {ctx.emit(f'mul {t} {ops[0]}, {ops[1]}')}, {ops[2]}")
  elif op in (Ops.IDIV, Ops.MOD) and not isf: ret = _guarded(ctx, x, ("u" if uns else "s") + ("div" if op is Ops.IDIV else "rem"), a, b)
  else:
    name = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.FDIV: "div", Ops.MOD: "rem", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor",
            Ops.SHL: "shl", Ops.SHR: "lshr" if uns else "ashr"}[op]
    ret = ctx.emit(f"{'f' if isf else ''}{name} {t} {a}, {b}")
  return round_stored(ctx, ret, x.dtype) if x.dtype.scalar() in _STORED and x.op not in _EXACT_OPS else ret

def render_cast(ctx:LLVMCtx, x:UOp) -> str:
  if isinstance(x.dtype, PtrDType): return ctx.val(x.src[0])   # pointers are opaque
  fd, td, v = x.src[0].dtype, x.dtype, ctx.val(x.src[0])
  f, t, ft, tt = fd.scalar(), td.scalar(), ltype(fd), ltype(td)
  if ft == tt: ret = v
  elif t == dtypes.bool: ret = ctx.emit(f"fcmp une {ft} {v}, {lconst(0.0, fd)}" if dtypes.is_float(f) else f"icmp ne {ft} {v}, {lconst(0, fd)}")
  elif dtypes.is_float(f) and dtypes.is_float(t): ret = ctx.emit(f"{'fpext' if t.itemsize > f.itemsize else 'fptrunc'} {ft} {v} to {tt}")
  elif dtypes.is_float(f): ret = ctx.emit(f"fpto{'u' if dtypes.is_unsigned(t) else 's'}i {ft} {v} to {tt}")
  elif dtypes.is_float(t): ret = ctx.emit(f"{'u' if dtypes.is_unsigned(f) or f == dtypes.bool else 's'}itofp {ft} {v} to {tt}")
  elif f == dtypes.bool or t.itemsize > f.itemsize: ret = ctx.emit(f"{'z' if dtypes.is_unsigned(f) or f == dtypes.bool else 's'}ext {ft} {v} to {tt}")
  else: ret = ctx.emit(f"trunc {ft} {v} to {tt}")
  return round_stored(ctx, ret, td) if t in _STORED and f != t else ret

def render_bitcast(ctx:LLVMCtx, x:UOp) -> str:
  # through the memory representation: half and bfloat16 are their 16 bits there
  fd, td = x.src[0].dtype, x.dtype
  bits = to_mem(ctx, ctx.val(x.src[0]), fd)
  if ltype(fd, True) != ltype(td, True): bits = ctx.emit(f"bitcast {ltype(fd, True)} {bits} to {ltype(td, True)}")
  return from_mem(ctx, bits, td)

def _gated(ctx:LLVMCtx, gate:UOp|None, body, alt:str|None=None, t:str="") -> str:
  """body() in a block that runs only where gate is true; a value it returns meets alt in a phi after it."""
  if gate is None: return body()
  ctx.n += 1
  n, g = ctx.n, ctx.val(gate)
  if gate.dtype.count != 1: raise NotImplementedError("LLVM renderer: a gate per lane")
  pre = ctx.block
  ctx.lines.append(f"  br i1 {g}, label %gated{n}, label %gend{n}")
  ctx.label(f"gated{n}")
  ret = body()
  inner = ctx.block
  ctx.lines.append(f"  br label %gend{n}")
  ctx.label(f"gend{n}")
  return ctx.emit(f"phi {t} [{ret}, %{inner}], [{alt}, %{pre}]") if alt is not None else ""

def render_load(ctx:LLVMCtx, x:UOp) -> str:
  idx = index_of(x.src[0])
  elem = cast(PtrDType, buffer_of(idx).dtype).base.scalar()
  dt = elem.vec(x.dtype.count)
  def body() -> str: return from_mem(ctx, ctx.emit(f"load {ltype(dt, True)}, {ctx.ptr(idx)} {ctx.r[idx]}, align {elem.itemsize}"), dt)
  alt = ctx.val(a) if (a := load_alt(x)) is not None else lconst(0, x.dtype)
  return _gated(ctx, mem_gate(x), body, alt, ltype(x.dtype))

def render_store(ctx:LLVMCtx, x:UOp) -> str:
  idx, val = index_of(x.src[0]), x.src[1]
  elem = cast(PtrDType, buffer_of(idx).dtype).base.scalar()
  dt = elem.vec(val.dtype.count)
  def body() -> str:
    ctx.lines.append(f"  store {ltype(dt, True)} {to_mem(ctx, ctx.val(val), dt)}, {ctx.ptr(idx)} {ctx.r[idx]}, align {elem.itemsize}")
    return ""
  return _gated(ctx, mem_gate(x), body)

def render_prefetch(ctx:LLVMCtx, x:UOp) -> str:
  # a read (0) into the data cache (1) that fills caches from level x.arg out (locality 3 is L1, 2 L2, 1 L3)
  ctx.intrinsics.add("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
  def body() -> str:
    ctx.lines.append(f"  call void @llvm.prefetch.p0(ptr {ctx.r[x.src[0]]}, i32 0, i32 {4 - x.arg}, i32 1)")
    return ""
  return _gated(ctx, x.src[1] if len(x.src) > 1 else None, body)

def render_index(ctx:LLVMCtx, x:UOp) -> str:
  if x.src[1].op is Ops.CONST and x.src[1].arg == 0: return ctx.r[x.src[0]]
  elem = ltype(cast(PtrDType, buffer_of(x).dtype).base, True)   # a local of vectors (a group reduce of vector accumulators) steps by vectors
  return ctx.emit(f"getelementptr inbounds {elem}, {ctx.ptr(x)} {ctx.r[x.src[0]]}, {ltype(x.src[1].dtype)} {ctx.val(x.src[1])}")

def render_range(ctx:LLVMCtx, x:UOp) -> str:
  ctx.n += 1
  n, t, end, pre = ctx.n, ltype(x.dtype), ctx.val(x.src[0]), ctx.block
  ctx.lines.append(f"  br label %loop{n}")
  ctx.label(f"loop{n}")
  ctx.lines.append(f"  %ridx{n} = phi {t} [0, %{pre}], [%ridx{n}.next, %latch{n}]")
  ctx.lines.append(f"  br i1 {ctx.emit(f'icmp slt {t} %ridx{n}, {end}')}, label %body{n}, label %exit{n}")
  ctx.label(f"body{n}")
  return f"%ridx{n}"

def render_endrange(ctx:LLVMCtx, x:UOp) -> str:
  n = ctx.r[x.src[0]][len("%ridx"):]
  ctx.lines += [f"  br label %latch{n}", f"latch{n}:", f"  %ridx{n}.next = add nsw {ltype(x.src[0].dtype)} %ridx{n}, 1", f"  br label %loop{n}"]
  ctx.label(f"exit{n}")
  return ""

def render_if(ctx:LLVMCtx, x:UOp) -> str:
  ctx.n += 1
  ctx.lines.append(f"  br i1 {ctx.val(x.src[0])}, label %if{ctx.n}, label %endif{ctx.n}")
  ctx.label(f"if{ctx.n}")
  return f"{ctx.n}"

def render_endif(ctx:LLVMCtx, x:UOp) -> str:
  ctx.lines.append(f"  br label %endif{ctx.r[x.src[0]]}")
  ctx.label(f"endif{ctx.r[x.src[0]]}")
  return ""

def render_acc(ctx:LLVMCtx, x:UOp) -> str:
  ctx.n += 1
  ctx.allocas.append(f"  %acc{ctx.n} = alloca {ltype(x.dtype)}, align {x.dtype.itemsize}")
  ctx.lines.append(f"  store {ltype(x.dtype)} {ctx.val(x.src[0])}, ptr %acc{ctx.n}")
  ctx.mutable.add(x)
  return f"%acc{ctx.n}"

def render_assign(ctx:LLVMCtx, x:UOp) -> str:
  ctx.lines.append(f"  store {ltype(x.dtype)} {ctx.val(x.src[1])}, ptr {ctx.r[x.src[0]]}")
  ctx.mutable.add(x)
  return ctx.r[x.src[0]]

def render_vectorize(ctx:LLVMCtx, x:UOp) -> str:
  ret, t, st = "undef", ltype(x.dtype), ltype(x.dtype.scalar())
  for i, s in enumerate(x.src): ret = ctx.emit(f"insertelement {t} {ret}, {st} {ctx.val(s)}, i32 {i}")
  return ret

def render_gep(ctx:LLVMCtx, x:UOp) -> str:
  t, v = ltype(x.src[0].dtype), ctx.val(x.src[0])
  if len(x.arg) == 1: return ctx.emit(f"extractelement {t} {v}, i32 {x.arg[0]}")
  return ctx.emit(f"shufflevector {t} {v}, {t} undef, <{len(x.arg)} x i32> <{', '.join(f'i32 {i}' for i in x.arg)}>")

def render_special(ctx:LLVMCtx, x:UOp) -> str:
  if x.arg[0] != "core_id": raise NotImplementedError(f"LLVM renderer: no thread index {x.arg[0]}")
  # the launcher passes a 32-bit core_id; a kernel indexing past int32 computes in i64
  return "%core_id" if x.dtype.itemsize == 4 else ctx.emit(f"sext i32 %core_id to {ltype(x.dtype)}")

llvm_rewrite = PatternMatcher([
  (UPat((Ops.CONST, Ops.VCONST), name="x"), lambda ctx, x: lconst(x.arg, x.dtype)),
  (UPat(Ops.SPECIAL, name="x"), render_special),
  (UPat(Ops.RANGE, name="x"), render_range),
  (UPat(Ops.ENDRANGE, name="x"), render_endrange),
  (UPat(Ops.IF, name="x"), render_if),
  (UPat(Ops.ENDIF, name="x"), render_endif),
  (UPat((Ops.BARRIER, Ops.SINK)), lambda ctx: ""),
  (UPat(Ops.DEFINE_ACC, name="x"), render_acc),
  (UPat(Ops.ASSIGN, name="x"), render_assign),
  (UPat(Ops.INDEX, name="x"), render_index),
  (UPat(Ops.LOAD, name="x"), render_load),
  (UPat(Ops.STORE, name="x"), render_store),
  (UPat(Ops.PREFETCH, name="x"), render_prefetch),
  (UPat(Ops.CAST, name="x"), render_cast),
  (UPat(Ops.BITCAST, name="x"), render_bitcast),
  (UPat(Ops.VECTORIZE, name="x"), render_vectorize),
  (UPat(Ops.GEP, name="x"), render_gep),
  (UPat(Ops.NOOP, name="x"), lambda ctx, x: ctx.val(x.src[0])),
  (UPat(GroupOp.ALU, name="x"), render_alu),
])

class LLVMRenderer(Renderer):
  """LLVM IR for the host CPU: like ClangRenderer (plain loops, a thread pool over the outermost axis, vectors for upcast lanes)."""
  device = "LLVM"
  has_local = False
  has_shared = False
  has_threads = True
  packs_operands = True
  max_bufs = 1000   # CPUProgram calls through ctypes, which takes at most 1024 arguments (buffers, vars, core_id)
  supports_prefetch = True
  vector_alu_lanes = 32
  dtypes_supported = frozenset(DTYPES_DICT.values())
  global_max: tuple[int, ...]|None = None
  supports_float4 = True
  # the ops written out above; the rest (exp2, log2, sin, pow, threefry ...) are decomposed before rendering
  code_for_op = {op: lambda *a, dtype: "" for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.CMPLT, Ops.CMPNE,
                 Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.TRUNC, Ops.WHERE, Ops.MULACC)}
  global_ptr = "ptr"
  def render(self, name:str, uops:list[UOp]) -> str:
    ctx = LLVMCtx()
    ctx.gptr = self.global_ptr
    uops = with_sources(uops)
    params: list[str] = []
    for u in sorted((u for u in uops if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg):
      params.append(f"{self.global_ptr} noalias align {cast(PtrDType, u.dtype).base.itemsize} %data{u.arg}")
      ctx.r[u] = f"%data{u.arg}"
    for u in sorted((u for u in uops if u.op is Ops.DEFINE_VAR), key=lambda u: u.arg[0]):
      params.append(f"{ltype(u.dtype)} %dv.{u.arg[0]}")
      ctx.r[u] = f"%dv.{u.arg[0]}"
    if any(u.op is Ops.SPECIAL and u.arg[0] == "core_id" for u in uops): params.append("i32 %core_id")
    for u in uops:
      if u in ctx.r: continue
      if (s := self.rewrite(ctx, u)) is None: raise NotImplementedError(f"{type(self).__name__} can't render {u.op}")
      ctx.r[u] = s
    return "\n".join([*self.module_head(), *ctx.decls, f"define {self.calling_conv}void @{name}({', '.join(params)}) #0 {{", "entry:", *ctx.allocas,
                      *ctx.lines, "  ret void", "}", *sorted(ctx.intrinsics), f"attributes #0 = {{ {self.function_attrs(uops)} }}"]) + "\n"
  calling_conv = ""
  def module_head(self) -> list[str]: return []
  def function_attrs(self, uops:list[UOp]) -> str: return 'nounwind "no-trapping-math"="true"'
  def rewrite(self, ctx:LLVMCtx, u:UOp) -> str|None: return cast(str|None, llvm_rewrite.rewrite(u, ctx=ctx))

# ***** AMDGPU: the same IR for the amdgcn-amd-amdhsa triple, with address spaces, work-item ids, barriers and local memory *****

AMD_ARCHS = {"gfx90a": amd_mfma_tcs, "gfx1030": [], "gfx1100": amd_tcs}   # the archs LLVM 15 knows that we compile for, and their tensor cores

def check_amd_arch(arch:str) -> str:
  # LLVM aborts the process on some unknown processor names, so refuse them before it sees one
  if arch not in AMD_ARCHS: raise ValueError(f"unknown AMD arch {arch!r}: expected one of {', '.join(AMD_ARCHS)}")
  return arch

def amd_special(ctx:LLVMCtx, x:UOp) -> str:
  fn = f"llvm.amdgcn.{'workgroup' if x.arg.kind is ThreadKind.GLOBAL else 'workitem'}.id.{'xyz'[x.arg.dim]}"
  ctx.intrinsics.add(f"declare i32 @{fn}()")
  v = ctx.emit(f"call i32 @{fn}()")
  return v if ltype(x.dtype) == "i32" else ctx.emit(f"zext i32 {v} to {ltype(x.dtype)}")

def amd_barrier(ctx:LLVMCtx) -> str:
  ctx.intrinsics.add("declare void @llvm.amdgcn.s.barrier()")
  ctx.lines += ['  fence syncscope("workgroup") release', "  call void @llvm.amdgcn.s.barrier()", '  fence syncscope("workgroup") acquire']
  return ""

def amd_local(ctx:LLVMCtx, x:UOp) -> str:
  dt = cast(PtrDType, x.dtype)
  ctx.decls.append(f"@{x.arg} = internal unnamed_addr addrspace(3) global [{dt.size} x {ltype(dt.base, True)}] undef, align 16")
  return f"@{x.arg}"

def amd_wmma(ctx:LLVMCtx, x:UOp) -> str:
  # half operands are floats in registers (already rounded): narrow them to the instruction's halves
  if (x.arg[2], x.arg[3]) != (dtypes.half, dtypes.float): raise NotImplementedError(f"AMDLLVMRenderer has no {x.arg[0]}")
  (na, nb), nc = (s.dtype.count for s in x.src[:2]), x.dtype.count
  a, b, c = (ctx.val(s) for s in x.src)
  ha, hb = (ctx.emit(f"fptrunc <{n} x float> {v} to <{n} x half>") for n, v in ((na, a), (nb, b)))
  fn, extra = ("llvm.amdgcn.wmma.f32.16x16x16.f16", "") if x.arg[5] == 32 else ("llvm.amdgcn.mfma.f32.16x16x16f16", ", i32 0, i32 0, i32 0")
  sig = f"<{na} x half>, <{nb} x half>, <{nc} x float>" + (", i32, i32, i32" if extra else "")
  ctx.intrinsics.add(f"declare <{nc} x float> @{fn}({sig})")
  return ctx.emit(f"call <{nc} x float> @{fn}(<{na} x half> {ha}, <{nb} x half> {hb}, <{nc} x float> {c}{extra})")

amd_rewrite = PatternMatcher([
  (UPat(Ops.SPECIAL, name="x"), amd_special),
  (UPat(Ops.BARRIER), amd_barrier),
  (UPat(Ops.DEFINE_LOCAL, name="x"), amd_local),
  (UPat(Ops.WMMA, name="x"), amd_wmma),
]) + llvm_rewrite

class AMDLLVMRenderer(LLVMRenderer):
  """LLVM IR for AMD GPUs (amdgcn-amd-amdhsa): an amdgpu_kernel over global (addrspace 1) buffers, local memory in addrspace 3."""
  device = "AMD"
  has_local = True
  has_shared = True
  has_threads = False
  supports_prefetch = False
  vector_alu_lanes = 4
  shared_max = 65536
  global_max: tuple[int, ...]|None = (2**31-1, 65535, 65535)
  local_max = (1024, 1024, 1024)
  global_ptr = "ptr addrspace(1)"
  calling_conv = "amdgpu_kernel "
  def __init__(self, arch:str="gfx1100"):
    self.arch = check_amd_arch(arch)
    self.tensor_cores: list[TensorCore] = AMD_ARCHS[arch]
  def __reduce__(self): return self.__class__, (self.arch,)
  def __repr__(self): return f"AMDLLVMRenderer({self.arch!r})"
  def module_head(self) -> list[str]: return ['target triple = "amdgcn-amd-amdhsa"']
  def function_attrs(self, uops:list[UOp]) -> str:
    local = 1
    for u in uops:
      if u.op is Ops.SPECIAL and u.arg.kind is ThreadKind.LOCAL: local *= u.arg[1] if isinstance(u.arg[1], int) else 1024
    return f'nounwind "no-trapping-math"="true" "amdgpu-flat-work-group-size"="1,{min(max(local, 1), 1024)}"'
  def rewrite(self, ctx:LLVMCtx, u:UOp) -> str|None: return cast(str|None, amd_rewrite.rewrite(u, ctx=ctx))
