// The resources a yosys synthesis of the accelerator uses (codegen/fpga/rtl/synth.sh
// writes yosys's `stat` to build/fpga_rtl/NAME/utilization.txt), and whether they fit
// a part's budget. Counts are yosys's before place and route (docs/fpga.md "RTL").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "support/status.h"

namespace tensorgym::fpga {

struct Utilization {
  std::map<std::string, int64_t> cells;  // every cell type of the design, as yosys counts it
  int64_t logic_luts = 0;     // LUT1..LUT6 and INV (a LUT1)
  int64_t lutram_luts = 0;    // LUTs used as distributed RAM or shift registers (RAM32M: 4, ...)
  int64_t flip_flops = 0;     // FDRE, FDSE, FDCE, FDPE
  int64_t dsps = 0;           // DSP48E1
  int64_t ramb36 = 0, ramb18 = 0;
  int64_t luts() const { return logic_luts + lutram_luts; }
  double block_rams() const { return double(ramb36) + double(ramb18) / 2; }  // in 36 Kb blocks
};

// A device's budget in the units above.
struct PartBudget {
  std::string part;
  int64_t luts = 0, flip_flops = 0, dsps = 0;
  double block_rams = 0;  // 36 Kb blocks
};

// The Zynq-7020 (xc7z020): 53,200 LUTs, 106,400 flip-flops, 220 DSP48E1, 140 RAMB36.
const PartBudget& xc7z020_budget();

// Reads the cell counts of yosys's `stat` report (the last module listed: the flattened
// top). INVALID_ARGUMENT when the text has no cell list.
Expected<Utilization> parse_yosys_stat(const std::string& text);

// Whether every resource is within the budget.
bool fits(const Utilization& u, const PartBudget& budget);

// "LUTs 9,225 (64 RAM32M ...), flip-flops 1,409, DSP48E1 99, block RAM 28.5 (6 RAMB36 +
// 45 RAMB18); fits xc7z020: yes" (or which resource is over).
std::string summary(const Utilization& u, const PartBudget& budget);

}  // namespace tensorgym::fpga
