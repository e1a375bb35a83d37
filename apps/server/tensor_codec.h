// Tensors in the Open Inference Protocol: datatype names, JSON "data" arrays
// and the binary tensor data extension.
//
// A JSON tensor's data is the elements in row-major order, flat or nested
// (both are accepted; counts are checked against the shape). Binary data is
// the raw little-endian elements, read in place: the tensor views the request
// body, which it keeps alive, so a large input is never copied.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "apps/server/json_util.h"
#include "support/data_type.h"
#include "support/status.h"
#include "vm/tensor.h"

namespace strata::server {

// "FP32" <-> f32; nullopt for names Strata has no tensors of (BYTES, BF16).
std::optional<DataType> DataTypeFromProtocol(std::string_view name);
std::string ProtocolDataType(DataType dtype);

// A tensor of `shape` / `dtype` from a JSON data array; `what` prefixes errors.
StatusOr<vm::Ref<vm::Tensor>> TensorFromJson(const rapidjson::Value& data, std::span<const int64_t> shape,
                                             DataType dtype, const std::string& what);

// A tensor viewing `bytes` (inside `owner`'s memory) without a copy; an error
// when the size does not match the shape.
StatusOr<vm::Ref<vm::Tensor>> TensorFromBinary(std::span<const uint8_t> bytes, std::span<const int64_t> shape,
                                               DataType dtype, std::shared_ptr<const void> owner,
                                               const std::string& what);

// Writes the tensor's elements as a flat JSON array; non-finite floats as NaN,
// Infinity and -Infinity (json_util.h).
void WriteJsonData(const vm::Tensor& tensor, JsonWriter& out);

}  // namespace strata::server
