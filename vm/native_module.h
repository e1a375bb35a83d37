// NativeModule: compiled tensor programs loaded from bytes inside an executable.
//
// The executable carries each kernel module as a position-independent shared
// object. Loading writes it to an anonymous in-memory file (memfd) and dlopens
// that, so no compiler, linker, LLVM or temporary file on disk is involved. The
// loader checks the module's kernel ABI version and hands it the runtime API table
// (kernel_abi.h) before any kernel can run.
//
// Thread-safety: Load and Lookup may be called from any thread; a loaded module is
// immutable and its kernels may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "abi/kernel_abi.h"
#include "support/status.h"

namespace strata::vm {

class NativeModule {
 public:
  // `name` is used in error messages only (e.g. "native_modules[0]").
  static StatusOr<std::unique_ptr<NativeModule>> Load(std::span<const uint8_t> code, std::string_view name);
  ~NativeModule();
  NativeModule(const NativeModule&) = delete;
  NativeModule& operator=(const NativeModule&) = delete;

  // The kernel entry point `symbol`; an error naming the symbol and module if absent.
  StatusOr<StrataKernelFn> Lookup(std::string_view symbol) const;
  // The VM entry of the kernel `symbol` (kernel_abi.h), or null when the module
  // has none for it or was built for another VM value layout: then the VM calls
  // the main entry.
  StrataVmKernelFn LookupVmEntry(std::string_view symbol) const;

 private:
  NativeModule(void* handle, int fd, std::string name) : handle_(handle), fd_(fd), name_(std::move(name)) {}
  // The address of `name` if the module itself defines it.
  StatusOr<void*> FindDefinition(const std::string& name) const;

  void* handle_;
  int fd_;
  std::string name_;
  bool vm_entries_usable_ = false;
};

}  // namespace strata::vm
