"""NV=1: the same driver-API runtime as CUDA (ops_cuda.py), under the name tinygrad users pick for NVIDIA GPUs."""
from tinygrad.runtime.ops_cuda import CUDADevice

class NVDevice(CUDADevice): pass
