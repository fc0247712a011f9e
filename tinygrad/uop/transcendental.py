# EXP2, LOG2, SIN and POW built from basic ALU ops (ADD, MUL, RECIP, CMPLT, CMPNE, WHERE, CAST, BITCAST, shifts, bit logic), for devices
# that lack them and for TRANSCENDENTAL=2. float32/float64 are computed natively; float16, bfloat16 and fp8 go through float32.
# Error-free transformations (two_sum, two_prod) carry an extra word of precision where a single rounding would cost ulps. Every product
# that feeds one of them is exact, so the graphs give the same answer whether or not a device fuses a*b+c into an FMA.
# The constants (pi, ln 2, 2/pi bits, polynomial coefficients) are computed below from big integers and exact rationals.
from __future__ import annotations
import functools, math, struct
from fractions import Fraction
from typing import Callable, Collection
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import DType, dtypes, truncate
from tinygrad.helpers import polyN  # noqa: F401  # tinygrad keeps it importable from here

TRANSCENDENTAL_SUPPORTED_DTYPES = {dtypes.float16, dtypes.float32, dtypes.float64}

# ***** constants from exact arithmetic *****

_PREC = 1400   # fractional bits of the fixed-point pi and ln 2: enough for the 2/pi table of float64 (~1250 bits)

def _atan_inv(n:int, one:int) -> int:
  # atan(1/n) * one from its Taylor series in integers
  total = term = one // n
  k, sign = 3, -1
  while term:
    term //= n*n
    total += sign * (term // k)
    k, sign = k + 2, -sign
  return total

@functools.cache
def _pi_fixed() -> int:
  # pi * 2**_PREC (Machin's formula); the 32 guard bits absorb the truncation of every series term
  one = 1 << (_PREC + 32)
  return (16*_atan_inv(5, one) - 4*_atan_inv(239, one)) >> 32

@functools.cache
def _ln2_fixed() -> int:
  # ln 2 * 2**_PREC = 2*atanh(1/3)
  one, total, k = 1 << (_PREC + 32), 0, 1
  term = one // 3
  while term:
    total += term // k
    term, k = term // 9, k + 2
  return (2*total) >> 32

def _frac(fixed:int) -> Fraction: return Fraction(fixed, 1 << _PREC)
def _rnd(v:Fraction|float, dt:DType) -> float: return truncate[dt](float(v))
def _dd(v:Fraction, dt:DType) -> tuple[float, float]:
  # v as an unevaluated sum hi+lo of two dt floats
  hi = _rnd(v, dt)
  return hi, _rnd(v - Fraction(hi), dt)

@functools.cache
def two_over_pi_words(nwords:int, pad:int) -> tuple[int, ...]:
  """floor(2/pi * 2**(32*nwords-pad)) as 32-bit words, most significant first: `pad` zero bits then the bits of 2/pi"""
  v = (1 << (32*nwords - pad + 1 + _PREC)) // _pi_fixed()
  return tuple((v >> (32*(nwords-1-i))) & 0xffffffff for i in range(nwords))

@functools.cache
def _pio2_parts(dt:DType, part_bits:int, nparts:int) -> tuple[tuple[float, ...], float]:
  # pi/2 = parts[0] + ... + parts[-1] + rest: every part has at most part_bits significant bits (so q*part is exact), rest is rounded
  v, parts = _pi_fixed() >> 1, []
  for _ in range(nparts):
    cut = v.bit_length() - part_bits
    parts.append(math.ldexp(v >> cut, cut - _PREC))
    v -= (v >> cut) << cut
  return tuple(parts), _rnd(_frac(v), dt)

def _taylor(dt:DType, start:int, n:int, step:int=1, first:int=1, alternate:bool=False, scale:Fraction=Fraction(1)) -> list[float]:
  # n coefficients +-scale**k/k! for k = start, start+step, ...: the first with sign `first`, then alternating if asked; highest degree first
  ks = range(start, start + n*step, step)
  return [_rnd(first * (-1 if alternate and i % 2 else 1) * scale**k / math.factorial(k), dt) for i, k in enumerate(ks)][::-1]

# ***** dtype helpers *****

def _is64(d:UOp|DType) -> bool: return (d.dtype if isinstance(d, UOp) else d).scalar() == dtypes.float64
def _bits(c:float, dt:DType) -> int: return struct.unpack("<q" if _is64(dt) else "<i", struct.pack("<d" if _is64(dt) else "<f", c))[0]
def mantissa_bits(d:DType) -> int: return dtypes.finfo(d)[1]
def exponent_bias(d:DType) -> int: return (1 << (dtypes.finfo(d)[0] - 1)) - 1
def exponent_mask(d:DType) -> int: return (1 << dtypes.finfo(d)[0]) - 1
def int_type(d:DType, unsigned:bool=False) -> DType:
  """the int dtype with the width (and vector count) of float dtype d"""
  sz = d.scalar().itemsize
  return {1: (dtypes.int8, dtypes.uint8), 2: (dtypes.int16, dtypes.uint16), 4: (dtypes.int32, dtypes.uint32),
          8: (dtypes.int64, dtypes.uint64)}[sz][unsigned].vec(d.count)

def _fc(x:UOp, v:float|Fraction) -> UOp: return x.const_like(_rnd(v, x.dtype.scalar()))   # a constant rounded to x's float type
def _f32(d:UOp) -> DType: return dtypes.float32.vec(d.dtype.count)
def _abs(x:UOp) -> UOp: return (x < 0).where(-x, x)
def _poly(x:UOp, coeffs:list[float]) -> UOp:
  # Horner's scheme, coefficients highest degree first
  acc = _fc(x, coeffs[0])
  for c in coeffs[1:]: acc = acc * x + c
  return acc

# ***** integer helpers on the int type matching the float width *****

def shr(x:UOp, y:int|UOp) -> UOp: return x.alu(Ops.SHR, x.ufix(y))
def shl(x:UOp, y:int|UOp) -> UOp: return x.alu(Ops.SHL, x.ufix(y))

def rintk(d:UOp) -> UOp:
  """d rounded half away from zero, as the signed int of d's width. Exact for |d| < 2**mantissa_bits except in the half ulp below 0.5."""
  return (d + (d < 0).where(_fc(d, -0.5), _fc(d, 0.5))).cast(int_type(d.dtype))

def pow2if(q:UOp, float_dtype:DType) -> UOp:
  """2**q as float_dtype for an int q (of the same width) in the normal exponent range"""
  fdt = float_dtype.scalar().vec(q.dtype.count)
  return shl(q + exponent_bias(fdt), mantissa_bits(fdt)).bitcast(fdt)

def ilogb2k(d:UOp) -> UOp:
  """floor(log2(d)) as a signed int, for finite normal d (the biased exponent field minus the bias)"""
  ebits = shr(d.bitcast(int_type(d.dtype, True)), mantissa_bits(d.dtype)) & exponent_mask(d.dtype)
  return ebits.cast(int_type(d.dtype)) - exponent_bias(d.dtype)

def ldexp2k(d:UOp, e:UOp) -> UOp:
  """d * 2**e, for e up to twice the exponent range: two exact power-of-two factors, so only the final product rounds (denormals too)"""
  return (d * pow2if(shr(e, 1), d.dtype)) * pow2if(e - shr(e, 1), d.dtype)

def frexp(v:UOp) -> tuple[UOp, UOp]:
  """(mantissa in [0.5, 1) with v's sign, exponent) with v = mantissa * 2**exponent, for finite normal nonzero v"""
  mb, bias, ut = mantissa_bits(v.dtype), exponent_bias(v.dtype), int_type(v.dtype, True)
  bits = v.bitcast(ut)
  exponent = (shr(bits, mb) & exponent_mask(v.dtype)).cast(int_type(v.dtype)) - (bias - 1)
  keep = (1 << (v.dtype.scalar().itemsize*8 - 1)) | ((1 << mb) - 1)   # sign and mantissa
  return ((bits & keep) | ((bias - 1) << mb)).bitcast(v.dtype), exponent

# ***** error-free transformations *****

def two_sum(a:UOp, b:UOp) -> tuple[UOp, UOp]:
  """(s, e) with s = fl(a+b) and a+b = s+e exactly (Knuth)"""
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)

