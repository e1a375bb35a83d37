// Lowering of scalar expressions (PrimExpr) to LLVM IR.
//
// Semantics follow prim_expr.h: integer // and % round toward negative infinity,
// min/max on floats behave like std::min/std::max, float comparisons are ordered
// except != (as in C), casts from float to integer saturate (no poison), and
// && / || skip their right operand when it could trap (a load or a division) and
// the left operand already decides the result. Float arithmetic is IEEE with only
// contraction (fused multiply-add) allowed.
#include <cassert>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "compiler/codegen/llvm/function_lowering.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

using tir::PrimExprKind;

// True if evaluating the expression could fault: a memory load, or an integer
// division by a divisor that is not a non-zero constant.
class MayTrapVisitor : public tir::PrimExprVisitor {
 public:
  bool may_trap = false;

 protected:
  void VisitBufferLoad(const tir::BufferLoadNode* op) override { may_trap = true; }
  void VisitBinaryOp(const tir::BinaryOpNode* op) override {
    if (op->kind == PrimExprKind::kFloorDiv || op->kind == PrimExprKind::kFloorMod) {
      const int64_t* divisor = tir::AsConstInt(op->b);
      if (divisor == nullptr || *divisor == 0) may_trap = true;
    }
    tir::PrimExprVisitor::VisitBinaryOp(op);
  }
};

bool MayTrap(const tir::PrimExpr& expr) {
  MayTrapVisitor visitor;
  visitor.VisitExpr(expr);
  return visitor.may_trap;
}

}  // namespace

llvm::Value* FunctionLowering::Undef(DataType dtype) { return llvm::UndefValue::get(km_.ValueType(dtype)); }

llvm::Value* FunctionLowering::LowerIndex(const tir::PrimExpr& expr) {
  llvm::Value* value = LowerExpr(expr);
  DataType dtype = expr.dtype();
  if (dtype.bits() == 64 && dtype.is_integral()) return value;
  if (!dtype.is_integral() && !dtype.is_bool()) {
    Fail("index or extent of dtype " + dtype.ToString() + " (integers expected)");
    return b_.getInt64(0);
  }
  return dtype.is_int() ? b_.CreateSExt(value, b_.getInt64Ty()) : b_.CreateZExt(value, b_.getInt64Ty());
}

llvm::Value* FunctionLowering::LowerExpr(const tir::PrimExpr& expr) {
  switch (expr->kind) {
    case PrimExprKind::kIntImm: {
      const auto* op = expr.as<tir::IntImmNode>();
      return llvm::ConstantInt::get(km_.ValueType(op->dtype), static_cast<uint64_t>(op->value), /*isSigned=*/true);
    }
    case PrimExprKind::kFloatImm: {
      const auto* op = expr.as<tir::FloatImmNode>();
      return llvm::ConstantFP::get(km_.ValueType(op->dtype), op->value);
    }
    case PrimExprKind::kVar: {
      const auto* op = expr.as<tir::VarNode>();
      auto it = vars_.find(op);
      if (it != vars_.end()) return it->second;
      Fail("variable '" + op->name +
           "' is used but not bound (not a parameter, a shape variable, a loop variable or a let)");
      return Undef(op->dtype);
    }
    case PrimExprKind::kNot: {
      const auto* op = expr.as<tir::NotNode>();
      return b_.CreateNot(LowerExpr(op->a));
    }
    case PrimExprKind::kSelect: {
      const auto* op = expr.as<tir::SelectNode>();
      llvm::Value* condition = LowerExpr(op->condition);
      llvm::Value* true_value = LowerExpr(op->true_value);
      llvm::Value* false_value = LowerExpr(op->false_value);
      return b_.CreateSelect(condition, true_value, false_value);
    }
    case PrimExprKind::kCast: {
      const auto* op = expr.as<tir::CastNode>();
      return LowerCast(op->dtype, op->value.dtype(), LowerExpr(op->value));
    }
    case PrimExprKind::kCall: return LowerCall(expr.as<tir::CallNode>());
    case PrimExprKind::kBufferLoad: {
      const auto* op = expr.as<tir::BufferLoadNode>();
      llvm::Value* address = BufferAddress(op->buffer, op->indices);
      llvm::Type* memory_type = km_.MemoryType(op->dtype);
      llvm::Value* value = b_.CreateAlignedLoad(memory_type, address, llvm::Align(op->buffer->dtype.bytes()));
      return op->dtype.is_bool() ? b_.CreateICmpNE(value, llvm::ConstantInt::get(memory_type, 0)) : value;
    }
    default: break;
  }
  const auto* op = expr.as<tir::BinaryOpNode>();
  assert(op && "unknown PrimExpr kind");
  return LowerBinary(op);
}

