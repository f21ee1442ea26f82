// tensorgym validate FILE [--tolerance T] [--timeout S] [--endpoint ...]
// Replays every EpisodeState of a JSON Lines file and checks it (envs/replay.h): the
// compiled program is correct, deterministic rewards match exactly, a measured
// reward is within the tolerance. A measured state is replayed under the compile and
// run deadlines its measurement recorded. Shows progress on stderr (each state, each
// action); prints one line per state ("ok" or what failed); exit status 1 if any
// state fails, 124 when --timeout passes first.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "cli/figures.h"
#include "proto/episode_state_io.h"
#include "proto/provenance_json.h"

namespace tensorgym::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimeoutExit = 124;  // as timeout(1)

// Where validation stands, for the progress lines and the --timeout message.
struct Where {
  std::mutex mu;
  size_t state = 0, states = 0;
  std::string benchmark;
  size_t action = 0, actions = 0;
  size_t checked = 0;
  std::string text() {
    std::lock_guard<std::mutex> lock(mu);
    return fmt::format("state {} of {} ({}, action {} of {}); {} states checked", state, states, benchmark, action,
                       actions, checked);
  }
};

// The environment replay_episode drives, reporting each action it applies.
class ProgressEnv final : public Env {
 public:
  ProgressEnv(std::unique_ptr<Env> env, std::function<void()> on_action)
      : env_(std::move(env)), on_action_(std::move(on_action)) {}
  const std::string& name() const override { return env_->name(); }
  const std::vector<Space>& action_spaces() const override { return env_->action_spaces(); }
  const std::vector<Space>& observation_spaces() const override { return env_->observation_spaces(); }
  const std::vector<Space>& reward_spaces() const override { return env_->reward_spaces(); }
  Expected<std::vector<Event>> reset(const std::string& benchmark, const ResetOptions& options,
                                     const std::vector<std::string>& observations) override {
    return env_->reset(benchmark, options, observations);
  }
  StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                  const std::vector<std::string>& rewards) override {
    if (!actions.empty()) on_action_();
    return env_->step(actions, observations, rewards);
  }
  Expected<std::unique_ptr<Env>> fork() const override { return env_->fork(); }
  EpisodeState state() const override { return env_->state(); }
  Status set_parameter(const std::string& key, const std::string& value) override {
    return env_->set_parameter(key, value);
  }
  void close() override { env_->close(); }

 private:
  std::unique_ptr<Env> env_;
  std::function<void()> on_action_;
};

// The deadline (whole seconds, both compile and run) the state's measurement ran
// under, or 0 when it recorded none.
int64_t recorded_deadline_s(const EpisodeState& s) {
  if (s.provenance_json.empty()) return 0;
  const proto::Provenance p = provenance_from_json(s.provenance_json);
  const double longest = std::max(p.settings().compile_timeout_s(), p.settings().run_timeout_s());
  return longest > 0 ? std::clamp<int64_t>(int64_t(std::ceil(longest)), 1, 3600) : 0;
}

// Ends the process when `seconds` pass before disarm(): the measurement in flight
// cannot be interrupted from here, and its workers end with their parent.
class Watchdog {
 public:
  Watchdog(double seconds, Where* where) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds, where] {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
      std::fflush(stdout);
      std::cerr << fmt::format("\ntensorgym: error: validate: --timeout {} passed during {} [DEADLINE_EXCEEDED]\n",
                               seconds_text(seconds), where->text())
                << std::flush;
      std::_Exit(kTimeoutExit);
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

struct ValidateOptions {
  std::string file;
  EndpointOptions endpoint;
  double tolerance = 0.25;
  double timeout = 0;
  bool quiet = false;
};

int run_validate(const ValidateOptions& o) {
  Expected<std::vector<EpisodeState>> states = read_episode_states(o.file);
  if (!states.ok()) return report_error(states.status());
  const EnvFactory make = env_factory(o.endpoint, 0);
  const bool tty = isatty(2);
  Where where;
  where.states = states->size();
  Watchdog watchdog(o.timeout, &where);
  const auto started = Clock::now();
  int failed = 0;
  for (size_t i = 0; i < states->size(); ++i) {
    const EpisodeState& s = (*states)[i];
    {
      std::lock_guard<std::mutex> lock(where.mu);
      where.state = i + 1;
      where.benchmark = s.benchmark;
      where.action = 0;
      where.actions = s.actions.size();
    }
    const int64_t deadline_s = recorded_deadline_s(s);
    const auto state_start = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - state_start).count(); };
    if (!o.quiet) {
      std::cerr << fmt::format("state {}/{} {}: replaying {} actions{}\n", i + 1, states->size(), s.benchmark,
                               s.actions.size(),
                               deadline_s > 0 ? fmt::format(", compile and run deadlines {} s as recorded", deadline_s)
                                              : "");
    }
    auto on_action = [&] {
      size_t action;
      {
        std::lock_guard<std::mutex> lock(where.mu);
        action = ++where.action;
      }
      if (o.quiet) return;
      // Redrawn in place on a terminal; otherwise a line per tenth of the actions.
      const size_t n = std::max<size_t>(1, s.actions.size());
      if (tty) {
        std::cerr << fmt::format("\r  action {}/{}  {} ", action, n, seconds_text(elapsed())) << std::flush;
      } else if (action * 10 / n != (action - 1) * 10 / n) {
        std::cerr << fmt::format("  action {}/{}  {}\n", action, n, seconds_text(elapsed()));
      }
    };
    const EnvMaker maker = [&](const std::string& env) -> Expected<std::unique_ptr<Env>> {
      TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> e, make(env));
      if (deadline_s > 0) TG_RETURN_IF_ERROR(e->set_parameter("runner.timeout_s", std::to_string(deadline_s)));
      return std::unique_ptr<Env>(std::make_unique<ProgressEnv>(std::move(e), on_action));
    };
    std::string what;
    Expected<ValidationOutcome> v = validate_episode(s, o.tolerance, maker);
    if (!v.ok()) {
      what = v.status().message();
    } else if (!v->ok) {
      what = v->error;
    }
    if (!o.quiet && tty) std::cerr << "\n";
    std::cout << fmt::format("state {} {}: {} ({})\n", i + 1, s.benchmark, what.empty() ? "ok" : what,
                             seconds_text(elapsed()))
              << std::flush;
    failed += !what.empty();
    std::lock_guard<std::mutex> lock(where.mu);
    ++where.checked;
  }
  if (!o.quiet && states->size() > 1)
    std::cerr << fmt::format("validated {} states in {}: {} failed\n", states->size(),
                             seconds_text(std::chrono::duration<double>(Clock::now() - started).count()), failed);
  return failed ? 1 : 0;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Replay a state file and check every state");
  cmd->add_option("FILE", o->file, "EpisodeState JSON Lines file")->required();
  o->endpoint.add_options(*cmd);
  cmd->add_option("--tolerance", o->tolerance,
                  "Largest |replayed - recorded| allowed for a measured (runtime, gflops) reward")
      ->default_val(0.25);
  cmd->add_option("--timeout", o->timeout,
                  "Stop after this many seconds for the whole file (exit status 124; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", o->quiet, "No progress output");
  cmd->callback([o] {
    const int rc = run_validate(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tensorgym::cli
