// Values between Python and the VM: strata.Tensor, and the conversions of
// call arguments and results.
//
// Arguments: a strata.Tensor is passed as it is; anything that speaks DLPack
// (__dlpack__: numpy, PyTorch, JAX) or the buffer protocol becomes a Tensor
// that views the caller's memory, without a copy, when that memory is on the
// CPU and C-contiguous (nanobind makes a contiguous copy otherwise); the view
// keeps the caller's object alive for as long as the VM holds it. Python ints
// and floats are Prim scalars, tuples and lists are Tuples.
//
// Results: a Tensor becomes a strata.Tensor sharing the VM's memory, which
// exports itself through __dlpack__ and __array__ without a copy (a read-only
// constant of the executable is exported as a copy, so that nobody writes into
// the executable's weights). Tuples and Shapes become Python tuples.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "vm/tensor.h"
#include "vm/value.h"

namespace strata::python {

namespace nb = nanobind;

// A tensor the VM made or was given, as Python sees it (strata.Tensor).
struct PyTensor {
  vm::Ref<vm::Tensor> tensor;
};

// Which argument a conversion is of, for its errors; the text ("main: argument
// 1 ('w')") is only built when one is raised, not on every call.
struct ArgumentContext {
  const std::string& function;
  size_t index;
  const std::string& param;
  std::string path;  // "[1][0]": a field of a tuple argument
  std::string Text() const { return function + ": argument " + std::to_string(index) + " ('" + param + "')" + path; }
};

// `argument` as a VM value.
vm::Value ToValue(nb::handle argument, const ArgumentContext& context);

// A VM result as a Python object.
nb::object FromValue(const vm::Value& value);

// Defines strata.Tensor in `m`.
void BindTensor(nb::module_& m);

}  // namespace strata::python
