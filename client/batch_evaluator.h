// BatchEvaluator: runs many jobs (proto/jobs.h) on several TensorGym services through
// their Evaluate streams, and survives crashing kernels, dying workers and dying
// services without losing or duplicating a result.
//
//   BatchOptions o;
//   o.endpoints = {"10.0.0.5:50051", "dns:///tensorgym.batch.svc:50051"};  // or o.local_instances = 3
//   auto batch = *BatchEvaluator::create(o);
//   BatchSummary s = batch->run(jobs, [&](const BatchResult& r) { journal->append(result_to_json(r)); });
//
// - Endpoints: each address is one endpoint (a dns:/// name gives one per address, so
//   a Kubernetes headless Service spreads over its pods; the name is resolved again
//   every resolve_period_s, so pods added later are used too). Local mode starts
//   `tensorgym serve` children tied to this process, and restarts one that dies.
// - Health: an endpoint gets jobs only after a tiny preflight job came back OK on its
//   stream. An endpoint whose jobs keep failing with WORKER_LOST is quarantined, then
//   probed again with the preflight job after a backoff. One that answers a job
//   UNAVAILABLE is shutting down: it gets no new jobs (draining) until its stream ends. A broken stream (the service died; keepalive pings notice a silent peer
//   in about 1.5 s) puts its unfinished jobs back in the queue at once, for the
//   other endpoints; the endpoint reconnects with backoff.
// - Spreading: each job goes to the ready endpoint with the most free slots (its
//   in-flight window minus its jobs in flight): round robin weighted by free slots.
// - Exactly once: jobs are keyed (the content hash when the job has no key); the first
//   final result of a key is reported, later ones are counted and dropped. Worker-level
//   failures and lost endpoints send a job again (elsewhere when possible), at most
//   max_attempts times in all; every other error class is final.
//
// grpc++ stays out of this header.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/jobs.h"
#include "support/status.h"

namespace tensorgym::client {

struct BatchOptions {
  // Remote endpoints: "host:port" or "dns:///name:port". When empty,
  // `local_instances` managed services are started on loopback.
  std::vector<std::string> endpoints;
  int local_instances = 0;
  std::string server_binary;             // managed: the tensorgym executable (empty: as Connection)
  std::vector<std::string> server_args;  // managed: extra `serve` flags (e.g. --workers 2)
  double startup_timeout_s = 60;         // managed: how long a service may take to start

  // Remote: TLS (roots from tls_ca_file, else the system's) and a bearer token.
  bool tls = false;
  std::string tls_ca_file;
  std::string auth_token;
  std::string auth_token_file;

  // Jobs in flight per endpoint (sent, not answered). 0: adaptive, at least twice what
  // the endpoint runs at once (so it never waits for a round trip between jobs), more
  // for cheap jobs: about 20 ms of work per slot, at most 256.
  int max_in_flight = 0;
  // Sends of one job, in all, before a worker-level failure or a lost endpoint is its
  // final result.
  int max_attempts = 4;
  // Consecutive worker-level failures that quarantine an endpoint; its first
  // quarantine lasts quarantine_s, each next one twice as long (at most 60 s).
  int quarantine_after = 3;
  double quarantine_s = 2;
  // The preflight job: how long it may take; whether it also measures (compiles and
  // runs a small kernel in a worker), for batches whose jobs measure.
  double preflight_timeout_s = 30;
  bool preflight_measure = false;
  // Reconnecting after a lost stream: backoff doubling from initial to max.
  double reconnect_initial_s = 0.05;
  double reconnect_max_s = 2;
  // HTTP/2 keepalive: a ping every keepalive_s; a peer that has not answered one within
  // keepalive_timeout_s is dead (a frozen or vanished peer is noticed in about their
  // sum). The service accepts pings every 0.5 s.
  double keepalive_s = 0.5;
  double keepalive_timeout_s = 1;
  // When no endpoint has been ready for this long (and none has jobs in flight), run()
  // stops and reports the jobs left as unfinished.
  double give_up_s = 120;
  int max_jobs_per_message = 64;
  // dns: endpoints are resolved again this often; new addresses become endpoints
  // (0: resolved once, at create()).
  double resolve_period_s = 10;
};

struct BatchProgress {
  int64_t total = 0;     // jobs in this run
  int64_t done = 0;      // with a final result
  int64_t failed = 0;    // of which not OK
  int64_t retried = 0;   // sends after the first
  int64_t in_flight = 0;
  int ready_endpoints = 0;
  double elapsed_s = 0;
  double rate = 0;       // results per second since the run started
  double eta_s = -1;     // -1: unknown
};

struct EndpointReport {
  std::string name;   // its address
  // connecting, preflight, ready, quarantined, draining (shutting down), down, refused
  // (bad token, no Evaluate)
  std::string state;
  int64_t done = 0;   // final results it produced
  int64_t failed = 0;
  int64_t streams_lost = 0;  // streams that broke
  int64_t quarantines = 0;
  int64_t restarts = 0;      // local services restarted
  std::string instance_id;
  std::string last_error;
};

struct BatchSummary {
  int64_t jobs = 0;          // distinct keys in the run
  int64_t results = 0;       // final results reported
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t retried = 0;       // sends after the first
  int64_t duplicates = 0;    // results for a key that had one already (dropped)
  std::map<std::string, int64_t> by_error;  // class -> results
  std::vector<std::string> unfinished;      // keys given up for lack of endpoints
  double wall_s = 0;
  double jobs_per_s = 0;
  std::vector<EndpointReport> endpoints;
};

class BatchEvaluator {
 public:
  using ResultSink = std::function<void(const BatchResult&)>;
  using ProgressSink = std::function<void(const BatchProgress&)>;

  // Resolves the endpoints (or checks the binary for local services) and starts
  // connecting in the background. INVALID_ARGUMENT for bad options, NOT_FOUND when
  // the local binary is missing, UNAVAILABLE when a dns:/// name does not resolve.
  static Expected<std::unique_ptr<BatchEvaluator>> create(BatchOptions options);
  ~BatchEvaluator();  // closes the streams; stops local services
  BatchEvaluator(const BatchEvaluator&) = delete;
  BatchEvaluator& operator=(const BatchEvaluator&) = delete;

  // Runs the jobs (keyed first when they have no key; jobs sharing a key are one job)
  // until each has a final result, passing each result once to on_result (one call
  // at a time, on the evaluator's threads) and progress every progress_period_s.
  // Returns early only when no endpoint has been ready for give_up_s, or every endpoint
  // refused for good (a wrong token, a local service that cannot start): the jobs left
  // are listed as unfinished. One run at a time (concurrent calls wait).
  BatchSummary run(const std::vector<BatchJob>& jobs, const ResultSink& on_result,
                   const ProgressSink& on_progress = {}, double progress_period_s = 0.5);
  // run(), collecting the results in job order; an unfinished job's result has error
  // UNAVAILABLE and the endpoints' last error as its message.
  std::vector<BatchResult> evaluate(const std::vector<BatchJob>& jobs, BatchSummary* summary = nullptr);

  std::vector<EndpointReport> endpoints() const;
  // Local mode: the pids of the services (0 for one that is not running).
  std::vector<pid_t> local_pids() const;
  // Waits until `n` endpoints are ready (or timeout_s passes); whether they are.
  bool wait_ready(int n, double timeout_s);

  class Impl;

 private:
  explicit BatchEvaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether a job asks for a value that compiles or runs a kernel (runtime, gflops,
// compile_time, llvm_ir; measured rewards).
bool job_measures(const BatchJob& job);

}  // namespace tensorgym::client
