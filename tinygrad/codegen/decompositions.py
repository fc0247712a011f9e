# late rewrites, after symbolic simplification: ops a renderer lacks become ops it has, canonical forms it has a better op for are fused,
# integer division by constants becomes shifts and multiplies, THREEFRY becomes its block cipher, transcendental ops become polynomials
from __future__ import annotations
import functools, math
from typing import Callable, Collection
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import dtypes
from tinygrad.helpers import TRANSCENDENTAL, getenv
from tinygrad.uop.transcendental import transcendental_rewrite, xpow, int_type, mantissa_bits

# ***** threefry *****

THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
THREEFRY_PARITY = 0x1BD11BDA

def threefry2x32(x:UOp, key:UOp) -> UOp:
  """Threefry-2x32, 20 rounds (Salmon et al. 2011; the same function as JAX's threefry2x32). The counter words are the low and high
  halves of uint64 x, the key words those of uint64 key; the two output words come back packed as (hi << 32) | lo."""
  u32, u64 = dtypes.uint32.vec(x.dtype.count), x.dtype
  def halves(v:UOp) -> tuple[UOp, UOp]: return (v & 0xffffffff).cast(u32), (v >> 32).cast(u32)
  k0, k1 = halves(key.cast(u64))
  ks = (k0, k1, k0 ^ k1 ^ THREEFRY_PARITY)
  x0, x1 = halves(x)
  x0, x1 = x0 + ks[0], x1 + ks[1]
  for i in range(5):
    for r in THREEFRY_ROTATIONS[i % 2]:
      x0 = x0 + x1
      x1 = ((x1 << r) | (x1 >> (32 - r))) ^ x0
    # key injection after every 4 rounds, with the injection count added to the second word
    x0, x1 = x0 + ks[(i + 1) % 3], x1 + ks[(i + 2) % 3] + (i + 1)
  return (x1.cast(u64) << 32) | x0.cast(u64)

# ***** integer division by a constant *****

