// The dataset registry, benchmark URIs and the standard suites: every benchmark
// parses, prints back and lowers; each operator family computes what an independent
// direct formula (written here, not taken from the programs) says; expert schedules
// apply; the random generator is deterministic and valid; file:// and user programs;
// URI errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "datasets/benchmark_uri.h"
#include "datasets/op_library.h"
#include "datasets/registry.h"
#include "datasets/suites.h"
#include "support/random.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

std::string source_path(const std::string& relative) { return std::string(TENSORGYM_SOURCE_DIR) + "/" + relative; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The registry is built once per test binary; user benchmarks go to local ones.
DatasetRegistry& registry() {
  static DatasetRegistry* r = new DatasetRegistry();
  return *r;
}

Benchmark resolve_ok(const std::string& uri) {
  Expected<Benchmark> b = registry().resolve(uri);
  EXPECT_TRUE(b.ok()) << uri << ": " << b.status().to_string();
  return b.ok() ? *b : Benchmark{};
}

ProgramPtr parse_ok(const std::string& text) {
  Expected<Program> p = parse_program(text, builtin_program_limits());
  EXPECT_TRUE(p.ok()) << p.status().to_string() << "\n" << text;
  return p.ok() ? std::make_shared<const Program>(std::move(*p)) : nullptr;
}

// "N=1 H=224 CI=3 relu" -> {N: 1, H: 224, CI: 3}
std::map<std::string, int64_t> shape_params(const std::string& shape) {
  std::map<std::string, int64_t> out;
  std::istringstream in(shape);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string value = word.substr(eq + 1);
    if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0])) && value.find('/') == std::string::npos &&
        value.find('e') == std::string::npos)
      out[word.substr(0, eq)] = std::stoll(value);
  }
  return out;
}

// ---- every benchmark ----------------------------------------------------------------

TEST(Datasets, RegistryListsTheDatasetsWithTheirSizes) {
  std::map<std::string, int64_t> sizes;
  for (const Dataset* d : registry().datasets()) sizes[d->name()] = d->size();
  EXPECT_EQ(sizes["benchmark://ops-v0"], 80);
  EXPECT_EQ(sizes["benchmark://ops-heldout-v0"], 20);
  EXPECT_EQ(sizes["benchmark://resnet50-v0"], 21);
  EXPECT_EQ(sizes["benchmark://bert-v0"], 9);
  EXPECT_EQ(sizes["benchmark://mobilenetv2-v0"], 29);
  EXPECT_EQ(sizes["benchmark://fpga-v0"], 13);  // ResNet-18 C2..C11 and three GEMMs, int8 and blocked
  EXPECT_EQ(sizes["generator://random-ops-v0"], -1);
  EXPECT_EQ(sizes["benchmark://user-v0"], 0);
  EXPECT_EQ(sizes["benchmark://graphs-v0"], -1);  // model graphs for memory-v0 (randwire is a family)
  EXPECT_EQ(sizes["benchmark://inline-v0"], 0);   // a cache of programs sent in jobs: never listed
  EXPECT_EQ(sizes.size(), 10u);
  for (const Dataset* d : registry().datasets()) EXPECT_FALSE(d->description().empty()) << d->name();
}

TEST(Datasets, EveryFiniteBenchmarkParsesPrintsBackAndLowers) {
  int count = 0;
  for (const Dataset* d : registry().datasets()) {
    if (d->size() < 0) continue;
    const std::vector<BenchmarkInfo> infos = d->list(0, -1);
    ASSERT_EQ(int64_t(infos.size()), d->size()) << d->name();
    std::set<std::string> uris;
    for (const BenchmarkInfo& info : infos) {
      SCOPED_TRACE(info.uri);
      EXPECT_TRUE(uris.insert(info.uri).second) << "duplicate";
      EXPECT_EQ(info.uri.rfind(d->name() + "/", 0), 0u);
      EXPECT_FALSE(info.shape.empty());
      Benchmark b = resolve_ok(info.uri);
      ASSERT_TRUE(b.program);
      EXPECT_EQ(b.uri, info.uri);
      EXPECT_EQ(b.shape, info.shape);
      // The text is the program; it prints back to an equal program.
      ProgramPtr again = parse_ok(b.program_text);
      ASSERT_TRUE(again);
      EXPECT_TRUE(structural_equal(*b.program, *again));
      ProgramPtr printed = parse_ok(b.program->to_text());
      ASSERT_TRUE(printed);
      EXPECT_TRUE(structural_equal(*b.program, *printed)) << b.program->to_text();
      Expected<LoopNest> nest = lower(Schedule(b.program));
      EXPECT_TRUE(nest.ok()) << nest.status().to_string();
      ++count;
    }
  }
  EXPECT_EQ(count, 80 + 20 + 21 + 9 + 29 + 13);
}

TEST(Datasets, ResolvingTwiceGivesTheSameProgram) {
  for (const char* uri : {"benchmark://ops-v0/c2d-3", "benchmark://bert-v0/softmax", "generator://random-ops-v0/42"}) {
    Benchmark a = resolve_ok(uri);
    Benchmark b = resolve_ok(uri);
    EXPECT_TRUE(a.program);
    EXPECT_EQ(a.program.get(), b.program.get()) << uri;
  }
}

