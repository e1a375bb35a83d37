// The ONNX importer: model protobuf -> IRModule (see onnx_importer.h).
#include "compiler/frontend/onnx/onnx_importer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <map>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/op/op_registry.h"
#include "support/suggest.h"

namespace strata::frontend {
namespace {

using namespace onnx_import;  // NOLINT: the importer's own internals

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;

// A name usable as a text-IR identifier (ONNX names may hold '/', ':', '.').
std::string Identifier(const std::string& name, const std::string& fallback) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = fallback + (out.empty() ? "" : "_" + out);
  return out;
}

class Importer : public ImportContext {
 public:
  // `file` names the model in source locations.
  Importer(const onnx::ModelProto& model, const OnnxImportOptions& options, std::string file)
      : model_(model), options_(options), file_(std::move(file)) {}

  StatusOr<ir::IRModule> Run() {
    STRATA_RETURN_IF_ERROR(ReadOpset());
    const onnx::GraphProto& graph = model_.graph();
    for (const onnx::TensorProto& init : graph.initializer()) {
      StatusOr<std::shared_ptr<const graph::HostTensor>> data = TensorFromProto(init, options_.external_data_dir);
      if (!data.ok()) return Status(data.status()).WithContext("initializer '" + init.name() + "': ");
      values_[init.name()].constant = *data;
    }
    std::vector<graph::Var> params;
    std::vector<std::string> input_names;
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (values_.count(input.name())) continue;  // an initializer listed as an input too
      STRATA_ASSIGN_OR_RETURN(graph::StructInfo sinfo, InputStructInfo(input));
      graph::Var param(names_.Fresh(Identifier(input.name(), "input")), sinfo);
      params.push_back(param);
      input_names.push_back(input.name());
      values_[input.name()].expr = param;
    }
    for (const auto& [name, bounds] : options_.dim_bounds) {
      if (!symbols_.count(name)) {
        std::vector<std::string> known;
        for (const auto& [symbol, var] : symbols_) known.push_back(symbol);
        ErrorStatus error;
        error << "--dynamic " << name << "=" << bounds.first << ".." << bounds.second
              << ": the model has no dynamic dimension named '" << name << "'";
        if (known.empty()) return error << "; its inputs have only fixed dimensions";
        return error << " (it has: " << JoinNames(known) << ")" << DidYouMean(name, known);
      }
    }
    for (int i = 0; i < graph.node_size(); ++i) STRATA_RETURN_IF_ERROR(ConvertNode(graph.node(i), i));

    std::vector<Expr> outputs;
    std::vector<graph::StructInfo> output_sinfo;
    std::vector<std::string> output_names;
    for (const onnx::ValueInfoProto& output : graph.output()) {
      // Clients ask for outputs by name, so one name cannot stand for two of them.
      auto repeated = std::find(output_names.begin(), output_names.end(), output.name());
      if (repeated != output_names.end()) {
        return ErrorStatus() << "graph output '" << output.name() << "' is listed twice (outputs "
                             << (repeated - output_names.begin()) << " and " << output_names.size()
                             << "); output names must be distinct";
      }
      output_names.push_back(output.name());
      auto it = values_.find(output.name());
      if (it == values_.end()) return ErrorStatus() << "graph output '" << output.name() << "' is never computed";
      STRATA_ASSIGN_OR_RETURN(Expr expr, ExprOf(it->second, output.name()));
      outputs.push_back(expr);
      output_sinfo.push_back(expr->struct_info);
    }
    Expr result = outputs.size() == 1 ? outputs[0] : graph::TupleNode::make(outputs);
    graph::StructInfo ret = outputs.size() == 1 ? output_sinfo[0] : graph::TupleStructInfoNode::make(output_sinfo);
    std::vector<graph::BindingBlock> blocks;
    if (!bindings_.empty()) blocks.push_back(graph::BindingBlock{false, std::move(bindings_)});
    Expr body = graph::SeqExprNode::make(std::move(blocks), result);
    ir::Attrs attrs;
    for (const auto& [name, bounds] : options_.dim_bounds) {
      attrs["bound_" + name] = std::vector<int64_t>{bounds.first, bounds.second};
    }
    // The model's own names (parameter names are identifiers: "input.1" became
    // input_1): the executable records them, and servers address tensors by them.
    attrs["input_names"] = std::move(input_names);
    attrs["output_names"] = std::move(output_names);
    ir::IRModule module;
    module.Add("main", std::static_pointer_cast<const graph::FunctionNode>(
                           graph::FunctionNode::make(std::move(params), body, ret, std::move(attrs)).node_ptr()));
    return module;
  }

