// XXH3-64 region checksums of executable files (see checksum.h).
#include "serialization/checksum.h"

#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <xxhash.h>
#if STRATA_XXHASH_X86_DISPATCH
// XXH3_64bits and XXH3_64bits_update become the library's runtime-dispatched
// AVX2 / AVX-512 variants.
#include <xxh_x86dispatch.h>
#endif
#include <zlib.h>

#include "serialization/format_version.h"

namespace strata::serialization {
namespace {

namespace fbs = ::flatbuffers;
using Regions = fbs::Vector<const fb::ChecksumRegion*>;

// The Header region's checksum is its first 8 bytes (executable.fbs); the
// verifier reads it in place.
static_assert(sizeof(fb::ChecksumRegion) == 24 && alignof(fb::ChecksumRegion) == 8);

ErrorStatus Corrupt() { return ErrorStatus(StatusCode::kDataLoss); }

Status Mismatch(fb::ChecksumRegionKind kind, uint32_t index, uint64_t offset, uint64_t size) {
  return Status(Corrupt() << "checksum mismatch in " << DescribeChecksumRegion(kind, index, offset, size)
                          << ": the file is damaged");
}

// Structs are read in place: the flatbuffers verifier checks a vector's length and
// bounds but not the alignment of its struct elements.
bool IsAligned(const Regions* regions) {
  return reinterpret_cast<uintptr_t>(regions->data()) % alignof(fb::ChecksumRegion) == 0;
}

struct FreeState {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};

// XXH3-64 of `header` with its 8 bytes at `field` (field + 8 <= header.size())
// read as zero: how the Header region's checksum covers the bytes around itself.
// nullopt when the hash state cannot be allocated.
std::optional<uint64_t> HeaderChecksum(std::span<const uint8_t> header, size_t field) {
  std::unique_ptr<XXH3_state_t, FreeState> state(XXH3_createState());
  if (state == nullptr || XXH3_64bits_reset(state.get()) != XXH_OK) return std::nullopt;
  static constexpr uint8_t kZero[8] = {};
  XXH3_64bits_update(state.get(), header.data(), field);
  XXH3_64bits_update(state.get(), kZero, sizeof(kZero));
  XXH3_64bits_update(state.get(), header.data() + field + 8, header.size() - field - 8);
  return XXH3_64bits_digest(state.get());
}

bool IsSectionOrDataKind(fb::ChecksumRegionKind kind) {
  return kind != fb::ChecksumRegionKind::Header && kind >= fb::ChecksumRegionKind::MIN &&
         kind <= fb::ChecksumRegionKind::MAX;
}

// The checksum vector of a buffer nothing but the identifier and version of was
// checked: the root table and the vector are verified first. Null when absent.
StatusOr<const Regions*> LocateRegions(std::span<const uint8_t> bytes) {
  fbs::Verifier verifier(bytes.data(), bytes.size());
  const fbs::uoffset_t root_offset = verifier.VerifyOffset(0);
  const auto* root = reinterpret_cast<const fbs::Table*>(bytes.data() + root_offset);
  if (root_offset == 0 || !root->VerifyTableStart(verifier) ||
      !root->VerifyOffset(verifier, fb::Executable::VT_CHECKSUMS)) {
    return Status(Corrupt() << "flatbuffer verification failed in checksums (file of " << bytes.size()
                            << " bytes is truncated or damaged)");
  }
  const auto* regions = reinterpret_cast<const fb::Executable*>(root)->checksums();
  if (regions == nullptr) return regions;
  if (!verifier.VerifyVector(regions) || !IsAligned(regions)) {
    return Status(Corrupt() << "flatbuffer verification failed in checksums (file of " << bytes.size()
                            << " bytes is truncated or damaged)");
  }
  return regions;
}

}  // namespace

uint64_t Xxh3(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint32_t LegacyCodeCrc32(std::span<const uint8_t> bytes) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(crc, bytes.data(), bytes.size()));
}

std::string DescribeChecksumRegion(fb::ChecksumRegionKind kind, uint32_t index, uint64_t offset, uint64_t size) {
  const std::string extent = std::to_string(size) + " bytes at offset " + std::to_string(offset) + ")";
  switch (kind) {
    case fb::ChecksumRegionKind::Header: return "the header (" + extent;
    case fb::ChecksumRegionKind::Functions: return "section \"functions\" (" + extent;
    case fb::ChecksumRegionKind::NativeModules: return "section \"native_modules\" (" + extent;
    case fb::ChecksumRegionKind::NativeCode: return "native_modules[" + std::to_string(index) + "] (code, " + extent;
    case fb::ChecksumRegionKind::Constants: return "section \"constants\" (" + extent;
    case fb::ChecksumRegionKind::ConstantData:
      return "constants[" + std::to_string(index) + "] (tensor data, " + extent;
  }
  return "a region of unknown kind " + std::to_string(static_cast<int>(kind)) + " (" + extent;
}

