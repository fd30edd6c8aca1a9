# SPDX-License-Identifier: GPL-2.0-or-later
"""Exceptions shared by the library."""

import errno
import os
from dataclasses import dataclass

from .names import shown


class IrqtuneError(Exception):
    """Base class of every error the library raises on purpose."""


class OptionError(IrqtuneError, ValueError):
    """A configured value is not acceptable.

    The message names the option, the value (escaped and cut: it may be a
    100 KB variable or hold a newline; irqtune.kernel.names.shown) and what is
    accepted, so the TuneD adapters can log it as it is.
    """

    def __init__(self, option, value, accepted):
        self.option = option
        self.value = value
        self.accepted = accepted
        super().__init__("%s: invalid value %s (accepted: %s)"
                         % (option, shown(value, quote="always"), accepted))


class UnsupportedError(IrqtuneError):
    """The running kernel or the device lacks a feature."""


@dataclass(frozen=True)
class Extack:
    """The kernel's extended ack of a refused netlink request (enum
    nlmsgerr_attrs, include/uapi/linux/netlink.h): its message, the
    attribute it found missing (the name where the request's message
    declares it, else the type number) and the offset in the request of
    the nest it was missing from, and the offset of the attribute it
    refused, with that attribute's name where the request declares it."""

    message: str = None
    missing: object = None
    missing_nest: int = None
    offset: int = None
    refused: str = None

    def __bool__(self):
        return any(v is not None for v in (self.message, self.missing, self.offset))

    def __str__(self):
        parts = [self.message] if self.message else []
        if self.missing is not None:
            parts.append("attribute %s missing%s" % (self.missing, "" if self.missing_nest is None
                         else " in the nest at offset %d" % self.missing_nest))
        if self.offset is not None:
            parts.append("in attribute %s" % (self.refused or "at offset %d" % self.offset))
        return ", ".join(parts)


def errno_error(code):
    """The OSError (PermissionError, ...) for an errno ctypes.get_errno gave."""
    return OSError(code, os.strerror(code))


class NetlinkRequestError(IrqtuneError, OSError):
    """The kernel refused a request: an OSError (errno, strerror) with what
    was asked and the kernel's Extack.

    Defined here, not beside the pyroute2 code, so that callers can catch
    it without importing pyroute2.
    """

    def __init__(self, what, code, extack=None):
        super().__init__(code, os.strerror(code))
        self.what = what
        self.extack = extack or Extack()

    def __str__(self):
        return "%s: %s (%s)" % (self.what, self.extack or self.strerror, errno_name(self.errno))


# What EPERM and EACCES mean to a netlink or ethtool request.
NOT_PERMITTED = dict.fromkeys((errno.EPERM, errno.EACCES),
                              "not permitted (%s): needs CAP_NET_ADMIN")


def errno_name(code):
    """The errno's symbol (EACCES), as the kernel's headers and tools spell it."""
    # errno 95 is ENOTSUP to Python, EOPNOTSUPP to the kernel and its tools
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, str(code))


def describe_os_error(err, meanings=None, with_path=True):
    """An OSError in the administrator's words: what its errno means where
    it happened (meanings: {errno: text}, "%s" taking the errno's name and
    the kernel's extack), else the system's text and the errno's name,
    after the file's path unless the caller names it (with_path=False);
    the one place errno values become words.  Other errors (ValueError,
    the library's own) say what happened themselves."""
    if not isinstance(err, OSError):
        return str(err)
    name = errno_name(err.errno)
    extack = err.extack if isinstance(err, NetlinkRequestError) else None
    meaning = (meanings or {}).get(err.errno)
    if meaning is not None:
        return meaning.replace("%s", name + (": %s" % extack if extack else ""))
    if isinstance(err, IrqtuneError) or not err.errno:
        return str(err)
    path = "%s: " % err.filename if with_path and err.filename else ""
    return "%s%s (%s)" % (path, err.strerror, name)
