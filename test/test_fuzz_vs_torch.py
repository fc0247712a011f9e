# differential fuzzing against torch: a short fixed-seed run of extra/fuzz_vs_torch.py on each device (the script runs longer), and a
# minimal repro for every known bug the fuzzer steers around (strict xfail: when one is fixed, its test fails until the name leaves
# KNOWN_BUGS_OPEN in extra/fuzz_vs_torch.py, which puts the fuzzer back on that ground)
import math
import numpy as np
import pytest
from tinygrad import Tensor

torch = pytest.importorskip("torch")
from extra.fuzz_vs_torch import fuzz, KNOWN_BUGS_OPEN  # noqa: E402

CASES_PER_CHUNK = {"CPU": 6, "LLVM": 4, "GPU": 2, "REMOTE": 4, "PYTHON": 25}   # about 60 s on CPU and PYTHON; LLVM and PoCL compile every kernel

@pytest.mark.parametrize("chunk", range(4))
def test_fuzz_vs_torch(device, chunk):
  from tinygrad.device import is_dtype_supported
  from tinygrad.dtype import dtypes
  if not all(is_dtype_supported(dt, device) for dt in (dtypes.int64, dtypes.float64)): pytest.skip(f"the fuzzer's graphs use int64, {device} has none")
  bad = fuzz(seed=1000 + chunk, cases=CASES_PER_CHUNK[device], verbose=False)
  assert not bad, f"{len(bad)} mismatches with torch on {device}:\n\n" + "\n\n".join(f"case {cs}:\n{rep}" for cs, rep in bad)

# the other kinds of programs (extra/fuzz_vs_torch.py MIXES): int/bool inputs, dims of size 0 (reductions over empty axes), nan/inf inputs
@pytest.mark.parametrize("mix", ["ints", "empty", "nonfinite"])
def test_fuzz_mixes_vs_torch(mix):
  from tinygrad import Device
  prev, Device.DEFAULT = Device.DEFAULT, "PYTHON"
  try: bad = fuzz(seed=1100, cases=25, verbose=False, mix=mix)
  finally: Device.DEFAULT = prev
  assert not bad, f"{len(bad)} mismatches with torch ({mix}):\n\n" + "\n\n".join(f"case {cs}:\n{rep}" for cs, rep in bad)

# cases the fuzzer once failed (seed 8 on PYTHON: -0.0 lost by trunc and ceil, hardswish's gradient at -3, an input used only by an unused
# value, std of equal values): replayed on the device they failed on
# (21000165: realized output reached only through sign; 23000242: an overflowing float16 gradient through gelu and tan;
# 1002009039: a gradient read after a sibling gradient's realize, whose CONTIGUOUS the realize left in place: it now keeps a DETACH of the buffer;
# 6163018549: float16 exp overflowing to inf whose gradient meets a 0 upstream: torch's grad * result is nan, the float32 result gave 0)
@pytest.mark.parametrize("case", [8008918, 8025431, 8022556, 8016263, 8005086, 8007439, 21000165, 23000242, 1002009039, 6163018549])
def test_fuzz_regressions(case):
  from tinygrad import Device
  from extra.fuzz_vs_torch import run_case
  prev, Device.DEFAULT = Device.DEFAULT, "PYTHON"
  try: run_case(case)
  finally: Device.DEFAULT = prev

# ***** known bugs: what each one is, as small as it gets *****

def _zero_derivative_grad_is_none():
  # torch: a used input whose derivative is zero gets zeros
  x = Tensor([1.5, -2.0], requires_grad=True)
  x.floor().sum().backward()
  assert x.grad is not None and x.grad.tolist() == [0.0, 0.0]

def _max_min_skip_nan():
  # torch: max and min propagate nan
  assert math.isnan(Tensor([1.0, math.nan, -1.0]).max().item()) and math.isnan(Tensor([1.0, math.nan]).min().item())

def _acos_asin_grad_outside_domain():
  # torch: nan outside [-1, 1]
  x = Tensor([2.0, -3.0], requires_grad=True)
  (x.acos() + x.asin()).sum().backward()
  assert all(math.isnan(g) for g in x.grad.tolist())

