// generator://random-ops-v0/<seed>: a small random program per seed. Each is one
// contraction (a matmul, a batched matmul, a 2-D or a depthwise convolution) with
// elementwise prologues on its operands and a chain of epilogues (scaling, bias,
// residual add, ReLU, ReLU6, exp, tanh, casts). Sizes are drawn so that every
// tensor stays under 300K elements and the contraction under 50M flops: random
// agents can lower, compile and run them quickly.
//
// The generator depends only on the seed and on Rng (support/random.h), whose output
// is identical on every platform, so a seed names the same program text everywhere.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/benchmark_uri.h"
#include "datasets/suites.h"
#include "support/random.h"

namespace tensorgym {
namespace {

constexpr const char* kName = "generator://random-ops-v0";
constexpr int64_t kMaxFlops = 50'000'000;
// Parsed programs kept for resolve(); the oldest goes first past this many.
constexpr size_t kCacheSize = 1024;

std::string str(int64_t v) { return fmt::format("{}", v); }

std::string join(const std::vector<std::string>& parts) { return fmt::format("{}", fmt::join(parts, ", ")); }

std::string dims(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// A size: half the time a "nice" one (powers of two and their multiples by 3),
// else any in [lo, hi].
int64_t draw_size(Rng& rng, int64_t lo, int64_t hi) {
  static const std::vector<int64_t> kNice = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  if (rng.chance(0.5)) {
    std::vector<int64_t> fit;
    for (int64_t v : kNice)
      if (v >= lo && v <= hi) fit.push_back(v);
    if (!fit.empty()) return rng.pick(fit);
  }
  return rng.range(lo, hi);
}

// One tensor the program reads or defines, named with its index variables.
struct Tensor {
  std::string name;
  std::vector<std::string> vars;  // the variables that index it in an elementwise stage
  std::vector<int64_t> shape;
  std::string dtype = "f32";
  std::string at() const { return name + "[" + join(vars) + "]"; }
};

class ProgramWriter {
 public:
  explicit ProgramWriter(uint64_t seed) : seed_(seed), rng_(Rng(seed).next()) {}

  std::string run(std::string* summary) {
    integer_ = rng_.chance(0.2);
    const int kind = int(rng_.below(4));
    Tensor out;
    switch (kind) {
      case 0: out = matmul(false); break;
      case 1: out = matmul(true); break;
      case 2: out = conv2d(); break;
      default: out = depthwise(); break;
    }
    epilogues(out);
    *summary = fmt::format("{} {}, {} epilogue{}", summary_, integer_ ? "i8->i32" : "f32", epilogue_count_,
                           epilogue_count_ == 1 ? "" : "s");
    return fmt::format("# {}/{}: {}\n{}{}", kName, seed_, *summary, inputs_, stages_);
  }

 private:
  uint64_t seed_;
  Rng rng_;
  bool integer_ = false;
  std::string inputs_, stages_, summary_;
  int epilogue_count_ = 0;
  int prologue_count_ = 0;

  Tensor input(const std::string& name, std::vector<std::string> vars, std::vector<int64_t> shape) {
    Tensor t{name, std::move(vars), std::move(shape), integer_ ? "i8" : "f32"};
    inputs_ += "input " + t.name + ": " + t.dtype + dims(t.shape) + "\n";
    return t;
  }

  // Maybe an elementwise stage over an f32 operand; returns what the contraction reads.
  Tensor prologue(const Tensor& in) {
    if (integer_ || !rng_.chance(0.3)) return in;
    Tensor t = in;
    t.name = "Q" + str(++prologue_count_);
    const std::string x = in.at();
    static const char* const kScales[] = {"0.5", "0.25", "2.0", "0.125", "1.5"};
    std::string body;
    switch (rng_.below(5)) {
      case 0: body = x + " * " + kScales[rng_.below(5)]; break;
      case 1: body = "max(" + x + ", 0.0)"; break;
      case 2: body = "tanh(" + x + ")"; break;
      case 3: body = "exp(" + x + " * 0.5)"; break;
      default: body = x + " + 0.25"; break;
    }
    stages_ += t.at() + " = " + body + "\n";
    return t;
  }

  // The product of two operand reads, as the contraction's dtype wants it.
  std::string product(const std::string& a, const std::string& b) const {
    return integer_ ? "i32(" + a + ") * i32(" + b + ")" : a + " * " + b;
  }

  Tensor matmul(bool batched) {
    int64_t b = batched ? rng_.range(2, 8) : 1;
    int64_t m, n, k;
    const int64_t hi = batched ? 96 : 256;
    do {
      m = draw_size(rng_, 1, hi);
      n = draw_size(rng_, 1, hi);
      k = draw_size(rng_, 1, hi);
    } while (2 * b * m * n * k > kMaxFlops);
    std::vector<std::string> pre = batched ? std::vector<std::string>{"b"} : std::vector<std::string>{};
    auto with = [&](std::vector<std::string> v) {
      v.insert(v.begin(), pre.begin(), pre.end());
      return v;
    };
    auto shape = [&](std::vector<int64_t> s) {
      if (batched) s.insert(s.begin(), b);
      return s;
    };
    Tensor a = prologue(input("A", with({"i", "k"}), shape({m, k})));
    Tensor bt = prologue(input("B", with({"k", "j"}), shape({k, n})));
    Tensor c{"C", with({"i", "j"}), shape({m, n}), integer_ ? "i32" : "f32"};
    stages_ += c.at() + " += " + product(a.at(), bt.at()) + "\n";
    summary_ = batched ? "batch matmul B=" + str(b) + " M=" + str(m) + " N=" + str(n) + " K=" + str(k)
                       : "matmul M=" + str(m) + " N=" + str(n) + " K=" + str(k);
    channel_var_ = "j";
    channel_extent_ = n;
    return c;
  }

  // The padded copy of an NCHW operand, when pad > 0.
  Tensor pad_stage(const Tensor& x, int64_t h, int64_t w, int64_t pad) {
    if (pad == 0) return x;
    Tensor p{"P", {"n", "c", "h", "w"}, {x.shape[0], x.shape[1], h + 2 * pad, w + 2 * pad}, x.dtype};
    stages_ += p.at() + " = select(h >= " + str(pad) + " && h <= " + str(h + pad - 1) + " && w >= " + str(pad) +
               " && w <= " + str(w + pad - 1) + ", " + x.name + "[n, c, h - " + str(pad) + ", w - " + str(pad) +
               "], " + (integer_ ? "0" : "0.0") + ") where h in 0.." + str(h + 2 * pad) + ", w in 0.." +
               str(w + 2 * pad) + "\n";
    return p;
  }

  static std::string strided(const std::string& v, int64_t stride, const std::string& k) {
    return (stride == 1 ? v : v + " * " + str(stride)) + " + " + k;
  }

  Tensor conv2d() {
    int64_t n, c, f, h, w, kernel, stride, pad, oh, ow;
    do {
      n = rng_.chance(0.8) ? 1 : 2;
      c = draw_size(rng_, 1, 32);
      f = draw_size(rng_, 1, 32);
      h = draw_size(rng_, 3, 32);
      w = rng_.chance(0.7) ? h : draw_size(rng_, 3, 32);
      kernel = rng_.pick(std::vector<int64_t>{1, 3, 3, 5});
      stride = rng_.chance(0.7) ? 1 : 2;
      pad = rng_.chance(0.75) ? kernel / 2 : 0;
      oh = (h + 2 * pad - kernel) / stride + 1;
      ow = (w + 2 * pad - kernel) / stride + 1;
    } while (h + 2 * pad < kernel || w + 2 * pad < kernel || 2 * n * f * c * kernel * kernel * oh * ow > kMaxFlops);
    Tensor x = prologue(input("X", {"n", "c", "h", "w"}, {n, c, h, w}));
    Tensor wt = prologue(input("W", {"f", "c", "r", "s"}, {f, c, kernel, kernel}));
    Tensor src = pad_stage(x, h, w, pad);
    Tensor y{"Y", {"n", "f", "y", "x"}, {n, f, oh, ow}, integer_ ? "i32" : "f32"};
    stages_ += y.at() + " += " +
               product(src.name + "[n, c, " + strided("y", stride, "r") + ", " + strided("x", stride, "s") + "]",
                       wt.name + "[f, c, r, s]") +
               " where y in 0.." + str(oh) + ", x in 0.." + str(ow) + "\n";
    summary_ = "conv2d N=" + str(n) + " C=" + str(c) + " F=" + str(f) + " H=" + str(h) + " W=" + str(w) +
               " K=" + str(kernel) + " S=" + str(stride) + " P=" + str(pad);
    channel_var_ = "f";
    channel_extent_ = f;
    return y;
  }

  Tensor depthwise() {
    const int64_t c = draw_size(rng_, 1, 64);
    const int64_t h = draw_size(rng_, 3, 64);
    const int64_t w = rng_.chance(0.7) ? h : draw_size(rng_, 3, 64);
    const int64_t kernel = rng_.chance(0.7) ? 3 : 5;
    const int64_t stride = rng_.chance(0.7) ? 1 : 2;
    const int64_t pad = kernel / 2;
    const int64_t oh = (h + 2 * pad - kernel) / stride + 1;
    const int64_t ow = (w + 2 * pad - kernel) / stride + 1;
    Tensor x = prologue(input("X", {"n", "c", "h", "w"}, {1, c, h, w}));
    Tensor wt = prologue(input("W", {"c", "r", "s"}, {c, kernel, kernel}));
    Tensor src = pad_stage(x, h, w, pad);
    Tensor y{"Y", {"n", "c", "y", "x"}, {1, c, oh, ow}, integer_ ? "i32" : "f32"};
    stages_ += y.at() + " += " +
               product(src.name + "[n, c, " + strided("y", stride, "r") + ", " + strided("x", stride, "s") + "]",
                       wt.name + "[c, r, s]") +
               " where y in 0.." + str(oh) + ", x in 0.." + str(ow) + "\n";
    summary_ = "depthwise conv2d C=" + str(c) + " H=" + str(h) + " W=" + str(w) + " K=" + str(kernel) +
               " S=" + str(stride) + " P=" + str(pad);
    channel_var_ = "c";
    channel_extent_ = c;
    return y;
  }

  // The contraction's per-output-channel axis, for a bias.
  std::string channel_var_;
  int64_t channel_extent_ = 1;

  void epilogue(Tensor* cur, const std::string& body, const std::string& dtype) {
    Tensor next = *cur;
    next.name = "E" + str(++epilogue_count_);
    next.dtype = dtype;
    stages_ += next.at() + " = " + body + "\n";
    *cur = next;
  }

  void epilogues(Tensor out) {
    Tensor cur = out;
    if (integer_) epilogue(&cur, "f32(" + cur.at() + ") * 0.0625", "f32");  // dequantize
    const int count = int(rng_.below(4));
    bool used_bias = false, used_residual = false, used_exp = false;
    uint64_t previous = 8;
    for (int i = 0; i < count; ++i) {
      const std::string x = cur.at();
      // Reads of f32 inputs from an f64 chain are cast up.
      auto operand = [&](const std::string& read) { return cur.dtype == "f64" ? "f64(" + read + ")" : read; };
      uint64_t op = rng_.below(8);
      if (op == previous) op = (op + 1) % 8;  // no ReLU of a ReLU
      previous = op;
      switch (op) {
        case 0:
          if (!used_bias) {
            used_bias = true;
            inputs_ += "input Bias: f32[" + str(channel_extent_) + "]\n";
            epilogue(&cur, x + " + " + operand("Bias[" + channel_var_ + "]"), cur.dtype);
            break;
          }
          [[fallthrough]];
        case 1: epilogue(&cur, x + " * 0.5", cur.dtype); break;
        case 2: epilogue(&cur, "max(" + x + ", 0.0)", cur.dtype); break;
        case 3: epilogue(&cur, "min(max(" + x + ", 0.0), 6.0)", cur.dtype); break;
        case 4:
          if (!used_exp) {
            used_exp = true;
            epilogue(&cur, "exp(" + x + " * 0.125)", cur.dtype);
            break;
          }
          [[fallthrough]];
        case 5: epilogue(&cur, "tanh(" + x + ")", cur.dtype); break;
        case 6:
          if (!used_residual) {
            used_residual = true;
            inputs_ += "input Res: f32" + dims(cur.shape) + "\n";
            epilogue(&cur, x + " + " + operand("Res[" + join(cur.vars) + "]"), cur.dtype);
            break;
          }
          [[fallthrough]];
        default:
          if (cur.dtype == "f32") {
            epilogue(&cur, "f64(" + x + ")", "f64");
          } else {
            epilogue(&cur, "f32(" + x + ")", "f32");
          }
          break;
      }
    }
  }
};

// "12345", without leading zeros, in uint64 range.
bool parse_seed(std::string_view s, uint64_t* seed) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *seed = v;
  return true;
}

class RandomOpsDataset : public Dataset {
 public:
  std::string name() const override { return kName; }
  std::string description() const override {
    return "Random small programs, one per seed: a matmul, batched matmul or convolution with elementwise "
           "prologues and epilogues";
  }
  int64_t size() const override { return -1; }

