#include "envs/memory/memory_episode.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "memplan/order.h"
#include "support/quote.h"

namespace tensorgym {

const char* decision_name(Decision d) {
  switch (d) {
    case Decision::kRewrite: return "rewrite";
    case Decision::kOrder: return "order";
    case Decision::kInplace: return "inplace";
    case Decision::kPlacement: return "placement";
    case Decision::kDone: return "done";
  }
  return "?";
}

const std::vector<std::string>& placement_names() {
  static const std::vector<std::string> names = {"best_fit", "first_fit", "highest_gap", "top"};
  return names;
}

Expected<MemoryEpisode> MemoryEpisode::start(const GraphBenchmark& bench, const MemorySettings& settings,
                                             Decision controlled) {
  MemoryEpisode ep;
  ep.bench_ = bench;
  ep.settings_ = settings;
  ep.controlled_ = controlled;
  if (controlled != Decision::kPlacement && !bench.is_graph())
    return invalid_argument(std::string("the ") + decision_name(controlled) + " action space needs a model graph; " +
                            bench.uri + " is an offset-only instance (use placement)");
  if (std::find(placement_names().begin(), placement_names().end(), settings.default_placement) ==
      placement_names().end())
    return invalid_argument("unknown default placement " + quote_text(settings.default_placement) +
                            " (known: best_fit, first_fit, highest_gap, top)");
  ep.alignment_ = settings.alignment > 0 ? settings.alignment : (bench.is_graph() ? kDefaultAlignment : 1);
  if (!bench.is_graph()) {
    ep.begin_placement();
  } else if (controlled == Decision::kRewrite) {
    ep.rewriting_ = true;
    ep.original_ = bench.graph;
    ep.offer_rewrites();
  } else {
    TG_RETURN_IF_ERROR(ep.begin_ordering());
  }
  const Rollout& r = ep.rollout();
  ep.default_arena_ = r.arena;
  ep.default_lb_live_ = r.lb_live;
  ep.advance();
  return ep;
}

Status MemoryEpisode::begin_ordering() {
  const Graph& g = *bench_.graph;
  OrderOptions oo;
  oo.inplace = settings_.default_inplace;
  oo.alignment = alignment_;
  oo.memory_limit = settings_.memory_limit;
  oo.time_limit_s = 2;
  TG_ASSIGN_OR_RETURN(std::vector<int> order, plan_order(settings_.default_order, g, oo));
  rewriting_ = false;
  offered_.clear();
  const size_t n = g.ops.size();
  priority_.assign(n, 0);
  for (size_t i = 0; i < order.size(); ++i) priority_[size_t(order[i])] = int(i);
  waiting_.assign(n, 0);
  users_.assign(n, {});
  ready_.clear();
  for (size_t o = 0; o < n; ++o) {
    std::unordered_set<int> producers;
    for (int t : g.ops[o].inputs)
      if (g.tensors[size_t(t)].producer >= 0) producers.insert(g.tensors[size_t(t)].producer);
    waiting_[o] = int(producers.size());
    for (int p : producers) users_[size_t(p)].push_back(int(o));
    if (producers.empty()) ready_.push_back(int(o));
  }
  done_.assign(n, 0);
  position_.assign(n, -1);
  taken_.assign(g.tensors.size(), 0);
  if (n == 0) begin_placement();
  return Status();
}

void MemoryEpisode::offer_rewrites() {
  offered_.clear();
  if (rewrites_.texts.size() >= size_t(kMaxEpisodeRewrites)) return;
  offered_ = next_rewrites(*original_, rewrites_, *bench_.graph, alignment_, 48, size_t(kMaxRewriteActions - 1));
}

Decision MemoryEpisode::pending() const {
  if (rewriting_) return Decision::kRewrite;
  if (!placing_) return opportunities_.empty() ? Decision::kOrder : Decision::kInplace;
  return placed_ < placement_order_.size() ? Decision::kPlacement : Decision::kDone;
}

std::vector<int64_t> MemoryEpisode::legal_actions() const {
  std::vector<int64_t> out;
  switch (pending()) {
    case Decision::kRewrite:
      for (size_t i = 0; i <= offered_.size(); ++i) out.push_back(int64_t(i));
      break;
    case Decision::kOrder:
      for (size_t i = 0; i < ready_.size() && int64_t(i) < kMaxReadyOps; ++i) out.push_back(int64_t(i));
      break;
    case Decision::kInplace: out = {0, 1}; break;
    case Decision::kPlacement: out = {0, 1, 2, 3}; break;
    case Decision::kDone: break;
  }
  return out;
}

int64_t MemoryEpisode::default_action() const {
  switch (pending()) {
    case Decision::kRewrite: return 0;  // stop
    case Decision::kOrder: {
      size_t best = 0;
      for (size_t i = 1; i < ready_.size(); ++i)
        if (priority_[size_t(ready_[i])] < priority_[size_t(ready_[best])]) best = i;
      return int64_t(best);
    }
    case Decision::kInplace:
      // In-place is taken when on; fusion is declined: its memory effect is in-place
      // reuse, which the consumer is offered again when it runs, in the default order.
      return settings_.default_inplace && !opportunities_.front().alias.fused ? 1 : 0;
    case Decision::kPlacement:
      return int64_t(std::find(placement_names().begin(), placement_names().end(), settings_.default_placement) -
                     placement_names().begin());
    case Decision::kDone: break;
  }
  return 0;
}

void MemoryEpisode::advance() {
  while (pending() != Decision::kDone && pending() != controlled_) {
    // Defaults are legal; an error (none is known) must not spin here.
    if (!apply_decision(default_action(), false).ok()) break;
  }
}

void MemoryEpisode::schedule(int op) {
  position_[size_t(op)] = int(decisions_.order.size());
  decisions_.order.push_back(op);
  done_[size_t(op)] = 1;
  ready_.erase(std::find(ready_.begin(), ready_.end(), op));
  for (int u : users_[size_t(op)])
    if (--waiting_[size_t(u)] == 0) ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), u), u);
}

