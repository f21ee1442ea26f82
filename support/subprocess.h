// Runs a program to completion and collects what it printed: for tools the code
// generators call (ptxas; later the FPGA flow's yosys and Verilator). Not for anything
// that must be sandboxed: the measurement workers run kernels, never tools.
#pragma once

#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

struct ProgramResult {
  int exit_status = -1;  // when it exited
  int signal = 0;        // when a signal ended it (SIGKILL after a timeout)
  bool timed_out = false;
  std::string output;    // stdout and stderr, interleaved as written
  bool ok() const { return exit_status == 0 && signal == 0 && !timed_out; }
};

// argv[0] is a path or a name looked up on PATH. NOT_FOUND when it cannot be started;
// otherwise the result, whatever the program's exit status. After timeout_s seconds
// the program is killed (timed_out). Output past max_output_bytes is dropped.
Expected<ProgramResult> run_program(const std::vector<std::string>& argv, double timeout_s,
                                    size_t max_output_bytes = size_t(1) << 20);

// The executable `name` on PATH ("" when there is none).
std::string find_on_path(const std::string& name);

}  // namespace tensorgym
