# the names tinygrad scripts import from the package root
from tinygrad.tensor import Tensor                                    # noqa: F401
from tinygrad.engine.jit import TinyJit                               # noqa: F401
from tinygrad.uop.ops import UOp                                      # noqa: F401
from tinygrad.dtype import dtypes                                     # noqa: F401
from tinygrad.helpers import GlobalCounters, fetch, Context, getenv  # noqa: F401
from tinygrad.device import Device                                    # noqa: F401
Variable = UOp.variable