TEST(Datasets, ConcurrentResolvesShareOneProgram) {
  DatasetRegistry local;
  std::vector<const Program*> seen(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] {
      Expected<Benchmark> b = local.resolve(t % 2 ? "benchmark://ops-v0/t2d-2" : "ops-v0/t2d-2");
      seen[t] = b.ok() ? b->program.get() : nullptr;
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(seen[0]);
  for (const Program* p : seen) EXPECT_EQ(p, seen[0]);
}

TEST(Datasets, OpsSuiteNamesAndShapes) {
  const Dataset* ops = *registry().find_dataset("ops-v0");
  std::vector<BenchmarkInfo> infos = ops->list(0, -1);
  std::set<std::string> names;
  for (const BenchmarkInfo& i : infos) names.insert(i.uri.substr(std::string("benchmark://ops-v0/").size()));
  for (const char* family : {"gmm", "c1d", "c2d", "c3d", "grp", "dil", "dep", "t2d", "cap", "nrm"}) {
    for (int n = 1; n <= 4; ++n) {
      EXPECT_TRUE(names.count(std::string(family) + "-" + std::to_string(n))) << family << n;
      EXPECT_TRUE(names.count(std::string(family) + "-" + std::to_string(n) + "-b16")) << family << n;
    }
  }
  auto out_shape = [](const std::string& uri) {
    Benchmark b = resolve_ok(uri);
    if (!b.program) return std::vector<int64_t>{};
    EXPECT_EQ(b.program->outputs.size(), 1u) << uri;
    return b.program->shape_of(b.program->outputs.back());
  };
  using S = std::vector<int64_t>;
  EXPECT_EQ(out_shape("benchmark://ops-v0/gmm-2"), (S{512, 32}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/gmm-2-b16"), (S{16, 512, 32}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c1d-1"), (S{1, 128, 128}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c1d-2"), (S{1, 256, 64}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c2d-1"), (S{1, 64, 112, 112}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c2d-1-b16"), (S{16, 64, 112, 112}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c3d-1"), (S{1, 64, 8, 112, 112}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/c3d-3"), (S{1, 256, 16, 14, 14}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/grp-1"), (S{1, 128, 28, 28}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/grp-4"), (S{1, 512, 7, 7}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/dil-1"), (S{1, 64, 109, 109}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/dil-3"), (S{1, 256, 12, 12}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/dep-2"), (S{1, 64, 56, 56}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/t2d-1"), (S{1, 256, 8, 8}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/t2d-4"), (S{1, 3, 64, 64}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/cap-1"), (S{1, 32, 8, 8, 4, 4}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/nrm-4"), (S{1}));
  EXPECT_EQ(out_shape("benchmark://ops-v0/nrm-4-b16"), (S{16}));
  // Padding stages only where the padding is not zero.
  EXPECT_TRUE(resolve_ok("benchmark://ops-v0/c2d-1").program->find_stage("P"));
  EXPECT_FALSE(resolve_ok("benchmark://ops-v0/c2d-2").program->find_stage("P"));
}

// The convolutions' weights are constant inputs in ops-v0 and ops-heldout-v0 (a root
// pack of them is done once, ahead of the timed runs); the data, gmm's and nrm's
// inputs are not.
TEST(Datasets, OpsSuiteWeightsAreConstantInputs) {
  for (const char* dataset : {"ops-v0", "ops-heldout-v0"}) {
    for (const BenchmarkInfo& i : (*registry().find_dataset(dataset))->list(0, -1)) {
      Benchmark b = resolve_ok(i.uri);
      ASSERT_TRUE(b.program) << i.uri;
      const std::string family = i.uri.substr(i.uri.rfind('/') + 1, 3);
      const bool has_weights = family != "gmm" && family != "nrm";
      for (const TensorInput& in : b.program->inputs)
        EXPECT_EQ(in.constant, has_weights && in.name == "W") << i.uri << " " << in.name;
    }
  }
}

// The held-out shapes: two per family, batch 1, named <family>-h<n>, none of them an
// ops-v0 shape (a held-out shape equal to a development one would hold nothing out).
TEST(Datasets, HeldOutOpsShapesAreNotOpsV0Shapes) {
  const Dataset* ops = *registry().find_dataset("ops-v0");
  const Dataset* heldout = *registry().find_dataset("ops-heldout-v0");
  std::map<std::string, std::set<std::string>> shapes;  // family -> shape texts
  for (const BenchmarkInfo& i : ops->list(0, -1)) {
    const std::string name = i.uri.substr(i.uri.rfind('/') + 1);
    shapes[name.substr(0, 3)].insert(i.shape);
  }
  std::map<std::string, int> per_family;
  for (const BenchmarkInfo& i : heldout->list(0, -1)) {
    const std::string name = i.uri.substr(i.uri.rfind('/') + 1);
    const std::string family = name.substr(0, 3);
    EXPECT_EQ(name.substr(3, 2), "-h") << name;
    EXPECT_TRUE(shapes.count(family)) << name;
    EXPECT_FALSE(shapes[family].count(i.shape)) << name << " is an ops-v0 shape: " << i.shape;
    ++per_family[family];
    Benchmark b = resolve_ok(i.uri);
    ASSERT_TRUE(b.program) << i.uri;
  }
  EXPECT_EQ(per_family.size(), 10u);
  for (const auto& [family, n] : per_family) EXPECT_EQ(n, 2) << family;
  EXPECT_EQ(resolve_ok("benchmark://ops-heldout-v0/gmm-h1").program->shape_of("C"), (std::vector<int64_t>{128, 768}));
}

TEST(Datasets, ListHonoursOffsetAndLimit) {
  const Dataset* ops = *registry().find_dataset("benchmark://ops-v0");
  EXPECT_EQ(ops->list(78, 10).size(), 2u);
  EXPECT_EQ(ops->list(0, 3).size(), 3u);
  EXPECT_EQ(ops->list(0, 3)[0].uri, "benchmark://ops-v0/gmm-1");
  EXPECT_EQ(ops->list(0, 3)[0].shape, "N=128 M=128 K=128");
  EXPECT_TRUE(ops->list(1000, 5).empty());
  EXPECT_EQ(ops->list(-5, 1)[0].uri, "benchmark://ops-v0/gmm-1");
  const Dataset* gen = *registry().find_dataset("random-ops-v0");
  std::vector<BenchmarkInfo> seeds = gen->list(5, 3);
  ASSERT_EQ(seeds.size(), 3u);
  EXPECT_EQ(seeds[0].uri, "generator://random-ops-v0/5");
  EXPECT_EQ(seeds[2].uri, "generator://random-ops-v0/7");
  EXPECT_EQ(gen->list(0, 4).size(), 4u);
  EXPECT_EQ(seeds[1].shape, resolve_ok("generator://random-ops-v0/6").shape);
}

// ---- expert schedules and the files they come from ----------------------------------

TEST(Datasets, ExpertScheduleCopiesMatchTheirFiles) {
  EXPECT_EQ(std::string(kGemm1024ExpertSchedule), read_file(source_path("datasets/ops/gemm_1024.expert.sched")));
  EXPECT_EQ(std::string(kConv2dResnet3x3ExpertSchedule),
            read_file(source_path("datasets/ops/conv2d_resnet_3x3.expert.sched")));
}

TEST(Datasets, Gmm4IsTheGemm1024ProgramAndItsExpertScheduleApplies) {
  Benchmark b = resolve_ok("benchmark://ops-v0/gmm-4");
  ASSERT_TRUE(b.program);
  ProgramPtr file = parse_ok(read_file(source_path("datasets/ops/gemm_1024.tg")));
  ASSERT_TRUE(file);
  EXPECT_TRUE(structural_equal(*b.program, *file));
  ASSERT_FALSE(b.expert_schedule.empty());
  Expected<Schedule> s = Schedule::from_text(b.program, b.expert_schedule);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_GT(s->trace().steps.size(), 5u);
  Expected<LoopNest> nest = lower(*s);
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  // Only gmm-4 has one in ops-v0.
  for (const BenchmarkInfo& i : (*registry().find_dataset("ops-v0"))->list(0, -1)) {
    if (i.uri != b.uri) {
      EXPECT_TRUE(resolve_ok(i.uri).expert_schedule.empty()) << i.uri;
    }
  }
}

TEST(Datasets, ResnetLayerIsTheConv2dResnet3x3FileAndItsExpertScheduleApplies) {
  Benchmark b = resolve_ok("benchmark://resnet50-v0/conv-56x56-64-64-3x3-s1");
  ASSERT_TRUE(b.program);
  EXPECT_EQ(b.program_text, read_file(source_path("datasets/ops/conv2d_resnet_3x3.tg")));
  EXPECT_EQ(b.expert_schedule, kConv2dResnet3x3ExpertSchedule);
  Expected<Schedule> s = Schedule::from_text(b.program, b.expert_schedule);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Expected<LoopNest> nest = lower(*s);
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
}

TEST(Datasets, ResnetLayers) {
  const Dataset* d = *registry().find_dataset("resnet50-v0");
  std::set<std::string> names;
  for (const BenchmarkInfo& i : d->list(0, -1)) names.insert(i.uri.substr(d->name().size() + 1));
  for (const char* n : {"conv-224x224-3-64-7x7-s2", "conv-56x56-64-64-1x1-s1", "conv-56x56-64-256-1x1-s1",
                        "conv-56x56-256-64-1x1-s1", "conv-56x56-256-128-1x1-s2", "conv-56x56-256-512-1x1-s2",
                        "conv-28x28-128-128-3x3-s1", "conv-14x14-1024-2048-1x1-s2", "conv-7x7-512-512-3x3-s1",
                        "conv-7x7-2048-512-1x1-s1", "dense-2048-1000"})
    EXPECT_TRUE(names.count(n)) << n;
  // Every convolution ends in its ReLU stage R.
  for (const BenchmarkInfo& i : d->list(0, -1)) {
    if (i.uri.find("/conv-") == std::string::npos) continue;
    Benchmark b = resolve_ok(i.uri);
    ASSERT_TRUE(b.program);
    EXPECT_EQ(b.program->outputs, std::vector<std::string>{"R"}) << i.uri;
  }
}

TEST(Datasets, MobilenetLayers) {
  const Dataset* d = *registry().find_dataset("mobilenetv2-v0");
  std::set<std::string> names;
  for (const BenchmarkInfo& i : d->list(0, -1)) names.insert(i.uri.substr(d->name().size() + 1));
  EXPECT_EQ(names.size(), 29u);
  for (const char* n : {"dw-112x112-32-3x3-s1", "dw-112x112-96-3x3-s2", "dw-7x7-960-3x3-s1", "pw-112x112-32-16",
                        "pw-112x112-16-96", "pw-7x7-320-1280", "pw-14x14-96-576"})
    EXPECT_TRUE(names.count(n)) << n;
  // Projections are linear, expansions end in ReLU6.
  EXPECT_EQ(resolve_ok("benchmark://mobilenetv2-v0/pw-112x112-32-16").program->outputs,
            std::vector<std::string>{"Y"});
  EXPECT_EQ(resolve_ok("benchmark://mobilenetv2-v0/pw-112x112-16-96").program->outputs,
            std::vector<std::string>{"R"});
}

// ---- numbers: each family against a direct formula ----------------------------------

double at(const HostBuffer& b, const std::vector<int64_t>& index) { return b.get_float(b.flat_index(index)); }

// All indices of a shape when there are few, else the corners and `samples` random ones.
std::vector<std::vector<int64_t>> sample_points(const std::vector<int64_t>& shape, int samples, uint64_t seed) {
  std::vector<std::vector<int64_t>> out;
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total <= 2048) {
    for (int64_t flat = 0; flat < total; ++flat) {
      std::vector<int64_t> idx(shape.size());
      int64_t rest = flat;
      for (size_t i = shape.size(); i-- > 0;) {
        idx[i] = rest % shape[i];
        rest /= shape[i];
      }
      out.push_back(idx);
    }
    return out;
  }
  std::vector<int64_t> lo(shape.size(), 0), hi;
  for (int64_t d : shape) hi.push_back(d - 1);
  out.push_back(lo);
  out.push_back(hi);
  Rng rng(seed);
  for (int i = 0; i < samples; ++i) {
    std::vector<int64_t> idx;
    for (int64_t d : shape) idx.push_back(rng.range(0, d - 1));
    out.push_back(idx);
  }
  return out;
}

