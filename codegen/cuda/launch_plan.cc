#include "codegen/cuda/launch_plan.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/simplify.h"
#include "codegen/ir/substitute.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym::cuda {
namespace {

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// Where the emitter starts kernels (nvptx_emitter.cc's walk_host): at a launch loop with
// none around it, and at a statement with no launch loop that stores (a one-thread
// kernel): contains_launch_loop / stores_anything (gpu_launch.h). Everything around
// them is the host's.

class PlanBuilder {
 public:
  PlanBuilder(const LoopNest& nest, const std::vector<DeviceKernel>& kernels, int64_t max_launches)
      : nest_(nest), kernels_(kernels), max_launches_(max_launches) {}

  Expected<LaunchPlan> build() {
    for (const BufferArg& a : nest_.args()) {
      const bool input = plan_.buffers.size() < nest_.inputs.size();
      int64_t elements = 1;
      for (int64_t d : a.shape) elements *= d;
      add_buffer({a.name, a.dtype, elements, input ? PlanBuffer::kInput : PlanBuffer::kOutput});
    }
    plan_.num_args = int(plan_.buffers.size());
    // First where each kernel is and what it takes, then the launches of one run.
    find_kernels(nest_.body);
    TG_RETURN_IF_ERROR(error_);
    TG_RETURN_IF_ERROR(check_against_compiled());
    VarMap host_values;
    TG_RETURN_IF_ERROR(launch(nest_.body, host_values));
    return std::move(plan_);
  }

 private:
  // A kernel as the host sees it: its statement and the parameters it is passed.
  struct Site {
    const BaseStmtNode* body;
    std::vector<std::string> buffers;    // the nest's args, then the globals around it
    std::vector<std::string> loop_vars;  // the host loops around it, outermost first
  };

  const LoopNest& nest_;
  const std::vector<DeviceKernel>& kernels_;
  const int64_t max_launches_;
  LaunchPlan plan_;
  Status error_;
  std::vector<Site> sites_;
  std::unordered_map<const BaseStmtNode*, int> site_of_;
  std::unordered_map<std::string, int> buffer_index_;
  std::vector<std::string> globals_, loop_vars_;  // in scope during find_kernels
  std::vector<int32_t> loop_values_;              // during launch

  void add_buffer(PlanBuffer b) {
    auto [it, added] = buffer_index_.emplace(b.name, int(plan_.buffers.size()));
    if (added) {
      plan_.buffers.push_back(std::move(b));
    } else if (b.bytes() > plan_.buffers[it->second].bytes()) {
      plan_.buffers[it->second] = std::move(b);  // a name allocated twice: room for the larger
    }
  }

  void add_site(const Stmt& body) {
    Site site{body.get(), {}, loop_vars_};
    for (const BufferArg& a : nest_.args()) site.buffers.push_back(a.name);
    site.buffers.insert(site.buffers.end(), globals_.begin(), globals_.end());
    site_of_[body.get()] = int(sites_.size());
    sites_.push_back(std::move(site));
  }

  void find_kernels(const Stmt& s) {
    if (!s.defined() || !error_.ok()) return;
    if (!contains_launch_loop(s)) {
      if (stores_anything(s)) add_site(s);
      return;
    }
    switch (s.kind()) {
      case NodeKind::kFor: {
        const For* op = s.as<For>();
        if (is_launch_loop(op)) return add_site(s);
        loop_vars_.push_back(op->name);
        find_kernels(op->body);
        loop_vars_.pop_back();
        return;
      }
      case NodeKind::kAllocate: {
        const Allocate* op = s.as<Allocate>();
        add_buffer({op->name, op->dtype, op->num_elements(), PlanBuffer::kGlobal});
        globals_.push_back(op->name);
        find_kernels(op->body);
        globals_.pop_back();
        return;
      }
      case NodeKind::kLetStmt: return find_kernels(s.as<LetStmt>()->body);
      case NodeKind::kIfThenElse:
        find_kernels(s.as<IfThenElse>()->then_case);
        find_kernels(s.as<IfThenElse>()->else_case);
        return;
      case NodeKind::kBlock:
        for (const Stmt& x : s.as<Block>()->stmts) find_kernels(x);
        return;
      default: error_ = internal_error("launch plan: an unexpected statement on the host, outside every kernel");
    }
  }

