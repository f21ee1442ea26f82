#include "support/deferred_release.h"

namespace tensorgym {
namespace {

thread_local DeferredReleaseScope* t_innermost = nullptr;

}  // namespace

DeferredReleaseScope::DeferredReleaseScope() : outer_(t_innermost) { t_innermost = this; }

DeferredReleaseScope::~DeferredReleaseScope() {
  t_innermost = outer_;
  while (!parked_.empty()) parked_.pop_back();
}

void release_later(std::shared_ptr<const void> object) {
  // Only the last owner's drop costs anything; parking a shared object is pointless.
  if (t_innermost && object && object.use_count() == 1) t_innermost->parked_.push_back(std::move(object));
}

}  // namespace tensorgym
