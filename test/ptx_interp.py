"""A small interpreter of the PTX that renderer/ptx.py emits, to run its kernels without a GPU: every thread of every block runs the program
(the threads of a block as generators that meet at bar.sync), registers hold raw bits, each instruction decodes them by its type, float32
maths through numpy (rounding like the GPU's .rn). Not all of PTX: what the renderer writes (no mma). For tests only."""
from __future__ import annotations
import math, re, struct
import numpy as np

_INT = {"8": 8, "16": 16, "32": 32, "64": 64}
def _width(t:str) -> int: return 1 if t == "pred" else int(t[1:])
def _signed(v:int, bits:int) -> int: return v - (1 << bits) if v >> (bits - 1) & 1 else v
def _f32(b:int) -> np.float32: return np.uint32(b & 0xffffffff).view(np.float32)
def _b32(f) -> int: return int(np.float32(f).view(np.uint32))
def _f64(b:int) -> np.float64: return np.uint64(b & (2**64 - 1)).view(np.float64)
def _b64(f:float) -> int: return struct.unpack("<Q", struct.pack("<d", f))[0]
def _f16(b:int) -> np.float16: return np.uint16(b & 0xffff).view(np.float16)
def _bf16_bits(f:np.float32) -> int:
  u = int(np.float32(f).view(np.uint32))
  return (u >> 16) | 0x40 if (u & 0x7fffffff) > 0x7f800000 else (u + 0x7fff + ((u >> 16) & 1)) >> 16

def decode(b:int, t:str):
  """Bits of a register as a value of PTX type t."""
  if t == "f32": return _f32(b)
  if t == "f64": return _f64(b)
  if t == "pred": return b & 1
  bits = _width(t)
  return _signed(b & ((1 << bits) - 1), bits) if t[0] == "s" else b & ((1 << bits) - 1)
def encode(v, t:str) -> int:
  if t == "f32": return _b32(v)
  if t == "f64": return _b64(float(v))
  if t == "pred": return int(bool(v))
  return int(v) & ((1 << _width(t)) - 1)

def _to_int(f:float, t:str, mode:str) -> int:
  # float -> int: rounded (rzi: toward zero, rni: nearest even), saturated, nan is 0
  if math.isnan(f): return 0
  v = math.trunc(f) if mode != "rni" else round(f) if math.isfinite(f) else f
  bits, signed = _width(t), t[0] == "s"
  lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
  return encode(int(min(max(v, lo), hi)), t)

class Memory:
  """Buffers at fake addresses; base_skew moves a buffer's start off a 16-byte boundary (a sub-buffer at an element offset)."""
  def __init__(self): self.bufs: list[tuple[int, bytearray]] = []
  def add(self, data:bytearray, base_skew:int=0) -> int:
    addr = 0x100000 * (len(self.bufs) + 1) + base_skew
    self.bufs.append((addr, data))
    return addr
  def where(self, addr:int, n:int) -> tuple[bytearray, int]:
    for base, data in self.bufs:
      if base <= addr and addr + n <= base + len(data): return data, addr - base
    raise IndexError(f"out of bounds access of {n} bytes at {addr:#x}")

