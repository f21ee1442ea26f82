// Memory scopes as schedules name them: the word a trace carries (set_scope, and the
// optional last argument of cache_read / cache_write) and what a stage in a scope must
// be. GPU scopes (global, shared, local) are placed and checked by lowering for cuda
// (codegen/lower/check_gpu_scopes.cc); the accelerator's on-chip buffers (inp_buffer,
// wgt_buffer, acc_buffer) by the fpga target.
#pragma once

#include <iterator>
#include <string_view>

#include "codegen/schedule/primitive.h"

namespace tensorgym {

// In the order of MemoryScope after kAuto: word w is MemoryScope(w + 1).
inline constexpr std::string_view kScopeWords[] = {"global", "shared", "local", "inp_buffer", "wgt_buffer", "acc_buffer"};
inline constexpr std::string_view kScopeKnown = "global, shared, local, inp_buffer, wgt_buffer, acc_buffer";
inline constexpr ArgSpec kScopeArg = {ArgKind::kWord, "memory scope", 0, 0, kScopeWords, kScopeKnown};
// The same, left out where a primitive places its new stage nowhere in particular.
inline constexpr ArgSpec kOptionalScopeArg = {ArgKind::kWord, "memory scope", 0, 0, kScopeWords, kScopeKnown, true};
inline constexpr int kNumScopes = int(std::size(kScopeWords));

inline MemoryScope scope_of_word(int64_t word) { return MemoryScope(word + 1); }

// Whether a scope exists on a kind of target: global everywhere but the cpu (which has
// one memory), shared and local on GPUs, the on-chip buffers on the accelerator.
bool scope_exists_on(MemoryScope scope, TargetKind target);

// Whether `stage`'s buffer can be placed in a scope: it has one (not inlined) and is
// not an output (the host reads outputs from global memory).
Status check_scope_placeable(const StageSchedule& stage, MemoryScope scope);

}  // namespace tensorgym
