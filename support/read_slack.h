// The compiled kernels' calling convention on their inputs: each input buffer can be
// read (never written) for kInputReadSlackBytes before its first byte and after its
// last. A padded convolution reads its input under a select (`X[h - 1, w - 1]` where
// `h >= 1 && ...`); with the slack the load can run whatever the select decides, as a
// plain load beside a select, rather than behind a branch that LLVM's jump threading
// and loop vectorizer handle badly (codegen/analysis/speculative_loads.h). HostBuffer
// and the arena executor allocate the slack, zero-filled.
#pragma once

#include <cstdint>

namespace tensorgym {

inline constexpr int64_t kInputReadSlackBytes = 16384;

}  // namespace tensorgym
