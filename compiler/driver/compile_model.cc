#include "compiler/driver/compile_model.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <variant>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/parser.h"
#include "support/suggest.h"

namespace strata::driver {
namespace {

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ModelFormat FormatFromName(std::string_view name) {
  if (EndsWith(name, ".onnx")) return ModelFormat::kOnnx;
  if (EndsWith(name, ".sir")) return ModelFormat::kTextIR;
  return ModelFormat::kAuto;
}

// An executable starts with a flatbuffer root offset and the file identifier
// "STRX" (serialization/executable.fbs).
bool LooksLikeExecutable(std::string_view head) { return head.size() >= 8 && head.substr(4, 4) == "STRX"; }

// Text IR is text; an ONNX model is a protobuf, whose first byte is a field tag
// (0x08: ir_version, which every exporter writes first) and whose bytes are
// rarely all printable.
ModelFormat FormatFromContents(std::string_view head) {
  if (!head.empty() && head[0] == 0x08) return ModelFormat::kOnnx;
  const bool binary = std::any_of(head.begin(), head.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x09 || (byte > 0x0d && byte < 0x20);
  });
  return binary ? ModelFormat::kOnnx : ModelFormat::kTextIR;
}

Status NotAModel(const std::string& name) {
  return ErrorStatus() << name
                       << ": this is a Strata executable, already compiled: run it with `strata run`, load it with "
                          "strata.load, or compile the model it came from (.onnx or .sir)";
}

Status FileError(const std::string& what, const std::string& path, int error) {
  return ErrorStatus(error == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition)
         << "cannot " << what << " '" << path << "': " << std::strerror(error);
}

size_t CountGraphFunctions(const ir::IRModule& module) {
  return std::count_if(module.functions().begin(), module.functions().end(),
                       [](const auto& entry) { return std::holds_alternative<graph::Function>(entry.second); });
}

}  // namespace

StatusOr<ModelSource> ReadModelSource(const std::string& path, ModelFormat format) {
  ModelSource source;
  source.format = format == ModelFormat::kAuto ? FormatFromName(path) : format;
  if (path == "-") {
    source.name = "<stdin>";
    std::string contents((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) return FileError("read", "<stdin>", errno);
    source.contents = std::move(contents);
  } else {
    source.name = path;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return ErrorStatus(StatusCode::kFailedPrecondition)
             << "cannot read '" << path << "': it is a directory, not a model (.onnx or .sir)";
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return FileError("open", path, errno);
    char head[64];
    in.read(head, sizeof(head));
    const std::string_view read(head, static_cast<size_t>(in.gcount()));
    if (LooksLikeExecutable(read)) return NotAModel(path);
    if (source.format == ModelFormat::kAuto) source.format = FormatFromContents(read);
    if (source.format == ModelFormat::kOnnx) {
      source.path = path;  // mapped by the importer, not read here
      return source;
    }
    in.clear();
    in.seekg(0);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return FileError("read", path, errno);
    source.contents = std::move(text).str();
  }
  if (LooksLikeExecutable(*source.contents)) return NotAModel(source.name);
  if (source.format == ModelFormat::kAuto) {
    source.format = FormatFromContents(std::string_view(*source.contents).substr(0, 64));
  }
  return source;
}

ModelSource ModelSourceFromBytes(std::string contents, std::string name, ModelFormat format) {
  ModelSource source;
  source.name = std::move(name);
  source.format = format == ModelFormat::kAuto ? FormatFromContents(std::string_view(contents).substr(0, 64)) : format;
  source.contents = std::move(contents);
  return source;
}

StatusOr<CompileOptions> ResolveCompileOptions(const CompileRequest& request) {
  CompileOptions options = request.options;
  const std::vector<std::string> known = {"cpu", "npu"};
  bool cpu = request.targets.empty();
  for (const std::string& target : request.targets) {
    if (target == "cpu") {
      cpu = true;
    } else if (target == "npu") {
      if (std::find(options.device_targets.begin(), options.device_targets.end(), target) ==
          options.device_targets.end()) {
        options.device_targets.push_back(target);
      }
    } else {
      std::string list;
      for (const std::string& t : request.targets) list += (list.empty() ? "" : ",") + t;
      return ErrorStatus() << "--target: unknown target '" << target << "' in '" << list << "' (known: cpu, npu)"
                           << DidYouMean(target, known);
    }
  }
  if (!cpu) {
    return ErrorStatus() << "--target must include cpu (what the devices cannot run stays there), e.g. --target "
                            "cpu,npu";
  }
  // Dispatch passes run first among the passes inserted before LegalizeOps.
  std::vector<std::pair<std::string, std::string>> before;
  for (const std::string& pass : request.dispatch) before.emplace_back("LegalizeOps", pass);
  before.insert(before.end(), options.passes_before.begin(), options.passes_before.end());
  options.passes_before = std::move(before);
  return options;
}

StatusOr<ir::IRModule> ImportModel(const ModelSource& source, const CompileRequest& request) {
  const bool onnx = source.format == ModelFormat::kOnnx;
  if (!onnx && !request.dynamic.empty()) {
    return ErrorStatus() << "--dynamic applies to ONNX models (.onnx); '" << source.name
                         << "' is text IR, whose dimensions are named in its signatures";
  }
  for (const auto& [name, bounds] : request.dynamic) {
    if (bounds.first < 0 || bounds.second < bounds.first) {
      return ErrorStatus() << "--dynamic " << name << "=" << bounds.first << ".." << bounds.second
                           << ": needs 0 <= LO <= HI";
    }
  }
  StageTimer timer(request.options.print_pass_timing);  // --time-passes
  StatusOr<ir::IRModule> module = [&]() -> StatusOr<ir::IRModule> {
    if (!onnx) return ir::ParseModule(source.contents ? *source.contents : std::string(), source.name);
    frontend::OnnxImportOptions import_options;
    import_options.dim_bounds = request.dynamic;
    return source.contents ? frontend::ImportOnnxBytes(*source.contents, source.name, import_options)
                           : frontend::ImportOnnxFile(source.path, import_options);
  }();
  timer.End(onnx ? "ImportOnnx" : "Parse");
  if (!module.ok()) return module;
  if (CountGraphFunctions(*module) == 0) {
    const bool blank = !onnx && source.contents && source.contents->find_first_not_of(" \t\r\n") == std::string::npos;
    return ErrorStatus() << (blank ? "the file is empty" : "the module defines no graph function (func @name)")
                         << ": an executable needs at least one function to call";
  }
  return module;
}

std::string ErrorText(const Status& status, const std::string& name) {
  const SourceLocation* at = status.location();
  const std::string where = at != nullptr ? at->Text() : name;
  std::string_view message = status.message();
  if (message.size() > where.size() + 2 && message.substr(0, where.size()) == where && message[where.size()] == ':') {
    // The parser's messages are already "file:line:col: error: ...".
    if (message[where.size() + 1] != ' ') return std::string(message);
    // The ONNX importer starts its messages with the model's name.
    message.remove_prefix(where.size() + 2);
  }
  return where + ": error: " + std::string(message);
}

Status CompileModelToFile(const ModelSource& source, const CompileRequest& request, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(CompileOptions options, ResolveCompileOptions(request));
  STRATA_ASSIGN_OR_RETURN(ir::IRModule module, ImportModel(source, request));
  if (path != "-") return CompileToFile(std::move(module), options, path);
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, Compile(std::move(module), options));
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
    return FileError("write", "<stdout>", errno);
  }
  return Status::Ok();
}

}  // namespace strata::driver
