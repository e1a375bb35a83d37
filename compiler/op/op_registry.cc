// The operator registry and attribute checking; see op_registry.h.
#include "compiler/op/op_registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "compiler/op/builtin_ops.h"

namespace strata::op {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, OpDef, std::less<>> ops;
  std::map<std::string, bool, std::less<>> is_builtin;
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    for (OpDef& def : BuiltinOps()) {
      std::string name = def.name;
      r->ops.emplace(name, std::move(def));
      r->is_builtin[name] = true;
    }
    return r;
  }();
  return *registry;
}

bool KindMatches(AttrKind kind, const ir::AttrValue& value) {
  switch (kind) {
    case AttrKind::kBool: return std::holds_alternative<bool>(value);
    case AttrKind::kInt: return std::holds_alternative<int64_t>(value);
    case AttrKind::kFloat: return std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value);
    case AttrKind::kString: return std::holds_alternative<std::string>(value);
    case AttrKind::kInts:  // a single int is a one-element list (expand_dims(x, axis=1))
      return std::holds_alternative<std::vector<int64_t>>(value) || std::holds_alternative<int64_t>(value);
    case AttrKind::kDataType: return std::holds_alternative<DataType>(value);
    case AttrKind::kIntExprs: return ir::IntListExprs(value).has_value();
  }
  return false;
}

std::string_view ValueKindName(const ir::AttrValue& value) {
  if (std::holds_alternative<bool>(value)) return AttrKindName(AttrKind::kBool);
  if (std::holds_alternative<int64_t>(value)) return AttrKindName(AttrKind::kInt);
  if (std::holds_alternative<double>(value)) return AttrKindName(AttrKind::kFloat);
  if (std::holds_alternative<std::string>(value)) return AttrKindName(AttrKind::kString);
  if (std::holds_alternative<std::vector<int64_t>>(value)) return AttrKindName(AttrKind::kInts);
  if (std::holds_alternative<ir::SymbolicInts>(value)) return AttrKindName(AttrKind::kIntExprs);
  if (std::holds_alternative<std::vector<std::string>>(value)) return "a list of strings";  // no operator takes one
  return AttrKindName(AttrKind::kDataType);
}

// An operator definition read an attribute it does not declare with that kind:
// a bug in the definition, not in the user's program.
[[noreturn]] void AttrAccessBug(const std::string& op, const std::string& attr) {
  std::fprintf(stderr, "internal error: operator %s read attribute '%s' as a kind it does not declare\n", op.c_str(),
               attr.c_str());
  std::abort();
}

}  // namespace

std::string_view AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kBool: return "a bool";
    case AttrKind::kInt: return "an int";
    case AttrKind::kFloat: return "a float";
    case AttrKind::kString: return "a string";
    case AttrKind::kInts: return "a list of ints";
    case AttrKind::kDataType: return "a dtype";
    case AttrKind::kIntExprs: return "a list of integer expressions";
  }
  return "?";
}

std::string_view OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kElementwise: return "elementwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kInjective: return "injective";
    case OpPattern::kReduction: return "reduction";
    case OpPattern::kOutputFusable: return "output_fusable";
    case OpPattern::kOpaque: return "opaque";
  }
  return "opaque";
}

std::optional<OpPattern> ParseOpPattern(std::string_view name) {
  for (OpPattern p : {OpPattern::kElementwise, OpPattern::kBroadcast, OpPattern::kInjective, OpPattern::kReduction,
                      OpPattern::kOutputFusable, OpPattern::kOpaque}) {
    if (OpPatternName(p) == name) return p;
  }
  return std::nullopt;
}

const std::string& OpCall::name() const { return def_.name; }

graph::StructInfo OpCall::arg_sinfo(size_t i) const {
  const graph::StructInfo& sinfo = call_.args[i]->struct_info;
  return sinfo ? sinfo : graph::ObjectStructInfoNode::make();
}

std::string OpCall::arg_name(size_t i) const {
  return i < def_.params.size() ? def_.params[i] : "argument " + std::to_string(i);
}

const ir::AttrValue* OpCall::Find(const std::string& name) const {
  auto it = call_.attrs.find(name);
  if (it != call_.attrs.end()) return &it->second;
  for (const AttrDef& attr : def_.attrs) {
    if (attr.name == name && attr.default_value) return &*attr.default_value;
  }
  return nullptr;
}

bool OpCall::HasAttr(const std::string& name) const { return Find(name) != nullptr; }

