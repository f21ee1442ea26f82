// The RPC handlers: the TensorGym service on gRPC's callback API. Thin: each handler
// checks the caller, converts the request (service/convert.h), calls envs/ or
// datasets/, and converts the answer. Cheap calls run on gRPC's threads; calls that
// may measure run on the CallExecutor, bounded by their deadline.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>

#include "envs/env_context.h"
#include "proto/tensorgym.grpc.pb.h"
#include "service/auth.h"
#include "service/call_executor.h"
#include "service/convert.h"
#include "service/evaluate.h"
#include "service/server_options.h"
#include "service/session_table.h"
#include "service/step_messages.h"

namespace tensorgym::service {

class TensorGymService final : public proto::TensorGym::CallbackService {
 public:
  TensorGymService(const ServerOptions& options, std::shared_ptr<EnvContext> context, Authenticator auth);
  ~TensorGymService() override;

  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx, const proto::GetVersionRequest* request,
                                       proto::GetVersionResponse* response) override;
  grpc::ServerUnaryReactor* GetSpaces(grpc::CallbackServerContext* ctx, const proto::GetSpacesRequest* request,
                                      proto::GetSpacesResponse* response) override;
  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* ctx, const proto::ListDatasetsRequest* request,
                                         proto::ListDatasetsResponse* response) override;
  grpc::ServerUnaryReactor* ListBenchmarks(grpc::CallbackServerContext* ctx,
                                           const proto::ListBenchmarksRequest* request,
                                           proto::ListBenchmarksResponse* response) override;
  grpc::ServerUnaryReactor* AddBenchmark(grpc::CallbackServerContext* ctx, const proto::AddBenchmarkRequest* request,
                                         proto::AddBenchmarkResponse* response) override;
  grpc::ServerUnaryReactor* StartSession(grpc::CallbackServerContext* ctx, const proto::StartSessionRequest* request,
                                         proto::StartSessionResponse* response) override;
  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* ctx, const proto::StepRequest* request,
                                 proto::StepResponse* response) override;
  grpc::ServerUnaryReactor* ForkSession(grpc::CallbackServerContext* ctx, const proto::ForkSessionRequest* request,
                                        proto::ForkSessionResponse* response) override;
  grpc::ServerUnaryReactor* EndSession(grpc::CallbackServerContext* ctx, const proto::EndSessionRequest* request,
                                       proto::EndSessionResponse* response) override;
  grpc::ServerUnaryReactor* GetState(grpc::CallbackServerContext* ctx, const proto::GetStateRequest* request,
                                     proto::GetStateResponse* response) override;
  grpc::ServerUnaryReactor* Validate(grpc::CallbackServerContext* ctx, const proto::ValidateRequest* request,
                                     proto::ValidateResponse* response) override;
  grpc::ServerUnaryReactor* SendSessionParameter(grpc::CallbackServerContext* ctx,
                                                 const proto::SendSessionParameterRequest* request,
                                                 proto::SendSessionParameterResponse* response) override;
  grpc::ServerBidiReactor<proto::StepRequest, proto::StepResponse>* Session(grpc::CallbackServerContext* ctx) override;
  // Batch jobs on the evaluation pool (service/evaluate.h).
  grpc::ServerBidiReactor<proto::EvaluateRequest, proto::EvaluateResponse>* Evaluate(
      grpc::CallbackServerContext* ctx) override;

  // Ends idle sessions (the server calls this periodically); returns how many.
  size_t reap_idle_sessions();
  // Removes the benchmark://user-v0 programs unused for --user-benchmark-ttl; how many.
  size_t expire_unused_benchmarks();
  // Refuses new calls that may measure, gives those in flight `grace`, then cancels them;
  // ends the Session and Evaluate streams that wait for their client (UNAVAILABLE).
  void shutdown(std::chrono::steady_clock::duration grace);

  SessionTable& sessions() { return sessions_; }
  CallExecutor& executor() { return *executor_; }
  EvaluatePool& evaluate_pool() { return *evaluate_; }

 private:
  class SlowUnaryReactor;
  class SessionStream;

  // Whether a call computing these observations and rewards may measure (any of them
  // platform-dependent: compiled and run); such calls run on the executor.
  bool may_measure(const std::string& env, const std::vector<std::string>& observations,
                   const std::vector<std::string>& rewards) const;
  // A step on a session the caller holds. With `call` (a cancellable call), it steps a
  // fork and commits it only when the call was not cancelled.
  grpc::Status step_session(service::Session& session, const StepArgs& args, CallExecutor::Call* call,
                            proto::StepResponse* response);
  // Runs fn(session, call) holding the session: on this thread when the session is free
  // and !may_block, else on the executor. fn returns the call's status.
  template <class Fn>
  grpc::ServerUnaryReactor* with_session(grpc::CallbackServerContext* ctx, const std::string& session_id,
                                         const std::string& caller, bool may_block, Fn fn);
  // The same with the session already looked up.
  template <class Fn>
  grpc::ServerUnaryReactor* with_session(grpc::CallbackServerContext* ctx, std::shared_ptr<service::Session> session,
                                         bool may_block, Fn fn);
  // Runs fn(call) on the executor and finishes the call with its status.
  template <class Fn>
  grpc::ServerUnaryReactor* run_slow(grpc::CallbackServerContext* ctx, Fn fn);
  // Every call starts here: checks the caller's token. The caller's identity
  // (Authenticator::identify).
  Expected<std::string> admit(const grpc::CallbackServerContext& ctx) const;

  const ServerOptions options_;
  const std::shared_ptr<EnvContext> context_;
  const Authenticator auth_;
  StepMessageAllocator step_messages_;  // Step's messages, and what a step drops (step_messages.h)
  SessionTable sessions_;
  std::unique_ptr<CallExecutor> executor_;
  std::unique_ptr<EvaluatePool> evaluate_;
  // Open Session streams, so that shutdown ends those waiting for their next step.
  std::mutex streams_mu_;
  std::set<SessionStream*> session_streams_;
  bool closing_streams_ = false;
  std::map<std::string, proto::GetSpacesResponse> spaces_;           // by env name
  std::map<std::string, std::unordered_set<std::string>> measuring_;  // env -> platform-dependent spaces
  std::string instance_id_;
};

}  // namespace tensorgym::service
