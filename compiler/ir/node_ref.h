// NodeRef: the shared, immutable handle every IR node is held by.
//
// IR nodes are immutable once built, so handles share them freely; an "edit" is a
// new node. Identity (same_as) is pointer identity, which is what variables and
// buffers use to tell themselves apart; structural equality lives in
// structural_equal.h. Kind tags replace RTTI: as<T>() is one compare.
#pragma once

#include <cassert>
#include <cstddef>
#include <memory>

namespace strata::ir {

template <typename Base>
class NodeRef {
 public:
  NodeRef() = default;
  // Lets a null handle be written as nullptr (e.g. "no struct info yet").
  NodeRef(std::nullptr_t) {}                                             // NOLINT
  NodeRef(std::shared_ptr<const Base> node) : node_(std::move(node)) {}  // NOLINT
  template <typename Derived>
  NodeRef(std::shared_ptr<const Derived> node) : node_(std::move(node)) {}  // NOLINT
  template <typename Derived>
  NodeRef(std::shared_ptr<Derived> node) : node_(std::move(node)) {}  // NOLINT

  const Base* get() const { return node_.get(); }
  const Base* operator->() const {
    assert(node_ && "dereferencing a null IR handle");
    return node_.get();
  }
  bool defined() const { return node_ != nullptr; }
  explicit operator bool() const { return defined(); }
  bool same_as(const NodeRef& other) const { return node_ == other.node_; }

  // The node as a T if its kind is one of T's kinds, else nullptr.
  template <typename T>
  const T* as() const {
    return node_ && T::IsKind(node_->kind) ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const Base>& node_ptr() const { return node_; }

 private:
  std::shared_ptr<const Base> node_;
};

// Declares the kind test of a node struct that has exactly one kind.
#define STRATA_NODE_KIND(KindEnum, Value)            \
  static constexpr KindEnum kKind = KindEnum::Value; \
  static bool IsKind(KindEnum k) { return k == KindEnum::Value; }

}  // namespace strata::ir
