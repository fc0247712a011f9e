import math, struct, unittest
from typing import Any
import numpy as np
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, exec_alu, graph_rewrite
from tinygrad.dtype import DType, dtypes, truncate
from tinygrad.uop.transcendental import xexp2, xexp, xtanh, xlog2, xsin, xpow, transcendental_rewrite, two_over_pi_words, cody_waite_max
from tinygrad.uop.transcendental import TRANSCENDENTAL_SUPPORTED_DTYPES, rintk, pow2if, ilogb2k, ldexp2k, frexp

NP: dict[DType, Any] = {dtypes.float16: np.float16, dtypes.float32: np.float32, dtypes.float64: np.float64}
BASIC = {Ops.ADD, Ops.MUL, Ops.RECIP, Ops.FDIV, Ops.TRUNC, Ops.WHERE, Ops.CMPLT, Ops.CMPNE, Ops.SHL, Ops.SHR, Ops.AND, Ops.OR, Ops.XOR, Ops.CAST, Ops.BITCAST,
         Ops.CONST, Ops.DEFINE_VAR}

def _cast(v, dt:DType):
  if dt == dtypes.bool: return bool(v)
  if dtypes.is_int(dt) and isinstance(v, float) and not math.isfinite(v): raise AssertionError(f"non-finite {v} cast to {dt}")
  return truncate[dt](int(v) if dtypes.is_int(dt) else float(v))

class Evaluator:
  """runs a UOp graph of scalar basic ops in plain python: the device-independent meaning of the graph"""
  def __init__(self, out:UOp, *inputs:UOp):
    self.order = list(out.toposort())
    assert all(u.op in BASIC for u in self.order), f"non-basic ops: {set(u.op for u in self.order) - BASIC}"
    idx = {u: i for i, u in enumerate(self.order)}
    self.inputs = [idx[x] for x in inputs if x in idx]
    self.input_pos = [i for i, x in enumerate(inputs) if x in idx]
    self.steps = [(u.op, u.dtype, str(u.src[0].dtype.scalar().fmt) if u.src else "", tuple(idx[s] for s in u.src), u.arg) for u in self.order]
  def __call__(self, *vals):
    # vectors are tuples, one value per lane (exec_alu maps over them)
    env: list = [None] * len(self.order)
    for i, p in zip(self.inputs, self.input_pos): env[i] = vals[p]
    for i, (op, dt, sfmt, src, arg) in enumerate(self.steps):
      if op is Ops.DEFINE_VAR: continue
      sdt, lanes = dt.scalar(), (lambda f, v: f(v) if dt.count == 1 else tuple(f(x) for x in v))
      if op is Ops.CONST: env[i] = truncate[sdt](arg) if dt.count == 1 else (truncate[sdt](arg),) * dt.count   # held in the device's type
      elif op is Ops.CAST: env[i] = lanes(lambda v: _cast(v, sdt), env[src[0]])
      elif op is Ops.BITCAST: env[i] = lanes(lambda v: struct.unpack(str(sdt.fmt), struct.pack(sfmt, v))[0], env[src[0]])
      else: env[i] = exec_alu(op, dt, [env[s] for s in src])
    return env[-1]

def run1(fxn, dt:DType, xs, lim=math.inf) -> np.ndarray:
  x = UOp.variable("x", -lim, lim, dt)
  ev = Evaluator(fxn(x), x)
  return np.array([ev(float(v)) for v in np.asarray(xs, NP[dt])], dtype=np.float64)

# references in x87 extended precision where numpy has it (11 more bits than float64), so float64 errors are measured, not rounded
REF = np.longdouble if np.finfo(np.longdouble).nmant >= 63 else np.float64
def ref_of(fxn, *xs):
  with np.errstate(all="ignore"): return fxn(*(np.asarray(x).astype(REF) for x in xs))

def ulp_err(got:np.ndarray, ref:np.ndarray, dt:DType) -> float:
  # error in ulps of dt; nan must match nan, infinities must match exactly
  npdt = NP[dt]
  ref_dt = ref.astype(npdt)
  nan_ok = np.isnan(got) == np.isnan(ref_dt)
  assert nan_ok.all(), f"nan mismatch at got={got[~nan_ok][:5]} ref={ref[~nan_ok][:5]}"
  fin = np.isfinite(ref_dt)
  assert (got[~fin & ~np.isnan(got)] == ref_dt[~fin & ~np.isnan(ref_dt)]).all(), "inf mismatch"
  if not fin.any(): return 0.0
  # the ulp of the correctly rounded result, with the smallest denormal as the floor
  sp = np.spacing(np.abs(ref_dt[fin])).astype(REF)
  return float(np.max(np.abs(got[fin].astype(REF) - ref[fin]) / sp))

