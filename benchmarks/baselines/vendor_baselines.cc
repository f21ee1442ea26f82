#include "benchmarks/baselines/vendor_baselines.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "codegen/backend/registry.h"

#if TENSORGYM_HAVE_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tensorgym {
namespace {

// --- OpenBLAS, loaded on first use -------------------------------------------------

// cblas.h's types: the enums and blasint are ints in Debian's (LP64) OpenBLAS.
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

struct OpenBlas {
  SgemmFn sgemm = nullptr;
  void (*set_num_threads)(int) = nullptr;
  char* (*get_corename)() = nullptr;
  char* (*get_config)() = nullptr;
  std::string error;  // why it is missing
  std::mutex mu;
  int threads = -1;  // the last count set (setting it costs a lock in OpenBLAS)

  void use_threads(int t) {
    std::lock_guard<std::mutex> lock(mu);
    if (t != threads) set_num_threads(t);
    threads = t;
  }
};

OpenBlas& openblas() {
  static OpenBlas* lib = [] {
    auto* l = new OpenBlas;
    if (!std::getenv("OPENBLAS_CORETYPE")) {
      const std::string& f = host_backend().target().features;
      const char* core = f.find("+avx512f") != std::string::npos ? "SkylakeX"
                         : f.find("+avx2") != std::string::npos  ? "Haswell"
                                                                 : "Prescott";
      setenv("OPENBLAS_CORETYPE", core, 1);
    }
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      l->error = std::string("OpenBLAS not found (") + dlerror() + ")";
      return l;
    }
    l->sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    l->set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    l->get_corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"));
    l->get_config = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_config"));
    if (!l->sgemm || !l->set_num_threads || !l->get_corename || !l->get_config) {
      l->sgemm = nullptr;
      l->error = "libopenblas.so.0 lacks cblas_sgemm or openblas_set_num_threads";
    }
    return l;
  }();
  return *lib;
}

// --- what the benchmark computes ----------------------------------------------------

// "N=1 H=56 W=56 CI=64 CO=64 K=3 S=1 P=1 relu": sizes by key, and flags.
struct ShapeText {
  std::map<std::string, int64_t> sizes;
  std::vector<std::string> flags;
  bool has(const std::string& k) const { return sizes.count(k) > 0; }
  int64_t get(const std::string& k, int64_t otherwise) const {
    auto it = sizes.find(k);
    return it == sizes.end() ? otherwise : it->second;
  }
  bool flag(const std::string& f) const {
    for (const std::string& g : flags)
      if (g == f) return true;
    return false;
  }
};

ShapeText parse_shape(const std::string& text) {
  ShapeText s;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos) {
      s.flags.push_back(tok);
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str() + eq + 1, &end, 10);
    if (end && *end == 0) s.sizes[tok.substr(0, eq)] = v;
  }
  return s;
}

// The benchmark's name within its dataset: "gmm-4" of benchmark://ops-v0/gmm-4.
std::string short_name(const std::string& uri) { return uri.substr(uri.rfind('/') + 1); }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool is_matmul(const std::string& name, const ShapeText& s) {
  return starts_with(name, "gmm-") && s.has("N") && s.has("M") && s.has("K");
}

bool is_conv(const std::string& name, const ShapeText& s) {
  if (starts_with(name, "t2d-") || s.has("CAP")) return false;  // transposed, capsule: not a plain convolution
  const bool depthwise = s.has("C") && !s.has("CI");
  return (depthwise || (s.has("CI") && s.has("CO"))) && s.has("K") && s.has("N");
}

std::vector<VendorKernel> openblas_matmul(const ShapeText& s, const CompiledSchedule& ours, int threads) {
  OpenBlas& blas = openblas();
  if (!blas.sgemm) return {};
  const int batch = int(s.get("B", 1)), n = int(s.get("N", 0)), m = int(s.get("M", 0)), k = int(s.get("K", 0));
  const float* a = ours.inputs[0].typed<float>();
  const float* b = ours.inputs[1].typed<float>();
  auto c = std::make_shared<HostBuffer>(ours.outputs[0].dtype(), ours.outputs[0].shape());
  VendorKernel v;
  v.name = "OpenBLAS";
  v.output = ours.output_names[0];
  v.run = [&blas, c, a, b, batch, n, m, k, threads] {
    blas.use_threads(threads);
    float* out = c->typed<float>();
    for (int i = 0; i < batch; ++i)
      blas.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, n, m, k, 1.0f, a + int64_t(i) * n * k, k,
                 b + int64_t(i) * k * m, m, 0.0f, out + int64_t(i) * n * m, m);
  };
  v.result = [c]() -> const HostBuffer& { return *c; };
  return {v};
}

