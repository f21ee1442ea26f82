// The measurement layer in-process: the timing protocol, settings, frames, error
// words, and the measure pipeline run directly (no worker process). Worker processes
// and their failures are tested in worker_isolation_test.cc.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/measure/frame.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/runner_settings.h"
#include "codegen/measure/timing.h"
#include "proto/provenance_json.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

// A clock the test drives: each call of the timed function advances it.
struct FakeClock {
  double now = 100.0;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

// ---- timing protocol ---------------------------------------------------------------

TEST(TimingTest, SamplesStopOnceTheFewestAgreeAndNoisyOnesGoOnToRepeat) {
  FakeClock clock;
  std::vector<double> run_s;  // the duration of each call, cycled
  size_t next = 0;
  auto work = [&] { clock.now += run_s[next++ % run_s.size()]; };
  TimingOptions o;
  o.warmup_runs = 0;
  o.repeat = 8;
  o.min_repeat_ms = 0;  // one run per sample
  o.min_repeat = 3;
  o.target_cv = 0.01;
  o.clock = clock.fn();
  // Steady: three samples within 1% of each other, so three are taken.
  run_s = {1.000, 1.002, 0.999};
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->repeat, 3);
  EXPECT_LE(st->cv, 0.01);
  // Noisy (cv about 30%): it never agrees, so every one of `repeat` is taken.
  run_s = {1.0, 1.5, 0.8, 1.3};
  next = 0;
  st = time_runs(work, o);
  EXPECT_EQ(st->repeat, 8);
  EXPECT_GT(st->cv, 0.01);
  // Disturbed at first, then steady: it stops once the last three agree.
  run_s = {1.0, 1.3, 1.05, 1.05, 1.05, 1.05, 1.05, 1.05};
  next = 0;
  st = time_runs(work, o);
  EXPECT_EQ(st->repeat, 5);
  EXPECT_NEAR(st->median_s, 1.05, 1e-12);
  // Off: min_repeat 0, target_cv 0, or min_repeat >= repeat take `repeat` samples.
  run_s = {1.0};
  for (auto [min_repeat, cv] : {std::pair{0, 0.01}, std::pair{3, 0.0}, std::pair{8, 0.01}, std::pair{20, 0.01}}) {
    o.min_repeat = min_repeat;
    o.target_cv = cv;
    EXPECT_EQ(time_runs(work, o)->repeat, 8) << min_repeat << " " << cv;
  }
  o.min_repeat = -1;
  EXPECT_EQ(time_runs(work, o).status().code(), StatusCode::kInvalidArgument);
  o.min_repeat = 3;
  o.target_cv = -0.5;
  EXPECT_EQ(time_runs(work, o).status().code(), StatusCode::kInvalidArgument);
  // The runner's defaults: between 3 and 5 samples, stopping within 1%.
  TimingOptions t = timing_options(*resolve_runner_settings(RunnerSettings{}));
  EXPECT_EQ(t.min_repeat, 3);
  EXPECT_EQ(t.repeat, 5);
  EXPECT_EQ(t.target_cv, 0.01);
  RunnerSettings bad;
  bad.target_cv = 2;
  EXPECT_EQ(resolve_runner_settings(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(TimingTest, ALongRunIsSampledUntilTheTotalBound) {
  FakeClock clock;
  int calls = 0;
  auto work = [&] {
    ++calls;
    clock.now += 2.0;  // every run takes 2 s
  };
  TimingOptions o;
  o.warmup_runs = 1;
  o.repeat = 5;
  o.min_repeat_ms = 100;
  o.max_total_s = 5;  // samples of 2 s: the third passes it
  o.clock = clock.fn();
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->repeat, 3);
  EXPECT_EQ(st->number, 1);
  EXPECT_EQ(calls, 4);  // the warm-up and three samples
  EXPECT_NEAR(st->median_s, 2.0, 1e-12);
  // At least one sample, however long; none of it when the bound is off.
  o.max_total_s = 1;
  EXPECT_EQ(time_runs(work, o)->repeat, 1);
  o.max_total_s = 0;
  EXPECT_EQ(time_runs(work, o)->repeat, 5);
  o.max_total_s = -1;
  EXPECT_EQ(time_runs(work, o).status().code(), StatusCode::kInvalidArgument);
  // The runner's settings bound the samples by a quarter of the run deadline.
  RunnerSettings settings;
  settings.run_timeout_s = 20;
  EXPECT_EQ(timing_options(*resolve_runner_settings(settings)).max_total_s, 5.0);
}

TEST(TimingTest, NumberGrowsUntilOneRepeatLastsMinRepeat) {
  FakeClock clock;
  int calls = 0;
  auto work = [&] {
    ++calls;
    clock.now += 1e-3;  // every run takes exactly 1 ms
  };
  TimingOptions o;
  o.warmup_runs = 0;  // no estimate: calibration has to grow from 1
  o.number = 1;
  o.repeat = 4;
  o.min_repeat_ms = 10;
  o.clock = clock.fn();
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_GE(st->number, 10);
  EXPECT_GE(st->number * st->median_s, 10e-3 - 1e-12);
  EXPECT_EQ(st->repeat, 4);
  ASSERT_EQ(st->samples_s.size(), 4u);
  for (double s : st->samples_s) EXPECT_NEAR(s, 1e-3, 1e-12);
  EXPECT_NEAR(st->median_s, 1e-3, 1e-12);
  EXPECT_NEAR(st->min_s, 1e-3, 1e-12);
  EXPECT_NEAR(st->max_s, 1e-3, 1e-12);
  EXPECT_NEAR(st->cv, 0, 1e-6);
  // The calibration repeats that were too short are not samples; the first long
  // enough one is. Every other sample ran exactly `number` times.
  EXPECT_GE(calls, 4 * st->number);
}

TEST(TimingTest, WarmupRunSeedsTheEstimate) {
  FakeClock clock;
  int calls = 0;
  auto work = [&] {
    ++calls;
    clock.now += 2e-3;
  };
  TimingOptions o;
  o.warmup_runs = 1;
  o.repeat = 3;
  o.min_repeat_ms = 19.5;
  o.clock = clock.fn();
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  // ceil(19.5 ms / 2 ms per run): the first calibration repeat is already long enough.
  EXPECT_EQ(st->number, 10);
  EXPECT_EQ(calls, 1 + 3 * 10);
}

TEST(TimingTest, NoGrowthWhenMinRepeatIsZero) {
  FakeClock clock;
  auto work = [&] { clock.now += 1e-6; };
  TimingOptions o;
  o.number = 3;
  o.repeat = 2;
  o.min_repeat_ms = 0;
  o.clock = clock.fn();
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->number, 3);
  EXPECT_EQ(st->repeat, 2);
}

TEST(TimingTest, RealClockOnACheapFunction) {
  volatile double sink = 0;
  auto work = [&] {
    double x = sink;
    for (int i = 0; i < 200; ++i) x = x * 0.999 + 1.0;
    sink = x;
  };
  TimingOptions o;
  o.repeat = 5;
  o.min_repeat_ms = 5;
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  // How many runs reach 5 ms depends on the machine (the fake clock tests the growth);
  // what holds anywhere: at least one, and the calibrated repeat lasted 5 ms.
  EXPECT_GE(st->number, 1);
  ASSERT_EQ(st->samples_s.size(), 5u);
  EXPECT_LE(st->min_s, st->median_s);
  EXPECT_LE(st->median_s, st->max_s);
  EXPECT_LE(st->min_s, st->mean_s);
  EXPECT_LE(st->mean_s, st->max_s);
  EXPECT_GT(st->min_s, 0);
  EXPECT_TRUE(std::isfinite(st->cv));
  EXPECT_GE(st->cv, 0);
  // The first sample is the calibration repeat that reached min_repeat_ms.
  EXPECT_GE(st->samples_s[0] * st->number, 5e-3 * 0.999);
}

TEST(TimingTest, StatisticsOfKnownSamples) {
  Expected<TimingStats> st = summarize_samples({4, 1, 3, 2}, 7);
  ASSERT_TRUE(st.ok());
  EXPECT_DOUBLE_EQ(st->median_s, 2.5);
  EXPECT_DOUBLE_EQ(st->min_s, 1);
  EXPECT_DOUBLE_EQ(st->max_s, 4);
  EXPECT_DOUBLE_EQ(st->mean_s, 2.5);
  // Sample standard deviation sqrt(5/3) over the mean 2.5.
  EXPECT_NEAR(st->cv, std::sqrt(5.0 / 3.0) / 2.5, 1e-12);
  EXPECT_EQ(st->number, 7);
  EXPECT_EQ(st->repeat, 4);
  EXPECT_EQ(st->samples_s, (std::vector<double>{4, 1, 3, 2}));  // in measured order

  Expected<TimingStats> odd = summarize_samples({5, 1, 3}, 1);
  ASSERT_TRUE(odd.ok());
  EXPECT_DOUBLE_EQ(odd->median_s, 3);
  Expected<TimingStats> one = summarize_samples({2}, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->cv, 0);
}

TEST(TimingTest, BadSamplesAreErrors) {
  EXPECT_FALSE(summarize_samples({}, 1).ok());
  EXPECT_FALSE(summarize_samples({1, 0}, 1).ok());
  EXPECT_FALSE(summarize_samples({1, -1}, 1).ok());
  EXPECT_FALSE(summarize_samples({1, std::numeric_limits<double>::quiet_NaN()}, 1).ok());
  EXPECT_FALSE(summarize_samples({std::numeric_limits<double>::infinity()}, 1).ok());
}

TEST(TimingTest, ZeroElapsedTimeIsAnErrorNeverAResult) {
  TimingOptions o;
  o.clock = [] { return 5.0; };  // a stopped clock
  Expected<TimingStats> st = time_runs([] {}, o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kInternal);
  EXPECT_CONTAINS(st.status().message(), "positive finite");

  o.min_repeat_ms = 0;  // also without calibration
  EXPECT_FALSE(time_runs([] {}, o).ok());
}

TEST(TimingTest, NegativeOrNonFiniteElapsedTimeIsAnError) {
  double t = 10;
  TimingOptions o;
  o.clock = [&] { return t -= 1; };  // runs backwards
  EXPECT_FALSE(time_runs([] {}, o).ok());

  TimingOptions nan;
  nan.clock = [] { return std::numeric_limits<double>::quiet_NaN(); };
  Expected<TimingStats> st = time_runs([] {}, nan);
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.status().message(), "nan");

