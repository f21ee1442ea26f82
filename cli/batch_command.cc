// tensorgym batch --jobs FILE --out FILE [--endpoints a:1,b:2 | --local N] [--resume]
//                 [--concurrency N] [--timeout S] [--workers N] [--max-in-flight N] [--quiet]
// tensorgym batch --make-jobs --suite ops-v0 --schedules random:N --seed S --observe NAMES
//                 [--target cuda]
// Runs a job file (proto/jobs.h) on several services through the BatchEvaluator,
// appending one result per job to a JSON Lines journal (client/journal.h); --resume
// skips the jobs the journal already holds. --make-jobs prints a reproducible job file:
// N random legal schedules for every benchmark of a dataset (with --target cuda,
// random GPU schedules, codegen/lower/random_gpu_schedule.h).
#include <unistd.h>

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "client/batch_evaluator.h"
#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "proto/jobs.h"
#include "client/journal.h"
#include "client/managed_server.h"
#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "codegen/schedule/random_schedule.h"
#include "datasets/registry.h"

namespace tensorgym::cli {
namespace {

constexpr int kMaxDraws = 16;  // random schedules drawn per job until one lowers

struct BatchCliOptions {
  // Running.
  std::string jobs;
  std::string out;
  std::vector<std::string> endpoints;
  int local = 0;
  bool resume = false;
  int concurrency = 0;
  int max_in_flight = 0;
  double timeout = 0;
  int workers = 1;
  std::string auth_token_file;
  bool tls = false;
  std::string tls_ca_file;
  double give_up = 120;
  bool quiet = false;
  // Making a job file.
  bool make_jobs = false;
  std::string suite;
  std::string schedules = "random:1";
  std::string target;  // --make-jobs: the jobs' backend (empty: cpu)
  uint64_t seed = 0;
  std::vector<std::string> observe;
  std::vector<std::string> rewards;
  int steps = 4;
  int64_t limit = -1;
};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

std::string duration_text(double s) {
  if (s < 0) return "?";
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02}m", int(s) / 3600, int(s) / 60 % 60);
}

// Redrawn in place on a terminal; on a pipe, a line every tenth of the jobs or every
// ten seconds, whichever comes first, so logs stay short but show life.
class BatchProgressDisplay {
 public:
  explicit BatchProgressDisplay(bool quiet) : quiet_(quiet), tty_(isatty(2)) {}

  void update(const client::BatchProgress& p) {
    if (quiet_) return;
    if (tty_) {
      const int width = 30;
      const int filled = p.total > 0 ? int(double(width) * double(p.done) / double(p.total)) : width;
      std::string bar(size_t(std::min(filled, width)), '#');
      bar.resize(size_t(width), '.');
      fmt::print(stderr, "\r[{}] {}/{} done  {} failed  {} retried  {:.1f} jobs/s  ETA {}  endpoints {} ready ", bar,
                 p.done, p.total, p.failed, p.retried, p.rate, duration_text(p.eta_s), p.ready_endpoints);
      std::fflush(stderr);
      drawn_ = true;
      return;
    }
    const int64_t decile = p.total > 0 ? p.done * 10 / p.total : 0;
    if (decile == last_decile_ && p.elapsed_s - last_line_s_ < 10) return;
    last_decile_ = decile;
    last_line_s_ = p.elapsed_s;
    fmt::print(stderr, "batch: {}/{} done, {} failed, {} retried, {:.1f} jobs/s, ETA {}, {} endpoints ready\n", p.done,
               p.total, p.failed, p.retried, p.rate, duration_text(p.eta_s), p.ready_endpoints);
  }
  void finish() {
    if (drawn_) std::fputs("\n", stderr);
    drawn_ = false;
  }

