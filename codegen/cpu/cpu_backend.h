// The CPU backend: a lowered loop nest compiled to machine code for this machine by
// LLVM 19 (IR emission, O3, ORC LLJIT). No LLVM header leaks out of this interface.
// Outside codegen/ it is reached through the backend interface and its registry
// (codegen/backend/registry.h), never through this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/lower/loop_nest.h"
#include "support/status.h"

namespace tensorgym {

// What code is generated for: the host's triple, CPU and features.
struct CpuTarget {
  std::string triple;        // "x86_64-pc-linux-gnu"
  std::string cpu_name;      // "znver4"
  std::string features;      // "+avx2,+fma,..." (the enabled ones)
  std::string llvm_version;  // "19.1.7"
  int vector_bits = 128;     // widest usable vector register
  int auto_vector_bits = 128;  // widest vector LLVM's loop vectorizer picks (Intel AVX-512: 256)
  int num_cores = 1;

  static const CpuTarget& host();
  // A stable hash of everything above (kernel cache keys, result provenance).
  std::string fingerprint() const;
};

struct CpuCompileOptions {
  bool keep_llvm_ir = false;  // keep the optimized module's text
  // Keep LLVM's loop-vectorizer remarks: which loops it vectorized (and how wide), and
  // why it left the others, and the loops it fully unrolled (what the cost model's
  // code-generator rules predict).
  bool keep_vectorizer_remarks = false;
};

// A compiled loop nest (Executable), with the CPU's names for what it keeps.
class CpuKernel : public Executable {
 public:
  const std::string& llvm_ir() const { return code_text_; }  // empty unless kept
  // "vectorized: ...", "missed: ...", "analysis: ..." or "unrolled: completely unrolled
  // loop with N iterations" lines, in LLVM's order; empty unless kept.
  const std::vector<std::string>& vectorizer_remarks() const { return remarks_; }
};

// Compiles a nest lowered for the CPU (lower(state, cpu_backend().lowering()));
// FAILED_PRECONDITION for a nest lowered for another target or for none. Errors
// (INTERNAL, with LLVM's message) are COMPILE errors.
Expected<std::shared_ptr<const CpuKernel>> compile_cpu_kernel(const LoopNest& nest,
                                                              const CpuCompileOptions& options = {});

// The CPU backend, for the registry (codegen/backend/registry.cc).
const Backend& cpu_backend();

}  // namespace tensorgym
