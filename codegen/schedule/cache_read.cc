// cache_read(TENSOR, CONSUMER, NAME): NAME copies TENSOR and CONSUMER reads the copy.
// Computed at a loop of CONSUMER (compute_at), the copy holds only the region that
// loop needs, contiguous: the packing / layout transform of fast GEMMs.
#include "codegen/ir/substitute.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"
#include "support/quote.h"

namespace tensorgym {

PrimitiveResult apply_cache_read(ScheduleState& state, const PrimitiveArgs& args) {
  const std::string& tensor = args[0];
  if (!state.has_tensor(tensor)) return not_found("unknown tensor " + quote_text(tensor));
  TG_ASSIGN_OR_RETURN(StageSchedule * consumer, parse_stage(state, args[1]));
  TG_RETURN_IF_ERROR(check_new_tensor_name(state, args[2]));
  if (consumer->name() == tensor) return invalid_argument("a stage cannot cache_read itself");
  if (!expr_reads(consumer->def->body, tensor))
    return invalid_argument("stage " + consumer->name() + " does not read " + tensor);
  if (consumer->attach == AttachKind::kInline)
    return failed_precondition("stage " + consumer->name() + " is inlined; compute_root it first");
  if (const StageSchedule* producer = state.find_stage(tensor)) {
    if (producer->attach == AttachKind::kInline)
      return failed_precondition("stage " + tensor + " is inlined; there is no buffer to copy");
    if (producer->attach == AttachKind::kAt)
      return failed_precondition("stage " + tensor + " is computed at " + producer->attach_stage + "." +
                                 producer->attach_loop + "; compute_root it before caching it");
  }

  StageDef def;
  def.name = args[2];
  def.dtype = state.dtype_of(tensor);
  std::vector<Expr> indices;
  std::vector<int64_t> shape = state.shape_of(tensor);
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string axis = "ax" + std::to_string(d);
    def.axes.push_back(IterVar{axis, 0, shape[d]});
    indices.push_back(make_var(axis));
  }
  def.body = Load::make(def.dtype, tensor, indices);

  consumer->def.mutate().body = replace_loads(consumer->def->body, tensor,
                                              [&](const Load* l) { return Load::make(l->type, args[2], l->indices); });
  int at = state.stage_index(consumer->name());
  state.stages().insert(state.stages().begin() + at, make_stage_schedule(std::move(def), StageOrigin::kCacheRead));
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
