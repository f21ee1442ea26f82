// tensorgym suite --suite ops-v0 [--families gmm,c2d,...] [--benchmarks gmm-1,...] --agent NAME
//                 --trials N [--reward runtime|est_cycles] [--threads N] [--seed S] [--rounds R]
//                 [--time-limit S] [--limit N] --out DIR
//   Runs the agent on every benchmark of the selection (batch 1 unless named), validates
//   each best state by replaying it (envs/replay.h), and times the best schedule side by
//   side in this process with the expert schedule where the benchmark has one and the
//   vendor libraries that compute the operator (benchmarks/baselines/kernel_comparison.h). Writes
//   DIR/results.csv and DIR/states.jsonl and prints the table with geometric means.
// tensorgym suite --suite graphs-v0 [--graphs NAME,...] [--planners all|NAME,...]
//                 [--time-limit S] [--seed S] --out DIR
//   Plans every graph with every planner: arena / live lower bound per planner per graph.
//
// Resumable: DIR/suite.cfg records the settings; a run with the same --out skips the
// benchmarks (graphs) DIR/results.csv already has, and refuses other settings. Rows are
// written whole, a benchmark's state before its row, so a run killed at any point
// leaves at most one unfinished benchmark, which the next run redoes.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "agents/search.h"
#include "benchmarks/baselines/kernel_comparison.h"
#include "benchmarks/baselines/side_by_side.h"
#include "benchmarks/baselines/vendor_baselines.h"
#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "cli/json_text.h"
#include "cli/metaschedule_results.h"
#include "cli/search_progress.h"
#include "datasets/graphs.h"
#include "datasets/registry.h"
#include "envs/episode_state.h"
#include "memplan/planner.h"
#include "proto/episode_state_io.h"

namespace tensorgym::cli {
namespace {

struct SuiteOptions {
  std::string suite;
  std::vector<std::string> families, benchmarks, graphs, planners;
  std::string agent = "evolutionary";
  int64_t trials = 200;
  std::string reward = "runtime";
  int threads = 1;
  int workers = 1;
  uint64_t seed = 0;
  int rounds = 3;
  int finalists = 4;
  double time_limit = 0;
  int64_t limit = 0;
  double tolerance = 0.25;
  std::string out;
  std::string metaschedule;  // DIR of benchmarks/metaschedule/tune.py
  bool quiet = false;
  bool json = false;
};

// --- CSV ------------------------------------------------------------------------------

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '\n') c = ' ';
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_field(fields[i]);
  return line + "\n";
}

std::vector<std::string> parse_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else fields.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

// A results.csv row as JSON: numbers as numbers, empty fields as null.
Json row_json(const std::vector<std::string>& header, const std::vector<std::string>& row) {
  Json j = Json::object();
  for (size_t i = 0; i < header.size() && i < row.size(); ++i) {
    const std::string& f = row[i];
    char* end = nullptr;
    const double v = f.empty() ? 0 : std::strtod(f.c_str(), &end);
    if (f.empty()) j[header[i]] = nullptr;
    else if (end == f.c_str() + f.size() && f.find_first_not_of("0123456789-") == std::string::npos) j[header[i]] = std::stoll(f);
    else if (end == f.c_str() + f.size()) j[header[i]] = v;
    else j[header[i]] = f;
  }
  return j;
}

Json geomean_json(const std::vector<double>& v) { return v.empty() ? Json(nullptr) : Json(geometric_mean(v)); }

// "agent: random there, beam here; ..." for two `key=value` line lists.
std::string settings_diff(const std::string& there, const std::string& here) {
  auto parse = [](const std::string& text) {
    std::map<std::string, std::string> m;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return m;
  };
  std::map<std::string, std::string> a = parse(there), b = parse(here);
  std::string diff;
  for (const auto& [k, v] : b) {
    const std::string old = a.count(k) ? a[k] : "(none)";
    if (old != v) diff += (diff.empty() ? "" : "; ") + k + ": " + old + " there, " + v + " here";
  }
  return diff.empty() ? "an unreadable suite.cfg" : diff;
}

