"""The com.microsoft contrib ops that exported transformers use (onnxruntime's transformer optimizer emits them)."""
from __future__ import annotations
import math
from tinygrad import Tensor, dtypes
from extra import onnx_ops
from extra.onnx_ops import _scalar

def FastGelu(x, bias=None):
  x = x + bias if bias is not None else x
  return x * 0.5 * (1 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())
def BiasGelu(x, bias): return onnx_ops.Gelu(x + bias)
def Gelu(x): return onnx_ops.Gelu(x)
def QuickGelu(x, alpha=1.702): return x * (x * alpha).sigmoid()
def BiasAdd(x, bias, skip): return x + bias + skip

def _layernorm(x: Tensor, gamma, beta, epsilon: float, simplified: bool = False) -> tuple[Tensor, Tensor, Tensor]:
  xf = x.cast(dtypes.float32)
  mean = Tensor.zeros(1) if simplified else xf.mean(-1, keepdim=True)
  xc = xf if simplified else xf - mean
  inv = (xc.square().mean(-1, keepdim=True) + epsilon).rsqrt()
  y = (xc * inv).cast(x.dtype) * gamma
  return (y + beta if beta is not None else y), mean, inv

def SkipLayerNormalization(x, skip, gamma, beta=None, bias=None, epsilon=1e-12, n_outputs=1):
  s = x + skip + (bias if bias is not None else 0)
  y, mean, inv = _layernorm(s, gamma, beta, epsilon)
  return (y, mean, inv, s)[:max(n_outputs, 1)]
def SkipSimplifiedLayerNormalization(x, skip, gamma, bias=None, epsilon=1e-12, n_outputs=1):
  s = x + skip + (bias if bias is not None else 0)
  y, mean, inv = _layernorm(s, gamma, None, epsilon, simplified=True)
  return (y, mean, inv, s)[:max(n_outputs, 1)]
def SimplifiedLayerNormalization(x, scale, axis=-1, epsilon=1e-5, stash_type=1): return onnx_ops.RMSNormalization(x, scale, axis, epsilon, stash_type)
def LayerNormalization(x, scale, B=None, axis=-1, epsilon=1e-5, stash_type=1):
  return onnx_ops.LayerNormalization(x, scale, B, axis, epsilon, stash_type)

def EmbedLayerNormalization(input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta, mask=None,
                            position_ids=None, epsilon=1e-12, mask_index_type=1, n_outputs=1, runner=None):
  b, s = input_ids.shape
  def rows(table, ids): return onnx_ops.Gather(table, ids.cast(dtypes.int64), 0, runner)
  emb = rows(word_embedding, input_ids)
  emb = emb + rows(position_embedding, position_ids if position_ids is not None else Tensor.arange(s).reshape(1, s).expand(b, s))
  if segment_ids is not None and segment_embedding is not None: emb = emb + rows(segment_embedding, segment_ids)
  y, _, _ = _layernorm(emb, gamma, beta, epsilon)
  mask_index = mask.cast(dtypes.int32).sum(-1) if mask is not None else Tensor.zeros(b, dtype=dtypes.int32)
  return (y, mask_index.cast(dtypes.int32), emb)[:max(n_outputs, 1)]

