// The function registry: library functions found by name when an executable loads.
//
// Builtins (vm.builtin.*), library kernels (strata.blas.*, kernels/) and user
// native code register here. An executable's Library functions are looked up once at load
// time and stored as plain function pointers; nothing is looked up per call.
//
// Calling convention (builtins and call_packed / call_dps_packed alike):
//   Status fn(void* context, const Value* const* args, int32_t num_args, Value* out_result)
// `args` point at registers, constants or immediates of the caller and are valid
// only during the call; `out_result` starts as Null. Destination-passing
// functions receive their outputs as trailing arguments and leave the result Null.
//
// Thread-safety: registration and lookup are thread-safe. A registered
// function may be called from many threads at once and must be reentrant.
// Entries are never freed: executables keep raw pointers to them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"
#include "vm/value.h"

namespace strata::vm {

using LibraryFn = Status (*)(void* context, const Value* const* args, int32_t num_args, Value* out_result);

struct LibraryFunction {
  LibraryFn fn = nullptr;
  void* context = nullptr;  // passed back to fn on every call; not owned by the registry
};

// Registers `fn` under `name`. An error if the name is taken, unless
// `allow_override` (later executable loads then see the new function; already
// loaded executables keep the old one).
Status RegisterLibraryFunction(std::string_view name, LibraryFn fn, void* context = nullptr,
                               bool allow_override = false);

// Convenience for code that is not on a hot path: the std::function is kept
// alive by the registry forever and called through a trampoline.
using LibraryStdFunction = std::function<Status(std::span<const Value* const> args, Value* out_result)>;
Status RegisterLibraryFunction(std::string_view name, LibraryStdFunction fn, bool allow_override = false);

std::optional<LibraryFunction> LookupLibraryFunction(std::string_view name);

// The argument-count check every library function starts with; the error names
// the function and its parameters: "vm.builtin.copy expects 1 argument (x), got 2".
Status CheckArgCount(std::string_view fn, int32_t num_args, int32_t expected, std::string_view params);
// All registered names, sorted.
std::vector<std::string> ListLibraryFunctions();

// Registers the builtins of docs/vm_builtins.md. Runs once per process (later
// calls return immediately); Executable loading calls it, so static-library
// linking cannot drop them. The library kernels of kernels/ register themselves
// when strata_kernels is linked (strata_runtime links it whole).
void RegisterBuiltins();

namespace internal {
bool RegisterAtStartup(const char* name, LibraryFn fn);
}  // namespace internal

}  // namespace strata::vm

// Registers a LibraryFn from a static initializer. Only reliable in code that
// is linked in for another reason (an object file, not an unreferenced member
// of a static library); the runtime's own functions use RegisterBuiltins().
#define STRATA_REGISTER_LIBRARY_FUNCTION(name, fn)                                    \
  [[maybe_unused]] static const bool STRATA_CONCAT(strata_library_fn_, __COUNTER__) = \
      ::strata::vm::internal::RegisterAtStartup(name, fn)
