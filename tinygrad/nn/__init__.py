# layers: plain classes whose Tensor attributes are the parameters (found by nn.state.get_parameters), initialized like PyTorch's
from __future__ import annotations
import math
from typing import Sequence
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod, make_tuple
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.gradient import custom_grads

def _filled(shape:int|tuple[int, ...], value:float) -> Tensor:
  # a constant parameter in a buffer of its own: two lazy Tensor.ones(n) are the same hash-consed graph and would share one buffer
  shp = make_tuple(shape, 1)
  return Tensor([float(value)] * prod(shp)).reshape(shp) if prod(shp) else Tensor.full(shp, value)

def _uniform(shape:tuple[int, ...], bound:float) -> Tensor:
  # made into a buffer of its own at once (one kernel): the first training step then reads the same plain buffers as every later one, so
  # it builds the same kernels instead of versions with the initializer fused in
  return (Tensor.rand(*shape, contiguous=False) * (2 * bound) - bound).contiguous()

class Linear:
  """y = x @ weight.T + bias, weight (out_features, in_features). torch's init: kaiming_uniform(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in))."""
  def __init__(self, in_features:int, out_features:int, bias:bool=True):
    bound = 1 / math.sqrt(in_features) if in_features else 0.0
    self.weight = _uniform((out_features, in_features), bound)
    self.bias = _uniform((out_features,), bound) if bias else None
  def __call__(self, x:Tensor) -> Tensor: return x.linear(self.weight.transpose(), self.bias)

