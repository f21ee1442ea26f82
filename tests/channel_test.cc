// The client library's one channel builder (client/channel.h) against a real
// `tensorgym serve` over TLS whose certificate names "localhost": the name override is
// what lets a channel dial an address resolved from that name, and the batch evaluator,
// given dns:///localhost:PORT, dials addresses and still checks the certificate's name.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/batch_evaluator.h"
#include "client/channel.h"
#include "client/managed_server.h"
#include "proto/tensorgym.grpc.pb.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TlsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/channel_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    cert_ = dir_ + "/cert.pem";
    const std::string key = dir_ + "/key.pem";
    const std::string openssl = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                                "-addext subjectAltName=DNS:localhost -keyout " + key + " -out " + cert_ +
                                " > /dev/null 2>&1";
    if (std::system(openssl.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a test certificate here";
    Expected<std::unique_ptr<client::ManagedServer>> s = client::ManagedServer::start(
        kBinary, {"--tls-cert", cert_, "--tls-key", key, "--threads", "1", "--log-level", "warning"}, 60);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // GetVersion over a channel from make_channel.
  grpc::Status version(const client::ChannelOptions& options) {
    auto stub = proto::TensorGym::NewStub(client::make_channel(server_->address(), options));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    proto::GetVersionRequest request;
    proto::GetVersionResponse response;
    return stub->GetVersion(&ctx, request, &response);
  }

  std::string dir_, cert_;
  std::unique_ptr<client::ManagedServer> server_;
};

TEST_F(TlsServiceTest, TheNameOverrideIsWhatTheCertificateIsCheckedAgainst) {
  client::ChannelOptions o;
  o.tls = true;
  o.tls_roots = read_file(cert_);
  o.tls_name = "localhost";
  grpc::Status named = version(o);
  EXPECT_TRUE(named.ok()) << named.error_message();
  // The address alone is not the name the certificate holds.
  o.tls_name = "";
  EXPECT_FALSE(version(o).ok());
  o.tls_name = "elsewhere.example";
  EXPECT_FALSE(version(o).ok());
}

TEST_F(TlsServiceTest, TheBatchEvaluatorChecksTheCertificateAgainstTheNameItResolved) {
  client::BatchOptions o;
  o.endpoints = {"dns:///localhost:" + std::to_string(server_->port())};
  o.tls = true;
  o.tls_ca_file = cert_;
  o.resolve_period_s = 0;
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  ASSERT_TRUE((*batch)->wait_ready(1, 30));
  client::BatchJob job;
  job.benchmark = "benchmark://ops-v0/gmm-1";
  job.actions = "split(C.i, 32, io, ii)";
  job.observations = {"est_cycles"};
  std::vector<client::BatchResult> results = (*batch)->evaluate({job});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].error << ": " << results[0].message;
  EXPECT_NE(results[0].observation("est_cycles"), nullptr);
  // Dialled by address, the same certificate does not match: the endpoint never gets ready.
  o.endpoints = {server_->address()};
  Expected<std::unique_ptr<client::BatchEvaluator>> by_address = client::BatchEvaluator::create(o);
  ASSERT_TRUE(by_address.ok()) << by_address.status().to_string();
  EXPECT_FALSE((*by_address)->wait_ready(1, 3));
}

}  // namespace
}  // namespace tensorgym
