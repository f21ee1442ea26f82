#include "envs/memory/memory_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>

#include "codegen/measure/measure_error.h"
#include "codegen/measure/runner.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "envs/parameters.h"
#include "memplan/exec/graph_wire.h"
#include "memplan/limit_planner.h"
#include "memplan/order.h"
#include "memplan/verify.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

const std::string kName = "memory-v0";

struct MemoryObservation {
  Space space;
  std::function<Expected<Event>(const MemoryEpisode&)> compute;
};

Int64Tensor lifetimes_table(const MemoryEpisode& e) {
  const bool placing = e.placing();
  const Instance& inst = placing ? e.placement_instance() : e.rollout().instance;
  Int64Tensor t{{int64_t(inst.buffers.size()), 4}, {}};
  for (size_t i = 0; i < inst.buffers.size(); ++i) {
    const Buffer& b = inst.buffers[i];
    t.values.insert(t.values.end(), {b.lower, b.upper, b.size, placing ? e.offsets()[i] : -1});
  }
  return t;
}

DoubleTensor tensor_features(const MemoryEpisode& e) {
  const bool placing = e.placing();
  const Instance& inst = placing ? e.placement_instance() : e.rollout().instance;
  const std::vector<std::vector<int>> local = placing ? std::vector<std::vector<int>>() : lifetime_conflicts(inst);
  const std::vector<std::vector<int>>& conflicts = placing ? e.conflicts() : local;
  DoubleTensor t{{int64_t(inst.buffers.size()), 6}, {}};
  for (size_t i = 0; i < inst.buffers.size(); ++i) {
    const Buffer& b = inst.buffers[i];
    double conflict_bytes = 0;
    for (int j : conflicts[i]) conflict_bytes += double(inst.buffers[size_t(j)].size);
    const int64_t off = placing ? e.offsets()[i] : -1;
    t.values.insert(t.values.end(), {double(b.size), double(b.upper - b.lower), double(conflicts[i].size()),
                                     conflict_bytes, off >= 0 ? 1.0 : 0.0, double(off)});
  }
  return t;
}

DoubleTensor candidate_features(const MemoryEpisode& e) {
  DoubleTensor t{{0, 4}, {}};
  switch (e.pending()) {
    case Decision::kRewrite: {
      // Action 0 stops: no row. Each rewrite offered: split by rows (0), recompute
      // (1) or split by channels (2), tiles, operators of the region (of a
      // recomputation: its depth), its rows or channels.
      for (const NextRewrite& n : e.offered()) {
        const bool split = n.next.recomputes.size() == e.rewrites().recomputes.size();
        const Split& s = split ? n.next.splits.back() : Split{};
        t.values.insert(t.values.end(),
                        {split ? (s.region.channels ? 2.0 : 0.0) : 1.0, split ? double(s.tiles) : 0.0,
                         split ? double(s.region.last - s.region.first + 1) : double(n.next.recomputes.back().depth),
                         split ? double(s.region.extent) : 0.0});
      }
      break;
    }
    case Decision::kOrder: {
      for (size_t i = 0; i < e.ready().size() && int64_t(i) < kMaxReadyOps; ++i) {
        int64_t produced = 0, freed = 0;
        e.order_effect(e.ready()[i], &produced, &freed);
        t.values.insert(t.values.end(), {double(produced), double(freed), double(produced - freed), double(i)});
      }
      break;
    }
    case Decision::kInplace: {
      const Opportunity& o = e.opportunities().front();
      t.values.insert(t.values.end(), {o.alias.fused ? 1.0 : 0.0, double(o.bytes_saved), 0.0, 0.0});
      break;
    }
    case Decision::kPlacement: {
      const int b = e.next_buffer();
      const int64_t size = e.placement_instance().buffers[size_t(b)].size;
      const int64_t arena = e.current_arena();
      for (int64_t off : e.candidate_offsets()) {
        // Free bytes above the buffer before the next placed conflict (-1: none above).
        int64_t above = -1;
        for (int j : e.conflicts()[size_t(b)]) {
          const int64_t o = e.offsets()[size_t(j)];
          if (o >= off + size && (above < 0 || o - off - size < above)) above = o - off - size;
        }
        t.values.insert(t.values.end(),
                        {double(off), double(std::max(arena, off + size)), double(above), double(size)});
      }
      break;
    }
    case Decision::kDone: break;
  }
  t.shape[0] = int64_t(t.values.size() / 4);
  return t;
}

