#!/usr/bin/env python3
"""GEMM and conv2d on one thread: the heuristics' main kernel alone, the whole call (packing copies and Python per call included) and torch,
timed in turns in one process (the thread's CPU time, best of IT rounds), so a loaded machine slows all three alike.
Usage: python3 extra/bench/bench_kernel.py [IT=12] [GEMM_SIZES=1024,2048]"""
import os, time
os.environ.setdefault("CPU_THREADS", "1")
import torch  # noqa: E402
from tinygrad import Tensor, Device  # noqa: E402
from tinygrad.opt.kernel import Kernel  # noqa: E402
from tinygrad.opt.heuristic import hand_coded_optimizations  # noqa: E402
from tinygrad.engine.realize import CompiledRunner, get_program, run_schedule  # noqa: E402

def case(name:str, flops:int, make, torch_fxn, rounds:int) -> None:
  sched = make().schedule()
  run_schedule(sched[:-1])
  si, ren = sched[-1], Device[Device.DEFAULT].renderer
  bufs = [b.ensure_allocated() for b in si.bufs]
  runner = CompiledRunner(get_program(si.ast, ren, hand_coded_optimizations(Kernel(si.ast, ren))))
  fxns = {"kernel": lambda: runner(bufs, {}, wait=False), "call": lambda: make().realize(), "torch": torch_fxn}
  best = dict.fromkeys(fxns, float("inf"))
  for _ in range(rounds):
    for k, f in fxns.items():
      st = time.thread_time()
      f()
      best[k] = min(best[k], time.thread_time() - st)
  g = {k: flops / t / 1e9 for k, t in best.items()}
  # (% peak: of the machine model's measured one-core FMA peak)
  peak = ren.machine.fma_gflops if ren.machine is not None else float("nan")
  print(f"| {name:28s} | {g['kernel']:7.1f} | {g['call']:7.1f} | {g['torch']:7.1f} | {g['kernel']/g['torch']:11.2f}x | "
        f"{g['call']/g['torch']:9.2f}x | {100*g['call']/peak:12.0f}% |")

def main():
  torch.set_num_threads(1)
  rounds = int(os.environ.get("IT", 12))
  print(f"device {Device.DEFAULT}, machine model {Device[Device.DEFAULT].renderer.machine}, one thread, GFLOP/s")
  print(f"| {'case':28s} | {'kernel':>7s} | {'call':>7s} | {'torch':>7s} | {'kernel/torch':>7s} | {'call/torch':>7s} | % peak (call) |")
  for n in (int(s) for s in os.environ.get("GEMM_SIZES", "1024,2048").split(",")):
    a, b = Tensor.randn(n, n).realize(), Tensor.randn(n, n).realize()
    at, bt = torch.randn(n, n), torch.randn(n, n)
    case(f"gemm {n} fp32", 2*n**3, lambda: a @ b, lambda: at @ bt, rounds)
  x, w = Tensor.randn(32, 64, 32, 32).realize(), Tensor.randn(64, 64, 3, 3).realize()
  xt, wt = torch.randn(32, 64, 32, 32), torch.randn(64, 64, 3, 3)
  case("conv2d b32 64->64 3x3 32x32", 2*32*64*64*9*30*30, lambda: x.conv2d(w), lambda: torch.nn.functional.conv2d(xt, wt), rounds)

if __name__ == "__main__": main()
