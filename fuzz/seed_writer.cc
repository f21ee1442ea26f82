// Writes the seeds the datasets generate, one folder per harness: the programs and
// expert schedules of benchmark://ops-v0; the lifetimes of model graphs of
// benchmark://graphs-v0 in program order; requests to the service (service_fuzz.cc's
// record format) drawn from datasets/ops/; the ONNX models of the tests
// (tests/onnx_models.h, when the build has ONNX). Run by the build:
//   seed_writer SOURCE_DIR OUT_DIR   ->  OUT_DIR/{program_parser,schedule_trace,
//                                        lifetimes_csv,service,onnx_import}/
// The seeds that are files (datasets/ops/, fuzz/seeds/) are copied there by CMake.
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "datasets/graphs.h"
#include "datasets/lifetimes_csv.h"
#include "datasets/registry.h"
#include "memplan/lifetimes.h"
#include "proto/tensorgym.pb.h"
#include "tests/onnx_models.h"

namespace fs = std::filesystem;
namespace proto = tensorgym::proto;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "seed_writer: cannot read {}\n", path.string());
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) {
    fmt::print(stderr, "seed_writer: cannot write {}\n", path.string());
    std::exit(1);
  }
}

// Every ops-v0 program at batch 1 (the suite's families and sizes), and every expert
// schedule.
void write_ops_seeds(const fs::path& programs, const fs::path& schedules) {
  tensorgym::Expected<const tensorgym::Dataset*> ops = tensorgym::DatasetRegistry::global().find_dataset("ops-v0");
  if (!ops.ok()) {
    fmt::print(stderr, "seed_writer: {}\n", ops.status().message());
    std::exit(1);
  }
  const std::vector<tensorgym::BenchmarkInfo> all = (*ops)->list(0, -1);
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string name = all[i].uri.substr(all[i].uri.rfind('/') + 1);
    tensorgym::Expected<tensorgym::Benchmark> b = (*ops)->get(name);
    if (!b.ok()) continue;
    if (name.find("-b") == std::string::npos) write(programs / ("ops-v0_" + name + ".tg"), b->program_text);
    if (!b->expert_schedule.empty()) write(schedules / ("ops-v0_" + name + ".expert.sched"), b->expert_schedule);
  }
}

// Model graphs' buffers in program order, as lifetimes CSV.
void write_lifetimes_seeds(const fs::path& dir) {
  const std::pair<const char*, tensorgym::Expected<tensorgym::Graph>> graphs[] = {
      {"mobilenet_v2", tensorgym::mobilenet_v2_graph()},
      {"resnet50", tensorgym::resnet50_graph()},
      {"randwire_ws_1", tensorgym::randwire_ws_graph(1)},
  };
  for (const auto& [name, graph] : graphs) {
    if (!graph.ok()) continue;
    tensorgym::GraphDecisions decisions;
    for (size_t op = 0; op < graph->ops.size(); ++op) decisions.order.push_back(int(op));
    tensorgym::Expected<tensorgym::GraphLayout> layout = tensorgym::layout_graph(*graph, decisions);
    if (layout.ok()) write(dir / (std::string(name) + ".csv"), tensorgym::lifetimes_to_csv(layout->instance));
  }
}

// Worker streams (codegen/measure/frame.h): a hello, a request with a payload, two
// frames back to back, a truncated frame.
void write_frame_seeds(const fs::path& dir) {
  auto frame = [](uint8_t type, const std::string& payload) {
    std::string f = {'T', 'G', char(1), char(type)};
    for (int i = 0; i < 4; ++i) f += char((payload.size() >> (8 * i)) & 0xff);
    return f + payload;
  };
  proto::MeasureRequest request;
  request.set_program("input A: f32[16]\nB[i] = A[i] * 2.0\n");
  write(dir / "hello", frame(1, ""));
  write(dir / "request", frame(2, request.SerializeAsString()));
  write(dir / "compiled_go_result", frame(3, "") + frame(4, "") + frame(5, ""));
  write(dir / "truncated", frame(2, request.SerializeAsString()).substr(0, 12));
}

