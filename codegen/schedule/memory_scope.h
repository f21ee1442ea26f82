// Memory scopes as schedules name them: the word a trace carries (set_scope, and the
// optional last argument of cache_read / cache_write) and what a stage in a scope must
// be. Lowering for cuda places and checks the buffers (codegen/lower/check_gpu_scopes.cc).
#pragma once

#include <iterator>
#include <string_view>

#include "codegen/schedule/primitive.h"

namespace tensorgym {

// In the order of MemoryScope after kAuto: word w is MemoryScope(w + 1).
inline constexpr std::string_view kScopeWords[] = {"global", "shared", "local"};
inline constexpr ArgSpec kScopeArg = {ArgKind::kWord, "memory scope", 0, 0, kScopeWords, "global, shared, local"};
// The same, left out where a primitive places its new stage nowhere in particular.
inline constexpr ArgSpec kOptionalScopeArg = {ArgKind::kWord, "memory scope", 0,    0,
                                              kScopeWords,    "global, shared, local", true};
inline constexpr int kNumScopes = int(std::size(kScopeWords));

inline MemoryScope scope_of_word(int64_t word) { return MemoryScope(word + 1); }

// Whether `stage`'s buffer can be placed in a scope: it has one (not inlined) and is
// not an output (the host reads outputs from global memory).
Status check_scope_placeable(const StageSchedule& stage, MemoryScope scope);

}  // namespace tensorgym