class Kernel:
  def __init__(self, src:str):
    self.params = re.findall(r"\.param \.(\w+) (\w+)", src)
    body = src[src.index("{", src.index(".entry")) + 1:src.rindex("}")]
    self.shared = {m[1]: int(m[2]) for m in re.finditer(r"\.shared \.align \d+ \.b8 (\w+)\[(\d+)\];", body)}
    self.ins: list[tuple[str|None, bool, str, list[str]]] = []
    self.labels: dict[str, int] = {}
    for line in (x.strip().rstrip(";") for x in body.splitlines()):
      if not line or line.startswith(".reg") or line.startswith(".shared"): continue
      if line.endswith(":"):
        self.labels[line[:-1]] = len(self.ins)
        continue
      pred, neg = None, False
      if line.startswith("@"):
        p, line = line.split(" ", 1)
        neg, pred = p[1] == "!", p.lstrip("@!")
      op, _, rest = line.partition(" ")
      self.ins.append((pred, neg, op, [x.strip() for x in re.findall(r"\s*(\{[^}]*\}|\[[^\]]*\]|[^,\s][^,]*)", rest) if x.strip()]))

  def run(self, mem:Memory, args:list[int], global_size:tuple[int, ...], local_size:tuple[int, ...]|None) -> None:
    g, lsz = (list(global_size) + [1, 1, 1])[:3], (list(local_size or ()) + [1, 1, 1])[:3]
    params = {name: v for (_, name), v in zip(self.params, args)}
    for bz in range(g[2]):
      for by in range(g[1]):
        for bx in range(g[0]):
          smem = {name: mem.add(bytearray(n)) for name, n in self.shared.items()}
          threads = [self._thread(mem, params, smem, (bx, by, bz), (tx, ty, tz), g, lsz)
                     for tz in range(lsz[2]) for ty in range(lsz[1]) for tx in range(lsz[0])]
          while threads: threads = [t for t in threads if next(t, "done") != "done"]   # every thread to its next bar.sync, then on
          for _ in smem: mem.bufs.pop()

  def _thread(self, mem:Memory, params:dict, smem:dict, block, thread, grid, lsz):
    r: dict[str, int] = {}
    special = {**{f"%ctaid.{d}": block[i] for i, d in enumerate("xyz")}, **{f"%tid.{d}": thread[i] for i, d in enumerate("xyz")},
               **{f"%ntid.{d}": lsz[i] for i, d in enumerate("xyz")}, **{f"%nctaid.{d}": grid[i] for i, d in enumerate("xyz")}}
    def val(a:str) -> int:
      if a in r: return r[a]
      if a in special: return special[a]
      if a in smem: return smem[a]
      if a.startswith("0f"): return int(a[2:], 16)
      if a.startswith("0d"): return int(a[2:], 16)
      return int(a, 0) & (2**64 - 1)
    def addr(a:str) -> int:
      base, _, off = a.strip("[]").partition("+")
      return (val(base) + (int(off) if off else 0)) & (2**64 - 1)
    pc = 0
    while pc < len(self.ins):
      pred, neg, op, ops = self.ins[pc]
      pc += 1
      if pred is not None and bool(r[pred] & 1) == neg: continue
      parts = op.split(".")
      name, mods, t = parts[0], parts[1:], parts[-1]
      if name == "ret": return
      if name == "bra":
        pc = self.labels[ops[0]]
        continue
      if name == "bar":
        yield "bar"
        continue
      if name in ("ld", "st"):
        space, vec = mods[0], next((int(m[1:]) for m in mods if re.fullmatch(r"v\d", m)), 1)
        size = max(_width(t), 8) // 8 if t != "pred" else 1
        regs = ops[0].strip("{}").split(", ") if name == "ld" else ops[1].strip("{}").split(", ")
        if space == "param":
          r[regs[0]] = params[ops[1].strip("[]")]
          continue
        data, off = mem.where(a := addr(ops[1] if name == "ld" else ops[0]), size * vec)
        if vec > 1 and a % (size * vec): raise RuntimeError(f"misaligned {op} at {a:#x}")
        for i, reg in enumerate(regs):
          o = off + i * size
          # an 8-bit load fills a 16-bit register, sign extended for .s8
          if name == "ld":
            raw = int.from_bytes(data[o:o+size], "little")
            r[reg] = encode(_signed(raw, 8), "s16") if t == "s8" else raw
          else: data[o:o+size] = (val(reg) & ((1 << (size * 8)) - 1)).to_bytes(size, "little")
        continue
      d, src = ops[0], [val(a) for a in ops[1:]]
      if name == "mov" and d.startswith("{"):   # split a 32-bit register into two 16-bit halves
        lo, hi = d.strip("{}").split(", ")
        r[lo], r[hi] = src[0] & 0xffff, src[0] >> 16 & 0xffff
        continue
      r[d] = self._alu(name, mods, t, src, ops)
    return

  @staticmethod
  def _alu(name:str, mods:list[str], t:str, src:list[int], ops:list[str]) -> int:
    if name in ("mov", "cvta"): return src[0]
    if name == "cvt":
      dt, st = [m for m in mods if m not in ("rn", "rzi", "rni", "sat", "satfinite")][-2:]
      if "satfinite" in mods or st == "e4m3x2": raise NotImplementedError("the hardware fp8 cvt")
      if st in ("f16", "bf16"): v = float(_f16(src[0])) if st == "f16" else float(_f32((src[0] & 0xffff) << 16))
      else: v = decode(src[0], st)
      if dt == "f16": return int(np.float16(np.float32(v)).view(np.uint16))
      if dt == "bf16": return _bf16_bits(np.float32(v))
      if dt in ("f32", "f64"):
        if "rzi" in mods: v = np.trunc(v)
        if "rni" in mods: v = float(np.rint(v))
        return encode(np.float32(v) if dt == "f32" else float(v), dt)
      if st[0] == "f": return _to_int(float(v), dt, "rni" if "rni" in mods else "rzi")
      if dt == "s8": return encode(_signed(encode(v, dt), 8), "s16")   # an 8-bit int lives sign extended in a 16-bit register
      return encode(v, dt)   # int -> int: wrapped, sign or zero extended by the source type
    if t == "pred":
      a = [x & 1 for x in src]
      return {"and": lambda: a[0] & a[1], "or": lambda: a[0] | a[1], "xor": lambda: a[0] ^ a[1], "not": lambda: 1 - a[0]}[name]()
    if name == "setp":
      a, b = decode(src[0], t), decode(src[1], t)
      if t[0] == "f" and (math.isnan(a) or math.isnan(b)): return int(mods[0] in ("neu", "ne") and mods[0] == "neu")
      return int({"eq": a == b, "ne": a != b, "neu": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[mods[0]])
    if name == "selp": return src[0] if src[2] & 1 else src[1]
    if t[0] == "f":
      a = [decode(x, t) for x in src]
      with np.errstate(all="ignore"):
        fv = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1], "div": lambda: a[0] / a[1],
              "fma": lambda: a[0] * a[1] + a[2] if t == "f64" else np.float32(np.float64(a[0]) * np.float64(a[1]) + np.float64(a[2])),
              "neg": lambda: -a[0], "abs": lambda: abs(a[0]), "rcp": lambda: (np.float32(1) if t == "f32" else np.float64(1)) / a[0],
              "sqrt": lambda: np.sqrt(a[0]), "min": lambda: min(a), "max": lambda: max(a)}[name]()
      return encode(fv, t)
    bits, signed = _width(t), t[0] == "s"
    a = [decode(x, t if t[0] in "su" else f"u{bits}") for x in src]
    if name == "mul" and "wide" in mods: return encode(a[0] * a[1], f"{t[0]}{bits * 2}")
    if name in ("shl", "shr"): return encode(0 if a[1] >= bits and not signed else (a[0] << a[1] if name == "shl" else a[0] >> min(a[1], bits)), t)
    def div(x, y): return (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1) if y else 0
    return encode({"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1], "mad": lambda: a[0] * a[1] + a[2],
                   "div": lambda: div(a[0], a[1]), "rem": lambda: a[0] - div(a[0], a[1]) * a[1] if a[1] else 0, "neg": lambda: -a[0],
                   "and": lambda: a[0] & a[1], "or": lambda: a[0] | a[1], "xor": lambda: a[0] ^ a[1], "not": lambda: ~a[0],
                   "min": lambda: min(a), "max": lambda: max(a)}[name](), t)
