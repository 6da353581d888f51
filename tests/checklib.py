"""What the check scripts share (check_failures.py, check_report.py, check_allreduce_fit.py,
check_html.py): expect() collects what failed, finish() prints it and exits 1 if anything did.
"""
import sys

failures = []


def expect(cond, what, detail=""):
    """Records `what` (with the tail of `detail`, a process's output) when cond is false."""
    if not cond:
        failures.append(what + ("\n" + detail[-3000:] if detail else ""))
    return cond


def finish(name):
    """Prints every failure and the count, then exits: 1 if anything failed, else 0."""
    for f in failures:
        print("FAILED: " + f)
    print("%s: %s" % (name, "%d failed" % len(failures) if failures else "PASS"))
    sys.exit(1 if failures else 0)
