// SystemLinker: turns one relocatable object into a shared object with the
// system toolchain, at compile time only.
//
// The runtime never links anything; it dlopens the bytes produced here. The
// object is written to a private temporary directory, linked by `cc` (or `ld`
// when there is no C compiler driver), read back and the directory removed.
// STRATA_LINKER overrides the driver (any cc-compatible command).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/status.h"

namespace strata::codegen {

// Links `objects` with libm, libc and `libraries` (names as for -l: "mvec") into
// one shared object and returns its bytes. Errors carry the command line and
// the linker's output.
StatusOr<std::vector<uint8_t>> LinkSharedObject(const std::vector<std::vector<uint8_t>>& objects,
                                                const std::vector<std::string>& libraries = {});

// Compiles C `source` into a shared object with the C compiler driver (cc, or
// STRATA_LINKER), with `include_dirs` on the include path and `link_inputs`
// (archives, objects) linked in; the result must need nothing beyond libc and
// libm (-z defs). Errors carry the command line and the compiler's output, with
// the source written next to it for reading when STRATA_KEEP_GENERATED_SOURCE is set.
StatusOr<std::vector<uint8_t>> CompileCSharedObject(const std::string& source,
                                                    const std::vector<std::string>& include_dirs,
                                                    const std::vector<std::string>& link_inputs);

// Whether the compiler driver finds the shared library `lib<name>.so` (asked once
// per process and name, with `cc -print-file-name`). False without a driver.
bool LinkerFindsLibrary(const std::string& name);

}  // namespace strata::codegen