std::vector<MemoryObservation> make_observations() {
  std::vector<MemoryObservation> obs;
  auto i64 = [](const char* name, const char* description) {
    return Space::int64_range(name, 0).set_default(Event(int64_t(-1))).set_description(description);
  };
  obs.push_back(
      {Space::string("decision")
           .set_default(Event(std::string()))
           .set_description("the decision pending: rewrite, order, inplace, placement or done"),
       [](const MemoryEpisode& e) -> Expected<Event> { return Event(std::string(decision_name(e.pending()))); }});
  obs.push_back({Space::int64_box("lifetimes", {-1, 4}, -1, Space::kInf)
                     .set_labels({"lower", "upper", "size", "offset"})
                     .set_default(Event(Int64Tensor{{0, 4}, {}}))
                     .set_description("per buffer: lifetime [lower, upper) in steps, bytes, offset (-1 until placed); "
                                      "before placement, the buffers of the default completion"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(lifetimes_table(e)); }});
  obs.push_back({Space::int64_box("live_bytes", {-1}, 0, Space::kInf)
                     .set_default(Event(Int64Tensor{{0}, {}}))
                     .set_description("live bytes over time (one value per change point) of the default completion"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   LiveProfile p = live_profile(e.placing() ? e.placement_instance() : e.rollout().instance);
                   return Event(Int64Tensor{{int64_t(p.live.size())}, p.live});
                 }});
  obs.push_back({i64("arena_size", "the top of the buffers placed so far, in bytes"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(e.current_arena()); }});
  obs.push_back({i64("lower_bound", "peak live bytes (lb_live) for the order so far, completed by the defaults"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(e.rollout().lb_live); }});
  obs.push_back({i64("order_independent_bound",
                     "bytes of the largest operator (inputs, outputs, scratch; in-place allowed): no order beats it"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   if (e.bench().is_graph())
                     return Event(order_independent_bound(*e.bench().graph, true, e.alignment()));
                   int64_t largest = 0;
                   for (const Buffer& b : e.bench().instance->buffers) largest = std::max(largest, b.size);
                   return Event(largest);
                 }});
  obs.push_back({i64("rollout_arena", "the final arena if every remaining decision takes its default"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(e.rollout().arena); }});
  obs.push_back({Space::double_range("arena_ratio", 0)
                     .set_default(Event(-1.0))
                     .set_description("rollout_arena / lower_bound (the info of the reward)"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   const auto& r = e.rollout();
                   return Event(r.lb_live > 0 ? double(r.arena) / double(r.lb_live) : 1.0);
                 }});
  obs.push_back({Space::double_box("tensor_features", {-1, 6})
                     .set_labels({"size", "lifetime", "conflicts", "conflict_bytes", "placed", "offset"})
                     .set_default(Event(DoubleTensor{{0, 6}, {}}))
                     .set_description("per buffer: bytes, lifetime length, buffers it conflicts with and their bytes, "
                                      "placed flag, offset"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(tensor_features(e)); }});
  obs.push_back({Space::double_box("candidate_features", {-1, 4})
                     .set_default(Event(DoubleTensor{{0, 4}, {}}))
                     .set_description(
                         "per candidate of the pending decision; rewrite (action i + 1 is row i): split by rows 0, "
                         "recompute 1 or split by channels 2, tiles, operators split, rows or channels; order: bytes "
                         "produced, bytes freed, net, ready index; inplace: fused, bytes saved, 0, 0; placement: "
                         "offset, arena after, free bytes above (-1: none), size"),
                 [](const MemoryEpisode& e) -> Expected<Event> { return Event(candidate_features(e)); }});
  obs.push_back({Space::int64_box("action_mask", {-1}, 0, 1)
                     .set_default(Event(Int64Tensor{{0}, {}}))
                     .set_description("1 for each action of the episode's action space that is legal now"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   const int64_t n = e.controlled() == Decision::kRewrite   ? kMaxRewriteActions
                                     : e.controlled() == Decision::kOrder   ? kMaxReadyOps
                                     : e.controlled() == Decision::kInplace ? 2
                                                                            : 4;
                   Int64Tensor m{{n}, std::vector<int64_t>(size_t(n), 0)};
                   if (e.pending() == e.controlled())
                     for (int64_t a : e.legal_actions()) m.values[size_t(a)] = 1;
                   return Event(std::move(m));
                 }});
  obs.push_back({Space::int64_box("arena_breakdown", {4, 2}, 0, Space::kInf)
                     .set_labels({"total", "at_peak"})
                     .set_default(Event(Int64Tensor{{4, 2}, std::vector<int64_t>(8, 0)}))
                     .set_description("bytes of graph inputs, outputs, intermediates, scratch: in all, and live at the "
                                      "peak (rows in that order), for the default completion"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   const auto& r = e.rollout();
                   GraphLayout l;
                   l.instance = r.instance;
                   for (int k : r.kinds) l.kind.push_back(BufferKind(k));
                   ArenaBreakdown b = arena_breakdown(l);
                   Int64Tensor t{{4, 2}, {}};
                   for (int k = 0; k < 4; ++k) t.values.insert(t.values.end(), {b.total[k], b.at_peak[k]});
                   return Event(std::move(t));
                 }});
  obs.push_back({Space::boolean("feasible")
                     .set_default(Event(false))
                     .set_description("the default completion fits the memory limit (always, without one)"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   return Event(e.settings().memory_limit <= 0 || e.rollout().arena <= e.settings().memory_limit);
                 }});
  auto lines = [](const std::vector<std::string>& texts) {
    std::string out;
    for (const std::string& t : texts) out += t + "\n";
    return out;
  };
  obs.push_back({Space::string("rewrites")
                     .set_default(Event(std::string()))
                     .set_description("the graph's rewrites so far, one per line: its splits, then its recomputations"),
                 [lines](const MemoryEpisode& e) -> Expected<Event> { return Event(lines(e.rewrites().texts)); }});
  obs.push_back({Space::string("rewrites_offered")
                     .set_default(Event(std::string()))
                     .set_description("the rewrites offered, one per line: line i is rewrite action i + 1"),
                 [lines](const MemoryEpisode& e) -> Expected<Event> {
                   std::vector<std::string> texts;
                   for (const NextRewrite& n : e.offered()) texts.push_back(n.text);
                   return Event(lines(texts));
                 }});
  obs.push_back({Space::double_range("work_ratio", 0)
                     .set_default(Event(1.0))
                     .set_description("arithmetic of the graph as rewritten over the original's (op_work: what "
                                      "splitting's halos and recomputation add)"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   if (!e.bench().is_graph()) return Event(1.0);
                   TG_ASSIGN_OR_RETURN(int64_t now, graph_work(*e.bench().graph));
                   TG_ASSIGN_OR_RETURN(int64_t before, graph_work(e.original_graph()));
                   return Event(before > 0 ? double(now) / double(before) : 1.0);
                 }});
  obs.push_back({Space::string("plan")
                     .set_default(Event(std::string()))
                     .set_description(
                         "the finished plan as CSV id,offset (lifetimes gives the buffers); an error before the end or "
                         "when it does not fit the memory limit"),
                 [](const MemoryEpisode& e) -> Expected<Event> {
                   if (!e.done()) return failed_precondition("the plan is not finished");
                   const int64_t arena = e.current_arena();
                   if (e.settings().memory_limit > 0 && arena > e.settings().memory_limit)
                     return resource_exhausted(
                         fmt::format("infeasible: the arena of {} bytes is over the memory limit of {}", arena,
                                     e.settings().memory_limit));
                   return Event(offsets_to_csv(e.placement_instance(), e.offsets()));
                 }});
  return obs;
}

