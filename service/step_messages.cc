#include "service/step_messages.h"

namespace tensorgym::service {

void StepMessages::keep_until_done(std::vector<std::shared_ptr<const void>> objects) {
  if (parked_.empty()) {
    parked_ = std::move(objects);
    return;
  }
  for (std::shared_ptr<const void>& o : objects) parked_.push_back(std::move(o));
}

void StepMessages::Release() {
  // Newest first, as a DeferredReleaseScope drops them.
  while (!parked_.empty()) parked_.pop_back();
  delete this;
}

}  // namespace tensorgym::service
