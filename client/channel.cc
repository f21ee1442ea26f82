#include "client/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>

namespace tensorgym::client {

std::shared_ptr<grpc::Channel> make_channel(const std::string& target, const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(
      options.max_receive_bytes < 0 ? -1 : int(std::min<int64_t>(options.max_receive_bytes, (int64_t(1) << 31) - 1)));
  args.SetMaxSendMessageSize(-1);
  // gRPC's default first reconnect wait is 1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (options.keepalive_s > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, std::max(500, int(options.keepalive_s * 1000)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, std::max(100, int(options.keepalive_timeout_s * 1000)));
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_roots;
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_name.empty()) args.SetSslTargetNameOverride(options.tls_name);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(target, credentials, args);
}

}  // namespace tensorgym::client