def _rng(seed=0): return np.random.default_rng(seed)
def logspace(rng, lo, hi, n, signed=True):
  v = np.exp2(rng.uniform(lo, hi, n))
  return v * rng.choice([-1.0, 1.0], n) if signed else v

SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0]
# a fixed order: each test draws its inputs for all dtypes from one rng, so a set's (hash seed dependent) order would change the inputs
DTS = sorted(TRANSCENDENTAL_SUPPORTED_DTYPES, key=lambda d: d.itemsize)
MAX_ULP = {dtypes.float16: 3.0, dtypes.float32: 2.0, dtypes.float64: 2.0}

class TestHelpers(unittest.TestCase):
  def test_two_over_pi(self):
    # fdlibm's table of 2/pi starts A2F983 6E4E44 1529FC 2757D1 F534DD C0DB62 95993C 439041 FE5163 ...
    w = two_over_pi_words(8, 32)
    self.assertEqual(w[0], 0)
    self.assertEqual("".join(f"{x:08x}" for x in w[1:8]).upper()[:54], "A2F9836E4E441529FC2757D1F534DDC0DB62" "95993C439041FE5163")
  def test_int_helpers(self):
    for dt, it in ((dtypes.float32, dtypes.int32), (dtypes.float64, dtypes.int64), (dtypes.float16, dtypes.int16)):
      x = UOp.variable("x", -1e9, 1e9, dt)
      q = UOp.variable("q", -100, 100, it)
      r = Evaluator(rintk(x), x)
      for v in [0.0, 0.4, 0.5, 0.6, 1.5, 2.5, -0.5, -1.5, -2.49, 100.7]: self.assertEqual(r(v), math.copysign(math.floor(abs(v) + 0.5), v))
      p = Evaluator(pow2if(q, dt), q)
      for e in [-14, -1, 0, 1, 10, 15]: self.assertEqual(p(e), 2.0**e)
      lg = Evaluator(ilogb2k(x), x)
      for v in [1.0, 1.5, 2.0, 1000.0, 0.3, 7e-5]: self.assertEqual(lg(truncate[dt](v)), math.frexp(truncate[dt](v))[1] - 1)
      ld = Evaluator(ldexp2k(x, q), x, q)
      for v, e in [(1.0, 10), (1.5, -20), (0.75, 0), (1.25, 14)]: self.assertEqual(ld(v, e), truncate[dt](math.ldexp(v, e)))
      fm, fe = frexp(x)
      fmv, fev = Evaluator(fm, x), Evaluator(fe, x)
      for v in [1.0, -3.0, 1000.0, 0.1, 7e-5]: self.assertEqual((fmv(truncate[dt](v)), fev(truncate[dt](v))), math.frexp(truncate[dt](v)))
  def test_ldexp_extremes(self):
    x = UOp.variable("x", 0, 2, dtypes.float32)
    q = UOp.variable("q", -300, 300, dtypes.int32)
    ld = Evaluator(ldexp2k(x, q), x, q)
    self.assertEqual(ld(1.0, 127), 2.0**127)
    self.assertEqual(ld(1.0, -149), 2.0**-149)   # a denormal result in one rounding
    self.assertEqual(ld(1.5, -149), 2.0**-148)   # ties to even
    self.assertEqual(ld(1.0, 128), math.inf)

