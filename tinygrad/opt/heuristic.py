# the optimizations chosen without search (NOOPT=1 turns them off, BEAM=n searches instead)
from __future__ import annotations
import os
from typing import cast
from tinygrad.opt.kernel import Kernel, Opt, OptOps, AxisType, KernelOptError
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sint
from tinygrad.dtype import PtrDType
from tinygrad.renderer import MachineModel, register_tile
from tinygrad.helpers import prod, all_int, CPU_THREADS, THREAD_MIN_WORK, USE_TC, TC_SELECT, TC_OPT

def cpu_threads(m:MachineModel|None=None) -> int: return CPU_THREADS.value or (m.cores if m is not None else os.cpu_count() or 1)

def _try(k:Kernel, opt:Opt, opts:list[Opt]) -> bool:
  try: k.apply_opt(opt)
  except KernelOptError: return False
  opts.append(opt)
  return True

def _largest_divisor(n:int, choices:tuple[int, ...]) -> int|None: return next((c for c in choices if n % c == 0), None)

def _overlap(row_stride:sint|None, tap_stride:sint|None, taps:sint) -> bool:
  # whether neighbouring rows of windows (taps of tap_stride, rows row_stride apart in the input) read some input in common
  return isinstance(row_stride, int) and isinstance(tap_stride, int) and isinstance(taps, int) and 0 < row_stride < tap_stride * taps

