// The ONNX front end: the model zoo (tests/fixtures/onnx, exported from PyTorch
// by scripts/onnx/export_zoo.py, references from onnxruntime) compiled once per
// model and run at every exported shape, and the errors for models Strata
// cannot import.
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "compiler/driver/compile.h"
#include "compiler/driver/pipeline.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/printer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/plugged_device.h"
#include "vm/tensor_io/npy.h"
#include "vm/tensor_io/tensor_compare.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

// The first word of each line of `path`: the names in a fixture's inputs.txt / outputs.txt.
std::vector<std::string> FirstWords(const fs::path& path) {
  std::vector<std::string> words;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) words.push_back(line.substr(0, line.find(' ')));
  }
  return words;
}

// Imports `dir`/model.onnx, compiles it once, and checks every run_<k> (inputs
// in<i>.npy, outputs out<i>.npy from onnxruntime), whatever the dtypes, and that
// main keeps the graph's input and output names (inputs.txt, outputs.txt).
// `check_exe` (optional) asserts on the compiled executable (what was offloaded).
void CheckOnnxFixture(const fs::path& dir, double rtol, double atol, int min_runs,
                      const driver::CompileOptions& options = {},
                      const std::function<void(const vm::Executable&)>& check_exe = nullptr) {
  auto module = frontend::ImportOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  if (check_exe) check_exe(**exe);
  std::optional<int32_t> main = (*exe)->FindEntryPoint("main");
  ASSERT_TRUE(main.has_value());
  EXPECT_EQ((*exe)->functions()[static_cast<size_t>(*main)].input_names, FirstWords(dir / "inputs.txt"));
  EXPECT_EQ((*exe)->functions()[static_cast<size_t>(*main)].output_names, FirstWords(dir / "outputs.txt"));
  vm::VirtualMachine machine(*exe);
  const vm::Tolerance tolerance{rtol, atol};
  int runs = 0;
  for (int k = 0; fs::exists(dir / ("run_" + std::to_string(k))); ++k, ++runs) {
    SCOPED_TRACE("run_" + std::to_string(k));
    const fs::path run = dir / ("run_" + std::to_string(k));
    std::vector<vm::Value> inputs;
    for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
      auto t = vm::ReadNpyFile((run / ("in" + std::to_string(i) + ".npy")).string());
      ASSERT_TRUE(t.ok()) << t.status().message();
      inputs.push_back(vm::Value::FromTensor(*t));
    }
    auto result = machine.Invoke("main", inputs);
    ASSERT_TRUE(result.ok()) << result.status().message();
    std::vector<vm::Value> outputs;
    if (result->is_tuple()) {
      for (const vm::Value& field : result->tuple()->fields()) outputs.push_back(field);
    } else {
      outputs.push_back(*result);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto expected = vm::ReadNpyFile((run / ("out" + std::to_string(i) + ".npy")).string());
      ASSERT_TRUE(expected.ok()) << expected.status().message();
      ASSERT_TRUE(outputs[i].is_tensor()) << outputs[i].Describe();
      auto c = vm::CompareTensors(*outputs[i].tensor(), **expected, tolerance);
      ASSERT_TRUE(c.ok()) << "output " << i << ": " << c.status().message();
      EXPECT_TRUE(c->ok()) << "output " << i << ": " << vm::DescribeMismatch(*c, tolerance);
    }
  }
  EXPECT_GE(runs, min_runs);
}

std::vector<std::string> FixtureFolders(const std::string& relative) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(SourcePath(relative), ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class OnnxZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxZoo, CompilesOnceAndMatchesOnnxRuntimeAtEveryShape) {
  CheckOnnxFixture(fs::path(SourcePath("tests/fixtures/onnx")) / GetParam(), 1e-4, 1e-5, 3);
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxZoo, ::testing::ValuesIn(FixtureFolders("tests/fixtures/onnx")));

