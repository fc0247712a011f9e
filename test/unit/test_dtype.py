import itertools, math, pickle, random, struct
import numpy as np
import pytest
from tinygrad.dtype import DType, PtrDType, ImageDType, dtypes, DTYPES_DICT, INVERSE_DTYPES_DICT, least_upper_dtype, least_upper_float, sum_acc_dtype
from tinygrad.dtype import truncate, to_dtype, can_safe_cast, float_to_fp8, fp8_to_float

SCALARS = list(DTYPES_DICT.values())
TORCH_NAMES = {"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32", "uint32": "uint32",
               "int64": "int64", "uint64": "uint64", "fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2", "float16": "float16",
               "bfloat16": "bfloat16", "float32": "float32", "float64": "float64"}
NP_INTS = {dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.int32: np.int32,
           dtypes.uint32: np.uint32, dtypes.int64: np.int64, dtypes.uint64: np.uint64}
NP_FLOATS = {dtypes.float16: np.float16, dtypes.float32: np.float32, dtypes.float64: np.float64}
NP_ALL = {dtypes.bool: np.bool_, **NP_INTS, **NP_FLOATS}

def _torch():
  return pytest.importorskip("torch")
def _tdt(dt: DType):
  return getattr(_torch(), TORCH_NAMES[INVERSE_DTYPES_DICT[dt.name]])
def _bits(dt: DType) -> int: return dt.itemsize * 8

def documented_promotion(a: DType, b: DType) -> DType:
  """the promotion rules of DESIGN.md, written out independently of the lattice in tinygrad/dtype.py"""
  if a == b: return a
  if a == dtypes.bool: return b
  if b == dtypes.bool: return a
  if dtypes.is_int(a) and dtypes.is_int(b):
    if dtypes.is_unsigned(a) == dtypes.is_unsigned(b): return max(a, b, key=_bits)
    u, s = (a, b) if dtypes.is_unsigned(a) else (b, a)
    # unsigned meeting signed goes to the next wider signed type; there is none above int64, so the lattice continues at the first float
    bits = max(_bits(s), 2 * _bits(u))
    return {16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}.get(bits, dtypes.fp8e4m3)
  if dtypes.is_int(a): return b
  if dtypes.is_int(b): return a
  # both floats: a wider float wins; the two fp8s meet at float16, float16 and bfloat16 meet at float32
  if {a, b} == set(dtypes.fp8s): return dtypes.float16
  if {a, b} == {dtypes.float16, dtypes.bfloat16}: return dtypes.float32
  return max(a, b, key=lambda d: d.priority)

def _ambiguous(x: DType, y: DType) -> bool:
  return (dtypes.uint64 in (x, y) and (x in dtypes.sints or y in dtypes.sints)) or {x, y} == set(dtypes.fp8s)

