# hand-built linear programs, rendered to C (run through the CPU runtime) and to the PYTHON device, checked against numpy
import math, re, struct
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, ThreadId, ThreadKind
from tinygrad.dtype import DType, dtypes
from tinygrad.renderer.cstyle import ClangRenderer, OpenCLRenderer, CUDARenderer, MetalRenderer, AMDRenderer, with_sources
from tinygrad.runtime.ops_python import PythonRenderer, PythonCompiler, PythonProgram

f32, i32, i64 = dtypes.float32, dtypes.int32, dtypes.int64

def cpu_runtime():
  try: from tinygrad.runtime.ops_cpu import CPUCompiler, CPUProgram, find_cc
  except ImportError: pytest.skip("no CPU runtime")
  if find_cc() is None: pytest.skip("no C compiler")
  return CPUCompiler, CPUProgram

def run_cpu(uops:list[UOp], bufs:list[np.ndarray], vals=(), global_size=(1, 1, 1)):
  CPUCompiler, CPUProgram = cpu_runtime()
  src = ClangRenderer().render("test", uops)
  prg = CPUProgram("test", CPUCompiler().compile_cached(src))
  prg(*[b.ctypes.data for b in bufs], global_size=global_size, vals=tuple(vals))

def run_python(uops:list[UOp], bufs:list[np.ndarray], vals=(), global_size=(1, 1, 1)):
  prg = PythonProgram("test", PythonCompiler().compile(PythonRenderer().render("test", uops)))
  prg(*[memoryview(b) for b in bufs], global_size=global_size, vals=tuple(vals))

@pytest.fixture(params=["CPU", "PYTHON"])
def run(request):
  if request.param == "CPU": cpu_runtime()
  return run_cpu if request.param == "CPU" else run_python

def g(i:int, dt:DType, size:int) -> UOp: return UOp(Ops.DEFINE_GLOBAL, dt.ptr(size), arg=i)
def c(v, dt:DType=f32) -> UOp: return UOp.const(dt, v)
def alu(op:Ops, *src:UOp) -> UOp: return src[0].alu(op, *src[1:])
def end(r:UOp) -> UOp: return UOp(Ops.ENDRANGE, src=(r,))
def prog(*items:UOp) -> list[UOp]: return with_sources(list(items))

def elementwise(fxn, n:int, in_dts:list[DType], out_dt:DType) -> list[UOp]:
  """out[i] = fxn(*(in_k[i])) over one loop"""
  out, ins = g(0, out_dt, n), [g(k+1, dt, n) for k, dt in enumerate(in_dts)]
  r = UOp.range(i32, n, 0)
  return prog(out, *ins, r, out.index(r).store(fxn(*[b.index(r).load() for b in ins])), end(r))

# ***** programs *****

def test_elementwise(run):
  a, b = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
  out = np.zeros(64, np.float32)
  run(elementwise(lambda x, y: alu(Ops.MULACC, x, y, c(1.0)) / y, 64, [f32, f32], f32), [out, a, b])
  np.testing.assert_allclose(out, (a*b+1)*(1/b), rtol=1e-6)

def test_reduce_with_acc(run):
  a = np.random.default_rng(1).standard_normal(8*16).astype(np.float32)
  out, inp = g(0, f32, 8), g(1, f32, 128)
  r0, r1 = UOp.range(i32, 8, 0), UOp.range(i32, 16, 1)
  acc = UOp(Ops.DEFINE_ACC, f32, (c(0.0), r1), (0,))
  upd = acc.assign(acc + inp.index(r0*16 + r1).load())
  macc = UOp(Ops.DEFINE_ACC, f32, (c(-math.inf), r1), (1,))
  mupd = macc.assign(alu(Ops.MAX, macc, inp.index(r0*16 + r1).load()))
  uops = prog(out, inp, r0, acc, macc, r1, upd, mupd, end(r1), out.index(r0).store(upd * mupd), end(r0))
  out_np = np.zeros(8, np.float32)
  run(uops, [out_np, a])
  np.testing.assert_allclose(out_np, a.reshape(8, 16).sum(1) * a.reshape(8, 16).max(1), rtol=1e-5)

