// What run, replay and validate share: options naming an episode, running it in the
// in-process environment or, with --endpoint, on a running service (client/), and
// printing its outcome.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "envs/env_context.h"
#include "envs/replay.h"
#include "spaces/event.h"

namespace CLI {
class App;
}

namespace tensorgym::cli {

// Where environments come from: the in-process library, or a service at --endpoint
// (host:port or dns:///name:port; TLS and a token as options).
struct EndpointOptions {
  std::string endpoint;
  std::string auth_token_file;
  bool tls = false;
  std::string tls_ca_file;
  void add_options(CLI::App& app);
  bool remote() const { return !endpoint.empty(); }
};

// Makes an environment by name: in-process (threads: for compiled runs) or on the
// service. One factory shares one connection among the environments it makes.
using EnvFactory = EnvMaker;
EnvFactory env_factory(const EndpointOptions& endpoint, int threads);

struct EpisodeOptions {
  std::string env = "schedule-v0";
  std::string benchmark;
  std::string actions;       // text form: primitives, or cursor action names
  std::string actions_file;
  std::string action_space = "primitives";
  std::string target;        // the episode's backend (empty: the environment's own)
  std::string observe;       // comma-separated observation names
  std::string step_observe;  // observations printed after every step
  std::string reward;        // a reward space
  int threads = 0;
  EndpointOptions endpoint;
  void add_options(CLI::App& app);
};

struct EpisodeOutcome {
  std::vector<std::string> observation_names;
  std::vector<Event> observations;
  std::string reward_name;
  double last_reward = 0;
  bool terminated = false;
  bool truncated = false;
  Status error;
  EpisodeState state;
};

// The action texts of a text form: primitives split by ';' and new lines (comments
// dropped); the names of any other action space (cursor, memory-v0's) by ';', ',' and
// white space.
Expected<std::vector<std::string>> split_actions(const std::string& text, const std::string& action_space);

// Shared context of the commands (worker binary = this executable), keeping measured
// baselines in default_baseline_cache_path().
std::shared_ptr<EnvContext> cli_env_context(int threads);

// Resets, applies the actions one per step, then observes. With print_steps, prints
// each step's action, its reward and the step observations.
Expected<EpisodeOutcome> run_episode(const EpisodeOptions& options, bool print_steps);

// The observation and reward names of an in-process environment (env_names() lists
// the environments); NOT_FOUND for an unknown environment.
struct SpaceNames {
  std::vector<std::string> observations;
  std::vector<std::string> rewards;
};
Expected<SpaceNames> space_names(const std::string& env);
SpaceNames space_names(const Env& env);

// INVALID_ARGUMENT naming the first of `asked` not in `known`, the nearest known name
// and all of them: "--observe: schedule-v0 has no observation 'gflop' (did you mean
// 'gflops'?); its observations: ...". `what` is "observation" or "reward".
Status check_names(const std::string& option, const std::string& env, const std::string& what,
                   const std::vector<std::string>& asked, const std::vector<std::string>& known);

// The help text that lists every environment's observation and reward names.
std::string space_names_help();

// Comma-separated names, empty items dropped.
std::vector<std::string> split_names(const std::string& text);

// The outcome as one JSON line: observations, rewards, terminated, truncated, error,
// state; numbers at full precision.
std::string outcome_json(const EpisodeOutcome& outcome);
// For a person: figures rounded (cli/figures.h).
void print_outcome(const EpisodeOutcome& outcome, std::ostream& os);

}  // namespace tensorgym::cli
