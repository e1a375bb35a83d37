// PlaceOnDevices: device allocations, to_device / to_host at the boundaries
// (see place_on_devices.h).
#include "compiler/transform/place_on_devices.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/memory_ops.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

bool IsTensor(const Expr& e) { return e->struct_info && e->struct_info.as<TensorStructInfoNode>() != nullptr; }

class DevicePlacer : public Normalizer {
 public:
  DevicePlacer(const ir::IRModule* module, std::set<std::string> devices)
      : Normalizer(module), devices_(std::move(devices)) {}

  void PrepareFunction(const std::string&, const Function& func) override {
    device_of_.clear();
    to_device_.clear();
    to_host_.clear();
    device_outputs_.clear();
    // The allocations that receive a device call's result live on that device.
    class OutputFinder : public ExprVisitor {
     public:
      explicit OutputFinder(DevicePlacer* placer) : placer_(placer) {}

     protected:
      void VisitBinding(const Binding& binding) override {
        ExprVisitor::VisitBinding(binding);
        std::string device;
        std::vector<Expr> args;
        if (!placer_->DeviceCall(binding.value, &device, &args)) return;
        for (auto it = args.rbegin(); it != args.rend(); ++it) {
          if (const auto* var = it->as<VarNode>(); var && IsTensor(*it)) {
            placer_->device_outputs_[var] = device;
            break;
          }
        }
      }

     private:
      DevicePlacer* placer_;
    } finder(this);
    finder.VisitExpr(func->body);
  }

  // A call of a device kernel: "<device>:<kernel>" with <device> a device of the module.
  bool DeviceCall(const Expr& value, std::string* device, std::vector<Expr>* args) const {
    analysis::PackedCall packed;
    if (!analysis::MatchCallPacked(value.as<CallNode>(), &packed)) return false;
    size_t colon = packed.name.find(':');
    if (colon == std::string::npos || !devices_.count(packed.name.substr(0, colon))) return false;
    *device = packed.name.substr(0, colon);
    *args = std::move(packed.args);
    return true;
  }

 protected:
  void RewriteBinding(const Binding& binding) override {
    std::string device;
    std::vector<Expr> args;
    auto output = device_outputs_.find(binding.var.get());
    if (output != device_outputs_.end()) return AllocateOnDevice(binding, output->second);
    if (DeviceCall(binding.value, &device, &args)) return EmitDeviceCall(binding, device);
    if (const auto* alias = binding.value.as<VarNode>()) {
      // An alias of a device tensor is the same device tensor.
      Expr source = Normalizer::MutateVar(binding.value, alias);
      Normalizer::EmitBinding(binding, source);
      auto it = device_of_.find(source.as<VarNode>());
      if (it != device_of_.end()) device_of_[NewVar(binding)] = it->second;
      return;
    }
    Normalizer::RewriteBinding(binding);  // host uses: MutateVar copies device tensors out
  }

  // Every use outside device calls and aliases reads on the host.
  Expr MutateVar(const Expr& self, const VarNode* op) override {
    Expr mapped = Normalizer::MutateVar(self, op);
    if (placing_device_call_) return mapped;
    const auto* var = mapped.as<VarNode>();
    auto device = var ? device_of_.find(var) : device_of_.end();
    if (device == device_of_.end()) return mapped;
    auto copied = to_host_.find(var);
    if (copied != to_host_.end()) return copied->second;
    Var host = Emit(var->name + "_host", analysis::ToHost(mapped));
    to_host_.emplace(var, host);
    return host;
  }

