"""Tensor-level semantics checked against PyTorch: zero gradients of used tensors, gradients outside a domain, indexing, device names,
batched linalg."""
import math
import numpy as np
import pytest
import torch
from tinygrad import Tensor

VALS = [0.5, -0.25, 0.0, 2.0, -3.0]

def _grad_pair(fn_tiny, fn_torch, vals=VALS):
  x, tx = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
  fn_tiny(x).sum().backward()
  fn_torch(tx).sum().backward()
  return x.grad, tx.grad

# ops whose derivative is zero: the tensor is used, so its gradient is zeros (as in PyTorch), not None
@pytest.mark.parametrize("name,fn,tfn", [
  ("sign", lambda x: x.sign(), torch.sign),
  ("pow0", lambda x: x**0, lambda x: x**0),
  ("pow0.0", lambda x: x**0.0, lambda x: x**0.0),
  ("round", lambda x: x.round(), torch.round),
  ("floor", lambda x: x.floor(), torch.floor),
  ("ceil", lambda x: x.ceil(), torch.ceil),
  ("trunc", lambda x: x.trunc(), torch.trunc),
  ("mul0", lambda x: x * 0, lambda x: x * 0),
  ("copysign_sign", lambda x: Tensor([1., -2., 3., 4., -5.]).copysign(x), lambda x: torch.tensor([1., -2., 3., 4., -5.]).copysign(x)),
  ("sign_plus", lambda x: x.sign() * 3 + x.floor(), lambda x: x.sign() * 3 + x.floor()),
])
def test_zero_derivative_gives_zeros(name, fn, tfn):
  g, tg = _grad_pair(fn, tfn)
  assert g is not None, f"{name}: grad is None"
  np.testing.assert_equal(g.numpy(), tg.numpy())

def test_zero_grad_through_comparison_where():
  # tinygrad's rule: a used tensor gets a Tensor gradient, zeros where the derivative is zero
  x = Tensor(VALS, requires_grad=True)
  (x > 0).where(1.0, 2.0).sum().backward()
  np.testing.assert_equal(x.grad.numpy(), np.zeros(5, np.float32))

def test_gradient_api_zero_derivative():
  x = Tensor(VALS, requires_grad=True)
  (g,) = x.sign().sum().gradient(x)
  np.testing.assert_equal(g.numpy(), np.zeros(5, np.float32))
  with pytest.raises(RuntimeError): Tensor([1.0]).sum().gradient(x)  # not used at all: still an error

def test_detach_only_keeps_none():
  x, w = Tensor(VALS, requires_grad=True), Tensor([1., 2., 3., 4., 5.], requires_grad=True)
  (x.detach() * w).sum().backward()
  assert x.grad is None and w.grad is not None

def test_pow_exponent_zero_forward():
  x = Tensor([0.0, -2.0, math.inf, math.nan])
  np.testing.assert_equal((x**0).numpy(), np.ones(4, np.float32))

def test_pow_minus_two_grad_at_zero():
  g, tg = _grad_pair(lambda x: x**-2, lambda x: x**-2, [0.0, -0.0, 2.0, -0.5, math.inf])
  np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6)

DOMAIN = [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]
@pytest.mark.parametrize("op", ["asin", "acos", "acosh", "atanh", "log", "log2", "sqrt", "rsqrt", "log1p", "asinh", "atan", "reciprocal"])
def test_domain_gradients_match_torch(op):
  g, tg = _grad_pair(lambda x: getattr(x, op)(), getattr(torch, op), DOMAIN)
  np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-5, atol=1e-6)
