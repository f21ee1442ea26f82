#include "codegen/measure/sandbox.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>

#if TENSORGYM_HAVE_SECCOMP
#include <seccomp.h>

#include <fmt/format.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TENSORGYM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TENSORGYM_SANITIZED 1
#endif
#endif

namespace tensorgym {
namespace {

// The line exit_out_of_memory writes, prepared while allocating is still possible.
char g_out_of_memory_line[160] = "tensorgym worker: out of memory\n";

std::string errno_text() { return std::strerror(errno); }

Status failed(const std::string& what) { return Status(StatusCode::kInternal, what + ": " + errno_text()); }

void on_new_failure() { exit_out_of_memory(); }

Status drop_user(std::string* report) {
  if (geteuid() != 0) {
    *report = fmt::format("user {} (unchanged: not root)", geteuid());
    return Status();
  }
  uid_t uid = 65534;
  gid_t gid = 65534;
  if (const passwd* pw = getpwnam("nobody")) uid = pw->pw_uid, gid = pw->pw_gid;
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) > 0 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      return failed(fmt::format("prctl(PR_CAPBSET_DROP, {})", cap));
  }
  if (setgroups(0, nullptr) != 0) return failed("setgroups(0)");
  if (setresgid(gid, gid, gid) != 0) return failed(fmt::format("setresgid({})", gid));
  if (setresuid(uid, uid, uid) != 0) return failed(fmt::format("setresuid({})", uid));
  *report = fmt::format("user nobody ({}:{})", uid, gid);
  return Status();
}

Status drop_capabilities() {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return failed("prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, data) != 0) return failed("capset(none)");
  return Status();
}

Status rearm_parent_death(int64_t parent_pid) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return failed("prctl(PR_SET_PDEATHSIG)");
  if (parent_pid > 0 && int64_t(getppid()) != parent_pid)
    return Status(StatusCode::kUnavailable, fmt::format("parent {} is gone", parent_pid));
  return Status();
}

Status limit_memory(int64_t bytes, std::string* report) {
  if (bytes <= 0) {
    *report = "no memory limit";
    return Status();
  }
  if (!memory_limit_supported()) {
    *report = "no memory limit (a sanitizer build: its shadow memory does not fit one)";
    return Status();
  }
  const rlimit limit{rlim_t(bytes), rlim_t(bytes)};
  if (setrlimit(RLIMIT_DATA, &limit) != 0) return failed(fmt::format("setrlimit(RLIMIT_DATA, {})", bytes));
  // Written now, so that the new-handler only copies it out.
  const auto end = fmt::format_to_n(g_out_of_memory_line, sizeof g_out_of_memory_line - 1,
                                    "tensorgym worker {}: out of memory: the worker's limit of {} bytes (RLIMIT_DATA) is reached\n",
                                    int(getpid()), bytes);
  *end.out = '\0';
  std::set_new_handler(on_new_failure);
  *report = fmt::format("memory limit {} bytes (RLIMIT_DATA)", bytes);
  return Status();
}

#if TENSORGYM_HAVE_SECCOMP
// Denied with EPERM whatever their arguments.
constexpr const char* kDenied[] = {
    // other programs and processes
    "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open",
    "pidfd_getfd", "pidfd_send_signal", "tkill",
    // the network (and any socket)
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    // mounts and namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick",
    // the kernel itself
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "bpf", "perf_event_open",
    "userfaultfd", "add_key", "request_key", "keyctl", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd", "vhangup", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "open_by_handle_at",
    "name_to_handle_at", "fanotify_init", "lookup_dcookie", "personality",
    // credentials
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capset"};

Status install_seccomp(std::string* report) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return Status(StatusCode::kInternal, "seccomp_init failed");
  int rc = 0;
  int denied = 0;
  auto add = [&](uint32_t action, const char* name, unsigned count, const scmp_arg_cmp* cmp) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // not a system call of this architecture
    if (rc == 0) rc = seccomp_rule_add_array(ctx, action, nr, count, cmp);
    ++denied;
  };
  for (const char* name : kDenied) add(SCMP_ACT_ERRNO(EPERM), name, 0, nullptr);
  // Threads only: a clone without CLONE_THREAD is a new process.
  const scmp_arg_cmp no_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
  add(SCMP_ACT_ERRNO(EPERM), "clone", 1, &no_thread);
  // clone3 passes its flags in memory the filter cannot read.
  add(SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, nullptr);
  // Signals to this process only (abort() and raise() send them to themselves).
  const scmp_arg_cmp other = SCMP_A0(SCMP_CMP_NE, scmp_datum_t(getpid()));
  for (const char* name : {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"})
    add(SCMP_ACT_ERRNO(EPERM), name, 1, &other);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return Status(StatusCode::kInternal, std::string("seccomp filter: ") + std::strerror(-rc));
  *report = fmt::format(
      "seccomp filter ({} system calls denied or restricted: exec, fork, sockets, ptrace, signals to others, mount, "
      "namespaces, modules, bpf, keyrings, io_uring)",
      denied);
  return Status();
}
#else
Status install_seccomp(std::string* report) {
  *report = "no seccomp filter (built without libseccomp)";
  return Status();
}
#endif

}  // namespace

bool memory_limit_supported() {
#ifdef TENSORGYM_SANITIZED
  return false;
#else
  return true;
#endif
}

void exit_out_of_memory() {
  const ssize_t ignored = ::write(STDERR_FILENO, g_out_of_memory_line, std::strlen(g_out_of_memory_line));
  (void)ignored;
  _exit(kOutOfMemoryExitStatus);
}

Expected<std::string> apply_sandbox(const SandboxOptions& options) {
  std::string user, memory, seccomp;
  TG_RETURN_IF_ERROR(drop_user(&user));
  TG_RETURN_IF_ERROR(drop_capabilities());
  TG_RETURN_IF_ERROR(rearm_parent_death(options.parent_pid));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("prctl(PR_SET_NO_NEW_PRIVS)");
  TG_RETURN_IF_ERROR(limit_memory(options.memory_limit_bytes, &memory));
  TG_RETURN_IF_ERROR(install_seccomp(&seccomp));
  return user + ", no capabilities, no_new_privs, " + memory + ", " + seccomp;
}

}  // namespace tensorgym