const std::vector<MemoryObservation>& observations() {
  // Never destroyed: threads of a server still running at exit may read it.
  static const auto* obs = new std::vector<MemoryObservation>(make_observations());
  return *obs;
}

const MemoryObservation* find_observation(const std::string& name) {
  for (const MemoryObservation& o : observations())
    if (o.space.name() == name) return &o;
  return nullptr;
}

std::vector<Space> reward_space_list() {
  return {Space::double_range("arena")
              .set_default(Event(0.0))
              .set_description("reduction of the final arena (the default completion's) since the last step, "
                               "divided by the lower bound of the all-defaults plan"),
          Space::double_range("arena_final")
              .set_default(Event(0.0))
              .set_description("0 until the plan is finished, then the reduction of its arena from the "
                               "all-defaults plan's, divided by that plan's lower bound"),
          Space::double_range("runtime")
              .set_deterministic(false)
              .set_platform_dependent(true)
              .set_default(Event(0.0))
              .set_description("0 until the plan is finished, then the reduction of the graph's measured runtime "
                               "from the original graph's (every decision the default, no memory limit), over it: the whole graph run in its planned arena and timed in a sandboxed worker "
                               "(runner.* parameters), its outputs checked against a run with every tensor apart; "
                               "negative for what rewrites cost, 0 for a plan over the memory limit"),
          Space::double_range("work")
              .set_default(Event(0.0))
              .set_description("the reduction of the graph's arithmetic since the last step over the original's: "
                               "negative for the halos and recomputation a rewrite adds (0 without rewrites)")};
}

