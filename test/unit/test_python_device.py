# the PYTHON device: threads, workgroups, shared memory, dtypes; checked against numpy (and against exec_alu, its single source of truth)
import itertools, math, random
import numpy as np
import pytest
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, exec_alu, python_alu, ThreadId, ThreadKind
from tinygrad.dtype import DType, dtypes
from tinygrad.device import Device, Buffer
from tinygrad.renderer.cstyle import with_sources
from tinygrad.runtime.ops_python import PythonRenderer, PythonCompiler, PythonProgram, PythonDevice, alu_fn

f32, i32 = dtypes.float32, dtypes.int32

def g(i:int, dt:DType, size:int) -> UOp: return UOp(Ops.DEFINE_GLOBAL, dt.ptr(size), arg=i)
def c(v, dt:DType=f32) -> UOp: return UOp.const(dt, v)
def alu(op:Ops, *src:UOp) -> UOp: return src[0].alu(op, *src[1:])
def end(r:UOp) -> UOp: return UOp(Ops.ENDRANGE, src=(r,))
def special(name:str, size:int) -> UOp:
  kind = ThreadKind.CORE if name == "core_id" else ThreadKind.GLOBAL if name.startswith("g") else ThreadKind.LOCAL
  return UOp(Ops.SPECIAL, i32, (), ThreadId.make(kind, 0 if kind is ThreadKind.CORE else int(name[-1]), size))
def compile_py(*items:UOp) -> PythonProgram:
  return PythonProgram("test", PythonCompiler().compile(PythonRenderer().render("test", with_sources(list(items)))))

# ***** threads and workgroups *****

