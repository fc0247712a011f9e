# optimizers: each step is lazy Tensor maths assigned into the parameters' buffers, so a step captured by TinyJit replays. The learning
# rate is a Tensor (a one-element buffer): `opt.lr.assign(Tensor([new_lr]))` changes it, also inside a jitted step
from __future__ import annotations
from typing import cast
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.helpers import dedup

def _state(t:Tensor, value:float=0.0) -> Tensor:
  # optimizer state in a buffer of its own (a lazy zeros would be one hash-consed graph shared by every state of that shape)
  dt = t.dtype if dtypes.is_float(t.dtype) else dtypes.float32
  return Tensor([float(value)] * cast(int, t.numel()), dtype=dt, device=t.device).reshape(t.shape)

def _scalar(value:float, device) -> Tensor: return Tensor([float(value)], device=device, requires_grad=False).reshape(())

class Optimizer:
  """Base: params with requires_grad None are made trainable; tensors with requires_grad False (BatchNorm's running statistics) are
  buffers, realized with each step so their updates land too."""
  def __init__(self, params:list[Tensor], lr:float):
    for p in params:
      if p.requires_grad is None: p.requires_grad = True
    self.params: list[Tensor] = dedup([p for p in params if p.requires_grad])
    self.buffers: list[Tensor] = dedup([p for p in params if not p.requires_grad])
    if not self.params: raise ValueError("the optimizer got no tensor that requires grad")
    self.device = self.params[0].device
    self.lr = _scalar(lr, self.device)
  def zero_grad(self) -> None:
    for p in self.params: p.grad = None
  def step(self) -> None: Tensor.realize(*self.schedule_step())
  def schedule_step(self) -> list[Tensor]:
    """The update as lazy assigns; returns every tensor to realize (the params, their states and the buffers)."""
    with Tensor.no_grad():
      # like torch, a param that got no gradient is left alone
      return self._step([i for i, p in enumerate(self.params) if p.grad is not None]) + self.params + self.buffers
  def _step(self, idx:list[int]) -> list[Tensor]: raise NotImplementedError("an optimizer defines _step")

class OptimizerGroup(Optimizer):
  """Several optimizers (over different params) stepped as one."""
  def __init__(self, *optimizers:Optimizer):
    self.optimizers = list(optimizers)
    self.params, self.buffers = [p for o in optimizers for p in o.params], [b for o in optimizers for b in o.buffers]
  def __getitem__(self, i:int) -> Optimizer: return self.optimizers[i]
  def zero_grad(self) -> None:
    for o in self.optimizers: o.zero_grad()
  def schedule_step(self) -> list[Tensor]: return [t for o in self.optimizers for t in o.schedule_step()]

class LARS(Optimizer):
  """Layer-wise adaptive rate scaling (You et al. 2017): each param's step is scaled by the trust ratio
  tcoef * |p| / (|g| + wd * |p|) (1 where a norm is 0). classic: momentum accumulates lr-scaled steps (classic momentum); else the momentum
  buffer holds raw gradients and lr scales after it. tcoef=0 is plain SGD."""
  def __init__(self, params:list[Tensor], lr:float=0.001, momentum:float=0.9, weight_decay:float=1e-4, nesterov:bool=False, classic:bool=True,
               tcoef:float=0.001):
    super().__init__(params, lr)
    if lr < 0 or momentum < 0 or weight_decay < 0: raise ValueError(f"lr, momentum, weight_decay must be >= 0, got {lr}, {momentum}, {weight_decay}")
    if nesterov and momentum == 0: raise ValueError("nesterov momentum needs momentum > 0")
    self.momentum, self.wd, self.nesterov, self.classic, self.tcoef = momentum, weight_decay, nesterov, classic, tcoef
    self.b = [_state(p) for p in self.params] if momentum else []
  def _step(self, idx:list[int]) -> list[Tensor]:
    for i in idx:
      p, g = self.params[i], self.params[i].grad.detach()  # type: ignore[union-attr]
      if self.tcoef:
        pn, gn = p.detach().square().sum().sqrt(), g.square().sum().sqrt()
        ratio = (pn > 0).where((gn > 0).where(self.tcoef * pn / (gn + self.wd * pn), 1.0), 1.0)
        g = (g + self.wd * p.detach()) * ratio
      elif self.wd: g = g + self.wd * p.detach()
      if self.classic: g = g * self.lr
      if self.momentum:
        self.b[i].assign(self.momentum * self.b[i] + g)
        g = g + self.momentum * self.b[i] if self.nesterov else self.b[i]
      if not self.classic: g = g * self.lr
      p.assign((p.detach() - g).cast(p.dtype))
    return self.b

def SGD(params:list[Tensor], lr:float=0.001, momentum:float=0.0, weight_decay:float=0.0, nesterov:bool=False, classic:bool=False) -> LARS:
  """torch's SGD (no dampening): g += wd*p; b = momentum*b + g; p -= lr * (g + momentum*b if nesterov else b)."""
  return LARS(params, lr, momentum, weight_decay, nesterov, classic, tcoef=0.0)

class LAMB(Optimizer):
  """Layer-wise adaptive moments (You et al. 2019): an Adam step plus weight decay, scaled per param by |p| / |step| (1 where a norm is 0).
  adam=True drops the scaling: AdamW. Bias corrections use b1**t and b2**t kept as Tensors, so a jitted step counts its own steps."""
  def __init__(self, params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-6, weight_decay:float=0.0, adam:bool=False):
    super().__init__(params, lr)
    if not (0 <= b1 < 1 and 0 <= b2 < 1) or eps < 0: raise ValueError(f"betas must be in [0, 1) and eps >= 0, got {b1}, {b2}, {eps}")
    self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, weight_decay, adam
    self.b1_t, self.b2_t = _scalar(1.0, self.device), _scalar(1.0, self.device)
    self.m, self.v = [_state(p) for p in self.params], [_state(p) for p in self.params]
    self.l2 = 0.0  # Adam's weight decay, added to the gradient (AdamW's is decoupled: wd)
  def _step(self, idx:list[int]) -> list[Tensor]:
    self.b1_t.assign(self.b1_t * self.b1)
    self.b2_t.assign(self.b2_t * self.b2)
    for i in idx:
      p, g = self.params[i], self.params[i].grad.detach()  # type: ignore[union-attr]
      if self.l2: g = g + self.l2 * p.detach()
      self.m[i].assign(self.b1 * self.m[i] + (1.0 - self.b1) * g)
      self.v[i].assign(self.b2 * self.v[i] + (1.0 - self.b2) * (g * g))
      up = (self.m[i] / (1.0 - self.b1_t)) / ((self.v[i] / (1.0 - self.b2_t)).sqrt() + self.eps) + self.wd * p.detach()
      if not self.adam:
        pn, un = p.detach().square().sum().sqrt(), up.square().sum().sqrt()
        up = up * (pn > 0).where((un > 0).where(pn / un, 1.0), 1.0)
      p.assign((p.detach() - self.lr * up).cast(p.dtype))
    return [self.b1_t, self.b2_t] + self.m + self.v

def AdamW(params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-8, weight_decay:float=0.01) -> LAMB:
  """torch's AdamW: decoupled weight decay, p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)."""
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True)

def Adam(params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-8, weight_decay:float=0.0) -> LAMB:
  """torch's Adam: weight_decay is L2, added to the gradient."""
  ret = LAMB(params, lr, b1, b2, eps, 0.0, adam=True)
  ret.l2 = weight_decay
  return ret