def hand_coded_optimizations(k:Kernel) -> list[Opt]:
  k = k.copy()
  opts: list[Opt] = []
  if not all(isinstance(s, int) for s in k.full_shape): return opts
  # a matmul the device has a tensor core for runs on it (the first (N, M, K) axis choice that fits)
  if USE_TC and k.opts.tensor_cores and _try(k, Opt(OptOps.TC, 0, (TC_SELECT.value, TC_OPT.value)), opts): return opts
  reduce_axes = k.axes_of(AxisType.REDUCE)
  global_axes = k.axes_of(AxisType.GLOBAL)
  # a row kernel (softmax, layernorm: see grouper.row_reduce) loops over a row once per reduce and once for the output: each of those loops
  # gets a SIMD register's lanes (vector accumulators, vector stores) and the reduces a short unroll more, so a loop adds a few vectors at once
  row_axes = [a for a in global_axes if any(st.shape[a] == 1 for st in k.sts) and k.full_shape[a] != 1]
  # (also a row kernel reduced again over the row, a cross entropy's sum of log_softmax: its reduces each have an axis of their own)
  if reduce_axes and (row_axes or len({r.arg[1] for r in k.reduceops}) > 1) and k.opts.vector_alu_lanes:
    width = k.opts.simd_bytes // max(r.dtype.itemsize for r in k.reduceops)
    for i in range(len(reduce_axes)):
      if (amt := _largest_divisor(k.full_shape[k.axes_of(AxisType.REDUCE)[i]], (width, 8, 4))) is not None: _try(k, Opt(OptOps.UNROLL, i, amt), opts)
    for i in range(len(reduce_axes)):
      if (amt := _largest_divisor(k.full_shape[k.axes_of(AxisType.REDUCE)[i]], (4, 2))) is not None: _try(k, Opt(OptOps.UNROLL, i, amt), opts)
    if row_axes and (amt := _largest_divisor(k.full_shape[row_axes[-1]], (width, 8, 4))) is not None:
      _try(k, Opt(OptOps.UPCAST, k.axes_of(AxisType.GLOBAL).index(row_axes[-1]), amt), opts)
  # a reduce with broadcast inputs (matmul, conv): a register tile of outputs, each loaded value used by several accumulators.
  # The axis some input reads contiguously gets a SIMD register's width of lanes, another broadcast axis a few rows.
  view_of = {v.arg: i for i, v in enumerate(k.view_uops)}
  # (the reduce's own inputs: an epilogue's load, a residual added to the sums, walks the rows and the columns alike and hid which axis is
  # which: a @ b + c got a tile of 4 panels instead of 4 rows, and no panel blocks, 65 ms at 1024 on Zen 3 where a @ b took 25)
  in_reduce = {u for r in k.reduceops for u in r.toposort()}
  loads = [u for u in k.ast.toposort() if u.op is Ops.LOAD and u.src[1].arg in view_of and u in in_reduce]
  load_sts = [k.sts[view_of[u.src[1].arg]] for u in loads]
  # it pays only where every input the reduce walks is reused across some output axis (not a row sum whose parameters are broadcast)
  walked = [strides for st in load_sts if any((strides := st.real_strides())[a] != 0 for a in reduce_axes)]
  if reduce_axes and global_axes and not row_axes and all(any(strides[a] == 0 for a in global_axes) for strides in walked):
    real_strides = [st.real_strides() for st in load_sts]
    broadcast = [j for j, ax in enumerate(global_axes) if any(rs[ax] == 0 for rs in real_strides)]
    width = k.opts.simd_bytes // max(r.dtype.itemsize for r in k.reduceops)
    # the SIMD axis: read contiguously by some input, preferably one a whole register's width divides
    unit = [j for j in broadcast if any(rs[global_axes[j]] == 1 for rs in real_strides)]
    vec_axis = next((j for j in reversed(unit) if k.full_shape[global_axes[j]] % width == 0), unit[-1] if unit else None)
    # rows: another broadcast axis, preferably one the SIMD axis's operand (B) doesn't walk, so each row is one broadcast value of the other;
    # of those one read contiguously if there is one (a packed operand), else the innermost
    rest = [j for j in broadcast if j != vec_axis]
    vec_views = [rs for rs in real_strides if vec_axis is not None and rs[global_axes[vec_axis]] == 1]
    rest = [j for j in rest if all(rs[global_axes[j]] == 0 for rs in vec_views)] or rest
    row_axis = next((j for j in reversed(rest) if any(rs[global_axes[j]] == 1 for rs in real_strides)), rest[-1] if rest else None)
    tiles, m, itemsize = 0, k.opts.machine, max(r.dtype.itemsize for r in k.reduceops)
    ncols, nrows = (k.full_shape[global_axes[j]] if j is not None else 1 for j in (vec_axis, row_axis))
    # a conv's short window row (3 taps) unrolls whole (below): its taps' weight vectors are loaded together, a row of them per tap. (16 AVX2
    # registers: 14 rows x 8 lanes left none for them and spilled, 4.8 ms for a 256-channel 14x14 conv where 7 rows took 2.6)
    # (and its weight panel, the whole reduce's, is chosen to fit L1 where the chains allow: the panels packing.py made for the same tile)
    rs, red = k.full_shape[reduce_axes[-1]], prod(k.full_shape[a] for a in reduce_axes)
    live = rs if isinstance(rs, int) and len(reduce_axes) > 1 and rs <= 4 else 1
    tile = register_tile(m, width, k.opts.vector_alu_lanes, nrows, ncols, live, red if live > 1 and isinstance(red, int) else 0) \
      if m is not None and k.opts.vector_alu_lanes else None
    # without a machine model: a register's width of lanes and, with vector code (a row's accumulator is one register), a tall tile
    rows = (15, 14, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2) if k.opts.vector_alu_lanes else (8, 7, 6, 5, 4, 3, 2)
    for j, choices in ((vec_axis, (tile[1],) if tile else (width, width//2, 8, 4)), (row_axis, (tile[0],) if tile else rows)):
      if j is None: continue
      s = k.full_shape[k.axes_of(AxisType.GLOBAL)[j]]
      if isinstance(s, int) and (amt := _largest_divisor(s, choices)) is not None and _try(k, Opt(OptOps.UPCAST, j, amt), opts): tiles += 1
    # cache blocking: when the operand that doesn't depend on the rows (B) is bigger than half of L2, the innermost global axis that walks
    # its columns is cut into panels that stay in L2 while every row block of the other operands passes over them (the panel loop goes
    # outermost). Pays where a panel is contiguous (a packed B); a B with a power-of-two row pitch conflicts in the cache anyway.
    streamed: list[UOp] = []   # B's loads where its panels are contiguous (packed) and too big for L1
    if m is not None and tile is not None and tiles == 2:
      assert vec_axis is not None and row_axis is not None
      b_views = [rs for rs in real_strides if rs[global_axes[row_axis]] == 0 and rs[global_axes[vec_axis]] != 0]
      contiguous = all(isinstance(st := rs[reduce_axes[-1]], int) and abs(st) * itemsize <= 256 for rs in b_views)   # a short row pitch
      cols = [j for j, ax in enumerate(global_axes) if any(rs[ax] != 0 for rs in b_views) and all(rs[ax] == 0 for rs in real_strides
                                                                                                  if not any(rs is b for b in b_views))]
      depth = prod(k.full_shape[a] for a in k.axes_of(AxisType.REDUCE))
      panel = depth * tile[1] * itemsize
      if contiguous and panel > m.l1 // 2: streamed = [u for u, rs in zip(loads, real_strides) if any(rs is b for b in b_views)]
      # the panels get half of L2. In a GEMM (one reduce axis) a row block of A (the tile's rows, the whole reduce) is read again for
      # every panel and shares that half: at K=2048 its 64 KB in the panels' 1 MB thrashed L2 (20% slower than half as many panels).
      a_rows = tile[0] * depth * itemsize if len(reduce_axes) == 1 else 0
      budget = m.l2 // 2 - a_rows
      # inner column axes that fit whole join the panel; the first that doesn't is cut
      for j in reversed(cols if contiguous else []):
        if not isinstance(n := k.full_shape[k.axes_of(AxisType.GLOBAL)[j]], int) or n == 1: continue
        if n * panel <= budget:
          panel *= n
          continue
        fits = [d for d in range(2, n) if n % d == 0 and d * panel <= m.l2 // 2]
        # where that leaves room for one panel only (a 512 KB L2 at K=2048), the rows are blocked instead: a few row tiles of A and one
        # panel share that half, each panel streams past the block once and its row tiles reuse it from L2 (both reads come from L2 where
        # two panels let A's rows stream from L3 for every pair: 235-245 ms against 260-300 at 2048 on a Zen 3)
        nr = k.full_shape[(glb := k.axes_of(AxisType.GLOBAL))[row_axis]]
        row_tiles = [d for d in range(2, nr) if nr % d == 0 and d * a_rows + panel <= m.l2 // 2] if a_rows and isinstance(nr, int) else []
        if row_tiles and not any(d * panel <= budget for d in fits) and (outer := next(c for c in cols if k.full_shape[glb[c]] != 1)) != row_axis:
          # the panel loop goes outermost, then the row axis is cut: (row blocks, panels, row tiles of a block). And the panels are taken
          # in groups of twice L2 that every row block passes over before the next group: all of B for each row block streamed 16 MB
          # from L3 (where other processes' data and 4 KB pages, beyond the TLB's reach, made it 380-410 ms against 220 at 2048; with huge
          # pages still 76-81 GFLOP/s against 92-94, though 97 on buffers that L3 happened to keep). Measured on that Zen 3 at 2048 and
          # no better: groups of 2 or 4 MB, row blocks of 2 or 8 tiles, prefetch 8 or 32 steps ahead (all within 1.5%, the machine's noise);
          # 6-row tiles on rows padded to 2052; and K blocks (the reduce cut in 256-1024 and B's K block reused from L1 by a block's row
          # tiles, partial sums added into C): the cut kernels alone ran 83-95 GFLOP/s, as K=2048 does or less, before C's extra passes
          if (outer == 0 or _try(k, Opt(OptOps.SWAP, 0, outer), opts)) and \
             _try(k, Opt(OptOps.BLOCK, outer if row_axis == 0 else row_axis, max(row_tiles)), opts):
            if (group := [d for d in range(2, n) if n % d == 0 and d * panel <= 2 * m.l2]): _try(k, Opt(OptOps.BLOCK, 1, max(group)), opts)
          break
        if (amt := max([d for d in fits if d * panel <= budget] or fits, default=0)): _try(k, Opt(OptOps.BLOCK, j, amt), opts)
        # one panel already fills the cache (a small L2): the outermost panel loop itself goes outermost
        elif (outer := next(c for c in cols if k.full_shape[k.axes_of(AxisType.GLOBAL)[c]] != 1)) != 0: _try(k, Opt(OptOps.SWAP, 0, outer), opts)
        break
      else:
        # a conv's weight whole in that half, its panels each streamed from L2 all the same (over half of L1): the panel loop goes inside the
        # output positions' loops, so a tile's input window is read from L1 for every panel, and the output (and a residual read at the store)
        # is walked in order (64-channel 56x56 convs on Zen 3: 2.7-2.8 ms against 2.9; with the weight over half of L2, 8% slower). Its panel
        # axis: one the weight walks and the input doesn't (a residual read at the store may walk it too)
        glb, inputs = k.axes_of(AxisType.GLOBAL), [rs for rs in walked if not any(rs is b for b in b_views)]
        panel_axes = [j for j, ax in enumerate(global_axes) if k.full_shape[glb[j]] != 1 and any(rs[ax] != 0 for rs in b_views) and
                      all(rs[ax] == 0 for rs in inputs)]
        last = max((i for i, a in enumerate(glb) if k.full_shape[a] != 1), default=-1)
        if len(reduce_axes) > 1 and contiguous and m.l1 // 2 < (wpanel := depth * tile[1] * itemsize) and panel_axes and \
           wpanel * prod(k.full_shape[glb[j]] for j in panel_axes) <= budget and last > (outer := panel_axes[0]):
          for i in range(outer, last): _try(k, Opt(OptOps.SWAP, i, i + 1), opts)
    rs = k.full_shape[k.axes_of(AxisType.REDUCE)[-1]]
    # a short innermost reduce (a conv's kernel width) unrolls whole: neighbouring taps share loaded inputs. A long one unrolls by 2 only
    # where B streams packed panels: reading B's rows a row pitch apart (a GEMM under the packing threshold) the unroll adds no independent
    # accumulator chain, only one more row of B live (2x slower at 256, AVX2: the tile already has exactly fma_chains accumulators)
    if tiles and isinstance(rs, int) and (amt := rs if rs <= 4 else 2 if rs % 2 == 0 and streamed else 0) > 1:
      _try(k, Opt(OptOps.UNROLL, len(k.axes_of(AxisType.REDUCE))-1, amt), opts)
    # a GEMM's packed B panel streams from L2 through the reduce loop: the hardware prefetchers bring it to L1 too late, so each step also
    # asks for the lines about 2 KB ahead (OptOps.PREFETCH (buffer, steps)): 7-11% faster at 1024 and 2048 (AVX-512, one thread)
    if len(reduce_axes) == 1 and k.opts.supports_prefetch and (inner := k.axes_of(AxisType.REDUCE)):
      for u in streamed:
        if isinstance(step := k.sts[view_of[u.src[1].arg]].real_strides()[inner[-1]], int) and step > 0:
          _try(k, Opt(OptOps.PREFETCH, None, (u.src[0].arg, max(1, 2048 // (step * itemsize)))), opts)
  # a pooling window whose rows overlap (3x3, stride 2): the taps unroll whole and a few neighbouring rows of outputs side by side share the
  # input rows their windows have in common. (Lanes on the innermost output axis would gather lane by lane through the padding's gates,
  # and windows that don't overlap share nothing: those stay plain loops, which the C compiler vectorizes better.)
  taps, in_strides = [k.full_shape[a] for a in reduce_axes], [st.real_strides(ignore_valid=True) for st in load_sts]
  if reduce_axes and not opts and not k.opts.has_local and len(global_axes) >= 2 and all(isinstance(t, int) and t <= 8 for t in taps) and \
     prod(taps) <= 64 and isinstance(s := k.full_shape[row := global_axes[-2]], int) and \
     any(_overlap(x[row], x[r], k.full_shape[r]) for x in in_strides for r in reduce_axes) and (amt := _largest_divisor(s, (8, 7, 4, 2))) is not None:
    for i in reversed(range(len(reduce_axes))): _try(k, Opt(OptOps.UNROLL, i, 0), opts)
    _try(k, Opt(OptOps.UPCAST, len(global_axes)-2, amt), opts)
  # any other reduce: with enough outputs, a few of them side by side (independent lanes the compiler vectorizes) and a short unroll;
  # with few outputs, a long unroll so the loop body adds many loaded values at once
  if reduce_axes and not opts:
    rs = k.full_shape[k.axes_of(AxisType.REDUCE)[-1]]
    out = k.full_shape[global_axes[-1]] if global_axes else 1
    # side-by-side outputs pay off when each element costs real compute (transcendentals); a plain sum or max is memory bound
    heavy = any(u.op in (Ops.EXP2, Ops.EXP, Ops.TANH, Ops.LOG2, Ops.SIN, Ops.POW) for u in k.ast.toposort())
    # with vector ALUs, a reduce whose inputs are all read contiguously (or broadcast) along its innermost axis (a row sum of exps) gets
    # that axis as the SIMD lanes instead: vector loads into a vector accumulator, where side-by-side outputs would gather lane by lane
    ra, width = k.axes_of(AxisType.REDUCE)[-1], k.opts.simd_bytes // max(r.dtype.itemsize for r in k.reduceops)
    if k.opts.vector_alu_lanes and isinstance(rs, int) and all(st.real_strides()[ra] in (0, 1) for st in load_sts) and \
       (amt := _largest_divisor(rs, (width, 8, 4))) is not None and _try(k, Opt(OptOps.UNROLL, len(reduce_axes)-1, amt), opts): heavy = False
    if heavy and isinstance(out, int) and prod(k.output_shape) >= 64 and (amt := _largest_divisor(out, (8, 4))) is not None:
      _try(k, Opt(OptOps.UPCAST, len(global_axes)-1, amt), opts)
    if isinstance(rs, int) and rs >= 32 and (amt := _largest_divisor(rs, (4, 2) if opts else (16, 8, 4))) is not None:
      _try(k, Opt(OptOps.UNROLL, len(k.axes_of(AxisType.REDUCE))-1, amt), opts)
  # elementwise with vector ALUs: the innermost axis, walked contiguously (or broadcast) by every view, gets a SIMD register's lanes,
  # so the body (transcendental polynomials too) is vector code whether or not the C compiler would vectorize the loop (gcc -O2 doesn't)
  if not reduce_axes and not opts and k.opts.vector_alu_lanes and global_axes and isinstance(s := k.full_shape[global_axes[-1]], int):
    loads = [u for u in k.ast.toposort() if u.op is Ops.LOAD]
    width = k.opts.simd_bytes // max((u.dtype.itemsize for u in loads), default=4)
    if all(st.real_strides(ignore_valid=True)[global_axes[-1]] in (0, 1) for st in k.sts):
      # on a CPU an axis nothing divides (a padded row, 58 wide) is vector code all the same: under a register's width whole, else padded
      # up to whole registers (the padding's loads and stores gated off; not a kernel of index maths alone, an arange, which a gate
      # would keep from folding). (Workgroups pad such an axis their own way.)
      if (amt := _largest_divisor(s, (width, 8, 4))) is None and not k.opts.has_local and 1 < s < width: amt = s
      elif amt is None and not k.opts.has_local and s > width and loads and \
          _try(k, Opt(OptOps.PADTO, global_axes[-1], width), opts): amt = width
      if amt is not None:
        _try(k, Opt(OptOps.UPCAST, len(global_axes)-1, amt), opts)
        # a copy into another layout of whole vectors (a GEMM's B into column panels): the loops go in the order of the source's strides, so
        # it is read as one sequential stream (a B row at a time: 25% faster at 1024) and the vectors are written a few lines at a time
        # (not a padded copy, a conv's input read through the padding's mask: its source rows aren't one stream, and the output's order writes
        # whole lines, 0.027 ms where the source's order took 0.046 for a blocked 64x56x56 into a channels-last 58x58x64)
        if len(loads) == 1 and not any(u.op in GroupOp.ALU for u in k.ast.toposort()) and \
           all(v.mask is None for v in k.sts[view_of[loads[0].src[1].arg]].views):
          g, src = k.axes_of(AxisType.GLOBAL), k.sts[view_of[loads[0].src[1].arg]].real_strides()
          order = sorted(range(len(g)), key=lambda i: -cast(int, src[g[i]]) if isinstance(src[g[i]], int) else 0)
          # and the source's rows are taken a few at a time: the loop over them is cut and its inner part goes inside the next loop (the
          # panels), so each panel is written runs of that many rows' lines, not one line per 128 KB jump (a page each: 2.8-3.0 ms against
          # 5.7 for 2048x2048, 0.72 against 1.43 at 1024, Zen 3). As many rows as the L1 has ways (at most): rows a power of two apart all
          # fall in one set, and more of them than its ways evict each other's lines before the next panel reads on (2 or 64 rows: 2.4 ms
          # at 2048 where 8 took 1.8; 4, 8, 16 all about the same)
          # (a transpose: the output's order has those two loops the other way round; not a channels-last copy, whose images stay outermost)
          dst = [k.sts[view_of[u.src[1].arg]].real_strides() for u in k.ast.src if u.op is Ops.STORE and u.src[1].arg in view_of]
          ways = k.opts.machine.l1_ways if k.opts.machine is not None else 8
          nsrc = k.full_shape[g[order[0]]] if len(g) >= 2 else 1
          block_rows = next((d for d in range(ways, 1, -1) if isinstance(nsrc, int) and nsrc > ways and nsrc % d == 0), 0)
          if blocked := block_rows > 1 and k.full_shape[g[order[1]]] != 1 and len(dst) == 1 and \
             all_int(d := (dst[0][g[order[0]]], dst[0][g[order[1]]])) and d[0] < d[1]:
            order[:2] = order[1::-1]
          at = list(range(len(g)))   # the axis at each position
          for i, want in enumerate(order):
            if (j := at.index(want)) != i and _try(k, Opt(OptOps.SWAP, i, j), opts): at[i], at[j] = at[j], at[i]
          if blocked and at[:2] == order[:2]: _try(k, Opt(OptOps.BLOCK, 1, block_rows), opts)
    # a transpose (one load, no arithmetic) whose source is contiguous along another output axis: that axis gets the lanes, so each step
    # reads a vector and writes it a lane per output row, each row a sequential stream (A^T for a.T @ b: 0.86 ms against 5.6 at 1024,
    # where every scalar read was a new line a row apart)
    elif len(loads) == 1 and not any(u.op in GroupOp.ALU for u in k.ast.toposort()):
      st_src = k.sts[view_of[loads[0].src[1].arg]]
      unit = [j for j, a in enumerate(global_axes) if st_src.real_strides()[a] == 1] if all(v.mask is None for v in st_src.views) else []
      if unit and isinstance(n := k.full_shape[global_axes[unit[-1]]], int) and (amt := _largest_divisor(n, (width, 8, 4))) is not None:
        _try(k, Opt(OptOps.UPCAST, unit[-1], amt), opts)
  if k.opts.has_local: gpu_workgroups(k, opts)
  prefetch_streamed_operand(k, opts)
  # big kernels run their outermost global axis on every core. A big elementwise one in 4 chunks a core (each still THREAD_MIN_WORK), handed
  # out as threads come free: a core another process holds for a while takes fewer, the others don't wait for it
  if k.opts.has_threads and (threads := cpu_threads(k.opts.machine)) > 1 and (work := prod(k.full_shape)) >= THREAD_MIN_WORK.value:
    if (g := k.axes_of(AxisType.GLOBAL)) and isinstance(s := k.full_shape[g[0]], int):
      for n in ((4 * threads,) if not reduce_axes and work >= 4 * threads * THREAD_MIN_WORK.value else ()) + (threads,):
        if s % n == 0 and s >= n and _try(k, Opt(OptOps.THREAD, 0, n), opts): break
  return opts

def prefetch_streamed_operand(k:Kernel, opts:list[Opt]) -> None:
  """A multiply-reduce that streams one big operand past small ones (a late ResNet conv: 9.4 MB of weights, a 165 KB input) reads it
  from L3 or memory on every call, and the hardware prefetchers don't keep up: 2.3-2.7 ms for the 512-channel 7x7 conv in the model against
  1.7-1.9 ms with the weights in cache. With the operand over half of L2 and 4x the rest (not a square GEMM's two big ones), and passes
  inside its panel loop that reuse a panel (output rows it doesn't depend on), each panel's passes also prefetch the next panel
  (OptOps.PREFETCH, codegen's add_prefetches): 1.7-2.0 ms. (A skinny GEMM's B, 32x2048 @ 2048x2048, streams the same way: 2.2x.)"""
  if (m := k.opts.machine) is None or not k.opts.supports_prefetch or not (reduce_axes := k.axes_of(AxisType.REDUCE)): return
  # (one sum of products: a row kernel's reduces, layernorm's or log_softmax's, each stream the row once, with nothing to prefetch ahead of)
  if len(k.reduceops) != 1 or k.reduceops[0].arg[0] is not Ops.ADD or k.reduceops[0].src[0].op is not Ops.MUL: return
  view_of = {v.arg: i for i, v in enumerate(k.view_uops)}
  loads = {u.src[0].arg: (u.src[0].dtype.size * u.src[0].dtype.base.itemsize, k.sts[view_of[u.src[1].arg]].real_strides())
           for u in k.ast.toposort() if u.op is Ops.LOAD and u.src[1].arg in view_of and isinstance(u.src[0].dtype, PtrDType)}
  big = [b for b, (nbytes, _) in loads.items() if nbytes > m.l2 // 2]
  if len(big) > 1 or not loads: return
  b = big[0] if big else max(loads, key=lambda x: loads[x][0])
  (nbytes, strides), glb, rest = loads[b], k.axes_of(AxisType.GLOBAL), sum(n for x, (n, _) in loads.items() if x != b)
  # (not an operand broadcast across the SIMD lanes, the upcast axis the output is stored contiguously along: a batch-32 conv's 8 MB input,
  # one value per column for all output channels, has no panels, and asked at every step for the next column tile, which it mostly reads)
  stored = [k.sts[view_of[u.src[1].arg]].real_strides() for u in k.ast.toposort() if u.op is Ops.STORE and u.src[1].arg in view_of]
  if any(strides[a] == 0 and any(st[a] == 1 for st in stored) for a in k.axes_of(AxisType.UPCAST)): return
  # over half of L2 and 4x the rest; or, where its panels are the outermost loop (a conv's weights, not an input whose rows the inner loops
  # walk), over a quarter of L2 and twice the rest: the 128->256 stride-2 conv's 1.2 MB (0.85 ms -> 0.75) and a 1x1 conv's 512 KB
  if not (4 * rest <= nbytes > m.l2 // 2 or (glb and strides[glb[0]] != 0 and 2 * rest <= nbytes >= m.l2 // 4)): return
  if any(strides[a] != 0 for a in reduce_axes) and any(strides[a] != 0 for a in glb) and \
     any(strides[a] == 0 and k.full_shape[a] != 1 for a in glb): _try(k, Opt(OptOps.PREFETCH, None, b), opts)

# a workgroup's threads at most: small enough for any GPU's register file at the tile sizes above, big enough to hide memory latency
WORKGROUP_THREADS = 128

def gpu_workgroups(k:Kernel, opts:list[Opt]) -> None:
  """Devices with workgroups (has_local). A big reduce into few outputs (a sum of everything, a matrix-vector product) would leave most of the
  device idle: a workgroup shares each reduce (GROUP: thread g adds elements g, g+n, ..., so neighbouring threads read neighbouring memory)
  and combines the parts in shared memory. Then the innermost global axes (the output's contiguous one first: coalesced stores) get
  workgroup sizes, each within the device's limit for the launch dimension it gets."""
  lmax = k.opts.local_max or (WORKGROUP_THREADS,) * 3
  if k.opts.has_shared and (reduce_axes := k.axes_of(AxisType.REDUCE)) and isinstance(out := prod(k.output_shape), int) and out <= 2048:
    # the reduce's length counts the part unrolled above: each thread of the group then adds a few unrolled values per step
    rs, itemsize, whole = k.full_shape[reduce_axes[-1]], max(r.dtype.itemsize for r in k.reduceops), prod(k.full_shape[a] for a in
                                                                                                     k.axes_of(AxisType.REDUCE, AxisType.UNROLL))
    # shared memory holds each thread's partial results: one per upcast output
    lanes = prod(k.full_shape[a] for a in k.axes_of(AxisType.UPCAST))
    fits = [g for g in (32, 16, 8, 4) if g <= lmax[0] and isinstance(lanes, int) and g * itemsize * lanes <= k.opts.shared_max]
    if isinstance(rs, int) and isinstance(whole, int) and whole >= 256:
      # a sum over a length nothing divides (a prime) is padded with zeros to a whole number of groups
      if (amt := _largest_divisor(rs, tuple(fits))) is None and fits and rs >= 8 * fits[0] and \
         _try(k, Opt(OptOps.PADTO, reduce_axes[-1], fits[0]), opts): amt = fits[0]
      if amt is not None: _try(k, Opt(OptOps.GROUP, len(reduce_axes)-1, amt), opts)
  threads = prod(k.full_shape[a] for a in k.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE))
  glb = k.axes_of(AxisType.GLOBAL)
  # the last three global axes are launch dimensions; a new local axis is the outermost so far, so it takes the next launch dimension
  for j in reversed(range(max(0, len(glb)-3), len(glb))):
    if not isinstance(s := k.full_shape[glb[j]], int) or (dim := len(k.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE))) >= 3: break
    # with more axes to come, one gets at most 32 threads, so a 2D output gets a 2D tile of threads
    cap = min(WORKGROUP_THREADS // threads, lmax[dim], 32 if j > max(0, len(glb)-3) else WORKGROUP_THREADS)
    amt = _largest_divisor(s, tuple(c for c in (128, 64, 32, 16, 8, 4, 2) if c <= cap and c <= s))
    # an axis nothing divides (a prime size) is padded up to a whole number of workgroups: the padding's loads and stores are gated off
    if amt is None and cap >= 8 and s >= 8 * cap and not k.axes_of(AxisType.LOCAL) and _try(k, Opt(OptOps.PADTO, glb[j], cap), opts): amt = cap
    if amt is not None and _try(k, Opt(OptOps.LOCAL, j, amt), opts): threads *= amt
