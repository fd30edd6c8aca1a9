# SPDX-License-Identifier: GPL-2.0-or-later
"""Exceptions shared by the library."""

import os

from .names import shown


class IrqtuneError(Exception):
    """Base class of every error the library raises on purpose."""


class OptionError(IrqtuneError, ValueError):
    """A configured value is not acceptable.

    The message names the option, the value (escaped and cut: it may be a
    100 KB variable or hold a newline; irqtune.names.shown) and what is
    accepted, so the TuneD adapters can log it as it is.
    """

    def __init__(self, option, value, accepted):
        self.option = option
        self.value = value
        self.accepted = accepted
        super().__init__("%s: invalid value '%s' (accepted: %s)"
                         % (option, shown(value), accepted))


class UnsupportedError(IrqtuneError):
    """The running kernel or the device lacks a feature."""


class NetlinkRequestError(IrqtuneError):
    """The kernel refused a request; carries errno and the extended ack text.

    Defined here, not beside the pyroute2 code, so that callers can catch
    it without importing pyroute2.
    """

    def __init__(self, what, code, extack=None):
        self.code = code
        self.extack = extack
        detail = extack or os.strerror(code)
        super().__init__("%s: %s (errno %d)" % (what, detail, code))