class TestExp2(unittest.TestCase):
  def _check(self, dt, xs):
    xs = np.asarray(xs, NP[dt])
    return ulp_err(run1(xexp2, dt, xs), ref_of(np.exp2, xs), dt)
  def test_exp2(self):
    rng = _rng(1)
    for dt in DTS:
      hi, lo = {dtypes.float16: (16.5, -25.5), dtypes.float32: (128.5, -150.5), dtypes.float64: (1024.5, -1075.5)}[dt]
      xs = np.concatenate([rng.uniform(lo, hi, 1500), rng.uniform(-1, 1, 300), logspace(rng, -30, 0, 200), np.linspace(hi-2, hi, 50),
                           np.linspace(lo, lo+3, 100), SPECIALS])
      err = self._check(dt, xs)
      print(f"exp2 {dt}: max {err:.3f} ulp")
      self.assertLessEqual(err, MAX_ULP[dt])

  def test_exp2_of_whole_numbers(self):
    # a whole exponent (here an int cast) needs no polynomial: 2**k is exact, through the denormals to 0 and up to inf
    for dt, (lo, hi) in ((dtypes.float32, (-160, 140)), (dtypes.float64, (-1090, 1035))):
      k = UOp.variable("k", lo, hi, dtypes.int32)
      out = xexp2(k.cast(dt))
      assert not any(u.op is Ops.CONST and u.arg == truncate[dt](math.log(2)) for u in out.toposort()), "took the polynomial path"
      ev = Evaluator(out, k)
      ks = np.arange(lo, hi + 1)
      got = np.array([ev(int(v)) for v in ks], dtype=np.float64)
      with np.errstate(over="ignore"): want = np.ldexp(np.ones(len(ks), NP[dt]), ks).astype(np.float64)
      np.testing.assert_array_equal(got, want)

class TestExpTanh(unittest.TestCase):
  # e**x and tanh x as single ops, decomposed in the kernel (Tensor.exp / Tensor.tanh)
  def test_exp(self):
    rng = _rng(5)
    for dt in DTS:
      hi, lo = {dtypes.float16: (11.2, -17.5), dtypes.float32: (89.0, -104.0), dtypes.float64: (710.0, -745.5)}[dt]
      xs = np.concatenate([rng.uniform(lo, hi, 1500), rng.uniform(-1, 1, 300), logspace(rng, -30, 0, 200), np.linspace(hi-2, hi, 60),
                           np.linspace(lo, lo+2, 60), SPECIALS])
      err = ulp_err(run1(xexp, dt, np.asarray(xs, NP[dt])), ref_of(np.exp, np.asarray(xs, NP[dt])), dt)
      self.assertLessEqual(err, MAX_ULP[dt], dt)
  def test_tanh(self):
    rng = _rng(6)
    for dt in DTS:
      xs = np.asarray(np.concatenate([rng.uniform(-12, 12, 1500), rng.uniform(-0.6, 0.6, 500), logspace(rng, -40, 0, 300), SPECIALS, [1e30, -1e30]]), NP[dt])
      got = run1(xtanh, dt, xs)
      self.assertLessEqual(ulp_err(got, ref_of(np.tanh, xs), dt), MAX_ULP[dt], dt)
      self.assertTrue(np.signbit(got[xs == 0]).tolist() == np.signbit(xs[xs == 0]).tolist())   # tanh(-0.0) = -0.0
  def test_exp_is_lean(self):
    # the clamps are selects on floats: no nan checks, no float -> int cast (k comes from the bits of a rounding sum), no compare but the
    # two clamps, and a short polynomial; tanh is one such exp and one division
    x = UOp.variable("x", -math.inf, math.inf, dtypes.float32)
    ops = [u.op for u in xexp(x).toposort() if u.op not in (Ops.CONST, Ops.DEFINE_VAR, Ops.BITCAST)]
    self.assertNotIn(Ops.CMPNE, ops)
    self.assertFalse(any(u.op is Ops.CAST and dtypes.is_int(u.dtype) for u in xexp(x).toposort()))
    self.assertEqual(ops.count(Ops.CMPLT), 2)
    self.assertLessEqual(len(ops), 32)
    tops = [u.op for u in xtanh(x).toposort()]
    self.assertEqual((tops.count(Ops.FDIV), tops.count(Ops.RECIP)), (1, 0))
    self.assertIs(graph_rewrite(x.alu(Ops.EXP), transcendental_rewrite({Ops.EXP})).op, Ops.EXP)
    self.assertIsNot(graph_rewrite(x.alu(Ops.TANH), transcendental_rewrite(set())).op, Ops.TANH)
  def test_exp_tanh_edges(self):
    # exact values at the edges: overflow and underflow boundaries, denormal results, -inf and huge negative (the clamp that zeroes both
    # factors), nan, signed zeros, denormal inputs
    for dt in (dtypes.float32, dtypes.float64):
      tiny = float(np.finfo(NP[dt]).smallest_subnormal)
      xs = np.asarray([-math.inf, -1e30, -2000.0, -176.0, -175.5, -150.0, -104.0, -103.9, -100.0, -88.0, -87.3, 88.72, 88.73, 89.0, 1e30, math.inf,
                       math.nan, 0.0, -0.0, tiny, -tiny, 1e-38, 0.34657359, -0.34657359, 709.7, 709.8, -745.0, -745.2, -1400.0], NP[dt])
      got, ref = run1(xexp, dt, xs), ref_of(np.exp, xs)
      self.assertLessEqual(ulp_err(got, ref, dt), MAX_ULP[dt], dt)
      self.assertTrue((got[(xs < -800) | (xs == -math.inf)] == 0).all())
      got = run1(xtanh, dt, xs)
      self.assertLessEqual(ulp_err(got, ref_of(np.tanh, xs), dt), MAX_ULP[dt], dt)
      self.assertEqual(np.signbit(got[xs == 0]).tolist(), np.signbit(xs[xs == 0]).tolist())

