"""Small PyTorch models exported with torch.onnx.export (random weights) for tests and benchmarks: ResNet-18 and a BERT-like encoder.
ResNet-18 is defined here with torch.nn (torchvision is not a dependency)."""
from __future__ import annotations
import io

def resnet18(num_classes: int = 1000):
  import torch.nn as nn
  class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
      super().__init__()
      self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
      self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
      self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else None
    def forward(self, x):
      y = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
      return (y + (self.down(x) if self.down is not None else x)).relu()
  class ResNet18(nn.Module):
    def __init__(self):
      super().__init__()
      self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
      chans = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
      self.layers = nn.Sequential(*[nn.Sequential(Block(a, b, s), Block(b, b, 1)) for a, b, s in chans])
      self.fc = nn.Linear(512, num_classes)
    def forward(self, x): return self.fc(self.layers(self.stem(x)).mean((2, 3)))
  return ResNet18()

def bert_like(vocab: int = 1000, hidden: int = 128, layers: int = 2, heads: int = 4, seq: int = 32):
  import torch, torch.nn as nn
  class Layer(nn.Module):
    def __init__(self):
      super().__init__()
      self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
      self.ff1, self.ff2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
      self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
    def forward(self, x, bias):
      b, s, _ = x.shape
      q, k, v = self.qkv(x).reshape(b, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4).unbind(0)
      att = ((q @ k.transpose(-1, -2)) / (hidden // heads) ** 0.5 + bias).softmax(-1)
      x = self.n1(x + self.proj((att @ v).transpose(1, 2).reshape(b, s, hidden)))
      return self.n2(x + self.ff2(nn.functional.gelu(self.ff1(x))))
  class Encoder(nn.Module):
    def __init__(self):
      super().__init__()
      self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
      self.norm = nn.LayerNorm(hidden)
      self.layers = nn.ModuleList([Layer() for _ in range(layers)])
      self.head = nn.Linear(hidden, 2)
    def forward(self, ids, mask):
      x = self.norm(self.tok(ids) + self.pos(torch.arange(ids.shape[1])))
      bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
      for layer in self.layers: x = layer(x, bias)
      return self.head(x[:, 0])
  return Encoder()

def export(model, args: tuple, names: list[str]) -> bytes:
  """The model's ONNX bytes (eval mode, opset 17, the legacy TorchScript exporter so no onnxscript is needed)."""
  import torch
  model.eval()
  f = io.BytesIO()
  with torch.no_grad():
    torch.onnx.export(model, args, f, input_names=names, output_names=["out"], opset_version=17, dynamo=False)
  return f.getvalue()
