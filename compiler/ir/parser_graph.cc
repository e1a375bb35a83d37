// Text IR parser: graph functions (struct info, bindings, dataflow blocks,
// calls, if, const(...) inline and from files).
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/parser_internal.h"

namespace strata::ir::text_parser {

// ===================================================================== graph functions

StatusOr<graph::Function> Parser::ParseGraphFuncRest() {
  in_graph_ = true;
  tir_vars_.assign(1, {});
  buffers_.clear();
  graph_scopes_.assign(1, {});
  STRATA_RETURN_IF_ERROR(Expect("(", "after the function name"));
  std::vector<graph::Var> params;
  std::set<std::string> names;
  while (!Peek().IsPunct(")")) {
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a parameter name"));
    if (!names.insert(name.text).second) return ErrorAt(name, "duplicate parameter name '" + name.text + "'");
    STRATA_RETURN_IF_ERROR(Expect(":", "after the parameter name (parameters need struct info)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo sinfo, ParseStructInfo());
    graph::Var var(name.text, sinfo, /*is_dataflow=*/false);
    BindGraphVar(var);
    params.push_back(var);
    if (!TryPunct(",")) break;
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "after the parameters"));
  StructInfo ret;
  if (TryPunct("->")) {
    STRATA_ASSIGN_OR_RETURN(ret, ParseStructInfo());
  }
  Attrs attrs;
  if (Peek().IsIdent("attrs")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(attrs, ParseAttrBlock());
  }
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("{", "to open the function body"));
  STRATA_ASSIGN_OR_RETURN(graph::Expr body, ParseSeq(/*function_body=*/true, open));
  STRATA_RETURN_IF_ERROR(Expect("}", "after the return value (it ends the function)"));
  graph::Expr func = graph::FunctionNode::make(std::move(params), body, ret, std::move(attrs), return_location_);
  return std::static_pointer_cast<const graph::FunctionNode>(func.node_ptr());
}

StatusOr<StructInfo> Parser::ParseStructInfo() {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  const Token t = Peek();
  if (t.kind != TokenKind::kIdent) return Expected("struct info (Object, Prim[..], Shape, Tensor or Tuple[..])");
  if (t.text == "Object") {
    Next();
    return graph::ObjectStructInfoNode::make();
  }
  if (t.text == "Prim") {
    Next();
    STRATA_RETURN_IF_ERROR(Expect("[", "after 'Prim'"));
    STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Prim[...]"));
    return graph::PrimStructInfoNode::make(dtype);
  }
  if (t.text == "Shape") {
    Next();
    if (!TryPunct("[")) return graph::ShapeStructInfoNode::make_ndim(-1);
    StructInfo sinfo;
    if (Peek().IsPunct("(")) {
      STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ParseShapeDims());
      sinfo = graph::ShapeStructInfoNode::make(std::move(dims));
    } else if (Peek().IsIdent("ndim")) {
      Next();
      STRATA_RETURN_IF_ERROR(Expect("=", "after 'ndim'"));
      STRATA_ASSIGN_OR_RETURN(int64_t ndim, ParseSmallInt("the rank"));
      sinfo = graph::ShapeStructInfoNode::make_ndim(static_cast<int>(ndim));
    } else {
      return Expected("a shape '(...)' or 'ndim=' in Shape[...]");
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Shape[...]"));
    return sinfo;
  }
  if (t.text == "Tensor") {
    Next();
    if (!TryPunct("[")) return graph::TensorStructInfoNode::make_ndim(-1, DataType::Void());
    std::optional<std::vector<PrimExpr>> dims;
    int ndim = -1;
    DataType dtype = DataType::Void();
    bool need_dtype = true;
    if (Peek().IsPunct("(")) {
      STRATA_ASSIGN_OR_RETURN(dims, ParseShapeDims());
      need_dtype = TryPunct(",");
    } else if (Peek().IsIdent("ndim")) {
      Next();
      STRATA_RETURN_IF_ERROR(Expect("=", "after 'ndim'"));
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseSmallInt("the rank"));
      ndim = static_cast<int>(n);
      need_dtype = TryPunct(",");
    }
    if (need_dtype) {
      STRATA_ASSIGN_OR_RETURN(dtype, ParseDType());
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Tensor[...]"));
    if (dims) return graph::TensorStructInfoNode::make(std::move(*dims), dtype);
    return graph::TensorStructInfoNode::make_ndim(ndim, dtype);
  }
  if (t.text == "Tuple") {
    Next();
    STRATA_RETURN_IF_ERROR(Expect("[", "after 'Tuple'"));
    std::vector<StructInfo> fields;
    while (!Peek().IsPunct("]")) {
      STRATA_ASSIGN_OR_RETURN(StructInfo field, ParseStructInfo());
      fields.push_back(std::move(field));
      if (!TryPunct(",")) break;
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Tuple[...]"));
    return graph::TupleStructInfoNode::make(std::move(fields));
  }
  return ErrorAt(t, "unknown struct info '" + t.text + "' (expected Object, Prim, Shape, Tensor or Tuple)");
}

StatusOr<graph::Expr> Parser::ParseSeq(bool function_body, const Token& open) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  std::vector<graph::BindingBlock> blocks;
  graph::BindingBlock plain;
  auto flush = [&] {
    if (!plain.bindings.empty()) blocks.push_back(std::move(plain));
    plain = graph::BindingBlock();
  };
  while (true) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(t, std::string("expected ") + (function_body ? "'return'" : "a value") +
                            " before the end of the block opened at line " + std::to_string(open.line) +
                            ", found end of file");
    }
    if (function_body && t.IsIdent("return")) {
      return_location_ = std::make_shared<const SourceLocation>(SourceLocation{filename_, t.line, t.col, ""});
      Next();
      STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValue(nullptr));
      flush();
      return graph::SeqExprNode::make(std::move(blocks), value);
    }
    if (t.IsIdent("dataflow") && Peek(1).IsPunct("{")) {
      flush();
      STRATA_ASSIGN_OR_RETURN(graph::BindingBlock block, ParseDataflowBlock());
      blocks.push_back(std::move(block));
      continue;
    }
    if (PeekBindingStart()) {
      STRATA_ASSIGN_OR_RETURN(graph::Binding binding, ParseBinding(false, {}));
      plain.bindings.push_back(std::move(binding));
      continue;
    }
    if (function_body) return Expected("a binding, 'dataflow' or 'return'");
    STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValue(nullptr));
    flush();
    return graph::SeqExprNode::make(std::move(blocks), value);
  }
}