// Every zoo model through the offloading pipelines too: BYOC oneDNN (its
// convolutions and matmuls must be offloaded), the BYOC C code generator, and
// the simulated NPU target (some kernels must run on the device), compiled
// once for every shape and matched against onnxruntime at each.
class OnnxZooOffload : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OnnxZooOffload, OffloadsAndMatchesOnnxRuntimeAtEveryShape) {
  const auto& [model, pipeline] = GetParam();
  driver::CompileOptions options;
  std::function<void(const vm::Executable&)> check;
  if (pipeline == "byoc_ccodegen") {
    // The tutorial backend only takes dense + bias (+ relu); models whose
    // layers are matmuls (the transformers) offload nothing and must still
    // compile and match.
    options.byoc_backends = {"ccodegen"};
  } else if (pipeline == "byoc_dnnl") {
    const std::string backend = "dnnl";
    options.byoc_backends = {backend};
    check = [backend](const vm::Executable& exe) {
      int offloaded = 0;
      for (const vm::VMFunction& f : exe.functions()) offloaded += f.backend == backend;
      EXPECT_GT(offloaded, 0) << "nothing was offloaded to " << backend;
    };
  } else {
    vm::RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN);
    options.device_targets = {"npu"};
    check = [](const vm::Executable& exe) {
      int device = 0;
      for (const vm::VMFunction& f : exe.functions()) device += f.kind == vm::FunctionKind::kDevice;
      EXPECT_GT(device, 0) << "no kernel runs on the NPU";
    };
  }
  CheckOnnxFixture(fs::path(SourcePath("tests/fixtures/onnx")) / model, 1e-4, 1e-5, 3, options, check);
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxZooOffload,
                         ::testing::Combine(::testing::ValuesIn(FixtureFolders("tests/fixtures/onnx")),
                                            ::testing::Values("byoc_dnnl", "byoc_ccodegen", "target_npu")),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// One ONNX operator (or a short chain) per case, written by
// scripts/onnx/export_op_tests.py with onnx.helper, references from onnxruntime.
class OnnxOps : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxOps, MatchesOnnxRuntime) {
  CheckOnnxFixture(fs::path(SourcePath("tests/fixtures/onnx_ops")) / GetParam(), 1e-4, 1e-5, 2);
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxOps, ::testing::ValuesIn(FixtureFolders("tests/fixtures/onnx_ops")),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OnnxImport, DynamicAxesStaySymbolicAndShapeChainsFoldAtCompileTime) {
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/transformer/model.onnx"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  const std::string text = ir::PrintModule(*module);
  EXPECT_NE(text.find("func @main(tokens: Tensor[(batch, seq), i64]) -> Tensor[(batch, seq, 100), f32]"),
            std::string::npos);
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape became a symbolic shape.
  EXPECT_NE(text.find("reshape(_layer_self_attn_q_Add_output_0, shape(batch, -1, 4, 8))"), std::string::npos);
  EXPECT_EQ(text.find("shape_of"), std::string::npos);
  EXPECT_NE(text.find("arange(shape(seq)"), std::string::npos);
}

// A hand-written tensor program (no operator registration) attaches to an imported model exactly
// as to text IR (--tir-library), and the result is still the model's.
TEST(OnnxImport, AUsersTensorProgramReplacesAnOperatorOfAnImportedModel) {
  driver::CompileOptions options;
  options.tir_library_paths = {SourcePath("examples/onnx_custom_kernel/softmax10.sir")};
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/mlp/model.onnx"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto lowered = driver::Lower(*module, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const std::string text = ir::PrintModule(*lowered);
  EXPECT_NE(text.find(" = @softmax10("), std::string::npos) << text;  // the kernel call after CallTIRRewrite
  EXPECT_EQ(text.find("prim_func @softmax("), std::string::npos) << text;
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  for (int k : {0, 1, 2}) {
    const std::string run = "onnx/mlp/run_" + std::to_string(k);
    std::vector<vm::Value> inputs = {LoadFixture(run + "/in0.npy")};
    auto result = machine.Invoke("main", inputs);
    ASSERT_TRUE(result.ok()) << result.status().message();
    ExpectTensorNear(*result, LoadFixture(run + "/out0.npy"), 1e-4f, 1e-5f);
  }
}

// --dump-ir of a model with real weights: large constants go to one
// constants.bin shared by every dump, and every dump still parses.
TEST(OnnxImport, DumpIrKeepsWeightsInABinaryFileAndEveryDumpParsesBack) {
  const fs::path dir = fs::temp_directory_path() / ("strata_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  driver::CompileOptions options;
  options.dump_ir_dir = dir.string();
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/transformer/model.onnx"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  ASSERT_TRUE(fs::exists(dir / "constants.bin"));
  EXPECT_GT(fs::file_size(dir / "constants.bin"), 60000u);  // the embeddings and projections
  int dumps = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".sir") continue;
    ++dumps;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_LT(text.size(), 100000u) << entry.path();
    auto reparsed = driver::LoadModuleFile(entry.path().string());
    EXPECT_TRUE(reparsed.ok()) << reparsed.status().message();
  }
  EXPECT_GE(dumps, 4);
  fs::remove_all(dir);
}

