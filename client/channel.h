// The one place the client library builds gRPC channels: Connection (client/
// connection.h) and BatchEvaluator (client/batch_evaluator.h) differ only in what
// ChannelOptions says, so TLS, the certificate name and reconnection behave the same.
#pragma once

#include <grpcpp/channel.h>

#include <cstdint>
#include <memory>
#include <string>

namespace tensorgym::client {

struct ChannelOptions {
  bool tls = false;
  std::string tls_roots;  // PEM roots to trust; empty: the system's
  // The name the server's certificate must hold. Set it when the target is an address
  // resolved from a name (dns:///name:port): the certificate names the host, not its
  // addresses. Empty: the target's own host.
  std::string tls_name;
  int64_t max_receive_bytes = -1;  // largest message accepted (-1: no limit)
  // HTTP/2 keepalive pings every keepalive_s, a peer silent for keepalive_timeout_s
  // after one is dead (0: no pings).
  double keepalive_s = 0;
  double keepalive_timeout_s = 1;
};

// A channel to `target` ("host:port", "ipv4:10.0.0.7:50051", ...). It reconnects soon
// after a server comes back (50 ms first backoff, at most 1 s), keeps its own
// connection (no subchannel shared with other channels), and leaves retries to the
// caller (the client library replays or re-sends what UNAVAILABLE lost).
std::shared_ptr<grpc::Channel> make_channel(const std::string& target, const ChannelOptions& options);

}  // namespace tensorgym::client