  TimingOptions inf;
  int n = 0;
  inf.clock = [&] { return n++ % 2 ? std::numeric_limits<double>::infinity() : 0.0; };
  EXPECT_FALSE(time_runs([] {}, inf).ok());
}

TEST(TimingTest, BadOptionsAreRejected) {
  TimingOptions o;
  o.repeat = 0;
  EXPECT_EQ(time_runs([] {}, o).status().code(), StatusCode::kInvalidArgument);
  TimingOptions w;
  w.warmup_runs = -1;
  EXPECT_EQ(time_runs([] {}, w).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(time_runs(nullptr, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(TimingTest, FlushingCachesBetweenRepeatsStillTimes) {
  FakeClock clock;
  auto work = [&] { clock.now += 1e-3; };
  TimingOptions o;
  o.flush_cache = true;
  o.repeat = 2;
  o.min_repeat_ms = 1;
  o.clock = clock.fn();
  Expected<TimingStats> st = time_runs(work, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_NEAR(st->median_s, 1e-3, 1e-12);  // the flush is outside the timed region
}

TEST(CacheFlusherTest, LargerThanTheLastLevelCache) {
  const int64_t llc = last_level_cache_bytes();
  CacheFlusher flusher;
  EXPECT_GE(flusher.bytes(), int64_t(8) << 20);
  EXPECT_LE(flusher.bytes(), int64_t(1) << 30);
  if (llc > 0 && llc < (int64_t(1) << 30)) {
    EXPECT_GT(flusher.bytes(), llc);
  }
  flusher.flush();
  flusher.flush();
  CacheFlusher small(1000);
  EXPECT_EQ(small.bytes(), 1024);
  small.flush();
}

// ---- settings ------------------------------------------------------------------------

TEST(RunnerSettingsTest, ZeroFieldsTakeTheDefaults) {
  Expected<RunnerSettings> r = resolve_runner_settings(RunnerSettings());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->number, 1);
  EXPECT_EQ(r->repeat, kDefaultRepeat);
  EXPECT_EQ(r->min_repeat_ms, kDefaultMinRepeatMs);
  EXPECT_EQ(r->threads, available_cores());
  EXPECT_GE(r->threads, 1);
  EXPECT_EQ(r->compile_timeout_s, kDefaultCompileTimeoutS);
  EXPECT_EQ(r->run_timeout_s, kDefaultRunTimeoutS);
  EXPECT_EQ(r->check_points, kDefaultCheckPoints);
  EXPECT_EQ(r->rtol, kDefaultRtol);
  EXPECT_EQ(r->atol, kDefaultAtol);
  EXPECT_FALSE(r->flush_cache);

  RunnerSettings s;
  s.repeat = 3;
  s.threads = 1;
  s.seed = 42;
  Expected<RunnerSettings> kept = resolve_runner_settings(s);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->repeat, 3);
  EXPECT_EQ(kept->threads, 1);
  EXPECT_EQ(kept->seed, 42u);
  TimingOptions t = timing_options(*kept);
  EXPECT_EQ(t.repeat, 3);
  EXPECT_EQ(t.min_repeat_ms, kDefaultMinRepeatMs);
}

TEST(RunnerSettingsTest, OutOfRangeValuesAreRejected) {
  RunnerSettings s;
  s.repeat = -1;
  EXPECT_EQ(resolve_runner_settings(s).status().code(), StatusCode::kInvalidArgument);
  s.repeat = kMaxRepeat + 1;
  EXPECT_FALSE(resolve_runner_settings(s).ok());
  RunnerSettings t;
  t.run_timeout_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(resolve_runner_settings(t).ok());
  RunnerSettings u;
  u.check_points = -5;
  Expected<RunnerSettings> r = resolve_runner_settings(u);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "check_points");
}

// ---- frames --------------------------------------------------------------------------

TEST(FrameTest, EncodeDecodeRoundTrip) {
  const std::string bytes = encode_frame(FrameType::kResult, "payload");
  ASSERT_EQ(bytes.size(), kFrameHeaderBytes + 7);
  Expected<FrameHeader> h = decode_frame_header(reinterpret_cast<const unsigned char*>(bytes.data()));
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(h->type, FrameType::kResult);
  EXPECT_EQ(h->payload_bytes, 7u);
}

TEST(FrameTest, MalformedHeadersAreDataLoss) {
  std::string bad = encode_frame(FrameType::kGo, "");
  bad[0] = 'X';
  EXPECT_EQ(decode_frame_header(reinterpret_cast<const unsigned char*>(bad.data())).status().code(),
            StatusCode::kDataLoss);
  std::string type = encode_frame(FrameType::kGo, "");
  type[3] = 99;
  EXPECT_FALSE(decode_frame_header(reinterpret_cast<const unsigned char*>(type.data())).ok());
  std::string version = encode_frame(FrameType::kGo, "");
  version[2] = 7;
  EXPECT_FALSE(decode_frame_header(reinterpret_cast<const unsigned char*>(version.data())).ok());
  std::string huge = encode_frame(FrameType::kGo, "");
  huge[7] = char(0x7f);  // ~2 GiB
  Expected<FrameHeader> h = decode_frame_header(reinterpret_cast<const unsigned char*>(huge.data()));
  ASSERT_FALSE(h.ok());
  EXPECT_CONTAINS(h.status().message(), "exceeds");
}

TEST(FrameTest, BlockingIoOverASocketPair) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  MeasureRequest request;
  request.job_id = 7;
  request.program = "input A: f32[4]\nB[i] = A[i]\n";
  ASSERT_TRUE(write_frame(sv[0], FrameType::kRequest, serialize(request)).ok());
  ASSERT_TRUE(write_frame(sv[0], FrameType::kGo, "").ok());
  Expected<Frame> f = read_frame(sv[1]);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->type, FrameType::kRequest);
  Expected<MeasureRequest> parsed = parse_measure_request(f->payload);
  ASSERT_TRUE(parsed.ok());
  const MeasureRequest& back = *parsed;
  EXPECT_EQ(back.job_id, 7u);
  EXPECT_EQ(back.program, request.program);
  Expected<Frame> go = read_frame(sv[1]);
  ASSERT_TRUE(go.ok());
  EXPECT_EQ(go->type, FrameType::kGo);
  EXPECT_TRUE(go->payload.empty());

  // A frame cut short, then the end of the stream.
  const std::string partial = encode_frame(FrameType::kResult, "0123456789").substr(0, 12);
  ASSERT_EQ(::write(sv[0], partial.data(), partial.size()), ssize_t(partial.size()));
  ::close(sv[0]);
  EXPECT_EQ(read_frame(sv[1]).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(read_frame(sv[1]).status().code(), StatusCode::kUnavailable);
  ::close(sv[1]);
}

TEST(FrameTest, WritingToAClosedPeerIsAnErrorNotSigpipe) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ::close(sv[1]);
  Status st = write_frame(sv[0], FrameType::kGo, "");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  ::close(sv[0]);
}

