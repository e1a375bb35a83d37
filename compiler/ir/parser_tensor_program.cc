// Text IR parser: tensor programs (prim_func signatures, blocks, loops,
// statements).
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/parser_internal.h"

namespace strata::ir::text_parser {

// ===================================================================== tensor programs

StatusOr<tir::PrimFunc> Parser::ParsePrimFuncRest() {
  in_graph_ = false;
  tir_vars_.assign(1, {});
  buffers_.assign(1, {});
  STRATA_RETURN_IF_ERROR(Expect("(", "after the function name"));
  scalar_params_ahead_.clear();
  int nesting = 0;
  for (size_t i = pos_; i + 3 < tokens_.size() && tokens_[i].kind != TokenKind::kEnd; ++i) {
    const Token& tok = tokens_[i];
    if (tok.IsPunct("(") || tok.IsPunct("[") || tok.IsPunct("{")) ++nesting;
    if (tok.IsPunct(")") || tok.IsPunct("]") || tok.IsPunct("}")) {
      if (nesting-- == 0) break;
    }
    if (nesting != 0 || tok.kind != TokenKind::kIdent || !tokens_[i + 1].IsPunct(":")) continue;
    std::optional<DataType> dtype = DataType::Parse(tokens_[i + 2].text);
    bool ends = tokens_[i + 3].IsPunct(",") || tokens_[i + 3].IsPunct(")");
    if (tokens_[i + 2].kind == TokenKind::kIdent && dtype && dtype->is_integral() && ends) {
      scalar_params_ahead_.emplace(tok.text, *dtype);
    }
  }
  std::vector<tir::PrimFuncParam> params;
  std::set<std::string> param_names;
  while (!Peek().IsPunct(")")) {
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a parameter name"));
    if (!param_names.insert(name.text).second) {
      return ErrorAt(name, "duplicate parameter name '" + name.text + "'");
    }
    STRATA_RETURN_IF_ERROR(Expect(":", "after the parameter name"));
    tir::PrimFuncParam param;
    if (Peek().IsIdent("Buffer")) {
      STRATA_ASSIGN_OR_RETURN(param.buffer, ParseBufferType(name.text));
      buffers_.back()[name.text] = param.buffer;
    } else {
      const Token dtype_token = Peek();
      STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
      if (dtype.is_void() || dtype.is_handle()) {
        return ErrorAt(dtype_token, "a scalar parameter needs a numeric or bool dtype, found " + dtype.ToString());
      }
      // A scalar that already appeared in a buffer shape is that shape variable.
      if (tir::Var* existing = LookupVar(name.text)) {
        if (existing->dtype() != dtype) {
          return ErrorAt(dtype_token, "scalar parameter '" + name.text + "' is declared " + dtype.ToString() +
                                          ", but a buffer shape already made it " + existing->dtype().ToString());
        }
        param.scalar = *existing;
      } else {
        param.scalar = tir::Var(name.text, dtype);
        tir_vars_.back()[name.text] = param.scalar;
      }
    }
    params.push_back(std::move(param));
    if (!TryPunct(",")) break;
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "after the parameters"));
  scalar_params_ahead_.clear();
  Attrs attrs;
  if (Peek().IsIdent("attrs")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(attrs, ParseAttrBlock());
  }
  STRATA_ASSIGN_OR_RETURN(tir::Stmt body, ParseBlock(nullptr));
  return tir::MakePrimFunc(std::move(params), std::move(body), std::move(attrs));
}

StatusOr<tir::Stmt> Parser::ParseBlock(const tir::Var* loop_var) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("{", "to open a block"));
  tir_vars_.emplace_back();
  buffers_.emplace_back();
  if (loop_var) tir_vars_.back()[loop_var->name()] = *loop_var;
  const int outer_nesting = stmt_nesting_++;
  // let and alloc scope over the rest of the block: collect the block flat,
  // then nest from the back (no recursion, however many lets there are).
  struct Item {
    tir::Stmt stmt;
    tir::Var let_var;
    PrimExpr let_value;
    tir::Buffer alloc;
  };
  std::vector<Item> items;
  while (!Peek().IsPunct("}")) {
    const Token t = Peek();
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(
          t, "expected '}' to close the block opened at line " + std::to_string(open.line) + ", found end of file");
    }
    Item item;
    bool binder = t.IsIdent("let") || t.IsIdent("alloc");
    if (stmt_nesting_ + (binder ? 1 : 0) > kMaxStmtNesting) {
      return ErrorAt(t, "statements are nested more than " + std::to_string(kMaxStmtNesting) +
                            " levels deep (each let and alloc nests the rest of its block)");
    }
    if (binder) ++stmt_nesting_;
    if (t.IsIdent("let")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name after 'let'"));
      std::optional<DataType> declared;
      if (TryPunct(":")) {
        STRATA_ASSIGN_OR_RETURN(declared, ParseDType());
      }
      STRATA_RETURN_IF_ERROR(Expect("=", "after the let variable"));
      STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
      if (declared) {
        STRATA_RETURN_IF_ERROR(Settle(&value, *declared));
        if (value.expr.dtype() != *declared) {
          return ErrorAt(value.line, value.col,
                         "dtype mismatch: let value is " + value.expr.dtype().ToString() + ", but '" + name.text +
                             "' is declared " + declared->ToString());
        }
      } else {
        STRATA_RETURN_IF_ERROR(SettleDefault(&value));
      }
      item.let_var = tir::Var(name.text, value.expr.dtype());
      item.let_value = value.expr;
      tir_vars_.back()[name.text] = item.let_var;
    } else if (t.IsIdent("alloc")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a buffer name after 'alloc'"));
      STRATA_RETURN_IF_ERROR(Expect(":", "after the buffer name"));
      STRATA_ASSIGN_OR_RETURN(item.alloc, ParseBufferType(name.text));
      buffers_.back()[name.text] = item.alloc;
    } else {
      STRATA_ASSIGN_OR_RETURN(item.stmt, ParseStmt());
    }
    items.push_back(std::move(item));
  }
  Next();  // '}'
  stmt_nesting_ = outer_nesting;
  tir_vars_.pop_back();
  buffers_.pop_back();
  std::vector<tir::Stmt> tail;
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->stmt.defined()) {
      tail.insert(tail.begin(), it->stmt);
      continue;
    }
    tir::Stmt body = tir::SeqStmtNode::make(std::move(tail));
    tail.clear();
    tail.push_back(it->alloc ? tir::AllocateNode::make(it->alloc, body)
                             : tir::LetStmtNode::make(it->let_var, it->let_value, body));
  }
  return tir::SeqStmtNode::make(std::move(tail));
}

