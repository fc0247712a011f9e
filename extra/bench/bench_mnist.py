#!/usr/bin/env python3
"""The beautiful_mnist CNN's training step (Adam, batch BS=512) in tinygrad (under TinyJit) and the same model in PyTorch, in one run:
steps/s of each and the ratio. Random uint8 images stand in for MNIST (the speed doesn't depend on the pixels).
Usage: python3 extra/bench/bench_mnist.py [--cpu-time]   (env: BS=512, STEPS=10 timed steps after 3 warm-up steps, TORCH_THREADS=all cores)
The timed steps alternate between the two in rounds of ROUND=2 steps, so a load that comes and goes on a shared machine hits both alike.
--cpu-time: one thread each (CPU_THREADS=1, torch.set_num_threads(1)), timed by the process's CPU time: a fair figure on a loaded machine"""
import os, sys, time
from typing import Iterator
CPU_TIME = "--cpu-time" in sys.argv
if CPU_TIME: os.environ["CPU_THREADS"] = "1"   # before tinygrad starts its CPU device
import numpy as np  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from beautiful_mnist import Model, make_train_step  # noqa: E402
from tinygrad import Tensor, Device, dtypes, nn  # noqa: E402
from tinygrad.helpers import getenv  # noqa: E402

BS, STEPS = getenv("BS", 512), getenv("STEPS", 10)
clock = time.process_time if CPU_TIME else time.perf_counter

def batches(rng:np.random.Generator):
  while True: yield rng.integers(0, 256, (BS, 1, 28, 28), dtype=np.uint8), rng.integers(0, 10, (BS,), dtype=np.int32)

def timed_steps(step, make_inputs, warmup:int=3) -> Iterator[tuple[int, float]]:
  # warm up (the jit captures), then yield the time of each round of ROUND steps on fresh inputs
  for _ in range(warmup): step(*make_inputs())
  while True:
    inputs = [make_inputs() for _ in range(getenv("ROUND", 2))]
    st = clock()
    for x in inputs: step(*x)
    yield len(inputs), clock() - st

def bench_tinygrad(data) -> Iterator[tuple[int, float]]:
  model = Model()
  step = make_train_step(model, nn.optim.Adam(nn.state.get_parameters(model)))
  def inputs():
    x, y = next(data)
    return Tensor(x).realize(), Tensor(y).realize()
  assert step(*inputs()).dtype == dtypes.float32
  return timed_steps(lambda x, y: step(x, y).item(), inputs)

def bench_torch(data) -> Iterator[tuple[int, float]]:
  import torch
  torch.set_num_threads(1 if CPU_TIME else getenv("TORCH_THREADS", os.cpu_count() or 1))
  model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 5), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 5), torch.nn.ReLU(), torch.nn.BatchNorm2d(32), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3), torch.nn.ReLU(), torch.nn.BatchNorm2d(64), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(1), torch.nn.Linear(576, 10))
  opt = torch.optim.Adam(model.parameters())
  model.train()
  def step(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x.float() / 255.0), y)
    loss.backward()
    opt.step()
    return loss.item()
  def inputs():
    x, y = next(data)
    return torch.from_numpy(x), torch.from_numpy(y).long()
  return timed_steps(step, inputs)

if __name__ == "__main__":
  runs = [bench_tinygrad(batches(np.random.default_rng(0))), bench_torch(batches(np.random.default_rng(0)))]
  done, secs = [0, 0], [0.0, 0.0]
  while done[0] < STEPS:
    for i, run in enumerate(runs):
      n, t = next(run)
      done[i], secs[i] = done[i] + n, secs[i] + t
  ours, theirs = done[0] / secs[0], done[1] / secs[1]
  how = "one thread each, process CPU time" if CPU_TIME else f"wall time, torch on {os.cpu_count()} cores here"
  print(f"MNIST CNN training step, batch {BS}, {STEPS} timed steps, tinygrad on {Device.DEFAULT}, torch on CPU ({how})")
  print(f"| {'framework':10s} | {'steps/s':>8s} | {'ratio vs torch':>14s} |")
  print(f"|{'-'*12}|{'-'*10}|{'-'*16}|")
  print(f"| {'tinygrad':10s} | {ours:8.2f} | {ours/theirs:13.2f}x |")
  print(f"| {'torch':10s} | {theirs:8.2f} | {1.0:13.2f}x |")