llvm::Value* FunctionLowering::LowerBinary(const tir::BinaryOpNode* op) {
  if ((op->kind == PrimExprKind::kAnd || op->kind == PrimExprKind::kOr) && MayTrap(op->b)) {
    return LowerShortCircuit(op);
  }
  DataType t = op->a.dtype();
  llvm::Value* a = LowerExpr(op->a);
  llvm::Value* b = LowerExpr(op->b);
  const bool is_float = t.is_float();
  const bool is_signed = t.is_int();
  // i64 is the index type: no-signed-wrap lets loop analyses reason about
  // indices. Narrower integers wrap, as numpy's do.
  const bool nsw = is_signed && t.bits() == 64;
  switch (op->kind) {
    case PrimExprKind::kAdd: return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, nsw);
    case PrimExprKind::kSub: return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, nsw);
    case PrimExprKind::kMul: return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, nsw);
    case PrimExprKind::kDiv:
      if (is_float) return b_.CreateFDiv(a, b);
      return is_signed ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
    case PrimExprKind::kFloorDiv:
    case PrimExprKind::kFloorMod: {
      if (is_float) {
        // Not produced by the IR constructors; kept total for robustness.
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        return op->kind == PrimExprKind::kFloorDiv ? q : b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      if (!is_signed) return op->kind == PrimExprKind::kFloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
      // Truncating division, then one step toward -inf when the remainder is
      // non-zero and its sign differs from the divisor's.
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
      if (op->kind == PrimExprKind::kFloorDiv) return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
      return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    }
    case PrimExprKind::kMin:
      if (is_float) return b_.CreateSelect(b_.CreateFCmpOLT(b, a), b, a);  // std::min(a, b)
      return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case PrimExprKind::kMax:
      if (is_float) return b_.CreateSelect(b_.CreateFCmpOLT(a, b), b, a);  // std::max(a, b)
      return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case PrimExprKind::kEQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case PrimExprKind::kNE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case PrimExprKind::kLT:
      if (is_float) return b_.CreateFCmpOLT(a, b);
      return is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case PrimExprKind::kLE:
      if (is_float) return b_.CreateFCmpOLE(a, b);
      return is_signed ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case PrimExprKind::kGT:
      if (is_float) return b_.CreateFCmpOGT(a, b);
      return is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case PrimExprKind::kGE:
      if (is_float) return b_.CreateFCmpOGE(a, b);
      return is_signed ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case PrimExprKind::kAnd: return b_.CreateAnd(a, b);
    case PrimExprKind::kOr: return b_.CreateOr(a, b);
    default: break;
  }
  assert(false && "unknown binary operator");
  return Undef(op->dtype);
}

llvm::Value* FunctionLowering::LowerShortCircuit(const tir::BinaryOpNode* op) {
  const bool is_and = op->kind == PrimExprKind::kAnd;
  llvm::Value* lhs = LowerExpr(op->a);
  llvm::BasicBlock* lhs_end = b_.GetInsertBlock();
  llvm::BasicBlock* rhs_block = llvm::BasicBlock::Create(km_.context(), is_and ? "and.rhs" : "or.rhs", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(km_.context(), is_and ? "and.end" : "or.end", fn_);
  if (is_and) {
    b_.CreateCondBr(lhs, rhs_block, done);
  } else {
    b_.CreateCondBr(lhs, done, rhs_block);
  }
  b_.SetInsertPoint(rhs_block);
  llvm::Value* rhs = LowerExpr(op->b);
  llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
  phi->addIncoming(b_.getInt1(!is_and), lhs_end);
  phi->addIncoming(rhs, rhs_end);
  return phi;
}

llvm::Value* FunctionLowering::LowerCast(DataType to, DataType from, llvm::Value* value) {
  if (to == from) return value;
  if (to.is_handle() || from.is_handle() || to.is_void() || from.is_void()) {
    Fail("cast from " + from.ToString() + " to " + to.ToString() + " is not supported");
    return Undef(to);
  }
  llvm::Type* type = km_.ValueType(to);
  if (to.is_bool()) {
    if (from.is_float()) return b_.CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0.0));
    return b_.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
  }
  if (from.is_bool()) return to.is_float() ? b_.CreateUIToFP(value, type) : b_.CreateZExt(value, type);
  if (from.is_integral() && to.is_integral()) return b_.CreateIntCast(value, type, /*isSigned=*/from.is_int());
  if (from.is_integral()) return from.is_int() ? b_.CreateSIToFP(value, type) : b_.CreateUIToFP(value, type);
  if (to.is_integral()) {
    // Saturating conversion: out-of-range and NaN inputs give a defined value
    // instead of poison that could later reach an index.
    llvm::Intrinsic::ID id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {type, value->getType()}, {value});
  }
  return b_.CreateFPCast(value, type);
}

