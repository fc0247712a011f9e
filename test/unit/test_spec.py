import unittest
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, ThreadId, ThreadKind
from tinygrad.uop.spec import tensor_uop_spec, kernel_ast_spec, program_spec, type_verify, verify_graph, shared_spec
from tinygrad.shape.shapetracker import ShapeTracker

def c(v, dt=dtypes.int32) -> UOp: return UOp.const(dt, v)

class SpecTest(unittest.TestCase):
  def good(self, sink:UOp, spec): self.assertTrue(verify_graph(sink, spec))
  def bad(self, sink:UOp, spec, msg:str|None=None):
    with self.assertRaises(RuntimeError) as cm: verify_graph(sink, spec)
    if msg is not None: self.assertIn(msg, str(cm.exception))

class TestTensorSpec(SpecTest):
  def setUp(self):
    self.buf = UOp.new_buffer("CPU", 16, dtypes.float32)
    self.x = self.buf.reshape((4, 4))
  def test_good(self):
    x = self.x
    one = UOp.const(dtypes.float32, 1.0, device="CPU", shape=(4, 4))
    y = (x + one).permute((1, 0)).pad(((0, 1), (0, 0))).shrink(((0, 4), (1, 3))).expand((4, 2)).flip((True, False))
    r = (x * x).r(Ops.ADD, (1,)).contiguous().detach()
    cmp = (x < one).where(x, one)
    cast = x.cast(dtypes.int32).bitcast(dtypes.float32)
    cp = x.copy_to_device("DISK")
    a = self.buf.assign(UOp.new_buffer("CPU", 16, dtypes.float32))
    self.good(UOp.sink(y, r, cmp, cast, cp, a), tensor_uop_spec)
  def test_symbolic(self):
    v = UOp.variable("n", 1, 10)
    self.good(UOp.sink(v.bind(3), v*2+1), tensor_uop_spec)
  def test_bad_dtype_mix(self):
    x = self.x
    self.bad(UOp(Ops.ADD, dtypes.float32, (x, x.cast(dtypes.int32))).sink(), tensor_uop_spec, "Ops.ADD")
  def test_bad_comparison_dtype(self):
    self.bad(UOp(Ops.CMPLT, dtypes.float32, (self.x, self.x)).sink(), tensor_uop_spec, "CMPLT")
  def test_bad_shapes(self):
    y = UOp.new_buffer("CPU", 8, dtypes.float32).reshape((2, 4))
    self.bad(UOp(Ops.ADD, dtypes.float32, (self.x, y)).sink(), tensor_uop_spec, "ADD")
  def test_bad_buffer(self):
    b = UOp(Ops.BUFFER, dtypes.float32, (UOp(Ops.UNIQUE, arg=10**9), UOp(Ops.DEVICE, arg="CPU")), 1.5)
    self.bad(b.sink(), tensor_uop_spec, "BUFFER")
    self.bad(UOp(Ops.BUFFER, dtypes.float32, (UOp(Ops.DEVICE, arg="CPU"),), 4).sink(), tensor_uop_spec, "BUFFER")
  def test_bad_reduce(self):
    self.bad(UOp(Ops.REDUCE_AXIS, dtypes.float32, (self.x,), (Ops.SUB, (1,))).sink(), tensor_uop_spec, "REDUCE_AXIS")
    self.bad(UOp(Ops.REDUCE_AXIS, dtypes.float32, (self.x,), (Ops.ADD, (5,))).sink(), tensor_uop_spec, "REDUCE_AXIS")
  def test_bad_const(self):
    self.bad(UOp(Ops.CONST, dtypes.float32, (UOp(Ops.DEVICE, arg="CPU"),), 1).sink(), tensor_uop_spec, "CONST")   # an int arg for a float
    self.bad(UOp(Ops.CONST, dtypes.int32, (), 2.5).sink(), tensor_uop_spec, "CONST")   # (True would hash-cons onto an existing 1)
  def test_bad_movement_dtype(self):
    self.bad(UOp(Ops.RESHAPE, dtypes.int32, (self.buf,), (4, 4)).sink(), tensor_uop_spec, "RESHAPE")
  def test_bad_assign(self):
    self.bad(UOp(Ops.ASSIGN, dtypes.float32, (self.buf, UOp.new_buffer("CPU", 16, dtypes.int32))).sink(), tensor_uop_spec, "ASSIGN")
  def test_bad_bind(self):
    v = UOp.variable("n", 1, 10)
    self.bad(UOp(Ops.BIND, dtypes.int32, (v, c(11))).sink(), tensor_uop_spec, "BIND")
  def test_kernel_ops_not_tensor(self):
    self.bad(UOp.range(dtypes.int32, 4, 0).sink(), tensor_uop_spec, "RANGE")