// --- the output directory -------------------------------------------------------------

// DIR/results.csv rows (header checked) and DIR/suite.cfg. A torn last line (the run
// was killed while writing it) is dropped and the file rewritten without it.
class SuiteDir {
 public:
  SuiteDir(std::string dir, std::vector<std::string> header) : dir_(std::move(dir)), header_(std::move(header)) {}

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Creates DIR, or checks that the settings match the ones recorded there.
  Status open(const std::string& settings) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return failed_precondition("--out " + dir_ + ": cannot create the directory: " + ec.message());
    const std::string cfg = path("suite.cfg");
    if (std::filesystem::exists(cfg)) {
      Expected<std::string> old = read_text_file(cfg);
      if (!old.ok()) return old.status();
      if (*old != settings)
        return failed_precondition("--out " + dir_ + " holds a suite run with other settings (" +
                                   settings_diff(*old, settings) +
                                   "); resume it with the same settings, or use another --out");
    } else {
      std::ofstream out(cfg);
      out << settings;
      if (!out) return failed_precondition("cannot write " + cfg);
    }
    return load_rows();
  }

  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  Status append(const std::vector<std::vector<std::string>>& rows) {
    std::string text;
    for (const auto& r : rows) text += csv_line(r);
    std::ofstream out(path("results.csv"), std::ios::app);
    out << text << std::flush;
    if (!out) return failed_precondition("cannot write " + path("results.csv"));
    for (const auto& r : rows) rows_.push_back(r);
    return Status();
  }

 private:
  Status load_rows() {
    const std::string file = path("results.csv");
    if (!std::filesystem::exists(file)) return rewrite();
    std::ifstream in(file);
    std::string line;
    bool first = true, dropped = false;
    while (std::getline(in, line)) {
      std::vector<std::string> f = parse_csv_line(line);
      if (first) {
        if (f != header_) return failed_precondition(file + " is not a results file of this suite (its header differs)");
        first = false;
        continue;
      }
      if (f.size() != header_.size() || in.eof()) {  // torn: wrong width, or no final new line
        dropped = true;
        continue;
      }
      rows_.push_back(std::move(f));
    }
    return dropped || first ? rewrite() : Status();
  }

  Status rewrite() {
    std::string text = csv_line(header_);
    for (const auto& r : rows_) text += csv_line(r);
    const std::string file = path("results.csv"), tmp = file + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return failed_precondition("cannot write " + tmp);
    std::filesystem::rename(tmp, file);
    return Status();
  }

  std::string dir_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Keeps the states of finished benchmarks only (a run killed between writing a state
// and its row leaves one behind; that benchmark is redone).
Status prune_states(const std::string& file, const std::set<std::string>& finished) {
  if (!std::filesystem::exists(file)) return Status();
  Expected<std::vector<EpisodeState>> states = read_episode_states(file);
  if (!states.ok()) return Status(states.status().code(), file + ": " + states.status().message());
  std::vector<EpisodeState> keep;
  for (EpisodeState& s : *states)
    if (finished.count(s.benchmark)) keep.push_back(std::move(s));
  if (keep.size() == states->size()) return Status();
  const std::string tmp = file + ".tmp";
  std::filesystem::remove(tmp);
  for (const EpisodeState& s : keep) {
    Status st = append_episode_state(tmp, s);
    if (!st.ok()) return st;
  }
  if (keep.empty()) std::ofstream(tmp, std::ios::trunc).flush();
  std::filesystem::rename(tmp, file);
  return Status();
}

// Prints a table: a header row, rows, columns padded to their widest cell.
void print_table(const std::vector<std::vector<std::string>>& table, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : table)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string cell = row[i];
      const size_t pad = width[i] - cell.size();
      line += (i ? "  " : "") + (i ? std::string(pad, ' ') + cell : cell + std::string(pad, ' '));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// --- ops-v0 ---------------------------------------------------------------------------

const std::vector<std::string> kOpsHeader = {
    "benchmark", "agent",        "reward", "trials",    "seed",      "threads",   "gflops",  "search_gflops",
    "vendor",    "vendor_gflops", "vs_vendor", "expert_gflops", "vs_expert", "validated", "search_s",
    "trials_to_90", "metaschedule_gflops", "vs_metaschedule", "metaschedule_trials", "metaschedule_search_s",
    "metaschedule_trials_to_90"};

std::string family_of(const std::string& name) { return name.substr(0, name.find('-')); }

// The schedule suite --suite names without its scheme ("ops-v0", "ops-heldout-v0"), or "".
std::string ops_suite_name(const std::string& suite) {
  const std::string name = suite.rfind("benchmark://", 0) == 0 ? suite.substr(12) : suite;
  return name == "ops-v0" || name == "ops-heldout-v0" ? name : "";
}

// The benchmarks to run, in suite order: --benchmarks as given, else every batch-1
// benchmark of the chosen families.
Expected<std::vector<std::string>> select_ops(const SuiteOptions& o) {
  const std::string suite = ops_suite_name(o.suite);
  Expected<const Dataset*> ds = DatasetRegistry::global().find_dataset("benchmark://" + suite);
  if (!ds.ok()) return ds.status();
  std::vector<std::string> all, families;
  for (const BenchmarkInfo& b : (*ds)->list(0, (*ds)->size())) {
    std::string name = b.uri.substr(b.uri.rfind('/') + 1);
    const std::string fam = family_of(name);
    if (std::find(families.begin(), families.end(), fam) == families.end()) families.push_back(fam);
    all.push_back(std::move(name));
  }
  if (!o.benchmarks.empty()) {
    if (!o.families.empty()) return invalid_argument("give --families or --benchmarks, not both");
    for (const std::string& b : o.benchmarks)
      if (std::find(all.begin(), all.end(), b) == all.end())
        return not_found("--benchmarks: " + suite + " has no benchmark '" + b + "' (names look like " + all.front() +
                         ", " + all.back() + ")");
    return o.benchmarks;
  }
  for (const std::string& f : o.families)
    if (std::find(families.begin(), families.end(), f) == families.end())
      return not_found("--families: " + suite + " has no family '" + f + "' (families: " + join(families, ", ") + ")");
  std::vector<std::string> picked;
  for (const std::string& name : all) {
    if (name.find("-b") != std::string::npos) continue;
    if (!o.families.empty() && std::find(o.families.begin(), o.families.end(), family_of(name)) == o.families.end())
      continue;
    picked.push_back(name);
  }
  return picked;
}

std::string ops_settings(const SuiteOptions& o) {
  std::string time_limit = fixed(o.time_limit, 3);
  return fmt::format(
      "suite={}\nagent={}\ntrials={}\nreward={}\nthreads={}\nseed={}\nrounds={}\nfinalists={}\ntime_limit={}\n{}",
      ops_suite_name(o.suite), o.agent, o.trials, o.reward, o.threads, o.seed, o.rounds, o.finalists, time_limit,
      o.metaschedule.empty() ? "" : "metaschedule=" + o.metaschedule + "\n");
}

// Searches one benchmark, validates its best state and measures it side by side.
// Returns the row; the state goes to states.jsonl first.
Expected<std::vector<std::string>> run_ops_benchmark(const SuiteOptions& o, const std::string& uri,
                                                     Evaluator* evaluator, const std::string& states_path,
                                                     const MetaScheduleResults* metaschedule) {
  SearchSetup setup;
  setup.benchmark = uri;
  setup.agent = o.agent;
  setup.seed = o.seed;
  setup.budget.max_trials = o.trials;
  setup.budget.max_seconds = o.time_limit;
  setup.finalists = o.finalists;
  setup.evaluator = evaluator;
  setup.eval_chunk = std::max(1, o.workers);
  setup.env_context = cli_env_context(o.threads);
  Expected<std::unique_ptr<Search>> search = Search::create(setup);
  if (!search.ok()) return search.status();
  Search& s = **search;
  ProgressDisplay display(s.metric(), o.quiet, uri.substr(uri.rfind('/') + 1), o.time_limit);
  Status st = s.run([&](const SearchProgress& p) { display.update(p); });
  display.finish();
  if (!st.ok()) return st;
  const std::string search_s = fixed(s.elapsed_s(), 1);  // the search alone, before validation and timing
  const std::string trials_to_90 = std::to_string(trials_to_reach(s.best_gflops_curve(), 0.9));
  const std::string name = uri.substr(uri.rfind('/') + 1);
  const MetaScheduleRecord* ms = metaschedule ? &metaschedule->records.at(name) : nullptr;
  // The columns after search_s: ours' trials to 90%, then MetaSchedule's kernel timed
  // side by side (empty when it was not) and its own search record.
  auto finish = [&](std::vector<std::string> row, const ComparedKernel* peer) {
    row.push_back(trials_to_90);
    row.push_back(peer ? fixed(peer->gflops, 3) : "");
    row.push_back(peer ? fixed(peer->speedup, 4) : "");
    row.push_back(ms ? std::to_string(ms->trials) : "");
    row.push_back(ms ? fixed(ms->search_s, 1) : "");
    row.push_back(ms ? std::to_string(ms->trials_to_90) : "");
    return row;
  };

  std::vector<std::string> row = {uri, o.agent, o.reward, std::to_string(s.trials()), std::to_string(o.seed),
                                  std::to_string(o.threads)};
  const TrialRecord* best = s.best();
  if (!best) {
    row.insert(row.end(), {"0", "0", "", "", "", "", "", "no: no valid schedule found", search_s});
    return finish(std::move(row), nullptr);
  }

  // The state, replayed and checked as `tensorgym validate` would.
  std::string validated = "yes";
  Expected<EpisodeState> state = s.best_episode_state();
  if (!state.ok()) {
    validated = "no: " + state.status().message();
  } else {
    Expected<ValidationOutcome> v = validate_episode(*state, o.tolerance, env_factory(EndpointOptions{}, o.threads));
    if (!v.ok()) validated = "no: " + v.status().message();
    else if (!v->ok) validated = "no: " + v->error;
    Status ws = append_episode_state(states_path, *state);
    if (!ws.ok()) return ws;
  }

  CompareOptions co;
  co.threads = o.threads;
  co.timing.rounds = o.rounds;
  if (ms) co.peers.push_back({"MetaSchedule", metaschedule->libs, ms->module_path, ms->prepack});
  Expected<KernelComparison> cmp = compare_kernels(s.benchmark(), best->trace, co);
  if (!cmp.ok()) {
    std::cerr << "tensorgym: warning: " << cmp.status().message() << "\n";
    row.insert(row.end(), {"", fixed(s.best_evaluation().gflops, 3), "error", "", "", "", "", validated, search_s});
    return finish(std::move(row), nullptr);
  }
  const ComparedKernel* vendor = cmp->fastest_vendor();
  const ComparedKernel* expert = cmp->expert();
  row.insert(row.end(),
             {fixed(cmp->ours_gflops, 3), fixed(s.best_evaluation().gflops, 3), vendor ? vendor->name : "",
              vendor ? fixed(vendor->gflops, 3) : "", vendor ? fixed(vendor->speedup, 4) : "",
              expert ? fixed(expert->gflops, 3) : "", expert ? fixed(expert->speedup, 4) : "", validated, search_s});
  return finish(std::move(row), cmp->peer("MetaSchedule"));
}

// Prints the table to `out`; returns the same as JSON: the rows and their geometric means.
Json print_ops_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  bool with_ms = false;
  for (const auto& r : rows) with_ms = with_ms || !r[16].empty();
  std::vector<std::vector<std::string>> table = {
      {"benchmark", "trials", "GFLOP/s", "vendor", "vendor GFLOP/s", "vs vendor", "expert GFLOP/s", "vs expert",
       "validated", "search s", "to 90%"}};
  if (with_ms)
    table[0].insert(table[0].end(), {"MetaSchedule GFLOP/s", "vs MetaSchedule", "MS search s", "MS to 90%"});
  std::vector<double> gflops, vs_vendor, vs_expert, vs_ms;
  int validated = 0;
  for (const auto& r : rows) {
    const std::string name = r[0].substr(r[0].rfind('/') + 1);
    const std::string ok = r[13].rfind("yes", 0) == 0 ? "yes" : "NO";
    validated += ok == "yes";
    auto cell = [&](size_t i) { return r[i].empty() ? std::string("-") : r[i]; };
    table.push_back({name, r[3], r[6], cell(8), cell(9), cell(10), cell(11), cell(12), ok, r[14], r[15]});
    if (with_ms) table.back().insert(table.back().end(), {cell(16), cell(17), cell(19), cell(20)});
    if (!r[6].empty()) gflops.push_back(std::atof(r[6].c_str()));
    if (!r[17].empty()) vs_ms.push_back(std::atof(r[17].c_str()));
    if (!r[10].empty()) vs_vendor.push_back(std::atof(r[10].c_str()));
    if (!r[12].empty()) vs_expert.push_back(std::atof(r[12].c_str()));
  }
  auto gm = [](const std::vector<double>& v, int digits) { return v.empty() ? std::string("-") : fixed(geometric_mean(v), digits); };
  table.push_back({"geomean", "", gm(gflops, 3), "", "", gm(vs_vendor, 4), "", gm(vs_expert, 4),
                   fmt::format("{}/{}", validated, rows.size()), "", ""});
  if (with_ms) table.back().insert(table.back().end(), {"", gm(vs_ms, 4), "", ""});
  print_table(table, out);
  Json list = Json::array();
  for (const auto& r : rows) list.push_back(row_json(kOpsHeader, r));
  return Json{{"benchmarks", std::move(list)},
              {"geomean", Json{{"gflops", geomean_json(gflops)}, {"vs_vendor", geomean_json(vs_vendor)},
                               {"vs_expert", geomean_json(vs_expert)}, {"vs_metaschedule", geomean_json(vs_ms)}}},
              {"validated", validated}};
}