def _backward_after_realize():
  # reading a value before backward must not change the gradient: softmax gives wrong numbers, an expanded sum raises
  a = np.array([[1.67, 1.15], [-1.93, 1.16]], dtype=np.float32)
  w = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
  r = torch.tensor(a, requires_grad=True)
  (r.softmax(0) * torch.tensor(w)).sum().backward()
  x = Tensor(a, requires_grad=True)
  y = x.softmax(0)
  y.numpy()
  (y * Tensor(w)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), atol=1e-6)
  x = Tensor([1.0, 2.0], requires_grad=True)
  y = x.sum().expand(3)
  y.numpy()
  y.sum().backward()
  assert x.grad.tolist() == [3.0, 3.0]

def _pow_zero_loses_grad():
  x = Tensor([2.0, -1.0], requires_grad=True)
  (x ** 0).sum().backward()
  assert x.grad.tolist() == [0.0, 0.0]

def _std_grad_at_zero_is_nan():
  # torch masks the gradient of a zero std to 0 (the derivative of sqrt at 0 is inf)
  x = Tensor([1.0, 1.0, 1.0], requires_grad=True)
  x.std().backward()
  assert x.grad.tolist() == [0.0, 0.0, 0.0]

def _oob_read_after_exp_pad():
  # the PYTHON device checks every access: an exp-type op followed by pad reads its input outside the buffer
  s = 1 / (1 + np.exp(-np.array([1.0, 2.0])))
  np.testing.assert_allclose(Tensor([1.0, 2.0], device="PYTHON").sigmoid().pad(((1, 1),)).numpy(), [0.0, s[0], s[1], 0.0], rtol=1e-6)

def _grads_at_nonfinite_values():
  # torch's gradients at nan and inf: sigmoid'(nan) = nan, softplus'(inf) = 1, tanh'(nan) = nan, elu'(nan) = 1
  for fn, v, want in ((Tensor.sigmoid, math.nan, math.nan), (Tensor.softplus, math.inf, 1.0), (Tensor.tanh, math.nan, math.nan),
                      (Tensor.elu, math.nan, 1.0)):
    x = Tensor([v], requires_grad=True)
    fn(x).sum().backward()
    got = x.grad.item()
    assert got == want or (math.isnan(got) and math.isnan(want)), f"{fn.__name__}'({v}) = {got}, torch {want}"

def _inf_times_zero_in_chain_rule():
  # torch: silu'(x) = s * (1 + x * (1 - s)) is 1 + inf * 0 = nan at inf, and mish the same; here the limit (1) comes out
  for fn in (Tensor.silu, Tensor.mish):
    x = Tensor([math.inf], requires_grad=True)
    fn(x).sum().backward()
    assert math.isnan(x.grad.item()), f"{fn.__name__}'(inf) = {x.grad.item()}, torch nan"

def _amax_grad_of_nan_row():
  # torch.amax (the fuzzer's reference for max): a row whose max is nan gives every position a nan gradient (grad / count with count 0);
  # the nan position got it all, as torch.max() and max_pool2d do: Tensor.max is amax (values only, ties share), max_pool2d keeps its way
  x = Tensor([1.0, math.nan, 3.0], requires_grad=True)
  x.max().backward()
  assert all(math.isnan(g) for g in x.grad.tolist()), x.grad.tolist()