Status apply_setting(MemorySettings* s, const std::string& key, const std::string& value) {
  if (key == "memory_limit") {
    TG_ASSIGN_OR_RETURN(s->memory_limit, parse_int_parameter(key, value, 0, kMaxBufferBytes));
  } else if (key == "alignment") {
    TG_ASSIGN_OR_RETURN(int64_t a, parse_int_parameter(key, value, 0, 1 << 20));
    if (a > 0 && (a & (a - 1)) != 0) return invalid_argument("parameter alignment must be a power of two");
    s->alignment = a;
  } else if (key == "default_order") {
    if (std::find(order_names().begin(), order_names().end(), value) == order_names().end())
      return invalid_argument("parameter default_order: unknown order " + quote_text(value));
    s->default_order = value;
  } else if (key == "default_inplace") {
    if (value != "on" && value != "off") return invalid_argument("parameter default_inplace must be on or off");
    s->default_inplace = value == "on";
  } else if (key == "default_placement") {
    if (std::find(placement_names().begin(), placement_names().end(), value) == placement_names().end())
      return invalid_argument("parameter default_placement must be best_fit, first_fit, highest_gap or top");
    s->default_placement = value;
  } else {
    return invalid_argument("unknown parameter " + quote_text(key) +
                            " (known: memory_limit, alignment, default_order, default_inplace, default_placement)");
  }
  return Status();
}

// "placement;memory_limit=1000;default_order=list": the action space and the
// settings that differ from the defaults, so an EpisodeState replays exactly.
std::string settings_suffix(const MemorySettings& s) {
  const MemorySettings d;
  std::string out;
  if (s.memory_limit != d.memory_limit) fmt::format_to(std::back_inserter(out), ";memory_limit={}", s.memory_limit);
  if (s.alignment != d.alignment) fmt::format_to(std::back_inserter(out), ";alignment={}", s.alignment);
  if (s.default_order != d.default_order) out += ";default_order=" + s.default_order;
  if (s.default_inplace != d.default_inplace)
    out += std::string(";default_inplace=") + (s.default_inplace ? "on" : "off");
  if (s.default_placement != d.default_placement) out += ";default_placement=" + s.default_placement;
  return out;
}

}  // namespace

MemoryEnv::MemoryEnv(std::shared_ptr<EnvContext> context) : context_(std::move(context)) {}

