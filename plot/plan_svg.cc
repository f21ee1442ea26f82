#include "plot/plan_svg.h"

#include <fmt/format.h>

#include <algorithm>

#include "plot/svg_escape.h"

namespace tensorgym {
namespace {

std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string ratio(double v) { return fmt::format("{:.4f}", v); }

std::string human(int64_t bytes) {
  if (bytes >= (int64_t(1) << 20)) return fmt::format("{:.2f} MiB", double(bytes) / double(1 << 20));
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace

std::string plan_svg(const Instance& inst, const Offsets& offsets, int64_t lower_bound, const std::string& title,
                     const std::vector<int>& kinds) {
  const double W = 1000, H = 600, left = 80, right = 20, top = 40, bottom = 40;
  const double pw = W - left - right, ph = H - top - bottom;
  int64_t t0 = INT64_MAX, t1 = 0;
  for (const Buffer& b : inst.buffers) {
    t0 = std::min(t0, b.lower);
    t1 = std::max(t1, b.upper);
  }
  if (inst.buffers.empty()) t0 = 0;
  if (t1 <= t0) t1 = t0 + 1;
  const int64_t arena = arena_size(inst, offsets);
  const double ymax = double(std::max({arena, lower_bound, int64_t(1)})) * 1.05;
  auto X = [&](double t) { return left + (t - double(t0)) / double(t1 - t0) * pw; };
  auto Y = [&](double off) { return top + ph - off / ymax * ph; };
  static const char* fill[] = {"#9ecae1", "#a1d99b", "#d9d9d9", "#fdae6b"};
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(left) + "\" y=\"20\" font-size=\"14\">" + svg_escape(title) + ": arena " + human(arena) +
       ", lower bound " + human(lower_bound) + ", ratio " +
       (lower_bound > 0 ? ratio(double(arena) / double(lower_bound)) : "n/a") + "</text>\n";
  for (size_t i = 0; i < inst.buffers.size(); ++i) {
    const Buffer& b = inst.buffers[i];
    if (i >= offsets.size() || offsets[i] < 0 || b.size == 0) continue;
    const int k = i < kinds.size() ? std::clamp(kinds[i], 0, 3) : 2;
    const double x = X(double(b.lower)), y = Y(double(offsets[i] + b.size));
    const double w = std::max(0.5, X(double(b.upper)) - x), h = std::max(0.5, Y(double(offsets[i])) - y);
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#555\" stroke-width=\"0.3\">"
        "<title>{} [{}, {}) @{} +{}</title></rect>\n",
        num(x), num(y), num(w), num(h), fill[k], svg_escape(b.id), b.lower, b.upper, offsets[i], b.size);
  }
  // Live bytes over time: the area the arena must hold at least.
  const LiveProfile p = live_profile(inst);
  std::string path;
  for (size_t k = 0; k < p.times.size(); ++k) {
    const double x0 = X(double(p.times[k])), x1 = X(double(k + 1 < p.times.size() ? p.times[k + 1] : t1));
    const double y = Y(double(p.live[k]));
    path += (k == 0 ? "M" : "L") + num(x0) + " " + num(y) + " L" + num(x1) + " " + num(y) + " ";
  }
  if (!path.empty()) s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#3182bd\" stroke-width=\"1.2\"/>\n";
  s += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(Y(double(lower_bound))) + "\" y2=\"" +
       num(Y(double(lower_bound))) + "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n";
  s += "<text x=\"" + num(left + 4) + "\" y=\"" + num(Y(double(lower_bound)) - 4) +
       "\" fill=\"#d62728\">lower bound</text>\n";
  s += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(Y(double(arena))) + "\" y2=\"" +
       num(Y(double(arena))) + "\" stroke=\"black\" stroke-width=\"1\"/>\n";
  s += "<text x=\"" + num(left + pw - 40) + "\" y=\"" + num(Y(double(arena)) - 4) + "\">arena</text>\n";
  // Axes.
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(left + pw) + "\" y2=\"" +
       num(top + ph) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" + num(top + ph) +
       "\" stroke=\"black\"/>\n";
  s += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 10) +
       fmt::format("\" text-anchor=\"middle\">time (steps {} to {})</text>\n", t0, t1);
  s += "<text x=\"15\" y=\"" + num(top + ph / 2) + "\" transform=\"rotate(-90 15 " + num(top + ph / 2) +
       ")\" text-anchor=\"middle\">offset (0 to " + human(int64_t(ymax)) + ")</text>\n";
  s += "</svg>\n";
  return s;
}

}  // namespace tensorgym