// ---- error words -----------------------------------------------------------------------

TEST(MeasureErrorTest, NamesAndWaitStatuses) {
  EXPECT_EQ(measure_error_name(MeasureError::kWrongAnswer), "WRONG_ANSWER");
  EXPECT_EQ(measure_error_name(MeasureError::kOk), "MEASURE_OK");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGBUS), "SIGBUS");

  const pid_t child = fork();  // single-threaded test process: a bare fork is fine here
  if (child == 0) {
    ::raise(SIGABRT);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_CONTAINS(describe_wait_status(status), "killed by SIGABRT");
  const pid_t exits = fork();
  if (exits == 0) _exit(7);
  ASSERT_EQ(waitpid(exits, &status, 0), exits);
  EXPECT_EQ(describe_wait_status(status), "exited with status 7");

  MeasureResult r = error_result(MeasureError::kTimeout, "late");
  EXPECT_EQ(r.error, MeasureError::kTimeout);
  EXPECT_EQ(r.error_message, "late");
  EXPECT_FALSE(r.correct);
}

TEST(ProvenanceTest, NamesTheMachineAndTheSettings) {
  RunnerSettings s;
  s.threads = 3;
  s.seed = 9;
  Provenance p = make_provenance(host_backend().target(), s, 1234);
  EXPECT_EQ(p.target, "cpu");
  EXPECT_EQ(p.tensorgym_version, TENSORGYM_VERSION);
  EXPECT_EQ(p.threads, 3);
  EXPECT_EQ(p.settings.seed, 9u);
  EXPECT_EQ(p.worker_pid, 1234);
  EXPECT_EQ(p.hostname, host_name());
}