def test_gated_load_padding(run):
  # out[i] = a[i-3] for 3 <= i < 13, else 0: the masked-off addresses are out of bounds and must never be read
  a = np.arange(1, 11, dtype=np.float32)
  out, inp = g(0, f32, 16), g(1, f32, 10)
  r = UOp.range(i32, 16, 0)
  gate = alu(Ops.AND, r.alu(Ops.CMPLT, c(13, i32)), c(3, i32).alu(Ops.CMPLT, r + 1))
  uops = prog(out, inp, r, out.index(r).store(inp.index(alu(Ops.SUB, r, c(3, i32)), gate).load() + 0.5), end(r))
  out_np = np.full(16, 7, np.float32)
  run(uops, [out_np, a])
  np.testing.assert_equal(out_np, np.pad(a, (3, 3)) + 0.5)

def test_gated_store_and_if(run):
  out = g(0, i32, 16)
  r = UOp.range(i32, 16, 0)
  even = r.alu(Ops.MOD, c(2, i32)).alu(Ops.CMPEQ, c(0, i32))
  iff = UOp(Ops.IF, src=(r.alu(Ops.CMPLT, c(4, i32)),))
  uops = prog(out, r, out.index(r*1, even).store(r*10), iff, out.index(r).store(r+100), UOp(Ops.ENDIF, src=(iff,)), end(r))
  out_np = np.full(16, -1, np.int32)
  run(uops, [out_np])
  exp = np.where(np.arange(16) % 2 == 0, np.arange(16)*10, -1)
  exp[:4] = np.arange(4) + 100
  np.testing.assert_equal(out_np, exp)

def test_float4(run):
  a = np.arange(32, dtype=np.float32)
  out, inp = g(0, f32, 32), g(1, f32, 32)
  r = UOp.range(i32, 8, 0)
  v = inp.index(r*4).load(dtype=f32.vec(4))
  w = v * UOp(Ops.VCONST, f32.vec(4), arg=(1.0, 2.0, 3.0, 4.0))
  rev = UOp(Ops.VECTORIZE, f32.vec(4), tuple(w.gep(i) for i in (3, 2, 1, 0)))
  lo2 = rev.gep((0, 1))   # a float2 of lanes, stored with its own vector store
  bcast = UOp(Ops.VECTORIZE, f32.vec(4), (lo2.gep(0),)*4)
  uops = prog(out, inp, r, out.index(r*4).store(rev + bcast), end(r))
  out_np = np.zeros(32, np.float32)
  run(uops, [out_np, a])
  w_np = a.reshape(8, 4) * np.array([1, 2, 3, 4], np.float32)
  exp = w_np[:, ::-1] + w_np[:, 3:4]
  np.testing.assert_equal(out_np, exp.reshape(-1))

def test_vector_odd_width_and_gated_vector_load(run):
  a = np.arange(12, dtype=np.float32)
  out, inp = g(0, f32, 12), g(1, f32, 12)
  r = UOp.range(i32, 4, 0)
  v = inp.index(r*3, r.alu(Ops.CMPNE, c(2, i32))).load(dtype=f32.vec(3))
  uops = prog(out, inp, r, out.index(r*3).store(v + v), end(r))
  out_np = np.full(12, 5, np.float32)
  run(uops, [out_np, a])
  exp = (a*2).reshape(4, 3)
  exp[2] = 0
  np.testing.assert_equal(out_np, exp.reshape(-1))

def test_half(run):
  a = np.random.default_rng(2).standard_normal(32).astype(np.float16)
  h = dtypes.float16
  def fxn(x, y):
    s = (x * y) + x                                 # half arithmetic, rounded at every op
    return (s.cast(f32) * 3.0).sqrt().cast(h) + y   # through float and back
  out = np.zeros(32, np.float16)
  b = np.abs(a) + np.float16(1)
  run(elementwise(fxn, 32, [h, h], h), [out, np.abs(a), b])
  x, y = np.abs(a), b
  exp = np.sqrt((x*y+x).astype(np.float32) * 3).astype(np.float16) + y
  np.testing.assert_equal(out, exp)

def f32_to_bf16_bits(x:np.ndarray) -> np.ndarray:
  b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
  return ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)
def bf16_bits_to_f32(b:np.ndarray) -> np.ndarray: return (b.astype(np.uint32) << 16).view(np.float32)

