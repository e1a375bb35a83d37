// A dynamic-shape model written as bytecode, for the soak and fault-injection
// tests: what the compiler emits for an attention-like block with two symbolic
// dimensions, built in C++ so that it runs in the runtime-only build.
//
//   main(x: f32[batch, seq, 32], kt: f32[batch, 32, seq]) -> f32[batch, seq, 32]
//       attrs {bound_batch = [1, 16], bound_seq = [1, 128]}
//     q      = dense(x, Wq)       strata.blas.dense, into an arena sized for the
//                                 bounds (PlanMemory's bounded plan: one block of
//                                 a fixed size serves every call)
//     scores = matmul(q, kt)      strata.blas.matmul, [batch, seq, seq]: a pooled
//                                 allocation whose size varies as seq^2
//     out    = matmul(scores, x)  the result, pooled
//
// Every intermediate is killed after its last use, as KillAfterLastUse does, so
// a call holds at most the arena, scores and out. With `post_library` set, the
// result also goes through that library function, called destination-passing
// as post(out, result) with result a pooled tensor of out's shape: the hook of
// the library-function fault test.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/memory_pool.h"
#include "vm/tensor.h"
#include "vm/value.h"

namespace strata::testing {

struct AttentionModel {
  static constexpr int64_t kDim = 32;
  static constexpr int64_t kMaxBatch = 16;
  static constexpr int64_t kMaxSeq = 128;
  // The arena of q, sized for the upper bounds.
  static constexpr int64_t kArenaBytes = kMaxBatch * kMaxSeq * kDim * 4;

