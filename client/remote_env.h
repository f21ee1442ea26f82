// An environment on a TensorGym service, with the in-process Env's API (envs/env.h):
// code written against tensorgym::Env runs unchanged against a service.
//
// Differences that come from the wire:
//  - step() never throws and never fails for service trouble: when the service cannot
//    be reached even after recovery, the result carries the error, terminated = true
//    and default observations. A step whose deadline passed returns
//    DEADLINE_EXCEEDED (terminated = false): the episode goes on, without that step.
//  - If the service dies or loses the session, the next call restores the episode by
//    replaying it (benchmark, parameters, every step's actions and deterministic
//    rewards) in a new session; the episode continues in the identical state.
//    Cumulative values of measured rewards are recomputed, so they may differ.
//  - set_parameter() before the first reset() is checked when reset() starts the
//    session.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envs/env.h"

namespace tensorgym::client {

class Connection;
struct EnvSpaces;

class RemoteEnv final : public tensorgym::Env {
 public:
  ~RemoteEnv() override;  // ends the session

  const std::string& name() const override;
  const std::vector<Space>& action_spaces() const override;
  const std::vector<Space>& observation_spaces() const override;
  const std::vector<Space>& reward_spaces() const override;

  Expected<std::vector<Event>> reset(const std::string& benchmark, const ResetOptions& options,
                                     const std::vector<std::string>& observations) override;
  StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                  const std::vector<std::string>& rewards) override;
  // A new session at the same state (ForkSession), with this episode's history.
  Expected<std::unique_ptr<tensorgym::Env>> fork() const override;
  // GetState; when the service cannot be reached, what the client knows (env,
  // benchmark, action space).
  EpisodeState state() const override;
  Status set_parameter(const std::string& key, const std::string& value) override;
  void close() override;

  // The deadline of each of this environment's calls, in seconds (0: the
  // connection's call_timeout_s).
  void set_timeout(double seconds);
  // Send cheap steps on one open Session stream instead of unary calls (faster;
  // steps that measure stay unary, so that their deadline holds).
  void set_streaming(bool on);
  // Poll for a cheap step's answer (unary, or on the stream when streaming) for up to
  // this many microseconds before sleeping on it (ConnectionOptions::busy_poll_us; 0:
  // sleep at once).
  void set_busy_poll(double microseconds);
  // The server's handle of the session (32 hex digits); empty before reset.
  const std::string& session_id() const;
  const std::shared_ptr<Connection>& connection() const;

 private:
  friend class Connection;
  struct Impl;
  static std::unique_ptr<RemoteEnv> create(std::shared_ptr<Connection> connection, const std::string& name,
                                     EnvSpaces spaces);
  explicit RemoteEnv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorgym::client