int run_ops_suite(const SuiteOptions& o) {
  if (o.trials < 1) return report_error(invalid_argument("--trials must be at least 1"));
  if (o.threads < 0) return report_error(invalid_argument("--threads must be 0 (every core) or more"));
  const std::vector<std::string> agents = agent_names();
  if (std::find(agents.begin(), agents.end(), o.agent) == agents.end())
    return report_error(not_found("--agent: no agent '" + o.agent + "' (agents: " + join(agents, ", ") + ")"));
  if (!o.graphs.empty() || !o.planners.empty())
    return report_error(invalid_argument("--graphs and --planners are for --suite graphs-v0"));
  Expected<std::vector<std::string>> names = select_ops(o);
  if (!names.ok()) return report_error(names.status());

  std::unique_ptr<MetaScheduleResults> metaschedule;
  if (!o.metaschedule.empty()) {
    Expected<MetaScheduleResults> m = read_metaschedule_results(o.metaschedule, *names, ops_suite_name(o.suite));
    if (!m.ok()) return report_error(m.status());
    metaschedule = std::make_unique<MetaScheduleResults>(std::move(*m));
  }

  Expected<std::unique_ptr<Evaluator>> evaluator = make_search_evaluator(o.reward, o.workers, o.threads);
  if (!evaluator.ok()) return report_error(evaluator.status());

  SuiteDir dir(o.out, kOpsHeader);
  Status st = dir.open(ops_settings(o));
  if (!st.ok()) return report_error(st);
  std::set<std::string> finished;
  for (const auto& r : dir.rows()) finished.insert(r[0]);
  const std::string states_path = dir.path("states.jsonl");
  st = prune_states(states_path, finished);
  if (!st.ok()) return report_error(st);

  // With --json, stdout holds the JSON alone and the running commentary goes to stderr.
  std::ostream& out = o.json ? std::cerr : std::cout;
  const std::string suite = ops_suite_name(o.suite);
  out << fmt::format("suite {}: {} benchmarks, agent {}, {} trials, reward {}, {} thread{}, seed {}; {}\n", suite,
                     names->size(), o.agent, o.trials, o.reward, o.threads, o.threads == 1 ? "" : "s", o.seed,
                     vendor_libraries_text());
  if (metaschedule)
    out << fmt::format("MetaSchedule: TVM {} kernels from {}\n", metaschedule->tvm_version, metaschedule->dir);
  int64_t ran = 0;
  size_t left = 0;
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string uri = "benchmark://" + suite + "/" + (*names)[i];
    const std::string step = fmt::format("[{}/{}] ", i + 1, names->size());
    if (finished.count(uri)) {
      out << step << (*names)[i] << ": finished earlier, skipped" << std::endl;
      continue;
    }
    if (o.limit > 0 && ran >= o.limit) {
      ++left;
      continue;
    }
    Expected<std::vector<std::string>> row = run_ops_benchmark(o, uri, evaluator->get(), states_path, metaschedule.get());
    if (!row.ok()) return report_error(row.status());
    st = dir.append({*row});
    if (!st.ok()) return report_error(st);
    finished.insert(uri);
    ++ran;
    const auto& r = *row;
    out << step << (*names)[i] << ": " << r[6] << " GFLOP/s" << (r[8].empty() ? "" : ", vs " + r[8] + " " + r[10])
        << (r[12].empty() ? "" : ", vs expert " + r[12]) << (r[17].empty() ? "" : ", vs MetaSchedule " + r[17])
        << ", validated " << r[13] << std::endl;
  }
  if (left) {
    out << fmt::format("stopped after {} benchmarks (--limit); {} left: run the same command again to continue\n", ran,
                       left);
  }
  // The table covers the selection, in suite order, whichever run measured each row.
  std::map<std::string, std::vector<std::string>> by_uri;
  for (const auto& r : dir.rows()) by_uri[r[0]] = r;
  std::vector<std::vector<std::string>> rows;
  for (const std::string& n : *names)
    if (by_uri.count("benchmark://" + suite + "/" + n)) rows.push_back(by_uri["benchmark://" + suite + "/" + n]);
  out << "\n";
  Json table = print_ops_table(rows, out);
  out << "results: " << dir.path("results.csv") << "\nstates: " << states_path << "\n";
  if (o.json) {
    Json j = Json{{"suite", suite}, {"agent", o.agent}, {"trials", o.trials}, {"reward", o.reward},
                  {"threads", o.threads}, {"seed", o.seed}, {"left", left}};
    j.update(table);
    j["results"] = dir.path("results.csv");
    j["states"] = states_path;
    std::cout << json_text(j) << "\n";
  }
  for (const auto& r : rows)
    if (r[13].rfind("yes", 0) != 0) return 1;
  return 0;
}

