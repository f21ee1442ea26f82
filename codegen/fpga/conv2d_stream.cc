#include "codegen/fpga/conv2d_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "support/random.h"

namespace tensorgym::fpga {
namespace {

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The layer's dimensions in blocks and the tile's input window.
struct Shape {
  int64_t nb, cb, kb, oh, ow, in_th, in_tw;
  // Input rows an output row steps over in the window: a kernel of one row reads every
  // stride-th image row only, so its window skips the others (the LOAD's row stride).
  int64_t row_step;
  Shape(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t)
      : nb(l.n / c.batch), cb(l.c / c.block_in), kb(l.k / c.block_out), oh(l.oh()), ow(l.ow()),
        in_th(l.r == 1 ? t.tile_h : (t.tile_h - 1) * l.stride + l.r), in_tw((t.tile_w - 1) * l.stride + l.s),
        row_step(l.r == 1 ? 1 : l.stride) {}
};

// Where each tensor sits in DRAM, in bytes.
struct Placement {
  int64_t input = 0, weights = 0, output = 0, uops = 0, end = 0;
};

Placement place(const AccelConfig& c, const Conv2dLayer& l, const Shape& sh, int64_t uops) {
  Placement p;
  p.weights = round_up(sh.nb * sh.cb * l.h * l.w * c.inp_entry_bytes(), c.wgt_entry_bytes());
  p.output = round_up(p.weights + sh.kb * sh.cb * l.r * l.s * c.wgt_entry_bytes(), c.out_entry_bytes());
  p.uops = round_up(p.output + sh.nb * sh.kb * sh.oh * sh.ow * c.out_entry_bytes(), AccelConfig::kUopBytes);
  p.end = p.uops + uops * AccelConfig::kUopBytes;
  return p;
}

}  // namespace

std::string to_string(const Conv2dTiling& t) {
  return fmt::format("h{} w{} k{} c{} vt{}", t.tile_h, t.tile_w, t.tile_k, t.tile_c, t.virtual_threads);
}

Conv2dFootprint footprint(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t) {
  Shape sh(c, l, t);
  Conv2dFootprint f;
  f.inp = t.tile_c * sh.in_th * sh.in_tw;
  f.wgt = t.tile_k * t.tile_c * l.r * l.s;
  f.acc = t.tile_k * t.tile_h * t.tile_w;
  // A GEMM kernel per pair of (input and weight slot, accumulator slot), and one ALU
  // kernel per accumulator slot.
  f.uops = t.virtual_threads * (t.tile_k * t.tile_c * l.r * l.s) + 1;
  return f;
}

Status check_tiling(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t) {
  if (l.n <= 0 || l.c <= 0 || l.h <= 0 || l.w <= 0 || l.k <= 0 || l.r <= 0 || l.s <= 0 || l.stride <= 0 ||
      l.pad < 0 || l.oh() <= 0 || l.ow() <= 0)
    return invalid_argument(fmt::format("layer {}: a dimension is not positive", l.name));
  if (l.n % c.batch || l.c % c.block_in || l.k % c.block_out)
    return invalid_argument(fmt::format("layer {}: batch {}, {} input and {} output channels are not whole {}x{}x{} "
                                        "blocks of the GEMM core",
                                        l.name, l.n, l.c, l.k, c.batch, c.block_in, c.block_out));
  if (l.pad > 15) return invalid_argument(fmt::format("padding {} exceeds the LOAD's 4-bit pads", l.pad));
  if (l.shift < 0 || l.shift > 31) return invalid_argument("shift is in 0..31");
  Shape sh(c, l, t);
  if (t.virtual_threads < 1 || t.virtual_threads > 2) return invalid_argument("virtual_threads is 1 or 2");
  auto divides = [](int64_t tile, int64_t extent) { return tile > 0 && extent % tile == 0; };
  if (!divides(t.tile_h, sh.oh) || !divides(t.tile_w, sh.ow) || !divides(t.tile_k, sh.kb) ||
      !divides(t.tile_c, sh.cb))
    return invalid_argument(fmt::format("tiling {} does not divide the output {}x{}, {} output and {} input channel "
                                        "blocks",
                                        to_string(t), sh.oh, sh.ow, sh.kb, sh.cb));
  Conv2dFootprint f = footprint(c, l, t);
  const int64_t v = t.virtual_threads;
  if (f.inp * v > c.inp_depth() || f.wgt * v > c.wgt_depth() || f.acc * v > c.acc_depth() ||
      f.uops * v > c.uop_depth())
    return invalid_argument(fmt::format(
        "tiling {} needs {} INP, {} WGT, {} ACC entries and {} micro-ops; the design has {}, {}, {} and {}",
        to_string(t), f.inp * v, f.wgt * v, f.acc * v, f.uops * v, c.inp_depth(), c.wgt_depth(), c.acc_depth(),
        c.uop_depth()));
  if (sh.in_tw * sh.row_step > 2047 || t.tile_w > 2047 || t.tile_k * t.tile_h > 16383)
    return invalid_argument(fmt::format("tiling {}: a loop factor exceeds its instruction field", to_string(t)));
  // Every input window row and column keeps at least one pixel inside the image.
  if (l.pad >= l.r || l.pad >= l.s)
    return invalid_argument(fmt::format("padding {} is not smaller than the {}x{} kernel", l.pad, l.r, l.s));
  return Status();
}

namespace {

// The stream and its DRAM image with the data left zero, and where the tensors sit.
struct StreamImage {
  SampleProgram program;
  Placement at;
};

Expected<StreamImage> make_stream(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t) {
  TG_RETURN_IF_ERROR(check_tiling(c, l, t));
  const Shape sh(c, l, t);
  const Conv2dFootprint f = footprint(c, l, t);
  const int64_t V = t.virtual_threads;
  const int64_t G = t.tile_k * t.tile_c * l.r * l.s;  // micro-ops of one GEMM kernel
  const int64_t uops = V * V * G + V;
  const Placement at = place(c, l, sh, uops);
  SampleProgram p;
  p.dram.assign(size_t(at.end), 0);
  p.output_offset = at.output;

  // Micro-ops: GEMM kernel (step slot a, accumulator slot b) at (a * V + b) * G; the
  // ALU / reset kernel of accumulator slot b at V * V * G + b.
  auto put_uop = [&](int64_t index, Uop u) -> Status {
    TG_ASSIGN_OR_RETURN(uint32_t bits, encode(u));
    std::memcpy(&p.dram[size_t(at.uops + index * 4)], &bits, 4);
    return Status();
  };
  for (int64_t a = 0; a < V; ++a)
    for (int64_t b = 0; b < V; ++b) {
      int64_t u = (a * V + b) * G;
      for (int64_t ko = 0; ko < t.tile_k; ++ko)
        for (int64_t ci = 0; ci < t.tile_c; ++ci)
          for (int64_t kh = 0; kh < l.r; ++kh)
            for (int64_t kw = 0; kw < l.s; ++kw)
              TG_RETURN_IF_ERROR(put_uop(u++, Uop{uint32_t(b * f.acc + ko * t.tile_h * t.tile_w),
                                                  uint32_t(a * f.inp + ci * sh.in_th * sh.in_tw + kh * sh.in_tw + kw),
                                                  uint32_t(a * f.wgt + ((ko * t.tile_c + ci) * l.r + kh) * l.s + kw)}));
    }
  for (int64_t b = 0; b < V; ++b) TG_RETURN_IF_ERROR(put_uop(V * V * G + b, Uop{uint32_t(b * f.acc), 0, 0}));

  std::vector<Instruction>& st = p.stream;
  st.push_back(make_load(Buffer::kUop, 0, uint32_t(at.uops / 4), 1, uint32_t(uops), uint32_t(uops)));
  // Instructions over a whole accumulator slot (reset and the epilogue): rows of tile_w.
  auto over_slot = [&](Instruction i, int64_t slot) {
    i.uop_begin = uint32_t(V * V * G + slot);
    i.uop_end = i.uop_begin + 1;
    i.iter_out = uint32_t(t.tile_k * t.tile_h);
    i.iter_in = uint32_t(t.tile_w);
    i.dst_out = uint32_t(t.tile_w);
    i.dst_in = 1;
    return i;
  };
  const int64_t tiles = sh.nb * (sh.kb / t.tile_k) * (sh.oh / t.tile_h) * (sh.ow / t.tile_w);
  const int64_t steps_per_tile = sh.cb / t.tile_c, steps = tiles * steps_per_tile;
  int64_t tile = 0, step = 0;
  // The weight block (first output, first input channel block) each slot holds: a step
  // whose weights are already in its slot does not load them again.
  std::vector<std::pair<int64_t, int64_t>> held(size_t(V), {-1, -1});
  for (int64_t n = 0; n < sh.nb; ++n)
    for (int64_t k0 = 0; k0 < sh.kb; k0 += t.tile_k)
      for (int64_t y0 = 0; y0 < sh.oh; y0 += t.tile_h)
        for (int64_t x0 = 0; x0 < sh.ow; x0 += t.tile_w, ++tile) {
          const int64_t acc_slot = tile % V;
          Instruction reset = over_slot(make_gemm(0, 1, 1, 1), acc_slot);
          reset.reset = true;
          reset.pop_next = tile >= V;  // the slot's previous outputs are stored
          st.push_back(reset);
          for (int64_t c0 = 0; c0 < sh.cb; c0 += t.tile_c, ++step) {
            const int64_t slot = step % V;
            const size_t first_load = st.size();
            // The input window of each channel block, clipped to the image, padded back.
            const int64_t iy = y0 * l.stride - l.pad, ix = x0 * l.stride - l.pad;
            // Window rows at image rows iy + j * dy (dy: 1, or the stride for one-row kernels).
            const int64_t dy = l.r == 1 ? l.stride : 1;
            const int64_t py0 = iy < 0 ? (-iy + dy - 1) / dy : 0;
            const int64_t last = iy + (sh.in_th - 1) * dy;
            const int64_t py1 = last >= l.h ? (last - (l.h - 1) + dy - 1) / dy : 0;
            const int64_t px0 = std::max<int64_t>(0, -ix), px1 = std::max<int64_t>(0, ix + sh.in_tw - l.w);
            for (int64_t ci = 0; ci < t.tile_c; ++ci) {
              int64_t plane = n * sh.cb + c0 + ci;
              Instruction in = make_load(Buffer::kInp, uint32_t(slot * f.inp + ci * sh.in_th * sh.in_tw),
                                         uint32_t((plane * l.h + iy + py0 * dy) * l.w + ix + px0),
                                         uint32_t(sh.in_th - py0 - py1), uint32_t(sh.in_tw - px0 - px1),
                                         uint32_t(l.w * dy));
              in.y_pad0 = uint32_t(py0), in.y_pad1 = uint32_t(py1);
              in.x_pad0 = uint32_t(px0), in.x_pad1 = uint32_t(px1);
              st.push_back(in);
            }
            if (held[size_t(slot)] != std::pair{k0, c0}) {
              st.push_back(make_load(Buffer::kWgt, uint32_t(slot * f.wgt),
                                     uint32_t(at.weights / c.wgt_entry_bytes() + (k0 * sh.cb + c0) * l.r * l.s),
                                     uint32_t(t.tile_k), uint32_t(t.tile_c * l.r * l.s),
                                     uint32_t(sh.cb * l.r * l.s)));
              held[size_t(slot)] = {k0, c0};
            }
            st[first_load].pop_next = step >= V;  // the slot's previous step is computed
            st.back().push_next = true;
            Instruction gemm = make_gemm(uint32_t((slot * V + acc_slot) * G), uint32_t((slot * V + acc_slot + 1) * G),
                                         uint32_t(t.tile_h), uint32_t(t.tile_w));
            gemm.dst_out = uint32_t(t.tile_w), gemm.dst_in = 1;
            gemm.src_out = uint32_t(sh.row_step * sh.in_tw), gemm.src_in = uint32_t(l.stride);
            gemm.pop_prev = true;
            gemm.push_prev = step + V < steps;  // the slot is free for a later step
            st.push_back(gemm);
          }
          // Shift, clamp to int8 and ReLU in one pass over the tile's accumulators.
          Instruction req = over_slot(make_alu(AluOp::kRequant, 0, 1, 1, 1), acc_slot);
          req.use_imm = true, req.imm = requant_imm(l.shift, l.relu);
          req.push_next = true;
          st.push_back(req);
          for (int64_t ko = 0; ko < t.tile_k; ++ko) {
            Instruction store = make_store(uint32_t(acc_slot * f.acc + ko * t.tile_h * t.tile_w),
                                           uint32_t(at.output / c.out_entry_bytes() +
                                                    ((n * sh.kb + k0 + ko) * sh.oh + y0) * sh.ow + x0),
                                           uint32_t(t.tile_h), uint32_t(t.tile_w), uint32_t(sh.ow));
            store.pop_prev = ko == 0;
            store.push_prev = ko + 1 == t.tile_k && (tile + V < tiles || tile + 1 == tiles);
            st.push_back(store);
          }
        }
  Instruction finish = make_finish();
  finish.pop_next = true;
  st.push_back(finish);
  return StreamImage{std::move(p), at};
}

// The reference output of the input and weights in the image, in the output's layout.
void compute_expected(const AccelConfig& c, const Conv2dLayer& l, const Placement& at, SampleProgram& p) {
  const Shape sh(c, l, Conv2dTiling{});
  const int64_t B = c.batch, BI = c.block_in, BO = c.block_out;
  auto input = [&](int64_t n, int64_t ch, int64_t y, int64_t x) {
    int64_t entry = ((n / B * sh.cb + ch / BI) * l.h + y) * l.w + x;
    return int32_t(int8_t(p.dram[size_t(entry * c.inp_entry_bytes() + n % B * BI + ch % BI)]));
  };
  auto weight = [&](int64_t k, int64_t ch, int64_t y, int64_t x) {
    int64_t entry = ((k / BO * sh.cb + ch / BI) * l.r + y) * l.s + x;
    return int32_t(int8_t(p.dram[size_t(at.weights + entry * c.wgt_entry_bytes() + k % BO * BI + ch % BI)]));
  };
  p.expected.assign(size_t(sh.nb * sh.kb * sh.oh * sh.ow * c.out_entry_bytes()), 0);
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t k = 0; k < l.k; ++k)
      for (int64_t y = 0; y < sh.oh; ++y)
        for (int64_t x = 0; x < sh.ow; ++x) {
          int32_t sum = 0;
          for (int64_t ch = 0; ch < l.c; ++ch)
            for (int64_t r = 0; r < l.r; ++r)
              for (int64_t s = 0; s < l.s; ++s) {
                int64_t iy = y * l.stride - l.pad + r, ix = x * l.stride - l.pad + s;
                if (iy >= 0 && iy < l.h && ix >= 0 && ix < l.w) sum += input(n, ch, iy, ix) * weight(k, ch, r, s);
              }
          int32_t v = std::clamp(sum >> l.shift, -128, 127);
          if (l.relu) v = std::max(v, 0);
          int64_t entry = ((n / B * sh.kb + k / BO) * sh.oh + y) * sh.ow + x;
          p.expected[size_t(entry * c.out_entry_bytes() + n % B * BO + k % BO)] = int8_t(v);
        }
}

}  // namespace

