// WorkWeft: what every operation of ProcessGroupWeft returns (see process_group.hpp).
#include <ATen/core/ivalue.h>

#include "process_group.hpp"

namespace weft_torch {

WorkWeft::WorkWeft(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10d::OpType type,
                   std::vector<at::Tensor> outputs)
    : c10d::Work(group->getRank(), type),
      group_(group),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

c10::intrusive_ptr<ProcessGroupWeft> WorkWeft::group() const {
  return c10::static_intrusive_pointer_cast<ProcessGroupWeft>(group_.lock());
}

c10::intrusive_ptr<c10::ivalue::Future> WorkWeft::getFuture() {
  if (!c10d::Work::isCompleted()) {
    ProcessGroupWeft::flushEveryGroup();
    if (auto group = this->group()) group->hurry();
  }
  return future_;
}

bool WorkWeft::wait(std::chrono::milliseconds timeout) {
  if (!c10d::Work::isCompleted()) {
    // Before this process blocks, every send and receive waiting to be grouped goes out, in
    // every group, and every held operation but this one: the peer may wait for one of them
    // before it can serve this work.
    const bool blocking = timeout == kNoTimeout;
    ProcessGroupWeft::flushEveryGroup(blocking ? this : nullptr);
    if (auto group = this->group()) {
      if (blocking && group->runHeldInline(*this)) return c10d::Work::wait(timeout);
      if (blocking && sequence != 0)
        group->drain(*this, true);
      else
        group->hurry();
    }
  }
  return c10d::Work::wait(timeout);
}

bool WorkWeft::isCompleted() {
  if (!c10d::Work::isCompleted()) {
    ProcessGroupWeft::flushEveryGroup();
    if (auto group = this->group())
      if (sequence != 0) group->drain(*this, false);
  }
  return c10d::Work::isCompleted();
}

void WorkWeft::complete() {
  std::exception_ptr failure = error;
  if (!failure && after) {
    try {
      after();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  after = nullptr;
  keepAlive.clear();
  if (failure)
    future_->setError(failure);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(failure);
}

}  // namespace weft_torch