// A minimal model: y = <op>(x) on a (n, 4) f32 input.
std::string OneNodeModel(const std::string& op_type, int64_t opset, const std::string& domain = "") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* set = model.add_opset_import();
  set->set_domain("");
  set->set_version(opset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  auto* t = x->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("n");
  t->mutable_shape()->add_dim()->set_dim_value(4);
  auto* node = g->add_node();
  node->set_name("the_node");
  node->set_op_type(op_type);
  node->set_domain(domain);
  node->add_input("x");
  node->add_output("y");
  auto* y = g->add_output();
  y->set_name("y");
  return model.SerializeAsString();
}

// Clients ask for inputs and outputs by the model's names ("input.1", "probs"): the
// importer records them on main, every pass keeps them, and the executable has them.
TEST(OnnxImport, TheGraphsInputAndOutputNamesSurviveCompilation) {
  const fs::path dir = fs::path(SourcePath("tests/fixtures/onnx_ops")) / "graph_io_names";
  std::ifstream file(dir / "model.onnx", std::ios::binary);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromIstream(&file));
  // An initializer that is a graph input too is no parameter, and has no input name.
  *model.mutable_graph()->add_input() = model.graph().input(0);
  model.mutable_graph()->mutable_input(2)->set_name("w");
  auto module = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const graph::Function main = module->GetGraphFunction("main");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->params.size(), 2u);
  EXPECT_EQ(main->params[0]->name, "input_1");
  EXPECT_EQ(main->params[1]->name, "mask_0");
  const std::vector<std::string> inputs = {"input.1", "mask/0"}, outputs = {"probs", "logits"};
  EXPECT_EQ(std::get<std::vector<std::string>>(main->attrs.at("input_names")), inputs);
  EXPECT_EQ(std::get<std::vector<std::string>>(main->attrs.at("output_names")), outputs);
  const std::string text = ir::PrintModule(*module);
  EXPECT_NE(text.find("input_names = [\"input.1\", \"mask/0\"], output_names = [\"probs\", \"logits\"]"),
            std::string::npos)
      << text;

  // Every pipeline: the default one, without fusion or memory planning, and with BYOC.
  std::vector<driver::CompileOptions> pipelines(4);
  pipelines[1].fuse = false;
  pipelines[2].plan_memory = false;
  pipelines[3].byoc_backends = {"dnnl"};
  for (const driver::CompileOptions& options : pipelines) {
    auto bytes = driver::Compile(*module, options);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto exe = vm::Executable::LoadFromBytes(*bytes);
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    const vm::VMFunction& f = (*exe)->functions()[static_cast<size_t>(*(*exe)->FindEntryPoint("main"))];
    EXPECT_EQ(f.param_names, (std::vector<std::string>{"input_1", "mask_0"}));
    EXPECT_EQ(f.input_names, inputs);
    EXPECT_EQ(f.output_names, outputs);
  }
}

TEST(OnnxImport, AGraphOutputListedTwiceIsRefusedByName) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Relu", 17)));
  *model.mutable_graph()->add_output() = model.graph().output(0);
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: graph output 'y' is listed twice (outputs 0 and 1); output names must be distinct");
}

