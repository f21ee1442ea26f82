// benchmark://resnet50-v0: every distinct convolution of ResNet-50 v1 (He et al.,
// 2016) at 224x224, batch 1, and its final dense layer.
//
// v1 puts the stride of a downsampling bottleneck on its first 1x1 convolution (the
// original Caffe model and Keras; "v1.5" moves it to the 3x3). Batch norm is folded
// into the weights. Every convolution carries the ReLU epilogue as stage R, also the
// last 1x1 of a block and the projection shortcut, whose ReLU in the network comes
// after the residual add: one form for all layers, so identical shapes are one
// benchmark, and the layer matching datasets/ops/conv2d_resnet_3x3.tg is that file's
// program exactly.
#include <fmt/format.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "datasets/op_library.h"
#include "datasets/suites.h"

namespace tensorgym {
namespace {

constexpr const char* kName = "benchmark://resnet50-v0";

struct Layer {
  int64_t size, ci, co, k, s;  // input H = W; pad is k / 2
};

// The layers in network order, duplicates included.
std::vector<Layer> resnet50_layers() {
  std::vector<Layer> layers = {{224, 3, 64, 7, 2}};  // the stem; a 3x3/2 max pool follows
  int64_t size = 56, channels = 64;
  struct ResStage {
    int blocks;
    int64_t mid, out, stride;
  };
  const ResStage stages[] = {{3, 64, 256, 1}, {4, 128, 512, 2}, {6, 256, 1024, 2}, {3, 512, 2048, 2}};
  for (const ResStage& st : stages) {
    for (int b = 0; b < st.blocks; ++b) {
      const int64_t stride = b == 0 ? st.stride : 1;
      const int64_t out_size = size / stride;
      layers.push_back({size, channels, st.mid, 1, stride});
      layers.push_back({out_size, st.mid, st.mid, 3, 1});
      layers.push_back({out_size, st.mid, st.out, 1, 1});
      if (b == 0) layers.push_back({size, channels, st.out, 1, stride});  // projection shortcut
      size = out_size;
      channels = st.out;
    }
  }
  return layers;
}

}  // namespace

std::unique_ptr<StaticDataset> make_resnet50_dataset() {
  std::vector<SuiteEntry> entries;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> seen;
  for (const Layer& l : resnet50_layers()) {
    if (!seen.insert({l.size, l.ci, l.co, l.k, l.s}).second) continue;
    ConvSpec spec;
    spec.batch = 1;
    spec.in_channels = l.ci;
    spec.out_channels = l.co;
    spec.input_size = {l.size, l.size};
    spec.kernel = l.k;
    spec.stride = l.s;
    spec.pad = l.k / 2;
    spec.activation = Activation::kRelu;
    // The same first line as datasets/ops/conv2d_resnet_3x3.tg.
    spec.comment =
        fmt::format("conv2d, ResNet {0}x{0} layer: N = 1, C = {1} -> {2}, {3} x {3}, stride {4}, pad {5}, with ReLU",
                    l.k, l.ci, l.co, l.size, l.s, spec.pad);
    SuiteEntry e;
    e.name = fmt::format("conv-{0}x{0}-{1}-{2}-{3}x{3}-s{4}", l.size, l.ci, l.co, l.k, l.s);
    e.shape =
        fmt::format("N=1 H={0} W={0} CI={1} CO={2} K={3} S={4} P={5} relu", l.size, l.ci, l.co, l.k, l.s, spec.pad);
    e.program_text = conv_program(spec);
    if (e.name == "conv-56x56-64-64-3x3-s1") e.expert_schedule = kConv2dResnet3x3ExpertSchedule;
    entries.push_back(std::move(e));
  }
  SuiteEntry dense;
  dense.name = "dense-2048-1000";
  dense.shape = "N=1 IN=2048 OUT=1000 bias";
  dense.program_text = dense_program(1, 2048, 1000, /*bias=*/true, "dense, ResNet-50 classifier: N = 1, 2048 -> 1000, with bias");
  entries.push_back(std::move(dense));
  return std::make_unique<StaticDataset>(
      kName, "ResNet-50 v1 at 224x224, batch 1: its distinct conv2d layers (with ReLU) and the final dense layer",
      std::move(entries));
}

}  // namespace tensorgym
