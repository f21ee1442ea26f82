#include "codegen/cuda/cublas_matmul.h"

#include <fmt/format.h>

#include <climits>
#include <mutex>

#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/library_executable.h"
#include "codegen/cuda/shared_library.h"

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
    TG_ASSIGN_OR_RETURN(SharedLibrary lib,
                        open_first_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, "cuBLAS"));
    auto* a = new CublasApi();  // loaded for the life of the process
    a->library = lib.name;
    if (!resolve_symbol(lib.handle, "cublasCreate_v2", a->create) ||
        !resolve_symbol(lib.handle, "cublasDestroy_v2", a->destroy) ||
        !resolve_symbol(lib.handle, "cublasGetVersion_v2", a->get_version) ||
        !resolve_symbol(lib.handle, "cublasSgemm_v2", a->sgemm)) {
      delete a;
      return Status(StatusCode::kUnavailable, fmt::format("{} lacks cublasCreate_v2 / cublasSgemm_v2", lib.name));
    }
    return static_cast<const CublasApi*>(a);
  }();
  return api;
}

Status check_cublas(CublasStatus status, const char* call) {
  if (status == 0) return Status();
  return internal_error(fmt::format("{}: cuBLAS status {}", call, status));
}

// C = A·B over the operands {A, B, C}; the handle is created on the first run, where the
// device is.
class CublasMatmul final : public LibraryExecutable {
 public:
  CublasMatmul(const CublasApi& api, int m, int n, int k)
      : LibraryExecutable(
            "cuBLAS SGEMM",
            {{"A", bytes(m, k), Role::kInput}, {"B", bytes(k, n), Role::kInput}, {"C", bytes(m, n), Role::kOutput}}),
        api_(api),
        m_(m),
        n_(n),
        k_(k) {}
  ~CublasMatmul() override {
    if (handle_) api_.destroy(handle_);
  }

 private:
  const CublasApi& api_;
  const int m_, n_, k_;
  mutable std::mutex mu_;
  mutable CublasHandle handle_ = nullptr;

  static size_t bytes(int rows, int cols) { return size_t(rows) * size_t(cols) * sizeof(float); }

  // The primary context is current, which cuBLAS (through the CUDA runtime) shares.
  Status prepare() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!handle_) TG_RETURN_IF_ERROR(check_cublas(api_.create(&handle_), "cublasCreate_v2"));
    return Status();
  }

  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: the operands swapped, nothing
  // transposed. Enqueued on the default stream; one handle, one caller at a time.
  Status call(const std::vector<CUdeviceptr>& operands) const override {
    const float alpha = 1, beta = 0;
    const auto a = reinterpret_cast<const float*>(operands[0]), b = reinterpret_cast<const float*>(operands[1]);
    std::lock_guard<std::mutex> lock(mu_);
    return check_cublas(api_.sgemm(handle_, kCublasOpN, kCublasOpN, n_, m_, k_, &alpha, b, n_, a, k_, &beta,
                                   reinterpret_cast<float*>(operands[2]), n_),
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