using Reference = std::function<double(const std::vector<HostBuffer>&, const std::vector<int64_t>&)>;

// Evaluates `output` of the program at sampled points and compares with `ref`.
// f32 sums rounded term by term drift from the double reference by about
// terms * 2^-24 relative, so long sums (nrm's 4M terms) get `rtol`.
void check_against(const std::string& what, const std::string& text, const std::string& output, const Reference& ref,
                   int samples = 24, double rtol = 2e-4) {
  SCOPED_TRACE(what);
  ProgramPtr p = parse_ok(text);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->find_stage(output)) << output;
  std::vector<HostBuffer> inputs = make_random_inputs(*p, 7);
  ProgramEvaluator ev(*p, const_pointers(inputs));
  ASSERT_TRUE(ev.status().ok()) << ev.status().to_string();
  int checked = 0;
  for (const std::vector<int64_t>& idx : sample_points(p->shape_of(output), samples, 11)) {
    Expected<double> got = ev.value_at(output, idx);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const double want = ref(inputs, idx);
    ASSERT_NEAR(*got, want, 2e-3 + rtol * std::abs(want)) << "at index " << ::testing::PrintToString(idx);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

double activate(Activation a, double v) {
  if (a == Activation::kRelu) return std::max(v, 0.0);
  if (a == Activation::kRelu6) return std::min(std::max(v, 0.0), 6.0);
  return v;
}

// Direct convolution: out[n, f, o...] = sum over c, k... of x[n, g * Ci/G + c, o * S +
// k * D - P ...] * w[f, c, k...], reads outside the input being zero.
Reference conv_reference(const ConvSpec& s) {
  return [s](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    const size_t rank = s.input_size.size();
    const int64_t cin = s.in_channels / s.groups, cout = s.out_channels / s.groups;
    const int64_t n = o[0], f = o[1], g = f / cout;
    int64_t taps = 1;
    for (size_t i = 0; i < rank; ++i) taps *= s.kernel;
    double acc = 0;
    for (int64_t c = 0; c < cin; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        std::vector<int64_t> xi = {n, g * cin + c}, wi = {f, c};
        int64_t rest = t;
        std::vector<int64_t> k(rank);
        for (size_t i = rank; i-- > 0;) {
          k[i] = rest % s.kernel;
          rest /= s.kernel;
        }
        bool inside = true;
        for (size_t i = 0; i < rank; ++i) {
          const int64_t pos = o[2 + i] * s.stride + k[i] * s.dilation - s.pad;
          inside = inside && pos >= 0 && pos < s.input_size[i];
          xi.push_back(pos);
          wi.push_back(k[i]);
        }
        if (inside) acc += at(in[0], xi) * at(in[1], wi);
      }
    }
    return activate(s.activation, acc);
  };
}