def test_bfloat16(run):
  bf = dtypes.bfloat16
  x = np.random.default_rng(3).standard_normal(32).astype(np.float32) * 100
  xb = f32_to_bf16_bits(x)
  out_bf, out_f = np.zeros(32, np.uint16), np.zeros(32, np.float32)
  o1, o2, inp = g(0, bf, 32), g(1, f32, 32), g(2, bf, 32)
  r = UOp.range(i32, 32, 0)
  v = inp.index(r).load()
  s = v * v.const_like(1.5) + v                   # bf16 arithmetic, rounded at every op
  uops = prog(o1, o2, inp, r, o1.index(r).store(s), o2.index(r).store((v.cast(f32) / 3.0).cast(bf).cast(f32)), end(r))
  run(uops, [out_bf, out_f, xb])
  xv = bf16_bits_to_f32(xb)
  t = bf16_bits_to_f32(f32_to_bf16_bits(xv * np.float32(1.5)))
  np.testing.assert_equal(out_bf, f32_to_bf16_bits(t + xv))
  np.testing.assert_equal(out_f, bf16_bits_to_f32(f32_to_bf16_bits(xv * (np.float32(1) / np.float32(3)))))

def test_int64_index(run):
  a = np.arange(40, dtype=np.int64) * (1 << 33)
  out, inp = g(0, i64, 20), g(1, i64, 40)
  r = UOp.range(i32, 20, 0)
  idx = r.cast(i64) * c(2, i64) + c(1, i64)
  uops = prog(out, inp, r, out.index(r).store(inp.index(idx).load() + c(-(1 << 40), i64)), end(r))
  src = ClangRenderer().render("test", uops)
  assert "2ll" in src and "long" in src
  out_np = np.zeros(20, np.int64)
  run(uops, [out_np, a])
  np.testing.assert_equal(out_np, a[1::2] - (1 << 40))

def test_variable_loop_end(run):
  n = UOp(Ops.DEFINE_VAR, i32, arg=("n", 1, 32))
  out = g(0, i32, 32)
  r = UOp(Ops.RANGE, i32, (n,), 0)
  uops = prog(out, n, r, out.index(r).store(r * r), end(r))
  out_np = np.full(32, -1, np.int32)
  run(uops, [out_np], vals=(10,))
  np.testing.assert_equal(out_np, np.where(np.arange(32) < 10, np.arange(32)**2, -1))

def test_threads_core_id(run):
  core = UOp(Ops.SPECIAL, i32, (), ThreadId.make(ThreadKind.CORE, 0, 4))
  out = g(0, i32, 16)
  r = UOp.range(i32, 4, 0)
  uops = prog(out, core, r, out.index(core*4 + r).store(core*100 + r), end(r))
  src = ClangRenderer().render("test", uops)
  assert re.search(r"void test\(int\* restrict data0, const int core_id\)", src), src
  out_np = np.zeros(16, np.int32)
  run(uops, [out_np], global_size=(4, 1, 1))
  np.testing.assert_equal(out_np, (np.arange(16)//4)*100 + np.arange(16) % 4)

def test_int_div_mod_semantics(run):
  a = np.array([7, -7, 7, -7, 0, 5, -5, 2**31-1], np.int32)
  b = np.array([2, 2, -2, -2, 3, 0, 0, 7], np.int32)
  out_d, out_m = np.zeros(8, np.int32), np.zeros(8, np.int32)
  d0, d1, ia, ib = g(0, i32, 8), g(1, i32, 8), g(2, i32, 8), g(3, i32, 8)
  r = UOp.range(i32, 8, 0)
  x, y = ia.index(r).load(), ib.index(r).load()
  uops = prog(d0, d1, ia, ib, r, d0.index(r).store(alu(Ops.IDIV, x, y)), d1.index(r).store(alu(Ops.MOD, x, y)), end(r))
  run(uops, [out_d, out_m, a, b])
  with np.errstate(divide="ignore", invalid="ignore"):
    np.testing.assert_equal(out_d, np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int32))
    np.testing.assert_equal(out_m, np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))))

def test_compare_where_max_nan(run):
  a = np.array([1.0, np.nan, -2.0, 3.0, np.inf, -0.0], np.float32)
  b = np.array([np.nan, 1.0, -3.0, 3.0, 1.0, 0.0], np.float32)
  fxn = lambda x, y: alu(Ops.WHERE, x.alu(Ops.CMPLT, y), c(10.0), c(0.0)) + alu(Ops.MAX, x, y)
  out = np.zeros(6, np.float32)
  run(elementwise(fxn, 6, [f32, f32], f32), [out, a, b])
  exp = np.array([max(x, y) for x, y in zip(a.tolist(), b.tolist())], np.float32) + np.where(a < b, 10, 0).astype(np.float32)
  np.testing.assert_equal(out, exp)