class TestKernelAstSpec(SpecTest):
  def ast(self, out_dtype=dtypes.float32, reduce_op=Ops.ADD, view_arg=None):
    full, red = ShapeTracker.from_shape((4, 4)).to_uop(), ShapeTracker.from_shape((4, 1)).to_uop()
    g0, g1 = UOp(Ops.DEFINE_GLOBAL, out_dtype.ptr(4), arg=0), UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), arg=1)
    ld = UOp(Ops.LOAD, dtypes.float32, (g1, full))
    val = UOp(Ops.MUL, dtypes.float32, (ld, UOp(Ops.CONST, dtypes.float32, (full,), 2.0)))
    val = UOp(Ops.WHERE, dtypes.float32, (UOp(Ops.VALID, dtypes.bool, (full,)), val, UOp(Ops.CONST, dtypes.float32, (full,), 0.0)))
    r = UOp(Ops.REDUCE_AXIS, dtypes.float32, (val,), (reduce_op, (1,)))
    st = red if view_arg is None else UOp(Ops.VIEW, dtypes.void, (), view_arg)
    return UOp(Ops.STORE, dtypes.void, (g0, st, r)).sink()
  def test_good(self):
    self.good(self.ast(), kernel_ast_spec)
  def test_with_var(self):
    full = ShapeTracker.from_shape((4,)).to_uop()
    g0 = UOp(Ops.DEFINE_GLOBAL, dtypes.int32.ptr(4), arg=0)
    v = UOp.variable("n", 1, 10)
    self.good(UOp(Ops.STORE, dtypes.void, (g0, full, v+UOp(Ops.CONST, dtypes.int32, (full,), 1))).sink(), kernel_ast_spec)
  def test_bad_store_dtype(self):
    self.bad(self.ast(out_dtype=dtypes.int32), kernel_ast_spec, "STORE")
  def test_bad_reduce_op(self):
    self.bad(self.ast(reduce_op=Ops.WHERE), kernel_ast_spec, "REDUCE_AXIS")
  def test_bad_view(self):
    self.bad(self.ast(view_arg=(4, 1)), kernel_ast_spec, "VIEW")
  def test_bad_sink(self):
    self.bad(UOp.variable("n", 1, 10).sink(), kernel_ast_spec, "SINK")
  def test_bad_load_from_value(self):
    full = ShapeTracker.from_shape((4,)).to_uop()
    g0 = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(4), arg=0)
    ld = UOp(Ops.LOAD, dtypes.float32, (UOp(Ops.CONST, dtypes.float32, (full,), 1.0), full))
    self.bad(UOp(Ops.STORE, dtypes.void, (g0, full, ld)).sink(), kernel_ast_spec, "LOAD")
  def test_bad_define_global(self):
    full = ShapeTracker.from_shape((4,)).to_uop()
    g0 = UOp(Ops.DEFINE_GLOBAL, dtypes.float32, arg=0)
    self.bad(UOp(Ops.STORE, dtypes.void, (g0, full, UOp(Ops.CONST, dtypes.float32, (full,), 1.0))).sink(), kernel_ast_spec, "DEFINE_GLOBAL")
  def test_tensor_ops_not_kernel(self):
    self.bad(UOp.new_buffer("CPU", 4, dtypes.float32).sink(), kernel_ast_spec, "UNIQUE")