Reference depthwise_reference(const DepthwiseSpec& s) {
  return [s](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t r = 0; r < s.kernel; ++r) {
      for (int64_t q = 0; q < s.kernel; ++q) {
        const int64_t h = o[2] * s.stride + r - s.pad, w = o[3] * s.stride + q - s.pad;
        if (h >= 0 && h < s.height && w >= 0 && w < s.width)
          acc += at(in[0], {o[0], o[1], h, w}) * at(in[1], {o[1], r, q});
      }
    }
    return activate(s.activation, acc);
  };
}

// Transposed convolution as the scatter it is: input pixel (h, w) adds
// x * w[c, f, r, s] to output (h * S - P + r, w * S - P + s).
Reference transposed_reference(const TransposedConvSpec& s) {
  return [s](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t c = 0; c < s.in_channels; ++c)
      for (int64_t h = 0; h < s.height; ++h)
        for (int64_t w = 0; w < s.width; ++w)
          for (int64_t r = 0; r < s.kernel; ++r)
            for (int64_t q = 0; q < s.kernel; ++q)
              if (h * s.stride - s.pad + r == o[2] && w * s.stride - s.pad + q == o[3])
                acc += at(in[0], {o[0], c, h, w}) * at(in[1], {c, o[1], r, q});
    return acc;
  };
}

Reference capsule_reference(const CapsuleConvSpec& s) {
  return [s](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    // o = n, f, y, x, i, j: the (i, j) entry of the sum of matrix products.
    double acc = 0;
    for (int64_t c = 0; c < s.in_channels; ++c)
      for (int64_t r = 0; r < s.kernel; ++r)
        for (int64_t q = 0; q < s.kernel; ++q) {
          const int64_t h = o[2] * s.stride + r - s.pad, w = o[3] * s.stride + q - s.pad;
          if (h < 0 || h >= s.height || w < 0 || w >= s.width) continue;
          for (int64_t k = 0; k < s.capsule; ++k)
            acc += at(in[0], {o[0], c, h, w, o[4], k}) * at(in[1], {o[1], c, r, q, k, o[5]});
        }
    return acc;
  };
}

Reference matmul_reference(bool batched, int64_t k_extent) {
  return [batched, k_extent](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t k = 0; k < k_extent; ++k) {
      acc += batched ? at(in[0], {o[0], o[1], k}) * at(in[1], {o[0], k, o[2]})
                     : at(in[0], {o[0], k}) * at(in[1], {k, o[1]});
    }
    return acc;
  };
}

Reference norm_reference(int64_t m, int64_t n) {
  return [m, n](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) acc += at(in[0], {o[0], i, j}) * at(in[0], {o[0], i, j});
    return std::sqrt(acc);
  };
}

