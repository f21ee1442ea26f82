// benchmark://mobilenetv2-v0: the distinct depthwise and pointwise layers of
// MobileNetV2 (Sandler et al., 2018) at 224x224, width 1.0, batch 1.
//
// Activations follow the network: the expansion 1x1 and the depthwise 3x3 of each
// inverted residual block end in ReLU6 (stage R), the projection 1x1 is linear, the
// final 1x1 (320 -> 1280) has ReLU6. The stem (a full 3x3 convolution) and the
// classifier are not depthwise or pointwise and are left out.
#include <fmt/format.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "datasets/op_library.h"
#include "datasets/suites.h"

namespace tensorgym {
namespace {

constexpr const char* kName = "benchmark://mobilenetv2-v0";

struct Layer {
  bool depthwise;
  int64_t size;  // input H = W
  int64_t ci, co;  // co == ci for depthwise
  int64_t stride;
  bool relu6;
};

// The layers in network order, duplicates included.
std::vector<Layer> mobilenetv2_layers() {
  // (expansion t, output channels c, repeats n, first stride s), from the paper's table 2.
  struct Bottleneck {
    int64_t t, c, n, s;
  };
  const Bottleneck blocks[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
                               {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::vector<Layer> layers;
  int64_t size = 112, channels = 32;  // after the stem: 3x3/2, 3 -> 32
  for (const Bottleneck& b : blocks) {
    for (int64_t i = 0; i < b.n; ++i) {
      const int64_t stride = i == 0 ? b.s : 1;
      const int64_t hidden = channels * b.t;
      if (b.t != 1) layers.push_back({false, size, channels, hidden, 1, true});
      layers.push_back({true, size, hidden, hidden, stride, true});
      const int64_t out_size = size / stride;
      layers.push_back({false, out_size, hidden, b.c, 1, false});
      size = out_size;
      channels = b.c;
    }
  }
  layers.push_back({false, size, channels, 1280, 1, true});
  return layers;
}

}  // namespace

std::unique_ptr<StaticDataset> make_mobilenetv2_dataset() {
  std::vector<SuiteEntry> entries;
  std::set<std::tuple<bool, int64_t, int64_t, int64_t, int64_t, bool>> seen;
  for (const Layer& l : mobilenetv2_layers()) {
    if (!seen.insert({l.depthwise, l.size, l.ci, l.co, l.stride, l.relu6}).second) continue;
    const std::string act = l.relu6 ? "relu6" : "linear";
    SuiteEntry e;
    if (l.depthwise) {
      DepthwiseSpec spec;
      spec.channels = l.ci;
      spec.height = spec.width = l.size;
      spec.kernel = 3;
      spec.stride = l.stride;
      spec.pad = 1;
      spec.activation = l.relu6 ? Activation::kRelu6 : Activation::kNone;
      spec.comment =
          fmt::format("depthwise conv2d, MobileNetV2: N = 1, C = {}, {} x {}, 3x3, stride {}, pad 1, with ReLU6", l.ci,
                      l.size, l.size, l.stride);
      e.name = fmt::format("dw-{0}x{0}-{1}-3x3-s{2}", l.size, l.ci, l.stride);
      e.shape = fmt::format("N=1 H={0} W={0} C={1} K=3 S={2} P=1 {3}", l.size, l.ci, l.stride, act);
      e.program_text = depthwise_conv2d_program(spec);
    } else {
      ConvSpec spec;
      spec.in_channels = l.ci;
      spec.out_channels = l.co;
      spec.input_size = {l.size, l.size};
      spec.activation = l.relu6 ? Activation::kRelu6 : Activation::kNone;
      spec.comment = fmt::format("pointwise conv2d, MobileNetV2: N = 1, C = {} -> {}, {} x {}, {}", l.ci, l.co, l.size,
                                 l.size, l.relu6 ? "with ReLU6" : "linear");
      e.name = fmt::format("pw-{0}x{0}-{1}-{2}", l.size, l.ci, l.co);
      e.shape = fmt::format("N=1 H={0} W={0} CI={1} CO={2} {3}", l.size, l.ci, l.co, act);
      e.program_text = conv_program(spec);
    }
    entries.push_back(std::move(e));
  }
  return std::make_unique<StaticDataset>(
      kName, "MobileNetV2 (224x224, width 1.0, batch 1): its distinct depthwise 3x3 and pointwise 1x1 layers",
      std::move(entries));
}

}  // namespace tensorgym
