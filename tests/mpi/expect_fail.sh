#!/bin/sh
# Runs the command and prints its exit status ("expect_fail: exit N"), for ctest tests whose
# command must fail: ctest's PASS_REGULAR_EXPRESSION then checks both the message and N != 0.
"$@" 2>&1
echo "expect_fail: exit $?"
