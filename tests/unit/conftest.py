# SPDX-License-Identifier: GPL-2.0-or-later
import os

import pytest

from irqtune.services import epoll


@pytest.fixture
def inspect_own_epoll():
    """inspect(ep, *opened): this process's epoll instance ep as the doctor
    reads it (epoll.inspect_process on our own pid).  ep and what the test
    opened for it (objects with close(), or fd numbers) are closed
    afterwards; the test is skipped where the kernel cannot duplicate fds
    (pidfd_getfd, Linux 5.6)."""
    def inspect(ep, *opened):
        try:
            found = [i for i in epoll.inspect_process(os.getpid()).instances
                     if i.fd == ep.fileno()]
        except epoll.UnsupportedError as err:
            pytest.skip(str(err))
        finally:
            for f in (ep,) + opened:
                if isinstance(f, int):
                    os.close(f)
                else:
                    f.close()
        inst, = found
        return inst
    return inspect
