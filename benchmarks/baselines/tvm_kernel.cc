#include "benchmarks/baselines/tvm_kernel.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace tensorgym {
namespace {

// --- TVM FFI's C ABI (tvm/ffi/c_api.h, TVM FFI 0.1), the parts used here ---------

// Type indices of TVMFFIAny values.
constexpr int32_t kFfiNone = 0;
constexpr int32_t kFfiBool = 2;
constexpr int32_t kFfiDLTensorPtr = 7;
constexpr int32_t kFfiRawStr = 8;
constexpr int32_t kFfiStaticObjectBegin = 64;

// A value passed to or returned by an FFI function: 16 bytes.
struct FfiAny {
  int32_t type_index = kFfiNone;
  uint32_t zero_padding = 0;
  union {
    int64_t v_int64;
    void* v_ptr;
    const char* v_c_str;
  };
  FfiAny() : v_int64(0) {}
};
static_assert(sizeof(FfiAny) == 16);

struct FfiByteArray {
  const char* data;
  size_t size;
};

// Every object starts with this header (24 bytes); an error's cell follows it.
struct FfiObjectHeader {
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t padding;
  void* deleter;
};
struct FfiErrorCell {
  FfiByteArray kind, message;
};

// DLPack's tensor descriptor (dlpack.h, version 1.x).
struct DLDevice {
  int32_t device_type;  // kDLCPU = 1
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};

using FunctionGetGlobal = int (*)(const FfiByteArray* name, void** out);
using FunctionCall = int (*)(void* func, FfiAny* args, int32_t num_args, FfiAny* result);
using ObjectDecRef = int (*)(void* obj);
using ErrorMoveFromRaised = void (*)(void** result);

struct FfiApi {
  TvmLibraries libs;
  FunctionGetGlobal get_global = nullptr;
  FunctionCall call = nullptr;
  ObjectDecRef dec_ref = nullptr;
  ErrorMoveFromRaised move_error = nullptr;
  void* load_module = nullptr;  // ffi.ModuleLoadFromFile
  void* get_function = nullptr;  // ffi.ModuleGetFunction
};

std::mutex g_mutex;
FfiApi* g_api = nullptr;  // opened once, never closed (TVM's runtime is not meant to unload)

// The raised error's "Kind: message", released.
std::string take_error(const FfiApi& api) {
  void* err = nullptr;
  api.move_error(&err);
  if (!err) return "TVM reported an error without a message";
  const auto* cell = reinterpret_cast<const FfiErrorCell*>(static_cast<const char*>(err) + sizeof(FfiObjectHeader));
  std::string text = std::string(cell->kind.data, cell->kind.size) + ": " + std::string(cell->message.data, cell->message.size);
  api.dec_ref(err);
  return text;
}

void release(const FfiApi& api, FfiAny& v) {
  if (v.type_index >= kFfiStaticObjectBegin && v.v_ptr) api.dec_ref(v.v_ptr);
  v = FfiAny();
}

Expected<FfiApi*> open_api(const TvmLibraries& libs, int threads) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api) {
    if (g_api->libs.ffi != libs.ffi || g_api->libs.runtime != libs.runtime)
      return failed_precondition(fmt::format("TVM's runtime is already open from {} and {}; one process uses one TVM",
                                             g_api->libs.ffi, g_api->libs.runtime));
    return g_api;
  }
  // The runtime's thread pool reads this when it first starts.
  if (!std::getenv("TVM_NUM_THREADS")) setenv("TVM_NUM_THREADS", std::to_string(std::max(1, threads)).c_str(), 1);
  // libtvm_ffi first and global: libtvm_runtime needs it by its soname, and the
  // kernels resolve TVMFFIErrorSetRaisedFromCStrParts from it.
  void* ffi = dlopen(libs.ffi.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!ffi) return unavailable(fmt::format("cannot open TVM FFI's library {}: {}", libs.ffi, dlerror()));
  if (!dlopen(libs.runtime.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return unavailable(fmt::format("cannot open TVM's runtime {}: {}", libs.runtime, dlerror()));
  auto api = std::make_unique<FfiApi>();
  api->libs = libs;
  api->get_global = reinterpret_cast<FunctionGetGlobal>(dlsym(ffi, "TVMFFIFunctionGetGlobal"));
  api->call = reinterpret_cast<FunctionCall>(dlsym(ffi, "TVMFFIFunctionCall"));
  api->dec_ref = reinterpret_cast<ObjectDecRef>(dlsym(ffi, "TVMFFIObjectDecRef"));
  api->move_error = reinterpret_cast<ErrorMoveFromRaised>(dlsym(ffi, "TVMFFIErrorMoveFromRaised"));
  if (!api->get_global || !api->call || !api->dec_ref || !api->move_error)
    return unavailable(libs.ffi + " lacks TVM FFI's C ABI (TVMFFIFunctionGetGlobal, TVMFFIFunctionCall, ...)");
  for (auto [name, out] : {std::pair{"ffi.ModuleLoadFromFile", &api->load_module},
                           std::pair{"ffi.ModuleGetFunction", &api->get_function}}) {
    FfiByteArray n{name, std::strlen(name)};
    if (api->get_global(&n, out) != 0) return unavailable(fmt::format("TVM FFI: {}: {}", name, take_error(*api)));
    if (!*out) return unavailable(fmt::format("TVM FFI at {} has no global function {}", libs.ffi, name));
  }
  g_api = api.release();
  return g_api;
}

// DLPack's type code of a HostBuffer element type.
Expected<DLDataType> dl_type(DataType t) {
  if (t.lanes != 1) return invalid_argument("vector element types have no DLPack tensor here");
  if (t.is_float()) return DLDataType{2, t.bits, 1};
  if (t.bits == 1) return DLDataType{6, 8, 1};  // kDLBool, one byte per element as HostBuffer stores it
  return DLDataType{uint8_t(t.code == TypeCode::kUInt ? 1 : 0), t.bits, 1};
}

}  // namespace