class Conv2d:
  """Convolution over len(kernel_size) spatial dims (Conv1d and Conv3d are this with 1 or 3), weight (out, in/groups, *kernel_size)."""
  def __init__(self, in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride:int|tuple[int, ...]=1,
               padding:int|str|Sequence[int]=0, dilation:int|tuple[int, ...]=1, groups:int=1, bias:bool=True):
    self.kernel_size = make_tuple(kernel_size, 2)
    if in_channels % groups or out_channels % groups:
      raise ValueError(f"groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}")
    self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
    bound = 1 / math.sqrt(in_channels // groups * prod(self.kernel_size))
    self.weight = _uniform((out_channels, in_channels // groups, *self.kernel_size), bound)
    self.bias = _uniform((out_channels,), bound) if bias else None
  def __call__(self, x:Tensor) -> Tensor:
    return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)

def Conv1d(in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride:int|tuple[int, ...]=1, padding:int|str|Sequence[int]=0,
           dilation:int|tuple[int, ...]=1, groups:int=1, bias:bool=True) -> Conv2d:
  return Conv2d(in_channels, out_channels, make_tuple(kernel_size, 1), stride, padding, dilation, groups, bias)

class ConvTranspose2d(Conv2d):
  """Transposed convolution, weight (in, out/groups, *kernel_size); torch computes its init's fan from weight.shape[1:]."""
  def __init__(self, in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride:int|tuple[int, ...]=1,
               padding:int|tuple[int, ...]=0, output_padding:int|tuple[int, ...]=0, dilation:int|tuple[int, ...]=1, groups:int=1, bias:bool=True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    self.output_padding = output_padding
    bound = 1 / math.sqrt(out_channels // groups * prod(self.kernel_size))
    self.weight = _uniform((in_channels, out_channels // groups, *self.kernel_size), bound)
    self.bias = _uniform((out_channels,), bound) if bias else None
  def __call__(self, x:Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding, self.output_padding)  # type: ignore[arg-type]

def ConvTranspose1d(in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride:int|tuple[int, ...]=1,
                    padding:int|tuple[int, ...]=0, output_padding:int|tuple[int, ...]=0, dilation:int|tuple[int, ...]=1, groups:int=1,
                    bias:bool=True) -> ConvTranspose2d:
  return ConvTranspose2d(in_channels, out_channels, make_tuple(kernel_size, 1), stride, padding, output_padding, dilation, groups, bias)

class BatchNorm:
  """Normalizes over every dim but the channels (dim 1). In training (Tensor.training) it uses the batch's statistics and updates the
  running ones by momentum (the variance unbiased, like torch); otherwise it uses the running statistics when it tracks them."""
  def __init__(self, sz:int, eps:float=1e-5, affine:bool=True, track_running_stats:bool=True, momentum:float=0.1):
    self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
    self.weight: Tensor|None = _filled(sz, 1.0) if affine else None
    self.bias: Tensor|None = _filled(sz, 0.0) if affine else None
    if track_running_stats:
      self.running_mean, self.running_var = _filled(sz, 0.0).requires_grad_(False), _filled(sz, 1.0).requires_grad_(False)
      self.num_batches_tracked = Tensor([0], dtype=dtypes.int64, requires_grad=False).reshape(())
  def __call__(self, x:Tensor) -> Tensor:
    if x.ndim < 2: raise RuntimeError(f"BatchNorm expects a (N, C, ...) input, got shape {x.shape}")
    if not Tensor.training and self.track_running_stats:
      return x.batchnorm(self.weight, self.bias, self.running_mean, self.running_var.add(self.eps).rsqrt())
    mean, var = _batch_stats(x)
    if Tensor.training and self.track_running_stats:
      n = x.numel() // x.shape[1]
      self.running_mean.assign((1 - self.momentum) * self.running_mean + self.momentum * mean.detach())
      self.running_var.assign((1 - self.momentum) * self.running_var + self.momentum * n / max(n - 1, 1) * var.detach())
      self.num_batches_tracked.assign(self.num_batches_tracked + 1)
    y = x.batchnorm(self.weight, self.bias, mean, var.add(self.eps).rsqrt())
    # backward by the closed form (_batchnorm_grad): two per-channel sums of the output's gradient, computed once, instead of the five
    # that differentiating through the mean and the variance makes, each recomputing that gradient
    ins = [t.uop for t in (x, self.weight, self.bias) if t is not None]
    return Tensor(UOp(Ops.CONTIGUOUS_BACKWARD, y.dtype, (y.uop, *ins), ("batchnorm", self.eps, self.weight is not None)), device=y.device)

def _batch_stats(x:Tensor) -> tuple[Tensor, Tensor]:
  # mean and biased variance over every dim but the channels. The gradient through the mean inside the variance is zero (the centered
  # values sum to 0), so it is detached. The backward rebuilds the same graph, which hash-consing makes the same kernels
  axes = tuple(i for i in range(x.ndim) if i != 1)
  mean = x.mean(axes)
  centered = x - mean.detach().reshape((1, -1) + (1,) * (x.ndim - 2))
  return mean, (centered * centered).mean(axes)

def _batchnorm_grad(ctx:UOp, ret:UOp) -> tuple[UOp, ...]:
  # dy the output's gradient, xhat the normalized input: dbias = sum(dy), dweight = sum(dy * xhat), and
  # dx = weight * invstd * (dy - dbias/n - xhat * dweight/n), all sums per channel
  _, eps, has_weight = ret.arg
  x, dy = Tensor(ret.src[1]), Tensor(ctx)
  shape, axes = (1, -1) + (1,) * (x.ndim - 2), tuple(i for i in range(x.ndim) if i != 1)
  mean, var = _batch_stats(x)
  invstd = var.add(eps).rsqrt().reshape(shape)
  xhat, n = (x - mean.reshape(shape)) * invstd, x.numel() // x.shape[1]
  dbias, dweight = dy.sum(axes), (dy * xhat).sum(axes)
  scale = invstd * Tensor(ret.src[2]).reshape(shape) if has_weight else invstd
  dx = (dy - dbias.reshape(shape) / n - xhat * dweight.reshape(shape) / n) * scale
  return (dx.uop, dweight.uop, dbias.uop)[:len(ret.src) - 1]
custom_grads["batchnorm"] = _batchnorm_grad

BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm

class GroupNorm:
  """Splits the channels into num_groups groups and normalizes each group of each sample; weight and bias are per channel."""
  def __init__(self, num_groups:int, num_channels:int, eps:float=1e-5, affine:bool=True):
    if num_channels % num_groups: raise ValueError(f"num_groups={num_groups} must divide num_channels={num_channels}")
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight: Tensor|None = _filled(num_channels, 1.0) if affine else None
    self.bias: Tensor|None = _filled(num_channels, 0.0) if affine else None
  def __call__(self, x:Tensor) -> Tensor:
    y = x.reshape(x.shape[0], self.num_groups, -1).layernorm(eps=self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return y
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * self.weight.reshape(shape) + self.bias.reshape(shape)

class InstanceNorm:
  """Normalizes each channel of each sample over its spatial dims (tinygrad's default: affine)."""
  def __init__(self, num_features:int, eps:float=1e-5, affine:bool=True):
    self.num_features, self.eps = num_features, eps
    self.weight: Tensor|None = _filled(num_features, 1.0) if affine else None
    self.bias: Tensor|None = _filled(num_features, 0.0) if affine else None
  def __call__(self, x:Tensor) -> Tensor:
    y = x.reshape(x.shape[0], x.shape[1], -1).layernorm(eps=self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return y
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * self.weight.reshape(shape) + self.bias.reshape(shape)

class LayerNorm:
  """Normalizes over the last len(normalized_shape) dims, then scales and shifts elementwise."""
  def __init__(self, normalized_shape:int|tuple[int, ...], eps:float=1e-5, elementwise_affine:bool=True):
    self.normalized_shape: tuple[int, ...] = make_tuple(normalized_shape, 1)
    self.axis, self.eps, self.elementwise_affine = tuple(-1 - i for i in range(len(self.normalized_shape))), eps, elementwise_affine
    self.weight: Tensor|None = _filled(self.normalized_shape, 1.0) if elementwise_affine else None
    self.bias: Tensor|None = _filled(self.normalized_shape, 0.0) if elementwise_affine else None
  def __call__(self, x:Tensor) -> Tensor:
    if tuple(x.shape[-len(self.normalized_shape):]) != self.normalized_shape:
      raise RuntimeError(f"LayerNorm over {self.normalized_shape} got an input of shape {x.shape}")
    y = x.layernorm(self.axis, self.eps)
    return y if self.weight is None or self.bias is None else y * self.weight + self.bias

class LayerNorm2d(LayerNorm):
  """LayerNorm over the channels of an (N, C, H, W) input."""
  def __call__(self, x:Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

class RMSNorm:
  """x / sqrt(mean(x**2) + eps) over the last dim, times a weight."""
  def __init__(self, dim:int, eps:float=1e-6, elementwise_affine:bool=True):
    self.eps, self.weight = eps, _filled(dim, 1.0) if elementwise_affine else None
  def __call__(self, x:Tensor) -> Tensor:
    y = x * x.square().mean(-1, keepdim=True).add(self.eps).rsqrt()
    return y if self.weight is None else y * self.weight

class Embedding:
  """Rows of weight (vocab_size, embed_size) picked by an int index tensor; torch's init: N(0, 1)."""
  def __init__(self, vocab_size:int, embed_size:int):
    self.vocab_sz, self.embed_sz, self.weight = vocab_size, embed_size, Tensor.randn(vocab_size, embed_size)
  def __call__(self, idx:Tensor) -> Tensor:
    if dtypes.is_float(idx.dtype): raise TypeError(f"Embedding needs an integer index tensor, got {idx.dtype}")
    # a one-hot matmul: the gradient into weight is the sum of the rows picked
    one_hot = idx.unsqueeze(-1) == Tensor.arange(self.vocab_sz, device=idx.device).reshape((1,) * idx.ndim + (self.vocab_sz,))
    return one_hot.cast(self.weight.dtype) @ self.weight

class LSTMCell:
  """One step of an LSTM: (h, c) from x and the previous (h, c) (zeros when None). Gates in torch's order i, f, g, o."""
  def __init__(self, input_size:int, hidden_size:int, bias:bool=True):
    bound = 1 / math.sqrt(hidden_size)
    self.hidden_size = hidden_size
    self.weight_ih, self.weight_hh = _uniform((4 * hidden_size, input_size), bound), _uniform((4 * hidden_size, hidden_size), bound)
    self.bias_ih: Tensor|None = _uniform((4 * hidden_size,), bound) if bias else None
    self.bias_hh: Tensor|None = _uniform((4 * hidden_size,), bound) if bias else None
  def __call__(self, x:Tensor, hc:tuple[Tensor, Tensor]|None=None) -> tuple[Tensor, Tensor]:
    if hc is None: hc = (Tensor.zeros(*x.shape[:-1], self.hidden_size, dtype=x.dtype, device=x.device),) * 2
    gates = x.linear(self.weight_ih.transpose(), self.bias_ih) + hc[0].linear(self.weight_hh.transpose(), self.bias_hh)
    i, f, g, o = gates.chunk(4, dim=-1)
    c = f.sigmoid() * hc[1] + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c
from tinygrad.nn import optim, state, datasets  # noqa: E402,F401  (nn.optim, nn.state, nn.datasets, like tinygrad)
