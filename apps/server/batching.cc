// Dynamic batching helpers; see batching.h.
#include "apps/server/batching.h"

#include <cstring>

namespace strata::server {
namespace {

bool LeadsWithSymbolicDim(const vm::ValueSignature& s, const std::string& batch) {
  return s.kind == "tensor" && s.ndim >= 1 && !s.dims.empty() && s.dims[0] == batch;
}

bool IsSymbolic(const std::string& dim) { return !dim.empty() && !std::isdigit(static_cast<unsigned char>(dim[0])); }

// The tensors of a result: its fields, or itself.
std::vector<const vm::Tensor*> Tensors(const vm::Value& v) {
  std::vector<const vm::Tensor*> out;
  if (v.is_tensor()) {
    out.push_back(v.tensor());
  } else if (v.is_tuple()) {
    for (const vm::Value& field : v.tuple()->fields()) out.push_back(field.is_tensor() ? field.tensor() : nullptr);
  }
  return out;
}

StatusOr<vm::Ref<vm::Tensor>> Rows(const vm::Tensor& t, int64_t first, int64_t count) {
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  const int64_t row_bytes = shape[0] == 0 ? 0 : t.num_bytes() / shape[0];
  shape[0] = count;
  STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> out, vm::Tensor::Empty(shape, t.dtype()));
  if (count > 0 && row_bytes > 0) {
    std::memcpy(out->data(), static_cast<const uint8_t*>(t.data()) + first * row_bytes,
                static_cast<size_t>(count * row_bytes));
  }
  return out;
}

}  // namespace

Status CheckBatchable(const vm::VMFunction& f) {
  if (!f.has_signature) {
    return Status(ErrorStatus() << "function '" << f.name
                                << "' has no signature (an executable older than format 1.4); recompile it to batch");
  }
  if (f.param_signatures.empty()) return Status(ErrorStatus() << "function '" << f.name << "' takes no inputs");
  const vm::ValueSignature& first = f.param_signatures[0];
  if (first.kind != "tensor" || first.dims.empty() || !IsSymbolic(first.dims[0])) {
    return Status(ErrorStatus() << "input '" << f.param_names[0] << "' (" << first.text
                                << ") does not lead with a symbolic batch dimension");
  }
  const std::string& batch = first.dims[0];
  for (size_t i = 1; i < f.param_signatures.size(); ++i) {
    if (!LeadsWithSymbolicDim(f.param_signatures[i], batch)) {
      return Status(ErrorStatus() << "input '" << f.param_names[i] << "' (" << f.param_signatures[i].text
                                  << ") does not lead with the batch dimension '" << batch << "'");
    }
  }
  const vm::ValueSignature& result = f.result_signature;
  if (result.kind == "tuple") {
    for (size_t i = 0; i < result.fields.size(); ++i) {
      if (!LeadsWithSymbolicDim(result.fields[i], batch)) {
        return Status(ErrorStatus() << "output" << i << " (" << result.fields[i].text
                                    << ") does not lead with the batch dimension '" << batch << "'");
      }
    }
  } else if (!LeadsWithSymbolicDim(result, batch)) {
    return Status(ErrorStatus() << "output0 (" << result.text << ") does not lead with the batch dimension '" << batch
                                << "'");
  }
  return Status::Ok();
}

int64_t BatchRows(std::span<const vm::Value> args) {
  return !args.empty() && args[0].is_tensor() && args[0].tensor()->ndim() >= 1 ? args[0].tensor()->shape()[0] : -1;
}

bool Concatenable(std::span<const vm::Value> a, std::span<const vm::Value> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_tensor() || !b[i].is_tensor()) return false;
    const vm::Tensor& x = *a[i].tensor();
    const vm::Tensor& y = *b[i].tensor();
    if (x.dtype() != y.dtype() || x.ndim() != y.ndim() || x.ndim() < 1) return false;
    if (x.device().device_type != kDLCPU || y.device().device_type != kDLCPU) return false;
    if (!std::equal(x.shape().begin() + 1, x.shape().end(), y.shape().begin() + 1)) return false;
    if (x.shape()[0] != BatchRows(a) || y.shape()[0] != BatchRows(b)) return false;  // every input's rows agree
  }
  return true;
}

StatusOr<std::vector<vm::Value>> ConcatenateArguments(std::span<const std::vector<vm::Value>* const> requests) {
  std::vector<vm::Value> out;
  const size_t params = requests[0]->size();
  for (size_t p = 0; p < params; ++p) {
    const vm::Tensor& first = *(*requests[0])[p].tensor();
    std::vector<int64_t> shape(first.shape().begin(), first.shape().end());
    shape[0] = 0;
    for (const std::vector<vm::Value>* r : requests) shape[0] += (*r)[p].tensor()->shape()[0];
    STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> joined, vm::Tensor::Empty(shape, first.dtype()));
    uint8_t* dst = static_cast<uint8_t*>(joined->data());
    for (const std::vector<vm::Value>* r : requests) {
      const vm::Tensor& t = *(*r)[p].tensor();
      if (t.num_bytes() > 0) std::memcpy(dst, t.data(), static_cast<size_t>(t.num_bytes()));
      dst += t.num_bytes();
    }
    out.push_back(vm::Value::FromTensor(std::move(joined)));
  }
  return out;
}

StatusOr<std::vector<vm::Value>> SplitResult(const vm::Value& result, std::span<const int64_t> rows) {
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  const std::vector<const vm::Tensor*> tensors = Tensors(result);
  if (tensors.empty()) return Status(ErrorStatus(StatusCode::kInternal) << "a batched result must hold tensors");
  for (const vm::Tensor* t : tensors) {
    if (t == nullptr || t->ndim() < 1 || t->shape()[0] != total || t->device().device_type != kDLCPU) {
      return Status(ErrorStatus(StatusCode::kInternal)
                    << "a batched output does not have the batch's " << total << " rows");
    }
  }
  std::vector<vm::Value> out;
  int64_t first = 0;
  for (int64_t r : rows) {
    std::vector<vm::Value> fields;
    for (const vm::Tensor* t : tensors) {
      STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> part, Rows(*t, first, r));
      fields.push_back(vm::Value::FromTensor(std::move(part)));
    }
    out.push_back(result.is_tuple() ? vm::Value::FromTuple(std::move(fields)) : std::move(fields[0]));
    first += r;
  }
  return out;
}

}  // namespace strata::server
