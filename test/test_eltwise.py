# elementwise speed work that shows in the graph: single-node exp/tanh, the gradient carrier dropped going forward, row reduces with
# SIMD lanes on the reduce axis. Values are checked against torch.
import numpy as np, torch
from tinygrad import Tensor, Device, Context, dtypes
from tinygrad.uop import Ops
from tinygrad.codegen.program import get_program

def _asts(t:Tensor) -> list:
  return [si.ast for si in t.schedule()]

def test_exp_tanh_are_one_node():
  x = Tensor.empty(8, 8)
  for t, op in ((x.exp(), Ops.EXP), (x.tanh(), Ops.TANH)):
    nodes = list(t.uop.toposort())
    assert sum(u.op is op for u in nodes) == 1
    assert sum(u.op in (Ops.ADD, Ops.MUL, Ops.WHERE, Ops.MULACC) for u in nodes) == 0   # nothing composite at the tensor level

def test_gradient_carrier_dropped_forward():
  # a tensor that requires grad computes the same kernel forward as one that doesn't: the hand-written backward costs nothing forward
  xn = np.linspace(-5, 5, 64, dtype=np.float32)
  for f in (Tensor.sigmoid, Tensor.erf, Tensor.expm1, Tensor.sinh):
    a, b = Tensor(xn), Tensor(xn, requires_grad=True)
    assert _asts(f(a)) == _asts(f(b)), f.__name__
    ya = f(b)
    ya.sum().backward()
    xt = torch.tensor(xn, requires_grad=True)
    getattr(torch, f.__name__)(xt).sum().backward()
    np.testing.assert_allclose(ya.numpy(), getattr(torch, f.__name__)(torch.tensor(xn)).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)

def test_exp_tanh_grad():
  xn = np.array([-30, -3, -0.5, 0, 0.25, 2, 20, 80], dtype=np.float32)
  for name in ("exp", "tanh"):
    x, xt = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
    getattr(x, name)().sum().backward()
    getattr(xt, name)().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=2e-6)

def test_softmax_sum_kernel_unrolls_reduce_axis():
  # the sum of exps is read along its contiguous reduce axis: on a vector renderer that axis gets the SIMD lanes (vector loads, one
  # vector accumulator), not side-by-side rows gathered lane by lane
  renderer = Device[Device.DEFAULT].renderer
  if not renderer.vector_alu_lanes: return
  x = Tensor.empty(64, 1024)
  with Context(ROW_FUSE=0): asts = _asts(x.softmax(-1))
  sum_ast = next(a for a in asts if any(u.op is Ops.REDUCE_AXIS and u.arg[0] is Ops.ADD for u in a.toposort()))
  opts = get_program(sum_ast, renderer).applied_opts
  assert any(o.op.name == "UNROLL" and o.arg >= 4 for o in opts) and not any(o.op.name == "UPCAST" for o in opts), opts
  # one row kernel (CPU): the max's loop and the sum's loop both get the lanes (vector accumulators), the output loop vector stores
  if not renderer.has_local:
    (row_ast,) = _asts(x.softmax(-1))
    prg = get_program(row_ast, renderer)
    assert {o.axis for o in prg.applied_opts if o.op.name == "UNROLL" and o.arg >= 8} == {0, 1}, prg.applied_opts
    assert any(o.op.name == "UPCAST" and o.arg >= 8 for o in prg.applied_opts), prg.applied_opts
    assert len([u for u in prg.uops if u.op is Ops.DEFINE_ACC and u.dtype.count > 1]) == 2
  xn = np.random.default_rng(0).standard_normal((64, 1024), dtype=np.float32)
  np.testing.assert_allclose(Tensor(xn).softmax(-1).numpy(), torch.tensor(xn).softmax(-1).numpy(), rtol=1e-5, atol=1e-8)

def _alu_counts(t:Tensor) -> dict:
  counts: dict = {}
  for u in t.uop.toposort():
    if u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.OR, Ops.AND, Ops.WHERE, Ops.ADD, Ops.MUL, Ops.FDIV, Ops.EXP, Ops.TANH, Ops.CONST, Ops.CAST):
      counts[u.op] = counts.get(u.op, 0) + 1
  return counts

def test_front_end_op_counts():
  # the graph an activation builds is what each call pays for in Python: relu is one compare and one select on one constant, == one CMPEQ,
  # <= a < and an == on one constant, sigmoid and gelu (x * sigmoid(2z)) one exp and one divide on three constants
  x = Tensor.empty(8, 8)
  assert _alu_counts(x.relu()) == {Ops.CMPLT: 1, Ops.WHERE: 1, Ops.CONST: 1}
  assert _alu_counts(x.eq(1.5)) == {Ops.CMPEQ: 1, Ops.CONST: 1}
  assert _alu_counts(x <= 2) == {Ops.CMPLT: 1, Ops.CMPEQ: 1, Ops.OR: 1, Ops.CONST: 1}
  assert _alu_counts(x.abs()) == {Ops.AND: 1, Ops.CONST: 1}
  sig = _alu_counts(x.sigmoid())
  assert sig[Ops.EXP] == 1 and sig[Ops.FDIV] == 1 and sig[Ops.CONST] == 3 and sum(sig.values()) <= 12, sig
  gelu = _alu_counts(x.gelu())
  assert gelu[Ops.EXP] == 1 and gelu[Ops.FDIV] == 1 and Ops.TANH not in gelu and gelu[Ops.CONST] == 3 and sum(gelu.values()) <= 11, gelu