def test_bool_ops(run):
  # bool ADD/MUL/MAX are OR/AND/OR, NEG is not: a cast to int after them must see 0/1, never 2
  a, b = np.array([0, 0, 1, 1], np.bool_), np.array([0, 1, 0, 1], np.bool_)
  fxn = lambda x, y: ((x + y).cast(i32)*1000 + (x * y).cast(i32)*100 + alu(Ops.MAX, x, y).cast(i32)*10 + alu(Ops.NEG, x).cast(i32) +
                      alu(Ops.XOR, x, y).cast(i32)*10000)
  out = np.zeros(4, np.int32)
  run(elementwise(fxn, 4, [dtypes.bool, dtypes.bool], i32), [out, a, b])
  np.testing.assert_equal(out, (a | b)*1000 + (a & b)*100 + (a | b)*10 + ~a + (a ^ b)*10000)

def test_transcendental(run):
  a = np.linspace(0.1, 4, 64, dtype=np.float32)
  fxn = lambda x: x.sqrt() + x.alu(Ops.RECIP) + (x*3.3).alu(Ops.TRUNC) + alu(Ops.MOD, x, c(0.7))
  exp = np.sqrt(a) + 1/a + np.trunc(a*np.float32(3.3)) + np.fmod(a, np.float32(0.7))
  if run is run_python:   # the C renderer leaves exp2/log2/sin/pow to the polynomial decompositions, which vectorize
    fxn = lambda x: x.sqrt() + x.alu(Ops.EXP2) + x.alu(Ops.LOG2) + x.alu(Ops.SIN) + x.alu(Ops.RECIP) + (x*3.3).alu(Ops.TRUNC) + \
      alu(Ops.POW, x, c(1.5)) + alu(Ops.MOD, x, c(0.7))
    exp = exp + np.exp2(a) + np.log2(a) + np.sin(a) + a**1.5
  out = np.zeros(64, np.float32)
  run(elementwise(fxn, 64, [f32], f32), [out, a])
  np.testing.assert_allclose(out, exp, rtol=1e-5)

def test_clang_leaves_transcendentals_to_decompositions():
  from tinygrad.renderer.cstyle import ClangRenderer
  assert not {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW} & set(ClangRenderer.code_for_op)

LITERALS = [(f32, [0.1, -0.0, 1e-30, 3.4e38, 1e-45, math.inf, -math.inf, 16777217.0]), (dtypes.float64, [0.1, 1e-300, -2.5e300, math.inf, 5e-324]),
            (i32, [-2**31, 2**31-1, -5, 0]), (i64, [-2**63, 2**63-1, -(1 << 40)]), (dtypes.uint32, [2**32-1, 7]), (dtypes.uint64, [2**64-1]),
            (dtypes.int8, [-128, 127]), (dtypes.uint8, [255]), (dtypes.int16, [-32768]), (dtypes.float16, [0.1, 65504.0, 1e-7, -math.inf]),
            (dtypes.bool, [True, False])]
@pytest.mark.parametrize("dt,vals", LITERALS, ids=[str(x[0]) for x in LITERALS])
def test_literals_round_trip(run, dt, vals):
  out = g(0, dt, len(vals))
  uops = prog(out, *[out.index(c(k, i32)).store(c(v, dt)) for k, v in enumerate(vals)])
  out_np = np.zeros(len(vals), np.dtype(dt.fmt))
  run(uops, [out_np])
  np.testing.assert_equal(out_np, np.array(vals, np.dtype(dt.fmt)))

def test_nan_literal(run):
  out = g(0, f32, 2)
  uops = prog(out, out.index(c(0, i32)).store(c(math.nan)), out.index(c(1, i32)).store(c(math.nan, dtypes.float64).cast(f32)))
  out_np = np.zeros(2, np.float32)
  run(uops, [out_np])
  assert np.isnan(out_np).all()