// The accessors are only called for attributes the OpDef declares with that
// kind, and CheckOpCall ran first: a miss is a bug in the operator definition.
#define STRATA_ATTR_ACCESSOR(Type, Method, Alternative)                                                   \
  Type OpCall::Method(const std::string& name) const {                                                    \
    const ir::AttrValue* value = Find(name);                                                              \
    if (value == nullptr || !std::holds_alternative<Alternative>(*value)) AttrAccessBug(def_.name, name); \
    return std::get<Alternative>(*value);                                                                 \
  }
STRATA_ATTR_ACCESSOR(bool, BoolAttr, bool)
STRATA_ATTR_ACCESSOR(int64_t, IntAttr, int64_t)
STRATA_ATTR_ACCESSOR(const std::string&, StringAttr, std::string)
STRATA_ATTR_ACCESSOR(DataType, DataTypeAttr, DataType)
#undef STRATA_ATTR_ACCESSOR

std::vector<int64_t> OpCall::IntsAttr(const std::string& name) const {
  const ir::AttrValue* value = Find(name);
  if (value != nullptr && std::holds_alternative<int64_t>(*value)) return {std::get<int64_t>(*value)};
  if (value == nullptr || !std::holds_alternative<std::vector<int64_t>>(*value)) AttrAccessBug(def_.name, name);
  return std::get<std::vector<int64_t>>(*value);
}

std::vector<tir::PrimExpr> OpCall::IntExprsAttr(const std::string& name) const {
  const ir::AttrValue* value = Find(name);
  std::optional<std::vector<tir::PrimExpr>> exprs = value ? ir::IntListExprs(*value) : std::nullopt;
  if (!exprs) AttrAccessBug(def_.name, name);
  return *exprs;
}

double OpCall::FloatAttr(const std::string& name) const {
  const ir::AttrValue* value = Find(name);
  if (value != nullptr && std::holds_alternative<int64_t>(*value))
    return static_cast<double>(std::get<int64_t>(*value));
  if (value == nullptr || !std::holds_alternative<double>(*value)) AttrAccessBug(def_.name, name);
  return std::get<double>(*value);
}

Status RegisterOp(OpDef def, bool replace) {
  if (def.name.empty() || !def.infer) {
    return ErrorStatus() << "RegisterOp: an operator needs a name and an inference function";
  }
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(def.name);
  if (it != r.ops.end()) {
    if (r.is_builtin[def.name]) return ErrorStatus() << "RegisterOp: '" << def.name << "' is a built-in operator";
    if (!replace) return ErrorStatus() << "RegisterOp: operator '" << def.name << "' is already registered";
    it->second = std::move(def);
    return Status::Ok();
  }
  std::string name = def.name;
  r.ops.emplace(name, std::move(def));
  r.is_builtin[name] = false;
  return Status::Ok();
}

const OpDef* FindOp(std::string_view name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : &it->second;
}

std::vector<std::string> RegisteredOpNames() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, def] : r.ops) names.push_back(name);
  return names;
}

Status CheckOpCall(const OpDef& def, const graph::CallNode& call) {
  const size_t max_args = def.params.size();
  const size_t min_args = max_args - def.num_optional_params;
  if (call.args.size() < min_args || call.args.size() > max_args) {
    ErrorStatus error;
    error << def.name << ": expected ";
    if (min_args == max_args) {
      error << max_args;
    } else {
      error << min_args << " to " << max_args;
    }
    error << " argument" << (max_args == 1 ? "" : "s") << " (";
    for (size_t i = 0; i < def.params.size(); ++i) error << (i ? ", " : "") << def.params[i];
    error << "), got " << call.args.size();
    return error;
  }
  for (const auto& [key, value] : call.attrs) {
    const AttrDef* attr = nullptr;
    for (const AttrDef& a : def.attrs) {
      if (a.name == key) attr = &a;
    }
    if (attr == nullptr) {
      ErrorStatus error;
      error << def.name << ": unknown attribute '" << key << "'";
      if (def.attrs.empty()) {
        error << " (it takes none)";
      } else {
        error << " (expected one of";
        for (const AttrDef& a : def.attrs) error << " " << a.name;
        error << ")";
      }
      return error;
    }
    if (!KindMatches(attr->kind, value)) {
      return ErrorStatus() << def.name << ": attribute '" << key << "' must be " << AttrKindName(attr->kind) << ", got "
                           << ValueKindName(value);
    }
  }
  for (const AttrDef& a : def.attrs) {
    if (!a.default_value && !a.optional && !call.attrs.count(a.name)) {
      return ErrorStatus() << def.name << ": missing attribute '" << a.name << "' (" << AttrKindName(a.kind) << ")";
    }
  }
  return Status::Ok();
}

}  // namespace strata::op
