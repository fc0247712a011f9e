# big matmuls and convs on a renderer that asks for packed operands (CPU) read B / the weight from a packed copy the scheduler makes
# (schedule/packing.py): same values as the plain product, gradients included; a renderer that doesn't ask (PYTHON) gets no copy
import numpy as np
import pytest
from tinygrad import Tensor, Context, Device
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_schedule

def _kernels(sched) -> list: return [si for si in sched if si.ast.op is Ops.SINK]

@pytest.mark.parametrize("m,k,n", [(16, 8, 32), (24, 5, 64), (8, 64, 96)])
def test_packed_dot_matches_numpy(m, k, n, pose_cpu):
  pose_cpu("avx512-2fma")   # (the panel widths below are AVX-512's, whatever the host is)
  rng = np.random.default_rng(m*k*n)
  an, bn = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor(an, device="CPU", requires_grad=True), Tensor(bn, device="CPU", requires_grad=True)
    out = a @ b
    # the panel copy of B (none where B already is one panel) and the product
    sched = out.schedule()
    assert len(_kernels(sched)) == (1 if n == 32 else 2)
    run_schedule(sched)
    np.testing.assert_allclose(out.numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    (a @ b).sum().backward()
  np.testing.assert_allclose(a.grad.numpy(), np.ones((m, n), np.float32) @ bn.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(b.grad.numpy(), an.T @ np.ones((m, n), np.float32), rtol=1e-5, atol=1e-5)

def test_packed_dot_b_transposed():
  # B read through a transpose (x @ w.T, as Linear does) is packed from that view
  rng = np.random.default_rng(3)
  an, wn = rng.standard_normal((16, 24), dtype=np.float32), rng.standard_normal((64, 24), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    out = Tensor(an, device="CPU") @ Tensor(wn, device="CPU").T
    assert len(_kernels(sched := out.schedule())) == 2
    run_schedule(sched)
    np.testing.assert_allclose(out.numpy(), an @ wn.T, rtol=1e-5, atol=1e-5)

def test_not_packed_when_tiles_dont_divide():
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor.ones(7, 3, device="CPU").contiguous().realize(), Tensor.ones(3, 16, device="CPU").contiguous().realize()
    out = a @ b
    sched = out.schedule()
    assert len(_kernels(sched)) == 1
    run_schedule(sched)
    np.testing.assert_equal(out.numpy(), np.full((7, 16), 3, np.float32))

def test_not_packed_below_threshold():
  a, b = Tensor.ones(64, 64, device="CPU").contiguous().realize(), Tensor.ones(64, 64, device="CPU").contiguous().realize()
  with Context(PACKED_DOT_MIN=64**3 + 1): assert len(_kernels((a @ b).schedule())) == 1
  with Context(PACKED_DOT_MIN=64**3): assert len(_kernels((a @ b).schedule())) == 2

def test_renderer_without_packing_gets_no_copies():
  # the emulator's renderer doesn't ask for packed operands: one kernel for the matmul and one for the padded conv, values right
  try: Device["PYTHON"]
  except Exception as e: pytest.skip(f"no PYTHON device: {e}")
  assert not Device["PYTHON"].renderer.packs_operands and Device["CPU"].renderer.packs_operands
  rng = np.random.default_rng(5)
  an, bn = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 64), dtype=np.float32)
  xn, wn = rng.standard_normal((1, 4, 6, 6), dtype=np.float32), rng.standard_normal((32, 4, 3, 3), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1, PACKED_CONV_MIN=1):
    counts = {}
    for dev in ("CPU", "PYTHON"):
      mm = Tensor(an, device=dev) @ Tensor(bn, device=dev)
      conv = Tensor(xn, device=dev).conv2d(Tensor(wn, device=dev), padding=1)
      counts[dev] = (len(_kernels(s1 := mm.schedule())), len(_kernels(s2 := conv.schedule())))
      run_schedule(s1 + s2)
      np.testing.assert_allclose(mm.numpy(), an @ bn, rtol=1e-5, atol=1e-5)
      counts[dev + "_conv"] = conv.numpy()
  np.testing.assert_allclose(counts["CPU_conv"], counts["PYTHON_conv"], rtol=1e-5, atol=1e-5)
  # CPU: B's panels + product; the padded input's copy + the weight's copy + conv. PYTHON: the product alone, the conv alone
  assert counts["CPU"] == (2, 3) and counts["PYTHON"] == (1, 1)

def test_packed_conv_weight_matches_torch():
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(7)
  xn, wn, bn = rng.standard_normal((2, 8, 9, 9), dtype=np.float32), rng.standard_normal((32, 8, 3, 3), dtype=np.float32), rng.standard_normal(32, dtype=np.float32)
  with Context(PACKED_CONV_MIN=1):
    x, w, b = Tensor(xn, device="CPU", requires_grad=True), Tensor(wn, device="CPU", requires_grad=True), Tensor(bn, device="CPU")
    out = x.conv2d(w, b, padding=1)
    # the padded input's copy, the weight's copy (in panels of output channels) and the conv
    assert len(_kernels(x.detach().conv2d(w.detach(), padding=1).schedule())) == 3
    out.sum().backward()
  xt, wt = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
  ref = torch.nn.functional.conv2d(xt, wt, torch.tensor(bn), padding=1)
  ref.sum().backward()
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)

