// WriteExecutable: ExecutableSpec -> the bytes of a Strata executable file.
//
// The output is a flatbuffer with file identifier "STRX" and the format version
// of format_version.h. Tensor constant data is 64-byte aligned within the buffer
// (kConstantAlignment), so a runtime that maps the file 64-byte aligned can hand
// out tensors pointing straight into it. In file order: the header (root table,
// its vectors, the checksum table), the functions, native modules and constants
// sections, the native code, the tensor data; the checksums (checksum.h) cover
// each of these regions.
//
// The writer does not validate the spec: the runtime verifies every file it
// loads, so tests can write deliberately broken executables with it.
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serialization/executable_spec.h"
#include "serialization/format_version.h"
#include "support/status.h"

namespace strata::serialization {

struct WriteOptions {
  // The version recorded in the file (tests override it to produce files from
  // "the future").
  uint32_t format_major = kFormatMajor;
  uint32_t format_minor = kFormatMinor;
  std::string producer = "strata";
  // False writes a file as format 1.4 did: no checksum table, NativeModule.code_crc32
  // instead (tests of older files set format_minor too).
  bool checksums = true;
};

std::vector<uint8_t> WriteExecutable(const ExecutableSpec& spec, const WriteOptions& options);
std::vector<uint8_t> WriteExecutable(const ExecutableSpec& spec);

// The same bytes written to `path` straight from the builder: no second copy
// of a model's weights in memory (GPT-2's 500 MB took 0.8 s and as much memory
// again through the vector). The error names the path and the system's reason.
Status WriteExecutableFile(const ExecutableSpec& spec, const std::string& path);

}  // namespace strata::serialization
