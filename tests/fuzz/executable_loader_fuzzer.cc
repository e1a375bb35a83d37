// libFuzzer target: the executable loader and verifier, then the VM. Every
// input is loaded twice: with checksums verified (the default; a mutation must
// be caught there or by the verifier) and without them, so that the verifier,
// the resolver and the interpreter see the damaged bytes that checksums would
// otherwise hide. When the second load succeeds, every entry point with a
// signature runs once with small zero-filled inputs of its declared shapes
// (symbolic dimensions set to 2), under a step budget so that a damaged loop
// ends with an error instead of a hang.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace {

using namespace strata;

constexpr int64_t kSymbolicDimValue = 2;
constexpr int64_t kMaxElements = int64_t{1} << 16;
constexpr int64_t kStepBudget = 100000;

bool IsIdentifier(const std::string& text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) return false;
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A dimension's value: a literal, or kSymbolicDimValue for a variable; nullopt
// for an expression (the function is then not run: its inputs cannot be chosen
// without solving it).
std::optional<int64_t> DimValue(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size()) return value >= 0 ? std::optional(value) : std::nullopt;
  if (IsIdentifier(text)) return kSymbolicDimValue;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Dims(const vm::ValueSignature& sig) {
  if (sig.ndim < 0 || static_cast<size_t>(sig.ndim) != sig.dims.size()) return std::nullopt;
  std::vector<int64_t> dims;
  int64_t elements = 1;
  for (const std::string& text : sig.dims) {
    std::optional<int64_t> dim = DimValue(text);
    if (!dim) return std::nullopt;
    elements *= std::max<int64_t>(*dim, 1);
    if (elements > kMaxElements) return std::nullopt;
    dims.push_back(*dim);
  }
  return dims;
}

std::optional<vm::Value> Argument(const vm::ValueSignature& sig) {
  if (sig.kind == "prim") return vm::Value::FromInt(kSymbolicDimValue);
  std::optional<std::vector<int64_t>> dims = Dims(sig);
  if (!dims) return std::nullopt;
  if (sig.kind == "shape") return vm::Value::FromShape(vm::ShapeTuple::Make(*dims));
  if (sig.kind != "tensor") return std::nullopt;
  std::optional<DataType> dtype = DataType::Parse(sig.dtype);
  if (!dtype) return std::nullopt;
  StatusOr<vm::Ref<vm::Tensor>> tensor = vm::Tensor::Empty(*dims, *dtype);
  if (!tensor.ok()) return std::nullopt;
  std::memset((*tensor)->data(), 0, static_cast<size_t>((*tensor)->num_bytes()));
  return vm::Value::FromTensor(std::move(tensor).value());
}

void RunEntryPoints(const std::shared_ptr<const vm::Executable>& exe) {
  vm::VirtualMachine machine(exe);
  machine.SetStepBudget(kStepBudget);
  for (int32_t index : exe->entry_points()) {
    const vm::VMFunction& function = exe->functions()[index];
    if (!function.has_signature) continue;
    std::vector<vm::Value> args;
    for (const vm::ValueSignature& sig : function.param_signatures) {
      std::optional<vm::Value> arg = Argument(sig);
      if (!arg) break;
      args.push_back(std::move(*arg));
    }
    if (args.size() != function.param_signatures.size()) continue;
    (void)machine.InvokeFunction(index, args);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  (void)vm::Executable::LoadFromBytes(bytes);
  vm::LoadOptions unchecked;
  unchecked.verify_checksums = false;
  StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::LoadFromBytes(bytes, unchecked);
  if (exe.ok()) RunEntryPoints(*exe);
  return 0;
}
