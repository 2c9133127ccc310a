// Tests for DescribeSetupRefusal (every cause, from facts alone: no kernel
// has to refuse anything) and ReadSystemFacts (a /proc tree of the test's
// own, and the real one).
#include "src/io/uring_refusal.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace uring_http::io {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A plain host: io_uring allowed, no filter, an unprivileged user.
SystemFacts Plain() {
  SystemFacts facts;
  facts.io_uring_disabled = 0;
  facts.io_uring_group = -1;
  facts.uid = 1000;
  facts.gid = 1000;
  facts.seccomp_mode = 0;
  facts.seccomp_filters = 0;
  return facts;
}

SystemFacts Filtered(int filters) {
  SystemFacts facts = Plain();
  facts.seccomp_mode = 2;
  facts.seccomp_filters = filters;
  return facts;
}

// Every message is one paragraph: the caller prints it on one line.
void ExpectOneParagraph(const std::string& message) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.back(), '.') << message;
}

TEST(DescribeSetupRefusalTest, EpermSysctlTwoSaysDisabledForAllAndTheCommand) {
  SystemFacts facts = Plain();
  facts.io_uring_disabled = 2;
  const std::string m = DescribeSetupRefusal(EPERM, facts);
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is disabled on this host"), HasSubstr("EPERM"),
                       HasSubstr("kernel.io_uring_disabled is 2"),
                       HasSubstr("sysctl -w kernel.io_uring_disabled=0"),
                       Not(HasSubstr("seccomp"))));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EpermSysctlTwoWithAFilterNamesTheSysctlFirst) {
  SystemFacts facts = Filtered(1);
  facts.io_uring_disabled = 2;
  const std::string m = DescribeSetupRefusal(EPERM, facts);
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is disabled on this host"),
                       HasSubstr("sysctl -w kernel.io_uring_disabled=0"),
                       HasSubstr("also runs under 1 seccomp filter"),
                       HasSubstr("deploy/seccomp.json")));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EpermSysctlOneOutsideTheGroupSaysRestrictedAndHowToJoin) {
  SystemFacts facts = Plain();
  facts.io_uring_disabled = 1;
  facts.io_uring_group = -1;
  facts.uid = 65532;
  facts.gid = 65532;
  const std::string m = DescribeSetupRefusal(EPERM, facts);
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is restricted on this host"),
                       HasSubstr("kernel.io_uring_disabled is 1"),
                       HasSubstr("kernel.io_uring_group (-1, no group)"),
                       HasSubstr("uid 65532, gid 65532"),
                       HasSubstr("sysctl -w kernel.io_uring_group=GID"),
                       HasSubstr("sysctl -w kernel.io_uring_disabled=0"),
                       Not(HasSubstr("seccomp"))));
  ExpectOneParagraph(m);

  facts.io_uring_group = 4242;
  EXPECT_THAT(DescribeSetupRefusal(EPERM, facts), HasSubstr("kernel.io_uring_group (4242)"));
}

// kernel.io_uring_disabled = 1 lets the group's members and CAP_SYS_ADMIN
// through, so for them the sysctl is not what refused.
TEST(DescribeSetupRefusalTest, EpermSysctlOneInsideTheGroupLooksFurther) {
  SystemFacts facts = Filtered(1);
  facts.io_uring_disabled = 1;
  facts.io_uring_group = 4242;
  facts.in_io_uring_group = true;
  EXPECT_THAT(DescribeSetupRefusal(EPERM, facts),
              HasSubstr("io_uring is blocked by a seccomp filter"));

  facts.in_io_uring_group = false;
  facts.cap_sys_admin = true;
  EXPECT_THAT(DescribeSetupRefusal(EPERM, facts),
              HasSubstr("io_uring is blocked by a seccomp filter"));
}