TEST(OnnxImport, ErrorsNameTheNodeOpTypeAndOpset) {
  auto unsupported = frontend::ImportOnnxBytes(OneNodeModel("StringNormalizer", 17), "m.onnx");
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.status().message(),
            "m.onnx: node 'the_node' (StringNormalizer, opset 17): operator StringNormalizer is not supported by "
            "Strata's ONNX importer");
  EXPECT_EQ(unsupported.status().code(), StatusCode::kUnimplemented);
  auto domain = frontend::ImportOnnxBytes(OneNodeModel("Relu", 17, "com.microsoft"), "m.onnx");
  ASSERT_FALSE(domain.ok());
  EXPECT_EQ(domain.status().message(),
            "m.onnx: node 'the_node' (Relu, opset 17): operators of domain 'com.microsoft' are not supported");
  auto old = frontend::ImportOnnxBytes(OneNodeModel("Relu", 11), "m.onnx");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().message(),
            "m.onnx: the model uses ONNX opset 11; Strata imports opsets 13 to 21 (re-export with opset_version in "
            "that range)");
  auto newer = frontend::ImportOnnxBytes(OneNodeModel("Relu", 22), "m.onnx");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().message(),
            "m.onnx: the model uses ONNX opset 22; Strata imports opsets 13 to 21 (re-export with opset_version in "
            "that range)");
  auto garbage = frontend::ImportOnnxBytes("this is not protobuf \xff\xff", "m.onnx");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().message(), "m.onnx: not a valid ONNX model (protobuf parse failed)");
  frontend::OnnxImportOptions bounds;
  bounds.dim_bounds["batch"] = {1, 64};
  auto unknown_dim = frontend::ImportOnnxBytes(OneNodeModel("Relu", 17), "m.onnx", bounds);
  ASSERT_FALSE(unknown_dim.ok());
  EXPECT_EQ(unknown_dim.status().message(),
            "m.onnx: --dynamic batch=1..64: the model has no dynamic dimension named 'batch' (it has: n)");
  auto missing = frontend::ImportOnnxFile("/nonexistent/model.onnx");
  EXPECT_EQ(missing.status().message(), "cannot open '/nonexistent/model.onnx': No such file or directory");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // The file is mapped, not streamed: a directory and an empty file are refused
  // by name, and a file that parses imports as the same bytes would.
  const std::string dir = ::testing::TempDir();
  auto directory = frontend::ImportOnnxFile(dir);
  EXPECT_EQ(directory.status().message(), "cannot read '" + dir + "': it is a directory");
  const std::string empty_path = dir + "/strata_empty.onnx", relu_path = dir + "/strata_relu.onnx";
  { std::ofstream(empty_path, std::ios::binary); }
  auto empty = frontend::ImportOnnxFile(empty_path);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find(empty_path + ": "), std::string::npos) << empty.status().message();
  std::ofstream(relu_path, std::ios::binary) << OneNodeModel("Relu", 17);
  auto from_file = frontend::ImportOnnxFile(relu_path);
  auto from_bytes = frontend::ImportOnnxBytes(OneNodeModel("Relu", 17), relu_path);
  ASSERT_TRUE(from_file.ok() && from_bytes.ok()) << from_file.status().message();
  EXPECT_EQ(ir::PrintModule(*from_file), ir::PrintModule(*from_bytes));
}

// Found by onnx_import_fuzzer: a node without outputs made the converter read
// output(0), which protobuf answers with an exception (the process aborted).
TEST(OnnxImport, ANodeWithoutOutputsIsRefusedByName) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Transpose", 17)));
  model.mutable_graph()->mutable_node(0)->clear_output();
  model.mutable_graph()->clear_output();
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (Transpose, opset 17): the node has no outputs (every operator has at least one)");
}

TEST(OnnxImport, ANormalizationOfIntegersIsRefusedByName) {
  // ONNX defines InstanceNormalization and GroupNormalization on floats only; a
  // uint8 input (with an epsilon no uint8 holds) once reached the scalar cast.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("InstanceNormalization", 17)));
  auto* x = model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
  x->set_elem_type(onnx::TensorProto::UINT8);
  x->mutable_shape()->add_dim()->set_dim_value(3);
  auto* epsilon = model.mutable_graph()->mutable_node(0)->add_attribute();
  epsilon->set_name("epsilon");
  epsilon->set_type(onnx::AttributeProto::FLOAT);
  epsilon->set_f(3.4e35f);
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (InstanceNormalization, opset 17): the input must be a float tensor, not u8");
}

TEST(OnnxImport, AnF16FillValueKeepsItsValue) {
  // ConstantOfShape(Shape(x)) with value = f16 1.5: the importer once read the
  // 2-byte value as a double, 8 bytes (a heap overflow, and a wrong fill).
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Shape", 17)));
  onnx::GraphProto* g = model.mutable_graph();
  auto* fill = g->add_node();
  fill->set_name("fill");
  fill->set_op_type("ConstantOfShape");
  fill->add_input("y");
  fill->add_output("z");
  auto* value = fill->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT16);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int32_data(0x3e00);  // 1.5 in binary16
  g->mutable_output(0)->set_name("z");
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const std::string text = ir::PrintModule(*imported);
  EXPECT_NE(text.find("full(shape(n, 4), dtype=f16, fill_value=1.5)"), std::string::npos) << text;
}

