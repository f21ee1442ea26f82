// Turns each vectorized loop into vector code: the loop variable becomes the vector
// ramp(min, 1, lanes) and every expression that depends on it gets lanes, so a
// backend emits vector loads, stores and arithmetic directly. Loops inside a
// vectorized loop stay scalar loops around vector code; guards that depend on the
// lanes become vector conditions (masks). A loop that cannot be vectorized (its
// extent is not constant, or a store would need one scalar location per lane) stays
// a serial loop.
#pragma once

#include "codegen/ir/stmt.h"

namespace tensorgym {

Stmt vectorize_loops(const Stmt& s);

}  // namespace tensorgym
