"""Where each way's wall time goes, in CPU seconds, for bench/run_benchmarks.py:
the user and system time of the processes the way ran (the rusage of its
reaped children: the client, bare_sgemm or a peer's Python) and of the server
meanwhile (/proc/PID/stat). On two cores a way's wall time is about its total
over two, so the table shows what full output adds to the GEMM's CPU: the
loopback's copies, as system time on both sides."""
import os
import resource
import statistics

TICKS = os.sysconf("SC_CLK_TCK")
FIGURES = ("user", "system", "server_user", "server_system")


def process_seconds(pid):
    """User and system seconds of process `pid` so far (fields 14 and 15 of /proc/PID/stat,
    counted after the command name, which may hold spaces)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def measure(run, server_pid):
    """Runs `run()`, which returns its figures as a dict, and adds "cpu" to them: its
    processes' and the server's (process `server_pid`) user and system seconds meanwhile."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = process_seconds(server_pid)
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_after = process_seconds(server_pid)
    result["cpu"] = {"user": after.ru_utime - before.ru_utime,
                     "system": after.ru_stime - before.ru_stime,
                     "server_user": server_after[0] - server_before[0],
                     "server_system": server_after[1] - server_before[1]}
    return result


def medians(runs):
    """Each figure's median over the runs of one way, and their total."""
    cpu = {k: statistics.median(run["cpu"][k] for run in runs) for k in FIGURES}
    cpu["total"] = statistics.median(sum(run["cpu"][k] for k in FIGURES) for run in runs)
    return cpu


def table(rows, ways):
    """The CPU table of the end-to-end rows, in the order of `ways`, against the bare sgemm's
    GEMM thread-seconds (its threads x its median seconds: its own process also pays for
    making its inputs and faulting in C, outside its timed GEMM)."""
    lines = ["CPU seconds (medians): the way's own processes and the server's, user and system; "
             "x bare: total over the bare GEMM's thread-seconds (threads x median seconds)",
             "%10s  %-14s %8s %8s %8s %8s %8s %7s" % ("M", "way", "user", "system", "srv user",
                                                     "srv sys", "total", "x bare")]
    for row in rows:
        bare = row["bare_sgemm"]
        gemm = bare["runs"][0]["threads"] * bare["median_seconds"]
        lines.append("%10d  %-14s %44.2f %7.2f" % (row["scenarios"], "bare GEMM", gemm, 1.0))
        for way in (w for w in ways if w in row and w != "bare_sgemm"):
            cpu = row[way]["cpu"]
            lines.append("%10d  %-14s %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f" % (
                row["scenarios"], way, cpu["user"], cpu["system"], cpu["server_user"],
                cpu["server_system"], cpu["total"], cpu["total"] / gemm))
    return lines
