// Destruction that can wait until an answer is on its way. A server handler opens a
// DeferredReleaseScope around the work of a call; what that work drops through
// release_later() on the same thread is kept until the scope closes, or until the
// handler takes it to drop once its answer is written (service/step_messages.h),
// instead of being torn down on the answer's critical path (an environment step drops
// the previous schedule, its lowered nest and derived state: thousands of IR nodes).
// Outside a scope release_later() drops the object at once.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace tensorgym {

class DeferredReleaseScope {
 public:
  DeferredReleaseScope();
  // Reopens the enclosing scope, if any, then drops what was parked, newest first.
  ~DeferredReleaseScope();
  DeferredReleaseScope(const DeferredReleaseScope&) = delete;
  DeferredReleaseScope& operator=(const DeferredReleaseScope&) = delete;

  size_t parked() const { return parked_.size(); }
  // Hands what was parked so far to the caller, which drops it later still (a server
  // handler: when gRPC is done with the call).
  std::vector<std::shared_ptr<const void>> take() { return std::exchange(parked_, {}); }

 private:
  friend void release_later(std::shared_ptr<const void> object);

  DeferredReleaseScope* outer_;
  std::vector<std::shared_ptr<const void>> parked_;
};

// Gives up this reference to `object`: now, or when the innermost open scope of this
// thread closes. Other owners are unaffected either way.
void release_later(std::shared_ptr<const void> object);

}  // namespace tensorgym
