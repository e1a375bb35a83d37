// The C++ side of strata's Python exceptions. Each type is registered with
// nanobind (module.cc) as the Python class named in its comment, all of them
// subclasses of strata.Error; the message is the one the CLI prints.
#pragma once

#include <stdexcept>
#include <string>

#include "support/status.h"

namespace strata::python {

// strata.Error: the base of the others (and what a failed save raises).
struct ErrorEx : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// strata.CompileError: parsing, importing or lowering a model failed.
struct CompileErrorEx : ErrorEx {
  using ErrorEx::ErrorEx;
};
// strata.LoadError: an executable could not be read, verified or resolved.
struct LoadErrorEx : ErrorEx {
  using ErrorEx::ErrorEx;
};
// strata.ShapeError: an argument does not fit the function's signature.
struct ShapeErrorEx : ErrorEx {
  using ErrorEx::ErrorEx;
};
// strata.ExecutionError: the program failed while it ran.
struct ExecutionErrorEx : ErrorEx {
  using ErrorEx::ErrorEx;
};

// The exception a failed call of the VM raises.
[[noreturn]] inline void ThrowRunError(const Status& status) {
  if (status.is_signature_mismatch()) throw ShapeErrorEx(status.message());
  throw ExecutionErrorEx(status.message());
}

}  // namespace strata::python
