# SPDX-License-Identifier: GPL-2.0-or-later
"""Run a program as another user under a pid chosen in advance - the pid
of a process that ended - as a user who forks until the pid comes round
gets it, but at once and every time: clone3(2) with set_tid (Linux 5.5;
the caller needs CAP_SYS_ADMIN over the pid namespace, root here).

Usage: python3 pidtake.py PID UID ARGV...
The program runs with pid PID (in this pid namespace, the host's for the
suites' daemons), uid and gid UID, no supplementary groups; this process
waits for it and exits with its status (3 when the pid is not free).
Test tooling only: it takes no input but its arguments.
"""

import ctypes
import os
import signal
import struct
import sys

SYS_CLONE3 = 435            # the same number on every architecture (asm-generic)
# struct clone_args up to set_tid_size (CLONE_ARGS_SIZE_VER1): flags, pidfd,
# child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
# set_tid_size - all __aligned_u64
_ARGS = struct.Struct("=10Q")


def main(pid, uid, argv):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    tids = (ctypes.c_int * 1)(pid)
    args = ctypes.create_string_buffer(_ARGS.pack(0, 0, 0, 0, signal.SIGCHLD, 0, 0, 0,
                                                  ctypes.addressof(tids), 1), _ARGS.size)
    child = libc.syscall(ctypes.c_long(SYS_CLONE3), args, ctypes.c_size_t(_ARGS.size))
    if child == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    if child < 0:
        print("clone3 with pid %d: %s" % (pid, os.strerror(ctypes.get_errno())),
              file=sys.stderr)
        return 3
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]))
