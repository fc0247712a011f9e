"""WGSL for the WEBGPU device. WGSL has no 64-bit types: float64 is refused by dtypes_supported, int64/uint64 are emulated as vec2<u32> (add,
sub, mul, division, compare, shift, bitwise, casts). WGSL has no memory unit under 32 bits: bool, int8/uint8 and
int16/uint16 buffers are arrays of atomic<u32> words, read with extractBits and written with an atomic and/or on the element's bits (so threads
writing neighbouring elements of one word don't race); their values are computed in i32/u32 and wrapped back to their width after each op."""
from __future__ import annotations
import math
from typing import Any, Callable, cast
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, ThreadKind
from tinygrad.dtype import DType, PtrDType, dtypes, truncate
from tinygrad.renderer.cstyle import CStyleLanguage, CStyleCtx, base_rewrite, index_of, buffer_of, mem_gate, load_alt, _nonzero_const, _BOOL_OPS, \
  WORKITEM_KEY

_SMALL_INTS = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16)
# int64/uint64 are vec2<u32> (low word, high word); their arithmetic is these helpers, signed or not where it matters
_WIDE = (dtypes.int64, dtypes.uint64)
# long division, one bit a step, unrolled: lavapipe counts a helper's loop iterations against the thread's loop limit (Renderer.loop_max)
_DIV_STEP = "  r = tg_shl64(r, 1u); r.x = r.x | ((n.{w} >> {b}u) & 1u); if (!tg_ult64(r, d)) {{ r = tg_sub64(r, d); q.{w} = q.{w} | (1u << {b}u); }}"
# C fmod, exact (WGSL's % is x - y * trunc(x / y) in f32: 1e10 % 7 gave 0): take off the divisor scaled by a power of two to just under the
# remainder, each subtraction exact (Sterbenz), at least one exponent less a step
_FMOD_HELPER = """fn tg_fmod(x: f32, y: f32) -> f32 {
  var r = abs(x); let b = abs(y);
  if (tg_isnan(x) || tg_isnan(y) || r == tg_f(0x7f800000u) || b == 0.0) { return tg_f(0x7fc00000u); }
  if (b == tg_f(0x7f800000u)) { return x; }
  for (var i = 0; i < 300 && r >= b; i++) { var d = ldexp(b, frexp(r).exp - frexp(b).exp); if (d > r) { d = d * 0.5; } r = r - d; }
  return select(r, -r, (bitcast<u32>(x) & 0x80000000u) != 0u);
}"""
_WIDE_HELPERS = """fn tg_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x; return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn tg_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x)); }
fn tg_mul32(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let mid = (al * bl >> 16u) + (ah * bl & 0xffffu) + al * bh;
  return vec2<u32>(a * b, ah * bh + (ah * bl >> 16u) + (mid >> 16u));
}
fn tg_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { let p = tg_mul32(a.x, b.x); return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x); }
fn tg_ult64(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn tg_slt64(a: vec2<u32>, b: vec2<u32>) -> bool { return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x); }
fn tg_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }
  if (n == 0u) { return a; }
  return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}
fn tg_shr64(a: vec2<u32>, n: u32, signed: bool) -> vec2<u32> {
  let fill = select(0u, 0xffffffffu, signed && bitcast<i32>(a.y) < 0i);
  if (n >= 32u) { return vec2<u32>(select(a.y >> (n - 32u), bitcast<u32>(bitcast<i32>(a.y) >> (n - 32u)), signed), fill); }
  if (n == 0u) { return a; }
  return vec2<u32>((a.x >> n) | (a.y << (32u - n)), select(a.y >> n, bitcast<u32>(bitcast<i32>(a.y) >> n), signed));
}
fn tg_neg64(a: vec2<u32>) -> vec2<u32> { return tg_sub64(vec2<u32>(0u, 0u), a); }
fn tg_udivmod64(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
  if (all(d == vec2<u32>(0u, 0u))) { return vec4<u32>(0u, 0u, 0u, 0u); }
  var q = vec2<u32>(0u, 0u); var r = vec2<u32>(0u, 0u);
""" + "\n".join(_DIV_STEP.format(w="xy"[i // 32], b=i % 32) for i in range(63, -1, -1)) + """
  return vec4<u32>(q, r);
}
fn tg_divmod64(a: vec2<u32>, b: vec2<u32>, signed: bool) -> vec4<u32> {
  let na = signed && bitcast<i32>(a.y) < 0i; let nb = signed && bitcast<i32>(b.y) < 0i;
  let qr = tg_udivmod64(select(a, tg_neg64(a), na), select(b, tg_neg64(b), nb));
  return vec4<u32>(select(qr.xy, tg_neg64(qr.xy), na != nb), select(qr.zw, tg_neg64(qr.zw), na));
}
fn tg_f2u64(f: f32) -> vec2<u32> {
  let t = trunc(abs(f)); let hi = floor(t / 4294967296.0); let r = vec2<u32>(u32(t - hi * 4294967296.0), u32(hi));
  return select(r, tg_neg64(r), f < 0.0);
}
fn tg_u64f(a: vec2<u32>, signed: bool) -> f32 {
  let neg = signed && bitcast<i32>(a.y) < 0i; let m = select(a, tg_neg64(a), neg);
  return select(1.0, -1.0, neg) * (f32(m.y) * 4294967296.0 + f32(m.x));
}"""
_WIDE_OPS: dict[Ops, Callable[..., str]] = {Ops.ADD: lambda a, b, s: f"tg_add64({a}, {b})", Ops.SUB: lambda a, b, s: f"tg_sub64({a}, {b})",
             Ops.MUL: lambda a, b, s: f"tg_mul64({a}, {b})", Ops.NEG: lambda a, s: f"tg_neg64({a})",
             Ops.IDIV: lambda a, b, s: f"tg_divmod64({a}, {b}, {str(s).lower()}).xy",
             Ops.MOD: lambda a, b, s: f"tg_divmod64({a}, {b}, {str(s).lower()}).zw",
             Ops.CMPLT: lambda a, b, s: f"tg_{'s' if s else 'u'}lt64({a}, {b})", Ops.CMPNE: lambda a, b, s: f"any({a} != {b})",
             Ops.CMPEQ: lambda a, b, s: f"all({a} == {b})", Ops.MAX: lambda a, b, s: f"select({a}, {b}, tg_{'s' if s else 'u'}lt64({a}, {b}))",
             Ops.AND: lambda a, b, s: f"({a} & {b})", Ops.OR: lambda a, b, s: f"({a} | {b})", Ops.XOR: lambda a, b, s: f"({a} ^ {b})",
             Ops.SHL: lambda a, b, s: f"tg_shl64({a}, u32({b}.x))", Ops.SHR: lambda a, b, s: f"tg_shr64({a}, u32({b}.x), {str(s).lower()})",
             Ops.WHERE: lambda c, a, b, s: f"select({b}, {a}, {c})"}
_EXACT = {Ops.MAX, Ops.WHERE, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR}

def _render_range(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = nm = ctx.fixed_name(f"ridx{x.arg}")
  return f"for (var {nm}: {ctx.ren.render_dtype(x.dtype)} = 0; {nm} < {ctx.r[x.src[0]]}; {nm}++) {{"

def _render_acc(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = nm = ctx.new_name("acc")
  return f"var {nm}: {ctx.ren.render_dtype(x.dtype)} = {ctx.r[x.src[0]]};"

def _render_local(ctx:CStyleCtx, x:UOp) -> str:
  # workgroup memory lives at module scope in WGSL: render_kernel moves this line there. Elements are values (i32 for int8), never packed
  ctx.r[x] = nm = ctx.new_name("temp")
  dt = cast(PtrDType, x.dtype)
  return f"var<workgroup> {nm}: array<{ctx.ren.render_dtype(dt.base)}, {dt.size}>;"

# an index computed in int64 (a shape past int32) addresses a binding with its low word: no binding reaches 2**32 elements
def _flat(ctx, idx:UOp) -> str: return ctx.r[idx.src[1]] + (".x" if idx.src[1].dtype in _WIDE else "")

wgsl_rewrite = PatternMatcher([
  (UPat(Ops.RANGE, name="x"), _render_range),
  (UPat(Ops.DEFINE_ACC, name="x"), _render_acc),
  (UPat(Ops.DEFINE_LOCAL, name="x"), _render_local),
  (UPat(Ops.INDEX, name="x"), lambda ctx, x: f"{ctx.r[x.src[0]]}[{_flat(ctx, x)}]"),
]) + base_rewrite

class WGSLRenderer(CStyleLanguage):
  device = "WEBGPU"
  supports_float4 = False
  global_max = (65535,) * 3          # the WebGPU defaults; the device sets its adapter's limits
  local_max = (256, 256, 64)
  # lavapipe (Mesa's gallivm) counts every loop iteration of an invocation, over all its loops, and silently leaves them after 65535
  loop_max = 65535
  shared_max = 16384
  nonfinite_exact = False            # WGSL lets the shader compiler assume no nan/inf: lavapipe folds x*0 and x-x to 0, 0/0 to anything
  barrier = "workgroupBarrier();"
  code_for_workitem = {"g": lambda d: f"i32(gid.{'xyz'[d]})", "l": lambda d: f"i32(lid.{'xyz'[d]})"}
  type_map = {dtypes.bool: "bool", dtypes.float32: "f32", dtypes.float16: "f16", dtypes.int32: "i32", dtypes.uint32: "u32",
              dtypes.int8: "i32", dtypes.int16: "i32", dtypes.uint8: "u32", dtypes.uint16: "u32", dtypes.int64: "vec2<u32>",
              dtypes.uint64: "vec2<u32>"}
  code_for_op = {**{k: v for k, v in CStyleLanguage.code_for_op.items() if k not in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW)},
                 Ops.MAX: lambda a, b, dtype: f"select({a}, {b}, {b} > {a})", Ops.WHERE: lambda c, a, b, dtype: f"select({b}, {a}, {c})",
                 Ops.SHL: lambda a, b, dtype: f"({a} << u32({b}))", Ops.SHR: lambda a, b, dtype: f"({a} >> u32({b}))",
                 Ops.MOD: lambda a, b, dtype: f"({a} % {b})" if not dtypes.is_float(dtype) else
                   f"tg_fmod({a}, {b})" if dtype == dtypes.float32 else f"f16(tg_fmod(f32({a}), f32({b})))",
                 Ops.RECIP: lambda a, dtype: f"(1.0 / {a})",
                 Ops.NEG: lambda a, dtype: f"(!{a})" if dtype == dtypes.bool else f"(0u - {a})" if dtypes.is_unsigned(dtype) else f"(-{a})"}
  string_rewrite = wgsl_rewrite
  def __init__(self, f16:bool=False):
    self.f16 = f16
    self.dtypes_supported = frozenset([dtypes.bool, dtypes.float32, dtypes.int32, dtypes.uint32, *_SMALL_INTS, *_WIDE] +
                                      ([dtypes.float16] if f16 else []))
  def __reduce__(self): return self.__class__, (self.f16,)

  # *** types and values ***
  def packed(self, buf:UOp) -> bool:
    """Whether a buffer is kept as u32 words holding 4 or 2 elements: global buffers of the types under 32 bits (but native f16)."""
    return buf.op is Ops.DEFINE_GLOBAL and cast(PtrDType, buf.dtype).base.itemsize < 4 and cast(PtrDType, buf.dtype).base != dtypes.float16
  def render_dtype(self, dt:DType, mem:bool=False) -> str:
    if isinstance(dt, PtrDType):
      return f"array<{'atomic<u32>' if dt.base.itemsize < 4 and dt.base != dtypes.float16 else self.render_dtype(dt.base)}>"
    if dt.count > 1: raise NotImplementedError(f"WGSL renderer has no vectors, got {dt}")
    if dt not in self.type_map: raise NotImplementedError(f"WEBGPU can't compute {dt}")
    return self.type_map[dt]
  def render_const(self, x:Any, dt:DType) -> str:
    if dt == dtypes.bool: return "true" if x else "false"
    if dtypes.is_float(dt):
      v, suffix = truncate[dt](x), "h" if dt == dtypes.float16 else "f"
      # inf and nan have no literal, and const-expressions can't make them: a helper call isn't folded
      if math.isnan(v) or math.isinf(v): return f"tg_{suffix}({0x7fc00000 if math.isnan(v) else 0xff800000 if v < 0 else 0x7f800000}u)"
      return f"({v!r}{suffix})" if v < 0 or str(v).startswith("-") else f"{v!r}{suffix}"
    if dt in _WIDE: return f"vec2<u32>({int(x) & 0xffffffff}u, {(int(x) >> 32) & 0xffffffff}u)"
    v = self._wrap_const(int(x), dt)
    if dtypes.is_unsigned(dt): return f"{v}u"
    return "(-2147483647i - 1i)" if v == -2**31 else f"({v}i)" if v < 0 else f"{v}i"
  def _wrap_const(self, v:int, dt:DType) -> int:
    bits = 8*dt.itemsize if dt in _SMALL_INTS else 32
    v &= (1 << bits) - 1
    return v - (1 << bits) if not dtypes.is_unsigned(dt) and v >= 1 << (bits-1) else v
  def wrap(self, expr:str, dt:DType) -> str:
    # a value of a small int type back to its width: extractBits sign-extends an i32 and zero-extends a u32
    return f"extractBits({expr}, 0u, {8*dt.itemsize}u)" if dt in _SMALL_INTS else expr
  def render_cast(self, expr:str, from_dt:DType, to_dt:DType) -> str:
    if from_dt in _WIDE and to_dt in _WIDE: return expr
    if to_dt in _WIDE:
      if dtypes.is_float(from_dt): return f"tg_f2u64(f32({expr}))"
      if from_dt == dtypes.bool: return f"vec2<u32>(select(0u, 1u, {expr}), 0u)"
      # a signed value's high word is its sign, repeated
      if dtypes.is_unsigned(from_dt): return f"vec2<u32>(u32({expr}), 0u)"
      return f"vec2<u32>(bitcast<u32>(i32({expr})), select(0u, 0xffffffffu, {expr} < 0i))"
    if from_dt in _WIDE:
      if to_dt == dtypes.bool: return f"any({expr} != vec2<u32>(0u, 0u))"
      if dtypes.is_float(to_dt): return f"{self.render_dtype(to_dt)}(tg_u64f({expr}, {str(not dtypes.is_unsigned(from_dt)).lower()}))"
      return self.render_cast(f"({expr}).x", dtypes.uint32, to_dt)
    # floats to unsigned go through i32, so -1.0 is all ones (as in C) instead of WGSL's saturating 0
    if dtypes.is_unsigned(to_dt) and dtypes.is_float(from_dt):
      # ... but i32 saturates at 2**31: a uint32 from a float32 past it converts directly
      if to_dt == dtypes.uint32 and from_dt == dtypes.float32: return f"select(u32(i32({expr})), u32({expr}), {expr} >= 2147483648.0f)"
      expr = f"i32({expr})"
    return self.wrap(f"{self.render_dtype(to_dt)}({expr})", to_dt)
  def _bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str:
    if from_dt == to_dt: return expr
    # f16 bits through f32 (exact both ways) and WGSL's packing builtins: naga mistranslates bitcasts of vec2<f16>
    if from_dt == dtypes.float16: return self.render_cast(f"tg_h2bits({expr})", dtypes.uint32, to_dt)
    if to_dt == dtypes.float16: return f"tg_bits2h(u32({expr}))"
    if from_dt in _SMALL_INTS or to_dt in _SMALL_INTS or (from_dt in _WIDE and to_dt in _WIDE): return self.render_cast(expr, from_dt, to_dt)
    if from_dt in _WIDE or to_dt in _WIDE: raise NotImplementedError(f"WGSLRenderer can't bitcast {from_dt} to {to_dt}")
    return f"bitcast<{self.render_dtype(to_dt)}>({expr})"

  # *** uops ***
  def render_special(self, ctx:CStyleCtx, x:UOp) -> str:
    ctx.r[x] = nm = ctx.fixed_name(x.arg[0])
    val = self.code_for_workitem[WORKITEM_KEY[x.arg.kind]](x.arg.dim)
    return f"let {nm}: {self.render_dtype(x.dtype)} = {self.render_cast(val, dtypes.int32, x.dtype) if x.dtype in _WIDE else val}; // {x.arg[1]}"
  def render_let(self, dt:DType, nm:str, expr:str) -> str: return f"let {nm}: {self.render_dtype(dt)} = {expr};"
  def _word(self, ctx:CStyleCtx, idx:UOp) -> tuple[str, str, int]:
    # the word and bit offset of a packed element: (pointer to its atomic word, bit shift, element bits)
    bits, i = 8*cast(PtrDType, buffer_of(idx).dtype).base.itemsize, f"u32({_flat(ctx, idx)})"
    per = 32 // bits
    return f"&{ctx.r[idx.src[0]]}[{i} / {per}u]", f"(({i} % {per}u) * {bits}u)", bits
  def render_load(self, ctx:CStyleCtx, x:UOp) -> str:
    idx = index_of(x.src[0])
    if not self.packed(buf := buffer_of(idx)): val = ctx.r[idx]
    else:
      word, shift, bits = self._word(ctx, idx)
      elem = cast(PtrDType, buf.dtype).base
      w = f"atomicLoad({word})" if dtypes.is_unsigned(elem) or elem == dtypes.bool else f"bitcast<i32>(atomicLoad({word}))"
      val = f"extractBits({w}, {shift}, {bits}u)" + (" != 0u" if elem == dtypes.bool else "")
      if elem == dtypes.bool: val = f"({val})"
    if (gate := mem_gate(x)) is None: return val
    # out-of-bounds reads are defined in WebGPU (clamped or zero), so both sides of the select may be read
    return f"select({ctx.r[a] if (a := load_alt(x)) is not None else self.render_const(0, x.dtype)}, {val}, {ctx.r[gate]})"
  def render_store(self, ctx:CStyleCtx, x:UOp) -> str:
    idx, val = index_of(x.src[0]), x.src[1]
    if not self.packed(buffer_of(idx)): stmt = f"{ctx.r[idx]} = {ctx.r[val]};"
    else:
      word, shift, bits = self._word(ctx, idx)
      v = f"select(0u, 1u, {ctx.r[val]})" if val.dtype == dtypes.bool else f"u32({ctx.r[val]})"
      mask = f"{(1 << bits) - 1}u"
      stmt = f"atomicAnd({word}, ~({mask} << {shift})); atomicOr({word}, ({v} & {mask}) << {shift});"
    return f"if ({ctx.r[gate]}) {{ {stmt} }}" if (gate := mem_gate(x)) is not None else stmt
  def _alu(self, x:UOp, ops:list[str], dt:DType) -> str:
    op = _BOOL_OPS.get(x.op, x.op) if dt == dtypes.bool and x.src[-1].dtype == dtypes.bool else x.op
    # WGSL has no < or ^ on bools; & and | on bools are the non-short-circuit logical ops
    if op is Ops.CMPLT and x.src[0].dtype == dtypes.bool: return f"(!{ops[0]} & {ops[1]})"
    if op is Ops.XOR and dt == dtypes.bool: return f"({ops[0]} != {ops[1]})"
    # x != x is folded to false by the shader compilers: nan is tested on the bits
    if op in (Ops.CMPNE, Ops.CMPEQ) and x.src[0] is x.src[1] and dtypes.is_float(x.src[0].dtype):
      return f"{'' if op is Ops.CMPNE else '!'}tg_isnan(f32({ops[0]}))"
    # and a != b with a nan in it comes out false (an ordered compare): the nan is tested on the bits
    if op is Ops.CMPNE and dtypes.is_float(x.src[0].dtype):
      return f"(({ops[0]} != {ops[1]}) || tg_isnan(f32({ops[0]})) || tg_isnan(f32({ops[1]})))"
    if (wide := x.src[-1].dtype.scalar()) in _WIDE:
      if (wfxn := _WIDE_OPS.get(op)) is None: raise NotImplementedError(f"WEBGPU emulates {wide} with two 32-bit words and has no {op} for it")
      return wfxn(*ops, not dtypes.is_unsigned(wide))
    if (fxn := self.code_for_op.get(op)) is None: raise NotImplementedError(f"WGSLRenderer can't render {op}")
    # x / 0.0 is an indeterminate value in WGSL (lavapipe gives 0 or garbage): x * inf is IEEE's x / 0 (0 * inf is nan, like 0 / 0)
    if op is Ops.FDIV and x.src[1].op is Ops.CONST and x.src[1].arg == 0:
      return f"({ops[0]}*{self.render_const(math.copysign(math.inf, x.src[1].arg), x.src[1].dtype)})"
    ret = fxn(*ops, dtype=dt)
    # an int divided by 0 gives 0 (as on the other devices), where WGSL gives the dividend
    if op is Ops.IDIV and not _nonzero_const(x.src[1]): ret = f"select({ret}, {self.render_const(0, dt)}, {ops[1]} == {self.render_const(0, dt)})"
    return ret if op in _EXACT else self.wrap(ret, dt)

  # *** the kernel ***
  def render_param(self, u:UOp, nm:str, read_only:bool) -> str:
    if u.op is Ops.DEFINE_VAR: return f"{nm}: {self.render_dtype(u.dtype)}"
    return f"var<storage, read_write> {nm}: {self.render_dtype(u.dtype)};"
  def render_kernel(self, ctx:CStyleCtx, name:str, kernel:list[str], params:list[str], uops:list[UOp]) -> str:
    local = [1, 1, 1]
    for u in uops:
      if u.op is Ops.SPECIAL and u.arg.kind is ThreadKind.LOCAL: local[u.arg.dim] = cast(int, u.arg.size)
    bufs, vars_ = [p for p in params if p.startswith("var<")], [p for p in params if not p.startswith("var<")]
    head = ["enable f16;"] if any(u.dtype.base.scalar() == dtypes.float16 for u in uops) else []
    head += ["fn tg_f(bits: u32) -> f32 { return bitcast<f32>(bits); }",
             "fn tg_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }"]
    if head[0] == "enable f16;": head += ["fn tg_h(bits: u32) -> f16 { return f16(bitcast<f32>(bits)); }",
      "fn tg_h2bits(x: f16) -> u32 { return pack2x16float(vec2<f32>(f32(x), 0.0)); }",
      "fn tg_bits2h(x: u32) -> f16 { return f16(unpack2x16float(x & 0xffffu).x); }"]
    if any(u.dtype.base.scalar() in _WIDE for u in uops): head += _WIDE_HELPERS.splitlines()
    if any(u.op is Ops.MOD and dtypes.is_float(u.dtype) for u in uops): head += _FMOD_HELPER.splitlines()
    head += [f"@group(0) @binding({i}) {p}" for i, p in enumerate(bufs)]
    if vars_: head += ["struct Vars { " + ", ".join(vars_) + " }", f"@group(0) @binding({len(bufs)}) var<uniform> tg_vars: Vars;"]
    head += [line.strip() for line in kernel if line.strip().startswith("var<workgroup>")]
    body = [line for line in kernel if not line.strip().startswith("var<workgroup>")]
    body = [f"  let {v.split(':')[0]} = tg_vars.{v.split(':')[0]};" for v in vars_] + body
    return "\n".join([*head, f"@compute @workgroup_size({local[0]}, {local[1]}, {local[2]})",
                      f"fn {name}(@builtin(workgroup_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{", *body, "}"]) + "\n"
