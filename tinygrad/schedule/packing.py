# operand layouts for big multiply-reduces (matmul, conv) on devices whose renderer says they pay (Renderer.packs_operands: CPUs). The front
# end builds every matmul and conv the same way; these rules, run on the tensor graph before grouping, copy an operand into the layout the
# CPU kernel streams best. The copy is one more kernel, small next to the reduce it feeds.
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, PatternMatcher, UPat
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.helpers import prod, all_int, PACKED_DOT_MIN, PACKED_CONV_MIN

def _packing_renderer(u:UOp):
  # the renderer of u's device if it asks for packed operands, else None (a device that can't open, or many devices, packs nothing)
  try: r = Device[u.device].renderer if isinstance(u.device, str) else None
  except Exception: return None
  return r if r is not None and r.packs_operands else None

def _strides(u:UOp) -> tuple[int, ...]|None:
  # the strides of a plain strided view (no mask, one view), None otherwise
  if u.st is None or len(u.st.views) != 1 or u.st.views[0].mask is not None: return None
  rs = u.st.real_strides()
  return rs if all(isinstance(s, int) for s in rs) else None  # type: ignore[return-value]

def pack_matmul(r:UOp, a:UOp, b:UOp) -> UOp|None:
  # (m, n, k) summed over k, A (stride 0 on n) times B (stride 0 on m, in any layout): B is copied into column panels (n/cols, k, cols), so each
  # panel is one sequential stream instead of rows a power-of-two pitch apart (which fall into the same cache sets)
  if r.arg != (Ops.ADD, (2,)) or len(shape := r.src[0].shape) != 3 or not all_int(shape) or not dtypes.is_float(r.dtype): return None
  if prod(shape) < PACKED_DOT_MIN.value or (ren := _packing_renderer(r)) is None: return None
  for x, y in ((a, b), (b, a)):
    if (xs := _strides(x)) is None or (ys := _strides(y)) is None or xs[1] != 0 or ys[0] != 0 or 0 in ys[1:]: continue
    (m, n, k), cols = shape, 2 * (ren.machine.simd_bytes if ren.machine is not None else 64) // r.dtype.itemsize
    if n % cols: return None
    panels = y.shrink(((0, 1), (0, n), (0, k))).reshape((n//cols, cols, k)).permute((0, 2, 1)).contiguous()
    y4 = panels.permute((0, 2, 1)).reshape((1, n//cols, cols, k)).expand((m, n//cols, cols, k))
    return (x.reshape((m, n//cols, cols, k)) * y4).r(Ops.ADD, (3,)).reshape((m, n, 1))
  return None

def pack_conv(r:UOp, x:UOp, w:UOp) -> UOp|None:
  # a conv (several reduce axes: channels and taps) whose weight (stride 0 on the last output axis) is read with the output channels, the
  # SIMD lanes of the CPU tile, at a stride: a copy of the weight with those channels innermost makes the loads contiguous. A padded input
  # is copied once padded, so the inner loop's loads need no bounds checks.
  shape, axes = r.src[0].shape, r.arg[1]
  if r.arg[0] is not Ops.ADD or len(axes) < 2 or not all_int(shape) or not dtypes.is_float(r.dtype): return None
  if prod(shape) < PACKED_CONV_MIN.value: return None
  out = [i for i in range(len(shape)) if i not in axes and shape[i] > 1]
  for x, w in ((x0 := x, w0 := w), (w, x)):
    # (x, the windows of a padded input, may be a view of views: an axis whose stride isn't one number still isn't broadcast)
    if not out or x.st is None or (ws := _strides(w)) is None or ws[out[-1]] != 0 or (xs := x.st.real_strides())[out[-1]] == 0: continue
    lanes = [i for i in out if xs[i] == 0 and ws[i] != 0]
    if not lanes or shape[v := lanes[-1]] % 16 or _packing_renderer(r) is None: return None
    if ws[v] != 1:
      data = w.shrink(tuple((0, 1) if s == 0 else (0, n) for s, n in zip(ws, shape)))
      order = [i for i in range(len(shape)) if i != v] + [v]
      w = data.permute(tuple(order)).contiguous().permute(tuple(sorted(range(len(shape)), key=order.__getitem__))).expand(shape)
    pads, p = [], x
    while p.op in GroupOp.Movement:
      if p.op is Ops.PAD: pads.append(p)
      p = p.src[0]
    if pads and any(b or e for b, e in pads[-1].arg): x = x.substitute({pads[-1]: pads[-1].contiguous()})
    return None if {x, w} == {x0, w0} else (x * w).r(Ops.ADD, axes)
  return None

pack_operands = PatternMatcher([
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))),), name="r"), pack_matmul),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("x"), UPat.var("w"))),), name="r"), pack_conv),
])
