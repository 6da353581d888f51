// The data-parallel watchdog (see watchdog.h): a thread that checks the armed waits every 100 ms,
// and a SIGTERM handler that says what the rank was doing when the MPI runtime stopped it.
#include "kernels/net/watchdog.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "kernels/core/error.h"

namespace pb::net {

namespace {

constexpr int kSlots = 8;
constexpr size_t kText = 240;

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<double> deadline{0};  // steady seconds; 0: not armed
  double armed_at = 0, expected = 0;
  char what[kText] = {};
};

Slot g_slots[kSlots];
std::atomic<bool> g_started{false};
std::atomic<bool> g_quiet{false};  // watchdog_stop(): the process reports its own end
double g_limit = kDefaultWatchdogSeconds;
char g_who[kText] = "primbench";
// The main thread's phase, double-buffered so that the signal handler reads a whole string.
char g_phase[2][kText] = {{}, {}};
std::atomic<int> g_phase_at{0};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Appends s to buf (size kText * 3) without the C library's formatting: for the signal handler.
void append(char* buf, size_t cap, const char* s) {
  size_t n = std::strlen(buf), k = std::strlen(s);
  if (n + k >= cap) k = cap - 1 - n;
  std::memcpy(buf + n, s, k);
  buf[n + k] = '\0';
}

void on_sigterm(int) {
  if (g_quiet.load()) _exit(128 + SIGTERM);
  char line[3 * kText] = {};
  append(line, sizeof line, g_who);
  append(line, sizeof line, ": stopped by SIGTERM during ");
  const char* phase = g_phase[g_phase_at.load()];
  append(line, sizeof line, *phase ? phase : "its start");
  bool first = true;
  for (const Slot& s : g_slots)  // what its threads were waiting for
    if (s.deadline.load() > 0) {
      append(line, sizeof line, first ? " (waiting for: " : "; ");
      append(line, sizeof line, s.what);
      first = false;
    }
  if (!first) append(line, sizeof line, ")");
  append(line, sizeof line,
         ": mpirun ends every rank when a rank or a host fails (its message says which)\n");
  ssize_t ignored = write(STDERR_FILENO, line, std::strlen(line));
  (void)ignored;
  // Stay a moment before exiting, so that Open MPI's daemon can forward the line from its pipe
  // even if it sees this process exit first; it sends SIGKILL only after
  // odls_base_sigkill_timeout (1 s or more). (This line went missing in CI runs of
  // mpi.cluster.data_parallel_fault_inject; in runs here with the same output the rank had died
  // of SIGPIPE before any SIGTERM came: world.cpp now ignores SIGPIPE.)
  struct timespec linger = {0, 300 * 1000 * 1000};
  nanosleep(&linger, nullptr);  // async-signal-safe
  _exit(128 + SIGTERM);
}

void watch() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double t = now_s();
    for (Slot& s : g_slots) {
      const double d = s.deadline.load(std::memory_order_acquire);
      if (d <= 0 || t < d || g_quiet.load()) continue;
      std::fprintf(stderr,
                   "%s: watchdog: %s got no answer from the other ranks for %.0f s (limit %.0f s "
                   "beyond the %.1f s it may take; --dp-timeout, PRIMBENCH_DP_TIMEOUT): a rank "
                   "died, hangs, or a link is down\n",
                   g_who, s.what, t - s.armed_at, g_limit, s.expected);
      std::fflush(stderr);
      _exit(4);
    }
  }
}

}  // namespace

double watchdog_seconds_from_env(double fallback) {
  const char* e = std::getenv("PRIMBENCH_DP_TIMEOUT");
  if (!e || !*e) return fallback;
  char* end = nullptr;
  const double v = std::strtod(e, &end);
  if (*end || !std::isfinite(v) || !(v > 0))
    throw InputError("PRIMBENCH_DP_TIMEOUT",
                     "needs a positive number of seconds, got '" + std::string(e) + "'");
  return v;
}

void watchdog_start(double limit_s, const std::string& who) {
  g_limit = limit_s;
  std::snprintf(g_who, sizeof g_who, "%s", who.c_str());
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    std::thread(watch).detach();
  });
  g_started = true;
}

void watchdog_phase(const std::string& what) {
  const int next = 1 - g_phase_at.load();
  std::snprintf(g_phase[next], kText, "%s", what.c_str());
  g_phase_at.store(next);
}

void watchdog_stop() {
  g_quiet = true;
}

WatchdogWait::WatchdogWait(const std::string& what, double expected_s) {
  if (!g_started) return;
  for (int i = 0; i < kSlots; ++i) {
    bool free = false;
    if (g_slots[i].used.compare_exchange_strong(free, true)) {
      slot_ = i;
      break;
    }
  }
  if (slot_ < 0) throw RuntimeError("watchdog: more than 8 waits at once");
  Slot& s = g_slots[slot_];
  std::snprintf(s.what, sizeof s.what, "%s", what.c_str());
  s.armed_at = now_s();
  s.expected = expected_s;
  s.deadline.store(s.armed_at + expected_s + g_limit, std::memory_order_release);
}

WatchdogWait::~WatchdogWait() {
  if (slot_ < 0) return;
  g_slots[slot_].deadline.store(0);
  g_slots[slot_].used.store(false);
}

}  // namespace pb::net