TEST(DatasetsNumerics, ReducedSizeMembersOfEveryFamily) {
  check_against("gmm", matmul_program(0, 9, 7, 13), "C", matmul_reference(false, 13));
  check_against("gmm batched", matmul_program(3, 5, 6, 4), "C", matmul_reference(true, 4));

  ConvSpec c1d;
  c1d.batch = 2, c1d.in_channels = 3, c1d.out_channels = 4, c1d.input_size = {11}, c1d.kernel = 3, c1d.stride = 2,
  c1d.pad = 1;
  check_against("c1d", conv_program(c1d), "Y", conv_reference(c1d));

  ConvSpec c2d;
  c2d.in_channels = 3, c2d.out_channels = 5, c2d.input_size = {9, 8}, c2d.kernel = 3, c2d.stride = 2, c2d.pad = 1;
  check_against("c2d", conv_program(c2d), "Y", conv_reference(c2d));
  c2d.stride = 1, c2d.pad = 0, c2d.kernel = 1, c2d.activation = Activation::kRelu;
  check_against("c2d 1x1 relu", conv_program(c2d), "R", conv_reference(c2d));
  c2d.kernel = 3, c2d.pad = 1, c2d.activation = Activation::kRelu6;
  check_against("c2d relu6", conv_program(c2d), "R", conv_reference(c2d));

  ConvSpec c3d;
  c3d.in_channels = 2, c3d.out_channels = 3, c3d.input_size = {5, 6, 7}, c3d.kernel = 3, c3d.stride = 2, c3d.pad = 1;
  check_against("c3d", conv_program(c3d), "Y", conv_reference(c3d));

  ConvSpec grp;
  grp.batch = 2, grp.in_channels = 8, grp.out_channels = 12, grp.input_size = {6, 6}, grp.kernel = 3, grp.pad = 1,
  grp.groups = 4;
  check_against("grp", conv_program(grp), "Y", conv_reference(grp));

  ConvSpec dil;
  dil.in_channels = 3, dil.out_channels = 4, dil.input_size = {13, 12}, dil.kernel = 3, dil.stride = 2, dil.pad = 2,
  dil.dilation = 2;
  check_against("dil", conv_program(dil), "Y", conv_reference(dil));

  DepthwiseSpec dep;
  dep.batch = 2, dep.channels = 5, dep.height = 9, dep.width = 7, dep.kernel = 3, dep.stride = 2, dep.pad = 1;
  check_against("dep", depthwise_conv2d_program(dep), "Y", depthwise_reference(dep));

  TransposedConvSpec t2d;
  t2d.in_channels = 3, t2d.out_channels = 2, t2d.height = 4, t2d.width = 3, t2d.kernel = 4, t2d.stride = 2, t2d.pad = 1;
  check_against("t2d", transposed_conv2d_program(t2d), "Y", transposed_reference(t2d));
  t2d.stride = 3, t2d.pad = 0, t2d.kernel = 3;
  check_against("t2d stride 3", transposed_conv2d_program(t2d), "Y", transposed_reference(t2d));
  t2d.stride = 1, t2d.pad = 2;
  check_against("t2d stride 1", transposed_conv2d_program(t2d), "Y", transposed_reference(t2d));

  CapsuleConvSpec cap;
  cap.in_channels = 2, cap.out_channels = 3, cap.height = 5, cap.width = 5, cap.kernel = 3, cap.stride = 2,
  cap.pad = 1, cap.capsule = 4;
  check_against("cap", capsule_conv2d_program(cap), "Y", capsule_reference(cap));

  check_against("nrm", norm_program(3, 7, 5), "Y", norm_reference(7, 5));
  check_against("dense", dense_program(2, 9, 5, true), "Z", [](const std::vector<HostBuffer>& in, const auto& o) {
    double acc = at(in[2], {o[1]});
    for (int64_t k = 0; k < 9; ++k) acc += at(in[0], {o[0], k}) * at(in[1], {o[1], k});
    return acc;
  });
}

// The suites' own programs at full size, at a few points (batch 1: the inputs stay small).
TEST(DatasetsNumerics, FullSizeOpsSuiteAtSampledPoints) {
  const Dataset* ops = *registry().find_dataset("ops-v0");
  int checked = 0;
  for (const BenchmarkInfo& info : ops->list(0, -1)) {
    if (info.uri.find("-b16") != std::string::npos) continue;
    Benchmark b = resolve_ok(info.uri);
    ASSERT_TRUE(b.program);
    std::map<std::string, int64_t> p = shape_params(b.shape);
    const std::string family = info.uri.substr(std::string("benchmark://ops-v0/").size(), 3);
    Reference ref;
    if (family == "gmm") {
      ref = matmul_reference(false, p["K"]);
    } else if (family == "nrm") {
      ref = norm_reference(p["M"], p["N"]);
    } else if (family == "dep") {
      DepthwiseSpec s;
      s.channels = p["C"], s.height = p["H"], s.width = p["W"], s.kernel = p["K"], s.stride = p["S"], s.pad = p["P"];
      ref = depthwise_reference(s);
    } else if (family == "t2d") {
      TransposedConvSpec s;
      s.in_channels = p["CI"], s.out_channels = p["CO"], s.height = p["H"], s.width = p["W"], s.kernel = p["K"],
      s.stride = p["S"], s.pad = p["P"];
      ref = transposed_reference(s);
    } else if (family == "cap") {
      CapsuleConvSpec s;
      s.in_channels = p["CI"], s.out_channels = p["CO"], s.height = p["H"], s.width = p["W"], s.kernel = p["K"],
      s.stride = p["S"], s.pad = p["P"], s.capsule = p["CAP"];
      ref = capsule_reference(s);
    } else {  // c1d c2d c3d grp dil
      ConvSpec s;
      s.in_channels = p["CI"], s.out_channels = p["CO"], s.kernel = p["K"], s.stride = p["S"], s.pad = p["P"];
      if (p.count("L")) s.input_size = {p["L"]};
      else s.input_size = {p["H"], p["W"]};
      if (p.count("D")) s.input_size.insert(s.input_size.begin(), p["D"]);
      if (p.count("G")) s.groups = p["G"];
      if (p.count("DIL")) s.dilation = p["DIL"];
      ref = conv_reference(s);
    }
    check_against(info.uri, b.program_text, b.program->outputs.back(), ref, family == "t2d" ? 3 : 6,
                  family == "nrm" ? 1e-2 : 2e-4);
    ++checked;
  }
  EXPECT_EQ(checked, 40);
}

