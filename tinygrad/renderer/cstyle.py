from __future__ import annotations
import math
from collections import defaultdict
from typing import Any, Callable, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, ThreadKind
from tinygrad.dtype import DType, PtrDType, dtypes, truncate, DTYPES_DICT
from tinygrad.renderer import Renderer, ALL_VECTOR_ALU_OPS, ALL_VECTOR_ALU_DTYPES
from tinygrad.helpers import prod
from tinygrad.renderer.tc import TensorCore, cuda_tcs, amd_tcs, amd_mfma_tcs, metal_tcs, intel_tcs

# ***** helpers shared by the renderers (and the PYTHON device) *****
WORKITEM_KEY = {ThreadKind.GLOBAL: "g", ThreadKind.LOCAL: "l"}   # the code_for_workitem entry of each kind of thread id

def with_sources(uops:list[UOp]) -> list[UOp]:
  """The program with any source missing from the list (a CONST a hand-built program left out) placed right before its first user."""
  seen: dict[UOp, None] = {}
  for u in uops:
    if u in seen: continue
    # a DEFINE_ACC lists the ranges it is reduced over, which come after it
    for s in (u.src[:1] if u.op is Ops.DEFINE_ACC else u.src):
      if s not in seen: seen.update(s.toposort(gate=lambda x: x not in seen))
    seen[u] = None
  return list(seen)

def index_of(u:UOp) -> UOp:
  """The INDEX under a LOAD/STORE address (seen through pointer CASTs)."""
  while u.op is Ops.CAST and isinstance(u.dtype, PtrDType): u = u.src[0]
  if u.op is not Ops.INDEX: raise ValueError(f"LOAD/STORE needs an INDEX address, got {u.op}")
  return u

def buffer_of(u:UOp) -> UOp:
  """The DEFINE_GLOBAL/DEFINE_LOCAL an address points into."""
  while u.op in (Ops.INDEX, Ops.CAST): u = u.src[0]
  return u

def mem_gate(x:UOp) -> UOp|None:
  """The bool that guards a LOAD/STORE: the INDEX's third source, or the old-style trailing gate on the LOAD/STORE itself."""
  if len(x.src) > 2 and x.src[2].dtype.scalar() == dtypes.bool: return x.src[2]
  idx = index_of(x.src[0])
  return idx.src[2] if len(idx.src) > 2 else None

def load_alt(x:UOp) -> UOp|None:
  """The value a gated LOAD gives where its gate is off (0 when absent). BARRIERs (void) listed as sources only order the load."""
  return x.src[1] if len(x.src) > 1 and x.src[1].dtype != dtypes.void else None

def _next_pow2(n:int) -> int: return 1 << (n-1).bit_length()

# ops whose result is one of their (already rounded) inputs: no rounding is needed when the type is emulated
_EXACT_OPS = {Ops.MAX, Ops.WHERE, Ops.NEG, Ops.TRUNC, *GroupOp.Comparison}
_BOOL_OPS = {Ops.ADD: Ops.OR, Ops.MUL: Ops.AND, Ops.MAX: Ops.OR}

# ***** the render of one uop: PatternMatcher rules returning C text *****

class CStyleCtx:
  """State of one render: the C name (or inline expression) of each uop, name counters and the helper code the kernel needs."""
  def __init__(self, ren:CStyleLanguage):
    self.ren = ren
    self.r: dict[UOp, str] = {}
    self.counts: defaultdict[str, int] = defaultdict(int)
    self.used: set[str] = set()
    self.helpers: dict[str, None] = {}
  def new_name(self, prefix:str) -> str:
    while (nm := f"{prefix}{self.counts[prefix]}") in self.used: self.counts[prefix] += 1
    self.counts[prefix] += 1
    self.used.add(nm)
    return nm
  def fixed_name(self, nm:str) -> str:
    # nm itself when it is free (ridx0, gidx0, data0), else a numbered variant
    if nm in self.used: return self.new_name(nm + "_")
    self.used.add(nm)
    return nm
  def lane(self, u:UOp, i:int) -> str:
    # lane i of a vector operand, without indexing a literal where the lane is known
    if u.dtype.count == 1: return self.r[u]
    if u.op is Ops.CONST: return self.ren.render_const(u.arg, u.dtype.scalar())
    if u.op is Ops.VCONST: return self.ren.render_const(u.arg[i], u.dtype.scalar())
    if u.op is Ops.VECTORIZE: return self.r[u.src[i]]
    return self.ren.render_lane(self.r[u], i) if u.dtype.scalar() != dtypes.bool else self.ren.render_bool_lane(self.r[u], i)