class TestProgramSpec(SpecTest):
  def setUp(self):
    self.g0, self.g1 = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), arg=0), UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), arg=1)
  def test_linear_loop(self):
    r = UOp.range(dtypes.int32, 16, 0)
    ld = self.g1.index(r).load()
    st = self.g0.index(r).store(ld * 2.0)
    end = UOp(Ops.ENDRANGE, dtypes.void, (r,))
    uops = [self.g0, self.g1, r, self.g1.index(r), ld, c(2.0, dtypes.float32), ld*2.0, self.g0.index(r), st, end]
    type_verify(uops, program_spec)
    type_verify(uops)   # program_spec is the default
  def test_reduce_and_acc(self):
    r0, r1 = UOp(Ops.SPECIAL, dtypes.int32, (), ThreadId.make(ThreadKind.GLOBAL, 0, 4)), UOp.range(dtypes.int32, 4, 1)
    val = self.g1.index(r0*4 + r1).load()
    red = UOp(Ops.REDUCE, dtypes.float32, (val, r1), Ops.ADD)
    self.good(self.g0.index(r0).store(red).sink(), program_spec)
    acc = UOp(Ops.DEFINE_ACC, dtypes.float32, (c(0.0, dtypes.float32), r1), (0,))
    asg = UOp(Ops.ASSIGN, dtypes.float32, (acc, acc + val))
    self.good(self.g0.index(r0).store(asg).sink(), program_spec)
  def test_gated_and_if(self):
    r = UOp.range(dtypes.int32, 16, 0)
    gate = r < 8
    ld = self.g1.index(r, gate).load()
    iff = UOp(Ops.IF, dtypes.void, (gate,))
    st = self.g0.index(r).store(ld)
    self.good(UOp.sink(st, UOp(Ops.ENDIF, dtypes.void, (iff,))), program_spec)
  def test_local_and_barrier(self):
    loc = UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(16, local=True), arg="temp0")
    lid = UOp(Ops.SPECIAL, dtypes.int32, (), ThreadId.make(ThreadKind.LOCAL, 0, 16))
    st = loc.index(lid).store(self.g1.index(lid).load())
    bar = UOp(Ops.BARRIER, dtypes.void, (st,))
    self.good(self.g0.index(lid).store(loc.index(lid).load(bar)).sink(), program_spec)
  def test_vectors(self):
    a, b = self.g1.index(c(0)).load(), self.g1.index(c(1)).load()
    v = UOp(Ops.VECTORIZE, dtypes.float32.vec(2), (a, b))
    s = v.gep(1) + v.gep(0)
    vc = UOp.const(dtypes.int32.vec(2), (1, 2))
    self.good(UOp.sink(self.g0.index(c(0)).store(s), self.g0.index(c(1)).store((v+v).gep(0)), vc), program_spec)
  def test_bad_range(self):
    self.bad(UOp(Ops.RANGE, dtypes.float32, (c(4.0, dtypes.float32),), 0).sink(), program_spec, "RANGE")
  def test_bad_index_not_pointer(self):
    ld = self.g1.index(c(0)).load()
    self.bad(UOp(Ops.INDEX, dtypes.float32, (ld, c(0))).sink(), program_spec, "INDEX")
  def test_bad_index_float_idx(self):
    self.bad(self.g1.index(c(1.0, dtypes.float32)).load().sink(), program_spec, "INDEX")
  def test_bad_store_dtype(self):
    st = UOp(Ops.STORE, dtypes.int32, (self.g0.index(c(0)), c(1.0, dtypes.float32)))
    self.bad(st.sink(), program_spec, "STORE")
    self.bad(self.g0.index(c(0)).store(c(1)).sink(), program_spec, "STORE")   # int value into a float buffer
  def test_bad_alu(self):
    x = self.g1.index(c(0)).load()
    self.bad(UOp(Ops.CMPLT, dtypes.int32, (x, x)).sink(), program_spec, "CMPLT")
    self.bad(UOp(Ops.ADD, dtypes.float32, (x, c(1))).sink(), program_spec, "ADD")
    self.bad(UOp(Ops.WHERE, dtypes.float32, (c(1), x, x)).sink(), program_spec, "WHERE")
    self.bad(UOp(Ops.IDIV, dtypes.float32, (x, x)).sink(), program_spec, "IDIV")
    self.bad(UOp(Ops.ADD, dtypes.float32, (x,)).sink(), program_spec, "ADD")
  def test_shift_and_where_ok(self):
    x = UOp.variable("x", 0, 10)
    self.good(UOp.sink(UOp(Ops.SHL, dtypes.int32, (x, UOp.const(dtypes.uint32, 2))), (x < 3).where(x, x+1)), program_spec)
    self.bad(UOp(Ops.SHL, dtypes.int32, (x, UOp.const(dtypes.float32, 2.0))).sink(), program_spec, "SHL")
  def test_bad_gep(self):
    v = UOp(Ops.VECTORIZE, dtypes.float32.vec(2), (c(1.0, dtypes.float32), c(2.0, dtypes.float32)))
    self.bad(UOp(Ops.GEP, dtypes.float32, (v,), (2,)).sink(), program_spec, "GEP")
  def test_bad_if(self):
    self.bad(UOp(Ops.IF, dtypes.void, (c(1),)).sink(), program_spec, "IF")
  def test_bad_define_local(self):
    self.bad(UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(16), arg="temp0").sink(), program_spec, "DEFINE_LOCAL")
  def test_tensor_ops_not_program(self):
    self.bad(UOp.new_buffer("CPU", 4, dtypes.float32).sink(), program_spec, "UNIQUE")

class TestTypeVerify(unittest.TestCase):
  def test_message_names_uop(self):
    bad = UOp(Ops.CMPLT, dtypes.int32, (c(1), c(2)))
    with self.assertRaises(RuntimeError) as cm: type_verify([c(1), c(2), bad], program_spec)
    msg = str(cm.exception)
    for part in ("at 2", "Ops.CMPLT", "dtypes.int", "Ops.CONST"): self.assertIn(part, msg)
  def test_false_beats_true(self):
    # a spec that rejects outright wins over one that accepts
    x = UOp.variable("x", 0, 10)
    type_verify([x], shared_spec)
    with self.assertRaises(RuntimeError): type_verify([x.sink()], kernel_ast_spec, shared_spec)
  def test_any_spec_accepts(self):
    r = UOp.range(dtypes.int32, 4, 0)
    with self.assertRaises(RuntimeError): type_verify([r], shared_spec)
    type_verify([r], shared_spec, program_spec)

if __name__ == "__main__":
  unittest.main()
