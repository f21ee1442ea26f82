// Batch evaluation: Evaluate throughput and overhead, and how fast a dead service is
// noticed and its jobs re-routed.
//
//   build/bin/batch_benchmark [--jobs N] [--rounds R] [--window N]
//
// Jobs have deterministic observations only (est_cycles of a random legal schedule of
// the small ops-v0 benchmarks, from `tensorgym batch --make-jobs`), so that the figures
// are about the evaluation path, not about kernels. Each figure is the median of R
// rounds (docs/performance.md, "Batch evaluation"):
//   - in-process: run_evaluate_job on one thread, the cost the service cannot avoid;
//   - 1 instance at --concurrency 1, alternating with the in-process rounds: its
//     per-job time minus the in-process cost is the overhead of the path (client,
//     gRPC, queue, result sink);
//   - throughput with 1 and 2 instances at their default concurrency;
//   - failover: two instances, one killed with SIGKILL mid-batch (and, separately, one
//     frozen with SIGSTOP, which only keepalive pings can notice): time from the fault
//     until the evaluator marks the endpoint down, and until the last of its jobs has
//     its result from the other instance.
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/batch_evaluator.h"
#include "client/managed_server.h"
#include "envs/env_context.h"
#include "proto/jobs.h"
#include "proto/tensorgym.pb.h"
#include "service/evaluate.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU seconds (user + system) of this process, and of another one.
double self_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double process_cpu_s(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state; utime and stime are 14 and 15
    if (i == 14) utime = std::stod(f);
    if (i == 15) {
      stime = std::stod(f);
      break;
    }
  }
  return (utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string binary_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string self = n > 0 ? std::string(buf, size_t(n)) : std::string();
  return self.substr(0, self.rfind('/'));
}

std::vector<client::BatchJob> make_jobs(const std::string& tensorgym, int count) {
  const std::string path = fmt::format("/tmp/batch_benchmark_{}.jobs", ::getpid());
  const int per_benchmark = (count + 7) / 8;
  const std::string cmd = fmt::format(
      "{} batch --make-jobs --suite ops-v0 --limit 8 --schedules random:{} --seed 1 --observe est_cycles > {}",
      tensorgym, per_benchmark, path);
  if (std::system(cmd.c_str()) != 0) {
    fmt::print(stderr, "failed: {}\n", cmd);
    std::exit(1);
  }
  Expected<std::vector<client::JobLine>> lines = client::read_job_file(path);
  std::remove(path.c_str());
  if (!lines.ok()) {
    fmt::print(stderr, "{}\n", lines.status().to_string());
    std::exit(1);
  }
  std::vector<client::BatchJob> jobs;
  for (client::JobLine& l : *lines)
    if (int(jobs.size()) < count) jobs.push_back(std::move(l.job));
  return jobs;
}

std::unique_ptr<client::ManagedServer> start_server(const std::string& tensorgym, std::vector<std::string> args) {
  args.insert(args.end(), {"--log-level", "warning", "--threads", "1"});
  Expected<std::unique_ptr<client::ManagedServer>> s = client::ManagedServer::start(tensorgym, args, 60);
  if (!s.ok()) {
    fmt::print(stderr, "cannot start a service: {}\n", s.status().to_string());
    std::exit(1);
  }
  return std::move(*s);
}

int g_window = 0;  // --window: jobs in flight per endpoint (0: the evaluator's default)

std::unique_ptr<client::BatchEvaluator> connect(const std::vector<client::ManagedServer*>& servers) {
  client::BatchOptions o;
  o.max_in_flight = g_window;
  for (client::ManagedServer* s : servers) o.endpoints.push_back(s->address());
  Expected<std::unique_ptr<client::BatchEvaluator>> b = client::BatchEvaluator::create(o);
  if (!b.ok() || !(*b)->wait_ready(int(servers.size()), 60)) {
    fmt::print(stderr, "the evaluator did not get ready\n");
    std::exit(1);
  }
  return std::move(*b);
}

