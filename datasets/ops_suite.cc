// benchmark://ops-v0: the single-operator suite of the Ansor paper (Zheng et al.,
// OSDI 2020, figure 6): ten operator families, four shapes each, at batch 1
// (`<family>-<n>`) and batch 16 (`<family>-<n>-b16`).
// benchmark://ops-heldout-v0: the same ten families at two shapes each that no search
// or model was developed on (`<family>-h<n>`, batch 1), for held-out comparisons.
// The weights of every convolution are constant inputs (`input W: ... const`), as a
// model's are: a schedule may pack them once, ahead of the timed runs, as the vendor
// libraries and TVM's layout rewrite do.
#include <fmt/format.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "datasets/op_library.h"
#include "datasets/suites.h"

namespace tensorgym {
namespace {

// Convolution shapes shared by c2d, c3d, grp and dil: (H = W, Ci, Co, K, S, P).
struct Conv2dShape {
  int64_t size, ci, co, k, s, p;
};
constexpr int64_t kGroups = 4;
constexpr int64_t kDilation = 2;
constexpr int64_t kDepth = 16;  // c3d: the conv2d shapes with depth 16

// The shapes of one suite, per family.
struct OpsShapes {
  std::vector<std::array<int64_t, 3>> gmm;   // (N, M, K)
  std::vector<std::array<int64_t, 6>> c1d;   // (L, Ci, Co, K, S, P)
  std::vector<Conv2dShape> conv2d;           // c2d, c3d (depth 16), dil (dilation 2)
  std::vector<Conv2dShape> group;            // grp (4 groups)
  std::vector<std::array<int64_t, 5>> dep;   // (H = W, C, K, S, P)
  std::vector<std::array<int64_t, 6>> t2d;   // (H = W, Ci, Co, K, S, P)
  std::vector<std::array<int64_t, 6>> cap;   // (H = W, Ci, Co, K, S, P), 4x4 capsules
  std::vector<std::array<int64_t, 2>> nrm;   // (M, N)
};

// The Ansor paper's shapes.
OpsShapes ansor_shapes() {
  OpsShapes s;
  s.gmm = {{128, 128, 128}, {512, 32, 512}, {512, 512, 512}, {1024, 1024, 1024}};
  s.c1d = {{256, 64, 128, 3, 2, 1}, {128, 128, 256, 1, 2, 0}, {64, 256, 256, 5, 1, 2}, {32, 512, 512, 3, 1, 1}};
  // The conv2d layers of ResNet-18 the paper uses.
  s.conv2d = {{224, 3, 64, 7, 2, 3}, {56, 64, 64, 1, 1, 0}, {14, 256, 256, 3, 1, 1}, {7, 512, 512, 3, 1, 1}};
  // The conv2d shapes with 4 groups, except that the first (3 input channels) cannot
  // be split in 4; Ansor's suite uses a 56x56, 64 -> 128, 3x3, stride 2 layer there.
  s.group = {{56, 64, 128, 3, 2, 1}, {56, 64, 64, 1, 1, 0}, {14, 256, 256, 3, 1, 1}, {7, 512, 512, 3, 1, 1}};
  // The depthwise layers of MobileNet.
  s.dep = {{112, 32, 3, 1, 1}, {112, 64, 3, 2, 1}, {14, 512, 3, 2, 1}, {7, 1024, 3, 1, 1}};
  // The transposed convolutions of DCGAN's generator.
  s.t2d = {{4, 512, 256, 4, 2, 1}, {8, 256, 128, 4, 2, 1}, {16, 128, 64, 4, 2, 1}, {32, 64, 3, 4, 2, 1}};
  // The capsule layers of "Matrix capsules with EM routing".
  s.cap = {{16, 32, 32, 3, 2, 1}, {8, 32, 32, 3, 1, 1}, {16, 8, 16, 3, 2, 1}, {8, 16, 16, 3, 1, 1}};
  s.nrm = {{256, 256}, {512, 512}, {1024, 1024}, {4096, 1024}};
  return s;
}

// Held out: layers of other networks (BERT-base projections, ResNet-50 and VGG
// convolutions, MobileNet's other depthwise layers, smaller generators and capsule
// layers), none of them an ops-v0 shape.
OpsShapes heldout_shapes() {
  OpsShapes s;
  s.gmm = {{128, 768, 768}, {256, 1024, 256}};
  s.c1d = {{128, 64, 64, 3, 1, 1}, {64, 128, 256, 3, 2, 1}};
  s.conv2d = {{28, 128, 128, 3, 1, 1}, {56, 64, 256, 1, 1, 0}};
  s.group = {{28, 128, 128, 3, 1, 1}, {56, 64, 256, 1, 1, 0}};
  s.dep = {{56, 128, 3, 1, 1}, {28, 256, 3, 2, 1}};
  s.t2d = {{8, 128, 64, 4, 2, 1}, {16, 64, 32, 4, 2, 1}};
  s.cap = {{12, 16, 16, 3, 1, 1}, {16, 16, 32, 3, 2, 1}};
  s.nrm = {{768, 768}, {2048, 512}};
  return s;
}

std::string conv2d_shape_text(int64_t n, const Conv2dShape& c) {
  return fmt::format("N={} H={} W={} CI={} CO={} K={} S={} P={}", n, c.size, c.size, c.ci, c.co, c.k, c.s, c.p);
}

class SuiteBuilder {
 public:
  // `prefix` goes before each shape's number ("" for gmm-1, "h" for gmm-h1); batches
  // other than 1 get a "-b<batch>" suffix.
  SuiteBuilder(std::string dataset, std::string prefix, std::vector<int64_t> batches)
      : dataset_(std::move(dataset)), prefix_(std::move(prefix)), batches_(std::move(batches)) {}

