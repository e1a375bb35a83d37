// Constant matmul / dense weights packed at compile time (PackWeights +
// packed_matmul) end to end: at odd sizes (1 column, 7, 33 and 100 columns:
// partial panels; reductions of 1, 13 and 300: shorter than, and past, one
// reduction slice of 256), with a symbolic row count run at 1..5 rows (the
// per-row panel kernel), 7, 13 and 29 (the register-tiled GEMM with partial
// tiles), batched leading dimensions, a bias and a fused epilogue. The
// reference is a plain triple loop in double precision over the same values.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/pack_weights.h"
#include "compiler/transform/pass.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

struct Case {
  int64_t k, n;
  bool dense;  // dense(x, W[n, k], bias) + relu, else matmul(x, W[k, n]) over a batch of 2
};

// out[b, i, j] = sum_k x[b, i, k] * B[k, j] (+ bias[j], relu for dense), B[k][j] =
// w[k * n + j] (matmul) or w[j * k + k'] (dense).
std::vector<float> Reference(const Case& c, int64_t rows, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias) {
  std::vector<float> out(static_cast<size_t>(rows * c.n));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const float b = c.dense ? w[static_cast<size_t>(j * c.k + kk)] : w[static_cast<size_t>(kk * c.n + j)];
        sum += static_cast<double>(x[static_cast<size_t>(i * c.k + kk)]) * b;
      }
      if (c.dense) sum = std::max(sum + bias[static_cast<size_t>(j)], 0.0);
      out[static_cast<size_t>(i * c.n + j)] = static_cast<float>(sum);
    }
  }
  return out;
}

TEST(PackedWeights, MatchTheReferenceAtOddSizesAndEveryRowCount) {
  for (const Case& c : {Case{1, 1, false}, Case{13, 7, false}, Case{300, 33, false}, Case{13, 100, true},
                        Case{300, 33, true}, Case{1, 7, true}}) {
    SCOPED_TRACE("k = " + std::to_string(c.k) + ", n = " + std::to_string(c.n) + (c.dense ? ", dense" : ", matmul"));
    const std::vector<float> w = DeterministicValues(c.k * c.n, static_cast<uint32_t>(c.k * 131 + c.n));
    const std::vector<float> bias = DeterministicValues(c.n, 99);
    const std::string k = std::to_string(c.k), n = std::to_string(c.n);
    std::string text;
    if (c.dense) {
      text = "func @main(x: Tensor[(m, " + k + "), f32]) -> Tensor[(m, " + n + "), f32] {\n  dataflow {\n" +
             "    y = dense(x, " + ConstTensorText({c.n, c.k}, w) + ", " + ConstTensorText({c.n}, bias) + ")\n" +
             "    r = relu(y)\n    output r\n  }\n  return r\n}\n";
    } else {
      text = "func @main(x: Tensor[(2, m, " + k + "), f32]) -> Tensor[(2, m, " + n + "), f32] {\n  dataflow {\n" +
             "    y = matmul(x, " + ConstTensorText({c.k, c.n}, w) + ")\n    output y\n  }\n  return y\n}\n";
    }
    auto module = ir::ParseModule(text, "packed.sir");
    ASSERT_TRUE(module.ok()) << module.status().message();
    auto lowered = driver::Lower(*module, {});
    ASSERT_TRUE(lowered.ok()) << lowered.status().message();
    const std::string lowered_text = ir::PrintModule(*lowered);
    EXPECT_NE(lowered_text.find(c.dense ? "prim_func @fused_packed_matmul_relu(" : "prim_func @packed_matmul("),
              std::string::npos);
    EXPECT_EQ(lowered_text.find("prim_func @matmul("), std::string::npos);
    auto bytes = driver::Compile(std::move(module).value(), {});
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto exe = vm::Executable::LoadFromBytes(*bytes);
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    vm::VirtualMachine machine(*exe);
    for (int64_t m : {1, 2, 3, 4, 5, 7, 13, 29}) {
      SCOPED_TRACE("m = " + std::to_string(m));
      const int64_t batch = c.dense ? 1 : 2;
      const std::vector<float> x = DeterministicValues(batch * m * c.k, static_cast<uint32_t>(m));
      std::vector<int64_t> x_shape = {m, c.k};
      if (!c.dense) x_shape.insert(x_shape.begin(), 2);
      auto input = vm::Tensor::FromValues<float>(x_shape, x);
      ASSERT_TRUE(input.ok());
      std::vector<vm::Value> args = {vm::Value::FromTensor(*input)};
      auto result = machine.Invoke("main", args);
      ASSERT_TRUE(result.ok()) << result.status().message();
      const std::vector<float> got = result->tensor()->ToVector<float>().value();
      std::vector<float> want = Reference(c, batch * m, x, w, bias);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::sqrt(static_cast<double>(c.k)))) << "element " << i;
      }
    }
  }
}