// The method numbers of service_fuzz.cc's kMethods.
enum Method : uint8_t {
  kGetVersion,
  kGetSpaces,
  kListDatasets,
  kListBenchmarks,
  kAddBenchmark,
  kStartSession,
  kStep,
  kForkSession,
  kEndSession,
  kGetState,
  kValidate,
  kSendSessionParameter,
  kSession,
  kEvaluate,
};

// One input: a sequence of calls.
class Calls {
 public:
  Calls& add(Method m, const google::protobuf::Message& request) {
    const std::string bytes = request.SerializeAsString();
    out_ += char(m);
    out_ += char(bytes.size() & 0xff);
    out_ += char((bytes.size() >> 8) & 0xff);
    out_ += bytes;
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// A schedule file's primitives, one action each (lines and ';'-separated parts;
// comments dropped).
std::vector<std::string> actions_of(const std::string& sched) {
  std::vector<std::string> out;
  size_t line_start = 0;
  while (line_start < sched.size()) {
    size_t line_end = sched.find('\n', line_start);
    if (line_end == std::string::npos) line_end = sched.size();
    std::string line = sched.substr(line_start, line_end - line_start);
    line = line.substr(0, line.find('#'));
    size_t at = 0;
    while (at <= line.size()) {
      size_t end = line.find(';', at);
      if (end == std::string::npos) end = line.size();
      const std::string part = line.substr(at, end - at);
      const size_t b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
      if (b != std::string::npos) out.push_back(part.substr(b, e - b + 1));
      at = end + 1;
    }
    line_start = line_end + 1;
  }
  return out;
}

proto::StepRequest step_with(const std::vector<std::string>& actions, std::vector<std::string> observations) {
  proto::StepRequest step;
  for (const std::string& a : actions) step.add_action()->set_string_value(a);
  for (const std::string& o : observations) step.add_observation_space(o);
  return step;
}

void write_service_seeds(const fs::path& src, const fs::path& dir) {
  const fs::path ops = src / "datasets/ops";
  const std::string gemm128 = read_text(ops / "gemm_128.tg");
  const std::vector<std::string> tiled = actions_of(read_text(ops / "gemm_tiled.sched"));
  const std::vector<std::string> conv_expert = actions_of(read_text(ops / "conv2d_resnet_3x3.expert.sched"));

  proto::GetSpacesRequest spaces;
  spaces.set_env("schedule-v0");
  proto::ListBenchmarksRequest list;
  list.set_dataset("benchmark://ops-v0");
  list.set_page_size(4);
  write(dir / "catalogue", Calls()
                               .add(kGetVersion, proto::GetVersionRequest())
                               .add(kGetSpaces, spaces)
                               .add(kListDatasets, proto::ListDatasetsRequest())
                               .add(kListBenchmarks, list)
                               .add(kListBenchmarks, list)
                               .bytes());

  // An episode on a user benchmark (datasets/ops/gemm_128.tg) with the tiled schedule.
  proto::AddBenchmarkRequest add;
  add.set_name("gemm_128");
  add.set_program(gemm128);
  proto::StartSessionRequest start;
  start.set_env("schedule-v0");
  start.set_benchmark("benchmark://user-v0/gemm_128");
  start.add_observation_space("loop_nest");
  start.add_observation_space("action_mask");
  proto::SendSessionParameterRequest param;
  param.set_key("runner.repeat");
  param.set_value("3");
  write(dir / "user_episode", Calls()
                                  .add(kAddBenchmark, add)
                                  .add(kStartSession, start)
                                  .add(kSendSessionParameter, param)
                                  .add(kStep, step_with(tiled, {"loop_nest", "features", "est_cycles"}))
                                  .add(kForkSession, proto::ForkSessionRequest())
                                  .add(kGetState, proto::GetStateRequest())
                                  .add(kEndSession, proto::EndSessionRequest())
                                  .bytes());

  // datasets/ops/conv2d_resnet_3x3 and its expert schedule, one action a step, then a
  // Session stream.
  proto::AddBenchmarkRequest add_conv;
  add_conv.set_name("conv2d_resnet_3x3");
  add_conv.set_program(read_text(ops / "conv2d_resnet_3x3.tg"));
  proto::StartSessionRequest conv;
  conv.set_env("schedule-v0");
  conv.set_benchmark("benchmark://user-v0/conv2d_resnet_3x3");
  conv.add_reward_space("est_cycles");
  Calls conv_calls;
  conv_calls.add(kAddBenchmark, add_conv).add(kStartSession, conv);
  for (size_t i = 0; i < conv_expert.size() && i < 5; ++i) conv_calls.add(kStep, step_with({conv_expert[i]}, {"est_cycles"}));
  conv_calls.add(kSession, step_with({"invalid(C)"}, {"action_mask"}));
  write(dir / "conv_steps", conv_calls.bytes());

  // memory-v0 on a model graph.
  proto::StartSessionRequest mem;
  mem.set_env("memory-v0");
  mem.set_benchmark("benchmark://graphs-v0/mobilenet_v2");
  mem.add_observation_space("action_mask");
  proto::StepRequest mem_step;
  mem_step.add_action()->set_int64_value(0);
  mem_step.add_observation_space("arena_size");
  write(dir / "memory_episode", Calls().add(kStartSession, mem).add(kStep, mem_step).bytes());

  // A state to validate: the tiled schedule, with a deterministic reward.
  proto::ValidateRequest validate;
  proto::EpisodeState* state = validate.mutable_state();
  state->set_env("schedule-v0");
  state->set_benchmark("benchmark://ops-v0/gmm-1");
  for (const std::string& a : tiled) state->add_actions(a);
  state->set_reward_space("est_cycles");
  write(dir / "validate", Calls().add(kValidate, validate).bytes());

  // A batch job with its program inline.
  proto::EvaluateRequest eval;
  proto::EvaluateJob* job = eval.add_job();
  job->set_key("gemm_128-tiled");
  job->set_program(gemm128);
  job->set_actions(read_text(ops / "gemm_tiled.sched"));
  job->add_observations("est_cycles");
  job->set_timeout_s(1);
  write(dir / "evaluate", Calls().add(kEvaluate, eval).bytes());
}

#ifdef TENSORGYM_HAVE_ONNX
// The models of tests/onnx_import_test.cc, and one with operators it does not support.
void write_onnx_seeds(const fs::path& dir) {
  namespace m = tensorgym::onnx_models;
  write(dir / "small_cnn.onnx", m::small_cnn().SerializeAsString());
  write(dir / "attention_block.onnx", m::attention_block().SerializeAsString());
  onnx::ModelProto unsupported = m::small_cnn();
  m::add_node(unsupported.mutable_graph(), "LSTM", {"y"}, {"z"});
  write(dir / "unsupported.onnx", unsupported.SerializeAsString());
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: seed_writer SOURCE_DIR OUT_DIR\n");
    return 2;
  }
  const fs::path src = argv[1], out = argv[2];
  for (const char* harness : {"program_parser", "schedule_trace", "lifetimes_csv", "frame"})
    fs::create_directories(out / harness);
  write_frame_seeds(out / "frame");
  write_ops_seeds(out / "program_parser", out / "schedule_trace");
  write_lifetimes_seeds(out / "lifetimes_csv");
  fs::create_directories(out / "service");
  write_service_seeds(src, out / "service");
  fs::create_directories(out / "onnx_import");
#ifdef TENSORGYM_HAVE_ONNX
  write_onnx_seeds(out / "onnx_import");
#else
  write(out / "onnx_import" / "not_onnx", "this build has no ONNX import");
#endif
  return 0;
}
