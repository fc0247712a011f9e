#!/usr/bin/env python3
# the first thing to run: a few lazy tensor ops, fused into kernels and run on the default device
from tinygrad import Tensor, Device, GlobalCounters

a = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
b = Tensor([[0.5], [2.0]])
c = (a * b + 1).sum(axis=1)                # nothing runs yet: c is a graph
print(f"device: {Device.DEFAULT}")
print("a * b + 1, summed over rows:", c.tolist())
m = Tensor.arange(9, dtype="float32").reshape(3, 3)
print("matmul:", (m @ m.T).tolist())
print(f"kernels run: {GlobalCounters.kernel_count}")
