# SPDX-License-Identifier: GPL-2.0-or-later
"""What the irqtune TuneD plugins write into TuneD's log: the library's
records (logger "irqtune") and the shared base's lines under the name of
the plugin whose entry point runs, and a tuner's Checks in TuneD's verify
format (tuned.consts STR_VERIFY_PROFILE_*).  Every line goes in escaped and
cut (irqtune.kernel.names.shown): device and unit names, values from profiles and
files end up in these lines, and a newline or an escape sequence in one
must not forge a line of its own or act on the terminal that shows the log.

Installed beside the plugins in TuneD's plugin package, like
irqtune_common.py (which uses it); not a plugin (no "plugin_" prefix).
"""

import contextlib
import logging
import threading

import tuned.consts as consts
import tuned.logs

from irqtune.kernel.names import LINE_MAX, shown

_common_log = tuned.logs.get()
_calling = threading.local()


def _one_line(text):
	return shown(text, LINE_MAX)


class _PluginLog:
	"""TuneD's logger of the plugin whose entry point this thread runs (set
	by the guard, see Guarded), else this module's: lines logged by the
	shared base and by the library carry the plugin's name in TuneD's log.
	Its lines are formatted by the caller and go in as one line each."""

	def _logger(self):
		return getattr(_calling, "log", None) or _common_log

	def log(self, level, text):
		self._logger().log(level, _one_line(text))

	def debug(self, text):
		self._logger().debug(_one_line(text))

	def info(self, text):
		self._logger().info(_one_line(text))

	def warning(self, text):
		self._logger().warning(_one_line(text))

	def error(self, text):
		self._logger().error(_one_line(text))

	def __getattr__(self, name):
		return getattr(self._logger(), name)


log = _PluginLog()


def _plugin_logger(plugin):
	module = type(plugin).__module__
	if module.startswith("tuned."):
		return logging.getLogger(module)
	return _common_log


class _ToTunedLog(logging.Handler):
	"""Carries the library's records (logger "irqtune") into TuneD's log."""

	def emit(self, record):
		log.log(record.levelno, record.getMessage())


def forward_library_log():
	lib = logging.getLogger("irqtune")
	if not any(isinstance(h, _ToTunedLog) for h in lib.handlers):
		lib.addHandler(_ToTunedLog())
		lib.setLevel(logging.DEBUG)
		lib.propagate = False


@contextlib.contextmanager
def lines_of(plugin):
	"""Within: log (and the library's records) carry plugin's name in
	TuneD's log.  Nests; the guard of every entry point uses it."""
	outer = getattr(_calling, "log", None)
	_calling.log = _plugin_logger(plugin)
	try:
		yield
	finally:
		_calling.log = outer


def verify_failed(text):
	log.error(consts.STR_VERIFY_PROFILE_FAIL % text)
	return False


def verify_checks(device, checks):
	"""Log a tuner's [Check] in TuneD's verify format; True when all passed.

	A Check's own device (an IRQ, say) wins over the device it is verified
	for; without either the line has TuneD's device-less format."""
	ok = True
	for check in checks:
		where = getattr(check, "device", None) or device
		if check.ok:
			if where is None:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_OK % (check.what, check.current))
			else:
				log.info(consts.STR_VERIFY_PROFILE_DEVICE_VALUE_OK % (where, check.what, check.current))
			continue
		ok = False
		if where is None:
			log.error(consts.STR_VERIFY_PROFILE_VALUE_FAIL % (check.what, check.current, check.expected))
		else:
			log.error(consts.STR_VERIFY_PROFILE_DEVICE_VALUE_FAIL
				% (where, check.what, check.current, check.expected))
		if check.note:
			verify_failed("%s: %s: %s" % (where or "-", check.what, check.note))
	return ok