StatusOr<tir::Stmt> Parser::ParseStmt() {
  const Token t = Peek();
  if (t.IsIdent("for")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a loop variable after 'for'"));
    STRATA_RETURN_IF_ERROR(ExpectKeyword("in", "after the loop variable"));
    const Token kind_token = Peek();
    tir::ForKind kind;
    if (kind_token.IsIdent("range")) {
      kind = tir::ForKind::kSerial;
    } else if (kind_token.IsIdent("parallel")) {
      kind = tir::ForKind::kParallel;
    } else if (kind_token.IsIdent("vectorized")) {
      kind = tir::ForKind::kVectorized;
    } else if (kind_token.IsIdent("unrolled")) {
      kind = tir::ForKind::kUnrolled;
    } else {
      return Expected("a loop kind (range, parallel, vectorized or unrolled)");
    }
    Next();
    STRATA_RETURN_IF_ERROR(Expect("(", "after the loop kind"));
    STRATA_ASSIGN_OR_RETURN(PExpr min, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(",", "after the loop start"));
    STRATA_ASSIGN_OR_RETURN(PExpr extent, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(")", "after the loop extent"));
    for (PExpr* bound : {&min, &extent}) {
      STRATA_RETURN_IF_ERROR(Settle(bound, DataType::I64()));
      if (!bound->expr.dtype().is_integral()) {
        return ErrorAt(bound->line, bound->col,
                       "loop bounds must be integers, found " + bound->expr.dtype().ToString());
      }
    }
    tir::Var loop_var(name.text, DataType::I64());
    STRATA_ASSIGN_OR_RETURN(tir::Stmt body, ParseBlock(&loop_var));
    return tir::ForNode::make(loop_var, min.expr, extent.expr, kind, body);
  }
  if (t.IsIdent("if")) return ParseIfStmt();
  if (t.IsIdent("assert")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr cond, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&cond));
    if (!cond.expr.dtype().is_bool()) {
      return ErrorAt(cond.line, cond.col, "assert condition must be bool, found " + cond.expr.dtype().ToString());
    }
    STRATA_RETURN_IF_ERROR(Expect(",", "after the assert condition"));
    if (Peek().kind != TokenKind::kString) return Expected("the assert message (a string)");
    return tir::AssertStmtNode::make(cond.expr, Next().text);
  }
  if (t.IsIdent("evaluate")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&value));
    return tir::EvaluateNode::make(value.expr);
  }
  if (t.IsIdent("prefetch")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr load, ParseScalar());
    if (load.expr.as<tir::BufferLoadNode>() == nullptr) {
      return ErrorAt(load.line, load.col, "prefetch needs a buffer element such as A[i, k]");
    }
    return tir::PrefetchNode::make(load.expr);
  }
  if (t.kind == TokenKind::kIdent && !IsReservedWord(t.text) && Peek(1).IsPunct("[")) {
    Next();
    tir::Buffer buffer = LookupBuffer(t.text);
    if (!buffer) return ErrorAt(t, "undefined buffer '" + t.text + "'");
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> indices, ParseIndices(buffer, t));
    STRATA_RETURN_IF_ERROR(Expect("=", "after the store target"));
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(Settle(&value, buffer->dtype));
    if (value.expr.dtype() != buffer->dtype) {
      return ErrorAt(value.line, value.col,
                     "dtype mismatch: stored value is " + value.expr.dtype().ToString() + ", but buffer '" + t.text +
                         "' holds " + buffer->dtype.ToString());
    }
    return tir::BufferStoreNode::make(buffer, std::move(indices), value.expr);
  }
  return Expected("a statement (for, let, alloc, if, assert, evaluate or a store B[i] = value)");
}

StatusOr<tir::Stmt> Parser::ParseIfStmt() {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  Next();  // if
  STRATA_ASSIGN_OR_RETURN(PExpr cond, ParseScalar());
  STRATA_RETURN_IF_ERROR(SettleDefault(&cond));
  if (!cond.expr.dtype().is_bool()) {
    return ErrorAt(cond.line, cond.col, "if condition must be bool, found " + cond.expr.dtype().ToString());
  }
  STRATA_ASSIGN_OR_RETURN(tir::Stmt then_case, ParseBlock(nullptr));
  tir::Stmt else_case;
  if (Peek().IsIdent("else")) {
    Next();
    if (Peek().IsIdent("if")) {
      STRATA_ASSIGN_OR_RETURN(else_case, ParseIfStmt());
    } else {
      STRATA_ASSIGN_OR_RETURN(else_case, ParseBlock(nullptr));
    }
  }
  return tir::IfThenElseNode::make(cond.expr, then_case, else_case);
}

}  // namespace strata::ir::text_parser
