// What environments share in one process (the datasets, the measurement runner, the
// baseline and lowering caches), cancellation of a call's measurements, and the
// factory of the environments this server offers. Server-side: the client library
// never includes this (it stands on envs/env.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "envs/env.h"
#include "support/status.h"

namespace tensorgym {

class Runner;
class DatasetRegistry;
struct Program;
struct LoweredNest;

// What environments share in one process: the datasets, the sandboxed measurement
// workers, and baselines already measured (so reset does not measure them again).
struct EnvContext {
  DatasetRegistry* datasets = nullptr;  // the global registry when null
  std::shared_ptr<DatasetRegistry> datasets_owner;  // keeps `datasets` alive where the context owns it
  int runner_workers = 1;
  std::string worker_binary;            // `tensorgym` for workers; empty: this executable
  int threads = 0;                      // threads for compiled runs (0: every core)
  // The target of episodes that name none (ResetOptions::target; codegen/backend/registry.h).
  std::string target = "cpu";
  bool serialize_runs = true;           // timed runs one at a time across the workers

  // The measurement runner, started on first use.
  Runner& runner();
  // A file that keeps baselines across processes on this machine, so that `tensorgym
  // validate` or a new search does not measure the unscheduled program again (keys
  // name the benchmark's text, the machine fingerprint and the measurement settings).
  // Empty: this process only. Best effort: a file that cannot be read or written
  // leaves the cache in memory.
  std::string baseline_cache_path;

  // Initial and expert-schedule metric values already measured, by key.
  bool find_baseline(const std::string& key, double* value) const;
  void store_baseline(const std::string& key, double value);

  // The lowering of a program's unscheduled schedule, lowered once and shared by the
  // episodes that start from it (schedule-v0 rewrites it for an episode's first
  // action, codegen/lower/reuse_nest.h). Null when the program does not lower. Holds
  // the lowerings of the last kMaxInitialLowerings programs lowered (the oldest goes
  // first).
  std::shared_ptr<const LoweredNest> initial_lowering(const std::shared_ptr<const Program>& program);
  static constexpr size_t kMaxInitialLowerings = 64;

  ~EnvContext();

 private:
  void read_baseline_file_locked() const;

  std::mutex lowerings_mu_;
  // By program address: a held lowering holds its program, so the address is not
  // reused while its entry lives. Null for a program that does not lower.
  std::map<const Program*, std::shared_ptr<const LoweredNest>> initial_lowerings_;
  std::deque<const Program*> lowered_order_;  // the keys above, oldest first

  mutable std::mutex mu_;
  std::shared_ptr<Runner> runner_;
  mutable std::map<std::string, double> baselines_;
  mutable int64_t baseline_file_bytes_ = 0;  // how much of the file has been read
};

// The baseline cache file the command-line tools use: $TENSORGYM_CACHE_DIR/baselines,
// else $XDG_CACHE_HOME/tensorgym/baselines, else ~/.cache/tensorgym/baselines.
// TENSORGYM_CACHE_DIR set to the empty string turns the cache off (returns "").
std::string default_baseline_cache_path();

// Cancelling the measurements of one call (the service's deadlines). While a
// MeasureCancellation::Scope is alive on a thread, every measurement that thread
// starts carries the token's job id. Once cancel() has been called (from any thread),
// the caller stops a measurement in flight with Runner::cancel(job_id()), and the
// environment reports such measurements as CANCELLED without caching them, so a later
// call measures again. Job ids are the caller's: nonzero, top bit clear.
class MeasureCancellation {
 public:
  explicit MeasureCancellation(uint64_t job_id) : job_id_(job_id) {}
  MeasureCancellation(const MeasureCancellation&) = delete;
  MeasureCancellation& operator=(const MeasureCancellation&) = delete;

  uint64_t job_id() const { return job_id_; }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  void cancel() { cancelled_.store(true, std::memory_order_release); }

  // The token installed on this thread, or null.
  static const MeasureCancellation* current() { return slot(); }

  // Installs a token on this thread for the scope's lifetime (scopes nest).
  class Scope {
   public:
    explicit Scope(const MeasureCancellation* token) : previous_(slot()) { slot() = token; }
    ~Scope() { slot() = previous_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const MeasureCancellation* previous_;
  };

 private:
  static const MeasureCancellation*& slot() {
    static thread_local const MeasureCancellation* token = nullptr;
    return token;
  }
  uint64_t job_id_;
  std::atomic<bool> cancelled_{false};
};

// "schedule-v0" (and later "memory-v0"); NOT_FOUND for other names.
Expected<std::unique_ptr<Env>> make_env(const std::string& name, std::shared_ptr<EnvContext> context);
std::vector<std::string> env_names();

}  // namespace tensorgym
