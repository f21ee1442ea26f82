// Shared by the environment tests: one in-process EnvContext whose measurements run in
// worker processes of the built `tensorgym`, on one thread, and environments made on it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "envs/env_context.h"

namespace tensorgym::env_test {

inline const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";

inline std::shared_ptr<EnvContext> context() {
  static std::shared_ptr<EnvContext> ctx = [] {
    auto c = std::make_shared<EnvContext>();
    c->worker_binary = kBinary;
    c->threads = 1;
    return c;
  }();
  return ctx;
}

inline std::unique_ptr<Env> env(const std::string& name = "schedule-v0") {
  Expected<std::unique_ptr<Env>> e = make_env(name, context());
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

}  // namespace tensorgym::env_test
