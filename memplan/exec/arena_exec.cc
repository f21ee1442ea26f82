#include "memplan/exec/arena_exec.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "memplan/op_stages.h"
#include "support/random.h"
#include "support/read_slack.h"

namespace tensorgym {
namespace {

// 64-byte aligned, with zeroed slack on both sides that kernels reading a tensor in
// it may touch (support/read_slack.h): every tensor and scratch area lies in one.
struct AlignedBuffer {
  float* data = nullptr;
  explicit AlignedBuffer(int64_t bytes) {
    const size_t size = size_t((std::max<int64_t>(bytes, 64) + 63) / 64 * 64);
    const size_t slack = size_t(kInputReadSlackBytes);
    char* base = static_cast<char*>(std::aligned_alloc(64, size + 2 * slack));
    if (!base) throw std::bad_alloc();
    std::memset(base, 0, slack);
    std::memset(base + slack + size, 0, slack);
    data = reinterpret_cast<float*>(base + slack);
  }
  ~AlignedBuffer() { std::free(reinterpret_cast<char*>(data) - kInputReadSlackBytes); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

uint64_t name_seed(const std::string& name, uint64_t seed) {
  uint64_t h = seed * 0x9e3779b97f4a7c15ull + 1;
  for (char c : name) h = (h ^ uint64_t(static_cast<unsigned char>(c))) * 0x100000001b3ull;
  return h;
}

void fill_random(float* data, int64_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) data[i] = float((rng.uniform() * 2 - 1) * scale);
}

}  // namespace

Expected<std::shared_ptr<const Executable>> GraphKernelCache::get(const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(text);
    if (it != kernels_.end()) return it->second;
  }
  Expected<Program> parsed = parse_program(text);
  if (!parsed.ok())
    return internal_error("operator program does not parse: " + parsed.status().message() + "\n" + text);
  auto program = std::make_shared<const Program>(std::move(*parsed));
  Schedule schedule(program);
  const Backend& backend = host_backend();
  TG_ASSIGN_OR_RETURN(LoopNest nest, lower(schedule, backend.lowering()));
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> kernel, backend.compile(nest));
  std::lock_guard<std::mutex> lock(mu_);
  kernels_.emplace(text, kernel);
  return kernel;
}

size_t GraphKernelCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.size();
}

struct PreparedGraph::Memory {
  std::vector<std::unique_ptr<AlignedBuffer>> owned;
};

PreparedGraph::~PreparedGraph() = default;

