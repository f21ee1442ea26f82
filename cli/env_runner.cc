#include "cli/env_runner.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/figures.h"
#include "cli/json_text.h"
#include "cli/suggest.h"
#include "client/connection.h"
#include "client/remote_env.h"
#include "codegen/schedule/trace.h"
#include "envs/env_context.h"
#include "proto/episode_state_io.h"

namespace tensorgym::cli {

void EndpointOptions::add_options(CLI::App& app) {
  app.add_option("--endpoint", endpoint,
                 "Use the service at host:port (or dns:///name:port) instead of the in-process environment");
  app.add_option("--auth-token-file", auth_token_file, "With --endpoint: file whose first line is the bearer token");
  app.add_flag("--tls", tls, "With --endpoint: connect over TLS");
  app.add_option("--tls-ca", tls_ca_file, "With --tls: PEM roots to trust (default: the system's)");
}

EnvFactory env_factory(const EndpointOptions& endpoint, int threads) {
  if (!endpoint.remote()) {
    std::shared_ptr<EnvContext> context = cli_env_context(threads);
    return [context](const std::string& env) { return make_env(env, context); };
  }
  client::ConnectionOptions options;
  options.endpoint = endpoint.endpoint;
  options.auth_token_file = endpoint.auth_token_file;
  options.tls = endpoint.tls;
  options.tls_ca_file = endpoint.tls_ca_file;
  options.startup_timeout_s = 10;
  auto connection = std::make_shared<std::shared_ptr<client::Connection>>();
  return [options, connection](const std::string& env) -> Expected<std::unique_ptr<Env>> {
    if (!*connection) {
      TG_ASSIGN_OR_RETURN(*connection, client::Connection::open(options));
    }
    TG_ASSIGN_OR_RETURN(std::unique_ptr<client::RemoteEnv> e, (*connection)->make_env(env));
    return std::unique_ptr<Env>(std::move(e));
  };
}

void EpisodeOptions::add_options(CLI::App& app) {
  app.add_option("--env", env, "Environment")->default_val("schedule-v0");
  app.add_option("--benchmark", benchmark, "Benchmark URI, e.g. benchmark://ops-v0/gmm-3")->required();
  auto* a = app.add_option("--actions", actions, "Actions in text form (';' or new lines between them)");
  auto* f = app.add_option("--actions-file", actions_file, "File holding the actions in text form");
  a->excludes(f);
  app.add_option("--action-space", action_space,
                 "schedule-v0: primitives or cursor; memory-v0: order, inplace or placement")
      ->default_val("primitives");
  app.add_option("--target", target,
                 "The backend the episode compiles for and is measured on: cpu (default), cuda (its rewards: "
                 "est_gpu_time, or runtime where a GPU runs it) or fpga (runtime: simulated cycles)");
  app.add_option("--observe", observe, "Comma-separated observation spaces to print (names below)");
  app.add_option("--reward", reward, "Reward space (names below)");
  app.add_option("--step-observe", step_observe, "Comma-separated observations printed after every step");
  app.footer([] { return space_names_help(); });
  app.add_option("--threads", threads, "Threads for compiled runs (default: every core; in-process only)");
  endpoint.add_options(app);
}

Expected<std::vector<std::string>> split_actions(const std::string& text, const std::string& action_space) {
  std::vector<std::string> out;
  if (action_space != "primitives") {
    std::string cur;
    for (char c : text + "\n") {
      if (c == ';' || c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    return out;
  }
  TG_ASSIGN_OR_RETURN(Trace t, parse_trace(text));
  for (const Primitive& p : t.steps) out.push_back(p.to_string());
  return out;
}

std::shared_ptr<EnvContext> cli_env_context(int threads) {
  auto ctx = std::make_shared<EnvContext>();
  ctx->threads = threads;
  ctx->baseline_cache_path = default_baseline_cache_path();
  return ctx;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

SpaceNames space_names(const Env& env) {
  SpaceNames names;
  for (const Space& s : env.observation_spaces()) names.observations.push_back(s.name());
  for (const Space& s : env.reward_spaces()) names.rewards.push_back(s.name());
  return names;
}

Expected<SpaceNames> space_names(const std::string& env) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> e, make_env(env, cli_env_context(0)));
  return space_names(*e);
}

Status check_names(const std::string& option, const std::string& env, const std::string& what,
                   const std::vector<std::string>& asked, const std::vector<std::string>& known) {
  for (const std::string& name : asked) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string near = nearest_name(name, known);
    return invalid_argument(fmt::format("{}: {} has no {} '{}'{}; its {}s: {}", option, env, what, name,
                                        near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near), what,
                                        fmt::join(known, ", ")));
  }
  return Status();
}

