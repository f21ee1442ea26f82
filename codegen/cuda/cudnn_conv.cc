#include "codegen/cuda/cudnn_conv.h"

#include <fmt/format.h>

#include <climits>
#include <mutex>
#include <vector>

#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/library_executable.h"
#include "codegen/cuda/shared_library.h"

namespace tensorgym::cuda {
namespace {

using CudnnHandle = struct cudnnContext*;
using CudnnTensor = struct cudnnTensorStruct*;            // cudnnTensorDescriptor_t
using CudnnFilter = struct cudnnFilterStruct*;            // cudnnFilterDescriptor_t
using CudnnConvolution = struct cudnnConvolutionStruct*;  // cudnnConvolutionDescriptor_t
using CudnnStatus = int;                                  // cudnnStatus_t: 0 is CUDNN_STATUS_SUCCESS

// The enumerators the runner passes, as cuDNN 8's and 9's headers number them
// (cudnn_graph.h, cudnn_ops.h); C enums travel as int.
constexpr int kDataFloat = 0;              // cudnnDataType_t CUDNN_DATA_FLOAT
constexpr int kTensorNchw = 0;             // cudnnTensorFormat_t CUDNN_TENSOR_NCHW (filters: KCRS)
constexpr int kCrossCorrelation = 1;       // cudnnConvolutionMode_t CUDNN_CROSS_CORRELATION
constexpr int kTensorOpMath = 1;           // cudnnMathType_t CUDNN_TENSOR_OP_MATH
constexpr int kTensorOpMathConvert = 2;    // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
constexpr int kFmaMath = 3;                // CUDNN_FMA_MATH: FMA kernels only (cuDNN 8 and later)
constexpr int kForwardAlgorithmCount = 8;  // CUDNN_CONVOLUTION_FWD_ALGO_COUNT
// cuDNN 9's statuses for a sub-library (libcudnn_cnn.so.9) that is missing.
constexpr CudnnStatus kSublibraryLoadingFailed = 1008, kSublibraryUnavailable = 3009;

constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;

// cudnnConvolutionFwdAlgoPerf_t (cuDNN 7.1 and later).
struct ForwardAlgorithmPerf {
  int algo;  // cudnnConvolutionFwdAlgo_t
  CudnnStatus status;
  float time;  // milliseconds
  size_t memory;
  int determinism;  // cudnnDeterminism_t
  int math_type;    // cudnnMathType_t
  int reserved[3];
};
static_assert(sizeof(ForwardAlgorithmPerf) == 48, "cudnnConvolutionFwdAlgoPerf_t is 48 bytes");

const char* algorithm_name(int algo) {
  static const char* const kNames[kForwardAlgorithmCount] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  return algo >= 0 && algo < kForwardAlgorithmCount ? kNames[algo] : "UNKNOWN";
}

// The entry points, each resolved from the symbol named in its comment (cudnn_graph.h,
// cudnn_ops.h, cudnn_cnn.h; libcudnn.so.9 is the shim that exports them all).
struct CudnnApi {
  size_t (*get_version)();                              // cudnnGetVersion
  const char* (*get_error_string)(CudnnStatus status);  // cudnnGetErrorString
  CudnnStatus (*create)(CudnnHandle* handle);           // cudnnCreate
  CudnnStatus (*destroy)(CudnnHandle handle);           // cudnnDestroy
  CudnnStatus (*create_tensor)(CudnnTensor* desc);      // cudnnCreateTensorDescriptor
  CudnnStatus (*set_tensor_4d)(CudnnTensor desc, int format, int data_type, int n, int c, int h,
                               int w);              // cudnnSetTensor4dDescriptor
  CudnnStatus (*destroy_tensor)(CudnnTensor desc);  // cudnnDestroyTensorDescriptor
  CudnnStatus (*create_filter)(CudnnFilter* desc);  // cudnnCreateFilterDescriptor
  CudnnStatus (*set_filter_4d)(CudnnFilter desc, int data_type, int format, int k, int c, int h,
                               int w);                        // cudnnSetFilter4dDescriptor
  CudnnStatus (*destroy_filter)(CudnnFilter desc);            // cudnnDestroyFilterDescriptor
  CudnnStatus (*create_convolution)(CudnnConvolution* desc);  // cudnnCreateConvolutionDescriptor
  CudnnStatus (*set_convolution_2d)(CudnnConvolution desc, int pad_h, int pad_w, int stride_h, int stride_w,
                                    int dilation_h, int dilation_w, int mode,
                                    int compute_type);                 // cudnnSetConvolution2dDescriptor
  CudnnStatus (*set_group_count)(CudnnConvolution desc, int groups);   // cudnnSetConvolutionGroupCount
  CudnnStatus (*set_math_type)(CudnnConvolution desc, int math_type);  // cudnnSetConvolutionMathType
  CudnnStatus (*destroy_convolution)(CudnnConvolution desc);           // cudnnDestroyConvolutionDescriptor
  CudnnStatus (*output_dim)(CudnnConvolution conv, CudnnTensor x, CudnnFilter w, int* n, int* c, int* h,
                            int* w_out);  // cudnnGetConvolution2dForwardOutputDim
  CudnnStatus (*find_forward)(CudnnHandle handle, CudnnTensor x, CudnnFilter w, CudnnConvolution conv, CudnnTensor y,
                              int requested, int* returned,
                              ForwardAlgorithmPerf* results);  // cudnnFindConvolutionForwardAlgorithm
  CudnnStatus (*workspace_size)(CudnnHandle handle, CudnnTensor x, CudnnFilter w, CudnnConvolution conv, CudnnTensor y,
                                int algo, size_t* bytes);  // cudnnGetConvolutionForwardWorkspaceSize
  CudnnStatus (*forward)(CudnnHandle handle, const void* alpha, CudnnTensor x_desc, const void* x, CudnnFilter w_desc,
                         const void* w, CudnnConvolution conv, int algo, void* workspace, size_t workspace_bytes,
                         const void* beta, CudnnTensor y_desc, void* y);  // cudnnConvolutionForward
  std::string library;
  int major = 0, minor = 0, patch = 0;

