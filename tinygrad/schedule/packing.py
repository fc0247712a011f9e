# operand layouts for big multiply-reduces (matmul, conv, a conv's weight gradient) on devices whose renderer says they pay
# (Renderer.packs_operands: CPUs). The front end builds every matmul and conv, and their gradients, the same way on every device; these
# rules, run on the tensor graph before grouping, copy an operand into the layout the CPU kernel streams best. The copy is one more kernel,
# small next to the reduce it feeds.
from __future__ import annotations
from typing import cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, PatternMatcher, UPat
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.renderer import Renderer, register_tile
from tinygrad.helpers import prod, all_int, argsort, PACKED_DOT_MIN, PACKED_CONV_MIN, CONV_GRAD_CHUNK

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
  # (*batch, m, n, k) summed over k, A (stride 0 on n) times B (stride 0 on m, in any layout): B is copied into column panels
  # (*batch, n/cols, k, cols), so each panel is one sequential stream instead of rows a power-of-two pitch apart (which fall into the same
  # cache sets). A batch axis B is broadcast along (one weight for every batch) is copied once.
  if len(shape := r.src[0].shape) < 3 or r.arg != (Ops.ADD, (len(shape)-1,)) or not all_int(shape) or not dtypes.is_float(r.dtype): return None
  if prod(shape) < PACKED_DOT_MIN.value or (ren := _packing_renderer(r)) is None: return None
  nb = len(shape) - 3
  for x, y in ((a, b), (b, a)):
    if (xs := _strides(x)) is None or (ys := _strides(y)) is None or xs[-2] != 0 or ys[-3] != 0 or 0 in ys[-2:]: continue
    (m, n, k), batch, cols = shape[-3:], shape[:nb], matmul_panel_cols(ren, r.dtype.itemsize)
    # (B one panel already, read as it is: this rule's own result, whose panel axis of 1 reads as a broadcast)
    if n % cols or (n == cols and ys[-2:] == (1, cols)): return None
    bsrc = tuple(1 if st == 0 else s for s, st in zip(batch, ys[:nb]))
    panels = y.shrink(tuple((0, s) for s in bsrc) + ((0, 1), (0, n), (0, k))).reshape(bsrc + (n//cols, cols, k))
    panels = panels.permute(tuple(range(nb)) + (nb, nb+2, nb+1)).contiguous()
    y4 = panels.permute(tuple(range(nb)) + (nb, nb+2, nb+1)).reshape(bsrc + (1, n//cols, cols, k)).expand(batch + (m, n//cols, cols, k))
    # an A read across its rows (a.T @ b, a weight gradient's x.T @ g) is copied with its rows contiguous first: the tile's broadcasts would
    # step a whole row of A per reduce step, a power-of-two pitch whose lines all fall into one cache set (19 GFLOP/s at 1024 on Zen 3)
    if nb == 0 and xs[2] not in (0, 1) and xs[0] == 1:
      x = x.shrink(((0, m), (0, 1), (0, k))).reshape((m, k)).contiguous().reshape((m, 1, k)).expand((m, n, k))
    return (x.reshape(batch + (m, n//cols, cols, k)) * y4).r(Ops.ADD, (nb+3,)).reshape(batch + (m, n, 1))
  return None

def matmul_panel_cols(ren:Renderer, itemsize:int) -> int: return 2 * (ren.machine.simd_bytes if ren.machine is not None else 64) // itemsize
def matmul_weight_panels(w:UOp) -> int|None:
  # the columns per panel pack_matmul copies a matmul's B (*batch, k, n) into on w's device, None where it packs nothing or n doesn't split
  if len(w.shape) < 2 or not all_int(w.shape) or (r := _packing_renderer(w)) is None: return None
  return cols if cast(int, w.shape[-1]) % (cols := matmul_panel_cols(r, w.dtype.itemsize)) == 0 else None

def conv_panel_lanes(renderer:Renderer, cout:int, itemsize:int, rows:int|None=None, taps:int=1, depth:int=0) -> int|None:
  """The output channels of one weight panel: the lanes of the register tile the heuristics give a conv whose output rows are `rows` wide and
  whose window rows are `taps` wide (a tile of 8 lanes on 16-lane panels read half of every line and took 4.4 ms for a 256-channel 14x14
  conv, against 3.3 on 8-lane panels); without them (or a 1x1 conv, whose tile rows span its merged output) two SIMD registers' lanes,
  else one. None if none divides cout."""
  m, simd = renderer.machine, renderer.machine.simd_bytes if renderer.machine is not None else renderer.simd_bytes
  if m is not None and renderer.vector_alu_lanes and rows is not None and 1 < taps and \
     (tile := register_tile(m, simd // itemsize, renderer.vector_alu_lanes, rows, cout, t := taps if taps <= 4 else 1, depth if t > 1 else 0)) \
     is not None and tile[1] >= 8:
    return tile[1]
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
    if not lanes or (ren := _packing_renderer(r)) is None or \
       (cols := conv_panel_lanes(ren, shape[v := lanes[-1]], r.dtype.itemsize, shape[out[-1]], shape[max(axes)], prod(shape[a] for a in axes))) \
       is None: return None
    # a 1x1 conv reduces over the input channels alone: told from a matmul (reduce axis last) by its taps, size-1 axes after the channels
    if len(axes) < 2 and max(axes) == len(shape) - 1: return None
    # already in panels (a weight packed once, Tensor.pack_conv_weight, maybe without the output width: the plain choice's panels are read
    # as they are): a lane stride of 1 and panels that are the outermost, dense axis
    def in_panels(c:int) -> bool:
      wp = w.reshape(shape[:v] + (shape[v] // c, c) + shape[v+1:])
      ps = wp.st.real_strides() if wp.st is not None and all(vw.mask is None for vw in wp.st.views) else (None,)
      return all_int(ps) and ps[v+1] == 1 and (wp.shape[v] == 1 or ps[v] == prod(n for n, s in zip(wp.shape, ps) if 0 < s < ps[v]))
    cols = next((c for c in (cols, conv_panel_lanes(ren, shape[v], r.dtype.itemsize)) if c is not None and in_panels(c)), cols)
    split = shape[:v] + (shape[v] // cols, cols) + shape[v+1:]
    wp, copies = w.reshape(split), 0
    if not in_panels(cols):
      if small: return None
      copies += 1
      data = wp.shrink(tuple((0, 1) if s == 0 else (0, n) for s, n in zip(ws[:v] + (1, 1) + ws[v+1:], split)))
      order = [v] + [i for i in range(len(split)) if i not in (v, v+1)] + [v+1]
      wp = data.permute(tuple(order)).contiguous().permute(tuple(sorted(range(len(split)), key=order.__getitem__))).expand(split)
    pads, p = [], x
    while p.op in GroupOp.Movement:
      if p.op is Ops.PAD: pads.append(p)
      p = p.src[0]
    # (a blocked input, another conv's output, is copied channels last: both read and write whole runs of channels)
    if pads and not small and any(b or e for b, e in pads[-1].arg):
      x, copies = x.substitute({pads[-1]: _copy(pads[-1])}), copies + 1
    # an input computed by elementwise ops (a relu of the last layer's sum) is computed once into a buffer, not again at every load of every
    # panel and tap (small convs too, where it would be computed again for four or more panels)
    # (of it and the views of it the conv reads through, the smallest: a strided 1x1 conv reads a quarter of it, and from the copy contiguously)
    elif (not small or split[v] >= 4) and (p.op in GroupOp.ALU or p.op is Ops.CAST):
      q = min(reversed(_chain(x)), key=lambda u: prod(u.shape) if all_int(u.shape) else prod(p.shape))
      x, copies = x.substitute({q: _copy(q)}), copies + 1
    # (a reduce already split into one panel's lanes, reading packed operands, stays: this rule's own result)
    if not copies and split[v] == 1: return None
    # the sums are stored blocked, (..., panels, *spatial, lanes) as the tile computes them: a panel's lanes are one vector store where in
    # the plain layout they are lanes planes apart (one scalar store each). Readers see them through a permute (push_blocked)
    raxes = tuple(a + (a > v) for a in axes)
    perm = tuple([i for i in range(len(split)) if i not in raxes and i != v+1] + [v+1] + list(raxes))
    blocked = (x.reshape(split) * wp).permute(perm).r(Ops.ADD, tuple(range(len(split) - len(raxes), len(split))))
    return blocked.permute(argsort(perm)).reshape(r.shape)
  return None

def _blocked_view(u:UOp) -> tuple[UOp, int]|None:
  # u = reshapes of a PERMUTE that undoes the one under a reduce (a conv's blocked sums, pack_conv, or a pool computed blocked, block_reduce),
  # maybe of elementwise ops of it (push_blocked): that PERMUTE and its lanes axis, the reduce's last kept one. (A short walk: epilogues
  # are a few ops.)
  while u.op is Ops.RESHAPE: u = u.src[0]
  if u.op is not Ops.PERMUTE: return None
  stack, seen = [u.src[0]], set[UOp]()
  while stack and len(seen) < 32:
    if (x := stack.pop()) in seen: continue
    seen.add(x)
    if x.op is Ops.REDUCE_AXIS and x.src[0].op is Ops.PERMUTE and tuple(argsort(x.src[0].arg)) == u.arg: return u, x.src[0].arg[min(x.arg[1])-1]
    if x.op in GroupOp.ALU or x.op is Ops.CAST: stack.extend(x.src)
  return None

def push_blocked(e:UOp) -> UOp|None:
  # an elementwise op of a conv's blocked sums (its bias, residual add, relu) is computed blocked, under the permute: the conv's kernel
  # stores it as its epilogue (grouper.epilogue_end) with the same vector stores, and the next one adds two blocked values lane by lane
  views = [_blocked_view(s) for s in e.src]
  if (p := next((bv[0] for bv in views if bv is not None), None)) is None: return None
  srcs = [bv[0].src[0] if bv is not None and bv[0].arg == p.arg and bv[0].shape == p.shape else
          s.reshape(p.shape).permute(tuple(argsort(p.arg))) for s, bv in zip(e.src, views)]
  return e.replace(src=tuple(srcs)).permute(p.arg).reshape(e.shape)

def _lanes(u:UOp) -> int|None:
  # the lanes of the blocked value u (batch, channels, ...) is computed from by movement and elementwise ops, None if none
  stack, seen = [u], set[UOp]()
  while stack and len(seen) < 64:
    if (x := stack.pop()) in seen: continue
    seen.add(x)
    if x.op is Ops.PERMUTE and (bv := _blocked_view(x)) is not None: return lanes if isinstance(lanes := bv[0].shape[bv[1]], int) else None
    if x.op in GroupOp.Movement or x.op in GroupOp.ALU or x.op is Ops.CAST: stack.extend(x.src)
  return None

def _lift(u:UOp, lanes:int, memo:dict[UOp, UOp|None]) -> UOp|None:
  """u (batch, channels, ...), built from blocked values by elementwise ops and movement ops that leave the batch and channel axes alone
  (a pool's padding and windows): the same values as (batch, channels/lanes, lanes, ...), built on the blocked values directly, so a
  kernel reads them through one view with plain index maths instead of a stack whose channel index divides by the lanes. None if not."""
  # (a long elementwise chain isn't lifted: a pool or copy's input is a few ops, and the recursion stays shallow)
  if u in memo or len(memo) > 128: return memo.get(u)
  memo[u] = ret = None
  if len(u.shape) >= 2 and all_int(u.shape) and u.shape[1] % lanes == 0:
    split = u.shape[:1] + (u.shape[1] // lanes, lanes) + u.shape[2:]
    s = u.src[0] if u.src else u
    if (bv := _blocked_view(u)) is not None:
      # (the conv's sums may have more axes before the lanes, its groups: all of them together are the batch and the panels)
      if bv[0].shape[bv[1]] == lanes and prod(bv[0].shape[:bv[1]]) == split[0] * split[1]: ret = bv[0].reshape(split)
    elif u.op in GroupOp.ALU or u.op is Ops.CAST:
      srcs = [_lift(x, lanes, memo) if x.shape == u.shape else None for x in u.src]
      if any(x is not None for x in srcs): ret = u.replace(src=tuple(x if x is not None else y.reshape(split) for x, y in zip(srcs, u.src)))
    elif u.op in (Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.PERMUTE) and s.shape[:2] == u.shape[:2] and \
        (ls := _lift(s, lanes, memo)) is not None:
      if u.op in (Ops.RESHAPE, Ops.EXPAND): ret = ls._mop(u.op, split)
      elif u.op is Ops.PAD: ret = ls.pad(u.arg[:1] + ((0, 0),) + u.arg[1:])
      elif u.op is Ops.SHRINK: ret = ls.shrink(u.arg[:1] + ((0, split[1]), (0, lanes)) + u.arg[2:])
      elif u.arg[:2] == (0, 1): ret = ls.permute((0, 1, 2) + tuple(a + 1 for a in u.arg[2:]))
  memo[u] = ret
  return ret

def block_reduce(r:UOp) -> UOp|None:
  # a reduce over other axes than the channels (a pool, a mean over the image) of a blocked value: computed blocked too, the lanes innermost
  # and stored blocked, so it loads and stores whole vectors of lanes where the plain order reads each value lanes apart, through a
  # stack of views. (Not a reduce blocked already: its lanes go right before the reduced axes, as here and in pack_conv.)
  x, axes = r.src[0], r.arg[1]
  if x.op is Ops.PERMUTE and 2 in x.arg and set(x.arg[x.arg.index(2)+1:]) == set(axes): return None
  if 0 in axes or 1 in axes or (lanes := _lanes(x)) is None or (lx := _lift(x, lanes, {})) is None: return None
  perm = (0, 1) + tuple(i for i in range(3, len(lx.shape)) if i-1 not in axes) + (2,) + tuple(a + 1 for a in axes)
  return lx.permute(perm).r(r.arg[0], tuple(range(len(perm) - len(axes), len(perm)))).permute(tuple(argsort(perm))).reshape(r.shape)

# a channels-last copy whose pixels are a multiple of this many bytes apart gets one more block of lanes per pixel (zeros nothing reads):
# L1 caches repeat their sets every 4 KB (32 KB 8-way, 48 KB 12-way), so 1 KB apart a window's 3 rows of 9 pixels share 4 sets, 32 lines,
# with the weights streaming through them too. 512 channels (2 KB): the last ResNet-18 convs took 8.5 ms where 520 channels took 4.2-4.8.
SKEW_PITCH = 1024

def _copy(u:UOp) -> UOp:
  # u realized for a conv to read: a blocked u is copied channels last (both sides are runs of whole channels), any other as it is
  if len(u.shape) < 3 or (lanes := _lanes(u)) is None or (lu := _lift(u, lanes, {})) is None: return u.contiguous()
  skew = lu.op is Ops.PAD and lu.shape[1] * lanes * u.dtype.itemsize % SKEW_PITCH == 0
  last, whole = (0,) + tuple(range(3, len(lu.shape))) + (1, 2), tuple((0, n) for n in lu.shape)
  padded = lu.src[0].pad(lu.arg[:1] + ((0, 1),) + lu.arg[2:]) if skew else lu
  return padded.permute(last).contiguous().permute(tuple(argsort(last))).shrink(whole).reshape(u.shape)

def conv_weight_panels(w:UOp, groups:int=1, rows:int|None=None) -> int|None:
  # the output channels per panel a conv weight (cout, cin/groups, *k) is best stored in for its device (Tensor.pack_conv_weight realizes
  # a model's constant weights so once), None where the renderer packs nothing and the plain layout is best (or a group's channels don't
  # fill whole panels)
  if len(w.shape) < 3 or not all_int(w.shape) or (r := _packing_renderer(w)) is None or cast(int, w.shape[0]) % groups: return None
  depth = prod(cast(tuple[int, ...], w.shape[1:]))
  return conv_panel_lanes(r, cast(int, w.shape[0]) // groups, w.dtype.itemsize, rows, cast(int, w.shape[-1]), depth)

def _channels_last(u:UOp) -> UOp:
  # the same (bs, c, *spatial) values, read from a copy with the channels innermost
  last = (0,) + tuple(range(2, len(u.shape))) + (1,)
  return u.permute(last).contiguous().permute(tuple(argsort(last)))

def _chain(u:UOp) -> list[UOp]:
  # u and the sources of its movement ops, top down to the first node that isn't one
  ret = [u]
  while ret[-1].op in GroupOp.Movement: ret.append(ret[-1].src[0])
  return ret

def pack_conv_grad(r:UOp, a:UOp, b:UOp) -> UOp|None:
  # a conv's weight gradient as Tensor._conv_grad builds it: the windows of x (bs, groups, 1, cin_g, *o, *k) times g (bs, groups, rcout, 1,
  # *o, 1...), summed (maybe in a wider dtype) over the batch and the output positions. Here x (padded, unless computed) and g are read
  # from channels-last copies (the output tile's channels, SIMD lanes and rows, load contiguously) and the batch is summed in chunks whose
  # x and g stay in a core's cache while every output tile reads them: partial sums, then their sum.
  shape, axes = r.src[0].shape, r.arg[1]
  n = (len(shape) - 4) // 2
  if r.arg[0] is not Ops.ADD or n < 1 or len(shape) != 4 + 2*n or 0 not in axes or not set(axes) <= {0, *range(4, 4+n)}: return None
  if not all_int(shape) or shape[0] < 1 or not dtypes.is_float(r.dtype) or _packing_renderer(r) is None: return None
  def pre(u:UOp) -> tuple: return u.src[0].shape if u.op is Ops.EXPAND else u.shape
  bs, groups, rcout, cin_g = shape[:4]
  for x, g in ((a, b), (b, a)):
    if pre(x)[2] == 1 and pre(g)[3] == 1 and all(s == 1 for s in pre(g)[4+n:]): break
  else: return None
  # g: the (bs, cout, *o) tensor reshaped into the product; x: its deepest (bs, cin, *spatial) view, taken padded where it is padded
  gt = next((u for u in _chain(g) if u.shape == (bs, groups*rcout) + tuple(shape[4:4+n])), None)
  xc = _chain(x)
  xs = [i for i, u in enumerate(xc) if u.st is not None and len(u.shape) == n+2 and u.shape[:2] == (bs, groups*cin_g)]
  if gt is None or not xs: return None
  i = xs[-1]
  while i > 0 and xc[i-1].op is Ops.PAD and i-1 in xs: i -= 1
  xt = xc[i]
  per_image = (prod(xt.shape) + prod(gt.shape)) // bs * a.dtype.itemsize
  chunk = next(c for c in range(max(1, min(bs, CONV_GRAD_CHUNK.value // max(per_image, 1))), 0, -1) if bs % c == 0)
  split = (bs // chunk, chunk) + tuple(shape[1:])
  # an x computed by elementwise ops (a relu of the last layer) is read from the plain copy the forward conv makes of it (pack_conv): one
  # copy serves both, where a channels-last copy of its own costs a pass over x for about what the weight gradient's kernel gains from it
  xcopy = xt.contiguous() if xt.op in GroupOp.ALU or xt.op is Ops.CAST else _channels_last(xt)
  prods = x.substitute({xt: xcopy}).reshape(split) * g.substitute({gt: _channels_last(gt)}).reshape(split)
  # the product's output channels go last: they are the tile's SIMD lanes (g's contiguous channels) and the input channels its rows, so no
  # axis of x's windows looks like a GEMM's panel to cut (that put the batch chunks inside, streaming all of x and g once per tap); the
  # chunks' partial sums are summed in that order too (contiguous rows) and read back through a permute
  perm = (0, 1, 2, 4) + tuple(range(5, 5+2*n)) + (3,)
  part = prods.permute(perm).cast(r.dtype).r(Ops.ADD, (1,) + tuple(range(4, 4+n)))
  return part.r(Ops.ADD, (0,)).permute(tuple(argsort(perm))).reshape(r.shape)

def relayout_only_copies(sink:UOp) -> set[UOp]:
  """The CONTIGUOUS nodes (of a computed value) whose one consumer, through reshapes and permutes alone, is another CONTIGUOUS: a value
  realized only to be copied into another layout (a conv's g, realized by the autograd for its custom backward, then copied channels-last
  for the weight gradient when no input gradient reads it). The copy can compute the value itself: one pass over memory less."""
  users: dict[UOp, list[UOp]] = {}
  for u in sink.toposort():
    for s in u.src: users.setdefault(s, []).append(u)
  ret: set[UOp] = set()
  for c, us in users.items():
    if c.op is not Ops.CONTIGUOUS or len(us) != 1 or c.src[0].op is Ops.BUFFER: continue
    u = us[0]
    while u.op in (Ops.RESHAPE, Ops.PERMUTE) and len(users.get(u, ())) == 1: u = users[u][0]
    if u.op is Ops.CONTIGUOUS and u is not us[0]: ret.add(c)
  return ret

def read_padded_copies(sink:UOp) -> dict[UOp, UOp]:
  """A computed value whose padded copy (a conv's input, _copy) is made: its other readers (the residual add) read it from that copy,
  through a view, so the copy is its one reader and the kernel that computes it stores it padded (kernelize.padded_store). Returned: the
  readers and their replacements."""
  from tinygrad.schedule.kernelize import padded_store
  users: dict[UOp, list[UOp]] = {}
  for u in (topo := sink.toposort()):
    for s in u.src: users.setdefault(s, []).append(u)
  ret: dict[UOp, UOp] = {}
  for c in topo:
    if c.op is not Ops.CONTIGUOUS or (ps := padded_store(c)) is None or not (ps[0].op in GroupOp.ALU or ps[0].op is Ops.REDUCE_AXIS): continue
    # each node of the chain from the value up to the copy, as a view of the copy
    pairs, view, level = list[tuple[UOp, UOp]](), c, c.src[0]
    while True:
      if level.op is Ops.RESHAPE: view = view.reshape(level.src[0].shape)
      elif level.op is Ops.PERMUTE: view = view.permute(tuple(argsort(level.arg)))
      else: view = view.shrink(tuple((b, s - a) for (b, a), s in zip(level.arg, level.shape)))
      pairs.append((level.src[0], view))
      if (level := level.src[0]) is ps[0]: break
    of, inside = dict(pairs), {c, c.src[0]} | {u for u, _ in pairs[:-1]}
    readers = {r for n in of for r in users.get(n, []) if r not in inside}
    if any(r.op is Ops.SINK or r in ret for r in readers): continue
    for r in readers: ret[r] = r.replace(src=tuple(of.get(s, s) for s in r.src))
  return ret

replace_readers = PatternMatcher([(UPat(GroupOp.All, name="u"), lambda ctx, u: ctx.get(u))])

merge_relayout_copies = PatternMatcher([(UPat(Ops.CONTIGUOUS, name="c"), lambda ctx, c: c.src[0] if c in ctx else None)])

pack_operands = PatternMatcher([
  (UPat(Ops.REDUCE_AXIS, src=(UPat.any(prod_pat := UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), prod_pat.cast()),), name="r"), pack_conv_grad),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))),), name="r"), pack_matmul),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MUL, src=(UPat.var("x"), UPat.var("w"))),), name="r"), pack_conv),
  (UPat(GroupOp.ALU, name="e"), push_blocked),
  (UPat(Ops.REDUCE_AXIS, name="r"), block_reduce),
])