// A tied embedding (GPT-2's token table is also its LM head, transposed): the
// table is stored once, as the head's panels, and the lookup reads them
// (take_panel_columns), with take's negative indices and its range check.
TEST(PackedWeights, ATiedEmbeddingIsStoredOnceAndLooksUpThePanels) {
  const int64_t vocab = 45, dim = 5;  // two panels, the second partly padding
  const std::vector<float> table = DeterministicValues(vocab * dim, 7);
  std::vector<float> transposed(table.size());
  for (int64_t v = 0; v < vocab; ++v) {
    for (int64_t d = 0; d < dim; ++d)
      transposed[static_cast<size_t>(d * vocab + v)] = table[static_cast<size_t>(v * dim + d)];
  }
  const std::string text = "func @main(ids: Tensor[(1, s), i64]) -> Tensor[(1, s, " + std::to_string(vocab) +
                           "), f32] {\n  dataflow {\n    e = take(" + ConstTensorText({vocab, dim}, table) +
                           ", ids, axis=0)\n    h = relu(e)\n    y = matmul(h, " +
                           ConstTensorText({dim, vocab}, transposed) + ")\n    output y\n  }\n  return y\n}\n";
  auto module = ir::ParseModule(text, "tied.sir");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto lowered = driver::Lower(*module, {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const std::string lowered_text = ir::PrintModule(*lowered);
  EXPECT_NE(lowered_text.find("take_panel_columns"), std::string::npos);
  EXPECT_EQ(lowered_text.find("prim_func @take("), std::string::npos);
  // Neither the table nor its transpose is kept beside the panels.
  EXPECT_EQ(lowered_text.find("const(Tensor[(45, 5), f32]"), std::string::npos);
  EXPECT_EQ(lowered_text.find("const(Tensor[(5, 45), f32]"), std::string::npos);
  EXPECT_NE(lowered_text.find("const(Tensor[(2, 5, 32), f32]"), std::string::npos);
  auto bytes = driver::Compile(std::move(module).value(), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  const std::vector<int64_t> ids = {0, 44, -1, 31, 32, -45, 7};
  const std::vector<int64_t> ids_shape = {1, static_cast<int64_t>(ids.size())};
  auto input = vm::Tensor::FromValues<int64_t>(ids_shape, ids);
  ASSERT_TRUE(input.ok());
  const std::vector<vm::Value> args = {vm::Value::FromTensor(*input)};
  auto result = machine.Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const std::vector<float> got = result->tensor()->template ToVector<float>().value();
  ASSERT_EQ(got.size(), ids.size() * vocab);
  for (size_t t = 0; t < ids.size(); ++t) {
    const int64_t row = ids[t] < 0 ? ids[t] + vocab : ids[t];
    for (int64_t j = 0; j < vocab; ++j) {
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d) {
        sum += std::max(table[static_cast<size_t>(row * dim + d)], 0.0f) * table[static_cast<size_t>(j * dim + d)];
      }
      ASSERT_NEAR(got[t * vocab + static_cast<size_t>(j)], sum, 1e-5) << "token " << t << ", column " << j;
    }
  }
  auto bad = vm::Tensor::FromValues<int64_t>({1, 2}, {3, 45});
  ASSERT_TRUE(bad.ok());
  const std::vector<vm::Value> bad_args = {vm::Value::FromTensor(*bad)};
  auto error = machine.Invoke("main", bad_args);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("argument 'indices' holds an index out of range for axis 0 of the table "
                                          "(extent 45); indices must lie in [-45, 45)"),
            std::string::npos)
      << error.status().message();
}

// A dispatch pass placed before LegalizeOps (cpu-blas here) runs before its
// packing step, so it still sees the dense layer with its constant weight.
TEST(PackedWeights, ADispatchBeforeLegalizeOpsStillSeesTheOriginalCall) {
  const int64_t n = 128, k = 256;  // n * k at cpu-blas's threshold (symbolic rows count as 1)
  const std::string text = "func @main(x: Tensor[(m, " + std::to_string(k) + "), f32]) -> Tensor[(m, " +
                           std::to_string(n) + "), f32] {\n  y = dense(x, " +
                           ConstTensorText({n, k}, DeterministicValues(n * k, 5)) + ")\n  return y\n}\n";
  for (bool blas : {false, true}) {
    SCOPED_TRACE(blas ? "with cpu-blas" : "default");
    auto module = ir::ParseModule(text, "dense.sir");
    ASSERT_TRUE(module.ok()) << module.status().message();
    driver::CompileOptions options;
    if (blas) options.passes_before.emplace_back("LegalizeOps", "cpu-blas");
    auto lowered = driver::Lower(*module, options);
    ASSERT_TRUE(lowered.ok()) << lowered.status().message();
    const std::string lowered_text = ir::PrintModule(*lowered);
    EXPECT_EQ(lowered_text.find("\"strata.blas.dense\"") != std::string::npos, blas) << lowered_text.substr(0, 2000);
    EXPECT_EQ(lowered_text.find("packed_matmul") != std::string::npos, !blas);
  }
}

// The packed-weight calls PackWeights made, by binding name: their panels argument.
std::map<std::string, graph::Expr> PackedPanels(const ir::IRModule& module) {
  std::map<std::string, graph::Expr> panels;
  const auto* seq = module.GetGraphFunction("main")->body.as<graph::SeqExprNode>();
  for (const graph::BindingBlock& block : seq->blocks) {
    for (const graph::Binding& b : block.bindings) {
      const auto* call = b.value.as<graph::CallNode>();
      const auto* op = call ? call->op.as<graph::OpNode>() : nullptr;
      if (op != nullptr && op->name == "packed_matmul") panels[b.var->name] = call->args[1];
    }
  }
  return panels;
}

TEST(PackedWeights, AWeightSharedByTwoCallsIsPackedOnce) {
  const std::string text =
      "func @main(x: Tensor[(m, 2), f32]) -> Tensor[(m, 2), f32] {\n  w = " + ConstTensorText({2, 2}, {1, 2, 3, 4}) +
      "\n  a = matmul(x, w)\n  b = matmul(a, w)\n  c = dense(b, w)\n  return c\n}\n";
  auto module = ir::ParseModule(text, "tied.sir");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto normalized = transform::GetPass("Normalize")->run(*module, transform::PassContext());
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  auto packed = transform::PackWeights(*normalized);
  ASSERT_TRUE(packed.ok()) << packed.status().message();
  std::map<std::string, graph::Expr> panels = PackedPanels(*packed);
  ASSERT_EQ(panels.size(), 3u);
  EXPECT_TRUE(panels["a"].same_as(panels["b"]));   // one constant in the executable
  EXPECT_FALSE(panels["a"].same_as(panels["c"]));  // dense packs the transpose
  // An operator LegalizeOps was told to legalize another way is left alone.
  auto except_matmul = transform::PackWeights(*normalized, {"matmul"});
  ASSERT_TRUE(except_matmul.ok());
  panels = PackedPanels(*except_matmul);
  EXPECT_EQ(panels.size(), 1u);
  EXPECT_EQ(panels.count("c"), 1u);
}

}  // namespace
}  // namespace strata::testing
