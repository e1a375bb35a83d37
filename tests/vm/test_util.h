// Shared helpers of the VM tests: tensors from values, test library functions.
#pragma once

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "vm/executable.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::testing {

inline vm::Value F32(std::initializer_list<int64_t> shape, std::vector<float> values) {
  auto t = vm::Tensor::FromValues<float>(std::vector<int64_t>(shape), std::span<const float>(values));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return vm::Value::FromTensor(std::move(t).value());
}

inline std::vector<float> ToFloats(const vm::Value& v) {
  EXPECT_TRUE(v.is_tensor()) << v.Describe();
  if (!v.is_tensor()) return {};
  auto values = v.tensor()->ToVector<float>();
  EXPECT_TRUE(values.ok()) << values.status().message();
  return values.ok() ? values.value() : std::vector<float>();
}

// Row-major reference matmul in double precision.
inline std::vector<float> ReferenceMatmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                                          int64_t k, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += double(a[i * k + p]) * double(b[p * n + j]);
      c[i * n + j] = static_cast<float>(sum);
    }
  }
  return c;
}

inline std::vector<float> Iota(int64_t n, float start = 0.5f, float step = 0.25f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i % 13) - 0.1f * static_cast<float>(i % 3);
  return v;
}

// test.increment(Int) / test.decrement(Int) / test.add(Int, Int) / test.mul(Int, Int) / test.fail(String)
inline void RegisterTestFunctions() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto unary = [](int64_t delta) {
      return [delta](std::span<const vm::Value* const> args, vm::Value* out) -> Status {
        if (args.size() != 1 || !args[0]->is_int()) return Status::Error("expects one Int");
        *out = vm::Value::FromInt(args[0]->int_value() + delta);
        return Status::Ok();
      };
    };
    ASSERT_TRUE(vm::RegisterLibraryFunction("test.increment", unary(1), true).ok());
    ASSERT_TRUE(vm::RegisterLibraryFunction("test.decrement", unary(-1), true).ok());
    ASSERT_TRUE(vm::RegisterLibraryFunction(
                    "test.mul",
                    [](std::span<const vm::Value* const> args, vm::Value* out) -> Status {
                      if (args.size() != 2 || !args[0]->is_int() || !args[1]->is_int()) {
                        return Status::Error("test.mul expects two Ints");
                      }
                      *out = vm::Value::FromInt(args[0]->int_value() * args[1]->int_value());
                      return Status::Ok();
                    },
                    true)
                    .ok());
    ASSERT_TRUE(vm::RegisterLibraryFunction(
                    "test.fail",
                    [](std::span<const vm::Value* const> args, vm::Value*) -> Status {
                      return Status::Error("test.fail: " + (args.empty() ? std::string() : args[0]->Describe()));
                    },
                    true)
                    .ok());
  });
}

inline std::shared_ptr<const vm::Executable> LoadOrDie(const std::vector<uint8_t>& bytes) {
  auto exe = vm::Executable::LoadFromBytes(bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? exe.value() : nullptr;
}

inline std::string LoadError(const std::vector<uint8_t>& bytes) {
  auto exe = vm::Executable::LoadFromBytes(bytes);
  EXPECT_FALSE(exe.ok()) << "expected the load to fail";
  return exe.ok() ? std::string() : exe.status().message();
}

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/strata_" + std::to_string(::getpid()) + "_" + name;
}

inline void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace strata::testing