Expected<SampleProgram> make_conv2d_program(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t,
                                            uint64_t seed, bool with_data) {
  TG_ASSIGN_OR_RETURN(StreamImage image, make_stream(c, l, t));
  SampleProgram& p = image.program;
  if (!with_data) return std::move(p);
  // Random data in the blocked layouts, and the reference output.
  Rng rng(seed);
  for (int64_t i = 0; i < image.at.output; ++i) p.dram[size_t(i)] = uint8_t(rng.range(-128, 127));
  compute_expected(c, l, image.at, p);
  return std::move(p);
}

Expected<SampleProgram> make_conv2d_program(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t,
                                            const Conv2dData& data) {
  TG_ASSIGN_OR_RETURN(StreamImage image, make_stream(c, l, t));
  SampleProgram& p = image.program;
  const int64_t input_bytes = l.n * l.c * l.h * l.w, weight_bytes = l.k * l.c * l.r * l.s;
  if (int64_t(data.input.size()) != input_bytes || int64_t(data.weights.size()) != weight_bytes)
    return invalid_argument(fmt::format("layer {}: {} input and {} weight bytes given; the layer has {} and {}", l.name,
                                        data.input.size(), data.weights.size(), input_bytes, weight_bytes));
  std::memcpy(p.dram.data(), data.input.data(), data.input.size());
  std::memcpy(p.dram.data() + image.at.weights, data.weights.data(), data.weights.size());
  compute_expected(c, l, image.at, p);
  return std::move(p);
}