@functools.cache
def magic_div(vmax:int, d:int) -> tuple[int, int]:
  """(m, s) with x//d == (x*m) >> s for every 0 <= x <= vmax, for d > 1 and vmax >= d-1 (Granlund-Montgomery, Hacker's Delight 10)"""
  # m = ceil(2**s/d) overshoots 1/d by e/(d*2**s), e = m*d - 2**s; that is harmless while x*e < 2**s for the x that sits just below a
  # multiple of d. nc is the largest such x; the x above it (up to vmax) then have room to spare
  nc = (vmax + 1) // d * d - 1
  s = 0
  while nc * ((m := -(-(1 << s) // d)) * d - (1 << s)) >= (1 << s): s += 1
  return m, s

def fast_idiv(x:UOp, d:int, wide_ok:bool=True) -> UOp|None:
  """x // d (C truncation) as a multiply and a shift, in x's dtype if x*m can't overflow it, else (wide_ok) in 64 bits; None if neither"""
  if not dtypes.is_int(x.dtype) or x.dtype.count != 1 or abs(d) <= 1: return None
  if not isinstance(x.vmin, int) or not isinstance(x.vmax, int): return None
  lo, hi, ad = x.vmin, x.vmax, abs(d)
  n = max(hi, -lo)
  if n < ad: return x.const_like(0)
  m, s = magic_div(n, ad)
  wt = x.dtype
  if n * m > dtypes.max(wt):
    wt = dtypes.uint64 if dtypes.is_unsigned(wt) else dtypes.int64
    if not wide_ok or wt.itemsize <= x.dtype.itemsize or n * m > dtypes.max(wt): return None
  xw = x.cast(wt)
  if lo >= 0: q = (xw * m) >> s
  else:
    neg = x < 0
    q = (neg.where(-xw, xw) * m) >> s
    q = neg.where(-q, q)
  q = q.cast(x.dtype)
  return -q if d < 0 else q

def _pow2(c:UOp) -> int|None:
  # k for a constant +-2**k
  return (abs(c.arg).bit_length() - 1) if isinstance(c.arg, int) and c.arg != 0 and abs(c.arg) & (abs(c.arg) - 1) == 0 else None

def _idiv_pow2(x:UOp, c:UOp) -> UOp|None:
  if (k := _pow2(c)) is None: return None
  if dtypes.is_unsigned(x.dtype) or x.dtype.count == 1 and x.vmin >= 0: q = x >> k
  else: q = (x + ((x >> (x.dtype.scalar().itemsize*8 - 1)) & ((1 << k) - 1))) >> k   # arithmetic shifts floor, so bias negative x up by 2**k-1
  return -q if c.arg < 0 else q

def _mod_pow2(x:UOp, c:UOp) -> UOp|None:
  if (k := _pow2(c)) is None: return None
  if dtypes.is_unsigned(x.dtype) or x.dtype.count == 1 and x.vmin >= 0: return x & ((1 << k) - 1)
  return x - ((x + ((x >> (x.dtype.scalar().itemsize*8 - 1)) & ((1 << k) - 1))) & -(1 << k))   # C's remainder takes the dividend's sign

def _shr_lowered(x:UOp, c:UOp) -> UOp|None:
  if not isinstance(c.arg, int) or c.arg < 0: return None
  if dtypes.is_unsigned(x.dtype) or x.dtype.count == 1 and x.vmin >= 0: return x // (1 << c.arg)
  return (x < 0).where((x - ((1 << c.arg) - 1)) // (1 << c.arg), x // (1 << c.arg))   # floor, where IDIV truncates

# ***** floats *****

def _sqrt(x:UOp) -> UOp: return (x < 0).where(math.nan, x.ne(0).where(xpow(x, x.const_like(0.5)), x))   # sqrt(-0.0) = -0.0
def _trunc(x:UOp) -> UOp:
  # casts truncate toward zero; from 2**mantissa_bits on every float is already an integer (and nan/inf stay). Only small values are
  # cast, since a float -> int cast out of range is undefined
  small = (x < 0).where(-x, x) < 2.0 ** mantissa_bits(x.dtype)
  return small.where(small.where(x, 0.0).cast(int_type(x.dtype)).cast(x.dtype), x)

# ***** rule tables *****

def bool_math(ops:Collection[Ops]|None=None) -> PatternMatcher:
  """ADD/MUL/MAX on bools are OR/AND/OR (for renderers with OR and AND; all of them when ops is None)"""
  return _bool_math(None if ops is None else frozenset(ops))
@functools.cache
def _bool_math(ops:frozenset[Ops]|None) -> PatternMatcher:
  return PatternMatcher([(UPat(op, dtypes.bool, name="x"), lambda x, to=to: x.replace(op=to))
                         for op, to in ((Ops.ADD, Ops.OR), (Ops.MUL, Ops.AND), (Ops.MAX, Ops.OR)) if ops is None or to in ops])

def get_transcendental_patterns(ops:Collection[Ops], force:bool|None=None) -> PatternMatcher:
  """EXP2/LOG2/SIN/POW decompositions for ops the renderer lacks; force (default: TRANSCENDENTAL>=2) decomposes them all"""
  return transcendental_rewrite(ops, TRANSCENDENTAL >= 2 if force is None else force)

def get_late_rewrite_patterns(ops:Collection[Ops], force_transcendental:bool=False, supports_int64:bool=True) -> PatternMatcher:
  """the late rewrites for a renderer that computes `ops` (Renderer.code_for_op keys) natively. supports_int64=False keeps fast integer
  division inside the dividend's own type."""
  return _late_rewrite(frozenset(ops), force_transcendental or TRANSCENDENTAL >= 2, supports_int64, bool(getenv("DISABLE_FAST_IDIV", 0)))

@functools.cache
def _late_rewrite(ops:frozenset[Ops], force_transcendental:bool, int64:bool, no_fast_idiv:bool) -> PatternMatcher:
  pat: list[tuple[UPat, Callable]] = []
  # ** fusions into the ops the renderer has (first, so a*b + y*-1 becomes a*b - y rather than a MULACC with -1) **
  if Ops.NEG in ops: pat.append((UPat.var("x") * -1, lambda x: x.alu(Ops.NEG) if x.dtype.scalar() != dtypes.bool else None))
  if Ops.SUB in ops:
    pat.append((UPat.var("x") + UPat(Ops.NEG, src=(UPat.var("y"),)), lambda x, y: x.alu(Ops.SUB, y)))
    pat.append((UPat.var("x") + UPat.var("y") * -1, lambda x, y: x.alu(Ops.SUB, y) if x.dtype.scalar() != dtypes.bool else None))
  if Ops.CMPEQ in ops: pat.append((UPat.var("x").ne(UPat.var("y")).ne(True), lambda x, y: x.alu(Ops.CMPEQ, y)))
  if Ops.MULACC in ops: pat.append((UPat.var("a", dtypes.floats) * UPat.var("b") + UPat.var("c"), lambda a, b, c: a.alu(Ops.MULACC, b, c)))
  # ** lowerings of the ops it lacks **
  if Ops.MAX not in ops: pat.append((UPat(Ops.MAX, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: (a < b).where(b, a)))
  if Ops.NEG not in ops:
    pat.append((UPat(Ops.NEG, src=(UPat.var("x"),)), lambda x: x.ne(True) if x.dtype.scalar() == dtypes.bool else x * -1))
  if Ops.SUB not in ops:
    pat.append((UPat(Ops.SUB, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x + (y.alu(Ops.NEG) if Ops.NEG in ops else y * -1)))
  if Ops.CMPEQ not in ops: pat.append((UPat(Ops.CMPEQ, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x.ne(y).ne(True)))
  if Ops.FDIV not in ops: pat.append((UPat(Ops.FDIV, dtypes.floats, (UPat.var("x"), UPat.var("y"))), lambda x, y: x * y.reciprocal()))
  elif Ops.RECIP not in ops: pat.append((UPat(Ops.RECIP, dtypes.floats, (UPat.var("x"),)), lambda x: x.const_like(1.0).alu(Ops.FDIV, x)))
  if Ops.MULACC not in ops: pat.append((UPat(Ops.MULACC, src=(UPat.var("a"), UPat.var("b"), UPat.var("c"))), lambda a, b, c: a * b + c))
  if Ops.SQRT not in ops: pat.append((UPat(Ops.SQRT, dtypes.floats, (UPat.var("x"),)), _sqrt))
  if Ops.TRUNC not in ops: pat.append((UPat(Ops.TRUNC, dtypes.floats, (UPat.var("x"),)), _trunc))
  if Ops.THREEFRY not in ops: pat.append((UPat(Ops.THREEFRY, dtypes.uint64, (UPat.var("x"), UPat.var("key"))), threefry2x32))
  if Ops.SHL not in ops:
    pat.append((UPat(Ops.SHL, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))),
                lambda x, c: x * (1 << c.arg) if isinstance(c.arg, int) and c.arg >= 0 else None))
  if Ops.SHR not in ops: pat.append((UPat(Ops.SHR, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))), _shr_lowered))
  # ** integer division by constants **
  if Ops.SHR in ops: pat.append((UPat(Ops.IDIV, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))), _idiv_pow2))
  if Ops.AND in ops and Ops.SHR in ops: pat.append((UPat(Ops.MOD, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))), _mod_pow2))
  if Ops.SHR in ops and not no_fast_idiv:
    pat.append((UPat(Ops.IDIV, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))), lambda x, c: fast_idiv(x, c.arg, int64)))
    pat.append((UPat(Ops.MOD, dtypes.ints, (UPat.var("x"), UPat.cvar("c", vec=False))),
                lambda x, c: x - q * c.arg if (q := fast_idiv(x, c.arg, int64)) is not None else None))
  return PatternMatcher(pat) + bool_math(ops) + get_transcendental_patterns(ops, force_transcendental)