def test_relu_like_torch():
  # nan and -0.0 kept, gradient 0 at +-0 and below, 1 above and at nan (torch's threshold_backward), ints too
  xn = np.array([-2.0, -0.0, 0.0, 1e-45, 3.0, np.inf, -np.inf, np.nan], dtype=np.float32)
  x, xt = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
  y, yt = x.relu(), torch.relu(xt)
  np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
  np.testing.assert_array_equal(np.signbit(y.numpy()), np.signbit(yt.detach().numpy()))
  (y * Tensor(np.arange(1, 9, dtype=np.float32))).sum().backward()
  (yt * torch.arange(1, 9, dtype=torch.float32)).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
  # the value is the same with and without a gradient path
  np.testing.assert_array_equal(np.signbit(Tensor(xn).relu().numpy()), np.signbit(y.numpy()))
  assert Tensor([-3, 0, 5], dtype=dtypes.int32).relu().tolist() == [0, 0, 5]

def test_comparisons_like_numpy():
  rng = np.random.default_rng(1)
  a = np.concatenate([rng.standard_normal(50), [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 1.0]]).astype(np.float32)
  b = np.concatenate([rng.standard_normal(50), [-0.0, 0.0, np.inf, 1.0, np.nan, np.nan, 1.0]]).astype(np.float32)
  ta, tb = Tensor(a), Tensor(b)
  for ours, ref in ((ta.eq(tb), a == b), (ta <= tb, a <= b), (ta >= tb, a >= b), (ta <= 0.5, a <= 0.5), (ta >= -0.0, a >= -0.0),
                    (ta.ne(tb), a != b)):
    np.testing.assert_array_equal(ours.numpy(), ref)
  ia, ib = rng.integers(-5, 5, 64).astype(np.int32), rng.integers(-5, 5, 64).astype(np.int32)
  for ours, ref in ((Tensor(ia) <= Tensor(ib), ia <= ib), (Tensor(ia) >= 2, ia >= 2), (Tensor(ia) == Tensor(ib), ia == ib)):
    np.testing.assert_array_equal(ours.numpy(), ref)
  # comparisons pass no gradient: x * (x <= 1) has d/dx = (x <= 1)
  x = Tensor(a[:50], requires_grad=True)
  (x * (x <= 1).float()).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), (a[:50] <= 1).astype(np.float32))

def test_gelu_sigmoid_wide_range():
  # against float64: gelu as x / (1 + e**-2z) keeps its digits where 1 + tanh(z) cancels (torch's float32 kernel is 1e2..1e7 ulp off for
  # x < -1), and rounds to a signed zero where the result is below the normal range. Left of 0 the error of z itself (x**3 rounded) is
  # amplified by 2|z| (two ulp of z: up to ~130 ulp near x = -10), as in any float32 evaluation of z. Below 1e-37 (x < -10: e**-2z overflows) it is 0
  xn = np.concatenate([np.linspace(-12, 12, 8001), [-30.0, -1e10, -3.4e38, 3.4e38, 1e-30, -1e-30, 0.0, -0.0]]).astype(np.float32)
  x64 = xn.astype(np.float64)
  z = np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)
  with np.errstate(all="ignore"): ref = x64 / (1 + np.exp(-2 * z))
  got = Tensor(xn).gelu().numpy()
  ulp = np.abs(got - ref) / np.spacing(np.abs(ref).astype(np.float32))
  normal = np.abs(ref) >= 1e-37
  assert ulp[normal & (xn > -1)].max() <= 3 and (ulp[normal] <= 4 + 4 * np.abs(z[normal])).all()
  assert (np.abs(got - ref)[~normal] <= 1e-37).all()
  assert (np.signbit(got[xn <= 0]) == np.signbit(xn[xn <= 0])).all()
  got_s = Tensor(xn).sigmoid().numpy()
  with np.errstate(all="ignore"): ref_s = 1 / (1 + np.exp(-x64))
  np.testing.assert_allclose(got_s, ref_s.astype(np.float32), rtol=3e-7, atol=1e-45)

def test_thread_chunks_each_run_once():
  # the CPU launcher hands core_ids to whichever thread comes free: every id runs exactly once, whatever the split
  if Device.DEFAULT != "CPU": return
  import ctypes
  from tinygrad.runtime.ops_cpu import CPUProgram
  lib = Device["CPU"].compiler.compile("void count(int* restrict out, const int core_id) { out[core_id] += core_id + 1; }")
  prg = CPUProgram("count", lib)
  for threads in (1, 2, 3):
    with Context(CPU_THREADS=threads):
      out = (ctypes.c_int * 16)()
      prg(out, global_size=(16, 1, 1))
      assert list(out) == list(range(1, 17))

def test_big_elementwise_split_in_chunks():
  # a big elementwise kernel runs in a few chunks a thread; a reduce keeps one part a thread
  if not Device[Device.DEFAULT].renderer.has_threads: return
  xn = np.random.default_rng(0).standard_normal((2048, 1024), dtype=np.float32)
  with Context(CPU_THREADS=2):
    x = Tensor(xn).realize()
    (ast,) = _asts(x.exp())
    splits = [o.arg for o in get_program(ast, Device[Device.DEFAULT].renderer).applied_opts if o.op.name == "THREAD"]
    assert splits == [8], splits
    np.testing.assert_allclose(x.exp().numpy(), np.exp(xn), rtol=2e-6)
    (ast,) = _asts(x.sum(1))
    assert [o.arg for o in get_program(ast, Device[Device.DEFAULT].renderer).applied_opts if o.op.name == "THREAD"] in ([2], [])