TEST(DatasetsNumerics, ModelLayersAtSampledPoints) {
  // A strided ResNet projection, the stem, a MobileNet depthwise and pointwise layer.
  for (const char* name : {"conv-56x56-256-512-1x1-s2", "conv-224x224-3-64-7x7-s2"}) {
    Benchmark b = resolve_ok(std::string("benchmark://resnet50-v0/") + name);
    std::map<std::string, int64_t> p = shape_params(b.shape);
    ConvSpec s;
    s.in_channels = p["CI"], s.out_channels = p["CO"], s.input_size = {p["H"], p["W"]}, s.kernel = p["K"],
    s.stride = p["S"], s.pad = p["P"], s.activation = Activation::kRelu;
    check_against(name, b.program_text, "R", conv_reference(s), 8);
  }
  {
    Benchmark b = resolve_ok("benchmark://resnet50-v0/dense-2048-1000");
    check_against(b.uri, b.program_text, "Z", [](const std::vector<HostBuffer>& in, const auto& o) {
      double acc = at(in[2], {o[1]});
      for (int64_t k = 0; k < 2048; ++k) acc += at(in[0], {o[0], k}) * at(in[1], {o[1], k});
      return acc;
    }, 8);
  }
  {
    Benchmark b = resolve_ok("benchmark://mobilenetv2-v0/dw-112x112-96-3x3-s2");
    DepthwiseSpec s;
    s.channels = 96, s.height = s.width = 112, s.kernel = 3, s.stride = 2, s.pad = 1, s.activation = Activation::kRelu6;
    check_against(b.uri, b.program_text, "R", depthwise_reference(s), 8);
  }
  {
    Benchmark b = resolve_ok("benchmark://mobilenetv2-v0/pw-28x28-144-32");
    ConvSpec s;
    s.in_channels = 144, s.out_channels = 32, s.input_size = {28, 28};
    check_against(b.uri, b.program_text, "Y", conv_reference(s), 8);
  }
}

TEST(DatasetsNumerics, BertOperatorsAtSampledPoints) {
  auto linear = [](int64_t in_features) {
    return [in_features](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
      double acc = at(in[2], {o[1]});
      for (int64_t k = 0; k < in_features; ++k) acc += at(in[0], {o[0], k}) * at(in[1], {k, o[1]});
      return acc;
    };
  };
  auto check = [](const std::string& name, const std::string& output, const Reference& ref) {
    Benchmark b = resolve_ok("benchmark://bert-v0/" + name);
    check_against(b.uri, b.program_text, output, ref, 8);
  };
  check("qkv-projection", "Z", linear(768));
  check("output-projection", "Z", linear(768));
  check("ffn-up", "Z", linear(768));
  check("ffn-down", "Z", linear(3072));
  check("attention-scores", "T", [](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t d = 0; d < 64; ++d) acc += at(in[0], {o[0], o[1], d}) * at(in[1], {o[0], o[2], d});
    return acc / 8;
  });
  check("attention-context", "C", [](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t j = 0; j < 128; ++j) acc += at(in[0], {o[0], o[1], j}) * at(in[1], {o[0], j, o[2]});
    return acc;
  });
  check("softmax", "Y", [](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < 128; ++j) m = std::max(m, at(in[0], {o[0], o[1], j}));
    for (int64_t j = 0; j < 128; ++j) sum += std::exp(at(in[0], {o[0], o[1], j}) - m);
    return std::exp(at(in[0], o) - m) / sum;
  });
  check("layer-norm", "Y", [](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < 768; ++j) mean += at(in[0], {o[0], j}) / 768;
    for (int64_t j = 0; j < 768; ++j) var += std::pow(at(in[0], {o[0], j}) - mean, 2) / 768;
    return (at(in[0], o) - mean) / std::sqrt(var + 1e-12) * at(in[1], {o[1]}) + at(in[2], {o[1]});
  });
  check("gelu", "Y", [](const std::vector<HostBuffer>& in, const std::vector<int64_t>& o) {
    const double x = at(in[0], o);
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  });
}

// ---- random-ops ---------------------------------------------------------------------

int64_t stage_iterations(const StageDef& s) {
  int64_t n = 1;
  for (const IterVar& v : s.axes) n *= v.extent;
  for (const IterVar& v : s.reduce_axes) n *= v.extent;
  return n;
}

TEST(RandomOps, SameSeedSameText) {
  for (uint64_t seed : {0ull, 1ull, 17ull, 123456789ull, 18446744073709551615ull}) {
    EXPECT_EQ(random_ops_program(seed), random_ops_program(seed));
    DatasetRegistry other;
    Expected<Benchmark> a = other.resolve("generator://random-ops-v0/" + std::to_string(seed));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(a->program_text, random_ops_program(seed));
    EXPECT_EQ(a->uri, "generator://random-ops-v0/" + std::to_string(seed));
  }
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < 50; ++seed) texts.insert(random_ops_program(seed));
  EXPECT_GT(texts.size(), 45u);
}

TEST(RandomOps, TwoHundredSeedsAreValidAndModest) {
  std::map<std::string, int> kinds;
  int with_cast = 0, with_prologue = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const std::string text = random_ops_program(seed);
    SCOPED_TRACE(text);
    Expected<Program> p = parse_program(text);  // default limits
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    int64_t iterations = 0;
    for (const TensorInput& in : p->inputs) EXPECT_LE(num_elements(in.shape), int64_t(1) << 20);
    for (const StageDef& s : p->stages) {
      EXPECT_LE(num_elements(s.shape()), int64_t(1) << 20);
      iterations += stage_iterations(s);
    }
    EXPECT_LE(iterations, 30'000'000);
    Expected<LoopNest> nest = lower(Schedule(std::make_shared<const Program>(std::move(*p))));
    ASSERT_TRUE(nest.ok()) << nest.status().to_string();
    kinds[text.substr(text.find(": ") + 2, text.find(' ', text.find(": ") + 2) - text.find(": ") - 2)]++;
    if (text.find("f64(") != std::string::npos || text.find("i32(") != std::string::npos) ++with_cast;
    if (text.find("Q1[") != std::string::npos) ++with_prologue;
  }
  EXPECT_EQ(kinds.size(), 4u) << ::testing::PrintToString(kinds);  // matmul, batch, conv2d, depthwise
  EXPECT_GT(with_cast, 20);
  EXPECT_GT(with_prologue, 20);
}

