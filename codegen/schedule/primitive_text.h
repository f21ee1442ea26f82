// The edge between a trace's text and typed primitives: binding resolves a
// primitive's text arguments to handles in a state; printing writes them back in the
// canonical text form.
#pragma once

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/trace.h"

namespace tensorgym {

struct BoundPrimitive {
  const PrimitiveDef* def = nullptr;
  PrimitiveArgs args;
};

// Resolves `p` in `state`: the primitive by name, each argument by its kind. Errors
// say which argument was wrong (without the primitive's text; the Schedule adds it).
Expected<BoundPrimitive> bind_primitive(const ScheduleState& state, const Primitive& p);

// The canonical text of a bound primitive, in the state it was bound to.
Primitive primitive_text(const ScheduleState& state, const BoundPrimitive& p);

}  // namespace tensorgym