void MemoryEpisode::open_opportunities(int op, bool fused) {
  const Graph& g = *bench_.graph;
  const GraphOp& o = g.ops[size_t(op)];
  if (!fused) {
    for (int k : o.inplace_inputs) {
      const int in = o.inputs[size_t(k)];
      if (taken_[size_t(in)] || !inplace_legal(g, op, k, position_, position_[size_t(op)])) continue;
      opportunities_.push_back({{op, in, o.outputs[0], false}, align_up(g.tensors[size_t(in)].bytes, alignment_)});
      break;
    }
  }
  const int out = o.outputs[0];
  const GraphTensor& t = g.tensors[size_t(out)];
  if (t.kind == TensorKind::kIntermediate && t.consumers.size() == 1) {
    const int c = t.consumers[0];
    const GraphOp& co = g.ops[size_t(c)];
    if (co.fusible && co.inputs[0] == out && waiting_[size_t(c)] == 0 && !done_[size_t(c)] &&
        g.tensors[size_t(co.outputs[0])].bytes == t.bytes &&
        std::find(co.inplace_inputs.begin(), co.inplace_inputs.end(), 0) != co.inplace_inputs.end())
      opportunities_.push_back({{c, out, co.outputs[0], true}, align_up(t.bytes, alignment_)});
  }
}

void MemoryEpisode::begin_placement() {
  if (bench_.is_graph()) {
    Expected<GraphLayout> l = layout_graph(*bench_.graph, decisions_, alignment_);
    layout_ = std::move(*l);  // the decisions are legal by construction
    instance_ = layout_.instance;
    for (BufferKind k : layout_.kind) kinds_.push_back(int(k));
  } else {
    instance_ = *bench_.instance;
    instance_.alignment = alignment_;
    kinds_.assign(instance_.buffers.size(), int(BufferKind::kIntermediate));
  }
  conflicts_ = lifetime_conflicts(instance_);
  placement_order_.resize(instance_.buffers.size());
  std::iota(placement_order_.begin(), placement_order_.end(), 0);
  std::stable_sort(placement_order_.begin(), placement_order_.end(), [&](int a, int b) {
    const Buffer &x = instance_.buffers[size_t(a)], &y = instance_.buffers[size_t(b)];
    return x.size != y.size ? x.size > y.size : x.lower < y.lower;
  });
  offsets_.assign(instance_.buffers.size(), -1);
  placed_ = 0;
  placing_ = true;
}

