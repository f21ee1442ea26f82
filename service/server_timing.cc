#include "service/server_timing.h"

#include <grpcpp/server_context.h>

#include <cstdio>

namespace tensorgym::service {

ServerTiming::ServerTiming(const grpc::ServerContextBase& context) {
  const auto& md = context.client_metadata();
  if (md.find(kServerTimingRequestKey) != md.end()) start_ = std::chrono::steady_clock::now();
}

void ServerTiming::report(grpc::ServerContextBase& context) const {
  if (!start_) return;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - *start_).count();
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%.1f", us);
  context.AddTrailingMetadata(kServerTimeKey, std::string(text, size_t(n)));
}

}  // namespace tensorgym::service
