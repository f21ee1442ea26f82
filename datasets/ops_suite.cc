// benchmark://ops-v0: the single-operator suite of the Ansor paper (Zheng et al.,
// OSDI 2020, figure 6): ten operator families, four shapes each, at batch 1
// (`<family>-<n>`) and batch 16 (`<family>-<n>-b16`).
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "datasets/op_library.h"
#include "datasets/suites.h"

namespace tensorgym {
namespace {

constexpr const char* kName = "benchmark://ops-v0";
constexpr int64_t kBatches[] = {1, 16};

// Convolution shapes shared by c2d, c3d, grp and dil: (H = W, Ci, Co, K, S, P).
struct Conv2dShape {
  int64_t size, ci, co, k, s, p;
};
// The conv2d layers of ResNet-18 the paper uses.
constexpr Conv2dShape kConv2dShapes[] = {
    {224, 3, 64, 7, 2, 3}, {56, 64, 64, 1, 1, 0}, {14, 256, 256, 3, 1, 1}, {7, 512, 512, 3, 1, 1}};
// Group convolution: the conv2d shapes with 4 groups, except that the first (3
// input channels) cannot be split in 4; Ansor's suite uses a 56x56, 64 -> 128,
// 3x3, stride 2 layer there, and so do we.
constexpr Conv2dShape kGroupShapes[] = {
    {56, 64, 128, 3, 2, 1}, {56, 64, 64, 1, 1, 0}, {14, 256, 256, 3, 1, 1}, {7, 512, 512, 3, 1, 1}};
constexpr int64_t kGroups = 4;
constexpr int64_t kDilation = 2;
constexpr int64_t kDepth = 16;  // c3d: the conv2d shapes with depth 16

std::string conv2d_shape_text(int64_t n, const Conv2dShape& c) {
  return fmt::format("N={} H={} W={} CI={} CO={} K={} S={} P={}", n, c.size, c.size, c.ci, c.co, c.k, c.s, c.p);
}

class SuiteBuilder {
 public:
  // Adds `<family>-<i+1>[-b16]` for every shape index and batch; `make` gives the
  // program text and shape text of one (batch, shape index, comment).
  void family(const std::string& family, const std::string& what,
              const std::function<std::pair<std::string, std::string>(int64_t, int, const std::string&)>& make) {
    for (int64_t batch : kBatches) {
      for (int i = 0; i < 4; ++i) {
        std::string name =
            batch == 1 ? fmt::format("{}-{}", family, i + 1) : fmt::format("{}-{}-b{}", family, i + 1, batch);
        std::string comment = "ops-v0/" + name + ": " + what;
        auto [text, shape] = make(batch, i, comment);
        entries_.push_back({name, shape, text, ""});
      }
    }
  }
  std::vector<SuiteEntry>& entries() { return entries_; }

