# exp, sigmoid, tanh, gelu, log, softmax and abs at the edges of their range against torch (float64, rounded to float32), on every device:
# +-inf, nan, signed zeros, denormal inputs and results, the overflow and underflow boundaries, huge arguments, masked (-inf) softmax rows
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

torch = pytest.importorskip("torch")
F = torch.nn.functional

TINY = float(np.finfo(np.float32).smallest_subnormal)
EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, TINY, -TINY, 1e-38, -1e-38, 1e-30, 0.34657359, -0.34657359, 1.0, -1.0, 0.55, -0.55, 9.0, -9.0,
         20.0, -20.0, 87.3, -87.3, 88.72, 88.73, 89.0, -100.0, -103.9, -104.0, -150.0, -175.5, -176.0, -1000.0, 1e30, -1e30, 3.4e38, -3.4e38]

CASES = {"exp": (Tensor.exp, torch.exp), "sigmoid": (Tensor.sigmoid, torch.sigmoid), "tanh": (Tensor.tanh, torch.tanh),
         "gelu": (Tensor.gelu, lambda t: t / (1 + torch.exp(-2 * math.sqrt(2 / math.pi) * (t + 0.044715 * t**3)))), "log": (Tensor.log, torch.log), "abs": (Tensor.abs, torch.abs),
         "log(abs)": (lambda t: t.abs().log(), lambda t: t.abs().log())}

def ulps(got:np.ndarray, ref:np.ndarray) -> np.ndarray:
  # error in float32 ulps of the rounded reference (the smallest denormal as the floor); nan and inf must match exactly
  r32 = ref.astype(np.float32)
  same = (np.isnan(got) & np.isnan(r32)) | (got == r32)
  err = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(r32)).astype(np.float64)
  return np.where(same, 0.0, np.where(np.isfinite(r32) & ~np.isnan(err), err, math.inf))

@pytest.mark.parametrize("name", list(CASES))
def test_edges_vs_torch(device, name):
  ours, theirs = CASES[name]
  a = np.array([v for v in EDGES if name != "gelu" or not math.isinf(v)], np.float32)   # torch: gelu(+-inf) = nan, ours too at -inf
  got = ours(Tensor(a, device=device)).numpy()
  with np.errstate(all="ignore"): ref = theirs(torch.tensor(a, dtype=torch.float64)).numpy()
  # gelu's tanh form 0.5*x*(1 + tanh(z)) is x / (1 + e**-2z) (no cancellation for x < 0, where torch's kernels, float64's too, lose every
  # digit); the rounding of z = sqrt(2/pi)*(x + 0.044715 x**3) itself is amplified by 2|z|: up to 4|z| ulp
  with np.errstate(all="ignore"): z = np.abs(math.sqrt(2 / math.pi) * (a.astype(np.float64) + 0.044715 * a.astype(np.float64)**3))
  tol = np.where(name == "gelu", 4 + 4 * np.nan_to_num(z), 3.0)
  err = ulps(got, ref)
  assert (err <= tol).all(), f"{name}: at {a[err > tol].tolist()} got {got[err > tol].tolist()}, torch {ref[err > tol].tolist()}"
  zeros = (ref == 0) & np.isfinite(a) & (name in ("tanh", "abs", "sigmoid", "exp"))
  assert (np.signbit(got[zeros]) == np.signbit(ref[zeros].astype(np.float32))).all(), f"{name}: sign of a zero result"

def test_exp_denormal_results_exact(device):
  # e**x through the denormals: two exact power-of-two factors, so the result rounds once (within 1 ulp of a denormal)
  a = np.linspace(-104.0, -87.0, 2001, dtype=np.float32)
  got, ref = Tensor(a, device=device).exp().numpy(), np.exp(a.astype(np.float64))
  assert (ulps(got, ref) <= 1.0).all()

def test_softmax_masked_rows(device):
  # -inf entries (a mask), a row of all -inf (nan, like torch), huge and tiny values in one row
  a = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
  a[0, ::2] = -math.inf
  a[1, :] = -math.inf
  a[2, 3] = 1e30
  a[3, :] = a[3, :] * 1e4
  a[4, 7] = math.nan
  got = Tensor(a, device=device).softmax(-1).numpy()
  ref = torch.tensor(a, dtype=torch.float64).softmax(-1).numpy()
  np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-37, equal_nan=True)
  assert (got[0, ::2] == 0).all() and np.isnan(got[1]).all() and np.isnan(got[4]).all()

def test_log_of_tiny_and_huge(device):
  a = np.array([TINY, 2 * TINY, 1e-40, 1.1754942e-38, 1.1754944e-38, 0.70710677, 0.7071068, 1.4142135, 1.4142137, 3.4028235e38, 1.0, 2.0, 0.5],
               np.float32)
  for fn, ref in ((Tensor.log, np.log), (Tensor.log2, np.log2)):
    got = fn(Tensor(a, device=device)).numpy()
    assert (ulps(got, ref(a.astype(np.float64))) <= 1.0).all(), fn.__name__
  assert Tensor([1.0, 2.0, 8.0, 0.25], device=device).log2().tolist() == [0.0, 1.0, 3.0, -2.0]   # powers of two are exact

@pytest.mark.parametrize("dt", [dtypes.float64, dtypes.float16], ids=str)
def test_other_widths(device, dt):
  a = np.array([0.0, -0.0, 1e-3, -0.3, 0.7, 5.0, -20.0, 700.0 if dt == dtypes.float64 else 11.0, -740.0 if dt == dtypes.float64 else -17.0], np.float64)
  # torch's float16 kernels compute in float32 and round once, like ours
  x, tx = Tensor(a, device=device).cast(dt), torch.tensor(a).to(torch.float64 if dt == dtypes.float64 else torch.float16)
  tol = 2e-15 if dt == dtypes.float64 else 1e-3
  for ours, theirs in ((Tensor.exp, torch.exp), (Tensor.tanh, torch.tanh), (Tensor.sigmoid, torch.sigmoid)):
    np.testing.assert_allclose(ours(x).cast(dtypes.float64).numpy(), theirs(tx).double().numpy(), rtol=tol, atol=1e-300)
  np.testing.assert_allclose((x.abs() + 1e-3).log().cast(dtypes.float64).numpy(), (tx.abs() + 1e-3).log().double().numpy(), rtol=tol)