TEST(ProvenanceTest, RoundTripsThroughJsonWithTheProtoFieldNames) {
  RunnerSettings s;
  s.seed = 5;
  Provenance made = make_provenance(host_backend().target(), s, 77);
  made.endpoint = "127.0.0.1:5000";
  proto::Provenance p;
  to_proto(made, &p);
  const std::string json = provenance_to_json(made);
  EXPECT_EQ(json, provenance_to_json(p));
  EXPECT_NE(json.find("\"worker_pid\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"endpoint\":\"127.0.0.1:5000\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"target\":\"cpu\""), std::string::npos) << json;
  EXPECT_EQ(provenance_from_json(json).SerializeAsString(), p.SerializeAsString());
  // Informative only: a bad text gives an empty provenance, never an error.
  EXPECT_EQ(provenance_from_json("{not json").ByteSizeLong(), 0u);
  EXPECT_EQ(provenance_from_json("").ByteSizeLong(), 0u);
  EXPECT_EQ(provenance_from_json("{\"worker_pid\": 3, \"added_later\": 1}").worker_pid(), 3);
}

// ---- the pipeline in-process -------------------------------------------------------------

const char* kGemm32 =
    "input A: f32[32, 32]\n"
    "input B: f32[32, 32]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

MeasureRequest quick_request(const std::string& program, const std::string& schedule = "") {
  MeasureRequest r;
  r.job_id = 11;
  r.program = program;
  r.schedule = schedule;
  r.settings.repeat = 2;
  r.settings.min_repeat_ms = 1;
  r.settings.threads = 1;
  r.settings.seed = 3;
  return r;
}

