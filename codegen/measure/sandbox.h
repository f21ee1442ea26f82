// What a measurement worker runs under. The worker applies it to itself at start-up
// (run_worker, before its hello), in this order:
//
//   user          as root: no supplementary groups, the user and group of `nobody`
//                 (65534 when there is no such entry), the capability bounding set
//                 emptied first
//   capabilities  none: effective, permitted, inheritable and ambient sets cleared
//   parent        PR_SET_PDEATHSIG armed again (a change of credentials clears it)
//                 and the parent checked again
//   no_new_privs  PR_SET_NO_NEW_PRIVS: nothing it could exec gains privileges
//   memory        RLIMIT_DATA (private writable memory: heap, anonymous maps, thread
//                 stacks; not the code of the shared libraries) at the given limit;
//                 an allocation past it ends the process with kOutOfMemoryExitStatus
//   seccomp       a filter that denies, with EPERM, the system calls a compiled kernel
//                 never makes: exec, fork and clone of a process (threads are allowed;
//                 clone3 answers ENOSYS so the C library falls back to clone), sockets,
//                 ptrace and process_vm_*, signals to other processes, mount,
//                 namespaces, modules, bpf, keyrings, io_uring and the like
//
// Sanitizer builds (AddressSanitizer, ThreadSanitizer) map terabytes of shadow memory,
// so they leave the memory limit off; the report says so.
#pragma once

#include <cstdint>
#include <string>

#include "support/status.h"

namespace tensorgym {

// How a worker that ran out of its memory limit exits (the runner reports the job as
// RESOURCE_EXHAUSTED). Chosen apart from the statuses the worker and its tests use.
inline constexpr int kOutOfMemoryExitStatus = 86;

struct SandboxOptions {
  // RLIMIT_DATA in bytes; 0: no limit.
  int64_t memory_limit_bytes = 0;
  // The runner's pid, checked again once the user changed; 0 skips the check.
  int64_t parent_pid = 0;
};

// Whether this build can enforce a memory limit (not under AddressSanitizer or
// ThreadSanitizer).
bool memory_limit_supported();

// Applies everything above to the calling process, which must not have started
// threads yet. Returns one line saying what was applied ("user nobody (65534), no
// capabilities, no_new_privs, memory limit 8589934592 bytes (RLIMIT_DATA), seccomp
// filter (...)"); an error when a step failed (the worker must not serve then).
Expected<std::string> apply_sandbox(const SandboxOptions& options);

// Ends the process at once with kOutOfMemoryExitStatus after one line on stderr; no
// allocation. The worker's new handler and allocation-failure paths call it.
[[noreturn]] void exit_out_of_memory();

}  // namespace tensorgym