Status VerifyFileChecksums(std::span<const uint8_t> bytes, uint32_t format_minor) {
  STRATA_ASSIGN_OR_RETURN(const Regions* regions, LocateRegions(bytes));
  if (regions == nullptr) {
    if (format_minor < kFirstMinorWithChecksums) return Status::Ok();
    return Status(Corrupt() << "a file of format " << kFormatMajor << "." << format_minor
                            << " must carry checksums and this one has none: the file is damaged");
  }
  if (regions->size() == 0) return Status(Corrupt() << "the checksum table is empty: the file is damaged");

  // The header first: it holds the table, so once it matches, the table's
  // offsets and sizes are the writer's.
  const fb::ChecksumRegion* header = regions->Get(0);
  const uint64_t file_size = bytes.size(), header_size = header->size();
  const uint64_t field = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(header) - bytes.data());
  if (header->kind() != fb::ChecksumRegionKind::Header || header->offset() != 0 || field + 8 > header_size) {
    return Status(Corrupt() << "the checksum table is damaged: checksums[0] is "
                            << DescribeChecksumRegion(header->kind(), header->index(), header->offset(), header_size)
                            << ", expected the header, holding the table at offset " << field);
  }
  if (header_size > file_size) {
    return Status(Corrupt() << "the file is truncated: its header has " << header_size << " bytes, the file "
                            << file_size);
  }
  std::optional<uint64_t> computed = HeaderChecksum(bytes.first(header_size), field);
  if (!computed) {
    return Status(ErrorStatus(StatusCode::kResourceExhausted) << "out of memory: cannot verify the checksums");
  }
  if (*computed != header->xxh3()) return Mismatch(fb::ChecksumRegionKind::Header, 0, 0, header_size);

  // Sizes are 32-bit and there are fewer than 2^32 regions: the sum cannot overflow.
  uint64_t covered = 0;
  for (const fb::ChecksumRegion* region : *regions) covered += region->size();
  if (covered > file_size) {
    return Status(Corrupt() << "the file is truncated: its checksums cover " << covered << " bytes, it has "
                            << file_size);
  }
  if (covered < file_size) {
    return Status(Corrupt() << "the file has " << file_size << " bytes but its checksums cover only " << covered
                            << ": bytes were appended or the file is damaged");
  }
  uint64_t end = header_size;
  for (uint32_t i = 1; i < regions->size(); ++i) {
    const fb::ChecksumRegion* region = regions->Get(i);
    if (region->offset() != end || !IsSectionOrDataKind(region->kind())) {
      return Status(
          Corrupt() << "the checksum table is damaged: checksums[" << i << "] is "
                    << DescribeChecksumRegion(region->kind(), region->index(), region->offset(), region->size())
                    << ", expected a section or data region at offset " << end);
    }
    end += region->size();
  }
  for (uint32_t i = 1; i < regions->size(); ++i) {
    const fb::ChecksumRegion* region = regions->Get(i);
    if (Xxh3(bytes.subspan(region->offset(), region->size())) != region->xxh3()) {
      return Mismatch(region->kind(), region->index(), region->offset(), region->size());
    }
  }
  return Status::Ok();
}

Status VerifyNativeCodeChecksum(std::span<const uint8_t> bytes, const fb::Executable& exe, uint32_t module_index) {
  const std::string label = "native_modules[" + std::to_string(module_index) + "]";
  const fbs::Vector<uint8_t>* code = exe.native_modules()->Get(module_index)->code();
  const std::span<const uint8_t> code_bytes(code->data(), code->size());
  const Regions* regions = exe.checksums();
  if (regions == nullptr) {
    const std::optional<uint32_t> stored = exe.native_modules()->Get(module_index)->code_crc32();
    if (!stored.has_value()) return Status(Corrupt() << label << ": no code checksum (code_crc32)");
    const uint32_t computed = LegacyCodeCrc32(code_bytes);
    if (computed == *stored) return Status::Ok();
    char text[96];
    std::snprintf(text, sizeof(text), "code checksum mismatch (stored 0x%08x, computed 0x%08x)", *stored, computed);
    return Status(Corrupt() << label << ": " << text << "; the file is damaged");
  }
  const uint64_t offset = static_cast<uint64_t>(code_bytes.data() - bytes.data());
  if (IsAligned(regions)) {
    for (const fb::ChecksumRegion* region : *regions) {
      if (region->kind() != fb::ChecksumRegionKind::NativeCode || region->index() != module_index) continue;
      if (region->offset() != offset || region->size() != code_bytes.size()) break;
      if (Xxh3(code_bytes) != region->xxh3()) {
        return Mismatch(fb::ChecksumRegionKind::NativeCode, module_index, offset, code_bytes.size());
      }
      return Status::Ok();
    }
  }
  return Status(Corrupt() << label << ": no checksum covers its code (" << code_bytes.size() << " bytes at offset "
                          << offset << "): the file is damaged");
}

void StoreChecksums(std::span<uint8_t> bytes, std::span<fb::ChecksumRegion> regions) {
  for (size_t i = 1; i < regions.size(); ++i) {
    const fb::ChecksumRegion& r = regions[i];
    regions[i] = fb::ChecksumRegion(Xxh3(std::span<const uint8_t>(bytes).subspan(r.offset(), r.size())), r.offset(),
                                    r.size(), r.index(), r.kind());
  }
  const fb::ChecksumRegion& header = regions[0];
  const size_t field = static_cast<size_t>(reinterpret_cast<const uint8_t*>(&regions[0]) - bytes.data());
  std::optional<uint64_t> checksum = HeaderChecksum(bytes.first(header.size()), field);
  if (!checksum) throw std::bad_alloc();  // as the builder's own allocations fail
  regions[0] = fb::ChecksumRegion(*checksum, header.offset(), header.size(), header.index(), header.kind());
}

}  // namespace strata::serialization