def _zero_derivative_blocks_nonfinite():
  # torch: ceil's 0 derivative meets log2(-1) = nan in mul's backward, 0 * nan = nan; a zero derivative was no gradient at all
  # (and sign's, and an infinite upstream gradient meeting a 0 derivative of amax's: grad * 0 = nan there)
  x, y = Tensor([-1.0, 2.0], requires_grad=True), Tensor([3.0, 3.0], requires_grad=True)
  (x.log2() * y).ceil().sum().backward()
  assert math.isnan(y.grad.tolist()[0]), y.grad.tolist()
  for fn in (Tensor.sign, Tensor.ceil, Tensor.floor, Tensor.round, Tensor.trunc):
    x, y = Tensor([-1.0, 2.0, 0.0], requires_grad=True), Tensor([3.0, 3.0, math.inf], requires_grad=True)
    (fn(x.log2() * y) * math.inf).sum().backward()
    rx, ry = torch.tensor([-1.0, 2.0, 0.0], requires_grad=True), torch.tensor([3.0, 3.0, math.inf], requires_grad=True)
    (getattr(torch, fn.__name__)(rx.log2() * ry) * math.inf).sum().backward()
    np.testing.assert_equal(x.grad.numpy(), rx.grad.numpy())
    np.testing.assert_equal(y.grad.numpy(), ry.grad.numpy())
  x = Tensor([1.0, 2.0], requires_grad=True)
  (x.max() * math.inf).backward()
  assert math.isnan(x.grad.tolist()[0]) and x.grad.tolist()[1] == math.inf, x.grad.tolist()

def _grad_flows_through_int_cast():
  # torch: a cast to int or bool is not differentiable, only the +x path carries a gradient
  from tinygrad import dtypes
  x = Tensor([1.5, -2.5], requires_grad=True)
  (x.cast(dtypes.int32).float() * 3 + x.cast(dtypes.bool).float() + x.any().float() + x).sum().backward()
  assert x.grad.tolist() == [1.0, 1.0]

KNOWN_BUG_REPROS = {"zero_derivative_grad_is_none": _zero_derivative_grad_is_none, "max_min_skip_nan": _max_min_skip_nan,
                    "acos_asin_grad_outside_domain": _acos_asin_grad_outside_domain, "backward_after_realize": _backward_after_realize,
                    "pow_zero_loses_grad": _pow_zero_loses_grad, "std_grad_at_zero_is_nan": _std_grad_at_zero_is_nan,
                    "oob_read_after_exp_pad": _oob_read_after_exp_pad, "grads_at_nonfinite_values": _grads_at_nonfinite_values,
                    "grad_flows_through_int_cast": _grad_flows_through_int_cast, "inf_times_zero_in_chain_rule": _inf_times_zero_in_chain_rule,
                    "amax_grad_of_nan_row": _amax_grad_of_nan_row, "zero_derivative_blocks_nonfinite": _zero_derivative_blocks_nonfinite}

# a fixed bug keeps its repro as a regression test: only open bugs are strict xfails
def test_known_bug_list_matches_repros(): assert KNOWN_BUGS_OPEN <= set(KNOWN_BUG_REPROS)

@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"known bug {n}") if n in KNOWN_BUGS_OPEN else ())
                                  for n in sorted(KNOWN_BUG_REPROS)])
def test_known_bug(name): KNOWN_BUG_REPROS[name]()

def test_ill_conditioned_cast_is_told_apart():
  # erf(3.91) is 1.0 in torch's AVX-512 kernel and 1 ulp below in tinygrad: cast to int64 they give 1 and 0, which is rounding, not a bug
  # (case 802002474; torch's AVX2 kernel rounds as we do, so there the case matches); a real difference before the cast still counts
  import random
  from tinygrad import Device
  from extra.fuzz_vs_torch import Case, Mismatch, run_case, known_bug, ill_conditioned_cast
  prev, Device.DEFAULT = Device.DEFAULT, "PYTHON"
  try:
    c = Case(random.Random(802002474), mix="ints")
    try: run_case(802002474, c)
    except Mismatch as e: assert known_bug(f"Mismatch: {e}", c) is not None and ill_conditioned_cast(c)
    c.casts = [(Tensor([0.99999994, 2.0]), torch.tensor([1.0, 2.0]))]
    assert ill_conditioned_cast(c) and known_bug("Mismatch: cast", c) is not None
    c.casts = [(Tensor([0.5, 2.0]), torch.tensor([0.5, 1.0]))]
    assert not ill_conditioned_cast(c)
  finally: Device.DEFAULT = prev