class TestLog2(unittest.TestCase):
  def test_log2(self):
    rng = _rng(2)
    for dt in DTS:
      finfo = np.finfo(NP[dt])
      emin, emax = int(np.log2(finfo.smallest_subnormal)), int(np.log2(float(finfo.max)))
      xs = np.concatenate([logspace(rng, emin, emax + 1, 1500, False), rng.uniform(0.5, 2.0, 400), 1 + rng.uniform(-1e-3, 1e-3, 100),
                           [finfo.smallest_subnormal, finfo.smallest_normal, finfo.max, -1.0, -math.inf], SPECIALS])
      xs = np.asarray(xs, NP[dt])
      err = ulp_err(run1(xlog2, dt, xs), ref_of(np.log2, xs), dt)
      print(f"log2 {dt}: max {err:.3f} ulp")
      self.assertLessEqual(err, MAX_ULP[dt])

class TestSin(unittest.TestCase):
  def _sin(self, dt, xs, lim=math.inf):
    xs = np.asarray(xs, NP[dt])
    return ulp_err(run1(xsin, dt, xs, lim), ref_of(np.sin, xs), dt)
  def test_sin(self):
    rng = _rng(3)
    for dt in DTS:
      top = {dtypes.float16: 15.9, dtypes.float32: 127.9, dtypes.float64: 1023.9}[dt]
      # near multiples of pi/2 the reduction has to carry many bits
      ks = np.unique(np.concatenate([np.arange(1, 40), rng.integers(1, 2**20, 60)]))
      near = (ks * (math.pi / 2)).astype(NP[dt])
      xs = np.concatenate([logspace(rng, -30, top, 1200), rng.uniform(-10, 10, 300), near, np.nextafter(near, np.inf).astype(NP[dt]),
                           [1e30, -1e30, 1e38, 3e38, 1e300, 2.0**1023 * 1.9999] if dt != dtypes.float16 else [65504.0], SPECIALS])
      xs = xs[np.isfinite(xs.astype(NP[dt])) | ~np.isfinite(xs)]
      err = self._sin(dt, xs)
      print(f"sin {dt}: max {err:.3f} ulp")
      self.assertLessEqual(err, MAX_ULP[dt])
  def test_sin_worst_double(self):
    # the double closest to a multiple of pi/2 (Muller, "Elementary Functions"): 6381956970095103 * 2**797, where x mod pi/2 ~ 2**-61
    x = 6381956970095103 * 2.0**797
    self.assertLessEqual(self._sin(dtypes.float64, [x, -x]), 1.0)
  def test_sin_fast(self):
    # bounded inputs skip Payne-Hanek
    rng = _rng(4)
    for dt in (dtypes.float32, dtypes.float64):
      lim = cody_waite_max(dt) * 0.999
      x = UOp.variable("x", -lim, lim, dt)
      out = xsin(x)
      self.assertFalse(any(u.op is Ops.XOR for u in out.toposort()), "the fast path has no Payne-Hanek")
      xs = np.concatenate([rng.uniform(-lim, lim, 800), (np.arange(1, 200) * math.pi / 2), SPECIALS[:2]])
      err = self._sin(dt, xs, lim)
      print(f"sin fast {dt}: max {err:.3f} ulp")
      self.assertLessEqual(err, MAX_ULP[dt])

