// NativeModule: dlopen of a kernel shared object held in memory; see native_module.h.
//
// The bytes go into an anonymous memfd that is opened through /proc/self/fd/N.
// The fd stays open while the module is loaded: its number keeps the path unique,
// so the dynamic loader never mistakes a new module for one already loaded.
#include "vm/native_module.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <string>
#include <unistd.h>

#include <sys/mman.h>

#include "vm/kernel_runtime.h"

namespace strata::vm {
namespace {

std::string DlErrorText() {
  const char* error = dlerror();
  return error ? error : "unknown dynamic loader error";
}

Status WriteAll(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(ErrorStatus() << "write failed: " << std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<NativeModule>> NativeModule::Load(std::span<const uint8_t> code, std::string_view name) {
  std::string module_name(name);
  if (code.empty()) return Status(ErrorStatus() << module_name << ": native module is empty");
  // memfd names are for /proc listings only and limited to 249 bytes.
  int fd = memfd_create(("strata:" + module_name.substr(0, 200)).c_str(), MFD_CLOEXEC);
  if (fd < 0) return Status(ErrorStatus() << module_name << ": memfd_create failed: " << std::strerror(errno));
  if (Status status = WriteAll(fd, code); !status.ok()) {
    close(fd);
    return std::move(status).WithContext(module_name + ": cannot write native module to memfd: ");
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::string error = DlErrorText();
    close(fd);
    return Status(ErrorStatus() << module_name << ": cannot load native module: " << error);
  }
  // From here on the destructor releases the handle and the fd.
  std::unique_ptr<NativeModule> module(new NativeModule(handle, fd, module_name));

  dlerror();  // clear a stale error so a NULL from dlsym can be told apart
  auto* version = static_cast<const uint32_t*>(dlsym(handle, STRATA_ABI_VERSION_SYMBOL));
  if (version == nullptr) {
    return Status(ErrorStatus() << module_name
                                << ": not a Strata native module (no " STRATA_ABI_VERSION_SYMBOL " symbol)");
  }
  if (*version != STRATA_KERNEL_ABI_VERSION) {
    return Status(ErrorStatus(StatusCode::kUnimplemented) << module_name << ": compiled-kernel ABI version " << *version
                                                          << ", runtime supports " << STRATA_KERNEL_ABI_VERSION);
  }
  auto* api_slot = static_cast<const StrataRuntimeApi**>(dlsym(handle, STRATA_RUNTIME_API_SYMBOL));
  if (api_slot == nullptr) {
    return Status(ErrorStatus() << module_name << ": native module has no " STRATA_RUNTIME_API_SYMBOL " symbol");
  }
  *api_slot = GetKernelRuntimeApi();
  // VM entries read Values in place: only a module built for this runtime's
  // Value layout may be called through them (kernel_abi.h).
  StatusOr<void*> layout = module->FindDefinition(STRATA_VM_VALUE_LAYOUT_SYMBOL);
  module->vm_entries_usable_ =
      layout.ok() && *static_cast<const uint32_t*>(layout.value()) == STRATA_VM_VALUE_LAYOUT_VERSION;
  return module;
}

NativeModule::~NativeModule() {
  if (handle_ != nullptr) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

StatusOr<void*> NativeModule::FindDefinition(const std::string& name) const {
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) {
    return Status(ErrorStatus(StatusCode::kNotFound) << name_ << ": compiled kernel symbol '" << name << "' not found");
  }
  // dlsym on a handle also searches the module's dependencies (libc, libm); only a
  // definition inside the module itself is a kernel.
  Dl_info info;
  struct link_map* found_in = nullptr;
  struct link_map* module_map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&found_in), RTLD_DL_LINKMAP) != 0 &&
      dlinfo(handle_, RTLD_DI_LINKMAP, &module_map) == 0 && found_in != module_map) {
    return Status(ErrorStatus(StatusCode::kNotFound)
                  << name_ << ": compiled kernel symbol '" << name << "' not found (it resolves to "
                  << (info.dli_fname ? info.dli_fname : "another library") << ")");
  }
  return address;
}

StatusOr<StrataKernelFn> NativeModule::Lookup(std::string_view symbol) const {
  STRATA_ASSIGN_OR_RETURN(void* address, FindDefinition(std::string(symbol)));
  return reinterpret_cast<StrataKernelFn>(address);
}

StrataVmKernelFn NativeModule::LookupVmEntry(std::string_view symbol) const {
  if (!vm_entries_usable_) return nullptr;
  StatusOr<void*> address = FindDefinition(std::string(symbol) + STRATA_VM_ENTRY_SUFFIX);
  return address.ok() ? reinterpret_cast<StrataVmKernelFn>(address.value()) : nullptr;
}

}  // namespace strata::vm