const std::string& MemoryEnv::name() const { return kName; }

const std::vector<Space>& MemoryEnv::action_spaces() const {
  // Never destroyed, as the tables below: threads of a server still running at exit read them.
  static const auto* spaces = new std::vector<Space>{
      Space::discrete("order", kMaxReadyOps)
          .set_description("run the ready operator with this index (ready operators in program order) or name"),
      Space::named_discrete("inplace", {"decline", "accept"})
          .set_description("take or leave the pending in-place or fusion opportunity"),
      Space::named_discrete("placement", placement_names())
          .set_description("the offset of the next buffer (largest first): best-fit gap, first-fit (lowest) gap, "
                           "highest gap that fits, top of the arena"),
      Space::discrete("rewrite", kMaxRewriteActions)
          .set_description("0 stops rewriting the graph; i > 0 applies the i-th rewrite offered (rewrites_offered: "
                           "split a region of operators into tiles, or recompute a tensor), or a rewrite's text")};
  return *spaces;
}

const std::vector<Space>& MemoryEnv::observation_spaces() const {
  static const auto* spaces = new std::vector<Space>([] {
    std::vector<Space> s;
    for (const MemoryObservation& o : observations()) s.push_back(o.space);
    return s;
  }());
  return *spaces;
}

const std::vector<Space>& MemoryEnv::reward_spaces() const {
  static const auto* spaces = new std::vector<Space>(reward_space_list());
  return *spaces;
}

Expected<std::vector<Event>> MemoryEnv::reset(const std::string& benchmark, const ResetOptions& options,
                                              const std::vector<std::string>& names) {
  // The action space, then optional ";key=value" settings.
  std::string space = options.action_space;
  MemorySettings settings = settings_;
  const size_t semi = space.find(';');
  if (semi != std::string::npos) {
    std::string rest = space.substr(semi + 1);
    space = space.substr(0, semi);
    while (!rest.empty()) {
      const size_t next = rest.find(';');
      const std::string kv = rest.substr(0, next);
      rest = next == std::string::npos ? "" : rest.substr(next + 1);
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return invalid_argument("action space setting " + quote_text(kv) + " is not key=value");
      TG_RETURN_IF_ERROR(apply_setting(&settings, kv.substr(0, eq), kv.substr(eq + 1)));
    }
  }
  Decision controlled = Decision::kPlacement;
  if (space == "rewrite") {
    controlled = Decision::kRewrite;
  } else if (space == "order") {
    controlled = Decision::kOrder;
  } else if (space == "inplace") {
    controlled = Decision::kInplace;
  } else if (!space.empty() && space != "placement") {
    return invalid_argument("unknown action space " + quote_text(space) + " (memory-v0 has rewrite, order, inplace, placement)");
  }
  if (options.max_episode_steps < 0) return invalid_argument("max_episode_steps must be >= 0");
  if (!options.target.empty() && options.target != "cpu")
    return invalid_argument("memory-v0 has no target " + quote_text(options.target) +
                            ": its plans are modelled, not compiled (its only target is cpu)");
  for (const std::string& n : names)
    if (!find_observation(n)) return invalid_argument("unknown observation space " + quote_text(n));
  const DatasetRegistry& registry = context_->datasets ? *context_->datasets : DatasetRegistry::global();
  TG_ASSIGN_OR_RETURN(GraphBenchmark bench, resolve_graph(benchmark, registry.file_access()));
  TG_ASSIGN_OR_RETURN(MemoryEpisode ep, MemoryEpisode::start(bench, settings, controlled));
  episode_ = std::move(ep);
  options_ = options;
  options_.action_space = space.empty() ? "placement" : space;
  settings_active_ = settings;
  steps_ = 0;
  start_ = std::chrono::steady_clock::now();
  last_arena_.clear();
  cumulative_.clear();
  work_graph_ = nullptr;
  last_reward_space_.clear();
  Status error;
  std::vector<Event> obs = observe(names, &error);
  if (!error.ok()) return error;
  return obs;
}

