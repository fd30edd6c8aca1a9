# SPDX-License-Identifier: GPL-2.0-or-later
"""Opt systemd services in to epoll busy polling (and IRQ suspension).

IRQ suspension only engages for epoll contexts with ``prefer_busy_poll`` set
(``EPIOCSPARAMS``).  Stock servers never set it; ``libirqtune-busypoll.so``
does it for them when preloaded.  This module writes, for each named
service, a systemd drop-in

    /etc/systemd/system/<unit>.d/50-irqtune-busypoll.conf

that sets ``LD_PRELOAD`` and the library's ``IRQTUNE_*`` variables, has
systemd reload (daemon-reload, asked over D-Bus like every call to systemd:
nothing forks in TuneD's daemon), and removes exactly what it added on
unapply.

Rules it keeps:

- Nothing half-done: without a running systemd it raises
  :class:`UnsupportedError` before touching anything; when writing a drop-in
  or the reload fails, the drop-ins written so far are removed again.
- It never removes or overwrites a file it did not write (dropins.py).
- Services are not restarted unless ``restart=True``: the preload reaches a
  process only when it starts, so the running services that need a restart
  are logged (and returned).  With ``restart=True`` it try-restarts
  those, on apply and on unapply, waiting a few seconds for the jobs.

Services that already set ``LD_PRELOAD``: the drop-in's ``Environment=``
would replace the unit's value, dropping the service's own preload.  When
the unit's configured environment (its Environment property) holds
``LD_PRELOAD``, the drop-in sets it to that value with the library appended
and logs that it did so; the value is a snapshot taken at apply time.
``EnvironmentFile=`` settings override ``Environment=`` in systemd: a service
that sets ``LD_PRELOAD`` in an environment file keeps its own value and is
not opted in (verify reports the drop-in, not the process; the per-process
check is :meth:`ServiceOptIn.preload_status`).

Not reached through the preload: statically linked programs and runtimes
that issue epoll system calls themselves (Go).
"""

from .config import (DEFAULT_USECS, LIBRARY_NAME, OPTIONS, OptInValues,  # noqa: F401
                     find_library, parse_bool, parse_services)
from .dropins import DROPIN_NAME, MARKER, dropin_content, forget_claims  # noqa: F401
from .optin import ServiceOptIn  # noqa: F401
from .tuner import OptInTuner, build  # noqa: F401
