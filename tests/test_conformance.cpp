// The generic conformance test: each implementation against the naive reference on every
// shape of every set and on the edge cases (see conformance.h). One problem (inputs and
// reference) is shared by the implementations of a line, which run consecutively.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "tests/conformance.h"

namespace pb::test {
namespace {

class Conformance : public ::testing::TestWithParam<ConfCase> {};

Problem& shared_problem(const ConfCase& c) {
  static std::string key;
  static std::unique_ptr<Problem> p;
  std::string k = c.prim + "|" + c.desc + "|" + dir_str(c.dir);
  if (k != key) {
    p.reset();
    p = find_primitive(c.prim).make(c.desc, c.dir, 1);
    key = k;
  }
  return *p;
}

TEST_P(Conformance, MatchesReference) {
  const ConfCase& c = GetParam();
  if (!c.same_as.empty()) GTEST_SKIP() << "the same problem as " << c.same_as << ", checked there";
  Problem& p = shared_problem(c);
  std::string why;
  std::unique_ptr<Runner> r = p.runner(c.impl, &why);
  if (!r) GTEST_SKIP() << c.impl << ": " << why;
  Measured m;
  try {
    m = measure(p, *r, 0, true, INFINITY);
  } catch (const Unsupported& e) {
    GTEST_SKIP() << c.impl << ": " << e.what();
  }
  SCOPED_TRACE(c.prim + " " + p.desc_str() + " " + dir_str(c.dir) + " " + c.impl +
               (c.tag.empty() ? "" : " (" + c.tag + " from " + c.text + ")"));
  EXPECT_TRUE(m.check.pass) << m.check.summary();
  EXPECT_FALSE(m.check.mistrusted)
      << "reference mostly zeros: the case proves little. " << m.check.summary();
  EXPECT_EQ(m.check.checked, [&] {
    int64_t n = 0;
    for (const auto& t : r->result()) n += t.size();
    return n;
  }()) << "every output element must be compared";
}

INSTANTIATE_TEST_SUITE_P(All, Conformance, ::testing::ValuesIn(conformance_cases()),
                         [](const ::testing::TestParamInfo<ConfCase>& i) {
                           return case_name(i.param);
                         });

}  // namespace
}  // namespace pb::test