class TestPromotion:
  @pytest.mark.parametrize("a,b", list(itertools.product(SCALARS, SCALARS)), ids=str)
  def test_vs_torch(self, a, b):
    torch = _torch()
    try: expected = torch.promote_types(_tdt(a), _tdt(b))
    except RuntimeError:
      # torch refuses uint16/32/64 with anything else and any fp8 mix: there our documented lattice is the answer
      assert least_upper_dtype(a, b) == documented_promotion(a, b)
      return
    assert least_upper_dtype(a, b) == documented_promotion(a, b)
    assert _tdt(least_upper_dtype(a, b)) == expected, f"{a} + {b}: tinygrad {least_upper_dtype(a, b)} torch {expected}"

  def test_symmetric_and_associative(self):
    for a, b in itertools.product(SCALARS, SCALARS): assert least_upper_dtype(a, b) == least_upper_dtype(b, a)
    for a, b, c in itertools.product(SCALARS, SCALARS, SCALARS):
      # two spots are not a lattice: a signed int meeting uint64 has two minimal bounds (fp8e4m3, fp8e5m2) and so do the two fp8s
      # (float16, bfloat16); the lower priority one is chosen, as in tinygrad, so triples holding such a pair depend on grouping
      if any(_ambiguous(x, y) for x, y in itertools.combinations((a, b, c), 2)): continue
      assert least_upper_dtype(a, b, c) == least_upper_dtype(least_upper_dtype(a, b), c) == least_upper_dtype(a, least_upper_dtype(b, c))

  def test_examples(self):
    assert least_upper_dtype(dtypes.int8, dtypes.uint8) == dtypes.int16
    assert least_upper_dtype(dtypes.uint32, dtypes.int32) == dtypes.int64
    assert least_upper_dtype(dtypes.float16, dtypes.bfloat16) == dtypes.float32
    assert least_upper_dtype(dtypes.int64, dtypes.float16) == dtypes.float16
    assert least_upper_dtype(dtypes.float.vec(4), dtypes.float.vec(4)) == dtypes.float.vec(4)

  def test_least_upper_float(self):
    assert least_upper_float(dtypes.int32) == dtypes.float32
    assert least_upper_float(dtypes.bool) == dtypes.float32
    assert least_upper_float(dtypes.float16) == dtypes.float16
    assert least_upper_float(dtypes.float64) == dtypes.float64

  def test_sum_acc_dtype(self):
    # deliberately not torch (which sums every int into int64): small ints accumulate in int32/uint32 as in tinygrad
    for dt in (dtypes.bool, dtypes.int8, dtypes.int16, dtypes.int32): assert sum_acc_dtype(dt) == dtypes.int32
    for dt in (dtypes.uint8, dtypes.uint16, dtypes.uint32): assert sum_acc_dtype(dt) == dtypes.uint32
    assert sum_acc_dtype(dtypes.int64) == dtypes.int64 and sum_acc_dtype(dtypes.uint64) == dtypes.uint64
    # half-width floats accumulate in float32; Tensor.sum casts the result back
    for dt in (dtypes.float16, dtypes.bfloat16, dtypes.fp8e4m3, dtypes.float32): assert sum_acc_dtype(dt) == dtypes.float32
    assert sum_acc_dtype(dtypes.float64) == dtypes.float64

  def test_void_not_in_lattice(self):
    with pytest.raises(ValueError, match="promotion lattice"): least_upper_dtype(dtypes.void, dtypes.int32)

