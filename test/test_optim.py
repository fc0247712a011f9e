# optimizers against torch.optim step for step; LAMB and LARS against numpy references written from the papers' formulas
import numpy as np, pytest, torch
from tinygrad import Tensor, TinyJit
from tinygrad.nn import optim

rng = np.random.default_rng(0)
W0, X, Y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
B0 = rng.standard_normal((3,)).astype(np.float32)

def loss_tiny(w, b): return ((Tensor(X) @ w + b - Tensor(Y)) ** 2).mean() + (w * w).sum() * 0.1
def loss_torch(w, b): return ((torch.tensor(X) @ w + b - torch.tensor(Y)) ** 2).mean() + (w * w).sum() * 0.1

def run_tiny(make, steps=5):
  w, b = Tensor(W0.copy(), requires_grad=True), Tensor(B0.copy(), requires_grad=True)
  opt = make([w, b])
  for _ in range(steps):
    opt.zero_grad()
    loss_tiny(w, b).backward()
    opt.step()
  return w.numpy(), b.numpy()

def run_torch(make, steps=5):
  w, b = torch.tensor(W0.copy(), requires_grad=True), torch.tensor(B0.copy(), requires_grad=True)
  opt = make([w, b])
  for _ in range(steps):
    opt.zero_grad()
    loss_torch(w, b).backward()
    opt.step()
  return w.detach().numpy(), b.detach().numpy()

CASES = [
  (lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
  (lambda p: optim.SGD(p, lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
  (lambda p: optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
  (lambda p: optim.SGD(p, lr=0.05, weight_decay=0.3), lambda p: torch.optim.SGD(p, lr=0.05, weight_decay=0.3)),
  (lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
  (lambda p: optim.Adam(p, lr=0.02, b1=0.8, b2=0.99, eps=1e-6, weight_decay=0.05),
   lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
  (lambda p: optim.AdamW(p, lr=0.01), lambda p: torch.optim.AdamW(p, lr=0.01)),
  (lambda p: optim.AdamW(p, lr=0.03, weight_decay=0.2), lambda p: torch.optim.AdamW(p, lr=0.03, weight_decay=0.2)),
]

@pytest.mark.parametrize("i", range(len(CASES)))
def test_matches_torch(i):
  ours, theirs = CASES[i]
  for a, b in zip(run_tiny(ours), run_torch(theirs)): np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)

def grad_np(w, b):
  t = [torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)]
  loss_torch(*t).backward()
  return [x.grad.numpy() for x in t]

def test_lamb_reference():
  # You et al. 2019, as tinygrad defines it: adam step (bias corrected) + wd*p, scaled by ||p|| / ||step||
  lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-6, 0.01
  ps, m, v = [W0.astype(np.float64), B0.astype(np.float64)], [0, 0], [0, 0]
  for t in range(1, 6):
    gs = grad_np(*[p.astype(np.float32) for p in ps])
    for i, g in enumerate(gs):
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      up = (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + eps) + wd * ps[i]
      r1, r2 = np.linalg.norm(ps[i]), np.linalg.norm(up)
      ps[i] = ps[i] - lr * (r1 / r2 if r1 > 0 and r2 > 0 else 1.0) * up
  for a, b in zip(run_tiny(lambda p: optim.LAMB(p, lr=lr, b1=b1, b2=b2, eps=eps, weight_decay=wd)), ps): np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)

@pytest.mark.parametrize("classic,nesterov", [(True, False), (False, False), (True, True)])
def test_lars_reference(classic, nesterov):
  # You et al. 2017: local lr = tcoef * ||p|| / (||g|| + wd ||p||), applied to g + wd p, with momentum
  lr, mom, wd, tc = 0.1, 0.9, 1e-3, 0.02
  ps, bufs = [W0.astype(np.float64), B0.astype(np.float64)], [0, 0]
  for _ in range(5):
    gs = grad_np(*[p.astype(np.float32) for p in ps])
    for i, g in enumerate(gs):
      pn, gn = np.linalg.norm(ps[i]), np.linalg.norm(g)
      r = tc * pn / (gn + wd * pn) if pn > 0 and gn > 0 else 1.0
      u = (g + wd * ps[i]) * r
      if classic: u = u * lr
      bufs[i] = mom * bufs[i] + u
      u = u + mom * bufs[i] if nesterov else bufs[i]
      if not classic: u = u * lr
      ps[i] = ps[i] - u
  ours = run_tiny(lambda p: optim.LARS(p, lr=lr, momentum=mom, weight_decay=wd, nesterov=nesterov, classic=classic, tcoef=tc))
  for a, b in zip(ours, ps): np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)

def test_lr_is_a_tensor_and_changes_in_jit():
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = optim.SGD([w], lr=0.5)
  assert isinstance(opt.lr, Tensor)
  @TinyJit
  def step():
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()
  expect = np.array([1.0, 2.0])
  for i in range(5):
    lr = 0.5 if i < 3 else 0.25
    opt.lr.assign(Tensor([lr]).reshape(())).realize()
    step()
    expect = expect - lr * 2 * expect
    np.testing.assert_allclose(w.numpy(), expect, rtol=1e-6)

def test_optimizer_group_and_skip_no_grad():
  a, b, c = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  opt = optim.OptimizerGroup(optim.SGD([a], lr=0.1), optim.Adam([b, c], lr=0.1))
  opt.zero_grad()
  (a * b).sum().backward()
  opt.step()
  np.testing.assert_allclose(a.numpy(), [1 - 0.1 * 2])
  np.testing.assert_allclose(b.numpy(), [2 - 0.1], rtol=1e-6)
  assert c.item() == 3.0  # no grad: untouched, like torch
  assert opt[0].params == [a]

def test_requires_grad_none_becomes_trainable():
  w, buf = Tensor([1.0]), Tensor([1.0], requires_grad=False)
  opt = optim.SGD([w, buf])
  assert w.requires_grad and opt.params == [w] and opt.buffers == [buf]
  with pytest.raises(ValueError): optim.SGD([buf])