struct TvmKernel::Arguments {
  std::vector<DLTensor> tensors;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<FfiAny> values;
};

Expected<std::unique_ptr<TvmKernel>> TvmKernel::load(const TvmLibraries& libs, const std::string& module_path,
                                                     int threads, const std::string& function) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(module_path, ec)) return not_found("no TVM module at " + module_path);
  Expected<FfiApi*> api = open_api(libs, threads);
  if (!api.ok()) return api.status();
  const FfiApi& a = **api;

  std::unique_ptr<TvmKernel> k(new TvmKernel());
  FfiAny path, result;
  path.type_index = kFfiRawStr;
  path.v_c_str = module_path.c_str();
  if (a.call(a.load_module, &path, 1, &result) != 0)
    return invalid_argument(fmt::format("TVM cannot load {}: {}", module_path, take_error(a)));
  if (result.type_index < kFfiStaticObjectBegin) return invalid_argument("TVM loaded " + module_path + " as no module");
  k->module_ = result.v_ptr;

  FfiAny args[3], found;
  args[0].type_index = result.type_index;
  args[0].v_ptr = k->module_;
  args[1].type_index = kFfiRawStr;
  args[1].v_c_str = function.c_str();
  args[2].type_index = kFfiBool;
  args[2].v_int64 = 1;  // look in the imported modules too
  if (a.call(a.get_function, args, 3, &found) != 0)
    return invalid_argument(fmt::format("TVM: {} in {}: {}", function, module_path, take_error(a)));
  if (found.type_index < kFfiStaticObjectBegin) return not_found(fmt::format("{} has no function {}", module_path, function));
  k->function_ = found.v_ptr;
  return k;
}

TvmKernel::~TvmKernel() {
  if (!g_api) return;
  if (function_) g_api->dec_ref(function_);
  if (module_) g_api->dec_ref(module_);
}

Status TvmKernel::bind(const std::vector<HostBuffer*>& buffers) {
  auto args = std::make_unique<Arguments>();
  args->tensors.resize(buffers.size());
  args->shapes.resize(buffers.size());
  args->values.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    Expected<DLDataType> t = dl_type(buffers[i]->dtype());
    if (!t.ok()) return t.status();
    args->shapes[i] = buffers[i]->shape();
    DLTensor& d = args->tensors[i];
    d.data = buffers[i]->data();
    d.device = {1, 0};
    d.ndim = int32_t(args->shapes[i].size());
    d.dtype = *t;
    d.shape = args->shapes[i].data();
    d.strides = nullptr;  // dense, row-major
    d.byte_offset = 0;
    args->values[i].type_index = kFfiDLTensorPtr;
    args->values[i].v_ptr = &d;
  }
  args_ = std::move(args);
  error_ = Status();
  Status s = call();
  if (!s.ok()) args_.reset();
  return s;
}

Status TvmKernel::call() {
  if (!args_) return failed_precondition("TvmKernel::run before a successful bind");
  FfiAny result;
  if (g_api->call(function_, args_->values.data(), int32_t(args_->values.size()), &result) != 0)
    return invalid_argument("TVM kernel: " + take_error(*g_api));
  release(*g_api, result);
  return Status();
}

void TvmKernel::run() {
  Status s = call();
  if (!s.ok() && error_.ok()) error_ = s;
}

}  // namespace tensorgym