class TestDTypeObjects:
  def test_aliases(self):
    assert dtypes.float32 == dtypes.float and dtypes.float32 is dtypes.float
    assert dtypes.half is dtypes.float16 and dtypes.double is dtypes.float64
    assert dtypes.uchar is dtypes.uint8 and dtypes.char is dtypes.int8 and dtypes.long is dtypes.int64 and dtypes.ulong is dtypes.uint64
    assert dtypes.default_int == dtypes.int32 and dtypes.default_float == dtypes.float32

  def test_fields(self):
    assert dtypes.void.priority == -1 and dtypes.void.itemsize == 0
    for dt in SCALARS:
      assert dt.count == 1 and dt.vcount == 1 and dt.scalar() is dt and dt.base is dt
      if dt.fmt is not None: assert struct.calcsize(dt.fmt) == dt.itemsize
      if dt in NP_ALL: assert np.dtype(NP_ALL[dt]).itemsize == dt.itemsize
      assert _tdt(dt).itemsize == dt.itemsize
    assert [dt.priority for dt in SCALARS] == list(range(len(SCALARS)))
    assert dtypes.fields() == DTYPES_DICT and len(set(DTYPES_DICT.values())) == len(DTYPES_DICT) == 15

  def test_vec_interned(self):
    v = dtypes.float.vec(4)
    assert v is dtypes.float.vec(4) and v == dtypes.float32.vec(4) and hash(v) == hash(dtypes.float.vec(4))
    assert v.count == v.vcount == 4 and v.itemsize == 16 and v.scalar() is dtypes.float and v.name == "float4"
    assert v != dtypes.float and v != dtypes.float.vec(2) and v != dtypes.int.vec(4)
    assert dtypes.float.vec(1) is dtypes.float and dtypes.void.vec(4) is dtypes.void
    assert repr(v) == "dtypes.float.vec(4)" and repr(dtypes.float) == "dtypes.float"
    with pytest.raises(ValueError): v.vec(2)

  def test_equal_by_fields(self):
    # a DType built by hand equals (and hashes like) the interned one
    d = DType(13, 4, "float", "f", 1, None)
    assert d == dtypes.float and hash(d) == hash(dtypes.float) and {d: 1}[dtypes.float] == 1

  def test_ptr(self):
    p = dtypes.float.ptr(16)
    assert isinstance(p, PtrDType) and p is dtypes.float.ptr(16) and p.base is dtypes.float and p.size == 16 and not p.local
    assert p != dtypes.float.ptr(16, local=True) and p != dtypes.float.ptr(8) and p != dtypes.float
    assert repr(p) == "dtypes.float.ptr(16)" and repr(dtypes.half.ptr(4, local=True)) == "dtypes.half.ptr(4, local=True)"
    pv = p.vec(4)
    assert pv is p.vec(4) and pv.v == pv.vcount == 4 and pv.scalar() is p and pv.base is dtypes.float and repr(pv) == "dtypes.float.ptr(16).vec(4)"
    with pytest.raises(TypeError): p.ptr()
    vp = dtypes.float.vec(4).ptr()
    assert vp.base is dtypes.float.vec(4) and vp.count == 4 and vp.v == 1

  def test_image(self):
    img = dtypes.imageh((4, 8, 4))
    assert isinstance(img, ImageDType) and img.shape == (4, 8, 4) and img.size == 128 and img == dtypes.imageh((4, 8, 4))
    assert img != dtypes.imagef((4, 8, 4)) and img != dtypes.imageh((4, 4, 4)) and dtypes.is_float(img)
    assert img.vec(4).v == 4 and img.vec(4).scalar() == img

  def test_pickle_keeps_identity(self):
    for dt in [*SCALARS, dtypes.void, dtypes.float.vec(4), dtypes.int.ptr(8), dtypes.half.ptr(4, local=True).vec(2), dtypes.uint8.vec(16).ptr(3)]:
      assert pickle.loads(pickle.dumps(dt)) is dt
    img = dtypes.imagef((2, 2, 4))
    assert pickle.loads(pickle.dumps(img)) == img

  def test_sort(self):
    assert sorted(reversed(SCALARS)) == SCALARS
    assert sorted([dtypes.float.vec(4), dtypes.float, dtypes.float.vec(2)]) == [dtypes.float, dtypes.float.vec(2), dtypes.float.vec(4)]

  def test_predicates(self):
    for dt in SCALARS:
      name = INVERSE_DTYPES_DICT[dt.name]
      assert dtypes.is_float(dt) == (name.startswith(("float", "bfloat", "fp8")))
      assert dtypes.is_int(dt) == ("int" in name)
      assert dtypes.is_unsigned(dt) == name.startswith("uint")
      assert dtypes.is_bool(dt) == (dt == dtypes.bool)
      if dt != dtypes.bool: assert dtypes.is_float(dt.vec(4)) == dtypes.is_float(dt) and dtypes.is_int(dt.vec(4)) == dtypes.is_int(dt)
    assert set(dtypes.all) == set(SCALARS) and set(dtypes.ints) == set(dtypes.uints) | set(dtypes.sints)

  def test_from_py(self):
    assert dtypes.from_py(1.0) == dtypes.float32 and dtypes.from_py(1) == dtypes.int32 and dtypes.from_py(True) == dtypes.bool
    assert dtypes.from_py([1, 2.0]) == dtypes.float32 and dtypes.from_py([True, 2]) == dtypes.int32 and dtypes.from_py([[True], [False]]) == dtypes.bool
    assert dtypes.from_py([]) == dtypes.float32 and dtypes.from_py(((1,), (2, 3.5))) == dtypes.float32
    with pytest.raises(RuntimeError, match="could not infer"): dtypes.from_py("abc")

  def test_as_const(self):
    assert dtypes.as_const(2.7, dtypes.int32) == 2 and type(dtypes.as_const(2.7, dtypes.int32)) is int
    assert dtypes.as_const(3, dtypes.float32) == 3.0 and type(dtypes.as_const(3, dtypes.float32)) is float
    assert dtypes.as_const(2, dtypes.bool) is True and dtypes.as_const(0.0, dtypes.bool) is False
    assert dtypes.as_const((1, 2.5), dtypes.float.vec(2)) == (1.0, 2.5) and dtypes.as_const((1.5, 0), dtypes.int.vec(2)) == (1, 0)
    with pytest.raises(ValueError): dtypes.as_const((1, 2, 3), dtypes.float.vec(2))

  def test_to_dtype(self):
    assert to_dtype("float32") is dtypes.float32 and to_dtype("half") is dtypes.float16 and to_dtype("INT") is dtypes.int32
    assert to_dtype(dtypes.uint8) is dtypes.uint8
    for k, v in DTYPES_DICT.items(): assert to_dtype(k) is v
    with pytest.raises(ValueError, match="unknown dtype 'floot'.*float32"): to_dtype("floot")
    with pytest.raises(ValueError): to_dtype("floats")   # a tuple attribute of dtypes, not a dtype

