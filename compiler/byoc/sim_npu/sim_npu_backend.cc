// The "sim_npu" backend: what the NPU target offloads (strata compile --target cpu,npu).
//
// The same pattern machinery as every BYOC backend decides what runs on the
// device: dense and conv2d with their bias and relu fused, matmul, and the
// elementwise add / multiply / relu the NPU's vector unit runs. The codegen emits
// no code: every composite becomes a call of a kernel of the plugged-in device
// ("sim_npu:dense_bias_relu"), an ExternalModule of format "device". The
// PlaceOnDevices pass then puts those calls' tensors in device memory and inserts
// the copies at the device's boundaries (transform/place_on_devices.h).
#include <string>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/byoc/backend.h"
#include "compiler/byoc/builtin_backends.h"

namespace strata::byoc {

using namespace graph;    // NOLINT: patterns over graph expressions
using namespace pattern;  // NOLINT

namespace {

constexpr const char* kDevice = "sim_npu";

const TensorStructInfoNode* F32Info(const Expr& e) {
  const auto* t = e && e->struct_info ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
  return t != nullptr && t->dtype == DataType::F32() && t->shape ? t : nullptr;
}

DFPattern F32(DFPattern p, int rank = -1) {
  return p.Where(
      [rank](const Expr& e) {
        const auto* t = F32Info(e);
        return t != nullptr && (rank < 0 || t->ndim == rank);
      },
      rank < 0 ? "f32" : "f32 rank " + std::to_string(rank));
}

bool IsOne(const PrimExpr& d) {
  const int64_t* c = tir::AsConstInt(d);
  return c != nullptr && *c == 1;
}

// The device's elementwise kernels broadcast only their second operand: its
// dims align with the first's last ones, each equal to it or 1 (docs/devices.md).
bool SecondBroadcastsToFirst(const Expr& a, const Expr& b) {
  const auto* ta = F32Info(a);
  const auto* tb = F32Info(b);
  if (ta == nullptr || tb == nullptr || tb->shape->size() > ta->shape->size()) return false;
  const size_t lead = ta->shape->size() - tb->shape->size();
  for (size_t i = 0; i < tb->shape->size(); ++i) {
    const PrimExpr& db = (*tb->shape)[i];
    if (!IsOne(db) && !analysis::ProveDimEqual(db, (*ta->shape)[lead + i])) return false;
  }
  return true;
}

bool BiasFits(const PatternMatch& m, const DFPattern& product, const DFPattern& bias, int channel_axis) {
  const auto* out = F32Info(m.Get(product));
  const auto* b = F32Info(m.Get(bias));
  if (out == nullptr || b == nullptr || b->ndim != 1) return false;
  size_t axis = channel_axis < 0 ? out->shape->size() - 1 : static_cast<size_t>(channel_axis);
  return axis < out->shape->size() && analysis::ProveDimEqual((*out->shape)[axis], (*b->shape)[0]);
}

std::vector<FusionPattern> Patterns() {
  std::vector<FusionPattern> patterns;
  {
    DFPattern x = F32(Wildcard(), 4), w = F32(Wildcard(), 4), b = Wildcard();
    // Groups = 1 only: what the device's convolution computes (the ONNX importer
    // and LegalizeOps' conv2d always spell the attribute out).
    DFPattern conv = IsOp("conv2d", {x, w}).HasAttr("groups", int64_t{1});
    DFPattern biased = IsOp("bias_add", {conv, b}).HasAttr("axis", int64_t{1});
    auto bias_fits = [=](const PatternMatch& m, const BlockMatcher&) { return BiasFits(m, conv, b, 1); };
    patterns.push_back({"sim_npu.conv2d_bias_relu", IsOp("relu", {biased}), {}, bias_fits});
    patterns.push_back({"sim_npu.conv2d_bias", biased, {}, bias_fits});
    patterns.push_back({"sim_npu.conv2d", conv, {}, nullptr});
  }
  {
    DFPattern x = F32(Wildcard()), w = F32(Wildcard(), 2), b = Wildcard();
    DFPattern dense = IsOp("dense", {x, w});
    DFPattern biased = IsOp("add", {dense, b});
    auto bias_fits = [=](const PatternMatch& m, const BlockMatcher&) { return BiasFits(m, dense, b, -1); };
    patterns.push_back({"sim_npu.dense_bias_relu", IsOp("relu", {biased}), {{dense, biased}}, bias_fits});
    patterns.push_back({"sim_npu.dense_bias", biased, {{dense, biased}}, bias_fits});
    patterns.push_back({"sim_npu.dense", dense, {}, nullptr});
  }
  {
    DFPattern a = F32(Wildcard()), b = F32(Wildcard());
    DFPattern matmul = IsOp("matmul", {a, b});
    auto ranks = [=](const PatternMatch& m, const BlockMatcher&) {
      return F32Info(m.Get(a))->ndim >= 2 && F32Info(m.Get(b))->ndim >= 2;
    };
    patterns.push_back({"sim_npu.matmul", matmul, {}, ranks});
  }
  for (const char* op : {"add", "multiply"}) {
    DFPattern a = F32(Wildcard()), b = F32(Wildcard());
    DFPattern call = IsOp(op, {a, b});
    // x * x is left to the host: a composite takes each distinct input once,
    // and the device kernel wants both operands (A, B, C).
    auto broadcast = [=](const PatternMatch& m, const BlockMatcher&) {
      return m.Get(a).get() != m.Get(b).get() && SecondBroadcastsToFirst(m.Get(a), m.Get(b));
    };
    patterns.push_back({std::string("sim_npu.") + (std::string(op) == "add" ? "add" : "mul"), call, {}, broadcast});
  }
  patterns.push_back({"sim_npu.relu", IsOp("relu", {F32(Wildcard())}), {}, nullptr});
  return patterns;
}

Expr Int(int64_t v) { return analysis::Int64Value(v); }

StatusOr<CodegenResult> SimNpuCodegen(const OffloadedFunction& offloaded) {
  CodegenResult result;
  result.module.format = "device";
  for (const CompositeCall& composite : offloaded.composites) {
    const std::string kernel = composite.pattern_name.substr(composite.pattern_name.find('.') + 1);
    ExternalCall call{std::string(kDevice) + ":" + kernel, {}};
    if (kernel.rfind("conv2d", 0) == 0) {
      const CallNode* conv = FindOpCall(composite.function, "conv2d");
      std::vector<int64_t> strides = IntsAttr(*conv, "strides", {1, 1});
      std::vector<int64_t> padding = IntsAttr(*conv, "padding", {0, 0, 0, 0});
      std::vector<int64_t> dilation = IntsAttr(*conv, "dilation", {1, 1});
      if (padding.size() == 2) padding = {padding[0], padding[1], padding[0], padding[1]};
      if (strides.size() != 2 || padding.size() != 4 || dilation.size() != 2) {
        return Status(ErrorStatus() << "composite '" << composite.function_name
                                    << "': conv2d attributes strides/padding/dilation have unexpected lengths");
      }
      // The device kernel's scalars: stride_h, stride_w, pad_top, pad_left,
      // pad_bottom, pad_right, dilation_h, dilation_w (after the output).
      for (int64_t v :
           {strides[0], strides[1], padding[0], padding[1], padding[2], padding[3], dilation[0], dilation[1]}) {
        call.extra_args.push_back(Int(v));
      }
    }
    result.module.symbols.push_back(call.symbol);
    result.composite_calls[composite.function_name] = std::move(call);
  }
  return result;
}

}  // namespace

Backend SimNpuBackend() {
  Backend backend;
  backend.name = kDevice;
  backend.description =
      "the simulated NPU device (vm/devices/sim_npu): dense / conv2d with bias and relu, matmul, add, multiply, relu";
  backend.patterns = Patterns();
  backend.codegen = SimNpuCodegen;
  return backend;
}

}  // namespace strata::byoc