def test_bitcast_and_casts(run):
  a = np.array([1.0, -2.5, 1e-40, np.inf, 3.7, -3.7, 300.5, -0.0], np.float32)
  o_bits, o_int, o_u8, o_bool = np.zeros(8, np.uint32), np.zeros(8, np.int32), np.zeros(8, np.uint8), np.zeros(8, np.bool_)
  o_back = np.zeros(8, np.float32)
  outs = [g(0, dtypes.uint32, 8), g(1, i32, 8), g(2, dtypes.uint8, 8), g(3, dtypes.bool, 8), g(4, f32, 8)]
  inp = g(5, f32, 8)
  r = UOp.range(i32, 8, 0)
  x = inp.index(r).load()
  bits = x.bitcast(dtypes.uint32)
  fin = alu(Ops.WHERE, alu(Ops.CMPNE, x, c(math.inf)), x, c(0.0))
  stores = [outs[0].index(r).store(bits), outs[1].index(r).store(fin.cast(i32)), outs[2].index(r).store(fin.cast(i32).cast(dtypes.uint8)),
            outs[3].index(r).store(x.cast(dtypes.bool)), outs[4].index(r).store((bits ^ c(1 << 31, dtypes.uint32)).bitcast(f32))]
  run(prog(*outs, inp, r, *stores, end(r)), [o_bits, o_int, o_u8, o_bool, o_back, a])
  np.testing.assert_equal(o_bits, a.view(np.uint32))
  fin_np = np.where(np.isinf(a), 0, a)
  np.testing.assert_equal(o_int, np.trunc(fin_np).astype(np.int32))
  np.testing.assert_equal(o_u8, np.trunc(fin_np).astype(np.int32).astype(np.uint8))
  np.testing.assert_equal(o_bool, a != 0)
  np.testing.assert_equal(o_back, -a)

def chain(n:int) -> list[UOp]:
  ops = [lambda x: x * 1.0009765625, lambda x: x + 0.25, lambda x: alu(Ops.MAX, x, c(-1.0)), lambda x: alu(Ops.SUB, x, c(0.125)),
         lambda x: x * 0.5, lambda x: alu(Ops.WHERE, x.alu(Ops.CMPLT, c(0.0)), -x, x)]
  def fxn(x):
    for k in range(n): x = ops[k % len(ops)](x)
    return x
  return elementwise(fxn, 8, [f32], f32)

def chain_np(a:np.ndarray, n:int) -> np.ndarray:
  ops = [lambda x: x*np.float32(1.0009765625), lambda x: x+np.float32(0.25), lambda x: np.maximum(x, np.float32(-1)), lambda x: x-np.float32(0.125),
         lambda x: x*np.float32(0.5), lambda x: np.abs(x)]
  for k in range(n): a = ops[k % len(ops)](a)
  return a

def test_long_chain_compiles_shallow():
  CPUCompiler, CPUProgram = cpu_runtime()
  uops = chain(1000)
  assert sum(u.op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB, Ops.WHERE, Ops.NEG, Ops.CMPLT) for u in uops) >= 1000
  src = ClangRenderer().render("test", uops)
  lib = CPUCompiler().compile(src)   # not compile_cached: a real compile
  # no deep nesting: every statement is shallow
  assert max(max(_paren_depth(line) for line in src.splitlines()), 0) <= 4
  a = np.linspace(-2, 2, 8, dtype=np.float32)
  out = np.zeros(8, np.float32)
  CPUProgram("test", lib)(out.ctypes.data, a.ctypes.data)
  np.testing.assert_allclose(out, chain_np(a, 1000), rtol=1e-5)
  out_py = np.zeros(8, np.float32)
  run_python(uops, [out_py, a])
  np.testing.assert_allclose(out_py, out, rtol=1e-6)   # not bit-equal: gcc fuses a*b+c across statements (-ffp-contract=fast)

def _paren_depth(s:str) -> int:
  d = m = 0
  for ch in s:
    d += (ch == "(") - (ch == ")")
    m = max(m, d)
  return m

def test_same_results_cpu_and_python():
  # one mixed program, both devices bit for bit
  cpu_runtime()
  rng = np.random.default_rng(5)
  a, b = rng.standard_normal((2, 64)).astype(np.float32)
  # no multiply feeds an add: gcc would fuse those into an fma, which rounds once
  fxn = lambda x, y: alu(Ops.WHERE, x.alu(Ops.CMPLT, y), x*y, alu(Ops.SUB, x, y) * 0.5) + alu(Ops.MAX, x, y).cast(i32).cast(f32) + \
    alu(Ops.FDIV, x, y) - (x - 1.5).sqrt()
  outs = [np.zeros(64, np.float32) for _ in range(2)]
  uops = elementwise(fxn, 64, [f32, f32], f32)
  run_cpu(uops, [outs[0], a, b])
  run_python(uops, [outs[1], a, b])
  np.testing.assert_equal(outs[0], outs[1])