  StatusOr<Expr> Call(const std::string& op, std::vector<Expr> args, ir::Attrs attrs,
                      const std::string& name_hint) override {
    const op::OpDef* def = op::FindOp(op);
    if (def == nullptr) return ErrorStatus(StatusCode::kInternal) << "internal: no Strata operator '" << op << "'";
    Expr call = graph::CallNode::make(graph::OpNode::Get(op), std::move(args), std::move(attrs));
    const auto* call_node = call.as<graph::CallNode>();
    STRATA_RETURN_IF_ERROR(op::CheckOpCall(*def, *call_node));
    STRATA_ASSIGN_OR_RETURN(graph::StructInfo sinfo, def->infer(op::OpCall(*def, *call_node)));
    graph::Var var(names_.Fresh(Identifier(name_hint, "v")), analysis::SimplifyStructInfo(sinfo));
    bindings_.push_back(graph::Binding{graph::BindingKind::kVarBinding, var, call, {}, node_location_});
    return Expr(var);
  }

  StatusOr<Expr> Bind(Expr value, const std::string& name_hint) override {
    if (!value->struct_info.defined())
      return ErrorStatus(StatusCode::kInternal) << "internal: binding a value without struct info";
    graph::Var var(names_.Fresh(Identifier(name_hint, "v")), value->struct_info);
    bindings_.push_back(graph::Binding{graph::BindingKind::kVarBinding, var, value, {}, node_location_});
    return Expr(var);
  }

  const std::string& external_data_dir() const override { return options_.external_data_dir; }

  Expr Constant(std::shared_ptr<const graph::HostTensor> data) override {
    auto it = constants_.find(data.get());
    if (it != constants_.end()) return it->second;
    Expr expr = graph::ConstantNode::make(data);
    constants_.emplace(data.get(), expr);
    return expr;
  }

 private:
  Status ReadOpset() {
    for (const onnx::OperatorSetIdProto& set : model_.opset_import()) {
      if (set.domain().empty() || set.domain() == "ai.onnx") opset_ = set.version();
    }
    if (opset_ < kMinOpset || opset_ > kMaxOpset) {
      return ErrorStatus(StatusCode::kUnimplemented)
             << "the model uses ONNX opset " << opset_ << "; Strata imports opsets " << kMinOpset << " to " << kMaxOpset
             << " (re-export with opset_version in that range)";
    }
    return Status::Ok();
  }

  StatusOr<graph::StructInfo> InputStructInfo(const onnx::ValueInfoProto& input) {
    if (!input.type().has_tensor_type()) {
      return ErrorStatus() << "graph input '" << input.name() << "' is not a tensor";
    }
    const onnx::TypeProto::Tensor& type = input.type().tensor_type();
    StatusOr<DataType> dtype = DataTypeFromOnnx(type.elem_type());
    if (!dtype.ok()) return Status(dtype.status()).WithContext("graph input '" + input.name() + "': ");
    if (!type.has_shape()) return graph::TensorStructInfoNode::make_ndim(-1, *dtype);
    std::vector<PrimExpr> dims;
    for (int d = 0; d < type.shape().dim_size(); ++d) {
      const onnx::TensorShapeProto::Dimension& dim = type.shape().dim(d);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          return ErrorStatus() << "graph input '" << input.name() << "' dimension " << d << " is negative";
        }
        dims.push_back(dim.dim_value());
      } else {
        std::string name = dim.has_dim_param() && !dim.dim_param().empty()
                               ? dim.dim_param()
                               : Identifier(input.name(), "input") + "_dim" + std::to_string(d);
        name = Identifier(name, "dim");
        auto it = symbols_.find(name);
        if (it == symbols_.end()) it = symbols_.emplace(name, tir::Var(name)).first;
        dims.push_back(it->second);
      }
    }
    return graph::TensorStructInfoNode::make(std::move(dims), *dtype);
  }

  StatusOr<Expr> ExprOf(const OnnxValue& value, const std::string& name) {
    if (value.expr.defined()) return value.expr;
    if (value.constant) return Constant(value.constant);
    if (value.symbolic) {
      std::vector<int64_t> ints;
      for (const PrimExpr& e : *value.symbolic) {
        const int64_t* c = tir::AsConstInt(e);
        if (c == nullptr) break;
        ints.push_back(*c);
      }
      if (ints.size() == value.symbolic->size()) return Constant(MakeInt64Tensor(ints, value.symbolic_scalar));
      // A shape computed from dynamic dimensions used as data: computed at run
      // time from the shape variables.
      return Call("shape_to_tensor", {graph::ShapeExprNode::make(*value.symbolic)}, {{"scalar", value.symbolic_scalar}},
                  name);
    }
    return ErrorStatus() << "value '" << name << "' has no definition";
  }

  Status ConvertNode(const onnx::NodeProto& node, int index) {
    const std::string label = node.name().empty() ? "#" + std::to_string(index) : node.name();
    auto fail = [&](const std::string& message, StatusCode code = StatusCode::kInvalidArgument) -> Status {
      return ErrorStatus(code) << "node '" << label << "' (" << node.op_type() << ", opset " << opset_
                               << "): " << message;
    };
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return fail("operators of domain '" + node.domain() + "' are not supported", StatusCode::kUnimplemented);
    }
    const OpConverter* converter = FindConverter(node.op_type());
    if (converter == nullptr) {
      return fail("operator " + node.op_type() + " is not supported by Strata's ONNX importer",
                  StatusCode::kUnimplemented);
    }
    // Every ONNX operator has an output; converters name their result after the first.
    if (node.output_size() == 0) return fail("the node has no outputs (every operator has at least one)");
    for (const onnx::AttributeProto& attr : node.attribute()) {
      const auto& known = converter->attributes;
      if (std::find(known.begin(), known.end(), attr.name()) == known.end()) {
        return fail("attribute '" + attr.name() + "' is not supported", StatusCode::kUnimplemented);
      }
    }
    std::vector<const OnnxValue*> inputs;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values_.find(name);
      if (it == values_.end()) return fail("input '" + name + "' is not defined before the node");
      inputs.push_back(&it->second);
    }
    NodeContext ctx(node, opset_, std::move(inputs), *this);
    current_label_ = label;
    node_location_ = std::make_shared<const SourceLocation>(SourceLocation{file_, 0, 0, label});
    Status converted = converter->convert(ctx);
    if (!converted.ok()) {
      // Converter errors already name the node; operator inference errors do not.
      const std::string& message = converted.message();
      if (message.rfind("node '", 0) == 0) return converted;
      return fail(message, converted.code());
    }
    if (ctx.outputs.size() < static_cast<size_t>(node.output_size())) {
      // Optional trailing outputs (Dropout's mask) that nothing may read.
      ctx.outputs.resize(static_cast<size_t>(node.output_size()));
    }
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty()) continue;
      OnnxValue& out = ctx.outputs[static_cast<size_t>(i)];
      if (!out.expr.defined() && !out.constant && !out.symbolic) continue;  // unused optional output
      values_[node.output(i)] = std::move(out);
    }
    return Status::Ok();
  }

  const onnx::ModelProto& model_;
  const OnnxImportOptions& options_;
  int64_t opset_ = 0;
  std::map<std::string, OnnxValue> values_;
  std::map<std::string, tir::Var> symbols_;
  std::map<const graph::HostTensor*, Expr> constants_;
  std::vector<graph::Binding> bindings_;
  analysis::NameSupply names_;
  std::string current_label_;
  std::string file_;
  // The node being converted: every binding made for it points here.
  std::shared_ptr<const SourceLocation> node_location_;
};

}  // namespace

