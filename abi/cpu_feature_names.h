// The CPU features native code may require, in LLVM's spellings ("avx2",
// "avx512f"): the compiler records which of these its code may use
// (NativeModule.cpu_features) and the runtime checks each before it loads the
// code (vm/cpu_features.h, which detects them). Only features in this list are
// recorded, because only these can be checked.
#pragma once

#include <array>
#include <string_view>

namespace strata::abi {

#if defined(__x86_64__)
inline constexpr std::array<std::string_view, 27> kCheckableCpuFeatures = {
    "sse2",        "sse3",       "ssse3",      "sse4.1",       "sse4.2",
    "popcnt",      "avx",        "avx2",       "fma",          "f16c",
    "bmi",         "bmi2",       "movbe",      "avx512f",      "avx512bw",
    "avx512cd",    "avx512dq",   "avx512vl",   "avx512ifma",   "avx512vbmi",
    "avx512vbmi2", "avx512vnni", "avx512bf16", "avx512bitalg", "avx512vpopcntdq",
    "avxvnni",     "gfni",
};
#else
inline constexpr std::array<std::string_view, 0> kCheckableCpuFeatures = {};
#endif

}  // namespace strata::abi
