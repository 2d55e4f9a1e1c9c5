// One task of a host stream: a callable kept in place, in the stream's ring, so that queueing
// weft's own launches allocates nothing (a std::function holds 16 bytes of captures; a native
// collective's launch captures about 150). Larger callables go to the heap.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace weft {

class StreamTask {
 public:
  static constexpr size_t kInlineBytes = 176;
  template <class F>
  static constexpr bool kFitsInline = sizeof(F) <= kInlineBytes &&
                                      alignof(F) <= alignof(std::max_align_t);

  StreamTask() = default;
  ~StreamTask() { reset(); }
  StreamTask(const StreamTask&) = delete;
  StreamTask& operator=(const StreamTask&) = delete;

  // Stores `f`; the task must be empty.
  template <class F>
  void emplace(F&& f) {
    using T = std::decay_t<F>;
    if constexpr (kFitsInline<T>) {
      ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
      ops_ = &kOps<T>;
    } else {
      emplace(Boxed<T>{std::make_unique<T>(std::forward<F>(f))});
    }
  }
  void operator()() { ops_->invoke(storage_); }
  // Destroys the callable (and what it captured); the task is empty again.
  void reset() {
    if (ops_ == nullptr) return;
    ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*destroy)(void*);
  };
  template <class T>
  static constexpr Ops kOps = {[](void* p) { (*static_cast<T*>(p))(); },
                               [](void* p) { static_cast<T*>(p)->~T(); }};
  template <class T>
  struct Boxed {
    std::unique_ptr<T> callable;
    void operator()() { (*callable)(); }
  };

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace weft
