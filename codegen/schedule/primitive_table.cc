// The table of every schedule primitive: its name, arity, usage and implementation.
#include <array>

#include "codegen/schedule/primitive.h"

namespace tensorgym {
namespace {

constexpr std::array<PrimitiveInfo, 17> kPrimitives = {{
    {"split", 4, 4, "split(STAGE.loop, factor, outer, inner)", apply_split},
    {"reorder", 2, -1, "reorder(STAGE, loop, loop, ...)", apply_reorder},
    {"fuse", 3, 3, "fuse(STAGE.outer, STAGE.inner, fused)", apply_fuse},
    {"tile", 8, 8, "tile(STAGE.x, STAGE.y, x_factor, y_factor, xo, yo, xi, yi)", apply_tile},
    {"vectorize", 1, 1, "vectorize(STAGE.loop)", apply_vectorize},
    {"parallel", 1, 1, "parallel(STAGE.loop)", apply_parallel},
    {"unroll", 1, 1, "unroll(STAGE.loop)", apply_unroll},
    {"cache_read", 3, 3, "cache_read(TENSOR, CONSUMER, NAME)", apply_cache_read},
    {"cache_write", 2, 2, "cache_write(STAGE, NAME)", apply_cache_write},
    {"compute_at", 2, 2, "compute_at(STAGE, CONSUMER.loop)", apply_compute_at},
    {"compute_inline", 1, 1, "compute_inline(STAGE)", apply_compute_inline},
    {"compute_root", 1, 1, "compute_root(STAGE)", apply_compute_root},
    {"rfactor", 2, 2, "rfactor(STAGE.loop, NAME)", apply_rfactor},
    {"storage_align", 3, 3, "storage_align(STAGE.axis, factor, offset)", apply_storage_align},
    {"reorder_storage", 2, -1, "reorder_storage(STAGE, axis, axis, ...)", apply_reorder_storage},
    {"pragma", 3, 3, "pragma(STAGE.loop, auto_unroll_max_step, n)", apply_pragma},
    {"bind", 2, 2, "bind(STAGE.loop, blockIdx.x | threadIdx.x | ...)", apply_bind},
}};

}  // namespace

std::span<const PrimitiveInfo> all_primitives() { return kPrimitives; }

const PrimitiveInfo* find_primitive(std::string_view name) {
  for (const PrimitiveInfo& p : kPrimitives)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace tensorgym