std::string space_names_help() {
  std::string text;
  for (const std::string& env : env_names()) {
    Expected<SpaceNames> names = space_names(env);
    if (!names.ok()) continue;
    text += fmt::format("\n{} observations: {}\n{} rewards: {}\n", env, fmt::join(names->observations, ", "), env,
                        fmt::join(names->rewards, ", "));
  }
  return text;
}

Expected<EpisodeOutcome> run_episode(const EpisodeOptions& o, bool print_steps) {
  std::string text = o.actions;
  if (!o.actions_file.empty()) {
    TG_ASSIGN_OR_RETURN(text, read_text_file(o.actions_file));
  }
  TG_ASSIGN_OR_RETURN(std::vector<std::string> actions, split_actions(text, o.action_space));
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, env_factory(o.endpoint, o.threads)(o.env));
  EpisodeOutcome out;
  out.observation_names = split_names(o.observe);
  out.reward_name = o.reward;
  std::vector<std::string> rewards;
  if (!o.reward.empty()) rewards.push_back(o.reward);
  std::vector<std::string> per_step = split_names(o.step_observe);
  // Every name is checked before the episode starts: a typo costs no measurement.
  const SpaceNames known = space_names(*env);
  TG_RETURN_IF_ERROR(check_names("--observe", o.env, "observation", out.observation_names, known.observations));
  TG_RETURN_IF_ERROR(check_names("--step-observe", o.env, "observation", per_step, known.observations));
  TG_RETURN_IF_ERROR(check_names("--reward", o.env, "reward", rewards, known.rewards));
  ResetOptions reset;
  reset.action_space = o.action_space;
  reset.target = o.target;
  TG_ASSIGN_OR_RETURN(std::vector<Event> first, env->reset(o.benchmark, reset, {}));
  (void)first;
  if (!rewards.empty()) {
    // The reward's baseline, before any action runs.
    StepResult r0 = env->step({}, {}, rewards);
    if (!r0.error.ok()) return r0.error;
  }
  if (print_steps && !per_step.empty()) {
    StepResult r0 = env->step({}, per_step, {});
    if (!r0.error.ok()) return r0.error;
    std::string line = "step 0: (unscheduled)";
    for (size_t k = 0; k < per_step.size(); ++k) line += fmt::format("  {} {}", per_step[k], event_text(r0.observations[k]));
    std::cout << line << "\n";
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    StepResult r = env->step({Event(actions[i])}, print_steps ? per_step : std::vector<std::string>{}, rewards);
    if (!r.error.ok()) {
      out.error = r.error;
      break;
    }
    if (!rewards.empty()) out.last_reward = r.rewards[0];
    if (print_steps) {
      std::string line = fmt::format("step {}: {}", i + 1, actions[i]);
      if (!rewards.empty()) line += fmt::format("  reward {} {}", o.reward, figure(r.rewards[0]));
      for (size_t k = 0; k < per_step.size(); ++k) line += fmt::format("  {} {}", per_step[k], event_text(r.observations[k]));
      std::cout << line << "\n";
    }
    out.terminated = r.terminated;
    out.truncated = r.truncated;
  }
  StepResult last = env->step({}, out.observation_names, {});
  out.observations = last.observations;
  if (out.error.ok()) out.error = last.error;
  out.terminated = out.terminated || (last.error.ok() && last.terminated);
  out.state = env->state();
  return out;
}

std::string outcome_json(const EpisodeOutcome& o) {
  Json observations = Json::object();
  for (size_t i = 0; i < o.observation_names.size() && i < o.observations.size(); ++i)
    observations[o.observation_names[i]] = event_json(o.observations[i]);
  Json rewards = Json::object();
  if (!o.reward_name.empty()) rewards[o.reward_name] = event_json(Event(o.state.reward));
  Json j = Json::object();
  j["observations"] = std::move(observations);
  j["rewards"] = std::move(rewards);
  j["terminated"] = o.terminated;
  j["truncated"] = o.truncated;
  j["error"] = o.error.ok() ? Json(nullptr) : Json(o.error.to_string());
  j["state"] = parsed_json(episode_state_to_json(o.state));
  return json_text(j);
}

void print_outcome(const EpisodeOutcome& o, std::ostream& os) {
  for (size_t i = 0; i < o.observation_names.size() && i < o.observations.size(); ++i) {
    const std::string v = event_text(o.observations[i]);
    const bool multiline = v.find('\n') != std::string::npos;
    os << o.observation_names[i] << ":" << (multiline ? "\n" : " ") << v << (multiline && v.back() == '\n' ? "" : "\n");
  }
  if (!o.reward_name.empty()) os << fmt::format("reward {} (cumulative): {}\n", o.reward_name, figure(o.state.reward));
  if (o.terminated) os << "terminated: the episode is over\n";
  if (!o.error.ok()) os << "error: " << o.error.to_string() << "\n";
}

}  // namespace tensorgym::cli
