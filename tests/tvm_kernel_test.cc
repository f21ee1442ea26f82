// benchmarks/baselines/tvm_kernel.h without TVM: the errors a user meets when a module
// or TVM's libraries are missing or are not what they should be. Loading and running
// real TVM kernels is tested where TVM is installed (tests/python/test_metaschedule.py).
#include "benchmarks/baselines/tvm_kernel.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tensorgym {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/tvm_kernel_test_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TvmKernelTest, AMissingModuleIsNotFound) {
  auto k = TvmKernel::load({"/nonexistent/libtvm_ffi.so", "/nonexistent/libtvm_runtime.so"}, "/nonexistent/gmm-1.so", 1);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound);
  EXPECT_NE(k.status().message().find("/nonexistent/gmm-1.so"), std::string::npos) << k.status().message();
}

TEST(TvmKernelTest, LibrariesThatCannotBeOpenedAreUnavailableAndNamed) {
  const std::string module = temp_file("module.so", "not a shared object");
  const std::string not_a_library = temp_file("libtvm_ffi.so", "not a shared object either");
  auto k = TvmKernel::load({not_a_library, not_a_library}, module, 1);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(k.status().message().find("cannot open TVM FFI's library " + not_a_library), std::string::npos)
      << k.status().message();
  // Nothing was kept open: the same call fails the same way, not as "already open".
  auto again = TvmKernel::load({not_a_library, not_a_library}, module, 1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  std::filesystem::remove(module);
  std::filesystem::remove(not_a_library);
}

}  // namespace
}  // namespace tensorgym