TEST(RandomOps, InterpretedProgramsMatchTheEvaluator) {
  int run = 0;
  for (uint64_t seed = 0; seed < 200 && run < 6; ++seed) {
    Benchmark b = resolve_ok("generator://random-ops-v0/" + std::to_string(seed));
    ASSERT_TRUE(b.program);
    int64_t iterations = 0;
    for (const StageDef& s : b.program->stages) iterations += stage_iterations(s);
    if (iterations > 300'000) continue;  // keep the interpreter quick
    SCOPED_TRACE(b.program_text);
    Expected<LoopNest> nest = lower(Schedule(b.program));
    ASSERT_TRUE(nest.ok()) << nest.status().to_string();
    std::vector<HostBuffer> inputs = make_random_inputs(*b.program, seed);
    std::vector<HostBuffer> outputs = make_output_buffers(*nest);
    Status st = interpret(*nest, const_pointers(inputs), pointers(outputs));
    ASSERT_TRUE(st.ok()) << st.to_string();
    ProgramEvaluator ev(*b.program, const_pointers(inputs));
    for (size_t i = 0; i < outputs.size(); ++i) {
      Comparison c = compare_with_evaluator(ev, nest->outputs[i].name, outputs[i], Tolerance{}, 128, seed);
      EXPECT_TRUE(c.match) << c.describe();
    }
    ++run;
  }
  EXPECT_EQ(run, 6);
}

TEST(RandomOps, BadSeedsAreRejected) {
  for (const char* uri : {"generator://random-ops-v0/abc", "generator://random-ops-v0/007",
                          "generator://random-ops-v0/-1", "generator://random-ops-v0/18446744073709551616"}) {
    Expected<Benchmark> b = registry().resolve(uri);
    ASSERT_FALSE(b.ok()) << uri;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_CONTAINS(b.status().message(), std::string(uri));
    EXPECT_CONTAINS(b.status().message(), "seed");
  }
}

// ---- file:// ------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tensorgym_datasets_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(FileBenchmarks, ReadsParsesAndFindsTheExpertSchedule) {
  const std::string path = source_path("datasets/ops/gemm_1024.tg");
  Benchmark b = resolve_ok("file://" + path);
  ASSERT_TRUE(b.program);
  EXPECT_EQ(b.uri, "file://" + path);
  EXPECT_EQ(b.program_text, read_file(path));
  EXPECT_EQ(b.expert_schedule, read_file(source_path("datasets/ops/gemm_1024.expert.sched")));
  EXPECT_EQ(b.shape, "A: f32[1024, 1024], B: f32[1024, 1024] -> C: f32[1024, 1024]");
  EXPECT_EQ(resolve_ok("file://" + path).program.get(), b.program.get());
  Benchmark small = resolve_ok("file://" + source_path("datasets/ops/gemm_128.tg"));
  ASSERT_TRUE(small.program);
  EXPECT_TRUE(small.expert_schedule.empty());
}

TEST(FileBenchmarks, ChangedTextIsReadAgain) {
  TempDir dir;
  const std::string p = dir.write("prog.tg", "input A: f32[4]\nB[i] = A[i] * 2.0\n");
  Benchmark a = resolve_ok("file://" + p);
  dir.write("prog.tg", "input A: f32[4]\nB[i] = A[i] * 3.0\n");
  Benchmark b = resolve_ok("file://" + p);
  ASSERT_TRUE(a.program && b.program);
  EXPECT_NE(a.program.get(), b.program.get());
  EXPECT_FALSE(structural_equal(*a.program, *b.program));
}

TEST(FileBenchmarks, Errors) {
  TempDir dir;
  const std::string missing = dir.path() + "/missing.tg";
  Expected<Benchmark> b = registry().resolve("file://" + missing);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(b.status().message(), missing);

  const std::string bad = dir.write("bad.tg", "input A: f32[4]\n\nB[i] = A[i] +* 2.0\n");
  b = registry().resolve("file://" + bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(b.status().message(), bad + ":3:");

  b = registry().resolve("file://" + dir.path());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(b.status().message(), "not a regular file");

  const std::string big = dir.write("big.tg", std::string((1 << 20) + 10, '#'));
  b = registry().resolve("file://" + big);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);

  b = registry().resolve("file://");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
}

// ---- user-v0 ------------------------------------------------------------------------

TEST(UserBenchmarks, AddResolveAndList) {
  DatasetRegistry local;
  const std::string text = "input A: f32[8, 4]\nS[i] += A[i, j]\n";
  Expected<std::string> uri = local.add_user_benchmark("row_sum", text);
  ASSERT_TRUE(uri.ok()) << uri.status().to_string();
  EXPECT_EQ(*uri, "benchmark://user-v0/row_sum");
  Expected<Benchmark> b = local.resolve(*uri);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->program_text, text);
  EXPECT_EQ(b->shape, "A: f32[8, 4] -> S: f32[8]");
  EXPECT_EQ(local.resolve("user-v0/row_sum")->program.get(), b->program.get());
  // The same text again is fine; a different one is not.
  EXPECT_EQ(*local.add_user_benchmark("row_sum", text), *uri);
  Expected<std::string> dup = local.add_user_benchmark("row_sum", "input A: f32[8]\nB[i] = A[i]\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_CONTAINS(dup.status().message(), "benchmark://user-v0/row_sum");
  const Dataset* user = *local.find_dataset("benchmark://user-v0");
  EXPECT_EQ(user->size(), 1);
  ASSERT_EQ(user->list(0, -1).size(), 1u);
  EXPECT_EQ(user->list(0, -1)[0].uri, *uri);
  // Other registries do not see it.
  EXPECT_FALSE(registry().resolve(*uri).ok());
}

