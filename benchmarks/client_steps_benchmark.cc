// The C++ client's steps per second on a running service, driven round by round from
// stdin, so that another client (benchmarks/python_throughput.py) can interleave its
// own rounds with these on the same service and compare.
//
//   build/bin/client_steps_benchmark --endpoint 127.0.0.1:PORT [--env schedule-v0]
//                                    [--benchmark URI] [--streaming] [--busy-poll US]
//
// One client::RemoteEnv over a remote Connection, default options unless flags say
// otherwise: the C++ client as a user would use it. Each line on stdin asks for a round:
//
//   STEPS ACTION OBSERVATIONS REWARDS
//
// ACTION is an action index; OBSERVATIONS and REWARDS are comma-separated names, "-"
// for none. A round resets a fresh episode (not timed), then steps STEPS times with
// that action, asking for those observations and rewards each step, and prints one
// line: "SECONDS ERRORS" (the wall time of the steps, and how many steps failed). The
// program prints "ready" once connected and exits at the end of stdin.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/remote_env.h"

namespace tensorgym {
namespace {

std::vector<std::string> names(const std::string& list) {
  std::vector<std::string> out;
  if (list == "-") return out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

int run(int argc, char** argv) {
  client::ConnectionOptions options;
  std::string env_name = "schedule-v0";
  std::string benchmark = "benchmark://ops-v0/gmm-1";
  bool streaming = false;
  double busy_poll_us = -1;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--endpoint") == 0 && has_value) {
      options.endpoint = argv[++i];
    } else if (std::strcmp(argv[i], "--env") == 0 && has_value) {
      env_name = argv[++i];
    } else if (std::strcmp(argv[i], "--benchmark") == 0 && has_value) {
      benchmark = argv[++i];
    } else if (std::strcmp(argv[i], "--streaming") == 0) {
      streaming = true;
    } else if (std::strcmp(argv[i], "--busy-poll") == 0 && has_value) {
      busy_poll_us = std::atof(argv[++i]);
    } else {
      fmt::print(stderr, "unknown argument {}\n", argv[i]);
      return 2;
    }
  }
  if (options.endpoint.empty()) {
    fmt::print(stderr, "--endpoint HOST:PORT is required (a running tensorgym serve)\n");
    return 2;
  }
  auto conn = client::Connection::open(options);
  if (!conn.ok()) {
    fmt::print(stderr, "cannot connect to {}: {}\n", options.endpoint, conn.status().message());
    return 1;
  }
  auto env = (*conn)->make_env(env_name);
  if (!env.ok()) {
    fmt::print(stderr, "cannot make {}: {}\n", env_name, env.status().message());
    return 1;
  }
  if (streaming) (*env)->set_streaming(true);
  if (busy_poll_us >= 0) (*env)->set_busy_poll(busy_poll_us);
  std::cout << "ready" << std::endl;

  std::string line;
  while (std::getline(std::cin, line)) {
    std::stringstream in(line);
    int64_t steps = 0, action = 0;
    std::string observation_list, reward_list;
    if (!(in >> steps >> action >> observation_list >> reward_list) || steps < 1) {
      fmt::print(stderr, "bad round: '{}' (want: STEPS ACTION OBSERVATIONS REWARDS)\n", line);
      return 2;
    }
    const std::vector<std::string> observations = names(observation_list);
    const std::vector<std::string> rewards = names(reward_list);
    auto start = (*env)->reset(benchmark, {}, observations);
    if (!start.ok()) {
      fmt::print(stderr, "reset failed: {}\n", start.status().message());
      return 1;
    }
    const std::vector<Event> actions = {Event(action)};
    int64_t errors = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i) {
      StepResult r = (*env)->step(actions, observations, rewards);
      if (!r.error.ok()) ++errors;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format("{:.9f} {}", seconds, errors) << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) { return tensorgym::run(argc, argv); }