  // A copy is a variable of its block (a dataflow variable is invisible after
  // it): copies are reused within a block only.
  void MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) override {
    to_device_.clear();
    to_host_.clear();
    Normalizer::MutateBindingBlock(block, out);
    to_device_.clear();
    to_host_.clear();
  }

  // Copies made in a branch exist only there.
  Expr MutateBranch(const Expr& branch) override {
    auto saved_device = to_device_;
    auto saved_host = to_host_;
    Expr result = Normalizer::MutateBranch(branch);
    to_device_ = std::move(saved_device);
    to_host_ = std::move(saved_host);
    return result;
  }

 private:
  const VarNode* NewVar(const Binding& binding) {
    return Normalizer::MutateVar(binding.var, binding.var.get()).as<VarNode>();
  }

  void AllocateOnDevice(const Binding& binding, const std::string& device) {
    placing_device_call_ = true;
    Expr value = MutateExpr(binding.value);
    placing_device_call_ = false;
    const auto* call = value.as<CallNode>();
    if (failed() || !call || !analysis::IsOpCall(call, ops::kAllocTensor) || call->args.size() != 2) {
      Fail("the output of a '" + device +
           "' kernel call must be an alloc_tensor (run PlaceOnDevices right after "
           "CallTIRRewrite)");
      return;
    }
    EmitBinding(binding, Annotate(analysis::AllocDeviceTensor(call->args[0], call->args[1], device)));
    device_of_[NewVar(binding)] = device;
  }

  void EmitDeviceCall(const Binding& binding, const std::string& device) {
    placing_device_call_ = true;
    Expr value = MutateExpr(binding.value);
    placing_device_call_ = false;
    if (failed()) return;
    analysis::PackedCall packed;
    analysis::MatchCallPacked(value.as<CallNode>(), &packed);
    // Tensors (inputs, then the output last) first, then the scalars.
    std::vector<Expr> tensors, scalars;
    for (const Expr& arg : packed.args) (IsTensor(arg) ? tensors : scalars).push_back(arg);
    for (size_t i = 0; i + 1 < tensors.size(); ++i) tensors[i] = OnDevice(tensors[i], device);
    std::vector<Expr> ordered = std::move(tensors);
    ordered.insert(ordered.end(), scalars.begin(), scalars.end());
    EmitBinding(binding,
                Annotate(analysis::MakeCallPacked(packed.name, std::move(ordered), TupleStructInfoNode::make({}))));
  }

  // `arg` on `device`: itself when it is already there, else its (one) copy.
  Expr OnDevice(const Expr& arg, const std::string& device) {
    const void* key = arg.get();
    if (const auto* var = arg.as<VarNode>()) {
      auto there = device_of_.find(var);
      if (there != device_of_.end()) {
        if (there->second == device) return arg;
        Fail("a tensor on '" + there->second + "' is passed to a '" + device + "' kernel (no device-to-device path)");
        return arg;
      }
    }
    auto copied = to_device_.find({key, device});
    if (copied != to_device_.end()) return copied->second;
    std::string hint = arg.as<VarNode>() ? arg.as<VarNode>()->name + "_" + device : "const_" + device;
    Var on_device = Emit(hint, analysis::ToDevice(arg, device));
    to_device_.emplace(std::make_pair(key, device), on_device);
    device_of_[on_device.get()] = device;
    return on_device;
  }

  std::set<std::string> devices_;
  std::map<const VarNode*, std::string> device_outputs_;          // original alloc vars -> device
  std::map<const VarNode*, std::string> device_of_;               // new vars on a device
  std::map<std::pair<const void*, std::string>, Var> to_device_;  // host value -> its device copy
  std::map<const VarNode*, Var> to_host_;                         // device var -> its host copy
  bool placing_device_call_ = false;
};

}  // namespace

StatusOr<ir::IRModule> PlaceOnDevices(ir::IRModule module) {
  std::set<std::string> devices;
  for (const ir::ExternalModule& m : module.external_modules()) {
    if (m.format == "device") devices.insert(m.backend);
  }
  if (devices.empty()) return module;
  DevicePlacer placer(&module, std::move(devices));
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(placer, &module));
  return module;
}

STRATA_REGISTER_PASS(PlaceOnDevices, PlaceOnDevices)

}  // namespace strata::transform
