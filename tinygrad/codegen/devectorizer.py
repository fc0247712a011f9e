# tinygrad's module name for the symbolic rules the late codegen passes use
from tinygrad.uop.symbolic import sym

__all__ = ["sym"]