def fast_two_sum(a:UOp, b:UOp) -> tuple[UOp, UOp]:
  """two_sum when a is zero or its exponent is at least b's (Dekker)"""
  s = a + b
  return s, b - (s - a)

def _split_bits(dt:DType) -> int: return 27 if _is64(dt) else 12   # low mantissa bits cleared by a split
def split(a:UOp) -> tuple[UOp, UOp]:
  """a = hi + lo with hi holding the top half of the significand. Masking bits (not Veltkamp's a*(2**s+1)) is immune to FMA contraction."""
  ut = int_type(a.dtype, True)
  hi = (a.bitcast(ut) & ((1 << (a.dtype.scalar().itemsize*8)) - (1 << _split_bits(a.dtype)))).bitcast(a.dtype)
  return hi, a - hi
def _split_const(c:float, dt:DType) -> tuple[float, float]:
  fmt, ufmt = ("d", "Q") if _is64(dt) else ("f", "I")
  hi = struct.unpack(fmt, struct.pack(ufmt, struct.unpack(ufmt, struct.pack(fmt, c))[0] & ~((1 << _split_bits(dt)) - 1)))[0]
  return hi, c - hi

def two_prod(a:UOp, b:UOp|float) -> tuple[UOp, UOp]:
  """(p, e) with p = fl(a*b) and a*b = p+e up to ~2**-2m relative (Dekker); b may be a python float constant"""
  if isinstance(b, UOp): bu, (bh, bl) = b, split(b)
  else:
    c = _rnd(b, a.dtype.scalar())
    bu, (bh, bl) = _fc(a, c), (_fc(a, x) for x in _split_const(c, a.dtype.scalar()))
  p = a * bu
  ah, al = split(a)
  return p, (((ah*bh - p) + ah*bl) + al*bh) + al*bl