TEST(OnnxImport, ShapeArithmeticBroadcastsAnEmptyVectorAsNumpyDoes) {
  // Add(e, one) of integer constants e (0,) and one (1,) is evaluated at import
  // time like a shape computation; numpy broadcasts it to (0,). The importer
  // once indexed past the empty operand.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Add", 17)));
  onnx::GraphProto* g = model.mutable_graph();
  auto* e = g->add_initializer();
  e->set_name("e");
  e->set_data_type(onnx::TensorProto::INT64);
  e->add_dims(0);
  auto* one = g->add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::INT64);
  one->add_dims(1);
  one->add_int64_data(1);
  g->mutable_node(0)->set_input(0, "e");
  g->mutable_node(0)->add_input("one");
  for (const auto& [lhs, rhs] : {std::pair{"e", "one"}, std::pair{"one", "e"}}) {
    g->mutable_node(0)->set_input(0, lhs);
    g->mutable_node(0)->set_input(1, rhs);
    auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
    ASSERT_TRUE(imported.ok()) << imported.status().message();
    const std::string text = ir::PrintModule(*imported);
    EXPECT_NE(text.find("-> Tensor[(0,), i64]"), std::string::npos) << text;
  }
}

TEST(OnnxImport, ConvolutionsOfConstantInputsImport) {
  // Conv and ConvTranspose read the rank of their data input from struct info
  // that, for a constant, is built on the fly; the converter once kept a
  // pointer into it past its lifetime (ASan: heap-use-after-free).
  for (const char* op : {"Conv", "ConvTranspose"}) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(OneNodeModel(op, 17)));
    onnx::GraphProto* g = model.mutable_graph();
    for (const char* name : {"c", "w"}) {
      auto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      for (int d : {1, 1, 3, 3}) t->add_dims(d);
      for (int i = 0; i < 9; ++i) t->add_float_data(static_cast<float>(i));
    }
    g->mutable_node(0)->set_input(0, "c");
    g->mutable_node(0)->add_input("w");
    auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
    ASSERT_TRUE(imported.ok()) << op << ": " << imported.status().message();
    const std::string shape = std::string(op) == "Conv" ? "(1, 1, 1, 1)" : "(1, 1, 5, 5)";
    EXPECT_NE(ir::PrintModule(*imported).find("-> Tensor[" + shape + ", f32]"), std::string::npos)
        << op << ":\n"
        << ir::PrintModule(*imported);
  }
}

TEST(OnnxImport, ASliceBoundComputedFromTensorDataIsRefusedByName) {
  // ends is a graph input (data, not a shape): no program could have a shape
  // for the result at compile time, so the node is refused and says why.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Slice", 17)));
  onnx::GraphProto* g = model.mutable_graph();
  auto* ends = g->add_input();
  ends->set_name("ends");
  auto* t = ends->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim()->set_dim_value(1);
  auto* starts = g->add_initializer();
  starts->set_name("starts");
  starts->set_data_type(onnx::TensorProto::INT64);
  starts->add_dims(1);
  starts->add_int64_data(0);
  g->mutable_node(0)->add_input("starts");
  g->mutable_node(0)->add_input("ends");
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (Slice, opset 17): ends (input 2) must be computed from shapes or constants, not "
            "from tensor data (Strata compiles one program for every shape, and a data-dependent slice has no shape "
            "at compile time)");
}

TEST(OnnxImport, SplitSizesComputedFromTensorDataAreRefusedByName) {
  // Split sizes from shapes become symbolic slices (fixture
  // split_sizes_from_shape); sizes that are tensor data have no shape at
  // compile time, so the node is refused and says why.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Split", 18)));
  onnx::GraphProto* g = model.mutable_graph();
  auto* sizes = g->add_input();
  sizes->set_name("sizes");
  auto* t = sizes->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  onnx::NodeProto* split = g->mutable_node(0);
  split->add_input("sizes");
  split->add_output("z");
  g->add_output()->set_name("z");
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (Split, opset 18): split (input 1) must be computed from shapes or constants, not "
            "from tensor data (Strata compiles one program for every shape, and a data-dependent slice has no shape "
            "at compile time)");
  EXPECT_EQ(imported.status().code(), StatusCode::kUnimplemented);
}