int MemoryEpisode::next_buffer() const {
  return placing_ && placed_ < placement_order_.size() ? placement_order_[placed_] : -1;
}

int64_t MemoryEpisode::offset_for(int b, int choice) const {
  switch (choice) {
    case 0: return choose_offset(instance_, conflicts_, offsets_, b, GapChoice::kBestFit);
    case 1: return choose_offset(instance_, conflicts_, offsets_, b, GapChoice::kFirstFit);
    case 3: return choose_offset(instance_, conflicts_, offsets_, b, GapChoice::kTop);
    default: break;
  }
  // The highest gap below the top of its placed conflicts that fits, else the top.
  const int64_t size = instance_.buffers[size_t(b)].size;
  std::vector<std::pair<int64_t, int64_t>> placed;
  for (int j : conflicts_[size_t(b)])
    if (offsets_[size_t(j)] >= 0)
      placed.push_back({offsets_[size_t(j)], offsets_[size_t(j)] + instance_.buffers[size_t(j)].size});
  std::sort(placed.begin(), placed.end());
  int64_t cur = 0, found = -1;
  for (const auto& [off, end] : placed) {
    const int64_t start = align_up(cur, alignment_);
    if (off > start && off - start >= size) found = start;
    cur = std::max(cur, end);
  }
  return found >= 0 ? found : align_up(cur, alignment_);
}

std::vector<int64_t> MemoryEpisode::candidate_offsets() const {
  std::vector<int64_t> out;
  const int b = next_buffer();
  if (b < 0) return out;
  for (int c = 0; c < 4; ++c) out.push_back(offset_for(b, c));
  return out;
}

int64_t MemoryEpisode::current_arena() const { return placing_ ? arena_size(instance_, offsets_) : 0; }

void MemoryEpisode::order_effect(int op, int64_t* produced, int64_t* freed) const {
  const Graph& g = *bench_.graph;
  const GraphOp& o = g.ops[size_t(op)];
  *produced = o.scratch_bytes > 0 ? align_up(o.scratch_bytes, alignment_) : 0;
  for (int t : o.outputs) *produced += align_up(g.tensors[size_t(t)].bytes, alignment_);
  *freed = 0;
  std::unordered_set<int> seen;
  for (int t : o.inputs) {
    const GraphTensor& gt = g.tensors[size_t(t)];
    if (!seen.insert(t).second || gt.kind == TensorKind::kConstant || gt.kind == TensorKind::kOutput) continue;
    bool last = true;
    for (int c : gt.consumers)
      if (c != op && !done_[size_t(c)]) last = false;
    if (last) *freed += align_up(gt.bytes, alignment_);
  }
}