# ***** exp2 *****

def _whole(d:UOp) -> bool:
  """d is a whole number wherever it is finite: a TRUNC, a whole constant, an int cast, or a select between such"""
  stack = [d]
  while stack:
    x = stack.pop()
    if x.op is Ops.WHERE: stack += x.src[1:]
    elif not (x.op is Ops.TRUNC or (x.op is Ops.CAST and dtypes.is_int(x.src[0].dtype)) or
              (x.op is Ops.CONST and (not math.isfinite(x.arg) or float(x.arg).is_integer()))): return False
  return True

def _cval(u:UOp) -> float|None:
  # the value of a constant, also a vector one with equal lanes
  if u.op is Ops.CONST: return u.arg
  if u.op is Ops.VCONST and len(set(u.arg)) == 1: return u.arg[0]
  if u.op is Ops.VECTORIZE and len(set(u.src)) == 1: return _cval(u.src[0])
  return None

def _clamped_range(d:UOp) -> tuple[float, float]|None:
  """(lo, hi) with d in [lo, hi] and never nan, for d = (trunc of) a clamp to constants whose last select maps nan to a constant:
  (c < x).where(x, c) is max(x, c) and (x < c).where(x, c) is min(x, c); either one's nan goes to c. Works on vectors, unlike vmin/vmax."""
  if d.op is Ops.TRUNC: d = d.src[0]
  if d.op is not Ops.WHERE or d.src[0].op is not Ops.CMPLT: return None
  (a, b), x, y = d.src[0].src, d.src[1], d.src[2]
  c = _cval(y)
  if c is None or not math.isfinite(c): return None
  if a is x and b is y: lo, hi = -math.inf, c     # min
  elif b is x and a is y: lo, hi = c, math.inf    # max
  else: return None
  inner = _clamped_range(x) if x.op is Ops.WHERE else None
  return (max(lo, inner[0]), min(hi, inner[1])) if inner is not None else (lo, hi)

def _exp2_core(hi:UOp, lo:UOp|None=None) -> UOp:
  # 2**(hi+lo) for float32/float64, lo a tiny correction; over/underflow and nan are decided on hi
  dt = hi.dtype.scalar()
  upper, lower = (1024.0, -1075.0) if _is64(dt) else (128.0, -150.0)
  # a whole power known to be inside the range and not nan (exp's 2**k): only the exponent bits
  if lo is None and _whole(hi) and (rng := _clamped_range(hi)) is not None and lower <= rng[0] and rng[1] <= upper:
    return ldexp2k(_fc(hi, 1.0), hi.cast(int_type(hi.dtype)))
  x = hi.ne(hi).where(0.0, (hi < lower).where(lower, (hi < upper).where(hi, upper)))   # clamped so the exponent maths can't overflow
  if lo is None and _whole(hi): u = ldexp2k(_fc(x, 1.0), x.cast(int_type(x.dtype)))   # a whole power: only the exponent bits
  else:
    q = rintk(x)
    s = x - q.cast(x.dtype)   # exact, |s| <= 1/2
    if lo is not None: s = s + lo
    # 2**s = e**(s*ln2): Taylor terms until they drop below an ulp/16 on |s| <= 1/2
    u = ldexp2k(_poly(s, _taylor(dt, 0, 15 if _is64(dt) else 9, scale=_frac(_ln2_fixed()))), q)
  u = (hi < upper).where(u, math.inf)
  u = (hi < lower).where(0.0, u)
  return hi.ne(hi).where(math.nan, u)