StatusOr<graph::BindingBlock> Parser::ParseDataflowBlock() {
  const Token keyword = Next();  // dataflow
  Next();                        // {
  // Whether a binding makes a dataflow var depends on the `output` line at the
  // block's end, so read that line ahead before building any var.
  std::set<std::string> outputs;
  int depth = 1;
  for (size_t i = pos_; i < tokens_.size() && tokens_[i].kind != TokenKind::kEnd; ++i) {
    const Token& tok = tokens_[i];
    if (tok.IsPunct("{")) ++depth;
    if (tok.IsPunct("}") && --depth == 0) break;
    if (depth != 1 || !tok.IsIdent("output") || i + 1 >= tokens_.size()) continue;
    if (tokens_[i + 1].IsPunct(":") || tokens_[i + 1].IsPunct("=")) continue;
    for (size_t j = i + 1; j < tokens_.size() && tokens_[j].kind == TokenKind::kIdent; j += 2) {
      outputs.insert(tokens_[j].text);
      if (j + 1 >= tokens_.size() || !tokens_[j + 1].IsPunct(",")) break;
    }
  }
  graph::BindingBlock block;
  block.is_dataflow = true;
  graph_scopes_.emplace_back();
  std::vector<graph::Var> exported;
  while (true) {
    const Token t = Peek();
    if (t.IsPunct("}")) {
      Next();
      break;
    }
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(t, "expected '}' to close the dataflow block opened at line " + std::to_string(keyword.line) +
                            ", found end of file");
    }
    if (t.IsIdent("output") && !PeekBindingStart()) {
      Next();
      while (true) {
        STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name after 'output'"));
        auto found = graph_scopes_.back().find(name.text);
        if (found == graph_scopes_.back().end()) {
          return ErrorAt(name, "output '" + name.text + "' is not bound in this dataflow block");
        }
        exported.push_back(found->second);
        if (!TryPunct(",")) break;
      }
      STRATA_RETURN_IF_ERROR(Expect("}", "after the output line (it ends the dataflow block)"));
      break;
    }
    if (PeekBindingStart()) {
      STRATA_ASSIGN_OR_RETURN(graph::Binding binding, ParseBinding(true, outputs));
      block.bindings.push_back(std::move(binding));
      continue;
    }
    if (t.IsIdent("dataflow")) return ErrorAt(t, "dataflow blocks cannot be nested");
    return Expected("a binding or 'output' in the dataflow block");
  }
  graph_scopes_.pop_back();
  for (const graph::Var& var : exported) BindGraphVar(var);
  return block;
}

