# operator maths shared by UOp, UPat and Tensor: each class only says how to build one ALU op and one constant
from __future__ import annotations
from typing import TypeVar, Any
from tinygrad.uop import Ops

T = TypeVar("T", bound="MathTrait")

class MathTrait:
  __slots__ = ()  # so UOp and UPat can declare their own slots (UOp adds __dict__ and __weakref__ itself)
  # subclasses implement these two
  def alu(self:T, op:Ops, *src:Any) -> T: raise NotImplementedError
  def const_like(self:T, b:Any) -> T: raise NotImplementedError

  def _binop(self:T, op:Ops, x:Any, reverse:bool) -> T: return self.ufix(x).alu(op, self) if reverse else self.alu(op, self.ufix(x))
  def ufix(self:T, x:Any) -> T: return self.const_like(x) if not isinstance(x, MathTrait) else x  # type: ignore[return-value]
  def logical_not(self:T) -> T: return self.ne(True)
  def neg(self:T) -> T:
    from tinygrad.dtype import dtypes
    dtype = getattr(self, "dtype", None)
    return self.logical_not() if dtype is not None and dtype.scalar() == dtypes.bool else self * (-1)
  def add(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.ADD, x, reverse)
  def mul(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.MUL, x, reverse)
  def bitwise_and(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.AND, x, reverse)
  def bitwise_or(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.OR, x, reverse)
  def bitwise_xor(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.XOR, x, reverse)
  def idiv(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.IDIV, x, reverse)
  def mod(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.MOD, x, reverse)
  def sub(self:T, x:Any, reverse=False) -> T: return self.ufix(x).alu(Ops.ADD, -self) if reverse else self.alu(Ops.ADD, self.ufix(-x))
  def div(self:T, x:Any, reverse=False) -> T: return (self.ufix(x)*self.alu(Ops.RECIP)) if reverse else (self*self.ufix(x).alu(Ops.RECIP))

  def __neg__(self): return self.neg()
  def __add__(self, x): return self.add(x)
  def __sub__(self, x): return self.sub(x)
  def __mul__(self, x): return self.mul(x)
  def __truediv__(self, x): return self.div(x)
  def __floordiv__(self, x): return self.idiv(x)  # ints only; Tensor overrides for floats
  def __mod__(self, x): return self.mod(x)
  def __and__(self, x): return self.bitwise_and(x)
  def __or__(self, x): return self.bitwise_or(x)
  def __xor__(self, x): return self.bitwise_xor(x)
  def __radd__(self, x): return self.add(x, True)
  def __rsub__(self, x): return self.sub(x, True)
  def __rmul__(self, x): return self.mul(x, True)
  def __rtruediv__(self, x): return self.div(x, True)
  def __rfloordiv__(self, x): return self.idiv(x, True)
  def __rmod__(self, x): return self.mod(x, True)
  def __rand__(self, x): return self.bitwise_and(x, True)
  def __ror__(self, x): return self.bitwise_or(x, True)
  def __rxor__(self, x): return self.bitwise_xor(x, True)

  def lt(self:T, x:Any) -> T: return self.alu(Ops.CMPLT, self.ufix(x))
  def gt(self:T, x:Any) -> T: return self.ufix(x).alu(Ops.CMPLT, self)
  def ne(self:T, x:Any) -> T: return self.alu(Ops.CMPNE, self.ufix(x))
  def eq(self:T, x:Any) -> T: return self.ne(x).logical_not()
  def ge(self:T, x:Any) -> T: return self.lt(x).logical_not()
  def le(self:T, x:Any) -> T: return self.gt(x).logical_not()
  def __lt__(self, x): return self.lt(x)
  def __gt__(self, x): return self.gt(x)
  def __ge__(self, x): return self.ge(x)
  def __le__(self, x): return self.le(x)

  def lshift(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.SHL, x, reverse)
  def rshift(self:T, x:Any, reverse=False) -> T: return self._binop(Ops.SHR, x, reverse)
  def __lshift__(self, x): return self.lshift(x)
  def __rshift__(self, x): return self.rshift(x)
  def __rlshift__(self, x): return self.lshift(x, True)
  def __rrshift__(self, x): return self.rshift(x, True)

  def maximum(self:T, x:Any) -> T: return self.alu(Ops.MAX, self.ufix(x))
  def minimum(self:T, x:Any) -> T: return -(-self).maximum(-self.ufix(x))
  def where(self:T, x:Any, y:Any) -> T:
    if isinstance(x, MathTrait): return self.alu(Ops.WHERE, x, x.ufix(y))
    if isinstance(y, MathTrait): return self.alu(Ops.WHERE, y.ufix(x), y)
    raise TypeError("where needs at least one of x, y to be a UOp or Tensor")
  def threefry(self:T, seed:Any) -> T: return self.alu(Ops.THREEFRY, seed)
  def reciprocal(self:T) -> T: return self.alu(Ops.RECIP)
  def sqrt(self:T) -> T: return self.alu(Ops.SQRT)
  def sin(self:T) -> T: return self.alu(Ops.SIN)
  def log2(self:T) -> T: return self.alu(Ops.LOG2)
  def exp2(self:T) -> T: return self.alu(Ops.EXP2)
  def trunc(self:T) -> T: return self.alu(Ops.TRUNC)
  def pow(self:T, x:Any) -> T: return self.alu(Ops.POW, self.ufix(x))