namespace {

StatusOr<ir::IRModule> ImportOnnxArray(const void* data, size_t size, const std::string& name,
                                       const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return ErrorStatus() << name << ": " << size
                         << " bytes is beyond protobuf's 2 GiB limit; store the weights as ONNX external data";
  }
  if (!model.ParseFromArray(data, static_cast<int>(size))) {
    return ErrorStatus() << name << ": not a valid ONNX model (protobuf parse failed)";
  }
  StatusOr<ir::IRModule> module = Importer(model, options, name).Run();
  if (!module.ok()) return Status(module.status()).WithContext(name + ": ");
  return module;
}

// A model file mapped read-only: protobuf parses it in place, where reading it
// into a string cost two extra copies of every weight (GPT-2: 500 MB each).
class MappedModelFile {
 public:
  ~MappedModelFile() {
    if (data_ != nullptr) munmap(data_, size_);
    if (fd_ >= 0) close(fd_);
  }
  Status Open(const std::string& path) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      return ErrorStatus(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition)
             << "cannot open '" << path << "': " << std::strerror(errno);
    }
    struct stat st {};
    if (fstat(fd_, &st) != 0) return ErrorStatus() << "cannot stat '" << path << "': " << std::strerror(errno);
    if (S_ISDIR(st.st_mode)) {
      return ErrorStatus(StatusCode::kFailedPrecondition) << "cannot read '" << path << "': it is a directory";
    }
    if (!S_ISREG(st.st_mode)) return ErrorStatus() << "cannot read '" << path << "': not a regular file";
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return Status::Ok();
    void* addr = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (addr == MAP_FAILED) return ErrorStatus() << "cannot map '" << path << "': " << std::strerror(errno);
    data_ = addr;
    madvise(data_, size_, MADV_SEQUENTIAL);
    return Status::Ok();
  }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

StatusOr<ir::IRModule> ImportOnnxBytes(const std::string& bytes, const std::string& name,
                                       const OnnxImportOptions& options) {
  return ImportOnnxArray(bytes.data(), bytes.size(), name, options);
}

StatusOr<ir::IRModule> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  MappedModelFile file;
  STRATA_RETURN_IF_ERROR(file.Open(path));
  OnnxImportOptions with_dir = options;
  if (with_dir.external_data_dir.empty()) {
    with_dir.external_data_dir = std::filesystem::path(path).parent_path().string();
    if (with_dir.external_data_dir.empty()) with_dir.external_data_dir = ".";
  }
  return ImportOnnxArray(file.data(), file.size(), path, with_dir);
}

}  // namespace strata::frontend
