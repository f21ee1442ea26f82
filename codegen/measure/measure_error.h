// Error classes of a measurement (MeasureError, measurement.h) and the words used in their
// diagnostics: class names, signal names, how a worker process ended.
//
//   INSTANTIATION  parse, schedule or lowering failed; the message is theirs
//                  (line:column for program and schedule text)
//   COMPILE        the backend failed to compile, or the worker died while compiling
//                  (an LLVM crash or fatal error is a property of the module)
//   RUNTIME_CRASH  the worker died during the run phase (signal or exit status),
//                  with the tail of its stderr
//   WRONG_ANSWER   an output differs from the reference evaluator: the point,
//                  expected and actual values
//   TIMEOUT        compile or run passed its deadline (which one is said), or the
//                  caller cancelled the job; the worker was killed
//   WORKER_LOST    the worker could not start, died while idle, or broke the protocol
//   RESOURCE_EXHAUSTED  past a memory cap: the program's or its lowered buffers'
//                  (ProgramLimits, before compiling), or the worker's hard limit
//                  (sandbox.h); the worker is replaced. A property of the job: not
//                  worth running again
#pragma once

#include <string>

#include "codegen/measure/measurement.h"
#include "support/status.h"

namespace tensorgym {

// "WRONG_ANSWER" (the wire's name); "MEASURE_OK" for no error.
std::string measure_error_name(MeasureError error);

// A test fault by its wire name ("CRASH_IN_RUN"; "" and "NO_FAULT": none);
// INVALID_ARGUMENT for another.
Expected<TestFault> test_fault_from_name(const std::string& name);

// A result holding only an error class and its message.
MeasureResult error_result(MeasureError error, std::string message);

// A failed measurement as a status: "CLASS: message" with `code`, except that
// RESOURCE_EXHAUSTED keeps its own code.
Status measure_error_status(const MeasureResult& result, StatusCode code);

// "SIGSEGV" (or "signal 42" for one without a name).
std::string signal_name(int sig);

// How a process ended, from a waitpid status: "killed by SIGSEGV (Segmentation
// fault)" or "exited with status 3".
std::string describe_wait_status(int wait_status);

}  // namespace tensorgym