StatusOr<graph::Binding> Parser::ParseBinding(bool in_dataflow, const std::set<std::string>& outputs) {
  STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name"));
  auto location = std::make_shared<const SourceLocation>(SourceLocation{filename_, name.line, name.col, ""});
  StructInfo annotation;
  if (TryPunct(":")) {
    STRATA_ASSIGN_OR_RETURN(annotation, ParseStructInfo());
    STRATA_RETURN_IF_ERROR(Expect("=", "after the struct info of '" + name.text + "'"));
  } else {
    STRATA_RETURN_IF_ERROR(Expect("=", "after the variable name"));
  }
  graph::Binding binding;
  binding.location = std::move(location);
  const Token head = Peek();
  if ((head.IsIdent("match_cast") || head.IsIdent("match_shape")) && PeekCallParen()) {
    Next();
    Next();
    binding.kind = graph::BindingKind::kMatchCast;
    const Token value_token = Peek();
    STRATA_ASSIGN_OR_RETURN(binding.value, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the value of " + head.text));
    if (head.text == "match_cast") {
      STRATA_ASSIGN_OR_RETURN(binding.pattern, ParseStructInfo());
    } else {
      const StructInfo& known = binding.value->struct_info;
      bool is_shape = known.as<graph::ShapeStructInfoNode>() != nullptr;
      const auto* tensor = known.as<graph::TensorStructInfoNode>();
      if (!is_shape && !tensor) {
        return ErrorAt(value_token,
                       "match_shape needs a value known to be a Shape or a Tensor; annotate it or "
                       "use match_cast");
      }
      STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ParseShapeDims());
      binding.pattern = is_shape ? graph::ShapeStructInfoNode::make(std::move(dims))
                                 : graph::TensorStructInfoNode::make(std::move(dims), tensor->dtype);
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close " + head.text));
  } else {
    STRATA_ASSIGN_OR_RETURN(binding.value, ParseValue(annotation.defined() ? &annotation : nullptr));
  }
  bool is_dataflow = in_dataflow && outputs.count(name.text) == 0;
  binding.var = graph::Var(name.text, annotation, is_dataflow);
  BindGraphVar(binding.var);
  return binding;
}

StatusOr<int> Parser::ParseTupleIndex() {
  const Token t = Peek();
  if (t.kind != TokenKind::kInt) return Expected("a tuple index (an integer)");
  NumberParts parts = SplitNumber(t.text);
  int value = 0;
  auto result = std::from_chars(parts.body.data(), parts.body.data() + parts.body.size(), value);
  if (!parts.suffix.empty() || result.ec != std::errc()) {
    return ErrorAt(t, "tuple index '" + t.text + "' must be a small unsuffixed integer");
  }
  Next();
  return value;
}

StatusOr<graph::Expr> Parser::ParseValue(const StructInfo* packed_sinfo) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValuePrimary(packed_sinfo));
  for (int chain = 0; Peek().IsPunct("[") && !Peek().newline_before; ++chain) {
    if (chain == kMaxDepth) {
      return ErrorAt(Peek(), "tuple items are chained more than " + std::to_string(kMaxDepth) + " deep");
    }
    Next();
    const Token index_token = Peek();
    STRATA_ASSIGN_OR_RETURN(int index, ParseTupleIndex());
    STRATA_RETURN_IF_ERROR(Expect("]", "after the tuple index"));
    if (const auto* tuple = value->struct_info.as<graph::TupleStructInfoNode>()) {
      if (static_cast<size_t>(index) >= tuple->fields.size()) {
        return ErrorAt(index_token, "tuple index " + std::to_string(index) + " is out of range for a tuple of " +
                                        std::to_string(tuple->fields.size()) + " fields");
      }
    }
    value = graph::TupleGetItemNode::make(value, index);
  }
  return value;
}