  std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const override {
    int64_t begin, end;
    list_range(-1, offset, limit, &begin, &end);
    std::vector<BenchmarkInfo> out;
    for (int64_t s = begin; s < end; ++s) {
      std::string summary;
      ProgramWriter(uint64_t(s)).run(&summary);
      out.push_back({std::string(kName) + "/" + str(s), summary});
    }
    return out;
  }

  Expected<Benchmark> get(std::string_view name) const override {
    const std::string uri = std::string(kName) + "/" + std::string(name);
    uint64_t seed;
    if (!parse_seed(name, &seed)) {
      return invalid_argument("no benchmark " + quote_uri(uri) + ": names in " + kName +
                              " are seeds, decimal integers in 0..18446744073709551615 without leading zeros");
    }
    std::string summary;
    std::string text = ProgramWriter(seed).run(&summary);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(seed);
      if (it != cache_.end()) return Benchmark{uri, std::move(text), it->second, "", std::move(summary)};
    }
    Expected<Program> parsed = parse_program(text, builtin_program_limits());
    if (!parsed.ok()) return internal_error("generated program " + uri + " does not parse: " + parsed.status().message());
    auto program = std::make_shared<const Program>(std::move(*parsed));
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = cache_.emplace(seed, program);
    ProgramPtr cached = it->second;  // another thread's, when it parsed first
    if (inserted) {
      order_.push_back(seed);
      if (order_.size() > kCacheSize) {
        cache_.erase(order_.front());
        order_.pop_front();
      }
    }
    return Benchmark{uri, std::move(text), std::move(cached), "", std::move(summary)};
  }

 private:
  mutable std::mutex mu_;
  mutable std::unordered_map<uint64_t, ProgramPtr> cache_;
  mutable std::deque<uint64_t> order_;  // insertion order, for eviction
};

}  // namespace

std::string random_ops_program(uint64_t seed) {
  std::string summary;
  return ProgramWriter(seed).run(&summary);
}

std::unique_ptr<Dataset> make_random_ops_dataset() { return std::make_unique<RandomOpsDataset>(); }

}  // namespace tensorgym
