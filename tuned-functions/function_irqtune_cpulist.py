# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD profile function ${f:irqtune_cpulist:OPTION:${variable}}.

Expands to the variable's value when it is a CPU list TuneD can expand
(irqtune.kernel.cpus.check_tuned_cpulist: TuneD's syntax, no CPU above 8191).
Otherwise it logs one ERROR naming OPTION, the value and what is
accepted, and stops the profile from loading, as TuneD's own assertion
functions do (InvalidProfileException; tuned-adm prints the same line).

realtime-virtual-host-irqtune runs isolated_cores through it before the
parents' cpulist functions see the value: those expand every range into a
Python list, and isolated_cores=0-4294967295 ended in a MemoryError over
D-Bus with nothing in the log naming the value.

See function_irqtune_default.py for where this file is installed.
"""

import inspect

import tuned.logs
from tuned.profiles.exceptions import InvalidProfileException
from tuned.profiles.functions import base

from irqtune.kernel.cpus import check_tuned_cpulist
from irqtune.kernel.errors import OptionError

log = tuned.logs.get()


class irqtune_cpulist(base.Function):
	"""The value when it is a CPU list TuneD can expand; else the profile
	does not load."""

	def __init__(self):
		args = (0, 2)     # OPTION and the value (a list has no colon)
		if "name" in inspect.signature(base.Function.__init__).parameters:
			args = ("irqtune_cpulist",) + args
		super().__init__(*args)

	def execute(self, args):
		if not super().execute(args):
			return None
		option, value = args[0], ":".join(args[1:])
		try:
			return check_tuned_cpulist(option, value)
		except OptionError as err:
			log.error("%s; the profile is not loaded" % err)
			raise InvalidProfileException(str(err)) from None
