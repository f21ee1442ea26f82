// An agents/ Evaluator over TensorGym services (`tensorgym search --endpoints`): each
// candidate is a batch job (client/batch_evaluator.h) that measures the schedule on
// one of the endpoints, with the search's light runner settings. The batch evaluator
// spreads the candidates over the endpoints and re-sends the ones a dying worker or
// service lost, so a search survives them; a candidate that fails on its own merits
// (does not compile, crashes, computes a wrong answer, passes its deadline) is a
// failed trial with its error class, as with the local runner.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agents/evaluator.h"

namespace tensorgym::cli {

struct RemoteEvaluatorOptions {
  std::vector<std::string> endpoints;  // host:port or dns:///name:port
  int threads = 0;                     // runner.threads of every measurement (0: the service's)
  std::string auth_token_file;
  bool tls = false;
  std::string tls_ca_file;
  double connect_timeout_s = 30;  // how long to wait for a first endpoint to be ready
};

// Connects and waits for one endpoint to be ready (its preflight job measured a small
// kernel): INVALID_ARGUMENT / UNAVAILABLE as BatchEvaluator::create, UNAVAILABLE when
// no endpoint is ready within connect_timeout_s (with the endpoints' last errors).
Expected<std::unique_ptr<Evaluator>> make_remote_evaluator(const RemoteEvaluatorOptions& options);

}  // namespace tensorgym::cli
