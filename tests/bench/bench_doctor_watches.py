# SPDX-License-Identifier: GPL-2.0-or-later
"""What `irqtune doctor --pid` costs against a target with many epoll
watches (issue 47 item 5): its maximum RSS and elapsed time.

The target is a small C program run as `nobody` (setpriv), as another
local user would run it: INSTANCES epoll instances, each watching all of
SOCKETS UDP sockets (INSTANCES x SOCKETS watches; 500 x 2000 = 1M by
default, within this host's fs.epoll.max_user_watches - per user, about
4 % of low memory - and RLIMIT_NOFILE, which the script checks and does
not change).  Each tree given is run as
`/usr/bin/time -v python3 -m irqtune doctor --pid PID --seconds 1` with
PYTHONPATH pointing at it, ROUNDS times; the target stays the same.

Run as root:
    python3 tests/bench/bench_doctor_watches.py [--instances N] [--sockets N]
        [--rounds N] TREE [TREE...]
e.g. TREE = /work/main (unchanged) and . (this checkout).
"""

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

TARGET = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int instances = atoi(argv[1]), sockets = atoi(argv[2]);
	int *fds = calloc(sockets, sizeof(int));
	for (int s = 0; s < sockets; s++)
		if ((fds[s] = socket(AF_INET, SOCK_DGRAM, 0)) < 0) { perror("socket"); return 1; }
	for (int i = 0; i < instances; i++) {
		int ep = epoll_create1(0);
		if (ep < 0) { perror("epoll_create1"); return 1; }
		for (int s = 0; s < sockets; s++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[s] };
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[s], &ev)) { perror("epoll_ctl"); return 1; }
		}
	}
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
"""


def start_target(workdir, instances, sockets):
    """The target process, running as nobody, ready."""
    source, binary = os.path.join(workdir, "target.c"), os.path.join(workdir, "target")
    with open(source, "w") as f:
        f.write(TARGET)
    subprocess.run(["cc", "-O2", "-o", binary, source], check=True)
    os.chmod(workdir, 0o755)
    os.chmod(binary, 0o755)
    target = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                               binary, str(instances), str(sockets)],
                              stdout=subprocess.PIPE, text=True, cwd="/")
    if target.stdout.readline().strip() != "ready":
        target.kill()
        raise SystemExit("the target did not start (fs.epoll.max_user_watches? RLIMIT_NOFILE?)")
    return target


def run_doctor(tree, pid):
    """(max RSS in KiB, elapsed seconds, the doctor's exit status, [its line
    on what the bounds left out, if any, and its verdict])."""
    result = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "irqtune", "doctor",
                             "--pid", str(pid), "--seconds", "1"],
                            cwd=tree, env=dict(os.environ, PYTHONPATH=os.path.abspath(tree)),
                            capture_output=True, text=True)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)",
                      result.stderr)
    hours, minutes, seconds = clock.groups()
    elapsed = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    status = int(re.search(r"Exit status: (\d+)", result.stderr).group(1))
    lines = [l for l in result.stdout.splitlines() if l.strip()]
    said = [l for l in lines if "not inspected" in l or "bound" in l]
    return rss, elapsed, status, (said + lines[-1:]) if lines else [result.stderr.strip()[-200:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=500)
    parser.add_argument("--sockets", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("trees", nargs="+")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the doctor reads another user's process")
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.instances + args.sockets + 16:
        raise SystemExit("RLIMIT_NOFILE %d is below the target's %d fds"
                         % (soft, args.instances + args.sockets + 16))
    watches = args.instances * args.sockets
    with open("/proc/sys/fs/epoll/max_user_watches") as f:
        if int(f.read()) < watches:
            raise SystemExit("fs.epoll.max_user_watches is below %d" % watches)
    workdir = tempfile.mkdtemp(prefix="irqtune-bench-watches-")
    target = None
    try:
        target = start_target(workdir, args.instances, args.sockets)
        print("target pid %d (nobody): %d epoll instances x %d sockets = %d watches"
              % (target.pid, args.instances, args.sockets, args.instances * args.sockets))
        for tree in args.trees:
            for _ in range(args.rounds):
                rss, elapsed, status, said = run_doctor(tree, target.pid)
                print("%-30s max RSS %7.1f MiB  elapsed %7.1f s  exit %d" % (tree, rss / 1024,
                                                                               elapsed, status))
                for line in said:
                    print("    " + line[:300])
    finally:
        if target is not None:
            target.kill()
            target.wait()
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