TEST(DescribeSetupRefusalTest, EpermUnderAFilterWithSysctlZeroNamesSeccompAndTheProfile) {
  const std::string m = DescribeSetupRefusal(EPERM, Filtered(2));
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is blocked by a seccomp filter"), HasSubstr("EPERM"),
                       HasSubstr("runs under 2 seccomp filters"),
                       HasSubstr("sysctl kernel.io_uring_disabled (0) allows it"),
                       HasSubstr("--security-opt seccomp=deploy/seccomp.json"),
                       HasSubstr("type: Localhost"),
                       HasSubstr("io_uring_setup, io_uring_enter and io_uring_register")));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EpermUnderAFilterOnAKernelWithoutTheSysctl) {
  SystemFacts facts = Filtered(1);
  facts.io_uring_disabled = -1;
  const std::string m = DescribeSetupRefusal(EPERM, facts);
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is blocked by a seccomp filter"),
                       HasSubstr("runs under 1 seccomp filter,"),
                       HasSubstr("absent: kernels before 6.6 have none")));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EpermWithNothingVisibleSaysSoAndWhereToLook) {
  const std::string m = DescribeSetupRefusal(EPERM, Plain());
  EXPECT_THAT(m, AllOf(HasSubstr("refused by something this process cannot see"),
                       HasSubstr("EPERM"), HasSubstr("kernel.io_uring_disabled (0) allows it"),
                       HasSubstr("no seccomp filter is in place"),
                       HasSubstr("Linux security module"), HasSubstr("audit log")));
  ExpectOneParagraph(m);

  SystemFacts unknown;  // /proc unreadable: nothing known
  EXPECT_THAT(DescribeSetupRefusal(EPERM, unknown),
              HasSubstr("whether a seccomp filter is in place is unknown"));
}

TEST(DescribeSetupRefusalTest, EnosysWithoutAFilterIsAKernelWithoutIoUring) {
  const std::string m = DescribeSetupRefusal(ENOSYS, Plain());
  EXPECT_THAT(m, AllOf(HasSubstr("This kernel has no io_uring"), HasSubstr("ENOSYS"),
                       HasSubstr("CONFIG_IO_URING"), HasSubstr("Linux 5.1"),
                       Not(HasSubstr("deploy/seccomp.json"))));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EnosysUnderAFilterIsProbablyTheFilter) {
  const std::string m = DescribeSetupRefusal(ENOSYS, Filtered(1));
  EXPECT_THAT(m, AllOf(HasSubstr("io_uring is probably blocked by a seccomp filter"),
                       HasSubstr("ENOSYS"), HasSubstr("runs under 1 seccomp filter"),
                       HasSubstr("--security-opt seccomp=deploy/seccomp.json"),
                       HasSubstr("CONFIG_IO_URING")));
  ExpectOneParagraph(m);
}

TEST(DescribeSetupRefusalTest, EaccesIsASecurityModule) {
  const std::string m = DescribeSetupRefusal(EACCES, Plain());
  EXPECT_THAT(m, AllOf(HasSubstr("denied by a Linux security module"), HasSubstr("EACCES"),
                       HasSubstr("SELinux"), Not(HasSubstr("seccomp"))));
  ExpectOneParagraph(m);
  EXPECT_THAT(DescribeSetupRefusal(EACCES, Filtered(1)), HasSubstr("deploy/seccomp.json"));
}

TEST(DescribeSetupRefusalTest, OtherErrorsAreNotRefusals) {
  EXPECT_TRUE(IsSetupRefusal(EPERM));
  EXPECT_TRUE(IsSetupRefusal(EACCES));
  EXPECT_TRUE(IsSetupRefusal(ENOSYS));
  EXPECT_FALSE(IsSetupRefusal(EINVAL));
  EXPECT_FALSE(IsSetupRefusal(ENOMEM));
  EXPECT_EQ(DescribeSetupRefusal(EFAULT, Plain()), "io_uring_setup: Bad address");
}

// ------------------------------------------------------------ ReadSystemFacts