Status Parser::ParseCallRest(std::vector<graph::Expr>* args, Attrs* attrs, size_t max_extra, const Token& callee) {
  size_t extra = 0;
  while (TryPunct(",")) {
    if (PeekKwarg()) {
      STRATA_RETURN_IF_ERROR(ParseKwarg(attrs));
      continue;
    }
    if (!attrs->empty()) return ErrorAt(Peek(), "positional argument after keyword arguments");
    if (extra == max_extra) return Expected("')' after the arguments of '" + callee.text + "'");
    STRATA_ASSIGN_OR_RETURN(graph::Expr arg, ParseValue(nullptr));
    args->push_back(std::move(arg));
    ++extra;
  }
  return Expect(")", "after call arguments");
}

Status Parser::ParseCallArguments(std::vector<graph::Expr>* args, Attrs* attrs, const Token& callee) {
  if (TryPunct(")")) return Status::Ok();
  if (PeekKwarg()) {
    STRATA_RETURN_IF_ERROR(ParseKwarg(attrs));
  } else {
    STRATA_ASSIGN_OR_RETURN(graph::Expr first, ParseValue(nullptr));
    args->push_back(std::move(first));
  }
  return ParseCallRest(args, attrs, SIZE_MAX, callee);
}

StatusOr<graph::Expr> Parser::ParseValuePrimary(const StructInfo* packed_sinfo) {
  const Token t = Peek();
  if (t.IsPunct("(")) {
    Next();
    std::vector<graph::Expr> fields;
    bool is_tuple = true;
    if (!Peek().IsPunct(")")) {
      STRATA_ASSIGN_OR_RETURN(graph::Expr first, ParseValue(nullptr));
      fields.push_back(std::move(first));
      is_tuple = false;
      while (TryPunct(",")) {
        is_tuple = true;
        if (Peek().IsPunct(")")) break;
        STRATA_ASSIGN_OR_RETURN(graph::Expr field, ParseValue(nullptr));
        fields.push_back(std::move(field));
      }
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close the tuple"));
    if (!is_tuple) return fields[0];
    return graph::TupleNode::make(std::move(fields));
  }
  if (t.kind == TokenKind::kString) {
    Next();
    return graph::StringImmNode::make(t.text);
  }
  bool negative_number = t.IsPunct("-") && (Peek(1).kind == TokenKind::kInt || Peek(1).kind == TokenKind::kFloat ||
                                            IsFloatLiteralWord(Peek(1)));
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat || IsFloatLiteralWord(t) || negative_number) {
    if (negative_number) Next();
    STRATA_ASSIGN_OR_RETURN(PExpr number, ParseNumber(Next(), negative_number, t.line, t.col));
    STRATA_RETURN_IF_ERROR(SettleDefault(&number));
    return graph::PrimValueNode::make(number.expr);
  }
  if (t.kind == TokenKind::kGlobal) {
    Next();
    graph::Expr global = graph::GlobalVarNode::make(t.text);
    if (!Peek().IsPunct("(") || Peek().newline_before) {
      AddRef(t, GlobalRef::Use::kValue);
      return global;
    }
    Next();
    std::vector<graph::Expr> args;
    Attrs attrs;
    STRATA_RETURN_IF_ERROR(ParseCallArguments(&args, &attrs, t));
    AddRef(t, GlobalRef::Use::kCall, args.size());
    return graph::CallNode::make(global, std::move(args), std::move(attrs));
  }
  if (t.kind != TokenKind::kIdent) return Expected("a value");
  if (t.text == "true" || t.text == "false") {
    Next();
    return graph::PrimValueNode::make(tir::IntImm(DataType::Bool(), t.text == "true" ? 1 : 0));
  }
  if (t.text == "if") return ParseGraphIf();
  if (IsReservedWord(t.text)) return Expected("a value");
  if (!PeekCallParen()) {
    Next();
    const graph::Var* var = LookupGraphVar(t.text);
    if (!var) return ErrorAt(t, "undefined variable '" + t.text + "'");
    return *var;
  }
  // name(...): a special form or an operator.
  Next();
  Next();  // (
  const std::string& name = t.text;
  if (name == "match_cast" || name == "match_shape") {
    return ErrorAt(t, name + " must be the whole value of a binding (x = " + name + "(...))");
  }
  if (name == graph::ops::kCallTIR) {
    if (Peek().kind != TokenKind::kGlobal) return Expected("'@prim_func' as the first argument of call_tir");
    const Token callee = Next();
    AddRef(callee, GlobalRef::Use::kCallTIR);
    STRATA_RETURN_IF_ERROR(Expect(",", "after the callee of call_tir"));
    STRATA_ASSIGN_OR_RETURN(graph::Expr args, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the arguments of call_tir (the output struct info comes next)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo out, ParseStructInfo());
    std::vector<graph::Expr> call_args = {graph::GlobalVarNode::make(callee.text), args};
    Attrs attrs;
    STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, 1, t));
    return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {out});
  }
  if (name == graph::ops::kCallDPSPacked || name == graph::ops::kCallPacked) {
    if (Peek().kind != TokenKind::kString) return Expected("the library function name (a string) in " + name);
    std::vector<graph::Expr> call_args = {graph::ExternFuncNode::make(Next().text)};
    Attrs attrs;
    if (name == graph::ops::kCallPacked) {
      STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, SIZE_MAX, t));
      StructInfo result = packed_sinfo ? *packed_sinfo : graph::ObjectStructInfoNode::make();
      return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {result});
    }
    STRATA_RETURN_IF_ERROR(Expect(",", "after the function name of call_dps_packed"));
    STRATA_ASSIGN_OR_RETURN(graph::Expr args, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the arguments of call_dps_packed (the output struct info comes next)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo out, ParseStructInfo());
    call_args.push_back(std::move(args));
    STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, 0, t));
    return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {out});
  }
  if (name == "shape") {
    std::vector<PrimExpr> dims;
    while (!Peek().IsPunct(")")) {
      STRATA_ASSIGN_OR_RETURN(PrimExpr dim, ParseIndexLike("a shape dimension"));
      dims.push_back(std::move(dim));
      if (!TryPunct(",")) break;
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close shape(...)"));
    return graph::ShapeExprNode::make(std::move(dims));
  }
  if (name == "prim") {
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&value));
    STRATA_RETURN_IF_ERROR(Expect(")", "to close prim(...)"));
    return graph::PrimValueNode::make(value.expr);
  }
  if (name == "dtype") {
    STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
    STRATA_RETURN_IF_ERROR(Expect(")", "to close dtype(...)"));
    return graph::DataTypeImmNode::make(dtype);
  }
  if (name == "const") return ParseConst();
  std::vector<graph::Expr> args;
  Attrs attrs;
  STRATA_RETURN_IF_ERROR(ParseCallArguments(&args, &attrs, t));
  return graph::CallNode::make(graph::OpNode::Get(name), std::move(args), std::move(attrs));
}