class TestPow(unittest.TestCase):
  def _pow(self, dt, xs, ys):
    x, y = UOp.variable("x", -math.inf, math.inf, dt), UOp.variable("y", -math.inf, math.inf, dt)
    ev = Evaluator(xpow(x, y), x, y)
    xs, ys = np.asarray(xs, NP[dt]), np.asarray(ys, NP[dt])
    got = np.array([ev(float(a), float(b)) for a, b in zip(xs, ys)])
    return ulp_err(got, ref_of(np.power, xs, ys), dt)
  def test_pow_random(self):
    rng = _rng(5)
    for dt in DTS:
      n = 1200
      xs = np.concatenate([logspace(rng, -8, 8, n, False), -np.abs(rng.integers(1, 20, 200)).astype(np.float64)])
      ys = np.concatenate([rng.uniform(-12, 12, n), rng.integers(-6, 7, 200).astype(np.float64)])
      err = self._pow(dt, xs, ys)
      print(f"pow {dt}: max {err:.3f} ulp")
      self.assertLessEqual(err, MAX_ULP[dt] + 0.5)
  def test_pow_specials(self):
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, math.inf, -math.inf, math.nan]
    xs, ys = zip(*[(a, b) for a in vals for b in vals])
    for dt in DTS: self.assertLessEqual(self._pow(dt, xs, ys), 1.0)
  def test_pow_large(self):
    # big results need y*log2(x) to more than working precision
    xs, ys = [3.0, 10.0, 1.0001, 0.9, 7.0, 2.0, 2.0], [80.0, 38.0, 800000.0, 900.0, -45.0, 127.99, -149.5]
    self.assertLessEqual(self._pow(dtypes.float32, xs, ys), 2.0)
    self.assertLessEqual(self._pow(dtypes.float64, [3.0, 10.0, 1.0000001, 7.0], [600.0, 307.0, 5e9, -360.0]), 2.0)

class TestRewrite(unittest.TestCase):
  def test_rewrite(self):
    x = UOp.variable("x", -math.inf, math.inf, dtypes.float32)
    sink = UOp.sink(x.exp2(), x.log2(), x.sin(), x.pow(x))
    out = graph_rewrite(sink, transcendental_rewrite(set()))
    self.assertFalse(any(u.op in {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW} for u in out.toposort()))
    # supported ops stay unless forced
    self.assertIs(graph_rewrite(sink, transcendental_rewrite({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW})), sink)
    forced = graph_rewrite(sink, transcendental_rewrite({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW}, force=True))
    self.assertFalse(any(u.op in GroupOp.Unary - {Ops.RECIP} for u in forced.toposort()))
  def test_half_types(self):
    # float16 and bfloat16 are computed in float32 and cast back
    for dt in (dtypes.float16, dtypes.bfloat16):
      x = UOp.variable("x", -math.inf, math.inf, dt)
      out = graph_rewrite(x.exp2(), transcendental_rewrite(set()))
      self.assertEqual(out.dtype, dt)
      self.assertEqual(out.op, Ops.CAST)
  def test_bfloat16_values(self):
    x = UOp.variable("x", -math.inf, math.inf, dtypes.bfloat16)
    bf = truncate[dtypes.bfloat16]
    for f, ref in ((xexp2, lambda v: 2.0**v), (xlog2, math.log2), (xsin, math.sin)):
      ev = Evaluator(f(x), x)
      for v in (0.5, 1.25, 3.0, 17.0, 100.0):
        want, got = ref(bf(v)), ev(bf(v))
        self.assertLessEqual(abs(got - want), math.ulp(bf(want)) * 2**45, (f.__name__, v))   # a bfloat16 ulp: 7 mantissa bits, not 52
  def test_vector(self):
    # a float4 graph computes lane by lane what the scalar graph computes
    for dt in (dtypes.float32, dtypes.float64, dtypes.float16):
      xv, xs = UOp(Ops.DEFINE_VAR, dt.vec(4), arg=("xv", -math.inf, math.inf)), UOp.variable("x", -math.inf, math.inf, dt)
      vals = tuple(truncate[dt](v) for v in (0.75, 3.5, 1e4, 60000.0))
      for f in (xexp2, xlog2, xsin, lambda v: xpow(v, v)):
        out = f(xv)
        self.assertEqual(out.dtype, dt.vec(4))
        vec, scalar = Evaluator(out, xv)(vals), Evaluator(f(xs), xs)
        self.assertEqual(vec, tuple(scalar(v) for v in vals))

if __name__ == "__main__":
  unittest.main()