  // Wq [32, 32], row-major: small values, so that results stay near 1.
  static std::vector<float> Weights() {
    std::vector<float> w(static_cast<size_t>(kDim * kDim));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 7 % 17) - 8) / 64.0f;
    return w;
  }

  static std::vector<uint8_t> Build(const std::string& post_library = "") {
    ExecutableBuilder b;
    const int alloc_heap = b.Library("vm.builtin.alloc_shape_heap");
    const int check = b.Library("vm.builtin.check_tensor_info");
    const int match = b.Library("vm.builtin.match_shape");
    const int make = b.Library("vm.builtin.make_shape");
    const int check_bound = b.Library("vm.builtin.check_bound");
    const int alloc_storage = b.Library("vm.builtin.alloc_storage");
    const int from_storage = b.Library("vm.builtin.alloc_tensor_from_storage");
    const int alloc = b.Library("vm.builtin.alloc_tensor");
    const int null = b.Library("vm.builtin.null");
    const int dense = b.Library("strata.blas.dense");
    const int matmul = b.Library("strata.blas.matmul");
    const int post = post_library.empty() ? -1 : b.Library(post_library);
    const int f32 = b.DType(DataType::F32());
    const int wq = b.Tensor<float>(DataType::F32(), {kDim, kDim}, Weights());
    const int ctx_x = b.String("main: parameter 'x'");
    const int ctx_kt = b.String("main: parameter 'kt'");
    const int ctx_mx = b.String("main: parameter 'x' (match_shape)");
    const int ctx_mkt = b.String("main: parameter 'kt' (match_shape)");
    const int ctx_batch = b.String("main: dimension 'batch' (the model was compiled for batch = 1..16)");
    const int ctx_seq = b.String("main: dimension 'seq' (the model was compiled for seq = 1..128)");
    const int batch = b.String("batch"), seq = b.String("seq"), dim = b.String("32");
    // Registers: 0 x, 1 kt, 2 heap, 3 shape scratch, 4 arena, 5 q, 6 scores, 7 out, 8 result.
    CodeBuilder code;
    code.Call(2, alloc_heap, {Imm(2)})
        .Call(kVoid, check, {R(0), Imm(3), C(f32), C(ctx_x)})
        .Call(kVoid, check, {R(1), Imm(3), C(f32), C(ctx_kt)})
        .Call(kVoid, match,
              {R(0), R(2), Imm(3), Imm(1), Imm(0), C(batch), Imm(1), Imm(1), C(seq), Imm(0), Imm(kDim), C(dim),
               C(ctx_mx)})
        .Call(kVoid, match,
              {R(1), R(2), Imm(3), Imm(2), Imm(0), C(batch), Imm(0), Imm(kDim), C(dim), Imm(2), Imm(1), C(seq),
               C(ctx_mkt)})
        .Call(3, make, {R(2), Imm(1), Imm(1), Imm(0)})
        .Call(kVoid, check_bound, {R(3), Imm(1), Imm(kMaxBatch), C(ctx_batch)})
        .Call(3, make, {R(2), Imm(1), Imm(1), Imm(1)})
        .Call(kVoid, check_bound, {R(3), Imm(1), Imm(kMaxSeq), C(ctx_seq)})
        // q in the bounded arena.
        .Call(4, alloc_storage, {Imm(kArenaBytes), Imm(64)})
        .Call(3, make, {R(2), Imm(3), Imm(1), Imm(0), Imm(1), Imm(1), Imm(0), Imm(kDim)})
        .Call(5, from_storage, {R(4), Imm(0), R(3), C(f32)})
        .Call(kVoid, dense, {R(0), C(wq), R(5)})
        // scores: pooled, [batch, seq, seq].
        .Call(3, make, {R(2), Imm(3), Imm(1), Imm(0), Imm(1), Imm(1), Imm(1), Imm(1)})
        .Call(6, alloc, {R(3), C(f32)})
        .Call(kVoid, matmul, {R(5), R(1), R(6)})
        .Call(5, null, {})
        .Call(4, null, {})
        // out: pooled, [batch, seq, 32].
        .Call(3, make, {R(2), Imm(3), Imm(1), Imm(0), Imm(1), Imm(1), Imm(0), Imm(kDim)})
        .Call(7, alloc, {R(3), C(f32)})
        .Call(kVoid, matmul, {R(6), R(0), R(7)})
        .Call(6, null, {});
    if (post >= 0) {
      code.Call(8, alloc, {R(3), C(f32)}).Call(kVoid, post, {R(7), R(8)}).Call(7, null, {}).Ret(8);
    } else {
      code.Ret(7);
    }
    b.Bytecode("main", {"x", "kt"}, 9, code);
    return b.Write();
  }

  // The inputs of one call: x [batch, seq, 32] and kt [batch, 32, seq], random
  // in [-1, 1], allocated from `pool` (a pool of the test's own, so that the
  // inputs' memory is recycled like the VM's and the soak measures the runtime,
  // not the fragmentation of the test's own allocations).
  struct Inputs {
    int64_t batch = 0, seq = 0;
    vm::Value x, kt;
    std::vector<vm::Value> Values() const { return {x, kt}; }
    const float* x_data() const { return x.tensor()->data_as<const float>(); }
    const float* kt_data() const { return kt.tensor()->data_as<const float>(); }
  };
  static Inputs RandomInputs(std::mt19937& rng, vm::MemoryPool& pool, int64_t batch, int64_t seq) {
    Inputs in;
    in.batch = batch;
    in.seq = seq;
    in.x = vm::Value::FromTensor(pool.AllocateTensor(std::vector<int64_t>{batch, seq, kDim}, DataType::F32()).value());
    in.kt = vm::Value::FromTensor(pool.AllocateTensor(std::vector<int64_t>{batch, kDim, seq}, DataType::F32()).value());
    // xorshift32 from a seed of `rng`: cheap enough for the unoptimized
    // sanitizer build, where mt19937 per element dominated the soak.
    uint32_t state = static_cast<uint32_t>(rng()) | 1u;
    for (vm::Tensor* t : {in.x.tensor(), in.kt.tensor()}) {
      float* data = t->data_as<float>();
      const int64_t n = t->num_elements();
      for (int64_t i = 0; i < n; ++i) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        data[i] = static_cast<float>(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
      }
    }
    return in;
  }

  // The result computed in double precision.
  static std::vector<double> Reference(const Inputs& in) {
    const int64_t n = in.batch, s = in.seq, d = kDim;
    const float* x = in.x_data();
    const float* kt = in.kt_data();
    const std::vector<float> w = Weights();
    std::vector<double> q(static_cast<size_t>(s * d)), scores(static_cast<size_t>(s)),
        out(static_cast<size_t>(n * s * d));
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < d; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < d; ++k) sum += double(x[(b * s + i) * d + k]) * w[j * d + k];
          q[i * d + j] = sum;
        }
      }
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < d; ++k) sum += q[i * d + k] * kt[(b * d + k) * s + j];
          scores[j] = sum;
        }
        for (int64_t j = 0; j < d; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < s; ++k) sum += scores[k] * x[(b * s + k) * d + j];
          out[(b * s + i) * d + j] = sum;
        }
      }
    }
    return out;
  }

  // The first element of `got` (the VM's result) further than float rounding
  // allows from `want` (by default the reference), as a message; empty when
  // all match.
  static std::string Mismatch(const Inputs& in, const vm::Value& got) { return Mismatch(in, got, Reference(in)); }
  static std::string Mismatch(const Inputs& in, const vm::Value& got, const std::vector<double>& want) {
    if (!got.is_tensor()) return "the result is " + got.Describe() + ", not a tensor";
    const std::string want_type =
        "Tensor[(" + std::to_string(in.batch) + ", " + std::to_string(in.seq) + ", " + std::to_string(kDim) + "), f32]";
    if (got.tensor()->TypeString() != want_type) return "the result is " + got.tensor()->TypeString();
    const float* data = got.tensor()->data_as<const float>();
    for (size_t i = 0; i < want.size(); ++i) {
      // Sums of up to 32 * 128 products of values near 1, accumulated in float.
      if (!(std::fabs(data[i] - want[i]) <= 1e-3 + 1e-4 * std::fabs(want[i]))) {
        return "element " + std::to_string(i) + " is " + std::to_string(data[i]) + ", expected " +
               std::to_string(want[i]) + " (batch " + std::to_string(in.batch) + ", seq " + std::to_string(in.seq) +
               ")";
      }
    }
    return "";
  }
};

}  // namespace strata::testing
