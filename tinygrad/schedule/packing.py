# operand layouts for big multiply-reduces (matmul, conv) on devices whose renderer says they pay (Renderer.packs_operands: CPUs). The front
# end builds every matmul and conv the same way; these rules, run on the tensor graph before grouping, copy an operand into the layout the
# CPU kernel streams best. The copy is one more kernel, small next to the reduce it feeds.
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, PatternMatcher, UPat
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.renderer import Renderer
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

def conv_panel_lanes(renderer:Renderer, cout:int, itemsize:int) -> int|None:
  # the output channels of one weight panel: two SIMD registers' lanes (the register tile's width), else one; None if neither divides cout
  simd = renderer.machine.simd_bytes if renderer.machine is not None else renderer.simd_bytes
  return next((c for c in (2 * simd // itemsize, simd // itemsize) if c >= 8 and cout % c == 0), None)

def pack_conv(r:UOp, x:UOp, w:UOp) -> UOp|None:
  # a conv (several reduce axes: channels and taps) whose weight (stride 0 on the last output axis) is read with the output channels, the
  # SIMD lanes of the CPU tile. The output channels are split into panels of a register tile's lanes and the weight is read from a copy
  # laid out panel by panel, (cout/lanes, cin, *taps, lanes): the tile's whole reduce streams one contiguous panel, which stays in cache
  # while every output position passes over it (output channels innermost instead would put a panel's rows cout apart, a power of two
  # that maps them all to a few cache sets). A padded input is copied once padded, so the inner loop's loads need no bounds checks.
  shape, axes = r.src[0].shape, r.arg[1]
  if r.arg[0] is not Ops.ADD or not all_int(shape) or not dtypes.is_float(r.dtype): return None
  # below the threshold nothing is copied, but a weight packed already (Tensor.pack_conv_weight) is still read panel by panel
  small = prod(shape) < PACKED_CONV_MIN.value
  out = [i for i in range(len(shape)) if i not in axes and shape[i] > 1]
  for x, w in ((x, w), (w, x)):
    # (x, the windows of a padded input, and w, a weight packed in panels, may be views of views: an axis whose stride isn't one number still
    # isn't broadcast)
    if not out or x.st is None or w.st is None or (ws := w.st.real_strides())[out[-1]] != 0 or (xs := x.st.real_strides())[out[-1]] == 0: continue
    lanes = [i for i in out if xs[i] == 0 and ws[i] != 0]
    if not lanes or (ren := _packing_renderer(r)) is None or (cols := conv_panel_lanes(ren, shape[v := lanes[-1]], r.dtype.itemsize)) is None:
      return None
    # a 1x1 conv reduces over the input channels alone: told from a matmul (reduce axis last) by its taps, size-1 axes after the channels
    if len(axes) < 2 and max(axes) == len(shape) - 1: return None
    split = shape[:v] + (shape[v] // cols, cols) + shape[v+1:]
    wp, copies = w.reshape(split), 0
    # already in panels (a weight packed once, Tensor.pack_conv_weight): a lane stride of 1 and panels that are the outermost, dense axis
    ps = wp.st.real_strides() if wp.st is not None and all(vw.mask is None for vw in wp.st.views) else (None,)
    if not all_int(ps) or ps[v+1] != 1 or (split[v] > 1 and ps[v] != prod(n for n, s in zip(split, ps) if 0 < s < ps[v])):
      if small: return None
      copies += 1
      data = wp.shrink(tuple((0, 1) if s == 0 else (0, n) for s, n in zip(ws[:v] + (1, 1) + ws[v+1:], split)))
      order = [v] + [i for i in range(len(split)) if i not in (v, v+1)] + [v+1]
      wp = data.permute(tuple(order)).contiguous().permute(tuple(sorted(range(len(split)), key=order.__getitem__))).expand(split)
    pads, p = [], x
    while p.op in GroupOp.Movement:
      if p.op is Ops.PAD: pads.append(p)
      p = p.src[0]
    if pads and not small and any(b or e for b, e in pads[-1].arg): x, copies = x.substitute({pads[-1]: pads[-1].contiguous()}), copies + 1
    # an input computed by elementwise ops (a relu of the last layer's sum) is computed once into a buffer, not again at every load of every
    # panel and tap (small convs too, where it would be computed again for four or more panels)
    elif (not small or split[v] >= 4) and (p.op in GroupOp.ALU or p.op is Ops.CAST): x, copies = x.substitute({p: p.contiguous()}), copies + 1
    # (a reduce already split into one panel's lanes, reading packed operands, stays: this rule's own result)
    if not copies and split[v] == 1: return None
    return (x.reshape(split) * wp).r(Ops.ADD, tuple(a + (a > v) for a in axes)).reshape(r.shape)
  return None

pack_operands = PatternMatcher([
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))),), name="r"), pack_matmul),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("x"), UPat.var("w"))),), name="r"), pack_conv),
])
