# nn layers against torch.nn: torch's initial weights copied in, the same input gives the same output and the same gradients
import numpy as np, pytest, torch
from tinygrad import Tensor, dtypes
from tinygrad import nn
from tinygrad.nn.state import get_parameters, get_state_dict

def _copy_weights(ours, theirs):
  sd = {k: v for k, v in theirs.state_dict().items()}
  mine = get_state_dict(ours)
  assert set(mine) == set(sd), (set(mine), set(sd))
  for k, v in mine.items():
    assert v.shape == tuple(sd[k].shape), k
    v.replace(Tensor(sd[k].numpy()).cast(v.dtype)).realize()

def _compare(ours, theirs, x_np, atol=1e-5, rtol=1e-4, train=False, grad_input=True):
  _copy_weights(ours, theirs)
  theirs.train(train)
  tx = torch.tensor(x_np, requires_grad=grad_input)
  tout = theirs(tx)
  tout = tout[0] if isinstance(tout, tuple) else tout
  x = Tensor(x_np, requires_grad=grad_input or None)
  params = [p for p in get_parameters(ours) if p.requires_grad is not False and dtypes.is_float(p.dtype)]
  for p in params: p.requires_grad = True
  w = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
  with Tensor.train(train):
    out = ours(x)
    out = out[0] if isinstance(out, tuple) else out
    # backward before realizing: realizing first turns the graph's tensors into buffers, as in tinygrad
    (out * Tensor(w)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), atol=atol, rtol=rtol)
  (tout * torch.tensor(w)).sum().backward()
  if grad_input: np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=atol*10, rtol=rtol*10)
  tparams = dict(theirs.named_parameters())
  for k, v in get_state_dict(ours).items():
    if k in tparams and tparams[k].grad is not None:
      np.testing.assert_allclose(v.grad.numpy(), tparams[k].grad.numpy(), atol=atol*10, rtol=rtol*10, err_msg=k)
  return ours, theirs

rng = np.random.default_rng(0)
def randn(*s): return rng.standard_normal(s).astype(np.float32)

def test_linear(): _compare(nn.Linear(7, 5), torch.nn.Linear(7, 5), randn(3, 7))
def test_linear_no_bias(): _compare(nn.Linear(7, 5, bias=False), torch.nn.Linear(7, 5, bias=False), randn(2, 4, 7))

@pytest.mark.parametrize("padding", [0, 1, (1, 2), "same"])
def test_conv2d(padding):
  _compare(nn.Conv2d(3, 4, 3, padding=padding), torch.nn.Conv2d(3, 4, 3, padding=padding), randn(2, 3, 7, 6))
def test_conv2d_stride_groups_dilation():
  _compare(nn.Conv2d(4, 6, (3, 2), stride=2, dilation=(1, 2), groups=2), torch.nn.Conv2d(4, 6, (3, 2), stride=2, dilation=(1, 2), groups=2), randn(2, 4, 9, 8))
def test_conv1d(): _compare(nn.Conv1d(3, 4, 5, padding=2), torch.nn.Conv1d(3, 4, 5, padding=2), randn(2, 3, 11))
def test_conv_transpose2d():
  _compare(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
           randn(2, 3, 5, 4))
def test_conv_transpose1d(): _compare(nn.ConvTranspose1d(3, 2, 4, stride=3), torch.nn.ConvTranspose1d(3, 2, 4, stride=3), randn(2, 3, 6))

def test_batchnorm_train_and_running_stats():
  ours, theirs = nn.BatchNorm2d(4, momentum=0.2), torch.nn.BatchNorm2d(4, momentum=0.2)
  x = randn(5, 4, 3, 3) * 3 + 1
  _compare(ours, theirs, x, train=True)
  Tensor.realize(ours.running_mean, ours.running_var, ours.num_batches_tracked)
  np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), atol=1e-5)
  np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), atol=1e-5)
  assert ours.num_batches_tracked.item() == 1
  # eval uses the running statistics
  theirs.eval()
  with Tensor.train(False): np.testing.assert_allclose(ours(Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-5)

def test_batchnorm_eval(): _compare(nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4), randn(3, 4, 2, 2), train=False)
def test_batchnorm1d_no_tracking():
  _compare(nn.BatchNorm(6, track_running_stats=False), torch.nn.BatchNorm1d(6, track_running_stats=False), randn(8, 6), train=True)
def test_batchnorm_no_affine_train():
  _compare(nn.BatchNorm2d(3, affine=False), torch.nn.BatchNorm2d(3, affine=False), randn(4, 3, 5, 2) * 2 - 1, train=True)
def test_batchnorm3d(): _compare(nn.BatchNorm3d(2), torch.nn.BatchNorm3d(2), randn(2, 2, 3, 2, 2), train=True)

