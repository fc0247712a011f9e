# the tensor core descriptions are facts of the hardware and live beside the renderers; the optimizer finds them here too
from tinygrad.renderer.tc import *  # noqa: F401,F403
from tinygrad.renderer.tc import TensorCore, mul_factors, tc_operand  # noqa: F401
