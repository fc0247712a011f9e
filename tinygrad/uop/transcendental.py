# tinygrad's module name for the polynomial helpers; they live with the codegen pass that uses them (nothing in tinygrad/ imports this)
from tinygrad.helpers import polyN
from tinygrad.codegen.transcendental import xexp2, xlog2, xsin, xpow, payne_hanek_reduction, cody_waite_reduction, frexp, rintk, pow2if, ilogb2k
from tinygrad.codegen.transcendental import ldexp2k, exponent_bias, exponent_mask, mantissa_bits, shr, shl, two_sum, two_prod
from tinygrad.codegen.transcendental import TRANSCENDENTAL_SUPPORTED_DTYPES

__all__ = ["polyN", "xexp2", "xlog2", "xsin", "xpow", "payne_hanek_reduction", "cody_waite_reduction", "frexp", "rintk", "pow2if", "ilogb2k",
           "ldexp2k", "exponent_bias", "exponent_mask", "mantissa_bits", "shr", "shl", "two_sum", "two_prod",
           "TRANSCENDENTAL_SUPPORTED_DTYPES"]
