// Object and Ref<T>: the intrusive reference counting under every heap value.
//
// Tensors, storages, shapes, strings and tuples are Objects with an atomic
// reference count, so a value can be shared between VM instances and threads
// (e.g. a constant of a shared Executable) and copied into a register with one
// atomic increment and no allocation.
//
// Thread-safety: IncRef/DecRef are atomic; the object's own contents are
// immutable after construction unless its class says otherwise.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace strata::vm {

class Object {
 public:
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  void IncRef() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void DecRef() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  int32_t use_count() const { return ref_count_.load(std::memory_order_relaxed); }

 protected:
  Object() = default;
  virtual ~Object() = default;

 private:
  mutable std::atomic<int32_t> ref_count_{0};
};

// An owning pointer to an Object subclass (like std::shared_ptr, one word).
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT
  explicit Ref(T* ptr) : ptr_(ptr) {
    if (ptr_) ptr_->IncRef();
  }
  Ref(const Ref& other) : Ref(other.ptr_) {}
  Ref(Ref&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <typename U>
  Ref(Ref<U> other) : ptr_(other.release()) {}  // NOLINT: upcast
  ~Ref() {
    if (ptr_) ptr_->DecRef();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  // Gives up ownership without decrementing; the caller owns one reference.
  T* release() { return std::exchange(ptr_, nullptr); }
  // Takes over one reference the caller already owns (the inverse of release).
  static Ref Adopt(T* ptr) {
    Ref r;
    r.ptr_ = ptr;
    return r;
  }

 private:
  T* ptr_ = nullptr;
};

template <typename T, typename... Args>
Ref<T> MakeRef(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

}  // namespace strata::vm
