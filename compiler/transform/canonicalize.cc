// Canonicalize: reshape/transpose chains and identities (see canonicalize.h).
#include "compiler/transform/canonicalize.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"
#include "support/half_float.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

// Element `i` of `t` as a double; false for dtypes without a numeric reading.
bool ElementAsDouble(const HostTensor& t, size_t i, double* out) {
  const uint8_t* p = t.bytes.data() + i * static_cast<size_t>(t.dtype.bytes());
  auto load = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    *out = static_cast<double>(v);
    return true;
  };
  const int bits = t.dtype.bits();
  if (t.dtype.is_float()) {
    if (bits == 16) {
      uint16_t h;
      std::memcpy(&h, p, sizeof(h));
      *out = HalfToFloat(h);
      return true;
    }
    if (bits == 32) return load(float{});
    if (bits == 64) return load(double{});
    return false;
  }
  if (t.dtype.is_int()) {
    if (bits == 8) return load(int8_t{});
    if (bits == 16) return load(int16_t{});
    if (bits == 32) return load(int32_t{});
    if (bits == 64) return load(int64_t{});
    return false;
  }
  if (t.dtype.is_uint() || t.dtype.is_bool()) {
    if (bits == 8 || t.dtype.is_bool()) return load(uint8_t{});
    if (bits == 16) return load(uint16_t{});
    if (bits == 32) return load(uint32_t{});
    if (bits == 64) return load(uint64_t{});
  }
  return false;
}

// Whether every element of `t` is `value` (an empty tensor is not: nothing to prove).
bool AllElementsEqual(const HostTensor& t, double value) {
  const size_t size = t.dtype.bytes() > 0 ? t.bytes.size() / static_cast<size_t>(t.dtype.bytes()) : 0;
  if (size == 0) return false;
  for (size_t i = 0; i < size; ++i) {
    double v = 0;
    if (!ElementAsDouble(t, i, &v) || v != value) return false;
  }
  return true;
}

// Both known tensor shapes of one dtype, every dimension provably equal.
bool SameTensorInfo(const StructInfo& a, const StructInfo& b) {
  const auto* ta = a.defined() ? a.as<TensorStructInfoNode>() : nullptr;
  const auto* tb = b.defined() ? b.as<TensorStructInfoNode>() : nullptr;
  if (ta == nullptr || tb == nullptr || !ta->shape || !tb->shape || ta->dtype.is_void() || ta->dtype != tb->dtype ||
      ta->shape->size() != tb->shape->size()) {
    return false;
  }
  for (size_t d = 0; d < ta->shape->size(); ++d) {
    if (!analysis::ProveDimEqual((*ta->shape)[d], (*tb->shape)[d])) return false;
  }
  return true;
}

const CallNode* AsOpCall(const Expr& e, const char* name) {
  const auto* call = e.defined() ? e.as<CallNode>() : nullptr;
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  return op != nullptr && op->name == name ? call : nullptr;
}

class Canonicalizer : public Normalizer {
 public:
  explicit Canonicalizer(const ir::IRModule* module) : Normalizer(module) {}

  bool changed() const { return changed_; }

 protected:
  void RewriteBinding(const Binding& binding) override {
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    if (binding.kind == BindingKind::kVarBinding) {
      // Each rewrite may enable another (a reshape chain that becomes the identity).
      for (int round = 0; round < 4; ++round) {
        Expr next = Simplify(value);
        if (!next.defined()) break;
        changed_ = true;
        value = next;
        if (value.as<VarNode>()) break;
      }
      if (const auto* x = value.as<VarNode>()) {
        // A block output must not name a dataflow variable: keep `y = x` then.
        if (binding.var->is_dataflow || !x->is_dataflow) {
          var_remap_[binding.var.get()] = Var::FromNode(value);
          return;
        }
      }
    }
    EmitBinding(binding, value);
    definitions_[var_remap_.at(binding.var.get()).get()] = value;
  }

 private:
  // The value bound to `e` when it is a variable of this function, else `e`.
  Expr Definition(const Expr& e) const {
    const auto* v = e.as<VarNode>();
    if (v == nullptr) return e;
    auto it = definitions_.find(v);
    return it == definitions_.end() ? e : it->second;
  }

  bool IsConstantAll(const Expr& e, double value) const {
    const auto* c = Definition(e).as<ConstantNode>();
    return c != nullptr && AllElementsEqual(*c->data, value);
  }

