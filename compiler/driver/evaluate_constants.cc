// EvaluateConstants: compile, load and run a constant-only function (see evaluate_constants.h).
#include "compiler/driver/evaluate_constants.h"

#include "compiler/driver/compile.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace strata::driver {
namespace {

StatusOr<std::shared_ptr<const graph::HostTensor>> ToHost(const vm::Value& value) {
  if (!value.is_tensor()) return ErrorStatus() << "a folded value is a " << value.kind_name() << ", not a tensor";
  const vm::Tensor& t = *value.tensor();
  auto host = std::make_shared<graph::HostTensor>();
  host->dtype = t.dtype();
  host->shape.assign(t.shape().begin(), t.shape().end());
  host->bytes.resize(static_cast<size_t>(t.num_bytes()));
  STRATA_RETURN_IF_ERROR(t.CopyToHost(host->bytes));
  return std::shared_ptr<const graph::HostTensor>(std::move(host));
}

}  // namespace

StatusOr<std::vector<std::shared_ptr<const graph::HostTensor>>> EvaluateConstants(ir::IRModule module,
                                                                                  const std::string& function) {
  CompileOptions options;
  options.fold_constants = false;  // what is evaluated here is what FoldConstants found
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, Compile(std::move(module), options));
  STRATA_ASSIGN_OR_RETURN(auto exe, vm::Executable::LoadFromBytes(bytes));
  vm::VirtualMachine machine(exe);
  STRATA_ASSIGN_OR_RETURN(vm::Value result, machine.Invoke(function, {}));
  if (!result.is_tuple()) return ErrorStatus(StatusCode::kInternal) << "@" << function << " did not return a tuple";
  std::vector<std::shared_ptr<const graph::HostTensor>> out;
  for (const vm::Value& field : result.tuple()->fields()) {
    STRATA_ASSIGN_OR_RETURN(auto host, ToHost(field));
    out.push_back(std::move(host));
  }
  return out;
}

}  // namespace strata::driver
