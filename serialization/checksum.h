// The checksums of an executable file (format 1.5, executable.fbs: Executable.checksums).
//
// The writer cuts the file into regions that lie back to back from byte 0 to the
// end: the header (the root table, its vectors and the checksum table itself),
// the functions, native modules and constants sections, the code of each native
// module and the data of each tensor constant. Each region carries the XXH3-64 of
// its bytes; the header's is computed with its own 8 bytes read as zero. So a change
// to any byte of the file, the checksums included, and any truncation fails a check.
//
// VerifyFileChecksums runs on the raw buffer, before the flatbuffers verifier, so
// that damage is reported by what it hit ("checksum mismatch in section
// \"functions\" ..."); it reads only the root table and the checksum vector after
// verifying both, and bounds every region by the buffer. The code of a native module
// is checked by VerifyNativeCodeChecksum even when the rest is skipped: damaged
// tensor data gives wrong numbers, damaged machine code can crash the process.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "serialization/executable_generated.h"
#include "support/status.h"

namespace strata::serialization {

// XXH3-64 with seed 0 of `bytes`.
uint64_t Xxh3(std::span<const uint8_t> bytes);

// CRC-32 (the zlib / gzip polynomial) of `bytes`: NativeModule.code_crc32 of files
// before format 1.5.
uint32_t LegacyCodeCrc32(std::span<const uint8_t> bytes);

// How messages name a region: `the header (1024 bytes at offset 0)`,
// `section "functions" (...)`, `constants[3] (tensor data, 4096 bytes at offset 8192)`,
// `native_modules[0] (code, ...)`.
std::string DescribeChecksumRegion(fb::ChecksumRegionKind kind, uint32_t index, uint64_t offset, uint64_t size);

// Checks a buffer whose identifier and version were checked (`format_minor` is its
// version) but nothing else. A file with a checksum table must have its regions
// back to back over the whole buffer, each matching its checksum; a file of format
// 1.5 or newer must have one. A file of an older format without one passes.
// Errors are DATA_LOSS, e.g.
//   checksum mismatch in constants[3] (tensor data, 4096 bytes at offset 8192): the file is damaged
//   the file is truncated: its checksums cover 70144 bytes, it has 65536
Status VerifyFileChecksums(std::span<const uint8_t> bytes, uint32_t format_minor);

// The native code of native_modules[module_index] of a flatbuffers-verified `exe`
// read from `bytes`: with a checksum table, the code must be exactly a NativeCode
// region for the module and match its checksum; without one, it must match
// code_crc32.
Status VerifyNativeCodeChecksum(std::span<const uint8_t> bytes, const fb::Executable& exe, uint32_t module_index);

// Writer side: `bytes` is a finished file whose checksum vector `regions` (inside
// `bytes`) holds every region's offset, size, kind and index, and zero checksums.
// Stores each region's checksum, the header's last.
void StoreChecksums(std::span<uint8_t> bytes, std::span<fb::ChecksumRegion> regions);

}  // namespace strata::serialization