  // The rewritten value, or a null Expr when no rule applies.
  Expr Simplify(const Expr& value) {
    const auto* call = value.as<CallNode>();
    const auto* op = call ? call->op.as<OpNode>() : nullptr;
    if (op == nullptr) return Expr();
    const std::string& name = op->name;
    if (name == "reshape") return SimplifyReshape(call);
    if (name == "transpose") return SimplifyTranspose(call);
    if (call->args.size() != 2) return Expr();
    const Expr& a = call->args[0];
    const Expr& b = call->args[1];
    const StructInfo& result = call->struct_info;
    auto identity_if = [&](const Expr& x, bool other_is_neutral) {
      return other_is_neutral && SameTensorInfo(x->struct_info, result) ? x : Expr();
    };
    Expr out;
    if (name == "multiply") {
      out = identity_if(a, IsConstantAll(b, 1));
      if (!out.defined()) out = identity_if(b, IsConstantAll(a, 1));
    } else if (name == "divide") {
      out = identity_if(a, IsConstantAll(b, 1));
    } else if (name == "add") {
      out = identity_if(a, IsConstantAll(b, 0));
      if (!out.defined()) out = identity_if(b, IsConstantAll(a, 0));
    } else if (name == "subtract") {
      out = identity_if(a, IsConstantAll(b, 0));
    } else if (name == "power" && SameTensorInfo(a->struct_info, result)) {
      // Exporters write x ** 2 (a decomposed layer norm's variance) as Pow,
      // which would be a libm pow per element: x * x is exact and vectorizes.
      if (IsConstantAll(b, 1)) {
        out = a;
      } else if (IsConstantAll(b, 2)) {
        out = Annotate(CallNode::make(OpNode::Get("multiply"), {a, a}, {}));
      } else if (IsConstantAll(b, 3)) {
        // GPT-2's tanh GELU: x ** 3. The square is bound first so the IR stays normalized.
        Expr square = Emit("square", Annotate(CallNode::make(OpNode::Get("multiply"), {a, a}, {})));
        out = Annotate(CallNode::make(OpNode::Get("multiply"), {square, a}, {}));
      } else if (IsConstantAll(b, 0.5)) {
        out = Annotate(CallNode::make(OpNode::Get("sqrt"), {a}, {}));
      }
    }
    return out;
  }

  Expr SimplifyReshape(const CallNode* call) {
    const Expr& x = call->args[0];
    if (SameTensorInfo(x->struct_info, call->struct_info)) return x;
    const CallNode* inner = AsOpCall(Definition(x), "reshape");
    if (inner == nullptr) return Expr();
    // The target as the dims inferred for it, so a 0 (copy the input's dim) or
    // -1 means the same with the inner reshape's input.
    const auto* t = call->struct_info.as<TensorStructInfoNode>();
    if (t == nullptr || !t->shape) return Expr();
    return Annotate(CallNode::make(call->op, {inner->args[0], ShapeExprNode::make(*t->shape)}, call->attrs));
  }

  // The permutation of transpose `call` (output axis k reads input axis perm[k]);
  // empty when the rank is unknown.
  static std::vector<int64_t> Permutation(const CallNode* call) {
    const auto* x = call->args[0]->struct_info.as<TensorStructInfoNode>();
    if (x == nullptr || x->ndim < 0) return {};
    std::vector<int64_t> perm;
    auto it = call->attrs.find("axes");
    if (it == call->attrs.end()) {
      for (int64_t k = x->ndim; k-- > 0;) perm.push_back(k);
      return perm;
    }
    const auto* axes = std::get_if<std::vector<int64_t>>(&it->second);
    if (axes == nullptr || static_cast<int>(axes->size()) != x->ndim) return {};
    for (int64_t a : *axes) perm.push_back(a < 0 ? a + x->ndim : a);
    return perm;
  }

  static bool IsIdentity(const std::vector<int64_t>& perm) {
    for (size_t k = 0; k < perm.size(); ++k) {
      if (perm[k] != static_cast<int64_t>(k)) return false;
    }
    return true;
  }

  Expr SimplifyTranspose(const CallNode* call) {
    const std::vector<int64_t> outer = Permutation(call);
    if (outer.empty()) return Expr();
    if (IsIdentity(outer)) return call->args[0];
    const CallNode* inner = AsOpCall(Definition(call->args[0]), "transpose");
    if (inner == nullptr) return Expr();
    const std::vector<int64_t> first = Permutation(inner);
    if (first.size() != outer.size()) return Expr();
    // out[k] = mid[outer[k]] = in[first[outer[k]]].
    std::vector<int64_t> composed;
    for (int64_t k : outer) composed.push_back(first[k]);
    if (IsIdentity(composed)) return inner->args[0];
    ir::Attrs attrs = call->attrs;
    attrs["axes"] = composed;
    return Annotate(CallNode::make(call->op, {inner->args[0]}, std::move(attrs)));
  }

  std::map<const VarNode*, Expr> definitions_;
  bool changed_ = false;
};

}  // namespace

StatusOr<ir::IRModule> Canonicalize(ir::IRModule module) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module.functions()) {
    if (std::holds_alternative<Function>(func)) names.push_back(name);
  }
  for (const std::string& name : names) {
    Function func = module.GetGraphFunction(name);
    Canonicalizer canonicalizer(&module);
    STRATA_ASSIGN_OR_RETURN(Function rewritten, canonicalizer.NormalizeFunction(name, func));
    if (canonicalizer.changed()) module.Add(name, std::move(rewritten));  // else keep the original handles
  }
  return module;
}

STRATA_REGISTER_PASS(Canonicalize, Canonicalize)

}  // namespace strata::transform