std::vector<Event> MemoryEnv::observe(const std::vector<std::string>& names, Status* error) const {
  std::vector<Event> out;
  for (const std::string& n : names) {
    const MemoryObservation* def = find_observation(n);
    if (!def) {
      if (error->ok()) *error = invalid_argument("unknown observation space " + quote_text(n));
      out.push_back(Event());
      continue;
    }
    Expected<Event> v = def->compute(*episode_);
    if (v.ok()) {
      out.push_back(std::move(*v));
    } else {
      if (error->ok()) *error = Status(v.status().code(), "observation " + n + ": " + v.status().message());
      out.push_back(def->space.default_value());
    }
  }
  return out;
}

Status MemoryEnv::apply_action(const Event& action) {
  if (action.is<int64_t>()) return episode_->apply(action.as<int64_t>());
  if (action.is<std::string>()) return episode_->apply_text(action.as<std::string>());
  return invalid_argument("a memory-v0 action is an index or an action's text");
}

StepResult MemoryEnv::step(const std::vector<Event>& actions, const std::vector<std::string>& names,
                           const std::vector<std::string>& reward_names) {
  StepResult result;
  if (!episode_) {
    result.error = failed_precondition("step before reset: call reset(benchmark) first");
    result.terminated = true;
    return result;
  }
  const size_t before = episode_->actions().size();
  for (const Event& a : actions) {
    Status st = apply_action(a);
    if (!st.ok()) {
      result.error = st;
      break;
    }
  }
  ++steps_;
  result.action_had_no_effect = result.error.ok() && episode_->actions().size() == before;
  result.observations = observe(names, &result.error);
  const double norm = episode_->default_lb_live() > 0 ? double(episode_->default_lb_live()) : 1.0;
  const double initial = double(episode_->default_arena());
  for (const std::string& n : reward_names) {
    double r = 0;
    if (n == "arena") {
      const double now = double(episode_->rollout().arena);
      auto it = last_arena_.find(n);
      r = ((it == last_arena_.end() ? initial : it->second) - now) / norm;
      last_arena_[n] = now;
    } else if (n == "work") {
      // Only a rewrite changes the graph (held here, so its address is not reused):
      // other steps earn 0 at no cost.
      const std::shared_ptr<const Graph>& graph = episode_->bench().graph;
      if (graph && graph != work_graph_) {
        work_graph_ = graph;
        Expected<int64_t> now = graph_work(*graph);
        Expected<int64_t> original = graph_work(episode_->original_graph());
        if (now.ok() && original.ok() && *original > 0) {
          auto it = last_arena_.find(n);
          r = ((it == last_arena_.end() ? double(*original) : it->second) - double(*now)) / double(*original);
          last_arena_[n] = double(*now);
        }
      }
    } else if (n == "runtime") {
      if (episode_->done() && !last_arena_.count(n) && episode_->bench().is_graph()) {
        const bool fits =
            settings_active_.memory_limit <= 0 || episode_->current_arena() <= settings_active_.memory_limit;
        Expected<double> original = unlimited_seconds();
        const MemoryEpisode::Rollout& plan = episode_->rollout();
        Expected<double> now =
            original.ok() ? graph_seconds(execution_bytes(*episode_->bench().graph, plan.decisions, plan.offsets))
                          : Expected<double>(original.status());
        if (!now.ok() && result.error.ok()) result.error = now.status();
        if (now.ok() && *original > 0) {
          r = fits ? (*original - *now) / *original : 0.0;
          last_arena_[n] = *now;
        }
      }
    } else if (n == "arena_final") {
      if (episode_->done() && !last_arena_.count(n)) {
        r = (initial - double(episode_->current_arena())) / norm;
        last_arena_[n] = double(episode_->current_arena());
      }
    } else {
      if (result.error.ok()) result.error = invalid_argument("unknown reward space " + quote_text(n));
    }
    last_reward_space_ = n;
    cumulative_[n] += r;
    result.rewards.push_back(r);
  }
  result.terminated = episode_->done();
  if (result.terminated && result.error.ok() && settings_active_.memory_limit > 0 &&
      episode_->current_arena() > settings_active_.memory_limit)
    result.error =
        resource_exhausted(fmt::format("infeasible: the plan's arena of {} bytes is over the memory limit of {} bytes",
                                       episode_->current_arena(), settings_active_.memory_limit));
  result.truncated = options_.max_episode_steps > 0 && steps_ >= options_.max_episode_steps;
  return result;
}