// exp(x), with x below the smallest normal result's logarithm giving 0 and x
// above the largest finite result's giving +inf: the vector exp of libmvec
// (which LLVM's vectorizer calls) takes a scalar path for a whole vector when
// any lane is out of its range. A causal attention mask puts -inf or -FLT_MAX
// in half of a softmax's lanes (12 x 64 x 64 scores: 32 us unmasked, 220 us
// masked), and a sigmoid of an activation below -88.7 (exp(-x) in SiLU)
// overflows (EfficientNet-B0's first 1x1 convolution with SiLU at 112 x 112:
// 1400 us, 380 us with no lane out of range). Such x never reach the call; the
// underflowing results are subnormal or 0, flushed to 0 as ONNX Runtime's
// MLAS does, the overflowing ones exactly +inf (the call computes exp(0) in
// their lanes).
llvm::Value* FunctionLowering::LowerExp(llvm::Value* x, DataType t) {
  if (t.bits() != 32 && t.bits() != 64) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  // log(FLT_MIN), log(DBL_MIN); log(FLT_MAX), log(DBL_MAX)
  const bool f32 = t.bits() == 32;
  llvm::Value* lowest = llvm::ConstantFP::get(x->getType(), f32 ? -87.33654 : -708.3964);
  llvm::Value* highest = llvm::ConstantFP::get(x->getType(), f32 ? 88.72283 : 709.782712893384);
  // Both comparisons are false for NaN, which keeps its way through exp.
  llvm::Value* underflows = b_.CreateFCmpOLT(x, lowest);
  llvm::Value* overflows = b_.CreateFCmpOGT(x, highest);
  llvm::Value* zero = llvm::ConstantFP::get(x->getType(), 0.0);
  llvm::Value* infinity = llvm::ConstantFP::getInfinity(x->getType());
  llvm::Value* in_range = b_.CreateSelect(b_.CreateOr(underflows, overflows), zero, x);
  llvm::Value* e = b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, in_range);
  return b_.CreateSelect(underflows, zero, b_.CreateSelect(overflows, infinity, e));
}

llvm::Value* FunctionLowering::LowerCall(const tir::CallNode* op) {
  std::vector<llvm::Value*> args;
  for (const tir::PrimExpr& arg : op->args) args.push_back(LowerExpr(arg));
  DataType t = op->dtype;
  if (op->op == tir::Intrinsic::kAbs && t.is_integral()) {
    if (t.is_uint()) return args[0];
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args[0], b_.getFalse());
  }
  if (!t.is_float()) {
    Fail(std::string(tir::IntrinsicName(op->op)) + " of dtype " + t.ToString() + " (floats expected)");
    return Undef(t);
  }
  switch (op->op) {
    case tir::Intrinsic::kExp: return LowerExp(args[0], t);
    case tir::Intrinsic::kLog: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, args[0]);
    case tir::Intrinsic::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0]);
    case tir::Intrinsic::kAbs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
    case tir::Intrinsic::kFloor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, args[0]);
    case tir::Intrinsic::kCeil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, args[0]);
    case tir::Intrinsic::kRound: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, args[0]);
    case tir::Intrinsic::kSin: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, args[0]);
    case tir::Intrinsic::kCos: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, args[0]);
    case tir::Intrinsic::kFmod: return b_.CreateFRem(args[0], args[1]);
    case tir::Intrinsic::kPow: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
    case tir::Intrinsic::kTanh:
    case tir::Intrinsic::kErf: {
      // No LLVM intrinsic: call libm. f16 computes in f32.
      const bool is_tanh = op->op == tir::Intrinsic::kTanh;
      llvm::Value* x = args[0];
      llvm::Type* compute_type = t.bits() == 64 ? b_.getDoubleTy() : b_.getFloatTy();
      std::string name = is_tanh ? "tanh" : "erf";
      if (t.bits() != 64) name += "f";
      if (t.bits() == 16) x = b_.CreateFPExt(x, compute_type);
      llvm::Value* result = b_.CreateCall(km_.MathFunction(name, compute_type), {x});
      if (t.bits() == 16) result = b_.CreateFPTrunc(result, km_.ValueType(t));
      return result;
    }
  }
  assert(false && "unknown intrinsic");
  return Undef(t);
}

llvm::Value* FunctionLowering::BufferAddress(const tir::Buffer& buffer, const std::vector<tir::PrimExpr>& indices) {
  auto it = buffers_.find(buffer.get());
  llvm::Type* element_type = km_.MemoryType(buffer->dtype);
  if (it == buffers_.end()) {
    Fail("buffer '" + buffer->name + "' is used outside its allocation (not a parameter or an enclosing alloc)");
    return llvm::PoisonValue::get(b_.getPtrTy());
  }
  if (indices.size() != buffer->shape.size()) {
    Fail("buffer '" + buffer->name + "' accessed with " + std::to_string(indices.size()) + " indices, it has " +
         std::to_string(buffer->shape.size()) + " dimensions");
    return llvm::PoisonValue::get(b_.getPtrTy());
  }
  // Row-major: ((i0 * d1 + i1) * d2 + i2) ...
  llvm::Value* offset = b_.getInt64(0);
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d > 0) offset = b_.CreateNSWMul(offset, LowerIndex(buffer->shape[d]));
    offset = d == 0 ? LowerIndex(indices[d]) : b_.CreateNSWAdd(offset, LowerIndex(indices[d]));
  }
  return b_.CreateInBoundsGEP(element_type, it->second, offset);
}

}  // namespace strata::codegen