 private:
  bool quiet_;
  bool tty_;
  bool drawn_ = false;
  int64_t last_decile_ = -1;
  double last_line_s_ = 0;
};

void print_summary(const client::BatchSummary& s, int64_t skipped, int64_t malformed,
                   const std::map<std::string, int64_t>& by_error) {
  std::cout << "jobs: " << s.jobs + malformed << " in this run, " << skipped << " already in the journal\n";
  std::cout << "results: " << s.ok << " ok, " << s.failed + malformed << " failed, " << s.retried << " retried";
  if (s.duplicates > 0) std::cout << ", " << s.duplicates << " duplicate answers dropped";
  std::cout << "\n";
  for (const auto& [error, n] : by_error) std::cout << "  " << error << ": " << n << "\n";
  std::cout << fmt::format("throughput: {:.1f} jobs/s ({:.2f} s)\n", s.jobs_per_s, s.wall_s);
  for (const client::EndpointReport& e : s.endpoints) {
    std::cout << "endpoint " << e.name << ": " << e.state << ", " << e.done << " ok, " << e.failed << " failed";
    if (e.streams_lost > 0) std::cout << ", " << e.streams_lost << " streams lost";
    if (e.quarantines > 0) std::cout << ", quarantined " << e.quarantines << " times";
    if (e.restarts > 0) std::cout << ", restarted " << e.restarts << " times";
    if (!e.last_error.empty() && (e.streams_lost > 0 || e.quarantines > 0 || e.state != "ready"))
      std::cout << " (last error: " << e.last_error << ")";
    std::cout << "\n";
  }
  if (!s.unfinished.empty())
    std::cout << "unfinished: " << s.unfinished.size() << " jobs without a result; run again with --resume\n";
}

int run_batch(const BatchCliOptions& o) {
  if (o.jobs.empty() || o.out.empty())
    return report_error(invalid_argument("--jobs FILE and --out FILE are required (or --make-jobs)"));
  if (o.endpoints.empty() && o.local < 1)
    return report_error(invalid_argument("give --endpoints host:port,... or --local N (services started here)"));

  Expected<std::vector<client::JobLine>> lines = client::read_job_file(o.jobs);
  if (!lines.ok()) return report_error(lines.status());
  Expected<std::unique_ptr<client::Journal>> journal = client::Journal::open(o.out, o.resume);
  if (!journal.ok()) return report_error(journal.status());
  client::Journal& j = **journal;
  if (!o.quiet && !j.torn_line().empty())
    std::cerr << "tensorgym: " << o.out << ": cut off a torn last line (a write cut short); its job runs again\n";

  // Jobs the journal has are done; lines that are not jobs get their error now.
  std::vector<client::BatchJob> jobs;
  std::set<std::string> keys;
  int64_t skipped = 0, malformed = 0;
  for (client::JobLine& line : *lines) {
    if (j.keys().count(line.job.key) || !keys.insert(line.job.key).second) {
      skipped += j.keys().count(line.job.key) ? 1 : 0;
      continue;
    }
    if (!line.error.ok()) {
      client::BatchResult r;
      r.key = line.job.key;
      r.error = "MALFORMED";
      r.message = line.error.message();
      j.append(client::result_to_json(r));
      ++malformed;
      continue;
    }
    if (o.timeout > 0 && line.job.timeout_s == 0) line.job.timeout_s = o.timeout;
    jobs.push_back(std::move(line.job));
  }

  client::BatchSummary summary;
  if (!jobs.empty()) {
    client::BatchOptions b;
    b.endpoints = o.endpoints;
    b.local_instances = o.endpoints.empty() ? o.local : 0;
    b.server_args = {"--workers", std::to_string(std::max(1, o.workers))};
    if (o.concurrency > 0) {
      b.server_args.push_back("--concurrency");
      b.server_args.push_back(std::to_string(o.concurrency));
    }
    b.max_in_flight = o.max_in_flight;
    b.auth_token_file = o.auth_token_file;
    b.tls = o.tls || !o.tls_ca_file.empty();
    b.tls_ca_file = o.tls_ca_file;
    b.give_up_s = o.give_up;
    b.preflight_measure = std::any_of(jobs.begin(), jobs.end(), client::job_measures);
    Expected<std::unique_ptr<client::BatchEvaluator>> evaluator = client::BatchEvaluator::create(b);
    if (!evaluator.ok()) return report_error(evaluator.status());
    if (!o.quiet)
      std::cerr << fmt::format("batch: {} jobs{} on {}\n", jobs.size(),
                               skipped ? fmt::format(" ({} done before)", skipped) : "",
                               o.endpoints.empty() ? fmt::format("{} local services", o.local) : join(o.endpoints));
    BatchProgressDisplay display(o.quiet);
    summary = (*evaluator)->run(
        jobs, [&](const client::BatchResult& r) { j.append(client::result_to_json(r)); },
        [&](const client::BatchProgress& p) { display.update(p); });
    display.finish();
  }
  Status st = j.close();
  if (!st.ok()) return report_error(st);
  std::map<std::string, int64_t> by_error = summary.by_error;
  if (malformed > 0) by_error["MALFORMED"] += malformed;
  print_summary(summary, skipped, malformed, by_error);
  if (!summary.unfinished.empty()) {
    const bool refused = std::all_of(summary.endpoints.begin(), summary.endpoints.end(),
                                     [](const client::EndpointReport& e) { return e.state == "refused"; });
    std::string why = refused ? "every endpoint refused the batch"
                              : fmt::format("no endpoint was ready for {} s", int(o.give_up));
    for (const client::EndpointReport& e : summary.endpoints)
      if (!e.last_error.empty()) {
        why += " (last error: " + e.last_error + ")";
        break;
      }
    return report_error(Status(refused ? StatusCode::kUnauthenticated : StatusCode::kUnavailable,
                               fmt::format("{} jobs have no result: {}", summary.unfinished.size(), why)));
  }
  return 0;
}

// "random:N" → N.
Expected<int> random_count(const std::string& spec) {
  const std::string prefix = "random:";
  if (spec.rfind(prefix, 0) != 0)
    return invalid_argument("--schedules must be random:N (N random legal schedules per benchmark), got '" + spec + "'");
  try {
    size_t used = 0;
    const int n = std::stoi(spec.substr(prefix.size()), &used);
    if (used == spec.size() - prefix.size() && n >= 1 && n <= 100000) return n;
  } catch (const std::exception&) {
  }
  return invalid_argument("--schedules random:N needs N in 1..100000, got '" + spec + "'");
}

int make_jobs(const BatchCliOptions& o) {
  if (o.suite.empty()) return report_error(invalid_argument("--make-jobs needs --suite DATASET (e.g. ops-v0)"));
  Expected<int> n = random_count(o.schedules);
  if (!n.ok()) return report_error(n.status());
  if (o.observe.empty() && o.rewards.empty())
    return report_error(invalid_argument("--observe NAMES (or --rewards NAMES): what each job computes"));
  // The jobs run on schedule-v0: a name it does not know would fail every job later.
  Expected<SpaceNames> known = space_names("schedule-v0");
  if (!known.ok()) return report_error(known.status());
  Status names = check_names("--observe", "schedule-v0", "observation", o.observe, known->observations);
  if (names.ok()) names = check_names("--rewards", "schedule-v0", "reward", o.rewards, known->rewards);
  if (!names.ok()) return report_error(names);
  Expected<const Dataset*> dataset = DatasetRegistry::global().find_dataset(o.suite);
  if (!dataset.ok()) return report_error(dataset.status());
  if ((*dataset)->size() < 0 && o.limit < 0)
    return report_error(invalid_argument((*dataset)->name() + " is a generator without end; give --limit N"));
  const std::vector<BenchmarkInfo> benchmarks = (*dataset)->list(0, o.limit);
  // A GPU target's jobs get random GPU schedules (blocks, threads), legal for it; a
  // target scheduled by knobs (fpga: tilings), random legal knob choices.
  const Backend* gpu = nullptr;
  const Backend* target = nullptr;
  if (!o.target.empty()) {
    Expected<const Backend*> backend = find_backend(o.target);
    if (!backend.ok()) return report_error(invalid_argument(backend.status().message()));
    target = *backend;
    if ((*backend)->lowering().thread_binding) gpu = *backend;
  }
  std::ostringstream out;
  for (size_t b = 0; b < benchmarks.size(); ++b) {
    Expected<Benchmark> bench = DatasetRegistry::global().resolve(benchmarks[b].uri);
    if (!bench.ok()) return report_error(bench.status());
    for (int i = 0; i < *n; ++i) {
      // One stream per (seed, benchmark, schedule): a job file does not change when
      // --schedules grows, it only gets longer.
      Rng rng(o.seed * 0x9e3779b97f4a7c15ull ^ (uint64_t(b) << 32) ^ uint64_t(i));
      // Legal means it lowers too: primitives that all apply can still ask for a
      // buffer past the caps (a cache of a whole large tensor); draw again then.
      Schedule schedule(bench->program);
      Expected<std::vector<ScheduleKnob>> knobs =
          target ? target->schedule_knobs(bench->program) : Expected<std::vector<ScheduleKnob>>(unimplemented(""));
      if (!knobs.ok() && knobs.status().code() != StatusCode::kUnimplemented) {
        std::cerr << "tensorgym: skipped " << bench->uri << ": " << knobs.status().message() << "\n";
        break;
      }
      if (knobs.ok()) {
        Expected<std::string> trace = unimplemented("");
        for (int attempt = 0; attempt < kMaxDraws && !trace.ok(); ++attempt) {
          std::vector<int64_t> choice;
          for (const ScheduleKnob& k : *knobs) choice.push_back(k.values[size_t(rng.below(k.values.size()))]);
          trace = target->knob_schedule(bench->program, choice);
        }
        if (!trace.ok()) {
          std::cerr << "tensorgym: skipped " << bench->uri << ": no legal knob choice in " << kMaxDraws << " draws\n";
          break;
        }
        Expected<Schedule> parsed = Schedule::from_text(bench->program, *trace);
        if (!parsed.ok()) return report_error(parsed.status());
        schedule = std::move(*parsed);
      } else if (gpu != nullptr) {
        Expected<Schedule> drawn = random_gpu_schedule(bench->program, gpu->lowering(), rng, kMaxDraws);
        if (!drawn.ok()) {
          std::cerr << "tensorgym: skipped " << bench->uri << ": " << drawn.status().message() << "\n";
          break;
        }
        schedule = std::move(*drawn);
      } else {
        for (int attempt = 0; attempt < kMaxDraws; ++attempt) {
          schedule = Schedule(bench->program);
          apply_random_primitives(schedule, rng, o.steps);
          if (lower(schedule).ok()) break;
        }
      }
      client::BatchJob job;
      job.benchmark = bench->uri;
      job.actions = schedule.trace().to_string();
      job.observations = o.observe;
      job.rewards = o.rewards;
      job.target = o.target;
      job.key = client::job_content_key(job);
      out << client::job_to_json(job) << "\n";
    }
  }
  std::cout << out.str();
  return 0;
}

}  // namespace