def test_skeleton_renders_like_full_program():
  out, inp = g(0, f32, 4), g(1, f32, 4)
  r = UOp.range(i32, 4, 0)
  st = out.index(r).store(inp.index(r).load() * 2.0)
  assert ClangRenderer().render("k", [out, inp, r, st, end(r)]) == ClangRenderer().render("k", prog(out, inp, r, st, end(r)))

def test_index_maths_inlined_shallow():
  out, inp = g(0, f32, 64), g(1, f32, 64)
  r0, r1 = UOp.range(i32, 8, 0), UOp.range(i32, 8, 1)
  src = ClangRenderer().render("k", prog(out, inp, r0, r1, out.index(r0*8 + r1).store(inp.index(r1*8 + r0).load()), end(r1), end(r0)))
  assert "(*(data1+((ridx1*8)+ridx0)))" in src and "*(data0+((ridx0*8)+ridx1)) = val0;" in src, src
  assert "alu" not in src

# ***** C helpers: half and bfloat16 conversions against numpy, for every half and many floats *****

def _conversion_kernel() -> list[UOp]:
  h, bf, u16 = dtypes.float16, dtypes.bfloat16, dtypes.uint16
  o_h2f, o_f2h, o_f2bf, i_bits, i_f = g(0, f32, 65536), g(1, u16, 4096), g(2, u16, 4096), g(3, u16, 65536), g(4, f32, 4096)
  r0, r1 = UOp.range(i32, 65536, 0), UOp.range(i32, 4096, 1)
  x = i_f.index(r1).load()
  return prog(o_h2f, o_f2h, o_f2bf, i_bits, i_f, r0, o_h2f.index(r0).store(i_bits.index(r0).load().bitcast(h).cast(f32)), end(r0),
              r1, o_f2h.index(r1).store(x.cast(h).bitcast(u16)), o_f2bf.index(r1).store(x.cast(bf).bitcast(u16)), end(r1))

@pytest.mark.parametrize("cc", ["default", "gcc", "clang"])
def test_half_bf16_conversions(cc, monkeypatch):
  CPUCompiler, CPUProgram = cpu_runtime()
  import shutil
  if cc != "default":
    if shutil.which(cc) is None: pytest.skip(f"no {cc}")
    monkeypatch.setenv("CC", cc)
  rng = np.random.default_rng(6)
  specials = np.array([0, -0.0, np.inf, -np.inf, 65504, 65519.99, 65520, 1e-8, 2.98e-8, 5.97e-8, 6e-8, 6.1e-5, 6.103e-5, 1e30], np.float32)
  xs = np.concatenate([specials, -specials, rng.standard_normal(2048).astype(np.float32) * 1000,
                       (rng.standard_normal(4096 - 2048 - 28) * 1e-5).astype(np.float32)]).astype(np.float32)
  # exact ties for half: the float halfway between neighbouring halves
  hs = rng.integers(0, 0x7bff, 64).astype(np.uint16).view(np.float16).astype(np.float32)
  xs[-64:] = (hs + np.nextafter(hs.astype(np.float16), np.float16(np.inf)).astype(np.float32)) / 2
  bits = np.arange(65536, dtype=np.uint16)
  o = [np.zeros(65536, np.float32), np.zeros(4096, np.uint16), np.zeros(4096, np.uint16)]
  prg = CPUProgram("test", CPUCompiler().compile(ClangRenderer().render("test", _conversion_kernel())))
  prg(*[x.ctypes.data for x in o], bits.ctypes.data, xs.ctypes.data)
  ref = bits.view(np.float16).astype(np.float32)
  nan = np.isnan(ref)
  np.testing.assert_equal(o[0][~nan], ref[~nan])
  assert np.isnan(o[0][nan]).all()
  with np.errstate(over="ignore"): np.testing.assert_equal(o[1], xs.astype(np.float16).view(np.uint16))
  np.testing.assert_equal(o[2], f32_to_bf16_bits(xs))