class FakeProc {
 public:
  FakeProc() : root_(std::string(std::getenv("TEST_TMPDIR")) + "/proc") {
    for (const char* dir : {"", "/sys", "/sys/kernel", "/self"}) {
      mkdir((root_ + dir).c_str(), 0755);
    }
  }
  void Write(const std::string& path, const std::string& text) {
    std::ofstream(root_ + "/" + path) << text;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(ReadSystemFactsTest, ReadsTheSysctlsAndTheStatusLines) {
  FakeProc proc;
  proc.Write("sys/kernel/io_uring_disabled", "1\n");
  proc.Write("sys/kernel/io_uring_group", "4242\n");
  proc.Write("self/status",
             "Name:\tserver\nUid:\t1000\t1001\t1001\t1001\nGid:\t100\t100\t100\t100\n"
             "Groups:\t27 4242 \nCapEff:\t0000000000200000\nNoNewPrivs:\t1\n"
             "Seccomp:\t2\nSeccomp_filters:\t3\n");
  const SystemFacts facts = ReadSystemFacts(proc.root());
  EXPECT_EQ(facts.io_uring_disabled, 1);
  EXPECT_EQ(facts.io_uring_group, 4242);
  EXPECT_TRUE(facts.in_io_uring_group);
  EXPECT_TRUE(facts.cap_sys_admin);
  EXPECT_EQ(facts.uid, 1001);
  EXPECT_EQ(facts.gid, 100);
  EXPECT_EQ(facts.seccomp_mode, 2);
  EXPECT_EQ(facts.seccomp_filters, 3);
}

TEST(ReadSystemFactsTest, TheFilesystemGidCountsAndOtherGroupsDoNot) {
  FakeProc proc;
  proc.Write("sys/kernel/io_uring_disabled", "1\n");
  proc.Write("sys/kernel/io_uring_group", "100\n");
  proc.Write("self/status", "Gid:\t5\t5\t5\t100\nGroups:\t\nCapEff:\t00000000a80425fb\n");
  SystemFacts facts = ReadSystemFacts(proc.root());
  EXPECT_TRUE(facts.in_io_uring_group);
  EXPECT_FALSE(facts.cap_sys_admin);  // Docker's default capability set has no CAP_SYS_ADMIN

  proc.Write("self/status", "Gid:\t100\t100\t100\t5\nGroups:\t7 8\n");
  facts = ReadSystemFacts(proc.root());
  EXPECT_FALSE(facts.in_io_uring_group);
}

TEST(ReadSystemFactsTest, MissingFilesLeaveUnknowns) {
  FakeProc proc;
  proc.Write("sys/kernel/io_uring_disabled", "");
  proc.Write("self/status", "Name:\told-kernel\nSeccomp:\t0\n");
  std::remove((proc.root() + "/sys/kernel/io_uring_group").c_str());
  const SystemFacts facts = ReadSystemFacts(proc.root());
  EXPECT_EQ(facts.io_uring_disabled, -1);
  EXPECT_EQ(facts.io_uring_group, -1);
  EXPECT_FALSE(facts.in_io_uring_group);
  EXPECT_EQ(facts.seccomp_mode, 0);
  EXPECT_EQ(facts.seccomp_filters, -1);

  const SystemFacts nothing = ReadSystemFacts(proc.root() + "/nowhere");
  EXPECT_EQ(nothing.io_uring_disabled, -1);
  EXPECT_EQ(nothing.seccomp_mode, -1);
  EXPECT_EQ(nothing.uid, -1);
}

// The real /proc of this test: whatever the host says, it is read.
TEST(ReadSystemFactsTest, TheRealProcIsReadable) {
  const SystemFacts facts = ReadSystemFacts();
  EXPECT_GE(facts.seccomp_mode, 0);
  EXPECT_GE(facts.uid, 0);
  EXPECT_GE(facts.gid, 0);
}

}  // namespace
}  // namespace uring_http::io
