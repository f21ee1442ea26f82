#include "codegen/cuda/cublas_matmul.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/device_memory.h"

namespace tensorgym::cuda {
namespace {

using CublasHandle = struct cublasContext*;
using CublasStatus = int;  // 0 is CUBLAS_STATUS_SUCCESS
constexpr int kCublasOpN = 0;

// The entry points, from the symbols named in the comments (cublas_api.h).
struct CublasApi {
  CublasStatus (*create)(CublasHandle* handle);                    // cublasCreate_v2
  CublasStatus (*destroy)(CublasHandle handle);                    // cublasDestroy_v2
  CublasStatus (*get_version)(CublasHandle handle, int* version);  // cublasGetVersion_v2
  CublasStatus (*sgemm)(CublasHandle handle, int transa, int transb, int m, int n, int k, const float* alpha,
                        const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                        int ldc);  // cublasSgemm_v2
  std::string library;
};

Expected<const CublasApi*> load_cublas() {
  static const Expected<const CublasApi*> api = []() -> Expected<const CublasApi*> {
    std::string tried;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* e = dlerror();
        tried += fmt::format("{}{}", tried.empty() ? "" : "; ", e ? e : name);
        continue;
      }
      auto* a = new CublasApi();  // loaded for the life of the process
      a->library = name;
      a->create = reinterpret_cast<decltype(a->create)>(dlsym(lib, "cublasCreate_v2"));
      a->destroy = reinterpret_cast<decltype(a->destroy)>(dlsym(lib, "cublasDestroy_v2"));
      a->get_version = reinterpret_cast<decltype(a->get_version)>(dlsym(lib, "cublasGetVersion_v2"));
      a->sgemm = reinterpret_cast<decltype(a->sgemm)>(dlsym(lib, "cublasSgemm_v2"));
      if (!a->create || !a->destroy || !a->get_version || !a->sgemm) {
        delete a;
        return Status(StatusCode::kUnavailable, fmt::format("{} lacks cublasCreate_v2 / cublasSgemm_v2", name));
      }
      return static_cast<const CublasApi*>(a);
    }
    return Status(StatusCode::kUnavailable, "cuBLAS not found: " + tried);
  }();
  return api;
}

Status check_cublas(CublasStatus status, const char* call) {
  if (status == 0) return Status();
  return internal_error(fmt::format("{}: cuBLAS status {}", call, status));
}

class CublasMatmul final : public Executable {
 public:
  CublasMatmul(const CublasApi& api, int m, int n, int k) : api_(api), m_(m), n_(n), k_(k) {}
  ~CublasMatmul() override {
    if (handle_) api_.destroy(handle_);
  }

  void run(void* const* args, int num_threads) const override {
    const Status s = run_checked(args, num_threads);
    if (s.ok()) return;
    std::fprintf(stderr, "tensorgym: cuBLAS SGEMM failed: %s\n", s.to_string().c_str());
    std::abort();
  }

  Status run_checked(void* const* args, int) const override {
    const Driver* driver = nullptr;
    TG_RETURN_IF_ERROR(ready(&driver));
    DeviceAllocations memory(*driver);
    CUdeviceptr a = 0, b = 0, c = 0;
    TG_RETURN_IF_ERROR(allocate(memory, args, a, b, c));
    TG_RETURN_IF_ERROR(sgemm(a, b, c));
    TG_RETURN_IF_ERROR(driver->check(driver->api().ctx_synchronize(), "cuCtxSynchronize (cuBLAS SGEMM)"));
    return memory.copy_out(args[2], c, bytes(m_, n_));
  }

  bool has_device_clock() const override { return true; }
  Expected<std::vector<double>> time_on_device(void* const* args, int warmup_runs, int number,
                                               int repeat) const override {
    const Driver* driver = nullptr;
    TG_RETURN_IF_ERROR(ready(&driver));
    DeviceAllocations memory(*driver);
    CUdeviceptr a = 0, b = 0, c = 0;
    TG_RETURN_IF_ERROR(allocate(memory, args, a, b, c));
    return time_with_events(
        *driver, [&] { return sgemm(a, b, c); }, warmup_runs, number, repeat);
  }

 private:
  const CublasApi& api_;
  const int m_, n_, k_;
  mutable std::mutex mu_;
  mutable CublasHandle handle_ = nullptr;

  static size_t bytes(int rows, int cols) { return size_t(rows) * size_t(cols) * sizeof(float); }

  // The driver with the primary context current, which cuBLAS (through the CUDA
  // runtime) shares, and the handle created once.
  Status ready(const Driver** driver) const {
    TG_ASSIGN_OR_RETURN(*driver, Driver::get());
    TG_RETURN_IF_ERROR((*driver)->make_current());
    std::lock_guard<std::mutex> lock(mu_);
    if (!handle_) TG_RETURN_IF_ERROR(check_cublas(api_.create(&handle_), "cublasCreate_v2"));
    return Status();
  }

  Status allocate(DeviceAllocations& memory, void* const* args, CUdeviceptr& a, CUdeviceptr& b, CUdeviceptr& c) const {
    TG_ASSIGN_OR_RETURN(a, memory.allocate(bytes(m_, k_), 0, "A"));
    TG_ASSIGN_OR_RETURN(b, memory.allocate(bytes(k_, n_), 0, "B"));
    TG_ASSIGN_OR_RETURN(c, memory.allocate(bytes(m_, n_), 0, "C"));
    TG_RETURN_IF_ERROR(memory.copy_in(a, args[0], bytes(m_, k_)));
    return memory.copy_in(b, args[1], bytes(k_, n_));
  }

  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: the operands swapped, nothing
  // transposed. Enqueued on the default stream; one handle, one caller at a time.
  Status sgemm(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) const {
    const float alpha = 1, beta = 0;
    std::lock_guard<std::mutex> lock(mu_);
    return check_cublas(
        api_.sgemm(handle_, kCublasOpN, kCublasOpN, n_, m_, k_, &alpha, reinterpret_cast<const float*>(b), n_,
                   reinterpret_cast<const float*>(a), k_, &beta, reinterpret_cast<float*>(c), n_),
        "cublasSgemm_v2");
  }
};

}  // namespace

Expected<std::shared_ptr<const Executable>> cublas_matmul(int64_t m, int64_t n, int64_t k) {
  for (int64_t d : {m, n, k})
    if (d < 1 || d > INT_MAX) return invalid_argument(fmt::format("cuBLAS SGEMM: size {} out of range", d));
  if (const std::string& reason = run_unavailable_reason(); !reason.empty())
    return Status(StatusCode::kUnavailable, reason);
  TG_ASSIGN_OR_RETURN(const CublasApi* api, load_cublas());
  return std::shared_ptr<const Executable>(std::make_shared<CublasMatmul>(*api, int(m), int(n), int(k)));
}

}  // namespace tensorgym::cuda