 private:
  std::vector<SuiteEntry> entries_;
};

}  // namespace

std::unique_ptr<StaticDataset> make_ops_dataset() {
  SuiteBuilder b;
  using Result = std::pair<std::string, std::string>;

  b.family("gmm", "matrix multiplication C = A . B", [](int64_t batch, int i, const std::string& comment) {
    static constexpr int64_t kShapes[4][3] = {{128, 128, 128}, {512, 32, 512}, {512, 512, 512}, {1024, 1024, 1024}};
    const int64_t n = kShapes[i][0], m = kShapes[i][1], k = kShapes[i][2];
    const std::string shape = (batch == 1 ? "" : fmt::format("B={} ", batch)) + fmt::format("N={} M={} K={}", n, m, k);
    return Result{matmul_program(batch == 1 ? 0 : batch, n, m, k, comment + ", " + shape), shape};
  });

  b.family("c1d", "1-D convolution, NCL", [](int64_t batch, int i, const std::string& comment) {
    // (L, Ci, Co, K, S, P)
    static constexpr int64_t kShapes[4][6] = {
        {256, 64, 128, 3, 2, 1}, {128, 128, 256, 1, 2, 0}, {64, 256, 256, 5, 1, 2}, {32, 512, 512, 3, 1, 1}};
    const int64_t* s = kShapes[i];
    ConvSpec spec;
    spec.batch = batch;
    spec.input_size = {s[0]};
    spec.in_channels = s[1];
    spec.out_channels = s[2];
    spec.kernel = s[3];
    spec.stride = s[4];
    spec.pad = s[5];
    const std::string shape =
        fmt::format("N={} L={} CI={} CO={} K={} S={} P={}", batch, s[0], s[1], s[2], s[3], s[4], s[5]);
    spec.comment = comment + ", " + shape;
    return Result{conv_program(spec), shape};
  });

  auto conv2d_family = [&](const std::string& family, const std::string& what, const Conv2dShape* shapes,
                           int64_t depth, int64_t groups, int64_t dilation) {
    b.family(family, what, [=](int64_t batch, int i, const std::string& comment) {
      const Conv2dShape& c = shapes[i];
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
      std::string shape = conv2d_shape_text(batch, c);
      if (depth > 0) shape.insert(shape.find(" H="), fmt::format(" D={}", depth));
      if (groups > 1) shape += fmt::format(" G={}", groups);
      if (dilation > 1) shape += fmt::format(" DIL={}", dilation);
      spec.comment = comment + ", " + shape;
      return Result{conv_program(spec), shape};
    });
  };
  conv2d_family("c2d", "2-D convolution, NCHW", kConv2dShapes, 0, 1, 1);
  conv2d_family("c3d", "3-D convolution, NCDHW", kConv2dShapes, kDepth, 1, 1);
  conv2d_family("grp", "group convolution, NCHW", kGroupShapes, 0, kGroups, 1);
  conv2d_family("dil", "dilated convolution, NCHW", kConv2dShapes, 0, 1, kDilation);

  b.family("dep", "depthwise convolution, NCHW", [](int64_t batch, int i, const std::string& comment) {
    // (H = W, C, K, S, P): the depthwise layers of MobileNet
    static constexpr int64_t kShapes[4][5] = {
        {112, 32, 3, 1, 1}, {112, 64, 3, 2, 1}, {14, 512, 3, 2, 1}, {7, 1024, 3, 1, 1}};
    const int64_t* s = kShapes[i];
    DepthwiseSpec spec;
    spec.batch = batch;
    spec.height = spec.width = s[0];
    spec.channels = s[1];
    spec.kernel = s[2];
    spec.stride = s[3];
    spec.pad = s[4];
    const std::string shape =
        fmt::format("N={} H={} W={} C={} K={} S={} P={}", batch, s[0], s[0], s[1], s[2], s[3], s[4]);
    spec.comment = comment + ", " + shape;
    return Result{depthwise_conv2d_program(spec), shape};
  });

  b.family("t2d", "transposed 2-D convolution, NCHW", [](int64_t batch, int i, const std::string& comment) {
    // (H = W, Ci, Co, K, S, P): the transposed convolutions of DCGAN's generator
    static constexpr int64_t kShapes[4][6] = {
        {4, 512, 256, 4, 2, 1}, {8, 256, 128, 4, 2, 1}, {16, 128, 64, 4, 2, 1}, {32, 64, 3, 4, 2, 1}};
    const int64_t* s = kShapes[i];
    TransposedConvSpec spec;
    spec.batch = batch;
    spec.height = spec.width = s[0];
    spec.in_channels = s[1];
    spec.out_channels = s[2];
    spec.kernel = s[3];
    spec.stride = s[4];
    spec.pad = s[5];
    const std::string shape =
        fmt::format("N={} H={} W={} CI={} CO={} K={} S={} P={}", batch, s[0], s[0], s[1], s[2], s[3], s[4], s[5]);
    spec.comment = comment + ", " + shape;
    return Result{transposed_conv2d_program(spec), shape};
  });

  b.family("cap", "capsule 2-D convolution, 4x4 capsules", [](int64_t batch, int i, const std::string& comment) {
    // (H = W, Ci, Co, K, S, P): the capsule layers of "Matrix capsules with EM routing"
    static constexpr int64_t kShapes[4][6] = {
        {16, 32, 32, 3, 2, 1}, {8, 32, 32, 3, 1, 1}, {16, 8, 16, 3, 2, 1}, {8, 16, 16, 3, 1, 1}};
    const int64_t* s = kShapes[i];
    CapsuleConvSpec spec;
    spec.batch = batch;
    spec.height = spec.width = s[0];
    spec.in_channels = s[1];
    spec.out_channels = s[2];
    spec.kernel = s[3];
    spec.stride = s[4];
    spec.pad = s[5];
    spec.capsule = 4;
    const std::string shape =
        fmt::format("N={} H={} W={} CI={} CO={} K={} S={} P={} CAP=4", batch, s[0], s[0], s[1], s[2], s[3], s[4], s[5]);
    spec.comment = comment + ", " + shape;
    return Result{capsule_conv2d_program(spec), shape};
  });

  b.family("nrm", "matrix 2-norm, sqrt of the sum of squares", [](int64_t batch, int i, const std::string& comment) {
    static constexpr int64_t kShapes[4][2] = {{256, 256}, {512, 512}, {1024, 1024}, {4096, 1024}};
    const int64_t m = kShapes[i][0], n = kShapes[i][1];
    const std::string shape = fmt::format("B={} M={} N={}", batch, m, n);
    return Result{norm_program(batch, m, n, comment + ", " + shape), shape};
  });

  std::vector<SuiteEntry>& entries = b.entries();
  for (SuiteEntry& e : entries)
    if (e.name == "gmm-4") e.expert_schedule = kGemm1024ExpertSchedule;
  return std::make_unique<StaticDataset>(
      kName, "The Ansor paper's single-operator suite: gmm c1d c2d c3d grp dil dep t2d cap nrm, 4 shapes each, batch 1 and 16",
      std::move(entries));
}

}  // namespace tensorgym
