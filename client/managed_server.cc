#include "client/managed_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "support/subprocess.h"

namespace tensorgym::client {
namespace {

bool is_executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

std::string self_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, size_t(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

// The thread that forks the server and then waits, so that PR_SET_PDEATHSIG ties the
// server to this object rather than to whichever caller thread started it.
struct ManagedServer::Spawner {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;

  ~Spawner() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }

  // Runs fn on the spawner thread (started by the first call) and waits for it.
  void run(const std::function<void()>& fn) {
    std::mutex done_mu;
    std::condition_variable done_cv;
    bool done = false;
    thread = std::thread([&, this] {
      fn();
      {
        // Notified under the lock: run() returns (and its locals go) only after this.
        std::lock_guard<std::mutex> lock(done_mu);
        done = true;
        done_cv.notify_all();
      }
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [this] { return stop; });
    });
    std::unique_lock<std::mutex> lock(done_mu);
    done_cv.wait(lock, [&] { return done; });
  }
};

std::string ManagedServer::default_binary() {
  if (const char* env = std::getenv("TENSORGYM_BINARY"); env && is_executable(env)) return env;
  std::string beside = self_dir() + "/tensorgym";
  if (is_executable(beside)) return beside;
  return find_on_path("tensorgym");
}

Expected<std::unique_ptr<ManagedServer>> ManagedServer::start(const std::string& binary_in,
                                                              const std::vector<std::string>& args,
                                                              double timeout_s) {
  const std::string binary = binary_in.empty() ? default_binary() : binary_in;
  if (!is_executable(binary))
    return not_found("cannot find the tensorgym executable to start the service" +
                     (binary.empty() ? std::string() : " (" + binary + ")") +
                     "; set ConnectionOptions::server_binary or $TENSORGYM_BINARY");
  std::unique_ptr<ManagedServer> server(new ManagedServer());
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tensorgym-client-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return Status(StatusCode::kUnavailable, "mkdtemp: " + std::string(std::strerror(errno)));
  server->dir_ = buf.data();
  const std::string port_file = server->dir_ + "/port";

  std::vector<std::string> argv_s = {binary, "serve",       "--host",  "127.0.0.1",    "--port",
                                     "0",    "--port-file", port_file, "--parent-pid", fmt::format("{}", ::getpid())};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t parent = ::getpid();
  pid_t pid = -1;
  int fork_errno = 0;
  server->spawner_ = std::make_unique<Spawner>();
  server->spawner_->run([&] {
    pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      // stdin and stdout from /dev/null (the client's stay its own); stderr shared for the logs.
      int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        ::dup2(null_fd, 0);
        ::dup2(null_fd, 1);
      }
      ::close_range(3, ~0U, 0);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (pid < 0) fork_errno = errno;
  });
  if (pid < 0) return Status(StatusCode::kUnavailable, "fork: " + std::string(std::strerror(fork_errno)));
  server->pid_ = pid;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::ifstream in(port_file);
    int port = 0;
    if (in >> port && port > 0) {
      server->port_ = port;
      // Read once: the directory goes now, so that a client killed later leaves none.
      server->remove_port_dir();
      return server;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      server->reaped_ = true;
      return Status(StatusCode::kUnavailable, binary + " serve " + exit_text(status) +
                                                  " before it was ready (its messages are above, on stderr)");
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Status(StatusCode::kUnavailable,
                    fmt::format("{} serve did not report its port within {:g} s", binary, timeout_s));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ManagedServer::alive() {
  if (reaped_ || pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    return false;
  }
  return true;
}

void ManagedServer::kill_now() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

ManagedServer::~ManagedServer() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (alive() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    kill_now();
  }
  spawner_.reset();
  remove_port_dir();
}

void ManagedServer::remove_port_dir() {
  if (dir_.empty()) return;
  ::unlink((dir_ + "/port").c_str());
  ::rmdir(dir_.c_str());
  dir_.clear();
}

}  // namespace tensorgym::client
