// Memory traffic: the lines one iteration of each loop touches, the lines of each
// access that miss each cache level and TLB level over a run, and how much of a walk
// the hardware prefetchers bring in time.
#include "codegen/analysis/cost_model_internal.h"

namespace tensorgym {
namespace cost_model_internal {

// The order in which a store's loops walk memory: its loops outermost first, with the
// vectorized loop (whose lanes run at once) moved innermost.
std::vector<int> Model::memory_chain(const NestStore& st) const {
  std::vector<int> chain;
  int vec = -1;
  for (int l : st.loops) {
    if (vec_ok_[size_t(l)]) {
      vec = l;
    } else {
      chain.push_back(l);
    }
  }
  if (vec >= 0) chain.push_back(vec);
  return chain;
}

// Lines one iteration of each loop touches, all buffers (accesses to one buffer with
// the same strides are shifted copies; different strides add up), and the footprint
// of the whole run.
void Model::compute_working_sets() {
  const size_t n = S.loops.size();
  ws_lines_.assign(n, 0.0);
  std::vector<std::vector<Entry>> entries(n);
  std::vector<std::vector<Entry>>& whole = lr_whole_;
  whole.assign(n, {});
  std::vector<char> varying(n, 0);
  mchains_.assign(S.stores.size(), {});
  // Loops some access walks through a non-affine index (fused loops' divisions and
  // modulos): such a walk comes back to its lines after many iterations, so it re-uses
  // them only if what the loop touches in between fits (ws_over).
  long_reuse_.assign(n, 0);
  for (const NestStore& st : S.stores)
    for (const NestAccess& a : st.accesses)
      for (const IndexTerm& term : a.index.terms)
        if (term.loop < 0)
          for (int dep : term.deps) long_reuse_[size_t(dep)] = 1;
  auto add = [&](std::vector<Entry>& list, const NestAccess& a, double lines) {
    for (Entry& e : list) {
      if (e.buffer != a.buffer) continue;
      const IndexForm& x = e.access->index;
      const IndexForm& y = a.index;
      bool same = x.terms.size() == y.terms.size();
      for (size_t k = 0; same && k < x.terms.size(); ++k)
        same = x.terms[k].loop == y.terms[k].loop && x.terms[k].coeff == y.terms[k].coeff;
      if (same) {
        e.lines = std::max(e.lines, lines);
        return;
      }
    }
    list.push_back({a.buffer, &a, lines});
  };
  for (size_t si = 0; si < S.stores.size(); ++si) {
    const NestStore& st = S.stores[si];
    mchains_[si] = memory_chain(st);
    const std::vector<int>& chain = mchains_[si];
    std::fill(varying.begin(), varying.end(), 0);
    for (size_t p = chain.size(); p-- > 0;) {
      // With the loops inside chain[p] varying: one iteration of chain[p], and the
      // whole of chain[p + 1].
      const int l = chain[p];
      const int inner = p + 1 < chain.size() ? chain[p + 1] : -1;
      for (const NestAccess& a : st.accesses) {
        if (sroa_[size_t(a.buffer)]) continue;
        const double lines = access_footprint(S, a, varying, M.line_bytes).lines;
        add(entries[size_t(l)], a, lines);
        if (inner >= 0 && long_reuse_[size_t(inner)]) add(whole[size_t(inner)], a, lines);
      }
      varying[size_t(l)] = 1;
    }
    if (!chain.empty() && long_reuse_[size_t(chain[0])])
      for (const NestAccess& a : st.accesses)
        if (!sroa_[size_t(a.buffer)])
          add(whole[size_t(chain[0])], a, access_footprint(S, a, varying, M.line_bytes).lines);
  }
  auto total_lines = [&](const std::vector<Entry>& es) {
    double total = 0;
    for (size_t i = 0; i < es.size(); ++i) {
      bool first = true;
      for (size_t j = 0; j < i; ++j) first &= es[j].buffer != es[i].buffer;
      if (!first) continue;
      double lines = 0;
      for (size_t j = i; j < es.size(); ++j)
        if (es[j].buffer == es[i].buffer) lines += es[j].lines;
      total += std::min(lines, buffer_lines(es[i].buffer));
    }
    return total;
  };
  lr_iter_.assign(n, {});
  for (size_t l = 0; l < n; ++l) {
    ws_lines_[l] = total_lines(entries[l]);
    if (long_reuse_[l]) lr_iter_[l] = entries[l];
  }
  // Buffers the run touches (allocations once: a loop reuses the same storage).
  total_lines_ = 0;
  for (size_t b = 0; b < S.buffers.size(); ++b) total_lines_ += buffer_lines(int(b));
}

// Lines every access under `l` (a long_reuse_ loop) touches over `p` consecutive
// iterations: each pattern its lines of one iteration, then what it advances by.
double Model::ws_over(int l, double p) const {
  const std::vector<Entry>& es = lr_iter_[size_t(l)];
  double total = 0;
  for (size_t i = 0; i < es.size(); ++i) {
    bool first = true;
    for (size_t j = 0; j < i; ++j) first &= es[j].buffer != es[i].buffer;
    if (!first) continue;
    const NestBuffer& b = S.buffers[size_t(es[i].buffer)];
    const double eb = double(b.dtype.bytes()) * b.dtype.lanes;
    double lines = 0, whole = 0;
    for (size_t j = i; j < es.size(); ++j) {
      if (es[j].buffer != es[i].buffer) continue;
      const double advance = std::fabs(double(es[j].access->index.stride_of(l))) * eb / M.line_bytes;
      lines += es[j].lines * (1 + (p - 1) * std::min(1.0, advance));
    }
    for (const Entry& e : lr_whole_[size_t(l)])
      if (e.buffer == es[i].buffer) whole += e.lines;
    total += std::min({lines, whole > 0 ? whole : lines, buffer_lines(es[i].buffer)});
  }
  return total;
}

// How far `ix` ranges while loop `l` runs through its extent (the others fixed).
double Model::span_in(const IndexForm& ix, int l) const {
  double span = 0;
  for (const IndexTerm& term : ix.terms) {
    if (term.loop == l) span += std::fabs(double(term.coeff)) * (ext(l) - 1);
    if (term.loop < 0 && std::find(term.deps.begin(), term.deps.end(), l) != term.deps.end())
      span += std::fabs(double(term.coeff)) * double(term.max_value - term.min_value);
  }
  return span;
}

double Model::buffer_lines(int b) const {
  const NestBuffer& buf = S.buffers[size_t(b)];
  return std::ceil(double(buf.elements) * buf.dtype.bytes() * buf.dtype.lanes / M.line_bytes);
}

// Whether the lines `fp` describes fit in `c` given its sets: runs a multiple of a way
// apart land in the same sets.
bool Model::fits_sets(const Footprint& fp, double elem_bytes, const CacheSpec& c) const {
  if (!c.conflicts || fp.runs <= 1 || fp.run_stride <= 0) return true;
  const double stride_bytes = fp.run_stride * elem_bytes;
  if (std::fmod(stride_bytes, M.line_bytes) != 0) return true;
  const int64_t stride_lines = int64_t(stride_bytes / M.line_bytes);
  const int64_t sets = int64_t(c.sets);
  const int64_t g = gcd64(stride_lines % sets == 0 ? sets : stride_lines % sets, sets);
  const double positions = double(sets / std::max<int64_t>(g, 1));
  const double run_lines = std::max(1.0, std::ceil(fp.run * elem_bytes / M.line_bytes));
  const double used_sets = std::min(c.sets, run_lines * std::min(fp.runs, positions));
  // Spread over every set, it is a question of capacity alone (access_misses).
  return used_sets >= c.sets || fp.lines <= used_sets * c.ways * M.cache_utilization;
}

// Lines of `a` missing each cache level over one run. The walk goes from the innermost
// loop out (in memory order): a loop whose one iteration's working set fits the cache
// (and whose lines of `a` do not pile into a few sets) re-touches the lines of `a` its
// previous iterations brought in; one that does not fit fetches them again every
// iteration. Runs are repeated back to back, so a level that holds everything the run
// touches has no compulsory misses.
void Model::access_misses(int si, const NestAccess& a, double misses[3]) const {
  const std::vector<int>& chain = mchains_[size_t(si)];
  const int d = int(chain.size());
  const NestBuffer& b = S.buffers[size_t(a.buffer)];
  const double eb = double(b.dtype.bytes()) * b.dtype.lanes;
  Footprint fps[65];
  const int levels = std::min(d, 64);
  std::vector<char> varying(S.loops.size(), 0);
  fps[levels] = access_footprint(S, a, varying, M.line_bytes);
  for (int k = levels - 1; k >= 0; --k) {
    varying[size_t(chain[size_t(k)])] = 1;
    fps[k] = access_footprint(S, a, varying, M.line_bytes);
  }
  for (int c = 0; c < 3; ++c) {
    double m = 1;
    bool straight = true;
    for (int k = levels - 1; k >= 0; --k) {
      const int l = chain[size_t(k)];
      if (straight && !real_[size_t(l)] && !vec_ok_[size_t(l)]) {
        // An unrolled loop inside the innermost iterating one is straight-line code:
        // its copies are scheduled freely, so it touches each of its lines once (its
        // order is no walk).
        m = fps[k].lines;
        continue;
      }
      straight = false;
      bool sets_ok = fits_sets(fps[k + 1], eb, caches_[c]);
      double ws = ws_lines_[size_t(l)];
      const double step = std::fabs(double(a.index.stride_of(l)));
      if (long_reuse_[size_t(l)] && step > 0 && nonaffine_in(a, l)) {
        // A wrapping walk (a modulo) comes back to its lines only after a cycle of
        // `period` iterations: what the loop touches in between must fit.
        const double period = std::min(ext(l), span_in(a.index, l) / step + 1);
        ws = ws_over(l, period);
        Footprint cycle;
        cycle.run_stride = step;
        cycle.runs = period;
        cycle.lines = 1 + (period - 1) * std::min(1.0, step * eb / M.line_bytes);
        sets_ok = fits_sets(cycle, eb, caches_[c]);
      }
      // Past the capacity the share of lines fetched again grows with the overflow
      // (caches are not LRU, and prefetchers refill part of what falls out); lines
      // that pile into a few sets miss outright.
      const double cap = caches_[c].capacity_lines;
      const double span = cap * M.cache_overflow_span;
      const double overflow = !sets_ok ? 1.0 : span <= 0 ? double(ws > cap) : std::clamp((ws - cap) / span, 0.0, 1.0);
      const double kept = std::min(fps[k].lines, ext(l) * m);
      double refetched = ext(l) * m;
      if (autovec_[size_t(l)] > 0) {
        // LLVM's vector loop runs `vf` iterations at once: what does not stay in the
        // cache comes again once per vector iteration, its lanes' lines together.
        const double vf = autovec_[size_t(l)];
        const double lanes = m * (1 + (vf - 1) * std::min(1.0, step * eb / M.line_bytes));
        refetched = std::ceil(ext(l) / vf) * std::min(fps[k].lines, lanes);
      }
      m = overflow * refetched + (1 - overflow) * kept;
    }
    if (total_lines_ <= caches_[c].capacity_lines) m = std::max(0.0, m - fps[0].lines);
    misses[c] = m;
  }
  misses[1] = std::min(misses[1], misses[0]);
  misses[2] = std::min(misses[2], misses[1]);
}

// Address translation misses of `a`, walked like a cache of pages: a loop whose one
// iteration touches no more pages of `a` than a TLB level holds re-uses them across
// iterations; otherwise every iteration looks its pages up again.
double Model::tlb_cycles(int si, const NestAccess& a) const {
  const std::vector<int>& chain = mchains_[size_t(si)];
  const int levels = std::min(int(chain.size()), 64);
  // Only walks that step a page or more per iteration somewhere can miss.
  bool large = false;
  const NestBuffer& b = S.buffers[size_t(a.buffer)];
  for (int l : chain) large |= std::fabs(double(a.index.stride_of(l))) * b.dtype.bytes() >= M.page_bytes;
  if (!large) return 0;
  double pages[65];
  std::vector<char> varying(S.loops.size(), 0);
  pages[levels] = 1;
  for (int k = levels - 1; k >= 0; --k) {
    varying[size_t(chain[size_t(k)])] = 1;
    pages[k] = access_footprint(S, a, varying, M.page_bytes).lines;
  }
  double cycles = 0;
  for (int level = 0; level < 2; ++level) {
    const double entries = level == 0 ? M.dtlb_entries : M.stlb_entries;
    double m = 1;
    for (int k = levels - 1; k >= 0; --k) {
      // A set-associative TLB does not fall off a cliff: the share of lookups that
      // miss grows with how far the iteration's pages overflow it.
      const double e = ext(chain[size_t(k)]);
      const double overflow = std::clamp((pages[k + 1] - entries) / entries, 0.0, 1.0);
      m = overflow * e * m + (1 - overflow) * std::min(pages[k], e * m);
    }
    // Compulsory lookups of a walk that fits are not misses in steady state.
    if (pages[0] <= entries) m = 0;
    cycles += m * (level == 0 ? M.dtlb_miss_cycles : M.stlb_miss_cycles);
  }
  return cycles;
}

// Whether the hardware prefetchers follow `a`: its innermost loop, or its innermost
// iterating loop, walks memory in steps they track (within a page, at most 2 KiB
// apart). Unrolled and vector loops inside the iterating loop do not iterate: each of
// their copies is its own load instruction, stepping with the iterating loop (a
// channel loop unrolled inside a vectorized pixel loop is one unit-stride stream per
// channel, however far apart the channels are).
//
// The share of its lines they bring in time: all of them where the walk runs on in
// memory for at least `prefetch_run_bytes`, its outer loops continuing where the inner
// ones stop; less for shorter runs, each of whose first lines is a demand miss.
double Model::prefetched(int si, const NestAccess& a) const {
  const std::vector<int>& chain = mchains_[size_t(si)];
  const NestBuffer& b = S.buffers[size_t(a.buffer)];
  const double bytes = b.dtype.bytes();
  auto step = [&](int l) { return std::fabs(double(a.index.stride_of(l))) * bytes; };
  auto near = [&](int l) { return step(l) <= 2048; };
  bool innermost = true;
  for (size_t k = chain.size(); k-- > 0;) {
    const int l = chain[k];
    if (!a.index.depends_on(l)) continue;
    if ((innermost || real_[size_t(l)]) && near(l)) {
      // The run of one load instruction: the walk of the innermost iterating loop it
      // moves with (each unrolled or vector copy inside is its own instruction), and of
      // each enclosing loop that steps by exactly that much (loops the access does not
      // move with repeat it).
      size_t at = k;
      while (!real_[size_t(chain[at])] || !a.index.depends_on(chain[at]))
        if (at-- == 0) return 1;  // no iterating loop: straight-line copies
      double run = std::max(step(chain[at]), bytes) * ext(chain[at]);
      for (size_t o = at; o-- > 0;) {
        const int u = chain[o];
        if (!a.index.depends_on(u)) continue;
        if (std::fabs(step(u) - run) > 0.5) break;
        run *= ext(u);
      }
      return std::min(1.0, run / std::max(M.prefetch_run_bytes, 1.0));
    }
    if (real_[size_t(l)]) return 0;
    innermost = false;
  }
  return innermost ? 1 : 0;
}

}  // namespace cost_model_internal
}  // namespace tensorgym