// --- graphs-v0 ------------------------------------------------------------------------

const std::vector<std::string> kGraphsHeader = {"graph", "planner", "arena", "lb_live", "ratio",
                                                "seconds", "order", "inplace", "verified"};

int run_graphs_suite(const SuiteOptions& o) {
  if (!o.families.empty() || !o.benchmarks.empty())
    return report_error(invalid_argument("--families and --benchmarks are for --suite ops-v0; use --graphs"));
  std::vector<std::string> graphs = o.graphs.empty() ? graphs_v0_names() : o.graphs;
  std::vector<std::string> planners;
  if (o.planners.empty() || (o.planners.size() == 1 && o.planners[0] == "all")) {
    planners = memplan_planner_names();
  } else {
    planners = o.planners;
    for (const std::string& p : planners) {
      const auto& known = memplan_planner_names();
      if (std::find(known.begin(), known.end(), p) == known.end())
        return report_error(not_found("--planners: no planner '" + p + "' (planners: " + join(known, ", ") + ", all)"));
    }
  }
  // Resolve every graph first, so a typo fails before any planning.
  std::vector<GraphBenchmark> benches;
  for (const std::string& g : graphs) {
    Expected<GraphBenchmark> b = resolve_graph("benchmark://graphs-v0/" + g);
    if (!b.ok()) return report_error(Status(b.status().code(), "--graphs: " + b.status().message()));
    if (!b->is_graph()) return report_error(invalid_argument("--graphs: " + g + " is not a model graph"));
    benches.push_back(std::move(*b));
  }

  SuiteDir dir(o.out, kGraphsHeader);
  Status st = dir.open(fmt::format("suite=graphs-v0\nplanners={}\ntime_limit={}\nseed={}\n", join(planners, ","),
                                   fixed(o.time_limit, 3), o.seed));
  if (!st.ok()) return report_error(st);
  std::set<std::string> finished;
  for (const auto& r : dir.rows()) finished.insert(r[0]);

  std::ostream& out = o.json ? std::cerr : std::cout;
  out << fmt::format("suite graphs-v0: {} graphs, {} planners\n", graphs.size(), planners.size());
  for (size_t i = 0; i < benches.size(); ++i) {
    const GraphBenchmark& b = benches[i];
    const std::string step = fmt::format("[{}/{}] ", i + 1, benches.size());
    if (finished.count(b.uri)) {
      out << step << graphs[i] << ": finished earlier, skipped\n";
      continue;
    }
    std::vector<std::vector<std::string>> rows;
    for (const std::string& p : planners) {
      GraphPlanOptions opt;
      opt.planner = p;
      opt.time_limit_s = o.time_limit;
      opt.seed = o.seed;
      Expected<GraphPlan> plan = plan_graph(*b.graph, opt);  // verified before it returns
      if (!plan.ok()) {
        rows.push_back({b.uri, p, "", "", "", "", "", "", "no: " + plan.status().message()});
        continue;
      }
      const double ratio = plan->layout.lb_live > 0 ? double(plan->arena) / double(plan->layout.lb_live) : 1.0;
      rows.push_back({b.uri, p, std::to_string(plan->arena), std::to_string(plan->layout.lb_live), fixed(ratio, 4),
                      fixed(plan->seconds, 3), plan->order_name, plan->inplace ? "on" : "off", "yes"});
    }
    st = dir.append(rows);
    if (!st.ok()) return report_error(st);
    out << step << graphs[i] << ": planned with " << planners.size() << " planners" << std::endl;
  }

  // Table: a row per graph, a column per planner (arena / lower bound), geometric means.
  std::map<std::pair<std::string, std::string>, std::string> cell;
  for (const auto& r : dir.rows()) cell[{r[0], r[1]}] = r[8] == "yes" ? r[4] : "fail";
  std::vector<std::vector<std::string>> table = {{"graph"}};
  for (const std::string& p : planners) table[0].push_back(p);
  std::vector<std::vector<double>> per_planner(planners.size());
  bool all_verified = true;
  for (const GraphBenchmark& b : benches) {
    std::vector<std::string> line = {b.uri.substr(b.uri.rfind('/') + 1)};
    for (size_t j = 0; j < planners.size(); ++j) {
      auto it = cell.find({b.uri, planners[j]});
      const std::string v = it == cell.end() ? "-" : it->second;
      line.push_back(v);
      if (v == "fail") all_verified = false;
      else if (v != "-") per_planner[j].push_back(std::atof(v.c_str()));
    }
    table.push_back(line);
  }
  std::vector<std::string> gm = {"geomean"};
  Json geomeans = Json::object();
  for (size_t j = 0; j < planners.size(); ++j) {
    gm.push_back(per_planner[j].empty() ? "-" : fixed(geometric_mean(per_planner[j]), 4));
    geomeans[planners[j]] = geomean_json(per_planner[j]);
  }
  table.push_back(gm);
  out << fmt::format("\narena / live lower bound ({} s limit for the searching planners)\n", o.time_limit);
  print_table(table, out);
  out << "results: " << dir.path("results.csv") << "\n";
  if (o.json) {
    Json list = Json::array();
    for (const auto& r : dir.rows()) list.push_back(row_json(kGraphsHeader, r));
    std::cout << json_text(Json{{"suite", "graphs-v0"},
                                {"planners", planners},
                                {"time_limit_s", o.time_limit},
                                {"seed", o.seed},
                                {"rows", std::move(list)},
                                {"geomean_ratio", std::move(geomeans)},
                                {"all_verified", all_verified},
                                {"results", dir.path("results.csv")}})
              << "\n";
  }
  return all_verified ? 0 : 1;
}

