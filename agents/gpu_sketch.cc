#include "agents/gpu_sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "codegen/lower/default_gpu_schedule.h"

namespace tensorgym {
namespace {

constexpr int64_t kThreadChoices[] = {64, 128, 256, 512, 1024};
constexpr int64_t kVectorChoices[] = {1, 2, 4};

std::vector<int64_t> divisors_above_one(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 2; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Renders the genome consumers first. With `draw`, each tiled stage's tile is drawn
// on the state its consumers left (a random genome) and stored into `g`.
Expected<Schedule> render(const GpuSketchPlan& plan, GpuGenome& g, Rng* draw) {
  Schedule s(plan.program);
  for (size_t i = plan.stages.size(); i-- > 0;) {
    const std::string& name = plan.stages[i];
    const StageSchedule* st = s.state().find_stage(name);
    if (!st || st->attach != AttachKind::kRoot) continue;  // inlined into a shared copy
    GpuStageGenes& genes = g.stages[i];
    if (genes.tiled && draw) {
      Expected<GpuSharedTile> tile = random_gpu_shared_tile(s, name, *draw);
      if (tile.ok()) genes.tile = std::move(*tile);
      genes.tiled = tile.ok();
    }
    if (genes.tiled) {
      TG_RETURN_IF_ERROR(apply_gpu_shared_tile(s, name, genes.tile));
      continue;
    }
    // An injective producer into its readers; the rest over blocks of threads.
    const StageDef* def = plan.program->find_stage(name);
    if (def && !def->is_reduction() && !plan.program->is_output(name) &&
        s.apply_text("compute_inline(" + name + ")").ok())
      continue;
    TG_RETURN_IF_ERROR(bind_gpu_stage_default(s, name, genes.threads));
  }
  return s;
}

}  // namespace

GpuSketchPlan make_gpu_sketch_plan(const ProgramPtr& program) {
  GpuSketchPlan plan;
  plan.program = program;
  Schedule s(program);
  for (const StageDef& d : program->stages) {
    plan.stages.push_back(d.name);
    plan.tileable.push_back(gpu_shared_tile_applies(s, d.name));
    std::vector<int64_t> extents;
    for (const IterVar& v : d.axes) extents.push_back(v.extent);
    plan.thread_axes.push_back(gpu_thread_axes(extents));
  }
  return plan;
}

GpuGenome random_gpu_genome(const GpuSketchPlan& plan, Rng& rng) {
  GpuGenome g;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    GpuStageGenes genes;
    genes.tiled = plan.tileable[i] && rng.chance(0.9);
    genes.threads = kThreadChoices[rng.below(std::size(kThreadChoices))];
    g.stages.push_back(std::move(genes));
  }
  if (!render(plan, g, &rng).ok()) {
    // The template refused a drawn tile: the genome without it.
    for (GpuStageGenes& genes : g.stages) genes.tiled = false;
  }
  return g;
}

GpuGenome mutate_gpu_genome(const GpuSketchPlan& plan, const GpuGenome& parent, Rng& rng) {
  enum Kind { kTile, kShared, kLocal, kVector, kUnroll, kStructure, kThreads };
  std::vector<std::pair<Kind, size_t>> kinds;  // (kind, stage)
  std::vector<double> weights;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const GpuStageGenes& s = parent.stages[i];
    if (s.tiled) {
      kinds.push_back({kTile, i}), weights.push_back(6);
      if (!s.tile.shared.empty()) kinds.push_back({kShared, i}), weights.push_back(1);
      kinds.push_back({kLocal, i}), weights.push_back(0.5);
      kinds.push_back({kVector, i}), weights.push_back(1);
      kinds.push_back({kUnroll, i}), weights.push_back(0.5);
    } else {
      kinds.push_back({kThreads, i}), weights.push_back(1);
    }
    if (plan.tileable[i] && !s.tile.spatial.empty()) kinds.push_back({kStructure, i}), weights.push_back(0.3);
  }
  if (kinds.empty()) return parent;
  double total = 0;
  for (double w : weights) total += w;
  for (int attempt = 0; attempt < 16; ++attempt) {
    GpuGenome g = parent;
    double x = rng.uniform() * total;
    size_t pick = 0;
    while (pick + 1 < kinds.size() && x >= weights[pick]) x -= weights[pick++];
    const auto [kind, si] = kinds[pick];
    GpuStageGenes& s = g.stages[si];
    GpuSharedTile& t = s.tile;
    switch (kind) {
      case kTile: {
        // A factor moved from one level of an axis to another (the product stays);
        // threads only along the axes that may carry them.
        const size_t n = t.spatial.size(), axes = n + t.reduce.size();
        if (axes == 0) break;
        const size_t a = size_t(rng.below(axes));
        int64_t* f = a < n ? t.spatial[a].data() : t.reduce[a - n].data();
        const int levels = a < n ? 3 : 2;
        const auto& thread_axes = plan.thread_axes[si];
        const bool threads_ok = a < n && std::find(thread_axes.begin(), thread_axes.end(), a) != thread_axes.end();
        std::vector<int> from, to;
        for (int l = 0; l < levels; ++l) {
          if (a < n && l == 1 && !threads_ok) continue;
          if (f[l] > 1) from.push_back(l);
          to.push_back(l);
        }
        if (from.empty() || to.size() < 2) break;
        const int src = rng.pick(from);
        int dst = src;
        while (dst == src) dst = rng.pick(to);
        const int64_t d = rng.pick(divisors_above_one(f[src]));
        f[src] /= d;
        f[dst] *= d;
        break;
      }
      case kShared: {
        const size_t j = size_t(rng.below(t.shared.size()));
        t.shared[j] = !t.shared[j];
        break;
      }
      case kLocal:
        t.local = !t.local;
        break;
      case kVector:
        t.vector = kVectorChoices[rng.below(std::size(kVectorChoices))];
        break;
      case kUnroll:
        t.unroll_reduce = !t.unroll_reduce;
        break;
      case kStructure:
        s.tiled = !s.tiled;
        break;
      case kThreads:
        s.threads = kThreadChoices[rng.below(std::size(kThreadChoices))];
        break;
    }
    if (!(g == parent)) return g;
  }
  return parent;
}