#if TENSORGYM_HAVE_ONEDNN

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct Dnnl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// oneDNN with the OpenMP runtime takes its thread count from OpenMP when a primitive
// is created and when it runs.
std::vector<VendorKernel> onednn_matmul(const ShapeText& s, const CompiledSchedule& ours, int threads) {
  omp_set_num_threads(threads);
  const int64_t batch = s.get("B", 0), n = s.get("N", 0), m = s.get("M", 0), k = s.get("K", 0);
  auto d = std::make_shared<Dnnl>();
  const bool batched = batch > 0;
  auto dims = [&](int64_t r, int64_t c) {
    return batched ? dnnl::memory::dims{batch, r, c} : dnnl::memory::dims{r, c};
  };
  const tag t = batched ? tag::abc : tag::ab;
  dnnl::memory::desc a_md(dims(n, k), dt::f32, t), b_md(dims(k, m), dt::f32, t), c_md(dims(n, m), dt::f32, t);
  auto c = std::make_shared<HostBuffer>(ours.outputs[0].dtype(), ours.outputs[0].shape());
  auto prim = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), d->engine));
  auto a_mem = std::make_shared<dnnl::memory>(a_md, d->engine, const_cast<void*>(ours.inputs[0].data()));
  auto b_mem = std::make_shared<dnnl::memory>(b_md, d->engine, const_cast<void*>(ours.inputs[1].data()));
  auto c_mem = std::make_shared<dnnl::memory>(c_md, d->engine, c->data());
  VendorKernel v;
  v.name = "oneDNN";
  v.output = ours.output_names[0];
  v.run = [d, prim, a_mem, b_mem, c_mem, threads] {
    omp_set_num_threads(threads);
    prim->execute(d->stream, {{DNNL_ARG_SRC, *a_mem}, {DNNL_ARG_WEIGHTS, *b_mem}, {DNNL_ARG_DST, *c_mem}});
    d->stream.wait();
  };
  v.result = [c]() -> const HostBuffer& { return *c; };
  return {v};
}

