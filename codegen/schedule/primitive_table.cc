// The table of every schedule primitive, one line each. The order is the order of the
// action spaces' blocks and of the reference table in docs/schedule_primitives.md: a
// new primitive goes at the end, so existing action indices stay as they are.
#include <array>

#include "codegen/schedule/primitive.h"

#define TG_PRIMITIVES(X)        \
  X(kSplitPrimitive)            \
  X(kReorderPrimitive)          \
  X(kFusePrimitive)             \
  X(kTilePrimitive)             \
  X(kVectorizePrimitive)        \
  X(kParallelPrimitive)         \
  X(kUnrollPrimitive)           \
  X(kPragmaPrimitive)           \
  X(kCacheReadPrimitive)        \
  X(kCacheWritePrimitive)       \
  X(kComputeAtPrimitive)        \
  X(kComputeInlinePrimitive)    \
  X(kComputeRootPrimitive)      \
  X(kRFactorPrimitive)          \
  X(kStorageAlignPrimitive)     \
  X(kReorderStoragePrimitive)   \
  X(kBindPrimitive)             \
  X(kReverseComputeAtPrimitive) \
  X(kSetScopePrimitive)         \
  X(kGpuTilePrimitive)          \
  X(kTensorizePrimitive)

namespace tensorgym {

#define TG_DECLARE(def) extern const PrimitiveDef def;
TG_PRIMITIVES(TG_DECLARE)
#undef TG_DECLARE

namespace {

#define TG_ENTRY(def) &def,
constexpr const PrimitiveDef* kPrimitives[] = {TG_PRIMITIVES(TG_ENTRY)};
#undef TG_ENTRY

}  // namespace

std::span<const PrimitiveDef* const> all_primitives() { return kPrimitives; }

const char* target_kind_name(TargetKind kind) {
  switch (kind) {
    case TargetKind::kCpu: return "cpu";
    case TargetKind::kGpu: return "gpu";
    case TargetKind::kAccelerator: return "accelerator";
  }
  return "?";
}

const PrimitiveDef* find_primitive(std::string_view name) {
  for (const PrimitiveDef* p : kPrimitives)
    if (p->name == name) return p;
  return nullptr;
}

PrimitiveResult check_and_apply(const PrimitiveDef& def, ScheduleState& state, const PrimitiveArgs& args) {
  TG_RETURN_IF_ERROR(def.check(state, args));
  return def.apply(state, args);
}

}  // namespace tensorgym