TEST(UserBenchmarks, BadNamesAndBadText) {
  DatasetRegistry local;
  for (const char* name : {"", "a/b", "9lives", "has space", "dot/../x", "tab\there"}) {
    Expected<std::string> uri = local.add_user_benchmark(name, "input A: f32[4]\nB[i] = A[i]\n");
    ASSERT_FALSE(uri.ok()) << name;
    EXPECT_EQ(uri.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_CONTAINS(uri.status().message(), "name");
  }
  EXPECT_TRUE(local.add_user_benchmark("my-op_2.v1", "input A: f32[4]\nB[i] = A[i]\n").ok());
  Expected<std::string> bad = local.add_user_benchmark("broken", "input A: f32[4]\nB[i] = A[i + 1]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.status().message(), "benchmark://user-v0/broken:2:");
  EXPECT_FALSE(local.resolve("benchmark://user-v0/broken").ok());
}

// ---- URIs ---------------------------------------------------------------------------

TEST(BenchmarkUris, Parse) {
  Expected<BenchmarkUri> u = parse_benchmark_uri("benchmark://ops-v0/gmm-4");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "benchmark");
  EXPECT_EQ(u->dataset, "ops-v0");
  EXPECT_EQ(u->name, "gmm-4");
  EXPECT_EQ(u->to_string(), "benchmark://ops-v0/gmm-4");
  EXPECT_EQ(u->dataset_uri(), "benchmark://ops-v0");
  u = parse_benchmark_uri("file:///tmp/a b.tg");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->name, "/tmp/a b.tg");
  EXPECT_EQ(u->to_string(), "file:///tmp/a b.tg");
  u = parse_benchmark_uri("ops-v0/gmm-4");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "");
  EXPECT_EQ(u->to_string(), "ops-v0/gmm-4");
}

TEST(BenchmarkUris, ShortFormsResolveToCanonicalUris) {
  EXPECT_EQ(resolve_ok("ops-v0/gmm-1").uri, "benchmark://ops-v0/gmm-1");
  EXPECT_EQ(resolve_ok("random-ops-v0/3").uri, "generator://random-ops-v0/3");
  ASSERT_TRUE(registry().find_dataset("bert-v0").ok());
  EXPECT_EQ((*registry().find_dataset("bert-v0"))->name(), "benchmark://bert-v0");
  EXPECT_EQ((*registry().find_dataset("benchmark://bert-v0/"))->name(), "benchmark://bert-v0");
}

TEST(BenchmarkUris, ErrorsNameTheUri) {
  struct Case {
    const char* uri;
    StatusCode code;
    const char* says;
  };
  const Case cases[] = {
      {"", StatusCode::kInvalidArgument, "empty"},
      {"benchmark://", StatusCode::kInvalidArgument, "missing"},
      {"benchmark://ops-v0", StatusCode::kInvalidArgument, "benchmark name is missing"},
      {"benchmark://ops-v0/", StatusCode::kInvalidArgument, "benchmark name after"},
      {"benchmark:///gmm-1", StatusCode::kInvalidArgument, "dataset name is missing"},
      {"://ops-v0/gmm-1", StatusCode::kInvalidArgument, "scheme"},
      {"Benchmark://ops-v0/gmm-1", StatusCode::kInvalidArgument, "scheme"},
      {"benchmark://OPS/gmm-1", StatusCode::kInvalidArgument, "dataset name"},
      {"benchmark://ops-v0/gmm 1", StatusCode::kInvalidArgument, "space"},
      {"gmm-1", StatusCode::kInvalidArgument, "expected scheme://dataset/name"},
      {"http://ops-v0/gmm-1", StatusCode::kInvalidArgument, "unknown scheme 'http'"},
      {"benchmark://nope-v0/x", StatusCode::kNotFound, "unknown dataset"},
      {"nope-v0/x", StatusCode::kNotFound, "unknown dataset"},
      {"benchmark://ops-v0/gmm-9", StatusCode::kNotFound, "no benchmark"},
      {"benchmark://ops-v0/gmm-1-b8", StatusCode::kNotFound, "tensorgym benchmarks benchmark://ops-v0"},
      {"benchmark://random-ops-v0/3", StatusCode::kNotFound, "did you mean generator://random-ops-v0/3"},
      {"benchmark://user-v0/nobody", StatusCode::kNotFound, "no benchmark"},
  };
  for (const Case& c : cases) {
    Expected<Benchmark> b = registry().resolve(c.uri);
    ASSERT_FALSE(b.ok()) << c.uri;
    EXPECT_EQ(b.status().code(), c.code) << c.uri << ": " << b.status().to_string();
    EXPECT_CONTAINS(b.status().message(), "'" + std::string(c.uri) + "'");
    EXPECT_CONTAINS(b.status().message(), c.says);
  }
  Expected<Benchmark> long_uri = registry().resolve("benchmark://ops-v0/" + std::string(5000, 'x'));
  ASSERT_FALSE(long_uri.ok());
  EXPECT_EQ(long_uri.status().code(), StatusCode::kInvalidArgument);
  EXPECT_LT(long_uri.status().message().size(), 600u);  // quoted URIs are cut
  Expected<const Dataset*> d = registry().find_dataset("nope");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(d.status().message(), "benchmark://ops-v0");
}

TEST(BenchmarkUris, ControlCharactersAreEscapedInMessages) {
  Expected<Benchmark> b = registry().resolve(std::string("benchmark://ops-v0/a\x01\n"));
  ASSERT_FALSE(b.ok());
  EXPECT_CONTAINS(b.status().message(), "a\\x01\\x0a");
  EXPECT_EQ(b.status().message().find('\n'), std::string::npos);
}

TEST(DatasetRegistry, AddDataset) {
  DatasetRegistry local;
  EXPECT_EQ(local.add_dataset(make_bert_dataset()).code(), StatusCode::kAlreadyExists);
  std::vector<SuiteEntry> entries = {{"one", "N=4", "input A: f32[4]\nB[i] = A[i] + 1.0\n", ""}};
  EXPECT_EQ(local.add_dataset(std::make_unique<StaticDataset>("bad name", "x", entries)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(local.add_dataset(std::make_unique<StaticDataset>("benchmark://mine-v0", "mine", entries)).ok());
  EXPECT_EQ(local.resolve("benchmark://mine-v0/one")->uri, "benchmark://mine-v0/one");
  EXPECT_EQ(local.datasets().size(), 11u);
}

}  // namespace
}  // namespace tensorgym