int run_suite(const SuiteOptions& o) {
  if (o.out.empty()) return report_error(invalid_argument("--out DIR is required (where results.csv goes)"));
  if (!ops_suite_name(o.suite).empty()) return run_ops_suite(o);
  if (o.suite == "graphs-v0" || o.suite == "benchmark://graphs-v0") return run_graphs_suite(o);
  return report_error(not_found("--suite: no suite '" + o.suite + "' (suites: ops-v0, ops-heldout-v0, graphs-v0)"));
}

}  // namespace

void add_suite_command(CLI::App& app) {
  auto o = std::make_shared<SuiteOptions>();
  CLI::App* cmd = app.add_subcommand(
      "suite", "Run an agent over a benchmark suite (or the planners over graphs-v0), validated, against vendor libraries");
  cmd->add_option("--suite", o->suite, "ops-v0 or ops-heldout-v0 (schedules), or graphs-v0 (memory planners)")->required();
  cmd->add_option("--out", o->out, "Directory for results.csv and states.jsonl; an earlier run there is resumed");
  cmd->add_option("--families", o->families, "ops-v0: families to run, e.g. gmm,c2d (default: all; batch 1)")
      ->delimiter(',');
  cmd->add_option("--benchmarks", o->benchmarks, "ops-v0: benchmark names instead, e.g. gmm-1,c2d-3-b16")
      ->delimiter(',');
  cmd->add_option("--agent", o->agent, "ops-v0: random, greedy, beam or evolutionary")->default_val("evolutionary");
  cmd->add_option("--trials", o->trials, "ops-v0: trials per benchmark")->default_val(200);
  cmd->add_option("--finalists", o->finalists, kFinalistsHelp)->default_val(4)->check(CLI::Range(0, 1000));
  cmd->add_option("--reward", o->reward, "ops-v0: what guides the search: runtime or est_cycles")->default_val("runtime");
  cmd->add_option("--threads", o->threads, "ops-v0: threads of every kernel (ours, expert, vendors)")->default_val(1);
  cmd->add_option("--workers", o->workers, "ops-v0: measuring worker processes")->default_val(1);
  cmd->add_option("--seed", o->seed, "Seed of the agent (graphs-v0: of the searching planners)")->default_val(0);
  cmd->add_option("--rounds", o->rounds, "ops-v0: rounds of side-by-side timing")->default_val(3)->check(CLI::Range(1, 100));
  cmd->add_option("--time-limit", o->time_limit,
                  "ops-v0: seconds per benchmark's search (0: none); graphs-v0: per searching planner")
      ->default_val(0);
  cmd->add_option("--limit", o->limit, "ops-v0: run at most N unfinished benchmarks this time (0: all)")->default_val(0);
  cmd->add_option("--tolerance", o->tolerance, "ops-v0: validation tolerance for a measured reward")->default_val(0.25);
  cmd->add_option("--metaschedule", o->metaschedule,
                  "ops-v0: directory of TVM MetaSchedule kernels tuned by benchmarks/metaschedule/tune.py, timed "
                  "side by side with ours");
  cmd->add_option("--graphs", o->graphs, "graphs-v0: graph names (default: all)")->delimiter(',');
  cmd->add_option("--planners", o->planners, "graphs-v0: planner names, or all")->delimiter(',');
  cmd->add_flag("--quiet", o->quiet, "No progress output");
  cmd->add_flag("--json", o->json,
                "Print one JSON object at the end (settings, every row, geometric means); the running lines go to "
                "stderr");
  cmd->callback([o] {
    SuiteOptions opts = *o;
    if (opts.suite.find("graphs") != std::string::npos && opts.time_limit == 0) opts.time_limit = 10;
    int rc = run_suite(opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tensorgym::cli
