#include "codegen/fpga/synth_report.h"

#include <fmt/format.h>

#include <regex>
#include <sstream>

namespace tensorgym::fpga {
namespace {

// LUTs of a SLICEM each distributed-RAM or shift-register primitive takes.
int64_t luts_of_lutram(const std::string& cell) {
  static const std::map<std::string, int64_t> kLuts = {
      {"RAM32M", 4},    {"RAM64M", 4},    {"RAM32X1D", 2}, {"RAM64X1D", 2}, {"RAM128X1D", 4}, {"RAM32X1S", 1},
      {"RAM64X1S", 1},  {"RAM128X1S", 2}, {"RAM256X1S", 4}, {"SRL16E", 1},  {"SRLC32E", 1},   {"RAM32M16", 8},
      {"RAM64M8", 8}};
  auto it = kLuts.find(cell);
  return it == kLuts.end() ? 0 : it->second;
}

}  // namespace

const PartBudget& xc7z020_budget() {
  static const PartBudget budget{"xc7z020", 53200, 106400, 220, 140};
  return budget;
}

Expected<Utilization> parse_yosys_stat(const std::string& text) {
  // A module's block: "Number of cells: N" then one "  TYPE  COUNT" line per cell type.
  static const std::regex kCells(R"(^\s*Number of cells:?\s+(\d+)\s*$)");
  static const std::regex kCell(R"(^\s+([A-Za-z_$][\w$]*)\s+(\d+)\s*$)");
  Utilization u;
  bool found = false, in_cells = false;
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, kCells)) {
      found = in_cells = true;
      u.cells.clear();
      continue;
    }
    if (!in_cells) continue;
    if (std::regex_match(line, m, kCell)) u.cells[m[1].str()] += std::stoll(m[2].str());
    else if (!line.empty()) in_cells = false;
  }
  if (!found) return invalid_argument("no yosys `stat` cell list (\"Number of cells\") in the report");
  for (const auto& [cell, n] : u.cells) {
    bool lut = cell.size() == 4 && cell.compare(0, 3, "LUT") == 0 && cell[3] >= '1' && cell[3] <= '6';
    if (lut || cell == "INV") u.logic_luts += n;  // an inverter takes a LUT1
    else if (cell == "FDRE" || cell == "FDSE" || cell == "FDCE" || cell == "FDPE") u.flip_flops += n;
    else if (cell == "DSP48E1") u.dsps += n;
    else if (cell == "RAMB36E1") u.ramb36 += n;
    else if (cell == "RAMB18E1") u.ramb18 += n;
    else u.lutram_luts += n * luts_of_lutram(cell);
  }
  return u;
}

bool fits(const Utilization& u, const PartBudget& b) {
  return u.luts() <= b.luts && u.flip_flops <= b.flip_flops && u.dsps <= b.dsps && u.block_rams() <= b.block_rams;
}

std::string summary(const Utilization& u, const PartBudget& b) {
  std::string over;
  auto check = [&](const char* what, double used, double budget) {
    if (used > budget) over += fmt::format("{}{} {} > {}", over.empty() ? "" : ", ", what, used, budget);
  };
  check("LUTs", double(u.luts()), double(b.luts));
  check("flip-flops", double(u.flip_flops), double(b.flip_flops));
  check("DSP48E1", double(u.dsps), double(b.dsps));
  check("block RAM", u.block_rams(), b.block_rams);
  return fmt::format("LUTs {} ({} logic, {} as distributed RAM), flip-flops {}, DSP48E1 {}, block RAM {} ({} RAMB36 + "
                     "{} RAMB18); fits {}: {}",
                     u.luts(), u.logic_luts, u.lutram_luts, u.flip_flops, u.dsps, u.block_rams(), u.ramb36, u.ramb18,
                     b.part, over.empty() ? "yes" : "no (" + over + ")");
}

}  // namespace tensorgym::fpga
