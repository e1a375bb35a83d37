// Envelope checks and flatbuffers verification of executable files.
#include "serialization/reader.h"

#include <cstdio>
#include <string>

#include <flatbuffers/flatbuffers.h>

#include "serialization/checksum.h"
#include "serialization/format_version.h"
#include "serialization/verifier.h"

namespace strata::serialization {
namespace {

namespace fbs = ::flatbuffers;

// The four identifier bytes, printable characters as is, others as \xNN.
std::string PrintableIdentifier(const uint8_t* p) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '\'') {
      out += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", p[i]);
      out += buf;
    }
  }
  return out;
}

// Reads format_major/minor after verifying just the root table and those fields.
Status ReadVersion(std::span<const uint8_t> bytes, uint32_t* out_major, uint32_t* out_minor) {
  fbs::Verifier verifier(bytes.data(), bytes.size());
  fbs::uoffset_t root_offset = verifier.VerifyOffset(0);
  const auto* root = reinterpret_cast<const fbs::Table*>(bytes.data() + root_offset);
  if (root_offset == 0 || !root->VerifyTableStart(verifier) ||
      !root->VerifyField<uint32_t>(verifier, fb::Executable::VT_FORMAT_MAJOR, 4) ||
      !root->VerifyField<uint32_t>(verifier, fb::Executable::VT_FORMAT_MINOR, 4)) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "flatbuffer verification failed: the root table is corrupt (file of " << bytes.size()
                  << " bytes is truncated or damaged)");
  }
  *out_major = root->GetField<uint32_t>(fb::Executable::VT_FORMAT_MAJOR, 0);
  *out_minor = root->GetField<uint32_t>(fb::Executable::VT_FORMAT_MINOR, 0);
  return Status::Ok();
}

// Verifies root field `field` as a vector of tables; `get` reads it once the
// field itself is known to be sound. Returns the failing section or "".
template <typename Getter>
std::string CheckTableVector(std::span<const uint8_t> bytes, const fbs::Table* root, fbs::voffset_t field, Getter get,
                             const char* section) {
  {
    fbs::Verifier v(bytes.data(), bytes.size());
    if (!root->VerifyOffset(v, field) || !v.VerifyVector(get())) return section;
  }
  const auto* vec = get();
  if (vec == nullptr) return "";
  for (fbs::uoffset_t i = 0; i < vec->size(); ++i) {
    fbs::Verifier v(bytes.data(), bytes.size());
    // Each element is an offset inside the verified vector; the table it points at is what may be bad.
    const uint8_t* slot = reinterpret_cast<const uint8_t*>(vec->Data()) + i * sizeof(fbs::uoffset_t);
    if (v.VerifyOffset(static_cast<size_t>(slot - bytes.data())) == 0 || !vec->Get(i)->Verify(v)) {
      return std::string(section) + "[" + std::to_string(i) + "]";
    }
  }
  return "";
}

// Finds the first section the flatbuffers verifier rejects, for the message.
// Every accessor runs only after the bytes it reads were verified.
std::string LocateCorruption(std::span<const uint8_t> bytes) {
  const auto* root = fbs::GetRoot<fbs::Table>(bytes.data());
  const auto* exe = fb::GetExecutable(bytes.data());
  {
    fbs::Verifier v(bytes.data(), bytes.size());
    if (!root->VerifyTableStart(v)) return "the root table";
  }
  {
    fbs::Verifier v(bytes.data(), bytes.size());
    if (!root->VerifyOffset(v, fb::Executable::VT_PRODUCER) || !v.VerifyString(exe->producer())) return "producer";
  }
  std::string where = CheckTableVector(
      bytes, root, fb::Executable::VT_FUNCTIONS, [&] { return exe->functions(); }, "functions");
  if (!where.empty()) return where;
  where = CheckTableVector(
      bytes, root, fb::Executable::VT_CONSTANTS, [&] { return exe->constants(); }, "constants");
  if (!where.empty()) return where;
  where = CheckTableVector(
      bytes, root, fb::Executable::VT_NATIVE_MODULES, [&] { return exe->native_modules(); }, "native_modules");
  if (!where.empty()) return where;
  {
    fbs::Verifier v(bytes.data(), bytes.size());
    if (!root->VerifyOffset(v, fb::Executable::VT_ENTRY_POINTS) || !v.VerifyVector(exe->entry_points())) {
      return "entry_points";
    }
  }
  {
    fbs::Verifier v(bytes.data(), bytes.size());
    if (!root->VerifyOffset(v, fb::Executable::VT_CHECKSUMS) || !v.VerifyVector(exe->checksums())) {
      return "checksums";
    }
  }
  return "the executable (nesting or size limits)";
}

}  // namespace

StatusOr<const fb::Executable*> VerifyExecutableBuffer(std::span<const uint8_t> bytes, const ReadOptions& options) {
  // Root offset + identifier + the smallest table: anything shorter is not a file.
  if (bytes.size() < 16) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "not a Strata executable: file too small (" << bytes.size() << " bytes)");
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % kRequiredBufferAlignment != 0) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "executable buffer is not " << kRequiredBufferAlignment << "-byte aligned");
  }
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "executable of " << bytes.size() << " bytes exceeds the format's 2 GiB limit");
  }
  if (!fbs::BufferHasIdentifier(bytes.data(), kFileIdentifier)) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "not a Strata executable (file identifier '" << PrintableIdentifier(bytes.data() + 4)
                  << "', expected '" << kFileIdentifier << "')");
  }
  uint32_t major = 0, minor = 0;
  STRATA_RETURN_IF_ERROR(ReadVersion(bytes, &major, &minor));
  if (major != kFormatMajor || minor > kFormatMinor) {
    bool newer = major > kFormatMajor || (major == kFormatMajor && minor > kFormatMinor);
    return Status(ErrorStatus(StatusCode::kUnimplemented)
                  << "executable format version " << major << "." << minor << " is " << (newer ? "newer" : "older")
                  << " than this runtime supports (" << kFormatMajor << "." << kFormatMinor << ")"
                  << (newer ? "; upgrade the runtime" : "; recompile the model"));
  }
  if (options.verify_checksums) STRATA_RETURN_IF_ERROR(VerifyFileChecksums(bytes, minor));
  fbs::Verifier verifier(bytes.data(), bytes.size());
  if (!fb::VerifyExecutableBuffer(verifier)) {
    return Status(ErrorStatus(StatusCode::kDataLoss)
                  << "flatbuffer verification failed in " << LocateCorruption(bytes) << " (file of " << bytes.size()
                  << " bytes is truncated or damaged)");
  }
  return fb::GetExecutable(bytes.data());
}

StatusOr<const fb::Executable*> ReadExecutable(std::span<const uint8_t> bytes, const ReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const fb::Executable* exe, VerifyExecutableBuffer(bytes, options));
  STRATA_RETURN_IF_ERROR(VerifyExecutableSemantics(*exe, bytes));
  return exe;
}

}  // namespace strata::serialization
