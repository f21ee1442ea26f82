#include "cli/env_runner.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
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
  app.add_option("--action-space", action_space, "primitives or cursor")->default_val("primitives");
  app.add_option("--observe", observe, "Comma-separated observation spaces to print");
  app.add_option("--reward", reward, "Reward space");
  app.add_option("--step-observe", step_observe, "Comma-separated observations printed after every step");
  app.add_option("--threads", threads, "Threads for compiled runs (default: every core; in-process only)");
  endpoint.add_options(app);
}

Expected<std::vector<std::string>> split_actions(const std::string& text, const std::string& action_space) {
  std::vector<std::string> out;
  if (action_space == "cursor") {
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

namespace {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

Expected<EpisodeOutcome> run_episode(const EpisodeOptions& o, bool print_steps) {
  std::string text = o.actions;
  if (!o.actions_file.empty()) {
    TG_ASSIGN_OR_RETURN(text, read_text_file(o.actions_file));
  }
  TG_ASSIGN_OR_RETURN(std::vector<std::string> actions, split_actions(text, o.action_space));
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, env_factory(o.endpoint, o.threads)(o.env));
  ResetOptions reset;
  reset.action_space = o.action_space;
  EpisodeOutcome out;
  out.observation_names = split_names(o.observe);
  out.reward_name = o.reward;
  std::vector<std::string> rewards;
  if (!o.reward.empty()) rewards.push_back(o.reward);
  TG_ASSIGN_OR_RETURN(std::vector<Event> first, env->reset(o.benchmark, reset, {}));
  (void)first;
  if (!rewards.empty()) {
    // Validate the reward name before any action runs.
    StepResult r0 = env->step({}, {}, rewards);
    if (!r0.error.ok()) return r0.error;
  }
  std::vector<std::string> per_step = split_names(o.step_observe);
  if (print_steps && !per_step.empty()) {
    StepResult r0 = env->step({}, per_step, {});
    if (!r0.error.ok()) return r0.error;
    std::cout << "step 0: (unscheduled)";
    for (size_t k = 0; k < per_step.size(); ++k) std::cout << "  " << per_step[k] << " " << event_to_json(r0.observations[k]);
    std::cout << "\n";
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    StepResult r = env->step({Event(actions[i])}, print_steps ? per_step : std::vector<std::string>{}, rewards);
    if (!r.error.ok()) {
      out.error = r.error;
      break;
    }
    if (!rewards.empty()) out.last_reward = r.rewards[0];
    if (print_steps) {
      std::cout << "step " << i + 1 << ": " << actions[i];
      if (!rewards.empty()) std::cout << "  reward " << o.reward << " " << event_to_json(Event(r.rewards[0]));
      for (size_t k = 0; k < per_step.size(); ++k) std::cout << "  " << per_step[k] << " " << event_to_json(r.observations[k]);
      std::cout << "\n";
    }
    out.truncated = r.truncated;
  }
  StepResult last = env->step({}, out.observation_names, {});
  out.observations = last.observations;
  if (out.error.ok()) out.error = last.error;
  out.state = env->state();
  return out;
}

std::string outcome_json(const EpisodeOutcome& o) {
  std::string s = "{\"observations\": {";
  for (size_t i = 0; i < o.observation_names.size(); ++i) {
    if (i) s += ", ";
    s += json_quote(o.observation_names[i]) + ": " + event_to_json(o.observations[i]);
  }
  s += "}, \"rewards\": {";
  if (!o.reward_name.empty())
    s += json_quote(o.reward_name) + ": " + event_to_json(Event(o.state.reward));
  s += "}, \"terminated\": " + std::string(o.terminated ? "true" : "false");
  s += ", \"truncated\": " + std::string(o.truncated ? "true" : "false");
  s += ", \"error\": " + (o.error.ok() ? std::string("null") : json_quote(o.error.to_string()));
  s += ", \"state\": " + episode_state_to_json(o.state) + "}";
  return s;
}

void print_outcome(const EpisodeOutcome& o, std::ostream& os) {
  for (size_t i = 0; i < o.observation_names.size(); ++i) {
    std::string v = event_to_string(o.observations[i]);
    bool multiline = v.find('\n') != std::string::npos;
    os << o.observation_names[i] << ":" << (multiline ? "\n" : " ") << v << (multiline && v.back() == '\n' ? "" : "\n");
  }
  if (!o.reward_name.empty()) os << "reward " << o.reward_name << " (cumulative): " << event_to_json(Event(o.state.reward)) << "\n";
  if (!o.error.ok()) os << "error: " << o.error.to_string() << "\n";
}

}  // namespace tensorgym::cli