void add_batch_command(CLI::App& app) {
  auto o = std::make_shared<BatchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Evaluate a job file (JSON Lines) on several services, surviving dying workers and services; results go to a "
      "JSON Lines journal, one per job. --make-jobs prints a job file of random schedules");
  cmd->add_option("--jobs", o->jobs, "Job file: JSON Lines, one job per line (docs/protocol.md, Evaluate)");
  cmd->add_option("--out", o->out, "Results journal (JSON Lines), appended and synced as results arrive");
  auto* endpoints = cmd->add_option("--endpoints", o->endpoints, "Services: host:port or dns:///name:port, comma separated")
                        ->delimiter(',');
  auto* local = cmd->add_option("--local", o->local, "Start N local services on loopback instead")
                    ->check(CLI::Range(1, 256));
  endpoints->excludes(local);
  cmd->add_flag("--resume", o->resume, "Skip the jobs the journal already holds, and append to it");
  cmd->add_option("--concurrency", o->concurrency,
                  "Local services: jobs each runs at once (serve --concurrency; endpoints say their own)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-in-flight", o->max_in_flight,
                  "Jobs sent and not yet answered per service (default: adaptive, about 20 ms of work per slot)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--timeout", o->timeout, "Compile and run deadline of each job's measurement, for jobs without one")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--workers", o->workers, "Local services: measurement workers each")->default_val(1)->check(CLI::Range(1, 256));
  cmd->add_option("--auth-token-file", o->auth_token_file, "File whose first line is the services' bearer token");
  cmd->add_flag("--tls", o->tls, "Connect with TLS (system roots unless --tls-ca)");
  cmd->add_option("--tls-ca", o->tls_ca_file, "TLS root certificates (PEM)");
  cmd->add_option("--give-up", o->give_up, "Stop when no service has been ready for this many seconds")
      ->default_val(120)
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet", o->quiet, "No progress output");
  cmd->add_flag("--make-jobs", o->make_jobs, "Print a job file instead of running one");
  cmd->add_option("--suite", o->suite, "--make-jobs: the dataset, e.g. ops-v0");
  cmd->add_option("--schedules", o->schedules, "--make-jobs: random:N, N random legal schedules per benchmark")
      ->default_val("random:1");
  cmd->add_option("--seed", o->seed, "--make-jobs: seed of the random schedules")->default_val(0);
  cmd->add_option("--target", o->target,
                  "--make-jobs: the jobs' backend, cpu (default), cuda (random GPU schedules: blocks and threads) or "
                  "fpga (random legal tilings)");
  cmd->add_option("--observe", o->observe, "--make-jobs: observations of each job, comma separated (names below)")
      ->delimiter(',');
  cmd->add_option("--rewards", o->rewards, "--make-jobs: rewards of each job, comma separated (names below)")
      ->delimiter(',');
  cmd->footer([] { return space_names_help(); });
  cmd->add_option("--steps", o->steps, "--make-jobs: primitives per random schedule (at most)")
      ->default_val(4)
      ->check(CLI::Range(0, 64));
  cmd->add_option("--limit", o->limit, "--make-jobs: at most this many benchmarks of the dataset")
      ->check(CLI::Range(int64_t(1), kMaxListLimit));
  cmd->callback([o] {
    const int rc = o->make_jobs ? make_jobs(*o) : run_batch(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tensorgym::cli