Expected<Conv2dTiling> row_tiling(const AccelConfig& c, const Conv2dLayer& l) {
  for (int64_t th = l.oh(); th >= 1; --th) {
    if (l.oh() % th) continue;
    Conv2dTiling t{th, l.ow(), 1, 1, 2};
    if (check_tiling(c, l, t).ok()) return t;
  }
  return invalid_argument(fmt::format("layer {}: not one whole output row fits the design: {}", l.name,
                                      check_tiling(c, l, Conv2dTiling{1, l.ow(), 1, 1, 2}).message()));
}

std::vector<Conv2dTiling> legal_tilings(const AccelConfig& c, const Conv2dLayer& l) {
  std::vector<Conv2dTiling> out;
  if (l.n % c.batch || l.c % c.block_in || l.k % c.block_out || l.oh() <= 0 || l.ow() <= 0) return out;
  auto divisors = [](int64_t v) {
    std::vector<int64_t> d;
    for (int64_t i = 1; i <= v; ++i)
      if (v % i == 0) d.push_back(i);
    return d;
  };
  for (int64_t th : divisors(l.oh()))
    for (int64_t tw : divisors(l.ow()))
      for (int64_t tk : divisors(l.k / c.block_out))
        for (int64_t tc : divisors(l.c / c.block_in))
          for (int vt : {1, 2}) {
            Conv2dTiling t{th, tw, tk, tc, vt};
            if (check_tiling(c, l, t).ok()) out.push_back(t);
          }
  return out;
}