def _render_range(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = nm = ctx.fixed_name(f"ridx{x.arg}")
  t = ctx.ren.render_dtype(x.dtype)
  return f"for ({t} {nm} = 0; {nm} < {ctx.r[x.src[0]]}; {nm}++) {{"

def _render_acc(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = nm = ctx.new_name("acc")
  return f"{ctx.ren.render_dtype(x.dtype)} {nm} = {ctx.r[x.src[0]]};"

def _render_assign(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = ctx.r[x.src[0]]
  return f"{ctx.r[x.src[0]]} = {ctx.r[x.src[1]]};"

def _render_local(ctx:CStyleCtx, x:UOp) -> str:
  ctx.r[x] = nm = ctx.fixed_name(x.arg) if isinstance(x.arg, str) and x.arg.isidentifier() else ctx.new_name("temp")
  dt = cast(PtrDType, x.dtype)
  return f"{ctx.ren.smem_align}{ctx.ren.smem_prefix}{ctx.ren.render_dtype(dt.base, mem=True)} {nm}[{dt.size}];"

def _render_gep(ctx:CStyleCtx, x:UOp) -> str:
  if len(x.arg) == 1: return ctx.lane(x.src[0], x.arg[0])
  return ctx.ren.render_vectorize([ctx.lane(x.src[0], i) for i in x.arg], x.dtype)

base_rewrite = PatternMatcher([
  (UPat(Ops.CONST, name="x"), lambda ctx, x: ctx.ren.render_const(x.arg, x.dtype)),
  (UPat(Ops.VCONST, name="x"), lambda ctx, x: ctx.ren.render_vectorize([ctx.ren.render_const(a, x.dtype.scalar()) for a in x.arg], x.dtype)),
  (UPat(Ops.SPECIAL, name="x"), lambda ctx, x: ctx.ren.render_special(ctx, x)),
  (UPat(Ops.RANGE, name="x"), _render_range),
  (UPat((Ops.ENDRANGE, Ops.ENDIF)), lambda ctx: "}"),
  (UPat(Ops.IF, name="x"), lambda ctx, x: f"if ({ctx.r[x.src[0]]}) {{"),
  (UPat(Ops.BARRIER), lambda ctx: ctx.ren.barrier),
  (UPat(Ops.DEFINE_ACC, name="x"), _render_acc),
  (UPat(Ops.ASSIGN, name="x"), _render_assign),
  (UPat(Ops.DEFINE_LOCAL, name="x"), _render_local),
  (UPat(Ops.INDEX, name="x"), lambda ctx, x: ctx.r[x.src[0]] if ctx.r[x.src[1]] == "0" else f"({ctx.r[x.src[0]]}+{ctx.r[x.src[1]]})"),
  (UPat(Ops.LOAD, name="x"), lambda ctx, x: ctx.ren.render_load(ctx, x)),
  (UPat(Ops.STORE, name="x"), lambda ctx, x: ctx.ren.render_store(ctx, x)),
  (UPat(Ops.PREFETCH, name="x"), lambda ctx, x: ctx.ren.render_prefetch(ctx.r[x.src[0]], x.arg, ctx.r[x.src[1]] if len(x.src) > 1 else None)),
  (UPat(Ops.CAST, name="x"), lambda ctx, x: ctx.ren.render_cast_uop(ctx, x)),
  (UPat(Ops.BITCAST, name="x"), lambda ctx, x: ctx.ren.render_bitcast_uop(ctx, x)),
  (UPat(Ops.VECTORIZE, name="x"), lambda ctx, x: ctx.ren.render_vectorize([ctx.r[s] for s in x.src], x.dtype)),
  (UPat(Ops.GEP, name="x"), _render_gep),
  (UPat(GroupOp.ALU, name="x"), lambda ctx, x: ctx.ren.render_alu(ctx, x)),
  (UPat(Ops.WMMA, name="x"), lambda ctx, x: ctx.ren.render_wmma(ctx, x)),
  (UPat(Ops.NOOP, name="x"), lambda ctx, x: ctx.r[x.src[0]]),
  (UPat((Ops.CUSTOM, Ops.CUSTOMI), name="x"), lambda ctx, x: x.arg.format(*[ctx.r[s] for s in x.src])),
])

# how the uops that become statements or get names are printed
_STATEMENT_OPS = {Ops.RANGE, Ops.ENDRANGE, Ops.IF, Ops.ENDIF, Ops.BARRIER, Ops.STORE, Ops.PREFETCH, Ops.ASSIGN, Ops.DEFINE_ACC, Ops.DEFINE_LOCAL,
                  Ops.SPECIAL, Ops.CUSTOM}
_ALWAYS_INLINE = {Ops.CONST, Ops.VCONST, Ops.INDEX, Ops.NOOP, Ops.CUSTOMI}
_PREFIX = {Ops.LOAD: "val", Ops.CAST: "cast", Ops.BITCAST: "cast", Ops.VECTORIZE: "vec", Ops.GEP: "gep", Ops.WMMA: "wmma"}
_MUTABLE = {Ops.DEFINE_ACC, Ops.ASSIGN, Ops.DEFINE_REG}
MAX_INLINE_DEPTH = 3

def _inlined(uops:list[UOp]) -> set[UOp]:
  """Index maths (int/bool scalar ALUs used once, by an INDEX, an IF or another such ALU) is folded into its user, at most 3 deep,
  so addresses read naturally; every other value gets its own statement, so no expression nests deeper than that."""
  users: defaultdict[UOp, list[UOp]] = defaultdict(list)
  for u in uops:
    for s in u.src: users[s].append(u)
  cand: set[UOp] = set()
  for u in reversed(uops):
    if (u.op in GroupOp.ALU or u.op is Ops.CAST) and u.dtype.count == 1 and not isinstance(u.dtype, PtrDType) and \
       (dtypes.is_int(u.dtype) or u.dtype == dtypes.bool) and len(users[u]) == 1 and not any(s.op in _MUTABLE for s in u.src) and \
       ((user := users[u][0]).op in (Ops.INDEX, Ops.IF) or user in cand): cand.add(u)
  inline: set[UOp] = set()
  depth: dict[UOp, int] = {}
  for u in uops:
    if u not in cand: continue
    if (d := 1 + max((depth.get(s, 0) for s in u.src), default=0)) <= MAX_INLINE_DEPTH:
      inline.add(u)
      depth[u] = d
  return inline

# ***** the C-family renderer *****

def _c_math(fxn:str) -> Callable[..., str]:
  # the float/double spelling of a C builtin
  return lambda *a, dtype: f"__builtin_{fxn}{'' if dtype.scalar() == dtypes.float64 else 'f'}({', '.join(a)})"

class CStyleLanguage(Renderer):
  """A C-family source renderer: the class attributes below say how the dialect spells things, string_rewrite renders each uop."""
  kernel_typedef: str = "void"                # may use {launch_bounds}: the threads of one workgroup
  buffer_prefix: str = ""                     # address space of global pointers, in the signature and in pointer casts
  buffer_restrict: str = ""                   # e.g. " restrict"
  const_inputs: bool = False                  # mark buffers that are never stored to as const
  arg_int_prefix: str = "const int"
  smem_align: str = ""
  smem_prefix: str = ""                       # declaration of shared memory
  smem_prefix_for_cast: str = ""              # address space of shared pointers in casts
  barrier: str = ""
  float4: str = "(float4)("                   # vector constructor: prefix, with float4 standing for the type
  float4_close: str = ")"
  extra_args: list[str] = []
  code_for_workitem: dict[str, Callable[[int], str]] = {}
  type_map: dict[DType, str] = {}
  mem_type_map: dict[DType, str] = {}         # element types of buffers, where they differ from values (bool buffers on OpenCL)
  int_suffix: dict[DType, str] = {dtypes.int64: "ll", dtypes.uint64: "ull", dtypes.uint32: "u"}
  infinity: str = "INFINITY"
  nan: str = "NAN"
  # dtypes kept in memory as bits and computed in float: dtype -> (memory type, bits->float helper, float->bits helper)
  storage_types: dict[DType, tuple[str, str, str]] = {}
  guard_int_div: bool = False                 # int / and % by a non-constant divisor give 0 on 0 (like the PYTHON device) instead of trapping
  code_for_op: dict[Ops, Callable] = {
    Ops.ADD: lambda a, b, dtype: f"({a}+{b})", Ops.SUB: lambda a, b, dtype: f"({a}-{b})", Ops.MUL: lambda a, b, dtype: f"({a}*{b})",
    Ops.FDIV: lambda a, b, dtype: f"({a}/{b})", Ops.IDIV: lambda a, b, dtype: f"({a}/{b})",
    Ops.MOD: lambda a, b, dtype: f"fmod({a}, {b})" if dtypes.is_float(dtype) else f"({a}%{b})",
    # python's max(a, b): b only where it is strictly greater, so MAX(x, nan) == x and MAX(nan, x) == nan as in exec_alu
    Ops.MAX: lambda a, b, dtype: f"(({b}>{a})?{b}:{a})",
    Ops.CMPLT: lambda a, b, dtype: f"({a}<{b})", Ops.CMPNE: lambda a, b, dtype: f"({a}!={b})", Ops.CMPEQ: lambda a, b, dtype: f"({a}=={b})",
    Ops.AND: lambda a, b, dtype: f"({a}&{b})", Ops.OR: lambda a, b, dtype: f"({a}|{b})", Ops.XOR: lambda a, b, dtype: f"({a}^{b})",
    Ops.SHL: lambda a, b, dtype: f"({a}<<{b})", Ops.SHR: lambda a, b, dtype: f"({a}>>{b})",
    Ops.NEG: lambda a, dtype: f"(!{a})" if dtype.scalar() == dtypes.bool else f"(-{a})", Ops.RECIP: lambda a, dtype: f"(1/{a})",
    Ops.SQRT: lambda a, dtype: f"sqrt({a})", Ops.EXP2: lambda a, dtype: f"exp2({a})", Ops.LOG2: lambda a, dtype: f"log2({a})",
    Ops.SIN: lambda a, dtype: f"sin({a})", Ops.TRUNC: lambda a, dtype: f"trunc({a})", Ops.POW: lambda a, b, dtype: f"pow({a}, {b})",
    Ops.WHERE: lambda c, a, b, dtype: f"({c}?{a}:{b})", Ops.MULACC: lambda a, b, c, dtype: f"(({a}*{b})+{c})"}
  string_rewrite: PatternMatcher = base_rewrite

  # *** types and literals ***
  def render_dtype(self, dt:DType, mem:bool=False) -> str:
    """The C type of a value (mem=False) or of a buffer element (mem=True)."""
    if isinstance(dt, PtrDType): return self.render_dtype(dt.base, mem=True) + "*"
    if dt.count > 1: return self.vector_name(dt)
    if (st := self.storage_types.get(dt)) is not None: return st[0] if mem else self.render_dtype(dtypes.float32)
    if mem and dt in self.mem_type_map: return self.mem_type_map[dt]
    return self.type_map.get(dt, dt.name)
  def value_dtype(self, dt:DType) -> DType:
    # the dtype a value is computed in: float32 for the storage-only types
    if dt.scalar() in self.storage_types: return dtypes.float32.vec(dt.count)
    return dt
  def vector_name(self, dt:DType) -> str: return self.value_dtype(dt).name   # float4, uchar4 ...
  def render_const(self, x:Any, dt:DType) -> str:
    if dt.count > 1: return self.render_vectorize([self.render_const(x, dt.scalar())]*dt.count, dt)
    if dt == dtypes.bool: return "1" if x else "0"
    if dtypes.is_float(dt):
      v = truncate[dt](x)
      if math.isnan(v): ret = self.nan
      elif math.isinf(v): ret = ("-" if v < 0 else "") + self.infinity
      else: ret = repr(v) + ("" if self.value_dtype(dt) == dtypes.float64 else "f")
      if dt not in (dtypes.float32, dtypes.float64) and dt not in self.storage_types: ret = f"(({self.render_dtype(dt)}){ret})"
      return f"({ret})" if ret.startswith("-") else ret
    v = int(x)
    bits = dt.itemsize * 8
    if not dtypes.is_unsigned(dt) and v == -2**(bits-1) and bits >= 32: return f"(-{2**(bits-1)-1}{self.int_suffix.get(dt, '')}-1)"
    ret = f"{v}{self.int_suffix.get(dt, '')}"
    return f"({ret})" if v < 0 else ret
  def render_vectorize(self, lanes:list[str], dt:DType) -> str:
    return self.float4.replace("float4", self.render_dtype(dt)) + ",".join(lanes) + self.float4_close
  def render_lane(self, expr:str, i:int) -> str: return f"{expr}[{i}]"
  def render_bool_lane(self, expr:str, i:int) -> str: return self.render_lane(expr, i)
  def render_cast(self, expr:str, from_dt:DType, to_dt:DType) -> str:
    if (st := self.storage_types.get(to_dt)) is not None: return f"{st[1]}({st[2]}((float)({expr})))"
    return f"(({self.render_dtype(to_dt)})({expr}))"
  def render_bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str:
    # a union compound literal is defined behaviour in C (pointer punning is not)
    return f"(((union {{ {self.render_dtype(from_dt)} a; {self.render_dtype(to_dt)} b; }}){{{expr}}}).b)"
  def render_round(self, expr:str, dt:DType) -> str:
    # a value computed in float, rounded to the storage type
    st = self.storage_types[dt]
    return f"{st[1]}({st[2]}({expr}))"

  # *** uops ***
  def render_special(self, ctx:CStyleCtx, x:UOp) -> str:
    ctx.r[x] = nm = ctx.fixed_name(x.arg[0])
    # the launch dim comes from the typed ThreadId (kind, dim), the name is only printed
    if (fxn := self.code_for_workitem.get(WORKITEM_KEY.get(x.arg.kind, ""))) is None:
      raise NotImplementedError(f"{type(self).__name__} has no thread index {x.arg[0]}")
    size = x.arg[1] if isinstance(x.arg[1], int) else x.arg[1].render()
    return f"{self.render_dtype(x.dtype)} {nm} = {fxn(x.arg.dim)}; /* {size} */"
  def _ptr_prefix(self, buf:UOp) -> str:
    return self.smem_prefix_for_cast if isinstance(buf.dtype, PtrDType) and buf.dtype.local else self.buffer_prefix
  def render_load(self, ctx:CStyleCtx, x:UOp) -> str:
    idx = index_of(x.src[0])
    addr, buf, cnt = ctx.r[idx], buffer_of(idx), x.dtype.count
    elem = cast(PtrDType, buf.dtype).base.scalar()
    if (st := self.storage_types.get(elem)) is not None:
      val = f"{st[1]}(*{addr})" if cnt == 1 else self.render_vectorize([f"{st[1]}({addr}[{i}])" for i in range(cnt)], x.dtype)
    elif cnt == 1: val = f"(*{addr})"
    elif cnt & (cnt-1) == 0 and elem != dtypes.bool: val = self.render_vload(addr, buf, x.dtype)
    else: val = self.render_vectorize([f"{addr}[{i}]" for i in range(cnt)], x.dtype)
    if (gate := mem_gate(x)) is None: return val
    alt = ctx.r[a] if (a := load_alt(x)) is not None else self.render_const(0, x.dtype)
    return f"({ctx.r[gate]}?{val}:{alt})"
  def render_store(self, ctx:CStyleCtx, x:UOp) -> str:
    idx, val = index_of(x.src[0]), x.src[1]
    addr, buf, cnt, v = ctx.r[idx], buffer_of(idx), val.dtype.count, ctx.r[val]
    elem = cast(PtrDType, buf.dtype).base.scalar()
    if (st := self.storage_types.get(elem)) is not None:
      stmt = f"*{addr} = {st[2]}({v});" if cnt == 1 else " ".join(f"{addr}[{i}] = {st[2]}({ctx.lane(val, i)});" for i in range(cnt))
    elif cnt == 1: stmt = f"*{addr} = {v};"
    elif cnt & (cnt-1) == 0 and elem != dtypes.bool: stmt = self.render_vstore(addr, buf, v, val.dtype)
    else: stmt = " ".join(f"{addr}[{i}] = {ctx.lane(val, i)};" for i in range(cnt))
    return f"if ({ctx.r[gate]}) {{ {stmt} }}" if (gate := mem_gate(x)) is not None else stmt
  def render_prefetch(self, addr:str, level:int, gate:str|None) -> str: return ""   # a dialect without a cache hint drops it
  # a whole vector at an element's address (the expander makes them where lanes are consecutive)
  def render_vload(self, addr:str, buf:UOp, dt:DType) -> str: return f"(*(({self._ptr_prefix(buf)}{self.render_dtype(dt)}*){addr}))"
  def render_vstore(self, addr:str, buf:UOp, v:str, dt:DType) -> str: return f"*(({self._ptr_prefix(buf)}{self.render_dtype(dt)}*){addr}) = {v};"
  def render_cast_uop(self, ctx:CStyleCtx, x:UOp) -> str:
    src = x.src[0]
    if isinstance(x.dtype, PtrDType): return f"(({self._ptr_prefix(buffer_of(src))}{self.render_dtype(x.dtype.base)}*){ctx.r[src]})"
    if x.dtype.count > 1:
      return self.render_vectorize([self.render_cast(ctx.lane(src, i), src.dtype.scalar(), x.dtype.scalar()) for i in range(x.dtype.count)], x.dtype)
    return self.render_cast(ctx.r[src], src.dtype, x.dtype)
  def render_bitcast_uop(self, ctx:CStyleCtx, x:UOp) -> str:
    src = x.src[0]
    if src.dtype.itemsize != x.dtype.itemsize: raise ValueError(f"BITCAST needs equal sizes, got {src.dtype} -> {x.dtype}")
    if (src.dtype.count > 1 or x.dtype.count > 1) and (src.dtype.scalar() in self.storage_types or x.dtype.scalar() in self.storage_types):
      raise NotImplementedError(f"BITCAST of vectors of emulated types ({src.dtype} -> {x.dtype})")
    # an emulated type is its bits (16 for half and bfloat16, 8 for fp8) on the way in and out
    expr, from_dt, bits_dt = ctx.r[src], src.dtype, {1: dtypes.uint8, 2: dtypes.uint16}.get(x.dtype.itemsize, dtypes.uint16)
    if (st := self.storage_types.get(from_dt)) is not None: expr, from_dt = f"{st[2]}({expr})", bits_dt
    if (st := self.storage_types.get(x.dtype)) is not None: return f"{st[1]}({self._bitcast(expr, from_dt, bits_dt)})"
    return self._bitcast(expr, from_dt, x.dtype)
  def _bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str:
    if from_dt == to_dt: return expr
    if from_dt.count == to_dt.count == 1 and dtypes.is_int(from_dt) and dtypes.is_int(to_dt): return f"(({self.render_dtype(to_dt)})({expr}))"
    return self.render_bitcast(expr, from_dt, to_dt)
  def render_alu(self, ctx:CStyleCtx, x:UOp) -> str:
    if x.dtype.count > 1:
      # vector ALUs lane by lane: the same C for every dialect, and bool vectors need no special types
      return self.render_vectorize([self._alu(x, [ctx.lane(s, i) for s in x.src], x.dtype.scalar()) for i in range(x.dtype.count)], x.dtype)
    return self._alu(x, [ctx.r[s] for s in x.src], x.dtype)
  def _alu(self, x:UOp, ops:list[str], dt:DType) -> str:
    # bool ADD/MUL/MAX are OR/AND/OR (as in exec_alu): C's int promotion would make True+True 2 inside a bigger expression
    op = _BOOL_OPS.get(x.op, x.op) if dt == dtypes.bool else x.op
    if (fxn := self.code_for_op.get(op)) is None: raise NotImplementedError(f"{type(self).__name__} can't render {op}")
    ret = fxn(*ops, dtype=dt)
    if x.op in (Ops.IDIV, Ops.MOD) and self.guard_int_div and dtypes.is_int(dt) and not _nonzero_const(x.src[1]): ret = f"(({ops[1]})==0?0:{ret})"
    if dt in self.storage_types and x.op not in _EXACT_OPS: ret = self.render_round(ret, dt)
    return ret

  # *** the kernel ***
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]:
    """Code before the kernel: type definitions and the helper functions the kernel uses."""
    return []
  def render_kernel(self, ctx:CStyleCtx, name:str, kernel:list[str], params:list[str], uops:list[UOp]) -> str:
    local = prod(s.arg[1] if isinstance(s.arg[1], int) else 1024 for s in uops if s.op is Ops.SPECIAL and s.arg.kind is ThreadKind.LOCAL)
    head = f"{self.kernel_typedef.format(launch_bounds=local)} {name}({', '.join(params + self.extra_args)}) {{"
    wmmas = {u.arg[0]: u.arg for u in uops if u.op is Ops.WMMA}
    return "\n".join([*self.render_helpers(ctx, uops), *[self.wmma_helper(a) for a in wmmas.values()], head, *kernel, "}"]) + "\n"

  # *** tensor cores: a WMMA is a call of a helper function the dialect defines before the kernel ***
  def wmma_helper(self, arg:tuple) -> str:
    """The definition of the function __<name> that runs WMMA arg (name, (N, M, K), dtype_in, dtype_out, device, threads, ...) on
    fragments a, b and accumulator c, returning D."""
    raise NotImplementedError(f"{type(self).__name__} can't render WMMA: {arg[0]}")
  def render_wmma(self, ctx:CStyleCtx, x:UOp) -> str:
    self.wmma_helper(x.arg)   # raises where the dialect has no tensor cores
    return f"__{x.arg[0]}({', '.join(ctx.r[s] for s in x.src)})"
  def _wmma_tc(self, arg:tuple) -> TensorCore:
    if (tc := next((t for t in self.tensor_cores if t.name == arg[0]), None)) is None: raise NotImplementedError(f"{self.device} has no {arg[0]}")
    return tc
  def _wmma_types(self, arg:tuple) -> tuple[str, str, str]:
    # the C types of the A and B fragments and of C, from the tensor core's elements per thread
    tc = self._wmma_tc(arg)
    ea, eb, ec = tc.elements_per_thread
    return self.render_dtype(tc.dtype_in.vec(ea)), self.render_dtype(tc.dtype_in.vec(eb)), self.render_dtype(tc.dtype_out.vec(ec))
  def render_let(self, dt:DType, nm:str, expr:str) -> str: return f"const {self.render_dtype(dt)} {nm} = {expr};"   # a named value
  def render_param(self, u:UOp, nm:str, read_only:bool) -> str:
    if u.op is Ops.DEFINE_VAR: return f"{self.arg_int_prefix} {nm}" if u.dtype == dtypes.int32 else f"const {self.render_dtype(u.dtype)} {nm}"
    const = "const " if read_only and self.const_inputs else ""
    return f"{self.buffer_prefix}{const}{self.render_dtype(cast(PtrDType, u.dtype).base, mem=True)}*{self.buffer_restrict} {nm}"

  def render(self, name:str, uops:list[UOp]) -> str:
    ctx = CStyleCtx(self)
    uops = with_sources(uops)
    inline = _inlined(uops)
    stored = {buffer_of(u.src[0]) for u in uops if u.op is Ops.STORE}
    bufs = sorted((u for u in uops if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg)
    dvars = sorted((u for u in uops if u.op is Ops.DEFINE_VAR), key=lambda u: u.arg[0])
    params: list[str] = []
    for u in bufs:
      ctx.r[u] = nm = ctx.fixed_name(f"data{u.arg}")
      params.append(self.render_param(u, nm, u not in stored))
    for u in dvars:
      ctx.r[u] = u.arg[0]
      ctx.used.add(u.arg[0])
      params.append(self.render_param(u, u.arg[0], True))
    if (threads := [u for u in uops if u.op is Ops.SPECIAL and u.arg.kind is ThreadKind.CORE]):
      # a threaded CPU kernel: the thread's index is one more parameter
      for u in threads: ctx.r[u] = "core_id"
      ctx.used.add("core_id")
      params.append(f"{self.arg_int_prefix} core_id")
    kernel: list[str] = []
    depth = 1
    for u in uops:
      if u in ctx.r: continue
      if u.op in (Ops.ENDRANGE, Ops.ENDIF): depth -= 1
      if (s := cast(str|None, self.string_rewrite.rewrite(u, ctx=ctx))) is None:
        raise NotImplementedError(f"{type(self).__name__} can't render {u.op}")
      if u.op in _STATEMENT_OPS:
        if s: kernel.append("  "*depth + s)
      elif u in inline or u.op in _ALWAYS_INLINE or isinstance(u.dtype, PtrDType) or (u.op is Ops.GEP and len(u.arg) == 1):
        ctx.r[u] = s
      else:
        ctx.r[u] = nm = ctx.new_name(_PREFIX.get(u.op, "alu"))
        kernel.append("  "*depth + self.render_let(u.dtype, nm, s))
      if u.op in (Ops.RANGE, Ops.IF): depth += 1
    return self.render_kernel(ctx, name, kernel, params, uops)

def _nonzero_const(u:UOp) -> bool:
  if u.op is Ops.CONST: return u.arg != 0
  return u.op is Ops.VCONST and all(a != 0 for a in u.arg)

# ***** CPU: C compiled by clang or gcc *****

_C_HELPERS: dict[str, str] = {
  # vector trunc: clang's builtin (one instruction); else (gcc has none, libm's is scalar) below 2**mantissa_bits through an int and back
  # with x's sign, x itself above
  "__TG_VTRUNC": """#ifdef __has_builtin
#if __has_builtin(__builtin_elementwise_trunc)
#define __TG_VTRUNC(F, I, SIGN, BIG, x) __builtin_elementwise_trunc(x)
#endif
#endif
#ifndef __TG_VTRUNC
#define __TG_VTRUNC(F, I, SIGN, BIG, x) ({ const I m_ = (((F)((I)(x)&~SIGN))<BIG); \\
  const F t_ = __builtin_convertvector(__builtin_convertvector((F)((I)(x)&m_), I), F); (F)((((I)t_|((I)(x)&SIGN))&m_)|((I)(x)&~m_)); })
#endif""",
  "__half_to_f32": """static inline float __half_to_f32(unsigned short h) {
#ifdef __FLT16_MAX__
  union { unsigned short u; _Float16 f; } c = {h}; return (float)c.f;
#else
  unsigned int s = (unsigned int)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, b;
  if (e == 0x1f) b = s | 0x7f800000 | (m << 13);
  else if (e) b = s | ((e + 112) << 23) | (m << 13);
  else { float f = (float)m * 0x1p-24f; return s ? -f : f; }  /* zero and subnormals are exact in float */
  union { unsigned int u; float f; } c = {b}; return c.f;
#endif
}""",
  "__f32_to_half": """static inline unsigned short __f32_to_half(float f) {
#ifdef __FLT16_MAX__
  union { _Float16 f; unsigned short u; } c = {(_Float16)f}; return c.u;
#else
  union { float f; unsigned int u; } c = {f};
  unsigned int s = (c.u >> 16) & 0x8000, a = c.u & 0x7fffffff;
  if (a > 0x7f800000) return s | 0x7e00 | ((a >> 13) & 0x3ff);  /* nan stays a quiet nan */
  if (a >= 0x477ff000) return s | 0x7c00;                       /* rounds past 65504: inf */
  if (a >= 0x38800000) {                                        /* normal: rebias, round to nearest even */
    unsigned int h = (a >> 13) - (112 << 10), r = a & 0x1fff;
    return s | (h + ((r > 0x1000) | ((r == 0x1000) & h)));
  }
  if (a < 0x33000000) return s;                                 /* at most 2**-25: rounds to zero */
  unsigned int e = a >> 23, m = (a & 0x7fffff) | 0x800000, sh = 126 - e, h = m >> sh, r = m & ((1u << sh) - 1), half = 1u << (sh - 1);
  return s | (h + ((r > half) | ((r == half) & h)));
#endif
}""",
  "__bf16_to_f32": """static inline float __bf16_to_f32(unsigned short h) {
  union { unsigned int u; float f; } c = {(unsigned int)h << 16}; return c.f;
}""",
  "__f32_to_bf16": """static inline unsigned short __f32_to_bf16(float f) {
  union { float f; unsigned int u; } c = {f};
  if ((c.u & 0x7fffffff) > 0x7f800000) return (c.u >> 16) | 0x40;  /* nan stays a quiet nan */
  return (c.u + 0x7fff + ((c.u >> 16) & 1)) >> 16;                 /* round to nearest even */
}""",
  # fp8 as torch has them: e4m3fn (no inf, saturates at 448, 0x7f is nan) and e5m2 (IEEE-like); float -> fp8 rounds to nearest even
  "__fp8e4m3_to_f32": """static inline float __fp8e4m3_to_f32(unsigned char h) {
  unsigned int e = (h >> 3) & 0xf, m = h & 0x7;
  union { unsigned int u; float f; } c = {((e + 120) << 23) | (m << 20)};
  float f = (e == 0xf && m == 0x7) ? __builtin_nanf("") : (e ? c.f : (float)m * 0x1p-9f);
  return (h & 0x80) ? -f : f;
}""",
  "__f32_to_fp8e4m3": """static inline unsigned char __f32_to_fp8e4m3(float f) {
  union { float f; unsigned int u; } c = {f};
  unsigned int s = (c.u >> 24) & 0x80, a = c.u & 0x7fffffff;
  if (a > 0x7f800000) return s | 0x7f;                              /* nan */
  if (a < 0x3c800000) { c.u = a; return s | (unsigned int)__builtin_rintf(c.f * 0x1p9f); }   /* below 2**-6: multiples of 2**-9 */
  unsigned int r = a >> 20, rem = a & 0xfffff;
  r += (rem > 0x80000) | ((rem == 0x80000) & r);                    /* round to nearest even, a carry moves the exponent */
  r -= 120 << 3;
  return s | (r > 0x7e ? 0x7e : r);                                 /* finite overflow and inf saturate to 448 */
}""",
  "__fp8e5m2_to_f32": """static inline float __fp8e5m2_to_f32(unsigned char h) {
  unsigned int e = (h >> 2) & 0x1f, m = h & 0x3;
  union { unsigned int u; float f; } c = {((e + 112) << 23) | (m << 21)};
  float f = e == 0x1f ? (m ? __builtin_nanf("") : __builtin_inff()) : (e ? c.f : (float)m * 0x1p-16f);
  return (h & 0x80) ? -f : f;
}""",
  "__f32_to_fp8e5m2": """static inline unsigned char __f32_to_fp8e5m2(float f) {
  union { float f; unsigned int u; } c = {f};
  unsigned int s = (c.u >> 24) & 0x80, a = c.u & 0x7fffffff;
  if (a > 0x7f800000) return s | 0x7f;                              /* nan */
  if (a < 0x38800000) { c.u = a; return s | (unsigned int)__builtin_rintf(c.f * 0x1p16f); }  /* below 2**-14: multiples of 2**-16 */
  unsigned int r = a >> 21, rem = a & 0x1fffff;
  r += (rem > 0x100000) | ((rem == 0x100000) & r);
  r -= 112 << 2;
  return s | (r > 0x7b ? 0x7c : r);                                 /* past 57344 (and inf): inf */
}"""}

def _storage_helpers(ren:CStyleLanguage, uops:list[UOp]) -> list[str]:
  # the bits<->float conversions of the storage-only types the kernel touches
  used = {st for u in uops for d in (u.dtype, *(s.dtype for s in u.src)) if (st := ren.storage_types.get(d.base.scalar())) is not None}
  return [_C_HELPERS[fn] for st in sorted(used) for fn in st[1:]]

_VEC_NUM_OPS = {Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.MULACC}
_VEC_INT_OPS = {Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR}
def _int_like(dt:DType) -> DType: return {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[dt.scalar().itemsize].vec(dt.count)

class ClangRenderer(CStyleLanguage):
  """C for the CPU device: one function over plain pointers, vectors as GCC vector extensions, half and bfloat16 stored as 16-bit ints."""
  device = "CPU"
  has_local = False
  has_shared = False
  has_threads = True
  packs_operands = True
  max_bufs = 1000   # CPUProgram calls through ctypes, which takes at most 1024 arguments (buffers, vars, core_id)
  vector_alu_lanes = 32
  vector_alu_ops, vector_alu_dtypes = ALL_VECTOR_ALU_OPS, ALL_VECTOR_ALU_DTYPES
  global_max = None
  supports_float4 = True
  buffer_restrict = " restrict"
  const_inputs = True
  float4 = "(float4){"
  float4_close = "}"
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  guard_int_div = True
  supports_prefetch = True
  type_map = {dtypes.bool: "_Bool"}
  storage_types = {dtypes.float16: ("unsigned short", "__half_to_f32", "__f32_to_half"),
                   dtypes.bfloat16: ("unsigned short", "__bf16_to_f32", "__f32_to_bf16"),
                   dtypes.fp8e4m3: ("unsigned char", "__fp8e4m3_to_f32", "__f32_to_fp8e4m3"),
                   dtypes.fp8e5m2: ("unsigned char", "__fp8e5m2_to_f32", "__f32_to_fp8e5m2")}
  # no EXP2/LOG2/SIN/POW: libm's are scalar calls, while our polynomials (uop/transcendental.py, <= ~1 ulp) vectorize with the loop
  code_for_op = {**{k: v for k, v in CStyleLanguage.code_for_op.items() if k not in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW)},
                 Ops.SQRT: _c_math("sqrt"), Ops.TRUNC: _c_math("trunc"),
                 Ops.MOD: lambda a, b, dtype: _c_math("fmod")(a, b, dtype=dtype) if dtypes.is_float(dtype) else f"({a}%{b})",
                 Ops.RECIP: lambda a, dtype: f"({'1.0' if dtype.scalar() == dtypes.float64 else '1.0f'}/{a})"}
  # a read (0) that fills caches from `level` out: the builtin's locality 3 is L1, 2 L2, 1 L3
  def render_prefetch(self, addr:str, level:int, gate:str|None) -> str:
    return ("" if gate is None else f"if ({gate}) ") + f"__builtin_prefetch({addr}, 0, {4 - level});"
  def value_dtype(self, dt:DType) -> DType:
    # a bool vector is a mask of int lanes, -1 or 0, as GNU C vector compares give and bitwise selects take
    return dtypes.int32.vec(dt.count) if dt.count > 1 and dt.scalar() == dtypes.bool else super().value_dtype(dt)
  def render_bool_lane(self, expr:str, i:int) -> str: return f"({expr}[{i}]&1)"
  def render_vectorize(self, lanes:list[str], dt:DType) -> str:
    return super().render_vectorize([f"-({x})" for x in lanes] if dt.scalar() == dtypes.bool else lanes, dt)
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]:
    ret: list[str] = []
    vecs = {self.value_dtype(d) for u in uops for d in (u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype, *(s.dtype for s in u.src))
            if d.count > 1}
    vecs |= {_int_like(d) for d in vecs}   # the bits of a vector in a select or a bitcast
    for dt in sorted(vecs):
      # vector_size (not ext_vector_type) so gcc compiles it too; aligned to the element so any element address can be cast to it
      base, sz = self.render_dtype(dt.scalar()), dt.scalar().itemsize
      ret.append(f"typedef {base} {dt.name} __attribute__((aligned({sz}), vector_size({_next_pow2(dt.count)*sz})));")
    if any(u.op is Ops.TRUNC and u.dtype.count > 1 for u in uops): ret.append(_C_HELPERS["__TG_VTRUNC"])
    return ret + _storage_helpers(self, uops)
  # *** GNU C vectors: one SIMD instruction per op instead of lane-by-lane expressions ***
  def _mask(self, cmp:str, operand:DType) -> str:
    # a vector compare gives lanes as wide as its operands: bool vectors are int lanes
    if self.value_dtype(operand).scalar().itemsize == 4: return cmp
    return f"__builtin_convertvector({cmp}, {self.render_dtype(dtypes.int32.vec(operand.count))})"
  def _select(self, m:str, a:str, b:str, dt:DType, mask_fits:bool=False) -> str:
    # m ? a : b on the bits (C has no vector ?: in gcc or clang); the -1/0 mask is resized to the lanes unless it fits already
    bits = self.render_dtype(_int_like(self.value_dtype(dt)))
    if not mask_fits and self.value_dtype(dt).scalar().itemsize != 4: m = f"__builtin_convertvector({m}, {bits})"
    return f"(({self.render_dtype(dt)})((({bits}){a}&{m})|(({bits}){b}&~{m})))"
  def _trunc(self, a:str, dt:DType) -> str:
    f, i, sdt = self.render_dtype(dt), self.render_dtype(_int_like(dt)), dt.scalar()
    sign, big = self.render_const(-2**(8*sdt.itemsize-1), _int_like(sdt)), self.render_const(2.0**dtypes.finfo(sdt)[1], sdt)
    return f"__TG_VTRUNC({f}, {i}, {sign}, {big}, {a})"
  def _vector_alu(self, x:UOp, ops:list[str]) -> str|None:
    dt, sdt = x.dtype, x.src[-1].dtype
    if any(d.scalar() in self.storage_types for d in (dt, *(s.dtype for s in x.src))): return None
    if sdt.scalar() == dtypes.bool and x.op in GroupOp.Comparison:
      return {Ops.CMPNE: "({0}^{1})", Ops.CMPEQ: "(~({0}^{1}))", Ops.CMPLT: "(~{0}&{1})"}[x.op].format(*ops)
    if x.op in GroupOp.Comparison: return self._mask(self.code_for_op[x.op](*ops, dtype=sdt), sdt)
    if x.op is Ops.WHERE: return self._select(ops[0], ops[1], ops[2], dt)
    if dt.scalar() == dtypes.bool:
      op = _BOOL_OPS.get(x.op, x.op)
      return f"(~{ops[0]})" if op is Ops.NEG else self.code_for_op[op](*ops, dtype=dt) if op in (Ops.AND, Ops.OR, Ops.XOR) else None
    if x.op is Ops.MAX: return self._select(f"({ops[1]}>{ops[0]})", ops[1], ops[0], dt, mask_fits=True)
    if x.op is Ops.TRUNC and dtypes.is_float(dt): return self._trunc(ops[0], dt)
    if x.op in (Ops.FDIV, Ops.RECIP) or x.op in _VEC_INT_OPS and dtypes.is_int(dt) or x.op in _VEC_NUM_OPS:
      return self.code_for_op[x.op](*ops, dtype=dt)
    return None
  def render_alu(self, ctx:CStyleCtx, x:UOp) -> str:
    if x.dtype.count > 1 and (ret := self._vector_alu(x, [ctx.r[s] for s in x.src])) is not None: return ret
    return super().render_alu(ctx, x)
  def render_cast_uop(self, ctx:CStyleCtx, x:UOp) -> str:
    src, dt = x.src[0], x.dtype
    if dt.count == 1 or isinstance(dt, PtrDType) or dt.scalar() in self.storage_types: return super().render_cast_uop(ctx, x)
    if dt.scalar() == dtypes.bool and src.dtype.scalar() not in self.storage_types:
      return self._mask(f"({ctx.r[src]}!={self.render_const(0, src.dtype)})", src.dtype)
    if src.dtype.scalar() != dtypes.bool and self.value_dtype(src.dtype) == self.value_dtype(dt): return ctx.r[src]   # e.g. half -> float
    if src.dtype.scalar() in self.storage_types: return super().render_cast_uop(ctx, x)
    # a mask's -1 is a bool's 1
    return f"__builtin_convertvector({'-' if src.dtype.scalar() == dtypes.bool else ''}{ctx.r[src]}, {self.render_dtype(dt)})"

# ***** GPU dialects (rendered here, compiled and run by their runtimes) *****

class OpenCLRenderer(CStyleLanguage):
  device = "GPU"
  dtypes_supported = frozenset(d for d in DTYPES_DICT.values() if d not in dtypes.fp8s and d != dtypes.bfloat16)
  kernel_typedef = "__kernel void"
  buffer_prefix = "__global "
  smem_align = "__attribute__ ((aligned (16))) "
  smem_prefix = "__local "
  smem_prefix_for_cast = "__local "
  barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
  float4 = "(float4)("
  code_for_workitem = {"g": lambda d: f"get_group_id({d})", "l": lambda d: f"get_local_id({d})"}
  type_map = {dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.uint16: "ushort", dtypes.uint32: "uint", dtypes.uint64: "ulong"}
  mem_type_map = {dtypes.bool: "uchar"}   # bool pointers can't be kernel arguments
  int_suffix = {dtypes.int64: "l", dtypes.uint64: "ul", dtypes.uint32: "u"}
  # OpenCL C has no bfloat16 or fp8: they are kept as bits and computed in float like on CPU (and half too where cl_khr_fp16 is missing)
  storage_types = {k: v for k, v in ClangRenderer.storage_types.items() if k != dtypes.float16}
  def __init__(self, fp16:bool=True):
    self.fp16 = fp16
    if not fp16: self.storage_types = {**self.storage_types, dtypes.float16: ClangRenderer.storage_types[dtypes.float16]}
  def __reduce__(self): return self.__class__, (self.fp16,)
  vector_alu_lanes = 4
  def vector_name(self, dt:DType) -> str: return f"{self.render_dtype(dt.scalar())}{dt.count}"
  def render_lane(self, expr:str, i:int) -> str: return f"{expr}.s{i:x}"
  def render_bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str: return f"as_{self.render_dtype(to_dt)}({expr})"
  # vloadN/vstoreN need only the element's alignment, where a float4* dereference needs 16 bytes; a buffer of vectors (a group reduce's
  # shared memory) is indexed by whole vectors
  def render_vload(self, addr:str, buf:UOp, dt:DType) -> str:
    return f"(*{addr})" if cast(PtrDType, buf.dtype).base.count == dt.count else f"vload{dt.count}(0, {addr})"
  def render_vstore(self, addr:str, buf:UOp, v:str, dt:DType) -> str:
    return f"*{addr} = {v};" if cast(PtrDType, buf.dtype).base.count == dt.count else f"vstore{dt.count}({v}, 0, {addr});"
  def render_alu(self, ctx:CStyleCtx, x:UOp) -> str:
    # OpenCL C computes on its vector types as a whole
    if x.dtype.count > 1 and x.op in self.vector_alu_ops and x.dtype.scalar() in self.vector_alu_dtypes:
      return self.code_for_op[x.op](*[ctx.r[s] for s in x.src], dtype=x.dtype)
    return super().render_alu(ctx, x)
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]:
    dts = {d.base.scalar() for u in uops for d in (u.dtype,)}
    return (["#pragma OPENCL EXTENSION cl_khr_fp16 : enable"] if dtypes.float16 in dts and self.fp16 else []) + \
           (["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if dtypes.float64 in dts else []) + _storage_helpers(self, uops)

_PTX_TYPE = {dtypes.half: "f16", dtypes.bfloat16: "bf16", dtypes.float: "f32"}

_CUDA_SCALAR = {dtypes.half: "half", dtypes.bfloat16: "nv_bfloat16", dtypes.float64: "double"}
class CUDARenderer(CStyleLanguage):
  device = "CUDA"
  tensor_cores = cuda_tcs
  global_max = (2**31-1, 65535, 65535)
  local_max = (1024, 1024, 64)
  shared_max = 49152
  kernel_typedef = 'extern "C" __global__ void __launch_bounds__({launch_bounds})'
  smem_prefix = "__shared__ __align__(16) "
  barrier = "__syncthreads();"
  float4 = "make_float4("
  def __init__(self, arch:str="sm_80"):
    # mma.sync m16n8k16 (half and bfloat16 in) needs sm_80: older archs get no tensor cores
    self.arch = arch
    self.tensor_cores = cuda_tcs if int("".join(c for c in arch[3:] if c.isdigit()) or 0) >= 80 else []
  def __reduce__(self): return self.__class__, (self.arch,)
  def __repr__(self): return f"{type(self).__name__}({self.arch!r})"
  code_for_workitem = {"g": lambda d: f"blockIdx.{'xyz'[d]}", "l": lambda d: f"threadIdx.{'xyz'[d]}"}
  type_map = {dtypes.bfloat16: "nv_bfloat16"}
  # fp8 is kept as bits and computed in float, with the C helpers (NVRTC's -default-device makes them device functions)
  storage_types = {k: v for k, v in ClangRenderer.storage_types.items() if k in dtypes.fp8s}
  # int / half (or nv_bfloat16) is ambiguous in C++: cuda_fp16.h's operator/ or the built-in one through float
  # and pow(half, half) is ambiguous between pow(float, float) and pow(float, int): computed in float
  code_for_op = {**CStyleLanguage.code_for_op, Ops.RECIP: lambda a, dtype: f"(({_CUDA_SCALAR.get(dtype.scalar(), 'float')})1.0f/{a})",
                 Ops.POW: lambda a, b, dtype: f"(({_CUDA_SCALAR[dtype.scalar()]})powf((float){a}, (float){b}))"
                   if dtype.scalar() in (dtypes.half, dtypes.bfloat16) else f"pow({a}, {b})"}
  # vectors CUDA has as built-in types (make_float4 ...); others are declared as structs
  _native_vec = {dtypes.float32: "float", dtypes.float64: "double", dtypes.int32: "int", dtypes.uint32: "uint", dtypes.int8: "char",
                 dtypes.uint8: "uchar", dtypes.int16: "short", dtypes.uint16: "ushort", dtypes.int64: "longlong", dtypes.uint64: "ulonglong"}
  # half2 comes with cuda_fp16.h (and make_half2): declaring it again would clash
  def _is_native(self, dt:DType) -> bool: return dt.scalar() in self._native_vec and dt.count in (2, 3, 4) or dt == dtypes.half.vec(2)
  def vector_name(self, dt:DType) -> str:
    return f"{self._native_vec[dt.scalar()]}{dt.count}" if dt.scalar() in self._native_vec and dt.count in (2, 3, 4) else dt.name
  def render_lane(self, expr:str, i:int) -> str: return f"{expr}.{'xyzwabcdefghijkl'[i]}"
  def render_vectorize(self, lanes:list[str], dt:DType) -> str: return f"make_{self.vector_name(dt)}({','.join(lanes)})"
  def render_bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str: return f"tg_bitcast<{self.render_dtype(to_dt)}>({expr})"
  def wmma_helper(self, arg:tuple) -> str:
    # mma.sync in inline PTX: the fragments travel as 32-bit registers holding two 16-bit elements each, C as floats, updated in place
    (n, m, k), di, do = arg[1], arg[2], arg[3]
    ta, tb, tcc = self._wmma_types(arg)
    na, nb, nc = [e * dt.itemsize // 4 for e, dt in zip(self._wmma_tc(arg).elements_per_thread, (di, di, do))]
    regs = iter(f"%{i}" for i in range(nc + na + nb))
    cr, ar, br = [", ".join(next(regs) for _ in range(cnt)) for cnt in (nc, na, nb)]
    outs = ", ".join(f'"+f"({self.render_lane("c", i)})' for i in range(nc))
    ins = ", ".join([f'"r"(A[{i}])' for i in range(na)] + [f'"r"(B[{i}])' for i in range(nb)])
    ptx = f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{_PTX_TYPE[do]}.{_PTX_TYPE[di]}.{_PTX_TYPE[di]}.{_PTX_TYPE[do]}"
    return (f"__device__ __forceinline__ {tcc} __{arg[0]}({ta} a, {tb} b, {tcc} c) {{\n"
            f"  const unsigned *A = (const unsigned *)&a, *B = (const unsigned *)&b;\n"
            f'  asm("{ptx} {{{cr}}}, {{{ar}}}, {{{br}}}, {{{cr}}};" : {outs} : {ins});\n  return c;\n}}')
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]:
    dts = {u.dtype.base for u in uops}
    ret = ["#define INFINITY (__int_as_float(0x7f800000))", "#define NAN (__int_as_float(0x7fffffff))",
           "template <class T, class F> __device__ __forceinline__ T tg_bitcast(F v) { union { F f; T t; } u; u.f = v; return u.t; }"]
    if any(d.scalar() == dtypes.float16 for d in dts): ret.append("#include <cuda_fp16.h>")
    if any(d.scalar() == dtypes.bfloat16 for d in dts): ret.append("#include <cuda_bf16.h>")
    for dt in sorted(d for d in dts if d.count > 1 and not self._is_native(d)):
      s, names = self.render_dtype(dt.scalar()), "xyzwabcdefghijkl"[:dt.count]
      ret.append(f"struct __align__({dt.itemsize}) {dt.name} {{ {s} {', '.join(names)}; }};")
      ret.append(f"__device__ __forceinline__ {dt.name} make_{dt.name}({', '.join(f'{s} {n}' for n in names)}) "
                 f"{{ {dt.name} r = {{{', '.join(names)}}}; return r; }}")
    if (fp8 := _storage_helpers(self, uops)):
      ret.append("#define __builtin_nanf(x) NAN\n#define __builtin_inff() INFINITY\n#define __builtin_rintf rintf")
    return ret + fp8

class MetalRenderer(CStyleLanguage):
  device = "METAL"
  dtypes_supported = frozenset(d for d in DTYPES_DICT.values() if d not in dtypes.fp8s and d != dtypes.float64)
  tensor_cores = metal_tcs
  shared_max = 32768
  kernel_typedef = "kernel void"
  buffer_prefix = "device "
  arg_int_prefix = "constant int&"
  smem_prefix = "threadgroup __attribute__((aligned(16))) "
  smem_prefix_for_cast = "threadgroup "
  barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
  float4 = "float4("
  extra_args = ["uint3 gid [[threadgroup_position_in_grid]]", "uint3 lid [[thread_position_in_threadgroup]]"]
  code_for_workitem = {"g": lambda d: f"gid.{'xyz'[d]}", "l": lambda d: f"lid.{'xyz'[d]}"}
  type_map = {dtypes.bfloat16: "bfloat", dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.uint16: "ushort", dtypes.uint32: "uint",
              dtypes.uint64: "ulong"}
  int_suffix = {dtypes.int64: "l", dtypes.uint64: "ul", dtypes.uint32: "u"}
  def vector_name(self, dt:DType) -> str: return f"{self.render_dtype(dt.scalar())}{dt.count}"
  vector_alu_lanes = 4
  # packed vectors need only their element's alignment (a float4* needs 16 bytes, which a vector at any element offset doesn't have)
  def render_vload(self, addr:str, buf:UOp, dt:DType) -> str:
    return f"{self.render_dtype(dt)}(*(({self._ptr_prefix(buf)}packed_{self.render_dtype(dt)}*){addr}))"
  def render_vstore(self, addr:str, buf:UOp, v:str, dt:DType) -> str:
    return f"*(({self._ptr_prefix(buf)}packed_{self.render_dtype(dt)}*){addr}) = {v};"
  def render_bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str: return f"as_type<{self.render_dtype(to_dt)}>({expr})"
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]: return ["#include <metal_stdlib>", "using namespace metal;"]
  def wmma_helper(self, arg:tuple) -> str:
    # simdgroup 8x8 matrices: each thread's two thread_elements() are its fragment
    ta, tb, tcc = self._wmma_types(arg)
    si, so = self.render_dtype(arg[2]), self.render_dtype(arg[3])
    fill = "".join(f"\n  m{x}.thread_elements()[0] = {x}[0]; m{x}.thread_elements()[1] = {x}[1];" for x in "abc")
    return (f"{tcc} __{arg[0]}({ta} a, {tb} b, {tcc} c) {{\n  simdgroup_{si}8x8 ma, mb; simdgroup_{so}8x8 mc;{fill}\n"
            f"  simdgroup_multiply_accumulate(mc, ma, mb, mc);\n  return {tcc}(mc.thread_elements()[0], mc.thread_elements()[1]);\n}}")

def _ocml(fxn:str) -> Callable[..., str]:
  return lambda *a, dtype: f"__ocml_{fxn}_f{64 if dtype.scalar() == dtypes.float64 else 32}({', '.join(a)})"

class AMDRenderer(CStyleLanguage):
  """HIP C++ for AMD GPUs, compiled by clang for amdgcn."""
  device = "AMD"
  tensor_cores = amd_tcs
  shared_max = 65536
  kernel_typedef = 'extern "C" __attribute__((global)) void __attribute__((amdgpu_flat_work_group_size(1, {launch_bounds})))'
  smem_prefix = "__attribute__((shared, aligned(16))) "
  barrier = '__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); ' \
            '__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");'
  float4 = "(float4){"
  float4_close = "}"
  infinity = "__builtin_inff()"
  nan = '__builtin_nanf("")'
  def __init__(self, arch:str="gfx1100"):
    # WMMA on RDNA3 (wave32), MFMA on CDNA2/3 (wave64), none elsewhere
    self.arch, self.tensor_cores = arch, amd_tcs if arch.startswith("gfx11") else amd_mfma_tcs if arch in ("gfx90a", "gfx940", "gfx942") else []
  def __reduce__(self): return self.__class__, (self.arch,)
  def __repr__(self): return f"AMDRenderer({self.arch!r})"
  code_for_workitem = {"g": lambda d: f"__ockl_get_group_id({d})", "l": lambda d: f"__ockl_get_local_id({d})"}
  type_map = {dtypes.float16: "_Float16"}
  # clang before 17 has no __bf16 arithmetic on AMDGPU: bfloat16 (and fp8) are bits computed in float, as on CPU
  storage_types = {k: v for k, v in ClangRenderer.storage_types.items() if k != dtypes.float16}
  # transcendentals from ROCm's device library (ocml): the llvm.exp2/sin intrinsics that __builtin_* give have no f64 lowering on AMDGPU
  code_for_op = {**CStyleLanguage.code_for_op, Ops.SQRT: _c_math("sqrt"), Ops.TRUNC: _c_math("trunc"),
                 **{op: _ocml(op.name.lower()) for op in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW)}}
  def render_bitcast(self, expr:str, from_dt:DType, to_dt:DType) -> str: return f"__builtin_bit_cast({self.render_dtype(to_dt)}, {expr})"
  vector_alu_lanes = 4
  # vectors at any element offset: memcpy needs only the element's alignment, where a float4* dereference promises 16 bytes
  def render_vload(self, addr:str, buf:UOp, dt:DType) -> str:
    return f"({{ {self.render_dtype(dt)} v; __builtin_memcpy(&v, {addr}, sizeof(v)); v; }})"
  def render_vstore(self, addr:str, buf:UOp, v:str, dt:DType) -> str:
    return f"{{ {self.render_dtype(dt)} v = {v}; __builtin_memcpy({addr}, &v, sizeof(v)); }}"
  def wmma_helper(self, arg:tuple) -> str:
    # RDNA3 wave32 WMMA / CDNA wave64 MFMA: the builtin takes the whole fragments as vectors
    ta, tb, tcc = self._wmma_types(arg)
    call = "__builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c)" if arg[5] == 32 else "__builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0)"
    return f"static inline __attribute__((device)) {tcc} __{arg[0]}({ta} a, {tb} b, {tcc} c) {{ return {call}; }}"
  def render_helpers(self, ctx:CStyleCtx, uops:list[UOp]) -> list[str]:
    ret = [f'extern "C" __attribute__((device, const)) unsigned long __ockl_get_{n}_id(unsigned int);' for n in ("group", "local", "global")]
    ret += [f'extern "C" __attribute__((device, const)) {t} __ocml_{fn}_f{b}({t}{", " + t if fn == "pow" else ""});'
            for fn in ("exp2", "log2", "sin", "pow") for t, b in (("float", 32), ("double", 64))]
    for dt in sorted({self.value_dtype(d) for u in uops for d in (u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype,) if d.count > 1}):
      ret.append(f"typedef {self.render_dtype(dt.scalar())} {dt.name} __attribute__((ext_vector_type({dt.count})));")
    # the bits <-> float helpers become device functions too
    return ret + (["#pragma clang force_cuda_host_device begin", *helpers, "#pragma clang force_cuda_host_device end"]
                  if (helpers := _storage_helpers(self, uops)) else [])

class IntelRenderer(OpenCLRenderer):
  """OpenCL C for Intel GPUs, with XMX tensor cores through cl_intel_subgroup_matrix_multiply_accumulate."""
  suffix = "INTEL"
  tensor_cores = intel_tcs
  def wmma_helper(self, arg:tuple) -> str:
    # A is packed as ints (subgroup 8: two halves of a row per int) or shorts (subgroup 16: one half per row), B as ints of two halves
    ta, tb, tcc = self._wmma_types(arg)
    pa = "as_int8" if arg[5] == 8 else "as_short8"
    return f"{tcc} __{arg[0]}({ta} a, {tb} b, {tcc} c) {{ return intel_sub_group_f16_f16_matrix_mad_k16({pa}(a), as_int8(b), c); }}"
  def render_kernel(self, ctx:CStyleCtx, name:str, kernel:list[str], params:list[str], uops:list[UOp]) -> str:
    # the matrix functions need the subgroup (the warp) of the tensor core's size
    if not (sgs := {u.arg[5] for u in uops if u.op is Ops.WMMA}): return super().render_kernel(ctx, name, kernel, params, uops)
    src = super().render_kernel(ctx, name, kernel, params, uops)
    src = src.replace("__kernel void", f"__attribute__((intel_reqd_sub_group_size({max(sgs)}))) __kernel void")
    return "#pragma OPENCL EXTENSION cl_intel_subgroup_matrix_multiply_accumulate : enable\n" + src
