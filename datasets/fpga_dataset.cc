// benchmark://fpga-v0: the accelerator's programs (datasets/fpga/, docs/datasets.md
// "fpga-v0"): ResNet-18's convolutions C2..C11 at batch 1, VTA's evaluation set, and
// int8 GEMMs, all int8 in VTA's blocked layouts, each with its expert schedule for the
// fpga target (<program>.fpga.sched).
#include <algorithm>
#include <cctype>
#include <map>

#include "datasets/embedded_files.h"
#include "datasets/suites.h"

namespace tensorgym {
namespace {

constexpr std::string_view kProgram = ".tg", kSchedule = ".fpga.sched";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The shape a program's first comment line gives: "# ... accelerator: 56x56, 64 -> 64,
// 3x3, stride 1, pad 1; int8, ..." -> "56x56, 64 -> 64, 3x3, stride 1, pad 1".
std::string shape_of(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  const size_t colon = first.find(": ");
  if (colon == std::string::npos) return "";
  const size_t end = first.find(';', colon);
  return first.substr(colon + 2, end == std::string::npos ? std::string::npos : end - colon - 2);
}

// Names in natural order: digit runs compare as numbers (resnet18_c2 before _c10).
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string x = a.substr(i, ie - i), y = b.substr(j, je - j);
      if (x.size() != y.size()) return x.size() < y.size();  // no leading zeros in these names
      if (x != y) return x < y;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::unique_ptr<StaticDataset> make_fpga_dataset() {
  std::map<std::string, std::string> schedules;
  for (const EmbeddedFile& f : fpga_dataset_files())
    if (ends_with(f.name, kSchedule)) schedules[f.name.substr(0, f.name.size() - kSchedule.size())] = f.text;
  std::vector<SuiteEntry> entries;
  for (const EmbeddedFile& f : fpga_dataset_files()) {
    if (!ends_with(f.name, kProgram)) continue;
    const std::string name = f.name.substr(0, f.name.size() - kProgram.size());
    auto it = schedules.find(name);
    entries.push_back({name, shape_of(f.text), f.text, it == schedules.end() ? std::string() : it->second});
  }
  std::sort(entries.begin(), entries.end(),
            [](const SuiteEntry& x, const SuiteEntry& y) { return natural_less(x.name, y.name); });
  return std::make_unique<StaticDataset>(
      "benchmark://fpga-v0",
      "int8 convolutions (ResNet-18 C2..C11) and GEMMs in the accelerator's blocked layouts, with expert schedules "
      "for the fpga target",
      std::move(entries));
}

}  // namespace tensorgym
