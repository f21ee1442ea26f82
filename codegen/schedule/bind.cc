// bind(STAGE.loop, blockIdx.x | threadIdx.x | ...): maps a loop onto a GPU thread
// dimension. Recorded for GPU backends; CPU lowering rejects a bound loop.
#include <array>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"
#include "support/quote.h"

namespace tensorgym {

PrimitiveResult apply_bind(ScheduleState& state, const PrimitiveArgs& args) {
  static constexpr std::array<std::string_view, 7> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                                            "threadIdx.y", "threadIdx.z", "vthread"};
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  bool known = false;
  for (std::string_view t : kTags) known |= t == args[1];
  if (!known)
    return invalid_argument("unknown thread tag " + quote_text(args[1]) +
                            " (known: blockIdx.x/y/z, threadIdx.x/y/z, vthread)");
  if (ref.get().is_reduce) return invalid_argument("cannot bind reduction loop " + ref.text());
  Loop& loop = ref.stage->loops[size_t(ref.loop)];
  if (loop.thread_tag == args[1]) return ApplyEffect::kNoEffect;
  if (!loop.thread_tag.empty()) return failed_precondition("loop " + ref.text() + " is already bound to " + loop.thread_tag);
  if (loop.kind != ForKind::kSerial)
    return failed_precondition("loop " + ref.text() + " is already " + for_kind_name(loop.kind));
  for (const Loop& l : ref.stage->loops)
    if (l.thread_tag == args[1])
      return failed_precondition("stage " + ref.stage->name() + " already binds " + args[1] + " (loop " + l.name + ")");
  loop.thread_tag = args[1];
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
