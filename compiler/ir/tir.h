// Tensor programs: loop nests over buffers, the level LLVM compiles.
//
// A PrimFunc takes buffers (row-major, shapes possibly symbolic) and scalars, in
// the order of its parameter list, and writes its results into output buffers
// (destination passing). Symbolic variables that appear in buffer shapes are bound
// from the actual tensors at the call; any other free variable must be a scalar
// parameter. Loops carry their schedule (parallel, vectorized, unrolled) so a
// hand-written kernel keeps the schedule its author chose.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/prim_expr.h"

namespace strata::tir {

enum class StmtKind : uint8_t {
  kFor,
  kBufferStore,
  kAllocate,
  kLetStmt,
  kIfThenElse,
  kSeqStmt,
  kAssertStmt,
  kEvaluate,
  kPrefetch,
};

struct StmtNode {
  const StmtKind kind;

 protected:
  explicit StmtNode(StmtKind kind) : kind(kind) {}

 public:
  virtual ~StmtNode() = default;
};
using Stmt = NodeRef<StmtNode>;

enum class ForKind : uint8_t {
  kSerial,      // text: range
  kParallel,    // iterations split across the runtime thread pool
  kVectorized,  // the innermost loop, vectorized by the backend
  kUnrolled,    // fully unrolled by the backend
};
std::string_view ForKindName(ForKind kind);  // "range", "parallel", "vectorized", "unrolled"

// for loop_var in kind(min, min + extent) { body }
struct ForNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kFor)
  const Var loop_var;
  const PrimExpr min, extent;
  const ForKind for_kind;
  const Stmt body;
  static Stmt make(Var loop_var, PrimExpr min, PrimExpr extent, ForKind for_kind, Stmt body);
  ForNode(Var v, PrimExpr min, PrimExpr extent, ForKind k, Stmt body)
      : StmtNode(kKind),
        loop_var(std::move(v)),
        min(std::move(min)),
        extent(std::move(extent)),
        for_kind(k),
        body(std::move(body)) {}
};

// buffer[indices] = value
struct BufferStoreNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kBufferStore)
  const Buffer buffer;
  const std::vector<PrimExpr> indices;
  const PrimExpr value;
  static Stmt make(Buffer buffer, std::vector<PrimExpr> indices, PrimExpr value);
  BufferStoreNode(Buffer b, std::vector<PrimExpr> i, PrimExpr v)
      : StmtNode(kKind), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

// A local (scratch) buffer that lives while `body` runs.
struct AllocateNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kAllocate)
  const Buffer buffer;
  const Stmt body;
  static Stmt make(Buffer buffer, Stmt body);
  AllocateNode(Buffer b, Stmt body) : StmtNode(kKind), buffer(std::move(b)), body(std::move(body)) {}
};

// let var = value in body
struct LetStmtNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kLetStmt)
  const Var var;
  const PrimExpr value;
  const Stmt body;
  static Stmt make(Var var, PrimExpr value, Stmt body);
  LetStmtNode(Var v, PrimExpr value, Stmt body)
      : StmtNode(kKind), var(std::move(v)), value(std::move(value)), body(std::move(body)) {}
};

struct IfThenElseNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kIfThenElse)
  const PrimExpr condition;
  const Stmt then_case;
  const Stmt else_case;  // may be null
  static Stmt make(PrimExpr condition, Stmt then_case, Stmt else_case = Stmt());
  IfThenElseNode(PrimExpr c, Stmt t, Stmt e)
      : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

struct SeqStmtNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kSeqStmt)
  const std::vector<Stmt> stmts;
  // Flattens nested sequences; a one-element sequence is returned as that element.
  static Stmt make(std::vector<Stmt> stmts);
  explicit SeqStmtNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};

// Fails the kernel call with `message` when condition is false.
struct AssertStmtNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kAssertStmt)
  const PrimExpr condition;
  const std::string message;
  static Stmt make(PrimExpr condition, std::string message);
  AssertStmtNode(PrimExpr c, std::string m) : StmtNode(kKind), condition(std::move(c)), message(std::move(m)) {}
};

struct EvaluateNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kEvaluate)
  const PrimExpr value;
  static Stmt make(PrimExpr value);
  explicit EvaluateNode(PrimExpr v) : StmtNode(kKind), value(std::move(v)) {}
};

// A hint that `load`'s element will be read soon: its cache line is fetched
// toward the core, into the second-level cache, while other work runs. It
// never faults and changes no value; a kernel uses it for data it will copy or
// read in a burst later (the next tile's rows), which a burst would otherwise
// wait for. Into L2 rather than L1: what is being prefetched is the next
// step's data, and L1 holds the current step's.
struct PrefetchNode : StmtNode {
  STRATA_NODE_KIND(StmtKind, kPrefetch)
  const PrimExpr load;  // a BufferLoadNode: the element whose line is fetched
  static Stmt make(PrimExpr load);
  explicit PrefetchNode(PrimExpr l) : StmtNode(kKind), load(std::move(l)) {}
};

// One parameter of a tensor program: a buffer, or a scalar variable.
struct PrimFuncParam {
  Buffer buffer;  // set for a buffer parameter
  Var scalar;     // set for a scalar parameter
  bool is_buffer() const { return buffer != nullptr; }
  const std::string& name() const { return buffer ? buffer->name : scalar.name(); }
};

struct PrimFuncNode {
  const std::vector<PrimFuncParam> params;
  const Stmt body;
  const ir::Attrs attrs;
  PrimFuncNode(std::vector<PrimFuncParam> p, Stmt b, ir::Attrs a)
      : params(std::move(p)), body(std::move(b)), attrs(std::move(a)) {}
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;
PrimFunc MakePrimFunc(std::vector<PrimFuncParam> params, Stmt body, ir::Attrs attrs = {});

}  // namespace strata::tir