  std::string describe() const { return fmt::format("cuDNN {}.{}.{} ({})", major, minor, patch, library); }
};

bool resolve_all(void* lib, CudnnApi& a) {
  return resolve_symbol(lib, "cudnnGetVersion", a.get_version) &&
         resolve_symbol(lib, "cudnnGetErrorString", a.get_error_string) &&
         resolve_symbol(lib, "cudnnCreate", a.create) && resolve_symbol(lib, "cudnnDestroy", a.destroy) &&
         resolve_symbol(lib, "cudnnCreateTensorDescriptor", a.create_tensor) &&
         resolve_symbol(lib, "cudnnSetTensor4dDescriptor", a.set_tensor_4d) &&
         resolve_symbol(lib, "cudnnDestroyTensorDescriptor", a.destroy_tensor) &&
         resolve_symbol(lib, "cudnnCreateFilterDescriptor", a.create_filter) &&
         resolve_symbol(lib, "cudnnSetFilter4dDescriptor", a.set_filter_4d) &&
         resolve_symbol(lib, "cudnnDestroyFilterDescriptor", a.destroy_filter) &&
         resolve_symbol(lib, "cudnnCreateConvolutionDescriptor", a.create_convolution) &&
         resolve_symbol(lib, "cudnnSetConvolution2dDescriptor", a.set_convolution_2d) &&
         resolve_symbol(lib, "cudnnSetConvolutionGroupCount", a.set_group_count) &&
         resolve_symbol(lib, "cudnnSetConvolutionMathType", a.set_math_type) &&
         resolve_symbol(lib, "cudnnDestroyConvolutionDescriptor", a.destroy_convolution) &&
         resolve_symbol(lib, "cudnnGetConvolution2dForwardOutputDim", a.output_dim) &&
         resolve_symbol(lib, "cudnnFindConvolutionForwardAlgorithm", a.find_forward) &&
         resolve_symbol(lib, "cudnnGetConvolutionForwardWorkspaceSize", a.workspace_size) &&
         resolve_symbol(lib, "cudnnConvolutionForward", a.forward);
}

Expected<const CudnnApi*> load_cudnn() {
  static const Expected<const CudnnApi*> api = []() -> Expected<const CudnnApi*> {
    TG_ASSIGN_OR_RETURN(SharedLibrary lib,
                        open_first_library({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cuDNN"));
    auto* a = new CudnnApi();  // loaded for the life of the process
    a->library = lib.name;
    if (!resolve_all(lib.handle, *a)) {
      const char* e = dlerror();
      delete a;
      return Status(StatusCode::kUnavailable,
                    fmt::format("cuDNN not found: {} lacks an entry point the runner calls ({})", lib.name,
                                e ? e : "unknown symbol"));
    }
    // cuDNN 9 numbers its versions major * 10000 + minor * 100 + patch, cuDNN 8 and
    // earlier major * 1000 + minor * 100 + patch.
    const size_t v = a->get_version();
    const size_t per_major = v >= 90000 ? 10000 : 1000;
    a->major = int(v / per_major), a->minor = int(v % per_major / 100), a->patch = int(v % 100);
    if (a->major < 8) {
      const std::string found = a->describe();
      delete a;
      return failed_precondition(
          fmt::format("{} is too old: FP32 without tensor cores (CUDNN_FMA_MATH) needs cuDNN 8 or later", found));
    }
    return static_cast<const CudnnApi*>(a);
  }();
  return api;
}

// cuDNN's name for a status: "CUDNN_STATUS_NOT_SUPPORTED".
const char* status_name(const CudnnApi& api, CudnnStatus status) {
  const char* name = api.get_error_string(status);
  return name ? name : "an unnamed cuDNN status";
}

// OK for CUDNN_STATUS_SUCCESS; otherwise the call and cuDNN's name for the status. A
// convolution sub-library cuDNN 9 cannot load is UNAVAILABLE, as a missing cuDNN is.
Status check_cudnn(const CudnnApi& api, CudnnStatus status, const char* call) {
  if (status == 0) return Status();
  const std::string message = fmt::format("{}: {} (status {})", call, status_name(api, status), status);
  if (api.major >= 9 && (status == kSublibraryLoadingFailed || status == kSublibraryUnavailable))
    return Status(StatusCode::kUnavailable,
                  fmt::format("cuDNN not found: {} loads but not its convolution library (libcudnn_cnn.so.9): {}",
                              api.library, message));
  return internal_error(message);
}

// The handle and descriptors of one convolution, destroyed with it.
struct CudnnState {
  const CudnnApi& api;
  CudnnHandle handle = nullptr;
  CudnnTensor x = nullptr, y = nullptr;
  CudnnFilter w = nullptr;
  CudnnConvolution conv = nullptr;
  int algo = 0;
  size_t workspace_bytes = 0;

  explicit CudnnState(const CudnnApi& a) : api(a) {}
  CudnnState(const CudnnState&) = delete;
  CudnnState& operator=(const CudnnState&) = delete;
  ~CudnnState() {
    if (conv) api.destroy_convolution(conv);
    if (w) api.destroy_filter(w);
    if (y) api.destroy_tensor(y);
    if (x) api.destroy_tensor(x);
    if (handle) api.destroy(handle);
  }
};

size_t float_bytes(int64_t a, int64_t b, int64_t c, int64_t d) { return size_t(a * b * c * d) * sizeof(float); }

// Y = conv(X, W) over the operands {X, W, Y, workspace}.
class CudnnConv2d final : public LibraryExecutable {
 public:
  CudnnConv2d(const Conv2dParams& p, std::unique_ptr<CudnnState> state, std::vector<std::string> remarks)
      : LibraryExecutable(
            "cuDNN convolution",
            {{"X", float_bytes(p.batch, p.in_channels, p.height, p.width), Role::kInput},
             {"W", float_bytes(p.out_channels, p.in_channels / p.groups, p.kernel_h, p.kernel_w), Role::kInput},
             {"Y", float_bytes(p.batch, p.out_channels, p.out_height(), p.out_width()), Role::kOutput},
             {"cuDNN workspace", state->workspace_bytes, Role::kScratch}}),
        state_(std::move(state)) {
    remarks_ = std::move(remarks);
  }

 private:
  const std::unique_ptr<CudnnState> state_;
  mutable std::mutex mu_;  // one caller of the handle at a time

  // Enqueued on the handle's stream, the default one (cudnnCreate's).
  Status call(const std::vector<CUdeviceptr>& operands) const override {
    const float alpha = 1, beta = 0;
    const CudnnState& s = *state_;
    std::lock_guard<std::mutex> lock(mu_);
    return check_cudnn(
        s.api,
        s.api.forward(s.handle, &alpha, s.x, reinterpret_cast<const void*>(operands[0]), s.w,
                      reinterpret_cast<const void*>(operands[1]), s.conv, s.algo, reinterpret_cast<void*>(operands[3]),
                      s.workspace_bytes, &beta, s.y, reinterpret_cast<void*>(operands[2])),
        "cudnnConvolutionForward");
  }
};

Status check_params(const Conv2dParams& p) {
  const auto bad = [&](const std::string& what) {
    return invalid_argument(fmt::format("cuDNN convolution: {} (N={} C={} H={} W={} K={} R={} S={} groups={})", what,
                                        p.batch, p.in_channels, p.height, p.width, p.out_channels, p.kernel_h,
                                        p.kernel_w, p.groups));
  };
  for (int64_t d : {p.batch, p.in_channels, p.height, p.width, p.out_channels, p.kernel_h, p.kernel_w, p.stride_h,
                    p.stride_w, p.dilation_h, p.dilation_w, p.groups})
    if (d < 1 || d > INT_MAX) return bad(fmt::format("size {} is not in 1..{}", d, INT_MAX));
  if (p.pad_h < 0 || p.pad_w < 0 || p.pad_h > INT_MAX || p.pad_w > INT_MAX) return bad("a padding is negative");
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0)
    return bad("the groups do not divide both channel counts");
  if (p.out_height() < 1 || p.out_width() < 1) return bad("the output is empty");
  // cuDNN's 4-D descriptors hold fewer than 2^31 elements.
  const double x = double(p.batch) * double(p.in_channels) * double(p.height) * double(p.width);
  const double w = double(p.out_channels) * double(p.in_channels / p.groups) * double(p.kernel_h) * double(p.kernel_w);
  const double y = double(p.batch) * double(p.out_channels) * double(p.out_height()) * double(p.out_width());
  if (x > INT_MAX || w > INT_MAX || y > INT_MAX) return bad("a tensor has 2^31 elements or more");
  return Status();
}

// The descriptors of `p`, with cuDNN's output shape checked against ours.
Status describe(CudnnState& s, const Conv2dParams& p) {
  const CudnnApi& a = s.api;
  TG_RETURN_IF_ERROR(check_cudnn(a, a.create_tensor(&s.x), "cudnnCreateTensorDescriptor"));
  TG_RETURN_IF_ERROR(check_cudnn(a, a.create_tensor(&s.y), "cudnnCreateTensorDescriptor"));
  TG_RETURN_IF_ERROR(check_cudnn(a, a.create_filter(&s.w), "cudnnCreateFilterDescriptor"));
  TG_RETURN_IF_ERROR(check_cudnn(a, a.create_convolution(&s.conv), "cudnnCreateConvolutionDescriptor"));
  TG_RETURN_IF_ERROR(check_cudnn(
      a, a.set_tensor_4d(s.x, kTensorNchw, kDataFloat, int(p.batch), int(p.in_channels), int(p.height), int(p.width)),
      "cudnnSetTensor4dDescriptor (X)"));
  TG_RETURN_IF_ERROR(check_cudnn(a,
                                 a.set_filter_4d(s.w, kDataFloat, kTensorNchw, int(p.out_channels),
                                                 int(p.in_channels / p.groups), int(p.kernel_h), int(p.kernel_w)),
                                 "cudnnSetFilter4dDescriptor (W)"));
  TG_RETURN_IF_ERROR(
      check_cudnn(a,
                  a.set_convolution_2d(s.conv, int(p.pad_h), int(p.pad_w), int(p.stride_h), int(p.stride_w),
                                       int(p.dilation_h), int(p.dilation_w), kCrossCorrelation, kDataFloat),
                  "cudnnSetConvolution2dDescriptor"));
  TG_RETURN_IF_ERROR(check_cudnn(a, a.set_group_count(s.conv, int(p.groups)), "cudnnSetConvolutionGroupCount"));
  TG_RETURN_IF_ERROR(check_cudnn(a, a.set_math_type(s.conv, kFmaMath), "cudnnSetConvolutionMathType (FMA)"));
  int n = 0, k = 0, h = 0, w = 0;
  TG_RETURN_IF_ERROR(
      check_cudnn(a, a.output_dim(s.conv, s.x, s.w, &n, &k, &h, &w), "cudnnGetConvolution2dForwardOutputDim"));
  if (n != p.batch || k != p.out_channels || h != p.out_height() || w != p.out_width())
    return internal_error(fmt::format("cuDNN's output shape [{}, {}, {}, {}] is not the convolution's [{}, {}, {}, {}]",
                                      n, k, h, w, p.batch, p.out_channels, p.out_height(), p.out_width()));
  return check_cudnn(a, a.set_tensor_4d(s.y, kTensorNchw, kDataFloat, n, k, h, w), "cudnnSetTensor4dDescriptor (Y)");
}

// cuDNN runs each forward algorithm once and lists them fastest first; the first that
// succeeded with FMA math and a workspace under the cap is kept. The remarks: the choice
// first, then every algorithm tried.
Expected<std::vector<std::string>> choose_algorithm(CudnnState& s) {
  const CudnnApi& a = s.api;
  ForwardAlgorithmPerf results[kForwardAlgorithmCount] = {};
  int returned = 0;
  TG_RETURN_IF_ERROR(
      check_cudnn(a, a.find_forward(s.handle, s.x, s.w, s.conv, s.y, kForwardAlgorithmCount, &returned, results),
                  "cudnnFindConvolutionForwardAlgorithm"));
  std::vector<std::string> tried;
  const ForwardAlgorithmPerf* chosen = nullptr;
  for (int i = 0; i < returned && i < kForwardAlgorithmCount; ++i) {
    const ForwardAlgorithmPerf& r = results[i];
    const bool tensor_cores = r.math_type == kTensorOpMath || r.math_type == kTensorOpMathConvert;
    tried.push_back(fmt::format("tried {}: {}, {:.4f} ms, workspace {} bytes, math type {}", algorithm_name(r.algo),
                                r.status == 0 ? "ok" : status_name(a, r.status), r.time, r.memory, r.math_type));
    if (!chosen && r.status == 0 && !tensor_cores && r.memory <= kMaxWorkspaceBytes) chosen = &r;
  }
  if (!chosen)
    return failed_precondition(
        fmt::format("{} has no FMA forward algorithm for this convolution within a {} byte "
                    "workspace ({} tried)",
                    a.describe(), kMaxWorkspaceBytes, returned));
  s.algo = chosen->algo;
  TG_RETURN_IF_ERROR(check_cudnn(a, a.workspace_size(s.handle, s.x, s.w, s.conv, s.y, s.algo, &s.workspace_bytes),
                                 "cudnnGetConvolutionForwardWorkspaceSize"));
  std::vector<std::string> remarks{
      fmt::format("{}: CUDNN_CONVOLUTION_FWD_ALGO_{}, FMA math, workspace {} bytes, "
                  "{:.4f} ms in cudnnFindConvolutionForwardAlgorithm",
                  a.describe(), algorithm_name(s.algo), s.workspace_bytes, chosen->time)};
  remarks.insert(remarks.end(), tried.begin(), tried.end());
  return remarks;
}

}  // namespace

Expected<std::string> cudnn_library() {
  TG_ASSIGN_OR_RETURN(const CudnnApi* api, load_cudnn());
  return api->describe();
}

Expected<std::shared_ptr<const Executable>> cudnn_conv2d(const Conv2dParams& params) {
  TG_RETURN_IF_ERROR(check_params(params));
  if (const std::string& reason = run_unavailable_reason(); !reason.empty())
    return Status(StatusCode::kUnavailable, reason);
  TG_ASSIGN_OR_RETURN(const CudnnApi* api, load_cudnn());
  TG_ASSIGN_OR_RETURN(const Driver* driver, Driver::get());
  // The primary context current: cuDNN (through the CUDA runtime) shares it.
  TG_RETURN_IF_ERROR(driver->make_current());
  auto state = std::make_unique<CudnnState>(*api);
  TG_RETURN_IF_ERROR(check_cudnn(*api, api->create(&state->handle), "cudnnCreate"));
  TG_RETURN_IF_ERROR(describe(*state, params));
  TG_ASSIGN_OR_RETURN(std::vector<std::string> remarks, choose_algorithm(*state));
  return std::shared_ptr<const Executable>(std::make_shared<CudnnConv2d>(params, std::move(state), std::move(remarks)));
}

}  // namespace tensorgym::cuda
