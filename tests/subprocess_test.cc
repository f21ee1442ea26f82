#include "support/subprocess.h"

#include <gtest/gtest.h>

namespace tensorgym {
namespace {

TEST(Subprocess, CollectsOutputAndExitStatus) {
  Expected<ProgramResult> r = run_program({"sh", "-c", "echo out; echo err >&2; exit 3"}, 30);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->exit_status, 3);
  EXPECT_FALSE(r->ok());
  EXPECT_NE(r->output.find("out\n"), std::string::npos);
  EXPECT_NE(r->output.find("err\n"), std::string::npos);
}

TEST(Subprocess, KillsAProgramPastItsDeadline) {
  Expected<ProgramResult> r = run_program({"sleep", "30"}, 0.2);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, 9);
}

TEST(Subprocess, AMissingProgramIsNotFound) {
  Expected<ProgramResult> r = run_program({"no-such-program-anywhere"}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no-such-program-anywhere"), std::string::npos);
}

TEST(Subprocess, OutputIsCappedNotLost) {
  Expected<ProgramResult> r = run_program({"sh", "-c", "head -c 100000 /dev/zero"}, 30, 1000);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->output.size(), 1000u);
}

}  // namespace
}  // namespace tensorgym