class TestLimits:
  @pytest.mark.parametrize("dt", list(NP_INTS), ids=str)
  def test_int_min_max(self, dt):
    info = np.iinfo(NP_INTS[dt])
    assert dtypes.min(dt) == int(info.min) and dtypes.max(dt) == int(info.max)
    assert dtypes.min(dt.vec(4)) == int(info.min)

  def test_float_bool_min_max(self):
    for dt in dtypes.floats: assert dtypes.min(dt) == -math.inf and dtypes.max(dt) == math.inf
    assert dtypes.min(dtypes.bool) is False and dtypes.max(dtypes.bool) is True

  def test_finfo(self):
    for dt, npdt in NP_FLOATS.items(): assert dtypes.finfo(dt) == (np.finfo(npdt).nexp, np.finfo(npdt).nmant)
    torch = _torch()
    for dt in (dtypes.bfloat16, *dtypes.fp8s):
      e, m = dtypes.finfo(dt)
      assert torch.finfo(_tdt(dt)).eps == 2.0**-m and 1 + e + m == 8 * dt.itemsize
    with pytest.raises(ValueError): dtypes.finfo(dtypes.int32)

class TestTruncate:
  def test_ints_wrap_like_numpy(self):
    rng = random.Random(0)
    vals = [0, 1, -1, 127, 128, -129, 255, 256, 2**31, -2**31-1, 2**32+5, 2**63, -2**63-1, 2**64+3] + [rng.randint(-2**70, 2**70) for _ in range(200)]
    for dt, npdt in NP_INTS.items():
      for v in vals:
        # numpy wraps modulo 2**bits when going through uint64 with the same low bits
        assert truncate[dt](v) == int(np.array(v % 2**64, dtype=np.uint64).astype(npdt)), (dt, v)

  def test_float32_float16_vs_numpy(self):
    rng = random.Random(1)
    vals = [0.0, -0.0, 1/3, 1e-8, 1e-40, 65504.0, 65519.0, 65520.0, 1e5, -1e5, 3.5e38, 3.4028235e38, 1e39, math.inf, -math.inf]
    vals += [rng.uniform(-70000, 70000) for _ in range(300)] + [rng.uniform(-1, 1) * 10**rng.randint(-10, 10) for _ in range(300)]
    with np.errstate(over="ignore"):
      for v in vals:
        assert truncate[dtypes.float32](v) == float(np.float32(v)), v
        assert truncate[dtypes.float16](v) == float(np.float16(v)), v
    assert truncate[dtypes.float16](1e6) == math.inf and truncate[dtypes.float16](-70000.0) == -math.inf
    assert math.isnan(truncate[dtypes.float16](math.nan)) and math.isnan(truncate[dtypes.float32](math.nan))
    assert truncate[dtypes.float64](0.1) == 0.1 and truncate[dtypes.bool](2) is True

  def test_bfloat16_vs_torch(self):
    torch = _torch()
    rng = random.Random(2)
    # ties between two bfloat16 values round to even: 1 + 2**-8 lies halfway between 1 and 1 + 2**-7
    vals = [1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 2**-8), 3.3895e38, 3.4e38, 1e39, 1e-40, 0.0, -0.0, math.inf, -math.inf]
    vals += [rng.uniform(-1, 1) * 10**rng.randint(-30, 30) for _ in range(1000)]
    expected = torch.tensor(vals, dtype=torch.float64).to(torch.float32).to(torch.bfloat16).to(torch.float64).tolist()
    for v, e in zip(vals, expected): assert truncate[dtypes.bfloat16](v) == e, (v, truncate[dtypes.bfloat16](v), e)
    assert math.isnan(truncate[dtypes.bfloat16](math.nan))

