#include "src/io/uring_refusal.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace uring_http::io {
namespace {

constexpr int kCapSysAdmin = 21;  // linux/capability.h

// The first line of a file, or "" when it cannot be read.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The value of "Name:\tvalue" in /proc/self/status ("" when absent).
std::string StatusField(absl::string_view status, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, name) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

std::string ErrnoName(int error) {
  switch (error) {
    case EPERM:
      return "EPERM (Operation not permitted)";
    case EACCES:
      return "EACCES (Permission denied)";
    case ENOSYS:
      return "ENOSYS (Function not implemented)";
  }
  return strerror(error);
}

std::string Sysctl(const SystemFacts& facts) {
  if (facts.io_uring_disabled < 0) {
    return "sysctl kernel.io_uring_disabled (absent: kernels before 6.6 have none)";
  }
  return absl::StrCat("sysctl kernel.io_uring_disabled (", facts.io_uring_disabled, ")");
}

bool HasFilter(const SystemFacts& facts) { return facts.seccomp_mode == 2; }

std::string Filters(const SystemFacts& facts) {
  if (facts.seccomp_filters == 1) return "1 seccomp filter";
  if (facts.seccomp_filters > 1) return absl::StrCat(facts.seccomp_filters, " seccomp filters");
  return "a seccomp filter";
}

// What to do about a seccomp filter that blocks io_uring.
constexpr char kSeccompFix[] =
    "Container runtimes' default profiles block io_uring (Docker 25+, containerd 1.7+ and so "
    "Kubernetes' RuntimeDefault; Podman's answers ENOSYS): run the container with the profile "
    "deploy/seccomp.json, which allows it (docker or podman run --security-opt "
    "seccomp=deploy/seccomp.json ...; in Kubernetes, copy it to the node as "
    "/var/lib/kubelet/seccomp/uring-http.json and set securityContext.seccompProfile to "
    "{type: Localhost, localhostProfile: uring-http.json}), or make the filter allow "
    "io_uring_setup, io_uring_enter and io_uring_register (systemd: SystemCallFilter=@aio).";

// Appended when a cause other than seccomp is named but a filter is there too.
std::string AlsoFiltered(const SystemFacts& facts) {
  if (!HasFilter(facts)) return "";
  return absl::StrCat(" This process also runs under ", Filters(facts),
                      ", which may block io_uring as well: deploy/seccomp.json is a container "
                      "profile that allows it.");
}

std::string DescribeEperm(const SystemFacts& facts) {
  const std::string failed = absl::StrCat("io_uring_setup failed with ", ErrnoName(EPERM));
  if (facts.io_uring_disabled == 2) {
    return absl::StrCat(
        "io_uring is disabled on this host: ", failed,
        " because sysctl kernel.io_uring_disabled is 2, which refuses it to every process. As "
        "root on the host (for a container: its host or node), run `sysctl -w "
        "kernel.io_uring_disabled=0` and keep the setting in /etc/sysctl.d/ (or set 1 and put "
        "the server's group in kernel.io_uring_group).",
        AlsoFiltered(facts));
  }
  if (facts.io_uring_disabled == 1 && !facts.in_io_uring_group && !facts.cap_sys_admin) {
    const std::string group =
        facts.io_uring_group < 0 ? std::string("-1, no group")
                                 : absl::StrCat(facts.io_uring_group);
    return absl::StrCat(
        "io_uring is restricted on this host: ", failed,
        " because sysctl kernel.io_uring_disabled is 1, which allows it only to processes with "
        "CAP_SYS_ADMIN or in the group kernel.io_uring_group (", group,
        "), and this process (uid ", facts.uid, ", gid ", facts.gid,
        ") has neither. As root on the host, run `sysctl -w kernel.io_uring_group=GID` with a "
        "group the server runs in (e.g. ",
        facts.gid, "), or `sysctl -w kernel.io_uring_disabled=0`; keep it in /etc/sysctl.d/.",
        AlsoFiltered(facts));
  }
  if (HasFilter(facts)) {
    return absl::StrCat("io_uring is blocked by a seccomp filter: ", failed,
                        " in a process that runs under ", Filters(facts), ", and ",
                        Sysctl(facts), " allows it. ", kSeccompFix);
  }
  return absl::StrCat(
      "io_uring is refused by something this process cannot see: ", failed, ", yet ",
      Sysctl(facts), " allows it and ",
      facts.seccomp_mode == 0 ? "no seccomp filter is in place"
                              : "whether a seccomp filter is in place is unknown",
      ". A Linux security module or a sandbox around the process may refuse io_uring: look "
      "for the denial in the kernel's audit log (`journalctl -k`, `ausearch -m avc`) and allow "
      "io_uring_setup, io_uring_enter and io_uring_register there.");
}

std::string DescribeEacces(const SystemFacts& facts) {
  return absl::StrCat(
      "io_uring is denied by a Linux security module: io_uring_setup failed with ",
      ErrnoName(EACCES),
      ", which io_uring's own checks do not return (SELinux denies it through the permission "
      "io_uring { allowed }, Linux 6.15+). Look for the denial in the audit log (`ausearch -m "
      "avc`, `journalctl -k`) and allow io_uring for the server's domain.",
      AlsoFiltered(facts));
}

std::string DescribeEnosys(const SystemFacts& facts) {
  const std::string failed = absl::StrCat("io_uring_setup failed with ", ErrnoName(ENOSYS));
  if (HasFilter(facts)) {
    return absl::StrCat(
        "io_uring is probably blocked by a seccomp filter: ", failed,
        " in a process that runs under ", Filters(facts),
        ", and a filter that answers ENOSYS for the calls it does not allow looks just like a "
        "kernel without io_uring. ",
        kSeccompFix,
        " If io_uring is missing outside the filter too, the kernel has none (built without "
        "CONFIG_IO_URING, or older than Linux 5.1).");
  }
  return absl::StrCat(
      "This kernel has no io_uring: ", failed, " and ",
      facts.seccomp_mode == 0 ? "no seccomp filter is in place"
                              : "whether a seccomp filter is in place is unknown",
      ", so the kernel was built without CONFIG_IO_URING or is older than Linux 5.1 (or a "
      "sandbox around the process hides it). Run the server on a recent kernel with io_uring "
      "(CONFIG_IO_URING=y).");
}

}  // namespace

