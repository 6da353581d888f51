// The data-parallel watchdog: a rank waiting on the others (a collective, a bucket's all-reduce)
// for longer than a limit ends itself with one line on stderr instead of hanging, and a rank that
// the MPI runtime stops (SIGTERM, when another rank failed) says what it was doing.
#pragma once

#include <string>

namespace pb::net {

// The default limit, seconds: how long a wait may last beyond what it is expected to take.
constexpr double kDefaultWatchdogSeconds = 60;

// The limit from PRIMBENCH_DP_TIMEOUT when set (seconds, > 0), else `fallback`; InputError
// naming the variable on a bad value.
double watchdog_seconds_from_env(double fallback);

// Installs the SIGTERM handler and sets the limit (call once per process, before any Wait);
// `who` prefixes every line ("primbench: rank 1 of 2 (pbh1)").
void watchdog_start(double limit_s, const std::string& who);
// What the main thread is doing, for the SIGTERM line ("step 3: backward").
void watchdog_phase(const std::string& what);
// The run is over (finished, or ending with its own error message): no more watchdog lines, and
// a SIGTERM from then on ends the process without one.
void watchdog_stop();

// A wait on other ranks, armed while this lives: when it lasts more than the limit plus
// `expected_s` (what this wait may legitimately take: a slower rank's share of a step, its plan),
// the process prints "<who>: watchdog: <what> got no answer from the other ranks for N s ..."
// and ends with status 4. Several threads may hold waits at once. Without watchdog_start, it
// does nothing.
class WatchdogWait {
 public:
  WatchdogWait(const std::string& what, double expected_s);
  ~WatchdogWait();
  WatchdogWait(const WatchdogWait&) = delete;
  WatchdogWait& operator=(const WatchdogWait&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace pb::net