StatusOr<graph::Expr> Parser::ParseGraphIf() {
  Next();  // if
  STRATA_ASSIGN_OR_RETURN(graph::Expr cond, ParseValue(nullptr));
  graph::Expr branches[2];
  for (int i = 0; i < 2; ++i) {
    if (i == 1) STRATA_RETURN_IF_ERROR(ExpectKeyword("else", "(a graph-level if needs both branches)"));
    const Token open = Peek();
    STRATA_RETURN_IF_ERROR(Expect("{", i == 0 ? "after the if condition" : "after 'else'"));
    graph_scopes_.emplace_back();
    STRATA_ASSIGN_OR_RETURN(branches[i], ParseSeq(/*function_body=*/false, open));
    graph_scopes_.pop_back();
    STRATA_RETURN_IF_ERROR(Expect("}", "after the value of the branch (it ends the branch)"));
  }
  return graph::IfNode::make(cond, branches[0], branches[1]);
}

// const(SI, file("weights.bin", OFFSET)): the data are the bytes at OFFSET of
// a binary file next to the .sir file (what --dump-ir writes for large weights).
StatusOr<graph::Expr> Parser::ParseConstFile(std::shared_ptr<graph::HostTensor> data, uint64_t count) {
  const Token file_token = Next();
  STRATA_RETURN_IF_ERROR(Expect("(", "after 'file'"));
  if (Peek().kind != TokenKind::kString) return Expected("the name of the constant file, as a string");
  const std::string name = Next().text;
  STRATA_RETURN_IF_ERROR(Expect(",", "after the file name"));
  if (Peek().kind != TokenKind::kInt) return Expected("the byte offset of the constant in the file");
  const Token offset_token = Next();
  uint64_t offset = 0;
  auto [end, ec] =
      std::from_chars(offset_token.text.data(), offset_token.text.data() + offset_token.text.size(), offset);
  if (ec != std::errc() || end != offset_token.text.data() + offset_token.text.size()) {
    return ErrorAt(offset_token, "malformed byte offset '" + offset_token.text + "'");
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "to close file(...)"));
  STRATA_RETURN_IF_ERROR(Expect(")", "to close const(...)"));
  std::filesystem::path path(name);
  if (path.is_relative()) path = std::filesystem::path(filename_).parent_path() / path;
  const uint64_t bytes = count * static_cast<uint64_t>(data->dtype.bytes());
  std::error_code size_error;
  const uint64_t file_size = std::filesystem::file_size(path, size_error);
  if (size_error) return ErrorAt(file_token, "cannot open constant file '" + path.string() + "'");
  if (offset > file_size || file_size - offset < bytes) {
    return ErrorAt(file_token, "constant file '" + path.string() + "' holds " + std::to_string(file_size) +
                                   " bytes; the constant needs " + std::to_string(bytes) + " at offset " +
                                   std::to_string(offset));
  }
  std::ifstream in(path, std::ios::binary);
  data->bytes.resize(static_cast<size_t>(bytes));
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(data->bytes.data()), static_cast<std::streamsize>(bytes));
  if (!in) return ErrorAt(file_token, "cannot read constant file '" + path.string() + "'");
  return graph::ConstantNode::make(std::move(data));
}