TEST(OnnxImport, AnEinsumOutsideTheSupportedFormsIsRefusedNamingTheEquation) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Einsum", 17)));
  onnx::NodeProto* einsum = model.mutable_graph()->mutable_node(0);
  einsum->add_input("x");
  auto* equation = einsum->add_attribute();
  equation->set_name("equation");
  equation->set_type(onnx::AttributeProto::STRING);
  equation->set_s("ij,jk->k");
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (Einsum, opset 17): equation 'ij,jk->k': letter 'i' is summed within one "
            "operand (supported: two operands, an explicit output, no '...' and no repeated letters)");
  EXPECT_EQ(imported.status().code(), StatusCode::kUnimplemented);
}

TEST(OnnxImport, BatchNormsAfterConvolutionsFoldIntoTheirWeights) {
  // Every Conv -> BatchNormalization of the ResNet fixture becomes one conv2d
  // with constant weights and one bias_add of a constant (FoldBatchNorm, then
  // FoldConstants); the zoo tests check the folded model's numbers.
  auto imported = frontend::ImportOnnxFile(
      (fs::path(SourcePath("tests/fixtures/onnx")) / "resnet_basicblock" / "model.onnx").string());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  ASSERT_NE(ir::PrintModule(*imported).find("batch_norm("), std::string::npos);
  driver::RegisterCompilerPasses();
  auto fold = transform::Pipeline::FromNames({"Normalize", "WellFormed", "Canonicalize", "FoldBatchNorm",
                                              "FoldConstants", "EliminateCommonSubexpr", "DeadCodeElimination"});
  ASSERT_TRUE(fold.ok()) << fold.status().message();
  auto module = fold->Run(std::move(imported).value());
  ASSERT_TRUE(module.ok()) << module.status().message();
  const std::string text = ir::PrintModule(*module);
  for (const char* gone : {"batch_norm(", "sqrt(", "multiply(", "divide("}) {
    EXPECT_EQ(text.find(gone), std::string::npos) << gone << " in:\n" << text;
  }
}

TEST(OnnxImport, WorkOnWeightsAloneIsFoldedAtCompileTime) {
  // y = x @ Transpose(W) * 2: the transpose of the initializer and its scaling
  // become one constant (FoldConstants, in the pipeline after FoldBatchNorm); only the
  // matmul remains a call.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Identity", 17)));
  onnx::GraphProto* g = model.mutable_graph();
  g->clear_node();
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(4);
  for (int i = 0; i < 12; ++i) w->add_float_data(static_cast<float>(i));
  auto* two = g->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::FLOAT);
  two->add_float_data(2.0f);
  auto add_node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* node = g->add_node();
    node->set_name(out + "_node");
    node->set_op_type(op);
    for (const auto& i : in) node->add_input(i);
    node->add_output(out);
  };
  add_node("Transpose", {"W"}, "Wt");
  add_node("Mul", {"Wt", "two"}, "Wt2");
  add_node("MatMul", {"x", "Wt2"}, "y");
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "fold.onnx");
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  driver::RegisterCompilerPasses();
  auto fold = transform::Pipeline::FromNames({"Normalize", "WellFormed", "FoldConstants"});
  ASSERT_TRUE(fold.ok()) << fold.status().message();
  auto module = fold->Run(std::move(imported).value());
  ASSERT_TRUE(module.ok()) << module.status().message();
  const std::string text = ir::PrintModule(*module);
  EXPECT_EQ(text.find("transpose("), std::string::npos) << text;
  EXPECT_EQ(text.find("multiply("), std::string::npos) << text;
  EXPECT_NE(
      text.find(
          "matmul(x, const(Tensor[(4, 3), f32], [0.0, 8.0, 16.0, 2.0, 10.0, 18.0, 4.0, 12.0, 20.0, 6.0, 14.0, 22.0]))"),
      std::string::npos)
      << text;
}

TEST(OnnxImport, DamagedInitializersAreErrorsNotCrashes) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Identity", 17)));
  auto* w = model.mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1 << 20);
  w->add_dims(1 << 20);
  w->add_dims(1 << 20);
  auto huge = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(), "m.onnx: initializer 'W': more than 2^40 elements");
  w->clear_dims();
  w->add_dims(4);
  w->set_raw_data(std::string(12, '\0'));
  auto short_data = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(short_data.ok());
  EXPECT_EQ(short_data.status().message(), "m.onnx: initializer 'W': raw data of 12 bytes for 4 elements of f32");
  w->clear_raw_data();
  w->add_float_data(1.0f);
  auto few_values = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(few_values.ok());
  EXPECT_EQ(few_values.status().message(), "m.onnx: initializer 'W': holds 1 values for 4 elements");
}