class TestFP8:
  @pytest.mark.parametrize("dt", dtypes.fp8s, ids=str)
  def test_decode_all_bytes_vs_torch(self, dt):
    torch = _torch()
    expected = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(_tdt(dt)).to(torch.float64).tolist()
    for b, e in enumerate(expected):
      got = fp8_to_float(b, dt)
      assert (math.isnan(got) and math.isnan(e)) or (got == e and math.copysign(1, got) == math.copysign(1, e)), (b, got, e)

  @pytest.mark.parametrize("dt", dtypes.fp8s, ids=str)
  def test_encode_vs_torch(self, dt):
    torch = _torch()
    rng = random.Random(3)
    # every representable value, every midpoint between neighbours (ties), just around them, and far outside the range (saturation / inf)
    reps = sorted(x for x in {fp8_to_float(b, dt) for b in range(256)} if not math.isnan(x))
    mids = [(a + b) / 2 for a, b in zip(reps, reps[1:]) if math.isfinite(a) and math.isfinite(b)]
    vals = reps + mids + [m * (1 + 1e-6) for m in mids] + [m * (1 - 1e-6) for m in mids]
    vals += [rng.uniform(-1, 1) * 2.0**rng.randint(-20, 20) for _ in range(2000)]
    vals += [1e-12, -1e-12, 1e5, -1e5, 1e30, 470.0, 480.0, 500.0, 57344.0, 61439.0, 61440.0, 65536.0, math.inf, -math.inf, 0.0, -0.0]
    expected = torch.tensor(vals, dtype=torch.float64).to(torch.float32).to(_tdt(dt)).view(torch.uint8).tolist()
    for v, e in zip(vals, expected): assert float_to_fp8(v, dt) == e, (v, float_to_fp8(v, dt), e)
    assert fp8_to_float(float_to_fp8(math.nan, dt), dt) != fp8_to_float(float_to_fp8(math.nan, dt), dt)

  def test_saturation_and_inf(self):
    # e4m3fn has no infinity: it saturates at 448 (as torch and CUDA satfinite do); e5m2 overflows to inf
    assert truncate[dtypes.fp8e4m3](1e9) == 448.0 and truncate[dtypes.fp8e4m3](-math.inf) == -448.0
    assert truncate[dtypes.fp8e5m2](1e9) == math.inf and truncate[dtypes.fp8e5m2](57344.0) == 57344.0
    assert float_to_fp8(math.nan, dtypes.fp8e4m3) == 0x7f
    with pytest.raises(ValueError): float_to_fp8(1.0, dtypes.float16)

class TestCanSafeCast:
  def test_exhaustive_small(self):
    # check the claim itself: every value of a 8/16-bit source converts to the same number in dst iff can_safe_cast says so
    torch = _torch()
    for src in SCALARS:
      if src.itemsize > 2: continue
      if src == dtypes.bool: vals = torch.tensor([False, True])
      else: vals = torch.arange(2**(8*src.itemsize), dtype=torch.int32).to(getattr(torch, f"uint{8*src.itemsize}")).view(_tdt(src))
      if dtypes.is_float(src): vals = vals[~torch.isnan(vals.to(torch.float32))]
      for dst in SCALARS:
        exact = bool((vals.to(_tdt(dst)).to(torch.float64) == vals.to(torch.float64)).all())
        assert can_safe_cast(src, dst) == exact, (src, dst)

  def test_vs_numpy(self):
    for a, b in itertools.product(NP_ALL, NP_ALL):
      # numpy calls int64/uint64 -> float64 "safe" although large values lose bits; we only say True when every value is exact
      if a in (dtypes.int64, dtypes.uint64) and b == dtypes.float64: assert not can_safe_cast(a, b)
      else: assert can_safe_cast(a, b) == np.can_cast(NP_ALL[a], NP_ALL[b], "safe"), (a, b)

def _run(code: str, **env: str):
  import os, pathlib, subprocess, sys
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env},
                        cwd=pathlib.Path(__file__).resolve().parents[2])

def test_default_float_env():
  ret = _run("from tinygrad.dtype import dtypes; print(dtypes.default_float, dtypes.from_py(1.5))", DEFAULT_FLOAT="HALF")
  assert ret.returncode == 0 and ret.stdout.split() == ["dtypes.half", "dtypes.half"], ret.stderr
  ret = _run("import tinygrad.dtype", DEFAULT_FLOAT="INT32")
  assert ret.returncode != 0 and "DEFAULT_FLOAT=INT32 is not a float dtype" in ret.stderr
