# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD profile function ${f:irqtune_default:DEFAULT:${variable}}.

Expands to the variable's value, or to DEFAULT when no variable of that
name is defined (TuneD leaves an undefined ${variable} as it is).  A
colon in DEFAULT is written \\: (TuneD splits function arguments at
colons); the value may hold colons.

Why a function: a profile whose parents have [variables] of their own
(realtime-virtual-host-irqtune) cannot put plain defaults before its
include= of the variables file.  TuneD merges the [variables] sections of
a profile and its parents into one, and the include keeps the position of
the parents' first include, so a default in the child would come after
the file and override it.  Written as name=${f:irqtune_default:...:${name}}
after the include, the line keeps what the file set and fills in what an
older file lacks.

Installed into TuneD's package (tuned/profiles/functions), where TuneD
looks for profile functions; the signature of the base class differs
between TuneD 2.20 (name, nargs_max, nargs_min) and 2.22+ (nargs_max,
nargs_min).
"""

import inspect
import re

from tuned.profiles.functions import base

_UNDEFINED = re.compile(r"^\$\{\w+\}$")


class irqtune_default(base.Function):
	"""The variable's value, or DEFAULT when the variable is not defined."""

	def __init__(self):
		args = (0, 2)     # DEFAULT and the value (which may hold colons)
		if "name" in inspect.signature(base.Function.__init__).parameters:
			args = ("irqtune_default",) + args
		super().__init__(*args)

	def execute(self, args):
		if not super().execute(args):
			return None
		default, value = args[0], ":".join(args[1:])
		return default if _UNDEFINED.match(value.strip()) else value
