// Which selects the CPU backend emits as a plain select of both arms (every load in
// them executed whatever the condition), rather than as a branch around the arm that
// is chosen. The code generator and the cost model ask the same question here, so
// the model describes the code that runs.
#pragma once

#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// Whether both arms of the scalar select `sel` can be evaluated whatever its
// condition: every load in them reads one of `inputs` (readable kInputReadSlackBytes
// past each end, support/read_slack.h) at an index whose range under `ranges` stays
// within that slack, and every integer division or modulo divides by a nonzero
// constant. A select of vectors (a per-lane mask) answers false: it masks its loads.
bool arms_evaluable_unconditionally(const Select& sel, const std::vector<BufferArg>& inputs,
                                    const RangeScope& ranges);

// Whether the code generator evaluates both arms of `sel` and selects: when they can
// be (above) and the select is not the whole value of a store. A store of a select
// (a padding stage's own store) stays a branch: LLVM if-converts that one well, and
// given plain loads there its vectorizer picks worse plans.
bool select_evaluates_both_arms(const Select& sel, bool whole_store_value, const std::vector<BufferArg>& inputs,
                                const RangeScope& ranges);

}  // namespace tensorgym
