// ClonePtr<T>: a unique_ptr that copies by T::clone(), so a class holding
// polymorphic or heavy parts (segments, the cold tier, the store) gets its
// copy constructor from the compiler: clone() is written once, by listing
// members, and a member added later can never be left out of a copy.
#pragma once

#include <memory>
#include <utility>

namespace kvbench {

template <typename T>
class ClonePtr {
 public:
  ClonePtr() = default;
  template <typename U>
  ClonePtr(std::unique_ptr<U> p) : p_(std::move(p)) {}  // NOLINT: implicit, as unique_ptr's
  ClonePtr(std::nullptr_t) {}                           // NOLINT
  ClonePtr(const ClonePtr& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  ClonePtr(ClonePtr&&) noexcept = default;
  ClonePtr& operator=(const ClonePtr& o) {
    if (this != &o) p_ = o.p_ ? o.p_->clone() : nullptr;
    return *this;
  }
  ClonePtr& operator=(ClonePtr&&) noexcept = default;

  T* get() const { return p_.get(); }
  T* operator->() const { return p_.get(); }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace kvbench