def Attention(x, weights, bias=None, mask_index=None, past=None, attention_bias=None, past_sequence_length=None, num_heads=1, unidirectional=0,
              qkv_hidden_sizes=None, scale=None, mask_filter_value=-10000.0, do_rotary=0, past_present_share_buffer=0, rotary_embedding_dim=0,
              n_outputs=1):
  b, s, _ = x.shape
  qkv = x @ weights + (bias if bias is not None else 0)
  hq, hk, hv = qkv_hidden_sizes or [weights.shape[1] // 3] * 3
  q, k, v = qkv[..., :hq], qkv[..., hq:hq + hk], qkv[..., hq + hk:]
  def heads(t: Tensor, h: int) -> Tensor: return t.reshape(b, s, num_heads, h // num_heads).transpose(1, 2)
  q, k, v = heads(q, hq), heads(k, hk), heads(v, hv)
  if past is not None: k, v = past[0].cat(k, dim=2), past[1].cat(v, dim=2)
  present = Tensor.stack(k, v, dim=0)
  total = k.shape[2]
  sc = scale if scale else 1 / math.sqrt(hq // num_heads)
  scores = (q @ k.transpose(-1, -2)) * sc
  if mask_index is not None:
    if mask_index.ndim == 2 and mask_index.shape == (b, total):   # raw 0/1 mask
      scores = scores + (1 - mask_index.cast(scores.dtype)).reshape(b, 1, 1, total) * mask_filter_value
    elif mask_index.ndim == 1:   # right padding: valid lengths
      valid = Tensor.arange(total).reshape(1, total) < mask_index[:b].reshape(b, 1)
      scores = scores + valid.logical_not().cast(scores.dtype).reshape(b, 1, 1, total) * mask_filter_value
    elif mask_index.ndim == 3: scores = scores + (1 - mask_index.cast(scores.dtype)).reshape(b, 1, s, total) * mask_filter_value
    elif mask_index.ndim == 4: scores = scores + (1 - mask_index.cast(scores.dtype)) * mask_filter_value
  if attention_bias is not None: scores = scores + attention_bias
  if unidirectional:
    causal = Tensor.arange(total).reshape(1, total) <= Tensor.arange(s).reshape(s, 1) + (total - s)
    scores = causal.where(scores, mask_filter_value)
  y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, hv)
  return (y, present)[:max(n_outputs, 1)]

def _deq(x, scale, zp): return (x.cast(dtypes.float32) - (zp.cast(dtypes.float32) if zp is not None else 0)) * scale.cast(dtypes.float32)
def _q(y, scale, zp):
  dt = zp.dtype if zp is not None else dtypes.uint8
  r = (y / scale.cast(dtypes.float32)).round() + (zp.cast(dtypes.float32) if zp is not None else 0)
  return r.clip(dtypes.min(dt), dtypes.max(dt)).cast(dt)
def QLinearAdd(a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp=None): return _q(_deq(a, a_scale, a_zp) + _deq(b, b_scale, b_zp), c_scale, c_zp)
def QLinearMul(a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp=None): return _q(_deq(a, a_scale, a_zp) * _deq(b, b_scale, b_zp), c_scale, c_zp)
def QLinearSigmoid(x, x_scale, x_zp, y_scale, y_zp=None): return _q(_deq(x, x_scale, x_zp).sigmoid(), y_scale, y_zp)
def QLinearLeakyRelu(x, x_scale, x_zp, y_scale, y_zp=None, alpha=0.01): return _q(onnx_ops.LeakyRelu(_deq(x, x_scale, x_zp), alpha), y_scale, y_zp)
def QLinearGlobalAveragePool(x, x_scale, x_zp, y_scale, y_zp, channels_last=0):
  xf = _deq(x, x_scale, x_zp)
  ax = tuple(range(1, x.ndim - 1)) if channels_last else tuple(range(2, x.ndim))
  return _q(xf.mean(ax, keepdim=True), y_scale, y_zp)
def QLinearConcat(y_scale, y_zp, *rest, axis=0):
  parts = [_deq(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]
  return _q(parts[0].cat(*parts[1:], dim=axis), y_scale, y_zp)
def QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C=None, y_scale=None, y_zp=None, alpha=1.0, transA=0, transB=0):
  a, b = _deq(A, a_scale, a_zp), _deq(B, b_scale, b_zp)
  y = (a.T if transA else a) @ (b.T if transB else b) * alpha
  if C is not None: y = y + C.cast(dtypes.float32) * (a_scale.cast(dtypes.float32) * b_scale.cast(dtypes.float32))
  return _q(y, y_scale, y_zp) if y_scale is not None else y
def DequantizeLinear(x, x_scale, x_zero_point=None, axis=1): return onnx_ops.DequantizeLinear(x, x_scale, x_zero_point, axis)
def QuantizeLinear(x, y_scale, y_zero_point=None, axis=1): return onnx_ops.QuantizeLinear(x, y_scale, y_zero_point, axis)
def FusedMatMul(A, B, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
  return ((A.transpose(-1, -2) if transA else A) @ (B.transpose(-1, -2) if transB else B)) * alpha
def FusedConv(X, W, B=None, Z=None, activation="", activation_params=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
              pads=None, strides=None):
  y = onnx_ops.Conv(X, W, B, auto_pad, dilations, group, kernel_shape, pads, strides)
  if Z is not None: y = y + Z
  p = activation_params or []
  acts = {"": lambda t: t, "Relu": lambda t: t.relu(), "Tanh": lambda t: t.tanh(), "Sigmoid": lambda t: t.sigmoid(),
          "LeakyRelu": lambda t: onnx_ops.LeakyRelu(t, *p[:1]), "Clip": lambda t: t.clip(*p[:2]) if p else t,
          "HardSigmoid": lambda t: onnx_ops.HardSigmoid(t, *p[:2])}
  return acts[activation](y)
def RotaryEmbedding(x, position_ids, cos_cache, sin_cache, interleaved=0, num_heads=0, rotary_embedding_dim=0, scale=1.0, is_packed_batching=0):
  if position_ids.ndim == 2: pid = position_ids
  else: pid = (Tensor.arange(x.shape[1]).reshape(1, -1) + int(_scalar(position_ids))).expand(x.shape[0], x.shape[1])
  return onnx_ops.RotaryEmbedding(x, cos_cache, sin_cache, pid, interleaved, num_heads, rotary_embedding_dim)

MS_OPS = {k: v for k, v in globals().items() if callable(v) and k[:1].isupper() and getattr(v, "__module__", None) == __name__}
onnx_ops.register("com.microsoft", MS_OPS)