def test_groupnorm(): _compare(nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6), randn(3, 6, 4, 4) * 2 + 1)
def test_instancenorm(): _compare(nn.InstanceNorm(3), torch.nn.InstanceNorm2d(3, affine=True), randn(2, 3, 5, 5))
def test_layernorm(): _compare(nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5)), randn(3, 4, 5) * 3)
def test_layernorm2d():
  ours = nn.LayerNorm2d(4)
  tl = torch.nn.LayerNorm(4)
  class T(torch.nn.Module):
    def __init__(self): super().__init__(); self.l = tl
    def forward(self, x): return self.l(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
  class Ours:
    def __init__(self): self.l = ours
    def __call__(self, x): return self.l(x)
  _compare(Ours(), T(), randn(2, 4, 3, 3))
def test_rmsnorm(): _compare(nn.RMSNorm(8, eps=1e-6), torch.nn.RMSNorm(8, eps=1e-6), randn(3, 8))

def test_embedding():
  ours, theirs = nn.Embedding(10, 4), torch.nn.Embedding(10, 4)
  _copy_weights(ours, theirs)
  idx = np.array([[1, 2, 9], [0, 2, 2]], dtype=np.int32)
  ours.weight.requires_grad = True
  out, tout = ours(Tensor(idx)), theirs(torch.tensor(idx, dtype=torch.long))
  np.testing.assert_allclose(out.numpy(), tout.detach().numpy())
  out.sum().backward(); tout.sum().backward()
  np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy())

def test_lstmcell():
  ours, theirs = nn.LSTMCell(5, 3), torch.nn.LSTMCell(5, 3)
  _copy_weights(ours, theirs)
  x, h, c = randn(2, 5), randn(2, 3), randn(2, 3)
  (oh, oc), (th, tc) = ours(Tensor(x), (Tensor(h), Tensor(c))), theirs(torch.tensor(x), (torch.tensor(h), torch.tensor(c)))
  np.testing.assert_allclose(oh.numpy(), th.detach().numpy(), atol=1e-5)
  np.testing.assert_allclose(oc.numpy(), tc.detach().numpy(), atol=1e-5)
  _compare(ours, theirs, x)

def test_init_distributions():
  # torch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases
  l = nn.Linear(100, 400)
  w, b = l.weight.numpy(), l.bias.numpy()
  assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.09 and abs(w.std() - 0.1/np.sqrt(3)) < 0.003
  assert np.abs(b).max() <= 0.1
  c = nn.Conv2d(8, 16, 3)
  assert np.abs(c.weight.numpy()).max() <= 1/np.sqrt(72) and c.weight.shape == (16, 8, 3, 3)
  ct = nn.ConvTranspose2d(8, 16, 3)
  assert ct.weight.shape == (8, 16, 3, 3) and np.abs(ct.weight.numpy()).max() <= 1/np.sqrt(16*9)
  e = nn.Embedding(1000, 64).weight.numpy()
  assert abs(e.std() - 1) < 0.02 and abs(e.mean()) < 0.02
  bn = nn.BatchNorm2d(3)
  assert bn.weight.tolist() == [1, 1, 1] and bn.bias.tolist() == [0, 0, 0] and bn.running_var.tolist() == [1, 1, 1]

def test_params_are_distinct_buffers():
  bn = nn.BatchNorm2d(3)
  # weight and running_var start equal but must never share a buffer
  bn.weight.assign(Tensor([5.0, 5.0, 5.0])).realize()
  assert bn.running_var.tolist() == [1, 1, 1]

def test_requires_grad_propagates():
  a = Tensor.zeros(3, requires_grad=True)
  assert (a * 2).requires_grad is True and not (a * 2).is_leaf and a.is_leaf
  assert not (a > 1).requires_grad  # comparisons aren't differentiable
  assert not a.detach().requires_grad and not (a.detach() * 2).requires_grad
  assert (Tensor([1.0, 2.0]) + a[:2]).requires_grad
  h = Tensor([1.0, 2.0, 3.0], requires_grad=True).contiguous()
  (h * h).sum().backward()
  np.testing.assert_allclose(h.grad.numpy(), [2, 4, 6])
  w = Tensor([1.0, 2.0], requires_grad=True).realize()
  assert (w * 3).requires_grad  # also after realize

def test_no_grad():
  w = Tensor([1.0, 2.0], requires_grad=True)
  with Tensor.no_grad():
    assert bool(Tensor.no_grad)
    y = w * 2
  assert not y.requires_grad and not bool(Tensor.no_grad)
  @Tensor.no_grad()
  def f(x): return x * 3
  assert not f(w).requires_grad
  # tinygrad's class flag
  Tensor.no_grad = True
  try: assert not (w * 2).requires_grad
  finally: Tensor.no_grad = False
  assert (w * 2).requires_grad
  # a result made under no_grad is cut from the graph, like torch
  with Tensor.no_grad(): z = w * 5
  (w * 1 + z).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), [1, 1])

def test_train_test_context():
  assert not Tensor.training
  with Tensor.train():
    assert Tensor.training
    with Tensor.test(): assert not Tensor.training and bool(Tensor.no_grad)
    assert Tensor.training and not bool(Tensor.no_grad)
  @Tensor.train()
  def f(): return Tensor.training
  assert f() and not Tensor.training

def test_bad_shapes():
  with pytest.raises(RuntimeError): nn.LayerNorm(4)(Tensor.ones(2, 5))
  with pytest.raises(ValueError): nn.Conv2d(3, 4, 3, groups=2)
