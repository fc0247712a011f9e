from __future__ import annotations
import dataclasses
from collections import defaultdict
from tinygrad.device import Buffer, BufferSpec, Device
from tinygrad.dtype import dtypes
from tinygrad.helpers import DEBUG, ContextVar
from tinygrad.engine.realize import ExecItem

NO_MEMORY_PLANNER = ContextVar("NO_MEMORY_PLANNER", 0)

@dataclasses.dataclass
class _Slot:
  key: tuple               # what a buffer must match to share this slot
  nbytes: int
  dtype_size: tuple|None   # (dtype, size) when the device can't view memory as another dtype or size
  buf: Buffer|None = None

def memory_planner(items:list[ExecItem], keep:set[Buffer]) -> tuple[list[ExecItem], int, int]:
  """Let the intermediate buffers of a captured run share memory: once a buffer's last use has passed, a later one takes its
  memory. Intermediate means every base buffer the items write before they read it that is not in keep (a jit keeps its inputs and
  every buffer a live tensor still holds: outputs, weights, state). Where the allocator can make views, buffers of any size and dtype share a slot
  as large as the largest of them; elsewhere only buffers of the same size and dtype share.

  Returns (new items over the planned buffers, bytes of the intermediates before, bytes after). The given items are untouched."""
  first: dict[Buffer, int] = {}
  last: dict[Buffer, int] = {}
  holds_data: set[Buffer] = set()
  for i, ei in enumerate(items):
    for j, b in enumerate(ei.bufs):
      if b is None or b.base in keep or b.base.size == 0 or b.base in holds_data: continue
      # every item writes its first buffer (a kernel's output, a copy's destination). A buffer read before any item writes it holds data
      # from before the capture (a constant made from Python values, whose Tensor is gone): its contents must stay, so it never shares
      if j != 0 and b.base not in first:
        holds_data.add(b.base)
        continue
      first.setdefault(b.base, i)
      last[b.base] = i
  before = sum(b.nbytes for b in first)
  if NO_MEMORY_PLANNER or not first: return items, before, before
  starts, ends = defaultdict(list), defaultdict(list)
  for b, i in first.items(): starts[i].append(b)
  for b, i in last.items(): ends[i].append(b)
  free: list[_Slot] = []
  slots: list[_Slot] = []
  slot_of: dict[Buffer, _Slot] = {}
  for i in range(len(items)):
    for b in starts[i]:
      # views need an _offset in the allocator; image buffers have a layout and never share with another shape
      views = hasattr(Device[b.device].allocator, "_offset") and (b.options is None or b.options.image is None)
      key = (b.device, b.options, views) if views else (b.device, b.options, b.dtype, b.size)
      cands = [s for s in free if s.key == key]
      # the smallest free slot that fits, else the largest one grown to fit (it is allocated only after planning)
      if (s := min((s for s in cands if s.nbytes >= b.nbytes), key=lambda s: s.nbytes, default=None) or max(cands, key=lambda s: s.nbytes,
                                                                                                             default=None)) is not None:
        free.remove(s)
        s.nbytes = max(s.nbytes, b.nbytes)
      else: slots.append(s := _Slot(key, b.nbytes, None if views else (b.dtype, b.size)))
      slot_of[b] = s
    # freed only after every buffer starting here has a slot: a kernel never writes over what it reads
    free.extend(slot_of[b] for b in ends[i])
  for s in slots:
    dt, sz = s.dtype_size if s.dtype_size is not None else (dtypes.uint8, s.nbytes)
    s.buf = Buffer(s.key[0], sz, dt, options=s.key[1] if isinstance(s.key[1], BufferSpec) else None)
  replaced: dict[Buffer, Buffer] = {}   # one planned buffer per original, however often it's used
  def planned(b:Buffer) -> Buffer:
    if (s := slot_of.get(b.base)) is None or s.buf is None: return b
    if s.dtype_size is not None and b._base is None: return s.buf
    if b not in replaced: replaced[b] = s.buf.view(b.size, b.dtype, b.offset)
    return replaced[b]
  after = sum(s.nbytes for s in slots)
  if DEBUG >= 1: print(f"memory planner: {len(first)} intermediate buffers of {before} bytes in {len(slots)} of {after} bytes")
  return [dataclasses.replace(ei, bufs=[planned(b) if b is not None else None for b in ei.bufs]) for ei in items], before, after