def _chebyshev(series:list[Fraction], h:Fraction, n:int) -> list[Fraction]:
  """the degree-n near-minimax polynomial (lowest degree first) on |r| <= h for the function with this Taylor series (taken far past n):
  the series re-expanded in Chebyshev polynomials of r/h and cut at degree n, all in rationals"""
  a = [c * h**k for k, c in enumerate(series)]   # the series of f(h*u) on |u| <= 1
  cheb = [Fraction(0)] * len(a)
  for k, ak in enumerate(a):   # u**k = 2**(1-k) * sum binom(k, (k-j)/2) T_j(u), T_0's term halved
    for j in range(k % 2, k + 1, 2): cheb[j] += ak * Fraction(math.comb(k, (k - j) // 2) * (1 if j == 0 else 2), 2**k)
  T, out = [[Fraction(1)], [Fraction(0), Fraction(1)]], [Fraction(0)] * (n + 1)
  while len(T) <= n: T.append([2*c - (T[-2][i] if i < len(T[-2]) else 0) for i, c in enumerate([Fraction(0)] + T[-1])])
  for j in range(n + 1):
    for i, c in enumerate(T[j]): out[i] += cheb[j] * c
  return [c / h**k for k, c in enumerate(out)]

@functools.cache
def _economized(dt:DType, skip:int=0) -> list[float]:
  """coefficients (highest degree first) for e**r (skip=2: (e**r - 1 - r)/r**2) on |r| <= 0.35. Degree 6 (float32) / 11 (float64) for
  e**r puts the approximation error near 1/40 ulp, two terms fewer than the Taylor series needs."""
  n = (11 if _is64(dt) else 6) - skip // 2
  return [_rnd(c, dt) for c in _chebyshev([Fraction(1, math.factorial(k + skip)) for k in range(n + 12)], Fraction(35, 100), n)][::-1]

@functools.cache
def _atanh_tail(dt:DType) -> list[float]:
  # 2*atanh(s) = 2s + s*R, R = sum 2*s**2k/(2k+1) (k >= 1) on |s| <= 0.1716 (s = f/(2+f), sqrt(1/2) <= 1+f <= sqrt(2)), in powers of s**2
  n = 14 if _is64(dt) else 8
  even = _chebyshev([Fraction(2, k + 1) if k % 2 == 0 and k else Fraction(0) for k in range(n + 30)], Fraction(1716, 10000), n)
  return [_rnd(c, dt) for c in even[2::2]][::-1]

def _exp_reduce(x:UOp) -> tuple[UOp, UOp]:
  """(r, u) with x = k*ln2 + r, |r| <= 0.35, and u = k + 2*bias as an int, for finite |x| < 2**11 (or nan: garbage u, nan r). k is x/ln2
  rounded by adding 1.5*2**mantissa_bits (the sum's last bit is the ones place), so k comes from its bits with no float -> int cast; ln2's
  high part has enough trailing zeros that k times it is exact (Cody-Waite). Both products can fuse into FMAs without changing r."""
  dt, it = x.dtype.scalar(), int_type(x.dtype)
  magic = 1.5 * 2.0**mantissa_bits(dt)
  ln2_hi, ln2_lo = _ln2_parts(dt)
  # k from the bits, not as t - magic: a compiler that may reassociate floats (WGSL's) folds that back to x/ln2
  magic_bits = _bits(magic, dt)
  k = (x * _rnd(1 / _frac(_ln2_fixed()), dt) + magic).bitcast(it) - magic_bits
  kf = k.cast(x.dtype)
  return kf * -ln2_lo + (kf * -ln2_hi + x), k + 2*exponent_bias(dt)

def xexp(d:UOp) -> UOp:
  """e**d: d clamped from above to where e**d overflows and from below to where k = -2*bias (selects that keep a nan), d = k*ln2 + r
  (_exp_reduce), e**r by a near-minimax polynomial (_economized), times 2**k in two exact power-of-two factors, so the last product rounds
  once, also into the denormals. At the lower clamp both factors are 0.0: -inf (a masked softmax) gives 0 without the slow denormal
  arithmetic that a product underflowing to 0 takes."""
  if d.dtype.scalar() not in (dtypes.float32, dtypes.float64): return xexp(d.cast(_f32(d))).cast(d.dtype)
  dt = d.dtype.scalar()
  lo, hi = (-1418.0, 710.0) if _is64(dt) else (-176.0, 89.0)
  x = (d < lo).where(lo, d)
  x = (_fc(x, hi) < x).where(hi, x)
  r, u = _exp_reduce(x)
  u = u.bitcast(int_type(d.dtype, True))   # >= 0; unsigned, so u << mb may wrap
  half = shr(u, 1)   # k//2 + bias (2*bias is even): the factors are 2**(k//2) and 2**(k - k//2), normal or (at the clamp) 0.0
  p, f1 = _poly(r, _economized(dt)), shl(half, mantissa_bits(dt))
  return (p * f1.bitcast(d.dtype)) * (shl(u, mantissa_bits(dt)) - f1).bitcast(d.dtype)   # (u - half) << mb, as one subtraction

def _ln2_parts(dt:DType) -> tuple[float, float]:
  # ln2 = hi + lo, hi with enough trailing zeros that k*hi is exact for |k| < 2**12 (float64) / 2**9 (float32)
  ln2, keep = _frac(_ln2_fixed()), mantissa_bits(dt) + 1 - (12 if _is64(dt) else 9)
  hi = math.ldexp(round(math.ldexp(float(ln2), keep)), -keep)
  return hi, _rnd(ln2 - Fraction(hi), dt)

def xtanh(d:UOp) -> UOp:
  """tanh |d| = -E/(E + 2) with E = e**(-2|d|) - 1, and d's sign put back with bit operations. E = 2**k*(e**r - 1) + (2**k - 1) keeps its
  relative precision near 0 (k = 0 there: the polynomial for e**r - 1 alone), and for k < 0 both terms share a sign or the second is at least
  twice the first, so nothing cancels. -2|d| is clamped at -20 (float32) / -40 (float64), where tanh rounds to 1: one exp, one division.
  inf -> +-1, nan -> nan, -0 -> -0."""
  if d.dtype.scalar() not in (dtypes.float32, dtypes.float64): return xtanh(d.cast(_f32(d))).cast(d.dtype)
  dt = d.dtype.scalar()
  ut, sign, mb = int_type(d.dtype, True), 1 << (dt.itemsize * 8 - 1), mantissa_bits(dt)
  y = (d.bitcast(ut) | sign).bitcast(d.dtype) * 2.0   # -2|d|, exact
  cap = -40.0 if _is64(dt) else -20.0
  y = (y < cap).where(cap, y)   # a nan stays
  r, u = _exp_reduce(y)
  s = shl(u - exponent_bias(dt), mb).bitcast(d.dtype)   # 2**k, k in [-58, 0]: normal
  q = (r * r) * _poly(r, _economized(dt, 2)) + r   # e**r - 1, r itself exact
  den = s * q + (s + 1.0)   # 1 + e**y, rounded once (1 + s and 1 - s are exact)
  # tanh = (1 - e**y)/(1 + e**y) near 0; past 1/2, 1 - 2*e**y/(1 + e**y): its rounding errors shrink by the subtraction from 1
  big = y < -1.1
  v = big.where(s * q + s, s * -q + (1.0 - s)).alu(Ops.FDIV, den)   # one rounding (a / b is a * (1/b): two)
  t = big.where(v * -2.0 + 1.0, v)
  return ((t.bitcast(ut) & (sign - 1)) | (d.bitcast(ut) & sign)).bitcast(d.dtype)

def xexp2(d:UOp) -> UOp:
  """2**d: overflow -> inf, underflow -> 0 (correctly rounded through the denormals), nan -> nan, -inf -> 0, inf -> inf"""
  if d.dtype.scalar() not in (dtypes.float32, dtypes.float64): return xexp2(d.cast(_f32(d))).cast(d.dtype)
  return _exp2_core(d)

# ***** log2 *****

def _log2_dd(d:UOp) -> tuple[UOp, UOp]:
  # log2(d) as hi+lo for finite d > 0 (garbage elsewhere): d = 2**e * m with m in [sqrt(2)/2, sqrt(2)],
  # log2(m) = 2/ln2 * atanh(t) with t = (m-1)/(m+1), |t| <= 0.1716
  dt = d.dtype.scalar()
  mb, bias, ut = mantissa_bits(dt), exponent_bias(dt), int_type(d.dtype, True)
  tiny = d < 2.0 ** (1 - bias)
  a = tiny.where(d * 2.0**64, d)   # denormals become normal
  bits = a.bitcast(ut)
  e = (shr(bits, mb) & exponent_mask(dt)).cast(int_type(d.dtype)) - bias
  m = ((bits & ((1 << mb) - 1)) | (bias << mb)).bitcast(d.dtype)   # [1, 2)
  big = _fc(m, math.sqrt(2)) < m
  m = big.where(m * 0.5, m)
  e = big.where(e + 1, e)
  ef = tiny.where(e - 64, e).cast(d.dtype)
  num = m - 1.0                       # exact (Sterbenz)
  den, den_l = fast_two_sum(m.const_like(1.0), m)   # m+1 = den+den_l exactly
  rden = den.reciprocal()
  t = num * rden
  p, pl = two_prod(t, den)
  t_l = (((num - p) - pl) - t * den_l) * rden   # one Newton step: t+t_l = num/(m+1) to ~2**-2m, even with an approximate RECIP
  kk = 2 / _frac(_ln2_fixed())
  k_hi, k_lo = _dd(kk, dt)
  t2 = t * t
  mh, ml = two_prod(t, k_hi)
  ml = ml + (t_l * (1.0 + t2 * (1.0 + t2)) * k_hi + t * k_lo)   # t_l also moves the higher terms: d(atanh t)/dt = 1 + t**2 + t**4 ...
  nterms = 13 if _is64(dt) else 7   # series terms until t**(2n+3)/(2n+3) is below the target precision
  coeffs = [_rnd(kk / (2*k+1), dt) for k in range(nterms, 0, -1)]   # K/(2k+1), highest first
  # the t**3/3 term in double-word too: pow multiplies the log by up to ~2**10, so its rounding would show
  t2h, t2l = two_prod(t, t)
  t3h, t3l = two_prod(t2h, t)
  c_hi, c_lo = _dd(kk / 3, dt)
  ah, al = two_prod(t3h, c_hi)
  al = al + ((t3l + t2l * t) * c_hi + t3h * c_lo)
  mh, e = fast_two_sum(mh, ah)   # |K*t| >= |K*t**3/3|
  ml = ml + e + al + t3h * t2h * _poly(t2h, coeffs[:-1])
  rh, rl = fast_two_sum(ef, mh)   # |mh| <= 0.5 <= |ef| or ef == 0
  return fast_two_sum(rh, rl + ml)

def xlog2(d:UOp) -> UOp:
  """log2(d) as k + log(1+f)/ln2 with 1+f in [sqrt(1/2), sqrt(2)) (the exponent and mantissa come from d's bits minus those of sqrt(1/2)),
  log(1+f) = f - f*f/2 + s*(f*f/2 + R(s*s)), s = f/(2+f), where f is exact and the rest is small. f - f*f/2 is cut into a high part with
  12 (float32) / 32 (float64) zero low bits, so its product with the high part of 1/ln2 is exact. 0 -> -inf, negative -> nan, inf -> inf,
  nan -> nan; denormals are scaled by 2**64 first."""
  if d.dtype.scalar() not in (dtypes.float32, dtypes.float64): return xlog2(d.cast(_f32(d))).cast(d.dtype)
  dt, it = d.dtype.scalar(), int_type(d.dtype)
  mb, f64 = mantissa_bits(dt), _is64(dt)
  tiny = d < 2.0 ** (1 - exponent_bias(dt))
  sq = _bits(math.sqrt(0.5), dt)
  u = tiny.where(d * 2.0**64, d).bitcast(it) - sq
  m = ((u & ((1 << mb) - 1)) + sq).bitcast(d.dtype)
  kf = shr(u, mb).cast(d.dtype) + tiny.where(_fc(d, -64.0), 0.0)
  f = m - 1.0   # exact (Sterbenz)
  s = f.alu(Ops.FDIV, f + 2.0)
  z = s * s
  hfsq = f * f * 0.5
  corr = s * (hfsq + z * _poly(z, _atanh_tail(dt)))
  cut = f - hfsq
  cut = (cut.bitcast(it) & -(1 << (32 if f64 else 12))).bitcast(d.dtype)
  lo = ((f - cut) - hfsq) + corr
  inv_hi = _split_const(_rnd(1 / _frac(_ln2_fixed()), dt), dt)[0]
  inv_lo = _rnd(1 / _frac(_ln2_fixed()) - Fraction(inv_hi), dt)
  r = (((lo + cut) * inv_lo + lo * inv_hi) + cut * inv_hi) + kf
  r = (d < math.inf).where(r, d)   # inf and nan
  r = (d < 0).where(math.nan, r)
  return d.ne(0).where(r, -math.inf)   # -0.0 too

# ***** sin *****
# x = q*(pi/2) + r with |r| <= ~pi/4, r kept as hi+lo; sin(x) = sin(r), cos(r), -sin(r), -cos(r) for q%4 = 0, 1, 2, 3.

def _cw_bits(dt:DType) -> int: return 20 if _is64(dt) else 11   # Cody-Waite handles q < 2**bits
def cody_waite_max(dt:DType) -> float: return (2**_cw_bits(dt) - 1) * math.pi/2

def cody_waite_reduction(x:UOp) -> tuple[UOp, UOp, UOp]:
  """(r_hi, r_lo, q) for 0 <= x < cody_waite_max: pi/2 is split into parts whose products with q are exact and the differences are
  accumulated with two_sum, so r keeps ~2m bits even when x is close to a multiple of pi/2"""
  dt = x.dtype.scalar()
  qbits, m = _cw_bits(dt), mantissa_bits(dt) + 1
  part_bits = m - qbits
  parts, rest = _pio2_parts(dt, part_bits, -(-(m + 2*qbits + 6) // part_bits))
  q = rintk(x * _rnd(2/math.pi, dt))
  qf = q.cast(x.dtype)
  t = x - qf * parts[0]   # exact: q*parts[0] is exact and within a factor 2 of x
  err = qf * -rest
  for c in parts[1:]:
    t, e = two_sum(t, qf * -c)
    err = err + e
  rh, rl = fast_two_sum(t, err)
  return rh, rl, q.cast(dtypes.int32.vec(x.dtype.count))

def _select(idx:UOp, table:tuple[int, ...], dt:DType) -> UOp:
  # table[idx] as a chain of WHEREs (idx past the end gives the last entry)
  ret = UOp.const(dt, table[-1])
  for i in range(len(table)-2, -1, -1): ret = idx.ne(i).where(ret, UOp.const(dt, table[i]))
  return ret

def payne_hanek_reduction(x:UOp) -> tuple[UOp, UOp, UOp]:
  """(r_hi, r_lo, q) for finite x >= 0.5, exact integer arithmetic: with x = m*2**k (m the integer significand), x*2/pi mod 4 only
  needs the bits of 2/pi from 2**(1-k) on. A window of 96 (float32) / 192 (float64) of them times m, mod 2**window, is a fixed-point
  number whose top two bits are q%4 and whose rest is the fraction, precise far beyond the closest approach of a float to a multiple
  of pi/2 (2**-61 for float64)"""
  dt, cnt = x.dtype.scalar(), x.dtype.count
  u64, u32 = dtypes.uint64.vec(cnt), dtypes.uint32.vec(cnt)
  mb, bias = mantissa_bits(dt), exponent_bias(dt)
  nlimb, pad = (6, 64) if _is64(dt) else (3, 32)     # window limbs of 32 bits; zero bits in front of the table for small k
  L = 32 * nlimb
  nwords = ((bias - mb - 2 + pad) >> 5) + nlimb + 1  # enough for the largest exponent
  words = two_over_pi_words(nwords, pad)
  M32 = 0xffffffff
  bits = x.bitcast(int_type(x.dtype, True)).cast(u64)
  ebits = shr(bits, mb) & exponent_mask(dt)
  ebits = (ebits < bias - 1).where(ebits.const_like(bias - 1), ebits)   # x >= 0.5 keeps the window inside the table
  m = (bits & ((1 << mb) - 1)) | (1 << mb)
  # table bit index of the 2**1 bit of x*2/pi: k - 2 + pad with k = e - bias - mb (>= 0; the constant is negative, so wrapped)
  g0 = ebits + ((pad - 2 - bias - mb) % 2**64)
  wi, sh = shr(g0, 5), g0 & 31
  w = [_select(wi, words[t:], u64) for t in range(nlimb + 1)]
  # window limbs, least significant first; the right shift is 32-sh (all unsigned), and 32 on a uint64 is defined and gives 0
  z = [((shl(w[t], sh) | shr(w[t+1], (sh ^ 31) + 1)) & M32) for t in range(nlimb)][::-1]
  ml = [m] if not _is64(dt) else [m & M32, shr(m, 32)]
  # schoolbook product mod 2**L: each column gathers 32-bit halves of the partial products, which can't overflow 64 bits
  prods = {(a, b): ml[a] * z[b] for a in range(len(ml)) for b in range(nlimb) if a + b < nlimb}
  p: list[UOp] = []
  carry: UOp|None = None
  for c in range(nlimb):
    terms = [pr & M32 for (a, b), pr in prods.items() if a + b == c] + [shr(pr, 32) for (a, b), pr in prods.items() if a + b == c - 1]
    if carry is not None: terms.append(carry)
    acc = terms[0]
    for tt in terms[1:]: acc = acc + tt
    p.append(acc & M32)
    carry = shr(acc, 32)
  # round to the nearest quadrant: a fraction >= 1/2 becomes 1 - fraction (negated, two's complement over the limbs) and q += 1
  half = shr(p[-1], 29) & 1
  q = shr(p[-1], 30) + half
  flip = half * M32
  g = [(pc ^ flip) for pc in p[:-1]] + [(p[-1] ^ flip) & ((1 << 30) - 1)]
  carry = half
  for c in range(nlimb):
    acc = g[c] + carry
    g[c], carry = acc & M32, shr(acc, 32)
  # |fraction| = sum g[c] * 2**(32c - (L-2)); add it up from the small end in exact chunks (32 bits in float64, 16 in float32)
  cw = 32 if _is64(dt) else 16
  chunks: list[tuple[UOp, int]] = []
  for c in range(nlimb - 5 if _is64(dt) else 0, nlimb):
    for j in range(0, 32, cw): chunks.append(((shr(g[c], j) & ((1 << cw) - 1)) if cw < 32 else g[c], 32*c + j - (L - 2)))
  s, err = None, None
  for v, e2 in chunks:
    tf = v.cast(u32).cast(x.dtype) * math.ldexp(1.0, e2)
    if s is None: s = tf
    else:
      s, e = fast_two_sum(tf, s)   # every chunk is at least the sum of the smaller ones, or zero
      err = e if err is None else err + e
  assert s is not None and err is not None
  fh, fl = fast_two_sum(s, err)
  c_hi, c_lo = _dd(_frac(_pi_fixed()) / 2, dt)
  rh, rl = two_prod(fh, c_hi)
  rh, rl = fast_two_sum(rh, rl + (fh * c_lo + fl * c_hi))
  neg = half.ne(0)
  return neg.where(-rh, rh), neg.where(-rl, rl), (q & 3).cast(dtypes.int32.vec(cnt))

def _sin_cos_poly(rh:UOp, rl:UOp, q:UOp) -> UOp:
  dt = rh.dtype.scalar()
  s2 = rh * rh
  # sin(r) = r + r**3*P(r**2) + rl*cos(r); Taylor terms through r**17 (float64) / r**9 (float32) on |r| <= pi/4
  ps = _poly(s2, _taylor(dt, 3, 8 if _is64(dt) else 4, 2, -1, True))
  sin_r = rh + (rh * s2 * ps + rl * (1.0 - s2 * 0.5))
  # cos(r) = 1 - r**2/2 + r**4*Q(r**2) - rl*sin(r), with 1 - r**2/2 kept exact to one rounding
  s2h, s2l = two_prod(rh, rh)
  hh = s2h * 0.5
  w, ew = fast_two_sum(rh.const_like(1.0), -hh)
  pc = _poly(s2h, _taylor(dt, 4, 8 if _is64(dt) else 4, 2, 1, True))
  cos_r = w + ((ew - s2l * 0.5) + (s2h * s2h * pc - rl * rh))
  return (q & 1).ne(0).where(cos_r, sin_r)

def xsin(d:UOp, fast:bool|None=None) -> UOp:
  """sin(d) over the whole float range: Cody-Waite reduction below cody_waite_max, Payne-Hanek above; inf/nan -> nan.
  fast=True (the default when d's bounds are known to be small) leaves out Payne-Hanek and its 64-bit integer maths."""
  dt = d.dtype.scalar() if d.dtype.scalar() in (dtypes.float32, dtypes.float64) else dtypes.float32
  cw_max = cody_waite_max(dt)
  if fast is None: fast = d.dtype.count == 1 and -cw_max < d.vmin and d.vmax < cw_max
  if d.dtype.scalar() != dt: return xsin(d.cast(_f32(d)), fast).cast(d.dtype)
  ax = _abs(d)
  finite = ax < math.inf
  small = ax < cw_max
  rh, rl, q = cody_waite_reduction(small.where(ax, 0.0))
  if not fast:
    ph = payne_hanek_reduction((finite & small.logical_not()).where(ax, 1.0))
    rh, rl, q = small.where(rh, ph[0]), small.where(rl, ph[1]), small.where(q, ph[2])
  res = _sin_cos_poly(rh, rl, q)
  res = (q & 2).ne(0).ne(d < 0).where(-res, res)   # quadrant sign xor the sign of d (sin is odd)
  res = d.ne(0).where(res, d)                       # sin(-0.0) = -0.0
  return finite.where(res, math.nan)

# ***** pow *****

def xpow(base:UOp, exponent:UOp) -> UOp:
  """base**exponent as C's pow: exp2(y*log2|x|) in double-word precision, negative bases need an integer exponent (odd ones keep the
  sign), x**0 = 1**y = 1 (even for nan), 0**negative = inf, (-1)**inf = 1, nan otherwise propagates"""
  if base.dtype.scalar() not in (dtypes.float32, dtypes.float64):
    return xpow(base.cast(_f32(base)), exponent.cast(_f32(exponent))).cast(base.dtype)
  x, y = base, exponent
  dt, it = x.dtype.scalar(), int_type(x.dtype)
  mb = mantissa_bits(dt)
  ax, ay = _abs(x), _abs(y)
  regular = ax.ne(0) & (ax < math.inf)
  lh, ll = _log2_dd(regular.where(ax, 1.0))
  lh = regular.where(lh, ax.ne(0).where(lh.const_like(math.inf), -math.inf))
  ph, pl = two_prod(y, lh)   # non-finite products are decided on ph alone
  r = _exp2_core(ph, pl + y * regular.where(ll, 0.0))
  # |y| >= 2**mb is always an integer, and even from 2**(mb+1) on
  yi = (ay < 2.0**(mb+1)).where(y, 0.0).cast(it)
  y_int = (ay < 2.0**mb).logical_not() | yi.cast(x.dtype).eq(y)
  y_odd = y_int & (yi & 1).ne(0)
  r = ((x.bitcast(it) < 0) & y_odd).where(-r, r)   # the sign bit, so -0.0 counts as negative
  r = ((x < 0) & x.gt(-math.inf) & y_int.logical_not()).where(math.nan, r)
  r = (x.eq(-1.0) & ay.eq(math.inf)).where(1.0, r)
  r = (x.ne(x) | y.ne(y)).where(math.nan, r)
  return (x.eq(1.0) | y.eq(0.0)).where(1.0, r)

# ***** rewrite rules *****

def transcendental_rewrite(ops:Collection[Ops], force:bool=False) -> PatternMatcher:
  """rules that replace EXP2/EXP/TANH/LOG2/SIN/POW on floats with the functions above, for the ops a renderer lacks (or all of them with force)"""
  fxns: list[tuple[Ops, Callable]] = [(Ops.EXP2, xexp2), (Ops.EXP, xexp), (Ops.TANH, xtanh), (Ops.LOG2, xlog2), (Ops.SIN, xsin)]
  pats: list[tuple[UPat, Callable]] = [(UPat(op, dtypes.floats, (UPat.var("d"),)), f) for op, f in fxns if force or op not in ops]
  if force or Ops.POW not in ops: pats.append((UPat(Ops.POW, dtypes.floats, (UPat.var("b"), UPat.var("e"))), lambda b, e: xpow(b, e)))
  if Ops.AND in ops:   # Tensor.abs's float select chain, (x < 0).where(-x, (0 < x).where(x, x - x)), is the sign bit cleared
    inner = UPat(Ops.WHERE, src=(UPat(Ops.CMPLT, src=(UPat.var("z1"), UPat.var("x"))), UPat.var("x"), UPat.var("diff")))
    pats.append((UPat(Ops.WHERE, dtypes.floats, (UPat(Ops.CMPLT, src=(UPat.var("x"), UPat.var("z0"))), UPat.var("neg"), inner)), _float_abs))
  return PatternMatcher(pats)

def _is_neg(y:UOp, x:UOp) -> bool: return (y.op is Ops.NEG and y.src[0] is x) or (y.op is Ops.MUL and y.src[0] is x and _cval(y.src[1]) == -1)
def _float_abs(x:UOp, z0:UOp, z1:UOp, neg:UOp, diff:UOp) -> UOp|None:
  if _cval(z0) != 0 or _cval(z1) != 0 or not _is_neg(neg, x): return None
  if not ((diff.op is Ops.SUB and diff.src == (x, x)) or (diff.op is Ops.ADD and diff.src[0] is x and _is_neg(diff.src[1], x))): return None
  ut = int_type(x.dtype, True)
  return (x.bitcast(ut) & ((1 << (x.dtype.scalar().itemsize * 8 - 1)) - 1)).bitcast(x.dtype)
