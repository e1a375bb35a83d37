// The ONNX converter table: every supported op type of the default domain,
// gathered from the converter families.
#include "compiler/frontend/onnx/onnx_converter_util.h"

namespace strata::frontend::onnx_import {

const OpConverter* FindConverter(const std::string& op_type) {
  static const ConverterTable table = [] {
    ConverterTable t;
    AddElementwiseConverters(t);
    AddNeuralNetworkConverters(t);
    AddTensorConverters(t);
    AddIndexingConverters(t);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace strata::frontend::onnx_import