  // Adds `<family>-<prefix><i+1>[-b<batch>]` for every shape index and batch; `make`
  // gives the program text and shape text of one (batch, shape index, comment).
  void family(const std::string& family, const std::string& what, size_t shapes,
              const std::function<std::pair<std::string, std::string>(int64_t, size_t, const std::string&)>& make) {
    for (int64_t batch : batches_) {
      for (size_t i = 0; i < shapes; ++i) {
        std::string name = fmt::format("{}-{}{}", family, prefix_, i + 1);
        if (batch != 1) name += fmt::format("-b{}", batch);
        std::string comment = dataset_ + "/" + name + ": " + what;
        auto [text, shape] = make(batch, i, comment);
        entries_.push_back({name, shape, text, ""});
      }
    }
  }
  std::vector<SuiteEntry>& entries() { return entries_; }

 private:
  std::string dataset_, prefix_;
  std::vector<int64_t> batches_;
  std::vector<SuiteEntry> entries_;
};

// Every family of `shapes`, in suite order.
void add_families(SuiteBuilder& b, const OpsShapes& shapes) {
  using Result = std::pair<std::string, std::string>;

  b.family("gmm", "matrix multiplication C = A . B", shapes.gmm.size(),
           [&](int64_t batch, size_t i, const std::string& comment) {
             const auto [n, m, k] = shapes.gmm[i];
             const std::string shape =
                 (batch == 1 ? "" : fmt::format("B={} ", batch)) + fmt::format("N={} M={} K={}", n, m, k);
             return Result{matmul_program(batch == 1 ? 0 : batch, n, m, k, comment + ", " + shape), shape};
           });

  b.family("c1d", "1-D convolution, NCL", shapes.c1d.size(), [&](int64_t batch, size_t i, const std::string& comment) {
    const auto& s = shapes.c1d[i];
    ConvSpec spec;
    spec.batch = batch;
    spec.input_size = {s[0]};
    spec.in_channels = s[1];
    spec.out_channels = s[2];
    spec.kernel = s[3];
    spec.stride = s[4];
    spec.pad = s[5];
    spec.constant_weights = true;
    const std::string shape =
        fmt::format("N={} L={} CI={} CO={} K={} S={} P={}", batch, s[0], s[1], s[2], s[3], s[4], s[5]);
    spec.comment = comment + ", " + shape;
    return Result{conv_program(spec), shape};
  });

  auto conv2d_family = [&](const std::string& family, const std::string& what, const std::vector<Conv2dShape>& list,
                           int64_t depth, int64_t groups, int64_t dilation) {
    b.family(family, what, list.size(), [&, depth, groups, dilation](int64_t batch, size_t i, const std::string& comment) {
      const Conv2dShape& c = list[i];
      ConvSpec spec;
      spec.batch = batch;
      spec.input_size = {c.size, c.size};
      if (depth > 0) spec.input_size.insert(spec.input_size.begin(), depth);
      spec.in_channels = c.ci;
      spec.out_channels = c.co;
      spec.kernel = c.k;
      spec.stride = c.s;
      spec.pad = c.p;
      spec.groups = groups;
      spec.dilation = dilation;
      spec.constant_weights = true;
      std::string shape = conv2d_shape_text(batch, c);
      if (depth > 0) shape.insert(shape.find(" H="), fmt::format(" D={}", depth));
      if (groups > 1) shape += fmt::format(" G={}", groups);
      if (dilation > 1) shape += fmt::format(" DIL={}", dilation);
      spec.comment = comment + ", " + shape;
      return Result{conv_program(spec), shape};
    });
  };
  conv2d_family("c2d", "2-D convolution, NCHW", shapes.conv2d, 0, 1, 1);
  conv2d_family("c3d", "3-D convolution, NCDHW", shapes.conv2d, kDepth, 1, 1);
  conv2d_family("grp", "group convolution, NCHW", shapes.group, 0, kGroups, 1);
  conv2d_family("dil", "dilated convolution, NCHW", shapes.conv2d, 0, 1, kDilation);

  b.family("dep", "depthwise convolution, NCHW", shapes.dep.size(),
           [&](int64_t batch, size_t i, const std::string& comment) {
             const auto& s = shapes.dep[i];
             DepthwiseSpec spec;
             spec.batch = batch;
             spec.height = spec.width = s[0];
             spec.channels = s[1];
             spec.kernel = s[2];
             spec.stride = s[3];
             spec.pad = s[4];
             spec.constant_weights = true;
             const std::string shape =
                 fmt::format("N={} H={} W={} C={} K={} S={} P={}", batch, s[0], s[0], s[1], s[2], s[3], s[4]);
             spec.comment = comment + ", " + shape;
             return Result{depthwise_conv2d_program(spec), shape};
           });

  // t2d and cap: square images, (H = W, Ci, Co, K, S, P).
  auto image_family = [&](const std::string& family, const std::string& what,
                          const std::vector<std::array<int64_t, 6>>& list, auto spec_of, auto program_of,
                          const std::string& suffix) {
    b.family(family, what, list.size(), [&, spec_of, program_of, suffix](int64_t batch, size_t i,
                                                                          const std::string& comment) {
      const auto& s = list[i];
      auto spec = spec_of();
      spec.batch = batch;
      spec.height = spec.width = s[0];
      spec.in_channels = s[1];
      spec.out_channels = s[2];
      spec.kernel = s[3];
      spec.stride = s[4];
      spec.pad = s[5];
      spec.constant_weights = true;
      const std::string shape = fmt::format("N={} H={} W={} CI={} CO={} K={} S={} P={}{}", batch, s[0], s[0], s[1],
                                            s[2], s[3], s[4], s[5], suffix);
      spec.comment = comment + ", " + shape;
      return Result{program_of(spec), shape};
    });
  };
  image_family(
      "t2d", "transposed 2-D convolution, NCHW", shapes.t2d, [] { return TransposedConvSpec{}; },
      [](const TransposedConvSpec& spec) { return transposed_conv2d_program(spec); }, "");
  image_family(
      "cap", "capsule 2-D convolution, 4x4 capsules", shapes.cap,
      [] {
        CapsuleConvSpec spec;
        spec.capsule = 4;
        return spec;
      },
      [](const CapsuleConvSpec& spec) { return capsule_conv2d_program(spec); }, " CAP=4");

  b.family("nrm", "matrix 2-norm, sqrt of the sum of squares", shapes.nrm.size(),
           [&](int64_t batch, size_t i, const std::string& comment) {
             const auto [m, n] = shapes.nrm[i];
             const std::string shape = fmt::format("B={} M={} N={}", batch, m, n);
             return Result{norm_program(batch, m, n, comment + ", " + shape), shape};
           });
}

}  // namespace

std::unique_ptr<StaticDataset> make_ops_dataset() {
  SuiteBuilder b("ops-v0", "", {1, 16});
  add_families(b, ansor_shapes());
  std::vector<SuiteEntry>& entries = b.entries();
  for (SuiteEntry& e : entries)
    if (e.name == "gmm-4") e.expert_schedule = kGemm1024ExpertSchedule;
  return std::make_unique<StaticDataset>(
      "benchmark://ops-v0",
      "The Ansor paper's single-operator suite: gmm c1d c2d c3d grp dil dep t2d cap nrm, 4 shapes each, batch 1 and 16",
      std::move(entries));
}

std::unique_ptr<StaticDataset> make_ops_heldout_dataset() {
  SuiteBuilder b("ops-heldout-v0", "h", {1});
  add_families(b, heldout_shapes());
  return std::make_unique<StaticDataset>(
      "benchmark://ops-heldout-v0",
      "Held-out shapes of ops-v0's ten families (2 each, batch 1; other networks' layers): kept for measuring "
      "searches on shapes they were not developed on",
      std::move(b.entries()));
}

}  // namespace tensorgym