def test_global_and_local_ids():
  out = g(0, i32, 4*8)
  gid, lid = special("gidx0", 4), special("lidx0", 8)
  prg = compile_py(out, gid, lid, out.index(gid*8 + lid).store(gid*1000 + lid))
  o = np.zeros(32, np.int32)
  prg(memoryview(o), global_size=(4, 1, 1), local_size=(8, 1, 1))
  np.testing.assert_equal(o, (np.arange(32)//8)*1000 + np.arange(32) % 8)

def test_3d_ids_layout():
  # every (gidx, lidx) pair writes its own slot: out[g2][g1][g0][l1][l0]
  gs, ls = (3, 2, 2), (4, 2, 1)
  out = g(0, i32, math.prod(gs)*math.prod(ls))
  g0, g1, g2, l0, l1 = special("gidx0", 3), special("gidx1", 2), special("gidx2", 2), special("lidx0", 4), special("lidx1", 2)
  idx = (((g2*2 + g1)*3 + g0)*2 + l1)*4 + l0
  val = g0 + g1*10 + g2*100 + l0*1000 + l1*10000
  prg = compile_py(out, g0, g1, g2, l0, l1, out.index(idx).store(val))
  o = np.full(out.dtype.size, -1, np.int32)
  prg(memoryview(o), global_size=gs, local_size=ls)
  exp = np.zeros((2, 2, 3, 2, 4), np.int32)
  for a2, a1, a0, b1, b0 in itertools.product(range(2), range(2), range(3), range(2), range(4)): exp[a2, a1, a0, b1, b0] = a0 + a1*10 + a2*100 + b0*1000 + b1*10000
  np.testing.assert_equal(o, exp.reshape(-1))

def test_shared_memory_reduction():
  # each workgroup: threads write shared memory, barrier, thread 0 sums it; and every thread reads its neighbour's slot after the barrier
  L, G = 16, 5
  a = np.random.default_rng(0).standard_normal(G*L).astype(np.float32)
  out, nb, inp = g(0, f32, G), g(1, f32, G*L), g(2, f32, G*L)
  gid, lid = special("gidx0", G), special("lidx0", L)
  tmp = UOp(Ops.DEFINE_LOCAL, f32.ptr(L, local=True), arg="temp0")
  st = tmp.index(lid).store(inp.index(gid*L + lid).load())
  bar = UOp(Ops.BARRIER, src=(st,))
  neighbour = nb.index(gid*L + lid).store(tmp.index((lid + 1) % L).load())
  iff = UOp(Ops.IF, src=(lid.alu(Ops.CMPEQ, c(0, i32)),))
  r = UOp.range(i32, L, 0)
  acc = UOp(Ops.DEFINE_ACC, f32, (c(0.0), r), (0,))
  upd = acc.assign(acc + tmp.index(r).load())
  prg = compile_py(out, nb, inp, gid, lid, tmp, st, bar, neighbour, iff, acc, r, upd, end(r), out.index(gid).store(upd), UOp(Ops.ENDIF, src=(iff,)))
  o, n_o = np.zeros(G, np.float32), np.zeros(G*L, np.float32)
  prg(memoryview(o), memoryview(n_o), memoryview(a), global_size=(G, 1, 1), local_size=(L, 1, 1))
  np.testing.assert_allclose(o, a.reshape(G, L).sum(1), rtol=1e-5)
  np.testing.assert_equal(n_o, np.roll(a.reshape(G, L), -1, axis=1).reshape(-1))

def test_if_masks_threads_and_nested_loop():
  # only threads with lidx0 < 3 run the block, which holds a loop and an accumulator
  out = g(0, i32, 8)
  lid = special("lidx0", 8)
  iff = UOp(Ops.IF, src=(lid.alu(Ops.CMPLT, c(3, i32)),))
  r = UOp.range(i32, 4, 0)
  acc = UOp(Ops.DEFINE_ACC, i32, (c(0, i32), r), (0,))
  upd = acc.assign(acc + r*lid)
  prg = compile_py(out, lid, iff, acc, r, upd, end(r), out.index(lid).store(upd), UOp(Ops.ENDIF, src=(iff,)))
  o = np.full(8, -1, np.int32)
  prg(memoryview(o), local_size=(8, 1, 1))
  np.testing.assert_equal(o, [0, 6, 12, -1, -1, -1, -1, -1])

def test_if_no_thread_active_skips_block():
  inp, out = g(1, f32, 4), g(0, f32, 4)
  lid = special("lidx0", 4)
  iff = UOp(Ops.IF, src=(lid.alu(Ops.CMPLT, c(0, i32)),))
  # the load would be out of bounds, but no thread runs it
  prg = compile_py(out, inp, lid, iff, out.index(lid).store(inp.index(lid + 100).load()), UOp(Ops.ENDIF, src=(iff,)))
  o = np.zeros(4, np.float32)
  prg(memoryview(o), memoryview(np.ones(4, np.float32)), local_size=(4, 1, 1))
  np.testing.assert_equal(o, 0)

def test_gated_load_per_thread():
  inp, out = g(1, f32, 4), g(0, f32, 8)
  lid = special("lidx0", 8)
  prg = compile_py(out, inp, lid, out.index(lid).store(inp.index(lid - 2, (lid >= 2) & (lid.alu(Ops.CMPLT, c(6, i32)))).load()))
  o = np.full(8, 9, np.float32)
  prg(memoryview(o), memoryview(np.arange(1, 5, dtype=np.float32)), local_size=(8, 1, 1))
  np.testing.assert_equal(o, [0, 0, 1, 2, 3, 4, 0, 0])

def test_out_of_bounds_is_an_error():
  out = g(0, f32, 4)
  r = UOp.range(i32, 5, 0)
  prg = compile_py(out, r, out.index(r).store(c(1.0)), end(r))
  with pytest.raises(IndexError, match="out of bounds"): prg(memoryview(np.zeros(4, np.float32)))

def test_wrong_arguments():
  prg = compile_py(g(0, f32, 4), g(0, f32, 4).index(c(0, i32)).store(c(1.0)))
  with pytest.raises(TypeError, match="1 buffers"): prg()

def test_zero_trip_loop():
  n = UOp(Ops.DEFINE_VAR, i32, arg=("n", 0, 8))
  out = g(0, i32, 8)
  r = UOp(Ops.RANGE, i32, (n,), 0)
  prg = compile_py(out, n, r, out.index(r).store(r), end(r), out.index(c(7, i32)).store(n + 50))
  o = np.full(8, -1, np.int32)
  prg(memoryview(o), vals=(0,))
  np.testing.assert_equal(o, [-1]*7 + [50])

def test_zero_trip_loop_reads_accumulator():
  n = UOp(Ops.DEFINE_VAR, i32, arg=("n", 0, 8))
  out = g(0, f32, 1)
  r = UOp(Ops.RANGE, i32, (n,), 0)
  acc = UOp(Ops.DEFINE_ACC, f32, (c(2.5), r), (0,))
  upd = acc.assign(acc + r.cast(f32))
  prg = compile_py(out, n, acc, r, upd, end(r), out.index(c(0, i32)).store(upd))
  for nv, exp in [(0, 2.5), (4, 8.5)]:
    o = np.zeros(1, np.float32)
    prg(memoryview(o), vals=(nv,))
    assert o[0] == exp

def test_uneven_loop_ends():
  # thread t loops t times: threads past their end sit the rest of the loop out
  out = g(0, i32, 6)
  lid = special("lidx0", 6)
  r = UOp(Ops.RANGE, i32, (lid,), 0)
  acc = UOp(Ops.DEFINE_ACC, i32, (c(100, i32), r), (0,))
  upd = acc.assign(acc + r)
  prg = compile_py(out, lid, acc, r, upd, end(r), out.index(lid).store(upd))
  o = np.zeros(6, np.int32)
  prg(memoryview(o), local_size=(6, 1, 1))
  np.testing.assert_equal(o, [100 + t*(t-1)//2 for t in range(6)])

@pytest.mark.parametrize("gs,ls", [((5000, 1, 1), (1, 1, 1)), ((3, 1, 1), (2048, 1, 1)), ((7, 3, 2), (2, 3, 1))])
def test_many_workgroups(gs, ls):
  # more threads than one batch: every workgroup still sees its own ids and its own shared memory
  n = math.prod(gs)*math.prod(ls)
  out = g(0, i32, n)
  ids = [special(f"gidx{d}", gs[d]) for d in range(3)] + [special(f"lidx{d}", ls[d]) for d in range(3)]
  wg = (ids[2]*gs[1] + ids[1])*gs[0] + ids[0]
  lin = (ids[5]*ls[1] + ids[4])*ls[0] + ids[3]
  L = math.prod(ls)
  tmp = UOp(Ops.DEFINE_LOCAL, i32.ptr(L, local=True), arg="temp0")
  st = tmp.index(lin).store(wg)
  bar = UOp(Ops.BARRIER, src=(st,))
  prg = compile_py(out, *ids, tmp, st, bar, out.index(wg*L + lin).store(tmp.index((lin + 1) % L).load()*10 + lin % 7))
  o = np.full(n, -1, np.int32)
  prg(memoryview(o), global_size=gs, local_size=ls)
  np.testing.assert_equal(o, (np.arange(n)//L)*10 + (np.arange(n) % L) % 7)

def test_local_out_of_bounds_per_workgroup():
  # shared memory of a batch of workgroups is one list, but each workgroup may only touch its own part
  out = g(0, f32, 8)
  gid, lid = special("gidx0", 2), special("lidx0", 4)
  tmp = UOp(Ops.DEFINE_LOCAL, f32.ptr(4, local=True), arg="temp0")
  prg = compile_py(out, gid, lid, tmp, tmp.index(lid + 1).store(c(1.0)))
  with pytest.raises(IndexError, match="local temp0"): prg(memoryview(np.zeros(8, np.float32)), global_size=(2, 1, 1), local_size=(4, 1, 1))

def test_wait_returns_time():
  prg = compile_py(g(0, f32, 1), g(0, f32, 1).index(c(0, i32)).store(c(2.0)))
  o = np.zeros(1, np.float32)
  assert isinstance(prg(memoryview(o), wait=True), float) and o[0] == 2.0

# ***** dtypes *****

def cast_prog(src_dt:DType, dst_dt:DType, n:int, via:str="cast") -> PythonProgram:
  out, inp = g(0, dst_dt, n), g(1, src_dt, n)
  r = UOp.range(i32, n, 0)
  x = inp.index(r).load()
  return compile_py(out, inp, r, out.index(r).store(x.cast(dst_dt) if via == "cast" else x.bitcast(dst_dt)), end(r))

def run_cast(src_dt, dst_dt, a:np.ndarray, out_np_dt, via="cast") -> np.ndarray:
  o = np.zeros(len(a), out_np_dt)
  cast_prog(src_dt, dst_dt, len(a), via)(memoryview(o), memoryview(a))
  return o

def test_float_to_int_truncates():
  a = np.array([1.5, -1.5, 2.9999, -2.9999, 0.0, 1e9, -7.0], np.float32)
  np.testing.assert_equal(run_cast(f32, i32, a, np.int32), np.trunc(a).astype(np.int32))
  np.testing.assert_equal(run_cast(f32, dtypes.uint8, np.array([0, 1.9, 255.5], np.float32), np.uint8), [0, 1, 255])

def test_int_to_bool_and_back():
  a = np.array([0, 1, -1, 7, 0], np.int32)
  b = run_cast(i32, dtypes.bool, a, np.bool_)
  np.testing.assert_equal(b, a != 0)
  np.testing.assert_equal(run_cast(dtypes.bool, f32, b, np.float32), (a != 0).astype(np.float32))

def test_int_narrowing_wraps():
  a = np.array([300, -129, 65535, 2**31-1], np.int32)
  np.testing.assert_equal(run_cast(i32, dtypes.int8, a, np.int8), a.astype(np.int8))
  np.testing.assert_equal(run_cast(i32, dtypes.uint16, a, np.uint16), a.astype(np.uint16))
  np.testing.assert_equal(run_cast(i32, dtypes.uint32, np.array([-1, 5], np.int32), np.uint32), [2**32-1, 5])

def test_float16():
  a = np.array([0.1, 1/3, 65504, 70000, 1e-8, -2.5, 6e-5], np.float32)
  h = run_cast(f32, dtypes.float16, a, np.float16)
  with np.errstate(over="ignore"): np.testing.assert_equal(h, a.astype(np.float16))
  np.testing.assert_equal(run_cast(dtypes.float16, f32, h, np.float32), h.astype(np.float32))

def bf16_bits(x:np.ndarray) -> np.ndarray:
  b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
  return ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)

def test_bfloat16():
  a = np.array([0.1, 1/3, 1.00390625, 1.01171875, -3e38, 1e-40, 255.5], np.float32)   # 1.00390625 and 1.01171875 are ties
  bits = run_cast(f32, dtypes.bfloat16, a, np.uint16)
  np.testing.assert_equal(bits, bf16_bits(a))
  np.testing.assert_equal(run_cast(dtypes.bfloat16, f32, bits, np.float32), (bits.astype(np.uint32) << 16).view(np.float32))

def test_fp8():
  a = np.array([0.0, 1.0, -2.0, 448.0, 0.3], np.float32)
  bits = run_cast(f32, dtypes.fp8e4m3, a, np.uint8)
  np.testing.assert_equal(bits[:4], [0x00, 0x38, 0xc0, 0x7e])
  back = run_cast(dtypes.fp8e4m3, f32, bits, np.float32)
  np.testing.assert_allclose(back, a, rtol=0.07)

@pytest.mark.parametrize("src,dst,a,np_dst", [
  (f32, dtypes.uint32, np.array([1.0, -0.0, np.inf, 3.3], np.float32), np.uint32),
  (dtypes.uint32, f32, np.array([0x3f800000, 0xff800000], np.uint32), np.float32),
  (dtypes.float16, dtypes.int16, np.array([1.0, -2.0, 65504], np.float16), np.int16),
  (dtypes.int16, dtypes.float16, np.array([0x3c00, -1024], np.int16), np.float16),
  (dtypes.float64, dtypes.int64, np.array([1.0, -1e300], np.float64), np.int64),
])
def test_bitcast(src, dst, a, np_dst):
  np.testing.assert_equal(run_cast(src, dst, a, np_dst, via="bitcast"), a.view(np_dst))

def test_bitcast_bf16_and_vectors():
  bits = np.array([0x3f80, 0xc049, 0x7f80], np.uint16)
  np.testing.assert_equal(run_cast(dtypes.int16, dtypes.bfloat16, bits.view(np.int16), np.uint16, via="bitcast"), bits)
  out, inp = g(0, dtypes.uint16, 8), g(1, f32, 4)
  v = inp.index(c(0, i32)).load(dtype=f32.vec(4))
  prg = compile_py(out, inp, out.index(c(0, i32)).store(v.gep((0, 1)).bitcast(dtypes.uint16.vec(4))),
                   out.index(c(4, i32)).store(v.gep((2, 3)).bitcast(dtypes.uint16.vec(4))))
  a, o = np.array([1.0, -2.0, 0.5, 3.0], np.float32), np.zeros(8, np.uint16)
  prg(memoryview(o), memoryview(a))
  np.testing.assert_equal(o, a.view(np.uint16))

def test_int_div_mod():
  a = np.array([7, -7, 7, -7, 0, 5, -2**31], np.int32)
  b = np.array([2, 2, -2, -2, 3, 0, -1], np.int32)
  out_d, out_m, ia, ib = g(0, i32, 7), g(1, i32, 7), g(2, i32, 7), g(3, i32, 7)
  r = UOp.range(i32, 7, 0)
  x, y = ia.index(r).load(), ib.index(r).load()
  prg = compile_py(out_d, out_m, ia, ib, r, out_d.index(r).store(alu(Ops.IDIV, x, y)), out_m.index(r).store(alu(Ops.MOD, x, y)), end(r))
  od, om = np.zeros(7, np.int32), np.zeros(7, np.int32)
  prg(memoryview(od), memoryview(om), memoryview(a), memoryview(b))
  np.testing.assert_equal(od, [3, -3, -3, 3, 0, 0, -2**31])   # C truncation; /0 gives 0; INT_MIN/-1 wraps
  np.testing.assert_equal(om, [1, -1, 1, -1, 0, 0, 0])        # sign of the dividend

def test_vector_alu_and_acc():
  a = np.arange(16, dtype=np.float32)
  out, inp = g(0, f32, 4), g(1, f32, 16)
  r = UOp.range(i32, 4, 0)
  acc = UOp(Ops.DEFINE_ACC, f32.vec(4), (c(0.0).replace(dtype=f32.vec(4)), r), (0,))
  upd = acc.assign(acc + inp.index(r*4).load(dtype=f32.vec(4)))
  prg = compile_py(out, inp, acc, r, upd, end(r), out.index(c(0, i32)).store(upd))
  o = np.zeros(4, np.float32)
  prg(memoryview(o), memoryview(a))
  np.testing.assert_equal(o, a.reshape(4, 4).sum(0))

def test_wmma_hook(monkeypatch):
  # an emulator gets the operands of all threads, and the workgroup size to split them by
  from tinygrad.runtime import ops_python
  seen = []
  def fake(arg, a, b, c, wg):
    seen.append((arg, len(a), wg))
    return [tuple(x*y + z for x, y, z in zip(ai, bi, ci)) for ai, bi, ci in zip(a, b, c)]
  monkeypatch.setitem(ops_python.WMMA_EMULATORS, "WMMA_fake", fake)
  out, inp = g(0, f32, 8), g(1, f32, 2)
  lid = special("lidx0", 4)
  v = inp.index(c(0, i32)).load(dtype=f32.vec(2))
  w = UOp(Ops.WMMA, f32.vec(2), (v, v, v), arg=("WMMA_fake",))
  prg = compile_py(out, inp, lid, out.index(lid*2).store(w))
  o = np.zeros(8, np.float32)
  prg(memoryview(o), memoryview(np.array([2.0, 3.0], np.float32)), global_size=(1, 1, 1), local_size=(4, 1, 1))
  np.testing.assert_equal(o, [6.0, 12.0]*4)
  assert seen == [(("WMMA_fake",), 4, 4)]

# ***** the fast ALU path is exec_alu *****

_VALS = {f32: [0.0, -0.0, 1.5, -2.25, 1e30, -1e-30, 3.4e38, math.inf, -math.inf, math.nan, 7.0],
         dtypes.float16: [0.0, 1.5, -2.25, 65504.0, 1e-5, math.inf, math.nan],
         dtypes.float64: [0.0, 1.5, -2.25, 1e300, math.inf, math.nan],
         i32: [0, 1, -1, 7, -7, 2**31-1, -2**31, 3], dtypes.uint8: [0, 1, 255, 7, 128], dtypes.int64: [0, -1, 2**62, 5],
         dtypes.bool: [False, True]}

@pytest.mark.parametrize("dt", list(_VALS), ids=str)
def test_alu_fn_matches_exec_alu(dt):
  rnd = random.Random(0)
  for op in python_alu:
    if op is Ops.RECIP and dtypes.is_int(dt): continue
    if op in (Ops.SHL, Ops.SHR, Ops.AND, Ops.OR, Ops.XOR) and dtypes.is_float(dt): continue
    n = 3 if op in GroupOp.Ternary else 1 if op in GroupOp.Unary else 2
    args = [[rnd.choice(_VALS[dt]) for _ in range(32)] for _ in range(n)]
    if op is Ops.WHERE: args[0] = [rnd.choice([True, False]) for _ in range(32)]
    if op in (Ops.SHL, Ops.SHR): args[1] = [rnd.randint(0, 7) for _ in range(32)]
    out_dt = dtypes.bool if op in GroupOp.Comparison else dt
    try: exp = [exec_alu(op, out_dt, list(a)) for a in zip(*args)]
    except (TypeError, ValueError, OverflowError): continue   # ops that are not defined on this dtype
    got = alu_fn(op, out_dt)(*args)
    assert [repr(x) for x in got] == [repr(x) for x in exp], op

# ***** the device *****

def test_python_device_buffers():
  dev = Device["PYTHON"]
  assert isinstance(dev, PythonDevice)
  a = np.arange(8, dtype=np.float32)
  bi = Buffer("PYTHON", 8, f32).allocate().copyin(memoryview(a))
  bo = Buffer("PYTHON", 8, f32).allocate()
  out, inp = g(0, f32, 8), g(1, f32, 8)
  r = UOp.range(i32, 8, 0)
  src = dev.renderer.render("k", with_sources([out, inp, r, out.index(r).store(inp.index(r).load() * 3.0), end(r)]))
  prg = dev.runtime("k", dev.compiler.compile_cached(src))
  prg(bo._buf, bi._buf)
  np.testing.assert_equal(bo.numpy(), a*3)
  assert dev.renderer.has_local and dev.renderer.has_shared and dev.renderer.device == "PYTHON"