# ***** GPU dialects: render only *****

def _gpu_kernel() -> list[UOp]:
  out, inp = g(0, f32, 256), g(1, dtypes.float16, 256)
  n = UOp(Ops.DEFINE_VAR, i32, arg=("n", 1, 256))
  gid, lid = UOp(Ops.SPECIAL, i32, (), ThreadId.make(ThreadKind.GLOBAL, 0, 16)), UOp(Ops.SPECIAL, i32, (), ThreadId.make(ThreadKind.LOCAL, 0, 16))
  tmp = UOp(Ops.DEFINE_LOCAL, f32.ptr(16, local=True), arg="temp0")
  idx = gid*16 + lid
  st = tmp.index(lid).store(inp.index(idx, idx.alu(Ops.CMPLT, n)).load().cast(f32))
  bar = UOp(Ops.BARRIER, src=(st,))
  v4 = tmp.index(c(0, i32)).load(dtype=f32.vec(4))
  return prog(out, inp, n, gid, lid, tmp, st, bar, out.index(idx).store(tmp.index(lid).load() + v4.gep(1) + c(math.inf)))

@pytest.mark.parametrize("ren,expect", [
  (OpenCLRenderer, ["__kernel void k(__global float* data0, __global half* data1, const int n)", "get_group_id(0)", "get_local_id(0)",
                    "__local float temp0[16];", "barrier(CLK_LOCAL_MEM_FENCE);", "cl_khr_fp16", "vload4(0, temp0)", ".s1", "INFINITY"]),
  (CUDARenderer, ['extern "C" __global__ void __launch_bounds__(16) k(float* data0, half* data1, const int n)', "blockIdx.x", "threadIdx.x",
                  "__shared__", "__syncthreads();", "cuda_fp16.h", "(float4*)", ".y"]),
  (MetalRenderer, ["kernel void k(device float* data0, device half* data1, constant int& n, uint3 gid [[threadgroup_position_in_grid]], "
                   "uint3 lid [[thread_position_in_threadgroup]])", "gid.x", "lid.x", "threadgroup_barrier(mem_flags::mem_threadgroup);",
                   "threadgroup __attribute__((aligned(16))) float temp0[16];", "(threadgroup packed_float4*)", "metal_stdlib"]),
  (AMDRenderer, ['extern "C" __attribute__((global)) void __attribute__((amdgpu_flat_work_group_size(1, 16))) k(float* data0, _Float16* data1, '
                 'const int n)', "__ockl_get_group_id(0)", "__ockl_get_local_id(0)", "__builtin_amdgcn_s_barrier()", "ext_vector_type(4)",
                 "__attribute__((shared, aligned(16)))"]),
])
def test_gpu_renders(ren, expect):
  src = ren().render("k", _gpu_kernel())
  for e in expect: assert e in src, f"{e!r} not in\n{src}"
  assert src.count("{") == src.count("}")

def test_cuda_vector_types():
  out, inp = g(0, dtypes.float16, 8), g(1, f32, 8)
  v = inp.index(c(0, i32)).load(dtype=f32.vec(4))
  uops = prog(out, inp, out.index(c(0, i32)).store(v.cast(dtypes.float16.vec(4))), out.index(c(4, i32)).store(v.cast(dtypes.float16.vec(4))))
  src = CUDARenderer().render("k", uops)
  assert "struct __align__(8) half4 { half x, y, z, w; };" in src and "make_half4(" in src, src
  assert "struct __align__(16) float4" not in src and "make_float4(" not in src   # float4 is CUDA's own

def test_wmma_not_rendered():
  out = g(0, f32, 4)
  a = UOp(Ops.VCONST, f32.vec(2), arg=(1.0, 2.0))
  w = UOp(Ops.WMMA, f32.vec(2), (a, a, a), arg=("WMMA_test",))
  with pytest.raises(NotImplementedError): ClangRenderer().render("k", prog(out, out.index(c(0, i32)).store(w.gep(0))))

def test_struct_pack_literal():
  # float32 literals survive C's parse exactly
  for v in [0.1, 1/3, 3.4028234663852886e38, 1.401298464324817e-45]:
    lit = ClangRenderer().render_const(v, f32)
    assert float(lit.rstrip("f")) == struct.unpack("<f", struct.pack("<f", v))[0]
