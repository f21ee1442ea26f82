#include "codegen/cuda/libdevice.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "codegen/cuda/ptxas.h"

namespace tensorgym::cuda {
namespace {

constexpr const char* kRelativePath = "nvvm/libdevice/libdevice.10.bc";

// The file's bytes, or why it does not load: per path, once per process. Modules are
// read from the bytes lazily (only the functions linked are materialized), in each
// compile's own LLVMContext, so nothing LLVM-owned is shared between threads.
Expected<std::shared_ptr<const llvm::MemoryBuffer>> load(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, Expected<std::shared_ptr<const llvm::MemoryBuffer>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  auto result = [&]() -> Expected<std::shared_ptr<const llvm::MemoryBuffer>> {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
    if (!file) return internal_error("cannot read libdevice " + path + ": " + file.getError().message());
    std::shared_ptr<const llvm::MemoryBuffer> bytes(std::move(*file));
    // Checked once, so that a file that is not libdevice falls back instead of failing
    // every compile.
    llvm::LLVMContext ctx;
    llvm::Expected<std::unique_ptr<llvm::Module>> m = llvm::getLazyBitcodeModule(bytes->getMemBufferRef(), ctx);
    if (!m) return internal_error("libdevice " + path + " is not bitcode: " + llvm::toString(m.takeError()));
    if (!(*m)->getFunction("__nv_expf")) return internal_error("libdevice " + path + " has no __nv_expf");
    return bytes;
  }();
  return cache.emplace(path, std::move(result)).first->second;
}

std::string loads(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return "";
  return load(path).ok() ? path : "";
}

}  // namespace

std::string find_libdevice() {
  if (const char* env = std::getenv("TENSORGYM_LIBDEVICE"); env && *env) return loads(env);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root && *root) {
      if (std::string p = loads((std::filesystem::path(root) / kRelativePath).string()); !p.empty()) return p;
    }
  }
  if (std::string p = loads(std::string("/usr/local/cuda/") + kRelativePath); !p.empty()) return p;
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) return "";
  return loads((std::filesystem::path(ptxas).parent_path().parent_path() / kRelativePath).string());
}

Status link_libdevice(llvm::Module& module, const std::string& path) {
  // A module that calls none of it pays nothing.
  const bool calls = std::any_of(module.begin(), module.end(), [](const llvm::Function& f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (!calls) return Status();
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const llvm::MemoryBuffer> bytes, load(path));
  llvm::Expected<std::unique_ptr<llvm::Module>> lib =
      llvm::getLazyBitcodeModule(bytes->getMemBufferRef(), module.getContext());
  if (!lib) return internal_error("libdevice " + path + " is not bitcode: " + llvm::toString(lib.takeError()));
  // libdevice's own triple (nvptx64-nvidia-gpulibs) and layout serve every NVPTX target.
  (*lib)->setTargetTriple(module.getTargetTriple());
  (*lib)->setDataLayout(module.getDataLayout());
  // Only what the kernels call; what comes in becomes internal, so the optimizer
  // inlines it and drops the rest (none of it is exported from the PTX).
  const bool failed = llvm::Linker::linkModules(
      module, std::move(*lib), llvm::Linker::LinkOnlyNeeded, [](llvm::Module& m, const llvm::StringSet<>& linked) {
        llvm::internalizeModule(m,
                                [&](const llvm::GlobalValue& g) { return !g.hasName() || !linked.count(g.getName()); });
      });
  if (failed) return internal_error("cannot link libdevice " + path + " into the kernel module");
  if (!module.getModuleFlag("nvvm-reflect-ftz"))
    module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  return Status();
}

}  // namespace tensorgym::cuda
