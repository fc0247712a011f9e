# PTX without a GPU, run: kernels of the op families rendered by renderer/ptx.py and executed by a small PTX interpreter (test/ptx_interp.py),
# compared with the PYTHON device (the reference semantics) on the same data. Covers the float and int maths, 8/16-bit ints, half, bfloat16,
# fp8 (the integer emulation of sm_80), casts, reductions, and the vector loads and stores: also with every buffer 4 bytes off a 16-byte
# boundary (a sub-buffer), where the runtime alignment check must fall back to scalar accesses (the interpreter faults a misaligned ld.v4).
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.codegen.program import get_program
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.uop import Ops
from test.ptx_interp import Kernel, Memory

def run_ptx(out:Tensor, arch:str="sm_80", skew:int=0, opts:list|None=None) -> np.ndarray:
  """Realize out by running its kernels' PTX in the interpreter; the inputs must be realized."""
  sched = out.schedule()
  mem, addrs = Memory(), {}
  def addr_of(b) -> int:
    base = b._base if b._base is not None else b
    if base not in addrs:
      data = bytearray(base.as_buffer()) if base.is_allocated() else bytearray(base.nbytes)
      addrs[base] = (mem.add(data, skew), data)
    return addrs[base][0] + (b.offset if b._base is not None else 0)
  kernels = 0
  for si in sched:
    assert si.ast.op is Ops.SINK, f"not a kernel: {si.ast.op}"
    p = get_program(si.ast, PTXRenderer(arch), opts)
    Kernel(p.src).run(mem, [addr_of(si.bufs[i]) for i in p.globals], tuple(p.global_size or (1,)), tuple(p.local_size) if p.local_size else None)
    kernels += 1
  ob = sched[-1].bufs[0]
  return np.frombuffer(bytes(addrs[ob][1]), dtype=np.uint8).copy()

def _data(shape, dt, lo=-3.0, hi=3.0, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.uniform(lo, hi, shape)
  return Tensor(x.astype(np.float32), device="PYTHON").cast(dt).realize() if dtypes.is_float(dt) else \
         Tensor(x.astype(np.int64), device="PYTHON").cast(dt).realize()

def _cases():
  a, b = _data((8, 16), dtypes.float32), _data((8, 16), dtypes.float32, seed=1)
  i, j = _data((8, 16), dtypes.int32, -100, 100), _data((8, 16), dtypes.int32, -9, 9, seed=2)
  h, bf = _data((4, 16), dtypes.half), _data((4, 16), dtypes.bfloat16, seed=3)
  c8 = _data((4, 16), dtypes.int8, -128, 127)
  return {
    "add_mul": lambda: a * b + 1, "exp_sin_log": lambda: a.exp() + b.sin() + a.abs().log(), "div_sqrt": lambda: a / b + a.abs().sqrt(),
    "sum_max": lambda: a.sum(1) + a.max(1), "argmax": lambda: a.argmax(1), "softmax": lambda: a.softmax(1),
    "int_div_mod": lambda: i // j + i % j, "int_bits": lambda: ((i << 2) >> 1) ^ (i & j) | 3, "int_cmp": lambda: (i < j).where(i, j.maximum(3)),
    "int8_wrap": lambda: c8 * 3 + 100, "uint8": lambda: c8.cast(dtypes.uint8) * 7 + 250, "int64": lambda: i.cast(dtypes.int64) * 3000000000,
    "half": lambda: (h * 2 + 1).sum(1), "bfloat16": lambda: bf * 3 + bf.sqrt().cast(dtypes.bfloat16).float().cast(dtypes.bfloat16),
    "fp8e4m3": lambda: (a.cast(dtypes.fp8e4m3) * 2 + 1).float(), "fp8e5m2": lambda: (a * 1000).cast(dtypes.fp8e5m2).float() + b,
    "casts": lambda: a.cast(dtypes.int32).float() + (a > 0).float() + a.cast(dtypes.int8).cast(dtypes.float32),
    "float64": lambda: a.cast(dtypes.float64).exp() * 3, "nan_where": lambda: ((a / 0) * 0).isnan().where(1.0, a),
    "pad_shrink": lambda: a[:, 1:13].pad(((0, 0), (2, 2))) + 1, "cumsum": lambda: a.cumsum(1),
  }

# every case with aligned buffers; those with vector accesses of each kind also with every buffer 4 bytes off
SKEWED = ("add_mul", "sum_max", "int_bits", "half", "pad_shrink", "fp8e4m3")
@pytest.mark.parametrize("name,skew", [(n, 0) for n in _cases()] + [(n, 4) for n in SKEWED])
def test_ptx_kernels_match_python(name, skew):
  case = _cases()[name]
  want, out = case().numpy(), case()
  got = run_ptx(out, skew=skew)
  # bfloat16 comes back from .numpy() as float32: its bits are the top half of one
  got = (got.view(np.uint16).astype(np.uint32) << 16).view(np.float32) if out.dtype == dtypes.bfloat16 else got.view(want.dtype)
  got = got.reshape(want.shape)
  if want.dtype.kind == "f":
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
  else: np.testing.assert_array_equal(got, want)

def test_vector_loads_are_used():
  a = _data((8, 16), dtypes.float32)
  src = get_program((a * 2).schedule()[-1].ast, PTXRenderer("sm_80")).src
  assert "ld.global.v4.f32" in src and "st.global.v4.f32" in src

def test_locals_and_barriers():
  # a grouped reduce: 16 threads of a block each sum a part into shared memory, meet at bar.sync, and one adds the parts
  from tinygrad.opt.kernel import Opt, OptOps
  x = _data((4, 256), dtypes.float32)
  got = run_ptx(x.sum(1), opts=[Opt(OptOps.GROUPTOP, 0, 16)]).view(np.float32)
  src = get_program(x.sum(1).schedule()[-1].ast, PTXRenderer("sm_80"), [Opt(OptOps.GROUPTOP, 0, 16)]).src
  assert "bar.sync" in src and ".shared" in src
  np.testing.assert_allclose(got, x.numpy().sum(1), rtol=1e-5)

def test_symbolic_shapes():
  from tinygrad import Variable
  x = _data((16, 8), dtypes.float32)
  v = Variable("n", 1, 16).bind(5)
  out = (x.shrink(((0, v), None)) * 2).sum(0)
  sched, var_vals = out.schedule_with_vars()
  p = get_program(sched[-1].ast, PTXRenderer("sm_80"))
  mem = Memory()
  bufs = [bytearray(sched[-1].bufs[i].nbytes) if i == 0 else bytearray(sched[-1].bufs[i].as_buffer()) for i in range(len(sched[-1].bufs))]
  addrs = [mem.add(b) for b in bufs]
  vals = [var_vals[u] for u in p.vars]
  gs, ls = p.launch_dims(var_vals)
  Kernel(p.src).run(mem, [addrs[i] for i in p.globals] + vals, tuple(gs), tuple(ls) if ls else None)
  np.testing.assert_allclose(np.frombuffer(bytes(bufs[0]), np.float32), x.numpy()[:5].sum(0) * 2, rtol=1e-6)