StatusOr<graph::Expr> Parser::ParseConst() {
  const Token si_token = Peek();
  STRATA_ASSIGN_OR_RETURN(StructInfo sinfo, ParseStructInfo());
  const auto* tensor = sinfo.as<graph::TensorStructInfoNode>();
  auto data = std::make_shared<graph::HostTensor>();
  bool ok = tensor && tensor->shape && !tensor->dtype.is_void() && !tensor->dtype.is_handle();
  uint64_t count = 1;
  if (ok) {
    for (const PrimExpr& dim : *tensor->shape) {
      const int64_t* value = tir::AsConstInt(dim);
      if (!value || *value < 0) {
        ok = false;
        break;
      }
      data->shape.push_back(*value);
      if (*value != 0 && count > kMaxConstElements / static_cast<uint64_t>(*value)) {
        return ErrorAt(si_token, "constant is too large to write as text");
      }
      count *= static_cast<uint64_t>(*value);
    }
  }
  if (!ok) {
    return ErrorAt(si_token, "const needs Tensor[(d0, d1, ...), dtype] with constant dimensions and a dtype");
  }
  DataType dtype = tensor->dtype;
  data->dtype = dtype;
  STRATA_RETURN_IF_ERROR(Expect(",", "after the struct info of const"));
  if (Peek().IsIdent("file")) return ParseConstFile(std::move(data), count);
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("[", "to open the values of const"));
  uint64_t n = 0;
  while (!Peek().IsPunct("]")) {
    const Token item = Peek();
    bool negative = TryPunct("-");
    const Token t = Peek();
    if (dtype.is_bool() && (t.IsIdent("true") || t.IsIdent("false")) && !negative) {
      Next();
      data->bytes.push_back(t.text == "true" ? 1 : 0);
    } else if (dtype.is_float()) {
      if (t.kind != TokenKind::kInt && t.kind != TokenKind::kFloat && !t.IsIdent("inf") && !t.IsIdent("nan")) {
        return Expected("a number in the values of const");
      }
      NumberParts parts = t.kind == TokenKind::kIdent ? NumberParts{t.text, "", true} : SplitNumber(t.text);
      if (!parts.suffix.empty()) return ErrorAt(t, "values of const take no dtype suffix");
      Next();
      if (dtype.bits() == 64) {
        double v = 0;
        if (parts.body == "inf")
          v = std::numeric_limits<double>::infinity();
        else if (parts.body == "nan")
          v = std::numeric_limits<double>::quiet_NaN();
        else if (!ParseDoubleText(parts.body, &v))
          return ErrorAt(t, "malformed number '" + t.text + "'");
        if (negative) v = -v;
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof(bits));
        AppendLittleEndian(bits, 8, &data->bytes);
      } else {
        float v = 0;
        if (parts.body == "inf")
          v = std::numeric_limits<float>::infinity();
        else if (parts.body == "nan")
          v = std::numeric_limits<float>::quiet_NaN();
        else if (!ParseFloatText(parts.body, &v))
          return ErrorAt(t, "malformed number '" + t.text + "'");
        if (negative) v = -v;
        if (dtype.bits() == 16) {
          AppendLittleEndian(FloatToHalf(v), 2, &data->bytes);
        } else {
          uint32_t bits;
          std::memcpy(&bits, &v, sizeof(bits));
          AppendLittleEndian(bits, 4, &data->bytes);
        }
      }
    } else {
      if (t.kind != TokenKind::kInt) return Expected("an integer in the values of const");
      STRATA_ASSIGN_OR_RETURN(PExpr e, ParseNumber(Next(), negative, item.line, item.col));
      if (e.lit != PExpr::Lit::kInt) return ErrorAt(t, "values of const take no dtype suffix");
      STRATA_ASSIGN_OR_RETURN(PrimExpr imm, MakeLiteral(e, dtype));
      AppendLittleEndian(static_cast<uint64_t>(*tir::AsConstInt(imm)), dtype.bytes(), &data->bytes);
    }
    ++n;
    if (n > count) break;
    if (!TryPunct(",")) break;
  }
  if (n != count) {
    return ErrorAt(open, "const has " +
                             std::string(n > count ? "more than " + std::to_string(count) : std::to_string(n)) +
                             " values, but its shape needs " + std::to_string(count));
  }
  STRATA_RETURN_IF_ERROR(Expect("]", "to close the values of const"));
  STRATA_RETURN_IF_ERROR(Expect(")", "to close const(...)"));
  return graph::ConstantNode::make(std::move(data));
}

}  // namespace strata::ir::text_parser