SystemFacts ReadSystemFacts(const std::string& proc) {
  SystemFacts facts;
  int value = 0;
  if (absl::SimpleAtoi(FirstLine(proc + "/sys/kernel/io_uring_disabled"), &value)) {
    facts.io_uring_disabled = value;
  }
  int64_t group = 0;
  if (absl::SimpleAtoi(FirstLine(proc + "/sys/kernel/io_uring_group"), &group)) {
    facts.io_uring_group = group;
  }

  std::ifstream in(proc + "/self/status");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string status = buffer.str();
  if (status.empty()) return facts;

  if (absl::SimpleAtoi(StatusField(status, "Seccomp"), &value)) facts.seccomp_mode = value;
  if (absl::SimpleAtoi(StatusField(status, "Seccomp_filters"), &value)) {
    facts.seccomp_filters = value;
  }
  // "Uid:" and "Gid:" list real, effective, saved and filesystem ids.
  const std::vector<std::string> uids =
      absl::StrSplit(StatusField(status, "Uid"), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (uids.size() >= 2) (void)absl::SimpleAtoi(uids[1], &facts.uid);
  const std::vector<std::string> gids =
      absl::StrSplit(StatusField(status, "Gid"), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (gids.size() >= 4) (void)absl::SimpleAtoi(gids[3], &facts.gid);
  if (facts.io_uring_group >= 0) {
    facts.in_io_uring_group = facts.gid == facts.io_uring_group;
    for (absl::string_view g : absl::StrSplit(StatusField(status, "Groups"),
                                             absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      int64_t id = 0;
      if (absl::SimpleAtoi(g, &id) && id == facts.io_uring_group) facts.in_io_uring_group = true;
    }
  }
  uint64_t cap_eff = 0;
  if (absl::SimpleHexAtoi(StatusField(status, "CapEff"), &cap_eff)) {
    facts.cap_sys_admin = (cap_eff >> kCapSysAdmin) & 1;
  }
  return facts;
}

bool IsSetupRefusal(int error) { return error == EPERM || error == EACCES || error == ENOSYS; }

std::string DescribeSetupRefusal(int error, const SystemFacts& facts) {
  switch (error) {
    case EPERM:
      return DescribeEperm(facts);
    case EACCES:
      return DescribeEacces(facts);
    case ENOSYS:
      return DescribeEnosys(facts);
  }
  return absl::StrCat("io_uring_setup: ", strerror(error));
}

}  // namespace uring_http::io