Expected<std::unique_ptr<Env>> MemoryEnv::fork() const {
  if (!episode_) return failed_precondition("fork before reset");
  return std::unique_ptr<Env>(std::make_unique<MemoryEnv>(*this));
}

EpisodeState MemoryEnv::state() const {
  EpisodeState s;
  s.env = kName;
  if (!episode_) return s;
  s.benchmark = episode_->bench().uri;
  s.action_space = options_.action_space + settings_suffix(settings_active_);
  s.actions = episode_->actions();
  s.reward_space = last_reward_space_;
  auto it = cumulative_.find(last_reward_space_);
  s.reward = it == cumulative_.end() ? 0.0 : it->second;
  s.walltime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  s.deterministic_rewards = cumulative_;  // all but the measured runtime
  s.deterministic_rewards.erase("runtime");
  return s;
}

Status MemoryEnv::set_parameter(const std::string& key, const std::string& value) {
  if (key.rfind("runner.", 0) == 0) {
    TG_RETURN_IF_ERROR(apply_runner_parameter(&runner_settings_, key, value));
    graph_seconds_.clear();
    baseline_seconds_.clear();
    return Status();
  }
  return apply_setting(&settings_, key, value);
}

std::string MemoryEnv::execution_bytes(const Graph& graph, const GraphDecisions& decisions,
                                       const Offsets& offsets) const {
  GraphExecution execution;
  execution.graph = graph;
  execution.decisions = decisions;
  execution.offsets = offsets;
  execution.alignment = episode_->alignment();
  return serialize_graph_execution(execution);
}

Expected<double> MemoryEnv::graph_seconds(std::string execution_bytes) {
  auto it = graph_seconds_.find(execution_bytes);
  if (it != graph_seconds_.end()) return it->second;
  MeasureRequest request;
  request.target = "cpu";
  request.graph = execution_bytes;
  request.settings = runner_settings_;
  if (context_->threads > 0 && request.settings.threads == 0) request.settings.threads = context_->threads;
  MeasureResult m = context_->runner().measure(request);
  if (!m.ok()) return measure_error_status(m, StatusCode::kFailedPrecondition).with_context("measuring the graph");
  constexpr size_t kCachedRuntimes = 64;
  if (graph_seconds_.size() >= kCachedRuntimes) graph_seconds_.clear();
  graph_seconds_.emplace(std::move(execution_bytes), m.runtime.median_s);
  return m.runtime.median_s;
}

Expected<double> MemoryEnv::unlimited_seconds() {
  GraphBenchmark original;
  original.uri = episode_->bench().uri;
  original.graph = episode_->original_graph_ptr();
  MemorySettings settings = settings_active_;
  settings.memory_limit = 0;
  std::string key = execution_bytes(*original.graph, {}, {}) + settings_suffix(settings);
  auto it = baseline_seconds_.find(key);
  if (it != baseline_seconds_.end()) return it->second;
  TG_ASSIGN_OR_RETURN(MemoryEpisode baseline, MemoryEpisode::start(original, settings, Decision::kPlacement));
  const MemoryEpisode::Rollout& plan = baseline.rollout();
  TG_ASSIGN_OR_RETURN(double seconds, graph_seconds(execution_bytes(*original.graph, plan.decisions, plan.offsets)));
  if (baseline_seconds_.size() >= 16) baseline_seconds_.clear();
  baseline_seconds_.emplace(std::move(key), seconds);
  return seconds;
}

void MemoryEnv::close() { episode_.reset(); }

}  // namespace tensorgym