Status MemoryEpisode::apply_decision(int64_t index, bool record) {
  const Decision d = pending();
  std::string text;
  switch (d) {
    case Decision::kDone: return failed_precondition("the plan is complete: reset to start another episode");
    case Decision::kRewrite: {
      if (index < 0 || index > int64_t(offered_.size()))
        return invalid_argument(fmt::format("rewrite action {}: 0 stops, 1 to {} apply the rewrites offered", index,
                                            offered_.size()));
      if (index == 0) {
        text = "stop";
        TG_RETURN_IF_ERROR(begin_ordering());
        break;
      }
      const NextRewrite& chosen = offered_[size_t(index - 1)];
      TG_ASSIGN_OR_RETURN(Graph g, apply_rewrites(*original_, chosen.next));
      text = chosen.text;
      bench_.graph = std::make_shared<const Graph>(std::move(g));
      rewrites_ = chosen.next;
      offer_rewrites();
      break;
    }
    case Decision::kOrder: {
      if (index < 0 || index >= int64_t(ready_.size()) || index >= kMaxReadyOps)
        return invalid_argument(fmt::format("order action {}: {} operators are ready", index, ready_.size()));
      const int op = ready_[size_t(index)];
      text = bench_.graph->ops[size_t(op)].name;
      schedule(op);
      open_opportunities(op, false);
      break;
    }
    case Decision::kInplace: {
      if (index != 0 && index != 1)
        return invalid_argument(fmt::format("inplace action {}: 0 declines, 1 accepts", index));
      const Opportunity opp = opportunities_.front();
      opportunities_.erase(opportunities_.begin());
      text = index == 1 ? "accept" : "decline";
      if (index == 1) {
        // A fusion waits if the same operator's in-place offer is still open: no.
        decisions_.aliases.push_back(opp.alias);
        taken_[size_t(opp.alias.input)] = 1;
        if (opp.alias.fused) {
          schedule(opp.alias.op);
          open_opportunities(opp.alias.op, true);
        }
      }
      break;
    }
    case Decision::kPlacement: {
      if (index < 0 || index > 3)
        return invalid_argument(fmt::format(
            "placement action {}: the candidates are 0 best_fit, 1 first_fit, 2 highest_gap, 3 top", index));
      const int b = next_buffer();
      offsets_[size_t(b)] = offset_for(b, int(index));
      ++placed_;
      text = placement_names()[size_t(index)];
      break;
    }
  }
  if (!rewriting_ && !placing_ && ready_.empty() && opportunities_.empty()) begin_placement();
  if (record) actions_.push_back(text);
  rollout_.reset();
  return Status();
}

Status MemoryEpisode::apply(int64_t index) {
  if (pending() != controlled_)
    return failed_precondition(std::string("no ") + decision_name(controlled_) + " decision is pending (" +
                               decision_name(pending()) + ")");
  TG_RETURN_IF_ERROR(apply_decision(index, true));
  advance();
  return Status();
}

Status MemoryEpisode::apply_text(const std::string& text) {
  const Decision d = pending();
  if (d != controlled_)
    return failed_precondition("action " + quote_text(text) + ": no " + decision_name(controlled_) +
                               " decision is pending (" + decision_name(d) + ")");
  int64_t index = -1;
  if (d == Decision::kRewrite) {
    if (text == "stop") index = 0;
    for (size_t i = 0; i < offered_.size() && index < 0; ++i)
      if (offered_[i].text == text) index = int64_t(i + 1);
    if (index < 0)
      return invalid_argument("rewrite action " + quote_text(text) +
                              ": expected stop or one of the rewrites offered (candidate_features, rewrites_offered)");
  } else if (d == Decision::kOrder) {
    for (size_t i = 0; i < ready_.size(); ++i)
      if (bench_.graph->ops[size_t(ready_[i])].name == text) index = int64_t(i);
    if (index < 0) return invalid_argument("order action " + quote_text(text) + ": no ready operator has that name");
  } else if (d == Decision::kInplace) {
    if (text == "accept") index = 1;
    if (text == "decline") index = 0;
    if (index < 0) return invalid_argument("inplace action " + quote_text(text) + ": expected accept or decline");
  } else {
    for (size_t i = 0; i < placement_names().size(); ++i)
      if (placement_names()[i] == text) index = int64_t(i);
    if (index < 0)
      return invalid_argument("placement action " + quote_text(text) +
                              ": expected best_fit, first_fit, highest_gap or top");
  }
  return apply(index);
}

const MemoryEpisode::Rollout& MemoryEpisode::rollout() const {
  if (rollout_) return *rollout_;
  MemoryEpisode copy = *this;
  copy.rollout_.reset();
  copy.controlled_ = Decision::kDone;
  copy.advance();
  auto r = std::make_shared<Rollout>();
  r->decisions = copy.decisions_;
  r->instance = copy.instance_;
  r->kinds = copy.kinds_;
  r->offsets = copy.offsets_;
  r->arena = arena_size(r->instance, r->offsets);
  r->lb_live = peak_live_bytes(r->instance);
  rollout_ = r;
  return *rollout_;
}

}  // namespace tensorgym
