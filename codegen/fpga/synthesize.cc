#include "codegen/fpga/synthesize.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace tensorgym::fpga {
namespace {

namespace fs = std::filesystem;

#ifdef TENSORGYM_FPGA_RTL_GEN
const char* const kRtlGen = TENSORGYM_FPGA_RTL_GEN;  // build/fpga_rtl
const char* const kRtlSource = TENSORGYM_FPGA_RTL_SOURCE;  // codegen/fpga/rtl
#endif

Expected<Utilization> read_report(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return internal_error("no synthesis report at " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_yosys_stat(text.str());
}

}  // namespace

Expected<Utilization> synthesize(const std::string& name, const std::string& dir) {
#if !defined(TENSORGYM_FPGA_RTL_GEN) || !defined(TENSORGYM_YOSYS)
  (void)name, (void)dir;
  return unavailable("no yosys: configure found none (or TENSORGYM_SYNTH is off), so the accelerator is not "
                     "synthesized and its resources are unknown");
#else
  const fs::path params = fs::path(kRtlGen) / name / "accel_params.svh";
  if (!fs::exists(params))
    return unavailable("no RTL parameters for configuration " + name + " (TENSORGYM_RTL_CONFIGS lists those built)");
  std::error_code error;
  fs::create_directories(dir, error);
  if (fs::path(dir) != params.parent_path())
    fs::copy_file(params, fs::path(dir) / "accel_params.svh", fs::copy_options::overwrite_existing, error);
  if (error) return internal_error("cannot prepare " + dir + ": " + error.message());
  const fs::path log = fs::path(dir) / "synth.log";
  const std::string command = std::string(kRtlSource) + "/synth.sh '" + dir + "' '" + log.string() + "' > '" +
                              (fs::path(dir) / "stdout.txt").string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) return internal_error("yosys failed: see " + log.string());
  return read_report(fs::path(dir) / "utilization.txt");
#endif
}

Expected<Utilization> synthesized_utilization(const std::string& name) {
#if !defined(TENSORGYM_FPGA_RTL_GEN) || !defined(TENSORGYM_YOSYS)
  return synthesize(name, "");
#else
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const fs::path dir = fs::path(kRtlGen) / name;
  // And one at a time across processes (tests run side by side): an advisory lock.
  const int lock_fd = ::open((dir / "synth.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd < 0) return unavailable("no RTL parameters for configuration " + name + " (cannot open " +
                                      (dir / "synth.lock").string() + ")");
  ::flock(lock_fd, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the lock
  } unlock{lock_fd};
  const fs::path report = dir / "utilization.txt";
  std::error_code error;
  bool fresh = fs::exists(report, error);
  if (fresh) {
    const auto made = fs::last_write_time(report, error);
    if (fs::last_write_time(dir / "accel_params.svh", error) > made) fresh = false;
    for (const fs::directory_entry& e : fs::directory_iterator(kRtlSource, error))
      if (e.path().extension() == ".sv" && e.last_write_time(error) > made) fresh = false;
  }
  if (!fresh) return synthesize(name, dir.string());
  return read_report(report);
#endif
}

}  // namespace tensorgym::fpga