  // The emitter's kernels are the plan's, in the same order, taking the same parameters.
  Status check_against_compiled() {
    if (sites_.size() != kernels_.size())
      return internal_error(
          fmt::format("launch plan: the nest has {} kernels but {} were compiled", sites_.size(), kernels_.size()));
    for (size_t k = 0; k < sites_.size(); ++k) {
      std::vector<std::string> expected = sites_[k].buffers;
      expected.insert(expected.end(), sites_[k].loop_vars.begin(), sites_[k].loop_vars.end());
      if (expected != kernels_[k].params)
        return internal_error(fmt::format("launch plan: kernel {} takes ({}) but the host would pass ({})",
                                          kernels_[k].name, joined(kernels_[k].params), joined(expected)));
      std::vector<int>& indices = plan_.kernel_buffers.emplace_back();
      for (const std::string& name : sites_[k].buffers) indices.push_back(buffer_index_.at(name));
    }
    return Status();
  }

  // The host's part of one run: loops iterate, lets bind, kernels launch. A condition
  // around a kernel is the kernel's to test (each thread does, at its start).
  Status launch(const Stmt& s, VarMap& host_values) {
    if (!s.defined()) return Status();
    if (auto site = site_of_.find(s.get()); site != site_of_.end()) {
      if (int64_t(plan_.launches.size()) >= max_launches_)
        return resource_exhausted(
            fmt::format("the host loops around the kernels launch more than {} kernels per run", max_launches_));
      plan_.launches.push_back({site->second, loop_values_});
      return Status();
    }
    if (!contains_launch_loop(s)) return Status();  // host work with no kernel inside: none
    switch (s.kind()) {
      case NodeKind::kFor: {
        const For* op = s.as<For>();
        TG_ASSIGN_OR_RETURN(int64_t min, host_value(op->min, host_values, op->name));
        TG_ASSIGN_OR_RETURN(int64_t extent, host_value(op->extent, host_values, op->name));
        if (min < std::numeric_limits<int32_t>::min() || min + extent > std::numeric_limits<int32_t>::max())
          return out_of_range("launch plan: host loop " + op->name + " leaves the i32 range of its parameter");
        for (int64_t i = 0; i < extent; ++i) {
          host_values[op->name] = IntImm::make(DataType::i32(), min + i);
          loop_values_.push_back(int32_t(min + i));
          Status st = launch(op->body, host_values);
          loop_values_.pop_back();
          TG_RETURN_IF_ERROR(st);
        }
        host_values.erase(op->name);
        return Status();
      }
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        host_values[op->name] = simplify(substitute(op->value, host_values));
        Status st = launch(op->body, host_values);
        host_values.erase(op->name);
        return st;
      }
      case NodeKind::kAllocate: return launch(s.as<Allocate>()->body, host_values);
      case NodeKind::kIfThenElse:
        TG_RETURN_IF_ERROR(launch(s.as<IfThenElse>()->then_case, host_values));
        return launch(s.as<IfThenElse>()->else_case, host_values);
      case NodeKind::kBlock:
        for (const Stmt& x : s.as<Block>()->stmts) TG_RETURN_IF_ERROR(launch(x, host_values));
        return Status();
      default: return internal_error("launch plan: an unexpected statement on the host, outside every kernel");
    }
  }

  // A host loop's bound, from the host loops and lets around it.
  static Expected<int64_t> host_value(const Expr& e, const VarMap& host_values, const std::string& loop) {
    const Expr v = simplify(substitute(e, host_values));
    if (const int64_t* c = as_const_int(v)) return *c;
    return unimplemented("launch plan: the bounds of host loop " + loop +
                         " are not known before its launches (they depend on the device's data)");
  }
};

}  // namespace

Expected<LaunchPlan> make_launch_plan(const LoopNest& nest, const std::vector<DeviceKernel>& kernels,
                                      int64_t max_launches) {
  if (nest.target != "cuda") return failed_precondition("launch plan: the loop nest was not lowered for cuda");
  return PlanBuilder(nest, kernels, max_launches).build();
}

std::string describe(const LaunchPlan& plan, const std::vector<DeviceKernel>& kernels) {
  static const char* kRoles[] = {"input", "output", "global"};
  std::string out;
  for (const PlanBuffer& b : plan.buffers)
    out += fmt::format("buffer {} {}[{}] {}\n", b.name, b.dtype.str(), b.elements, kRoles[b.role]);
  for (const PlanLaunch& l : plan.launches) {
    const DeviceKernel& k = kernels[size_t(l.kernel)];
    std::vector<std::string> args;
    for (int b : plan.kernel_buffers[size_t(l.kernel)]) args.push_back(plan.buffers[size_t(b)].name);
    const size_t first_loop = args.size();
    for (size_t i = 0; i < l.loop_values.size(); ++i)
      args.push_back(fmt::format("{}={}", k.params[first_loop + i], l.loop_values[i]));
    out += fmt::format("launch {} ({})\n", k.name, joined(args));
  }
  return out;
}

}  // namespace tensorgym::cuda