// Seconds for one run of the jobs (every result OK, or the benchmark stops).
double timed_run(client::BatchEvaluator& batch, const std::vector<client::BatchJob>& jobs) {
  const Clock::time_point start = Clock::now();
  client::BatchSummary s = batch.run(jobs, [](const client::BatchResult&) {});
  const double wall = seconds(Clock::now() - start);
  if (s.ok != int64_t(jobs.size())) {
    fmt::print(stderr, "only {} of {} jobs OK\n", s.ok, jobs.size());
    for (const auto& [k, n] : s.by_error) fmt::print(stderr, "  {}: {}\n", k, n);
    std::exit(1);
  }
  return wall;
}

// The same jobs under a fresh key each round, so that nothing is cached by key.
std::vector<client::BatchJob> rekeyed(std::vector<client::BatchJob> jobs, int round) {
  for (client::BatchJob& j : jobs) j.key = fmt::format("{}-{}", j.key, round);
  return jobs;
}

struct Failover {
  double detect_s = -1;   // fault → endpoint marked down
  double reroute_s = -1;  // fault → last re-sent job answered
  int64_t rerouted = 0;
};

// Two instances; `fault` hits the first one once a quarter of the jobs are done.
Failover failover(const std::string& tensorgym, const std::vector<client::BatchJob>& jobs, int signal) {
  auto a = start_server(tensorgym, {"--concurrency", "2"});
  auto b = start_server(tensorgym, {"--concurrency", "2"});
  client::BatchOptions o;
  o.endpoints = {a->address(), b->address()};
  o.max_in_flight = 16;
  auto made = client::BatchEvaluator::create(o);
  if (!made.ok() || !(*made)->wait_ready(2, 60)) std::exit(1);
  client::BatchEvaluator& batch = **made;
  std::mutex mu;
  Clock::time_point last_rerouted{};
  int64_t rerouted = 0;
  std::atomic<int64_t> done{0};
  std::thread runner([&] {
    batch.run(jobs, [&](const client::BatchResult& r) {
      if (r.attempts > 1) {
        std::lock_guard<std::mutex> lock(mu);
        last_rerouted = Clock::now();
        ++rerouted;
      }
      ++done;
    });
  });
  while (done.load() < int64_t(jobs.size()) / 4) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const Clock::time_point fault = Clock::now();
  ::kill(a->pid(), signal);
  Failover f;
  for (;;) {
    const std::vector<client::EndpointReport> e = batch.endpoints();
    if (e[0].streams_lost > 0 || e[0].state == "down") {
      f.detect_s = seconds(Clock::now() - fault);
      break;
    }
    if (seconds(Clock::now() - fault) > 30) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  runner.join();
  if (signal == SIGSTOP) ::kill(a->pid(), SIGCONT);
  std::lock_guard<std::mutex> lock(mu);
  f.rerouted = rerouted;
  if (rerouted > 0) f.reroute_s = seconds(last_rerouted - fault);
  return f;
}

int run(int count, int rounds) {
  const std::string tensorgym = binary_dir() + "/tensorgym";
  const std::vector<client::BatchJob> jobs = make_jobs(tensorgym, count);
  fmt::print("{} jobs (est_cycles of random schedules, ops-v0, 8 benchmarks), {} rounds, {} cores\n", jobs.size(),
             rounds, std::thread::hardware_concurrency());

  // The floor (in-process) and one slot through Evaluate, alternating round by round so
  // that both see the same load; the overhead is the median of the per-round
  // differences. Wall time per job, and CPU per job of the client and the service
  // together: on a machine with few cores the client competes with the service for
  // them, so the CPU figure is the steadier measure of what the path costs.
  auto context = std::make_shared<EnvContext>();
  std::vector<proto::EvaluateJob> wire(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) client::job_to_proto(jobs[i], &wire[i]);
  std::vector<double> in_process, in_process_cpu, serial, serial_cpu, client_cpu, overhead, overhead_cpu, one, two;
  {
    auto s1 = start_server(tensorgym, {"--concurrency", "1"});
    auto batch = connect({s1.get()});
    for (int r = 0; r < rounds; ++r) {
      const Clock::time_point start = Clock::now();
      const double cpu = self_cpu_s();
      for (const proto::EvaluateJob& w : wire) (void)service::run_evaluate_job(w, context, service::EvaluateLimits());
      in_process.push_back(seconds(Clock::now() - start) / double(jobs.size()));
      in_process_cpu.push_back((self_cpu_s() - cpu) / double(jobs.size()));

      const std::vector<client::BatchJob> round = rekeyed(jobs, r);
      const double client0 = self_cpu_s(), service0 = process_cpu_s(s1->pid());
      serial.push_back(timed_run(*batch, round) / double(jobs.size()));
      const double client = self_cpu_s() - client0, service = process_cpu_s(s1->pid()) - service0;
      serial_cpu.push_back((client + service) / double(jobs.size()));
      client_cpu.push_back(client / double(jobs.size()));
      overhead.push_back(serial.back() - in_process.back());
      overhead_cpu.push_back(serial_cpu.back() - in_process_cpu.back());
    }
  }
  {
    auto s1 = start_server(tensorgym, {});
    auto batch = connect({s1.get()});
    for (int r = 0; r < rounds; ++r) one.push_back(double(jobs.size()) / timed_run(*batch, rekeyed(jobs, r)));
  }
  {
    auto s1 = start_server(tensorgym, {});
    auto s2 = start_server(tensorgym, {});
    auto batch = connect({s1.get(), s2.get()});
    for (int r = 0; r < rounds; ++r) two.push_back(double(jobs.size()) / timed_run(*batch, rekeyed(jobs, r)));
  }
  const double floor_us = median(in_process) * 1e6;
  fmt::print(
      "in-process run_evaluate_job:            {:8.1f} us/job wall, {:.1f} us/job CPU ({:.0f} jobs/s on one thread)\n",
      floor_us, median(in_process_cpu) * 1e6, 1e6 / floor_us);
  fmt::print("Evaluate, 1 instance, concurrency 1:    {:8.1f} us/job wall -> overhead {:.1f} us/job (target < 200)\n",
             median(serial) * 1e6, median(overhead) * 1e6);
  fmt::print(
      "                                        {:8.1f} us/job CPU, client + service -> overhead {:.1f} us/job "
      "(client {:.1f})\n",
      median(serial_cpu) * 1e6, median(overhead_cpu) * 1e6, median(client_cpu) * 1e6);
  fmt::print("Evaluate, 1 instance:                   {:8.0f} jobs/s\n", median(one));
  fmt::print("Evaluate, 2 instances:                  {:8.0f} jobs/s ({:.2f}x of 1)\n", median(two),
             median(two) / median(one));

  const std::vector<client::BatchJob> many = [&] {
    std::vector<client::BatchJob> out;
    for (int r = 0; r < 4; ++r) {
      std::vector<client::BatchJob> k = rekeyed(jobs, 100 + r);
      out.insert(out.end(), k.begin(), k.end());
    }
    return out;
  }();
  for (int sig : {SIGKILL, SIGSTOP}) {
    std::vector<double> detect, reroute;
    int64_t rerouted = 0;
    for (int r = 0; r < rounds; ++r) {
      Failover f = failover(tensorgym, rekeyed(many, 1000 * sig + r), sig);
      detect.push_back(f.detect_s);
      reroute.push_back(f.reroute_s);
      rerouted += f.rerouted;
    }
    fmt::print(
        "failover ({}): detected in {:.3f} s, its jobs re-routed and answered in {:.3f} s (median; {:.1f} jobs "
        "re-sent per round; target < 2 s)\n",
        sig == SIGKILL ? "SIGKILL" : "SIGSTOP, keepalive", median(detect), median(reroute), double(rerouted) / rounds);
  }
  return 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  int jobs = 1000, rounds = 3;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs") == 0) jobs = std::max(8, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--window") == 0) tensorgym::g_window = std::max(0, std::atoi(argv[i + 1]));
  }
  return tensorgym::run(jobs, rounds);
}