Expected<std::unique_ptr<PreparedGraph>> PreparedGraph::prepare(const Graph& graph, const GraphDecisions& decisions,
                                                                const Offsets* offsets, int64_t alignment,
                                                                GraphKernelCache& cache, uint64_t seed) {
  for (const GraphTensor& t : graph.tensors)
    if (t.dtype != "f32") return unimplemented("tensor '" + t.name + "' is " + t.dtype + ": only f32 graphs run");
  TG_ASSIGN_OR_RETURN(GraphLayout layout, layout_graph(graph, decisions, alignment));
  std::unique_ptr<PreparedGraph> p(new PreparedGraph());
  p->graph_ = &graph;
  p->memory_ = std::make_unique<Memory>();
  std::vector<std::unique_ptr<AlignedBuffer>>& owned = p->memory_->owned;
  std::vector<float*> tensor_ptr(graph.tensors.size(), nullptr);
  std::vector<char*> scratch_ptr(graph.ops.size(), nullptr);
  if (offsets) {
    if (offsets->size() != layout.instance.buffers.size())
      return invalid_argument("the plan has " + std::to_string(offsets->size()) + " offsets for " +
                              std::to_string(layout.instance.buffers.size()) + " buffers");
    for (size_t b = 0; b < offsets->size(); ++b)
      if ((*offsets)[b] < 0 || (*offsets)[b] % std::max<int64_t>(1, alignment) != 0)
        return invalid_argument("buffer " + std::to_string(b) + " has offset " + std::to_string((*offsets)[b]) +
                                ": offsets are non-negative multiples of the alignment " + std::to_string(alignment));
    const int64_t size = arena_size(layout.instance, *offsets);
    owned.push_back(std::make_unique<AlignedBuffer>(size));
    char* arena = reinterpret_cast<char*>(owned.back()->data);
    std::memset(arena, 0xff, size_t(size));  // NaN everywhere: reading unwritten memory shows
    for (size_t t = 0; t < graph.tensors.size(); ++t)
      if (layout.buffer_of_tensor[t] >= 0)
        tensor_ptr[t] = reinterpret_cast<float*>(arena + (*offsets)[size_t(layout.buffer_of_tensor[t])]);
    for (size_t o = 0; o < graph.ops.size(); ++o)
      if (layout.scratch_of_op[o] >= 0) scratch_ptr[o] = arena + (*offsets)[size_t(layout.scratch_of_op[o])];
  } else {
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
      if (graph.tensors[t].kind == TensorKind::kConstant) continue;
      owned.push_back(std::make_unique<AlignedBuffer>(graph.tensors[t].bytes));
      tensor_ptr[t] = owned.back()->data;
    }
    for (size_t o = 0; o < graph.ops.size(); ++o) {
      if (graph.ops[o].scratch_bytes <= 0) continue;
      owned.push_back(std::make_unique<AlignedBuffer>(graph.ops[o].scratch_bytes));
      scratch_ptr[o] = reinterpret_cast<char*>(owned.back()->data);
    }
  }
  // Weights outside the arena; inputs in it. Values depend on the name and seed only.
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& gt = graph.tensors[t];
    const int64_t n = shape_elements(gt.shape);
    if (gt.kind == TensorKind::kConstant) {
      owned.push_back(std::make_unique<AlignedBuffer>(gt.bytes));
      tensor_ptr[t] = owned.back()->data;
      // Scaled so activations stay of order one through deep networks.
      const int64_t fan_in = gt.shape.size() >= 2 ? n / gt.shape[0] : 1;
      fill_random(tensor_ptr[t], n, name_seed(gt.name, seed),
                  float(1.0 / std::sqrt(double(std::max<int64_t>(1, fan_in)))));
    } else if (gt.kind == TensorKind::kInput) {
      std::vector<float> values(static_cast<size_t>(n));
      fill_random(values.data(), n, name_seed(gt.name, seed), 1.0f);
      p->inputs_.emplace_back(tensor_ptr[t], std::move(values));
    } else if (gt.kind == TensorKind::kOutput) {
      p->outputs_.emplace_back(int(t), tensor_ptr[t]);
    }
  }
  for (int op_index : decisions.order) {
    const GraphOp& op = graph.ops[size_t(op_index)];
    TG_ASSIGN_OR_RETURN(OpProgram program, op_program(graph, op));
    float* out = tensor_ptr[size_t(op.outputs[0])];
    Step& step = p->steps_.emplace_back();
    step.op = op_index;
    step.first_launch = step.end_launch = p->launches_.size();
    step.output = out;
    step.elements = shape_elements(graph.tensors[size_t(op.outputs[0])].shape);
    if (op.type == "reshape" && out == tensor_ptr[size_t(op.inputs[0])]) continue;  // a view of the same bytes
    for (size_t k = 0; k < program.stages.size(); ++k) {
      const OpStage& stage = program.stages[k];
      Launch launch;
      TG_ASSIGN_OR_RETURN(launch.kernel, cache.get(program.stage_text(graph, op, k)));
      for (const std::string& r : stage.reads) {
        if (r[0] == 'X') {
          launch.args.push_back(tensor_ptr[size_t(op.inputs[size_t(std::stoi(r.substr(1)))])]);
        } else {
          size_t j = 0;
          while (program.stages[j].name != r) ++j;
          launch.args.push_back(scratch_ptr[size_t(op_index)] + op_stage_offset(program, j));
        }
      }
      launch.args.push_back(k + 1 == program.stages.size()
                                ? static_cast<void*>(out)
                                : static_cast<void*>(scratch_ptr[size_t(op_index)] + op_stage_offset(program, k)));
      p->launches_.push_back(std::move(launch));
    }
    step.end_launch = p->launches_.size();
  }
  return p;
}

void PreparedGraph::write_inputs() {
  for (const auto& [where, values] : inputs_) std::memcpy(where, values.data(), values.size() * sizeof(float));
}

void PreparedGraph::run_step(size_t step, int threads) {
  for (size_t l = steps_[step].first_launch; l < steps_[step].end_launch; ++l)
    launches_[l].kernel->run(launches_[l].args.data(), std::max(1, threads));
}

std::vector<float> PreparedGraph::step_output(size_t step) const {
  return std::vector<float>(steps_[step].output, steps_[step].output + steps_[step].elements);
}

void PreparedGraph::run(int threads) {
  write_inputs();
  for (const Launch& launch : launches_) launch.kernel->run(launch.args.data(), std::max(1, threads));
}

GraphRun PreparedGraph::result() const {
  GraphRun run;
  for (const auto& [t, data] : outputs_) {
    const int64_t n = shape_elements(graph_->tensors[size_t(t)].shape);
    run.outputs.emplace_back(data, data + n);
    run.output_names.push_back(graph_->tensors[size_t(t)].name);
  }
  return run;
}

Expected<GraphRun> run_graph(const Graph& graph, const GraphDecisions& decisions, const Offsets* offsets,
                             int64_t alignment, GraphKernelCache& cache, uint64_t seed) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> prepared,
                      PreparedGraph::prepare(graph, decisions, offsets, alignment, cache, seed));
  prepared->run(1);
  return prepared->result();
}

double max_output_difference(const GraphRun& a, const GraphRun& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.outputs.size() != b.outputs.size()) return kInf;
  double worst = 0;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (a.outputs[i].size() != b.outputs[i].size()) return kInf;
    for (size_t k = 0; k < a.outputs[i].size(); ++k) {
      const float x = a.outputs[i][k], y = b.outputs[i][k];
      if (std::isnan(x) != std::isnan(y)) return kInf;
      if (!std::isnan(x)) worst = std::max(worst, double(std::fabs(x - y)));
    }
  }
  return worst;
}

}  // namespace tensorgym