def test_packed_conv_grouped_strided_matches_torch():
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(9)
  xn, wn = rng.standard_normal((2, 8, 11, 11), dtype=np.float32), rng.standard_normal((64, 4, 3, 3), dtype=np.float32)
  with Context(PACKED_CONV_MIN=1):
    got = Tensor(xn, device="CPU").conv2d(Tensor(wn, device="CPU"), groups=2, stride=2, padding=1).numpy()
  ref = torch.nn.functional.conv2d(torch.tensor(xn), torch.tensor(wn), groups=2, stride=2, padding=1).numpy()
  np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("cout,groups,k,stride,padding", [(64, 1, 3, 1, 1), (128, 1, 1, 2, 0), (64, 2, 3, 1, 1), (48, 1, 3, 1, 0), (40, 1, 3, 1, 1)])
def test_conv_weight_panels_match_torch(cout, groups, k, stride, padding, pose_cpu):
  pose_cpu("avx512-2fma")   # (the panel widths below are AVX-512's, whatever the host is)
  # the weight is read in panels of output channels (cout/lanes, cin, *k, lanes): copied by the scheduler, or packed once by pack_conv_weight
  # and then read with no copy (1x1 and grouped convs too); 40 output channels make no panel: read as they are
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(cout + k)
  xn, wn = rng.standard_normal((2, 8, 10, 10), dtype=np.float32), rng.standard_normal((cout, 8 // groups, k, k), dtype=np.float32)
  ref = torch.nn.functional.conv2d(torch.tensor(xn), torch.tensor(wn), groups=groups, stride=stride, padding=padding).numpy()
  x, w = Tensor(xn, device="CPU"), Tensor(wn, device="CPU").realize()
  packed = w.pack_conv_weight(groups)
  assert (packed is w) == (cout == 40)
  # a depthwise conv's weight (one output channel per group) makes no panels: it stays as it is
  dw = Tensor.ones(64, 1, 3, 3, device="CPU").contiguous().realize()
  assert dw.pack_conv_weight(64) is dw and dw.pack_conv_weight() is not dw
  with Context(PACKED_CONV_MIN=1):
    def conv(wt:Tensor) -> Tensor: return x.conv2d(wt, groups=groups, stride=stride, padding=padding)
    # the padded input's copy, the weight's copy and the conv (a conv with no panels keeps its plain layout: the conv alone); a packed weight
    # needs no copy
    assert len(_kernels(conv(w).schedule())) == 1 + (cout != 40) * (1 + (padding > 0))
    assert len(_kernels(conv(packed).schedule())) == 1 + (cout != 40) * (padding > 0)
    np.testing.assert_allclose(conv(w).numpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv(packed).numpy(), ref, rtol=1e-4, atol=1e-4)
  # below the threshold nothing is copied, and the packed weight is still read right
  with Context(PACKED_CONV_MIN=1 << 40):
    assert len(_kernels(conv(packed).schedule())) == 1
    np.testing.assert_allclose(conv(packed).numpy(), ref, rtol=1e-4, atol=1e-4)

def test_conv_of_computed_input_copies_it_once():
  # a small conv of relu(x + b) with four weight panels: the relu is computed once into a buffer (not at every load of each panel)
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(11)
  xn, bn, wn = rng.standard_normal((2, 8, 9, 9), dtype=np.float32), rng.standard_normal((8, 1, 1), dtype=np.float32), \
    rng.standard_normal((128, 8, 1, 1), dtype=np.float32)
  ref = torch.nn.functional.conv2d(torch.relu(torch.tensor(xn) + torch.tensor(bn)), torch.tensor(wn), stride=2).numpy()
  x, b, w = Tensor(xn, device="CPU").realize(), Tensor(bn, device="CPU").realize(), Tensor(wn, device="CPU").realize().pack_conv_weight()
  with Context(PACKED_CONV_MIN=1 << 40):
    assert len(_kernels((x + b).relu().conv2d(w, stride=2).schedule())) == 2
    np.testing.assert_allclose((x + b).relu().conv2d(w, stride=2).numpy(), ref, rtol=1e-4, atol=1e-4)

def test_gpu_gets_no_copies():
  # an OpenCL device (PoCL in CI) runs the plain matmul: one kernel, right values
  try: Device["GPU"]
  except Exception as e: pytest.skip(f"no GPU device: {e}")
  assert not Device["GPU"].renderer.packs_operands
  rng = np.random.default_rng(6)
  an, bn = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 64), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    out = Tensor(an, device="GPU") @ Tensor(bn, device="GPU")
    assert len(_kernels(sched := out.schedule())) == 1
    run_schedule(sched)
  np.testing.assert_allclose(out.numpy(), an @ bn, rtol=1e-5, atol=1e-5)

def _graph(u) -> list:
  # a tensor graph as (op, dtype, arg) in order, blind to which device and which buffers it reads
  return [(x.op, x.dtype, None if x.op in (Ops.DEVICE, Ops.UNIQUE) else x.arg) for x in u.toposort()]

def test_conv_backward_graph_is_device_independent():
  # the front end builds a conv's gradients the same on every device; the channels-last copies of x and g and the batch's partial sums
  # appear only in the schedule of a device whose renderer packs operands (CPU), and both give torch's gradients
  torch = pytest.importorskip("torch")
  try: Device["PYTHON"]
  except Exception as e: pytest.skip(f"no PYTHON device: {e}")
  rng = np.random.default_rng(11)
  xn, wn, gn = rng.standard_normal((4, 6, 7, 7), np.float32), rng.standard_normal((16, 3, 3, 3), np.float32), rng.standard_normal((4, 16, 4, 4), np.float32)
  graphs, kernels, grads = {}, {}, {}
  for dev in ("CPU", "PYTHON"):
    x, w = Tensor(xn, device=dev), Tensor(wn, device=dev)
    dx, dw = x.conv2d(w, groups=2, stride=2, padding=1).gradient(x, w, gradient=Tensor(gn, device=dev))
    graphs[dev] = _graph(dx.uop.sink(dw.uop))
    with Context(CONV_GRAD_CHUNK=3000):   # 2 images a chunk
      kernels[dev] = len(_kernels(sched := dw.schedule()))
      run_schedule(sched)
    grads[dev] = dx.numpy(), dw.numpy()
  assert graphs["CPU"] == graphs["PYTHON"]
  # CPU: the padded x's copy, g's copy, two partial sums of 2 images each and their sum; PYTHON: one reduce
  assert kernels == {"CPU": 4, "PYTHON": 1}, kernels
  tx, tw = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
  torch.nn.functional.conv2d(tx, tw, groups=2, stride=2, padding=1).backward(torch.tensor(gn))
  for dev in ("CPU", "PYTHON"):
    np.testing.assert_allclose(grads[dev][0], tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads[dev][1], tw.grad.numpy(), rtol=1e-4, atol=1e-4)

def test_pack_conv_weight_only_where_packed(pose_cpu):
  pose_cpu("avx512-2fma")   # (the panel widths below are AVX-512's, whatever the host is)
  # pack_conv_weight asks the scheduler's packing rules for the layout: output channels innermost on CPU, the weight itself on PYTHON
  try: Device["PYTHON"]
  except Exception as e: pytest.skip(f"no PYTHON device: {e}")
  wn = np.random.default_rng(12).standard_normal((32, 4, 3, 3), np.float32)
  w = Tensor(wn, device="PYTHON").realize()
  assert w.pack_conv_weight() is w
  packed = Tensor(wn, device="CPU").realize().pack_conv_weight()
  np.testing.assert_equal(packed.numpy(), wn)
  assert packed.uop.st is not None and packed.uop.st.real_strides()[0] == 1

def test_layout_copy_of_a_single_use_copy_is_one_kernel():
  # a value made contiguous only to be copied into another layout is computed by that copy: one kernel; read by something else too, it
  # stays a buffer of its own
  xn = np.random.default_rng(14).standard_normal((6, 10), np.float32)
  x = Tensor(xn).realize()
  a = (x + 1).contiguous()
  b = a.permute(1, 0).contiguous()
  assert len(_kernels(sched := b.schedule())) == 1
  run_schedule(sched)
  np.testing.assert_allclose(b.numpy(), (xn + 1).T)
  np.testing.assert_allclose(a.numpy(), xn + 1)   # not realized by b's kernel: computed when asked
  a2 = (x + 2).contiguous()
  b2, c2 = a2.permute(1, 0).contiguous(), a2 * 3
  assert len(_kernels(sched := Tensor.schedule(b2, c2))) == 3
  run_schedule(sched)
  np.testing.assert_allclose(b2.numpy(), (xn + 2).T)
  np.testing.assert_allclose(c2.numpy(), (xn + 2) * 3, rtol=1e-6)

@pytest.mark.parametrize("x_grad", [False, True])
def test_conv_weight_grad_of_computed_x_and_g(x_grad):
  # a conv of relu(x + b) under a relu, as in a CNN: the weight gradient reads x from the copy the forward conv makes of the relu (no
  # channels-last copy of its own), and g (relu' times the upstream gradient, realized by the autograd) is computed straight into its
  # channels-last copy when no input gradient reads it. Forward: x's copy, the weight's panels, the conv; backward: g's copy, two partial
  # sums and their sum: 6 kernels (8 before: x's channels-last copy and g's buffer). With dx, g is a buffer (the transposed conv pads it).
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(13)
  xn, bn, wn, gn = rng.standard_normal((4, 8, 9, 9), np.float32), rng.standard_normal((1, 8, 1, 1), np.float32), \
    rng.standard_normal((16, 8, 3, 3), np.float32), rng.standard_normal((4, 16, 7, 7), np.float32)
  xb, b, g = Tensor(xn, device="CPU", requires_grad=x_grad).realize(), Tensor(bn, device="CPU").realize(), Tensor(gn, device="CPU").realize()
  w = Tensor(wn, device="CPU", requires_grad=True).realize()
  with Context(PACKED_CONV_MIN=1, CONV_GRAD_CHUNK=3000):   # 2 images a chunk
    out = (xb + b).relu().conv2d(w)
    grads = (out.relu() * g).sum().gradient(*((xb, w) if x_grad else (w,)))
    sched = Tensor.schedule(out, *grads)
    if not x_grad: assert len(_kernels(sched)) == 6, len(_kernels(sched))
    run_schedule(sched)
  tx, tw = torch.tensor(xn, requires_grad=x_grad), torch.tensor(wn, requires_grad=True)
  tout = torch.nn.functional.conv2d(torch.relu(tx + torch.tensor(bn)), tw)
  (torch.relu(tout) * torch.tensor(gn)).sum().backward()
  np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(grads[-1].numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
  if x_grad: np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("width", [14, 56])
def test_conv_panels_are_its_register_tiles_lanes(width):
  # a 3x3 conv's weight panels are as wide as the register tile the heuristics give its output rows (machine model: a 14-wide output on
  # 16 AVX2 registers gets 7 rows x 8 lanes, so 8-lane panels, every loaded line used whole); a weight packed with the output width, or
  # packed without it (the plain panels), is read with no copy, and both give torch's values
  torch = pytest.importorskip("torch")
  from tinygrad.renderer import register_tile
  from tinygrad.schedule.packing import conv_panel_lanes
  r = Device["CPU"].renderer
  if not r.packs_operands or r.machine is None or not r.vector_alu_lanes: pytest.skip("the CPU packs nothing here")
  tile = register_tile(r.machine, r.machine.simd_bytes // 4, r.vector_alu_lanes, width, 64, 3, 16 * 9)
  assert tile is not None and conv_panel_lanes(r, 64, 4, width, 3, 16 * 9) == tile[1]
  rng = np.random.default_rng(width)
  xn, wn = rng.standard_normal((1, 16, width, width), dtype=np.float32), rng.standard_normal((64, 16, 3, 3), dtype=np.float32) * 0.1
  ref = torch.nn.functional.conv2d(torch.tensor(xn), torch.tensor(wn), padding=1).numpy()
  x, w = Tensor(xn, device="CPU").realize(), Tensor(wn, device="CPU").realize()
  with Context(PACKED_CONV_MIN=1):
    for packed in (w.pack_conv_weight(out_width=width), w.pack_conv_weight()):
      # the padded input's copy and the conv
      assert len(_kernels(x.conv2d(packed, padding=1).schedule())) == 2
      np.testing.assert_allclose(x.conv2d(packed, padding=1).numpy(), ref, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("profile", ["avx512-2fma", "avx2-1fma"])
def test_gemm_with_residual_gets_the_plain_gemm_plan(profile, pose_cpu):
  # a residual added to the sums (a @ b + c, a relu of it) is the GEMM kernel's epilogue: its load walks the rows and the columns alike, and the
  # register tile and panel blocks are chosen from the reduce's own inputs as for a @ b (c's load made it a tile of 4 panels, no blocks: 2.5x
  # slower at 1024). Same opts as the plain product, right values.
  from tinygrad.opt.kernel import Kernel
  from tinygrad.opt.heuristic import hand_coded_optimizations
  pose_cpu(profile)
  rng = np.random.default_rng(5)
  an, bn, cn = (rng.standard_normal((256, 256), dtype=np.float32) for _ in range(3))
  def plan(out:Tensor) -> list:
    ast = _kernels(out.schedule())[-1].ast
    return hand_coded_optimizations(Kernel(ast, Device["CPU"].renderer))
  with Context(PACKED_DOT_MIN=1):
    a, b, c = (Tensor(x, device="CPU") for x in (an, bn, cn))
    want = plan(a @ b)
    assert any(o.op.name == "BLOCK" for o in want) or profile == "avx512-2fma", want
    for make, ref in ((lambda: a @ b + c, an @ bn + cn), (lambda: (a @ b + c).relu(), np.maximum(an @ bn + cn, 0))):
      assert plan(make()) == want
      np.testing.assert_allclose(make().numpy(), ref, rtol=1e-4, atol=1e-4)

def test_gemm_a_transposed_is_copied_rows_contiguous(pose_cpu):
  # a.T @ b (a weight gradient's x.T @ g): A is read across its rows. It is copied with its rows contiguous first (the tile's broadcasts
  # stepped a row of A, a power-of-two pitch, per reduce step: 115 ms against 26 at 1024 on Zen 3), and that transpose reads vectors along
  # the source's contiguous axis (a vector a step, a lane to each output row: 0.86 ms against 5.6 scalar)
  from tinygrad.opt.kernel import Kernel, OptOps, AxisType
  from tinygrad.opt.heuristic import hand_coded_optimizations
  pose_cpu("avx2-2fma")
  rng = np.random.default_rng(6)
  an, bn = rng.standard_normal((64, 96), dtype=np.float32), rng.standard_normal((64, 128), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor(an, device="CPU"), Tensor(bn, device="CPU")
    ks = _kernels((a.T @ b).schedule())
    assert len(ks) == 3, [k.ast.arg for k in ks]
    gemm = Kernel(ks[-1].ast, Device["CPU"].renderer)
    # the reduce walks A's copy with stride 1 and B's panels (16 AVX2 lanes wide) with stride 16, never a row of A (96) apart
    assert sorted(st.real_strides()[gemm.axes_of(AxisType.REDUCE)[0]] for st in gemm.sts[1:]) == [1, 16], gemm.sts
    copy = next(k for k in ks[:-1] if Kernel(k.ast, Device["CPU"].renderer).full_shape in ((96, 64), (64, 96)))
    assert any(o.op is OptOps.UPCAST for o in hand_coded_optimizations(Kernel(copy.ast, Device["CPU"].renderer)))
    np.testing.assert_allclose((a.T @ b).numpy(), an.T @ bn, rtol=1e-4, atol=1e-4)
    # a plain A and one read through a slice (rows contiguous, a longer pitch) aren't copied
    wide = Tensor(rng.standard_normal((96, 128), dtype=np.float32), device="CPU")
    assert len(_kernels((Tensor(an.T.copy(), device="CPU") @ b).schedule())) == 2
    assert len(_kernels((wide[:, :64] @ b).schedule())) == 2

@pytest.mark.parametrize("sa,sb", [((3, 16, 24), (3, 24, 64)), ((2, 3, 8, 16), (2, 3, 16, 32)), ((4, 16, 24), (24, 64)), ((2, 1, 8, 16), (3, 16, 32))])
def test_batched_packed_dot(sa, sb, pose_cpu):
  # a batched product packs each batch's B into column panels (*batch, n/cols, k, cols); a B shared by the batches (a weight) is copied once
  from tinygrad.uop.ops import UOp
  pose_cpu("avx2-2fma")
  rng = np.random.default_rng(len(sa) * 10 + len(sb))
  an, bn = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor(an, device="CPU", requires_grad=True), Tensor(bn, device="CPU", requires_grad=True)
    ks = _kernels((a @ b).schedule())
    assert len(ks) == 2, [k.ast.arg for k in ks]
    copy_out = next(u for u in ks[0].ast.toposort() if u.op is Ops.DEFINE_GLOBAL and u.arg == 0)
    assert isinstance(copy_out, UOp) and copy_out.dtype.size == bn.size, (copy_out.dtype, bn.shape)
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-4, atol=1e-4)
    (a @ b).sum().backward()
  torch = pytest.importorskip("torch")
  at, bt = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
  (at @ bt).sum().backward()
  np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-4, atol=1e-4)