Roofline roofline(const AccelConfig& c, const Conv2dLayer& l) {
  Roofline r;
  r.compute_cycles = ceil_div(l.macs(), c.macs_per_cycle());
  int64_t bytes = l.n * l.c * l.h * l.w + l.k * l.c * l.r * l.s + l.n * l.k * l.oh() * l.ow();
  r.dram_cycles = ceil_div(bytes, c.dram_bytes_per_cycle);
  return r;
}

const std::vector<Conv2dLayer>& resnet18_layers() {
  auto layer = [](const char* name, int64_t hw, int64_t ci, int64_t co, int64_t k, int64_t stride) {
    Conv2dLayer l;
    l.name = name;
    l.h = l.w = hw;
    l.c = ci;
    l.k = co;
    l.r = l.s = k;
    l.stride = stride;
    l.pad = k / 2;
    return l;
  };
  static const std::vector<Conv2dLayer> layers = {
      layer("resnet18.C2", 56, 64, 64, 3, 1),    layer("resnet18.C3", 56, 64, 128, 3, 2),
      layer("resnet18.C4", 56, 64, 128, 1, 2),   layer("resnet18.C5", 28, 128, 128, 3, 1),
      layer("resnet18.C6", 28, 128, 256, 3, 2),  layer("resnet18.C7", 28, 128, 256, 1, 2),
      layer("resnet18.C8", 14, 256, 256, 3, 1),  layer("resnet18.C9", 14, 256, 512, 3, 2),
      layer("resnet18.C10", 14, 256, 512, 1, 2), layer("resnet18.C11", 7, 512, 512, 3, 1),
  };
  return layers;
}

}  // namespace tensorgym::fpga