GpuGenome crossover_gpu_genomes(const GpuSketchPlan& plan, const GpuGenome& a, const GpuGenome& b, Rng& rng) {
  GpuGenome g = a;
  for (size_t i = 0; i < plan.stages.size() && i < b.stages.size(); ++i) {
    GpuStageGenes& s = g.stages[i];
    const GpuStageGenes& o = b.stages[i];
    if (rng.chance(0.5)) s.tiled = o.tiled;
    if (rng.chance(0.5)) s.threads = o.threads;
    // Tiles of the same stage have the same axes and inputs unless a tile is missing.
    GpuSharedTile& t = s.tile;
    const GpuSharedTile& u = o.tile;
    if (t.spatial.size() != u.spatial.size() || t.reduce.size() != u.reduce.size() ||
        t.shared.size() != u.shared.size()) {
      if (rng.chance(0.5)) s = o;
      continue;
    }
    for (size_t x = 0; x < t.spatial.size(); ++x)
      if (rng.chance(0.5)) t.spatial[x] = u.spatial[x];
    for (size_t x = 0; x < t.reduce.size(); ++x)
      if (rng.chance(0.5)) t.reduce[x] = u.reduce[x];
    for (size_t x = 0; x < t.shared.size(); ++x)
      if (rng.chance(0.5)) t.shared[x] = u.shared[x];
    if (rng.chance(0.5)) t.local = u.local;
    if (rng.chance(0.5)) t.vector = u.vector;
    if (rng.chance(0.5)) t.unroll_reduce = u.unroll_reduce;
  }
  return g;
}

Expected<Schedule> render_gpu_genome(const GpuSketchPlan& plan, const GpuGenome& g) {
  if (g.stages.size() != plan.stages.size()) return invalid_argument("genome does not match the GPU sketch plan");
  GpuGenome copy = g;
  return render(plan, copy, nullptr);
}

std::string gpu_genome_to_text(const GpuGenome& g) {
  std::ostringstream o;
  for (const GpuStageGenes& s : g.stages) {
    const GpuSharedTile& t = s.tile;
    o << s.tiled << ' ' << s.threads << ' ' << t.local << ' ' << t.vector << ' ' << t.unroll_reduce << " ;";
    for (const auto& f : t.spatial) o << ' ' << f[0] << ' ' << f[1] << ' ' << f[2];
    o << " ;";
    for (const auto& f : t.reduce) o << ' ' << f[0] << ' ' << f[1];
    o << " ;";
    for (bool b : t.shared) o << ' ' << b;
    o << '\n';
  }
  return o.str();
}

Expected<GpuGenome> gpu_genome_from_text(const GpuSketchPlan& plan, const std::string& text) {
  GpuGenome g;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::vector<std::string> parts;  // four, the last ones possibly empty
    for (size_t pos = 0, semi = 0; semi != std::string::npos; pos = semi + 1) {
      semi = line.find(';', pos);
      parts.push_back(line.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
    }
    if (parts.size() != 4) return invalid_argument("malformed GPU genome line: " + line);
    GpuStageGenes s;
    std::istringstream head(parts[0]);
    int tiled = 0, local = 0, unroll = 0;
    head >> tiled >> s.threads >> local >> s.tile.vector >> unroll;
    if (!head) return invalid_argument("malformed GPU genome line: " + line);
    s.tiled = tiled != 0, s.tile.local = local != 0, s.tile.unroll_reduce = unroll != 0;
    std::istringstream sps(parts[1]), rps(parts[2]), shs(parts[3]);
    for (std::array<int64_t, 3> f; sps >> f[0] >> f[1] >> f[2];) s.tile.spatial.push_back(f);
    for (std::array<int64_t, 2> f; rps >> f[0] >> f[1];) s.tile.reduce.push_back(f);
    for (int b; shs >> b;) s.tile.shared.push_back(b != 0);
    g.stages.push_back(std::move(s));
  }
  if (g.stages.size() != plan.stages.size())
    return invalid_argument(fmt::format("GPU genome has {} stages, the program {}", g.stages.size(), plan.stages.size()));
  return g;
}

}  // namespace tensorgym