std::vector<VendorKernel> onednn_conv(const ShapeText& s, const CompiledSchedule& ours, int threads) {
  omp_set_num_threads(threads);
  const bool depthwise = s.has("C") && !s.has("CI");
  const int64_t n = s.get("N", 1), ci = depthwise ? s.get("C", 0) : s.get("CI", 0),
                co = depthwise ? ci : s.get("CO", 0), k = s.get("K", 1), stride = s.get("S", 1), pad = s.get("P", 0),
                groups = depthwise ? ci : s.get("G", 1), dil = s.get("DIL", 1);
  std::vector<int64_t> spatial;
  if (s.has("L")) spatial = {s.get("L", 0)};
  else if (s.has("D")) spatial = {s.get("D", 0), s.get("H", 0), s.get("W", 0)};
  else spatial = {s.get("H", 0), s.get("W", 0)};
  const size_t rank = spatial.size();
  // Our output: the last stage (the activation's when there is one).
  const HostBuffer& ours_out = ours.outputs.back();
  if (ours_out.shape().size() != rank + 2 || ours.inputs.size() != 2) return {};
  dnnl::memory::dims src_dims = {n, ci}, w_dims, dst_dims(ours_out.shape().begin(), ours_out.shape().end());
  src_dims.insert(src_dims.end(), spatial.begin(), spatial.end());
  if (groups > 1) w_dims = {groups, co / groups, ci / groups};
  else w_dims = {co, ci};
  w_dims.insert(w_dims.end(), rank, k);
  const tag data_tag = rank == 1 ? tag::ncw : rank == 2 ? tag::nchw : tag::ncdhw;
  const tag w_tag = groups > 1 ? (rank == 1 ? tag::goiw : rank == 2 ? tag::goihw : tag::goidhw)
                               : (rank == 1 ? tag::oiw : rank == 2 ? tag::oihw : tag::oidhw);
  auto d = std::make_shared<Dnnl>();
  dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), w_any(w_dims, dt::f32, tag::any),
      dst_any(dst_dims, dt::f32, tag::any);
  dnnl::primitive_attr attr;
  if (s.flag("relu") || s.flag("relu6")) {
    dnnl::post_ops ops;
    if (s.flag("relu")) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    else ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::memory::dims strides(rank, stride), dilates(rank, dil - 1), padding(rank, pad);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any,
                                      w_any, dst_any, strides, dilates, padding, padding),
      attr, d->engine);
  dnnl::memory x_user({src_dims, dt::f32, data_tag}, d->engine, const_cast<void*>(ours.inputs[0].data()));
  dnnl::memory w_user({w_dims, dt::f32, w_tag}, d->engine, const_cast<void*>(ours.inputs[1].data()));
  auto x_mem = std::make_shared<dnnl::memory>(pd.src_desc(), d->engine);
  auto w_mem = std::make_shared<dnnl::memory>(pd.weights_desc(), d->engine);
  auto y_mem = std::make_shared<dnnl::memory>(pd.dst_desc(), d->engine);
  dnnl::reorder(x_user, *x_mem).execute(d->stream, x_user, *x_mem);
  dnnl::reorder(w_user, *w_mem).execute(d->stream, w_user, *w_mem);
  d->stream.wait();
  auto prim = std::make_shared<dnnl::convolution_forward>(pd);
  auto y = std::make_shared<HostBuffer>(ours_out.dtype(), ours_out.shape());
  VendorKernel v;
  v.name = "oneDNN";
  v.output = ours.output_names.back();
  v.run = [d, prim, x_mem, w_mem, y_mem, threads] {
    omp_set_num_threads(threads);
    prim->execute(d->stream, {{DNNL_ARG_SRC, *x_mem}, {DNNL_ARG_WEIGHTS, *w_mem}, {DNNL_ARG_DST, *y_mem}});
    d->stream.wait();
  };
  const tag out_tag = data_tag;
  v.result = [d, y_mem, y, dst_dims, out_tag]() -> const HostBuffer& {
    dnnl::memory y_user({dst_dims, dt::f32, out_tag}, d->engine, y->data());
    dnnl::reorder(*y_mem, y_user).execute(d->stream, *y_mem, y_user);
    d->stream.wait();
    return *y;
  };
  return {v};
}

#endif  // TENSORGYM_HAVE_ONEDNN

}  // namespace

Expected<std::vector<VendorKernel>> vendor_kernels(const Benchmark& benchmark, const CompiledSchedule& ours,
                                                   int threads) {
  const ShapeText s = parse_shape(benchmark.shape);
  const std::string name = short_name(benchmark.uri);
  threads = std::max(1, threads);
  std::vector<VendorKernel> out;
  if (ours.inputs.empty() || ours.outputs.empty()) return out;
  for (const HostBuffer& b : ours.inputs)
    if (b.dtype() != DataType::f32()) return out;  // the vendor kernels here are fp32
  const bool matmul = is_matmul(name, s), conv = is_conv(name, s);
  if (matmul) out = openblas_matmul(s, ours, threads);
#if TENSORGYM_HAVE_ONEDNN
  try {
    std::vector<VendorKernel> more;
    if (matmul) more = onednn_matmul(s, ours, threads);
    if (conv) more = onednn_conv(s, ours, threads);
    for (VendorKernel& v : more) out.push_back(std::move(v));
  } catch (const dnnl::error& e) {
    return internal_error(benchmark.uri + ": oneDNN refused the operator: " + e.what());
  }
#else
  (void)conv;
#endif
  return out;
}

std::string vendor_libraries_text() {
  OpenBlas& blas = openblas();
  std::string text;
  if (blas.sgemm) {
    // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21"
    std::istringstream config(blas.get_config());
    std::string lib, version;
    config >> lib >> version;
    text = lib + " " + version + " (core " + blas.get_corename() + ")";
  } else {
    text = blas.error;
  }
#if TENSORGYM_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  text += fmt::format(", oneDNN {}.{}.{}", v->major, v->minor, v->patch);
#else
  text += ", oneDNN not built in";
#endif
  return text;
}

}  // namespace tensorgym