TEST(MeasureJobTest, BadProgramIsInstantiationWithLineAndColumn) {
  MeasureResult r = run_measure_job(quick_request("input A: f32[4]\nB[i] = A[i] +* 2\n"));
  EXPECT_EQ(r.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(r.error_message, "program:2:14:");
  EXPECT_FALSE(r.correct);
  EXPECT_EQ(r.job_id, 11u);
  EXPECT_EQ(r.provenance.worker_pid, int64_t(getpid()));
  EXPECT_EQ(r.provenance.settings.repeat, 2);
}

TEST(MeasureJobTest, BadScheduleIsInstantiationWithLineAndColumn) {
  MeasureResult r = run_measure_job(quick_request(kGemm32, "split(C.i, 4, io, ii)\nsplit(C.q, 4, a, b)"));
  EXPECT_EQ(r.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(r.error_message, "schedule:2:1:");
  EXPECT_CONTAINS(r.error_message, "no loop 'q'");
}

TEST(MeasureJobTest, BadSettingsAreInstantiationErrors) {
  MeasureRequest req = quick_request(kGemm32);
  req.settings.repeat = -3;
  MeasureResult r = run_measure_job(req);
  EXPECT_EQ(r.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(r.error_message, "repeat");
}

TEST(MeasureJobTest, InstantiateReportsWhereTextWasWrong) {
  Expected<InstantiatedJob> ok = instantiate_job(kGemm32, "split(C.i, 8, io, ii)");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->nest.outputs.size(), 1u);
  Expected<InstantiatedJob> bad = instantiate_job("input A f32[4]\n", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_CONTAINS(bad.status().message(), "program:1:");
}

// Needs the LLVM backend (compile_cpu_kernel).
TEST(MeasureJobTest, CorrectKernelIsTimedWithStatsAndProvenance) {
  bool compiled_hook = false;
  MeasureJobHooks hooks;
  hooks.on_compiled = [&](const MeasureResult& partial) {
    compiled_hook = true;
    EXPECT_GE(partial.compile_ms, 0);
    return true;
  };
  MeasureResult r = run_measure_job(quick_request(kGemm32, "split(C.j, 8, jo, ji)\nvectorize(C.ji)"), hooks);
  ASSERT_EQ(r.error, MeasureError::kOk) << r.error_message;
  EXPECT_TRUE(compiled_hook);
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.checked_points, 32 * 32);  // small output: every point
  EXPECT_GT(r.compile_ms, 0);
  EXPECT_EQ(r.runtime.repeat, 2);
  EXPECT_EQ(r.runtime.samples_s.size(), 2);
  EXPECT_GT(r.runtime.median_s, 0);
  EXPECT_LE(r.runtime.min_s, r.runtime.median_s);
  EXPECT_LE(r.runtime.median_s, r.runtime.max_s);
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 32 * 32 * 32);
  EXPECT_NEAR(r.gflops, r.flops / r.runtime.median_s / 1e9, 1e-9 * r.gflops);
  EXPECT_EQ(r.provenance.threads, 1);
  EXPECT_FALSE(r.provenance.target_triple.empty());
  EXPECT_FALSE(r.provenance.compiler_version.empty());
  EXPECT_FALSE(r.provenance.device.empty());
}

// Needs the LLVM backend.
TEST(MeasureJobTest, CorruptOutputIsWrongAnswerNeverARuntime) {
  MeasureRequest req = quick_request(kGemm32);
  req.test_fault = TestFault::kCorruptOutput;
  MeasureResult r = run_measure_job(req);
  ASSERT_EQ(r.error, MeasureError::kWrongAnswer) << r.error_message;
  EXPECT_FALSE(r.correct);
  EXPECT_TRUE(r.runtime.samples_s.empty());  // nothing was timed
  EXPECT_EQ(r.gflops, 0);
  EXPECT_CONTAINS(r.error_message, "output C");
  EXPECT_CONTAINS(r.error_message, "expected");
  EXPECT_CONTAINS(r.error_message, "[0, 0]");
}

// Needs the LLVM backend.
TEST(MeasureJobTest, KernelCacheServesRepeatedRequests) {
  KernelCache cache(2);
  MeasureRequest req = quick_request(kGemm32);
  MeasureResult first = run_measure_job(req, {}, &cache);
  ASSERT_EQ(first.error, MeasureError::kOk) << first.error_message;
  EXPECT_FALSE(first.kernel_cache_hit);
  MeasureResult second = run_measure_job(req, {}, &cache);
  ASSERT_EQ(second.error, MeasureError::kOk) << second.error_message;
  EXPECT_TRUE(second.kernel_cache_hit);
  EXPECT_DOUBLE_EQ(second.compile_ms, first.compile_ms);
}

// Needs the LLVM backend.
TEST(MeasureJobTest, EmitsLlvmIrWhenAsked) {
  MeasureRequest req = quick_request(kGemm32);
  req.emit_code_text = true;
  MeasureResult r = run_measure_job(req);
  ASSERT_EQ(r.error, MeasureError::kOk) << r.error_message;
  EXPECT_CONTAINS(r.code_text, "define");
}

// ---- the check of reordered sums ---------------------------------------------------

// One 16384-term f32 dot product per output element, of terms in [-100, 100): the
// sums cancel, so some elements are small next to their rounding, and large enough
// that atol does not cover it.
const char* kLongDot =
    "input A: f32[256, 16384]\n"
    "input B: f32[256, 16384]\n"
    "S[i] += (10.0 * A[i, k]) * (10.0 * B[i, k])\n";

// S of `program` (parsed) with `schedule`, run in the interpreter on `inputs`.
std::vector<HostBuffer> interpreted(const std::string& program, const std::string& schedule,
                                    const std::vector<HostBuffer>& inputs) {
  Expected<InstantiatedJob> job = instantiate_job(program, schedule);
  EXPECT_TRUE(job.ok()) << job.status().to_string();
  if (!job.ok()) return {};
  std::vector<HostBuffer> out = make_output_buffers(job->nest);
  Status st = interpret(job->nest, const_pointers(inputs), pointers(out));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// A legally reordered long sum is correct under the default settings; under the
// fixed rtol and atol alone (1e-4 each) some element was not.
TEST(MeasureJobTest, AReorderedLongSumIsCorrect) {
  Expected<InstantiatedJob> job = instantiate_job(kLongDot, "");
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  const Program& program = *job->program;
  Expected<RunnerSettings> settings = resolve_runner_settings(RunnerSettings());
  ASSERT_TRUE(settings.ok());
  const std::vector<HostBuffer> inputs = make_random_inputs(program, settings->seed);
  const std::vector<HostBuffer> reordered = interpreted(kLongDot, "split(S.k, 8, ko, ki)\nrfactor(S.ki, SR)", inputs);
  ASSERT_EQ(reordered.size(), 1u);
  MeasureResult r = check_outputs(program, {"S"}, inputs, reordered, *settings);
  EXPECT_EQ(r.error, MeasureError::kOk) << r.error_message;
  EXPECT_EQ(r.checked_points, 256);
  ProgramEvaluator evaluator(program, const_pointers(inputs));
  Comparison fixed = compare_with_evaluator(evaluator, "S", reordered[0], Tolerance{settings->rtol, settings->atol},
                                            settings->check_points, 0);
  EXPECT_FALSE(fixed.match) << "the fixed tolerance passes it too; the test proves nothing: " << fixed.describe();
}

// Needs the LLVM backend: the compiled kernel of a vectorized, split reduction.
TEST(MeasureJobTest, AReorderedLongSumIsMeasured) {
  MeasureRequest req = quick_request(kLongDot, "split(S.k, 8, ko, ki)\nrfactor(S.ki, SR)\nvectorize(SR.ki)");
  MeasureResult r = run_measure_job(req);
  ASSERT_EQ(r.error, MeasureError::kOk) << r.error_message;
  EXPECT_TRUE(r.correct);
}

// Kernels that drop a term, add one twice or read one index off are WRONG_ANSWER.
TEST(MeasureJobTest, AWrongLongSumIsWrongAnswer) {
  Expected<InstantiatedJob> job = instantiate_job(kLongDot, "");
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  RunnerSettings settings = *resolve_runner_settings(RunnerSettings());
  const std::vector<HostBuffer> inputs = make_random_inputs(*job->program, settings.seed);
  const char* const wrong[] = {
      // The first term dropped.
      "input A: f32[256, 16384]\n"
      "input B: f32[256, 16384]\n"
      "S[i] += (10.0 * A[i, k + 1]) * (10.0 * B[i, k + 1]) where k in 0..16383\n",
      // The last term added twice.
      "input A: f32[256, 16384]\n"
      "input B: f32[256, 16384]\n"
      "T[i] += (10.0 * A[i, k]) * (10.0 * B[i, k])\n"
      "S[i] = T[i] + (10.0 * A[i, 16383]) * (10.0 * B[i, 16383])\n",
      // One operand read one index off.
      "input A: f32[256, 16384]\n"
      "input B: f32[256, 16384]\n"
      "S[i] += (10.0 * A[i, k + 1]) * (10.0 * B[i, k + 0]) where k in 0..16383\n",
  };
  for (const char* text : wrong) {
    const std::vector<HostBuffer> out = interpreted(text, "", inputs);
    ASSERT_EQ(out.size(), 1u);
    MeasureResult r = check_outputs(*job->program, {"S"}, inputs, out, settings);
    EXPECT_EQ(r.error, MeasureError::kWrongAnswer) << text;
    EXPECT_CONTAINS(r.error_message, "output S: ");
    EXPECT_CONTAINS(r.error_message, "allowed error");
  }
}

TEST(KernelCacheTest, EvictsTheLeastRecentlyUsed) {
  KernelCache cache(2);
  cache.insert("a", {nullptr, 1});
  cache.insert("b", {nullptr, 2});
  ASSERT_NE(cache.find("a"), nullptr);  // a is now the most recent
  cache.insert("c", {nullptr, 3});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find("b"), nullptr);
  ASSERT_NE(cache.find("a"), nullptr);
  EXPECT_EQ(cache.find("a")->compile_ms, 1);
  ASSERT_NE(cache.find("c"), nullptr);
  KernelCache none(0);
  none.insert("a", {nullptr, 1});
  EXPECT_EQ(none.find("a"), nullptr);

  MeasureRequest x, y;
  x.program = "p";
  x.schedule = "s";
  y.program = "p";
  y.schedule = "s";
  y.emit_code_text = true;
  EXPECT_NE(KernelCache::key(x), KernelCache::key(y));
}

}  // namespace
}  // namespace tensorgym