// y = x + W with W stored outside the model, as PyTorch's exporter stores large
// weights: W is read from the file its `location` names next to the model.
TEST(OnnxImport, ExternalTensorDataIsReadFromTheModelsFolder) {
  const fs::path dir = fs::path(::testing::TempDir()) / "strata_onnx_external";
  fs::remove_all(dir);
  fs::create_directories(dir);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Add", 18)));
  model.mutable_graph()->mutable_node(0)->add_input("W");
  auto* w = model.mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const std::string& key, const std::string& value) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  entry("location", "weights.bin");
  entry("offset", "8");
  entry("length", "16");
  const float values[4] = {0.5f, -1.0f, 2.0f, 4.0f};
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data.write("padding!", 8);
    data.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  const auto write_model = [&] {
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    out << model.SerializeAsString();
  };
  write_model();
  auto imported = frontend::ImportOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  auto bytes = driver::Compile(std::move(imported).value(), driver::CompileOptions());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  auto x = vm::ParseInlineTensor("2x4xf32=1,2,3,4,5,6,7,8");
  ASSERT_TRUE(x.ok()) << x.status().message();
  const std::vector<vm::Value> args = {vm::Value::FromTensor(*x)};
  auto y = machine.Invoke("main", args);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor(), -1), "2x4xf32=1.5,1,5,8,5.5,5,9,12");

  // What can go wrong, each named: the file, its size, the location, no folder.
  fs::remove(dir / "weights.bin");
  auto missing = frontend::ImportOnnxFile((dir / "model.onnx").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("initializer 'W': cannot open external data file '"), std::string::npos)
      << missing.status().message();
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data.write("short", 5);
  }
  auto truncated = frontend::ImportOnnxFile((dir / "model.onnx").string());
  EXPECT_NE(truncated.status().message().find("weights.bin' has 5 bytes; the tensor needs 16 at offset 8"),
            std::string::npos)
      << truncated.status().message();
  auto from_bytes = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  EXPECT_EQ(from_bytes.status().message(),
            "m.onnx: initializer 'W': stored in external file 'weights.bin', but the model was not read from a file "
            "(import the .onnx file, or set external_data_dir)");
  w->mutable_external_data(0)->set_value("../../etc/passwd");
  write_model();
  auto escaping = frontend::ImportOnnxFile((dir / "model.onnx").string());
  EXPECT_NE(escaping.status().message().find(
                "initializer 'W': external data location '../../etc/passwd' must be a path relative to the model's "
                "folder, without '..'"),
            std::string::npos)
      << escaping.status().message();
  fs::remove_all(dir);
}

// A damaged model file (every byte of the CNN's graph structure flipped in
// turn) is imported or refused with a one-line error; it never crashes.
TEST(OnnxImport, EveryFlippedByteOfAModelImportsOrFailsCleanly) {
  std::ifstream in(SourcePath("tests/fixtures/onnx/cnn/model.onnx"), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(good.size(), 1000u);
  int refused = 0, imported = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string damaged = good;
    damaged[i] = static_cast<char>(damaged[i] ^ 0xFF);
    auto module = frontend::ImportOnnxBytes(damaged, "cnn.onnx");
    if (module.ok()) {
      ++imported;
    } else {
      ++refused;
      EXPECT_EQ(module.status().message().find('\n'), std::string::npos) << module.status().message();
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(imported, 0);  // flips inside weights leave a valid model
}

TEST(OnnxImport, AnUnknownAttributeIsAnErrorNotIgnored) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Relu", 17)));
  auto* attr = model.mutable_graph()->mutable_node(0)->add_attribute();
  attr->set_name("alpha");
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(0.1f);
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message(),
            "m.onnx: node 'the_node' (Relu, opset 17): attribute 'alpha' is not supported");
}

TEST(OnnxImport, ABadAttributeIsAnErrorNamingTheNode) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(OneNodeModel("Softmax", 17)));
  auto* axis = model.mutable_graph()->mutable_node(0)->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(5);
  auto imported = frontend::ImportOnnxBytes(model.SerializeAsString(), "m.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().message().rfind("m.onnx: node 'the_node' (Softmax, opset 17): softmax: ", 0), 0u)
      << imported.status().message();
}

}  // namespace
}  // namespace strata::testing
