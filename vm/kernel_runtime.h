// The runtime side of the kernel ABI: thread pool, workspace and error channel.
//
// GetKernelRuntimeApi() is the table every loaded kernel module receives.
// A kernel that fails records its message with api->set_error on the calling
// thread; the VM then takes it with TakeKernelError() to build its Status.
#pragma once

#include <string>

#include "abi/kernel_abi.h"
#include "support/status.h"

namespace strata::vm {

const StrataRuntimeApi* GetKernelRuntimeApi();

// The message the last failing kernel on this thread recorded, cleared on read.
std::string TakeKernelError();

}  // namespace strata::vm
