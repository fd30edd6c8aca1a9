# SPDX-License-Identifier: GPL-2.0-or-later
"""Variables files of overlay profiles.

TuneD merges the [variables] sections of stacked profiles into one, so an
overlay's "include=" would replace the base profile's own variables file.
An overlay's plugin therefore names its file in a variables_file option
(the gsim and zerocopy-rx-host overlays) and its values are read here:
lines of <prefix><option>=value, '#' comments, blank lines.
"""

import logging

from ..kernel.errors import describe_os_error

log = logging.getLogger(__name__)


def overlaid(options, declared, prefix, expand=str.strip):
    """options ({name: text}) with the lines of the file its variables_file
    option names laid over them; declared: the options a line may set."""
    options = dict(options)
    options.update(read_overlay_file(options.pop("variables_file", None), prefix,
                                     {o.name for o in declared} - {"variables_file"}, expand))
    return options


def read_overlay_file(path, prefix, options, expand=str.strip):
    """{option: value} of path's <prefix><option>=value lines.

    options: the option names a line may set; expand: what a value goes
    through (the plugins expand profile variables).  A missing file gives
    {}; every line that is not an option is logged and skipped, so one
    typo costs that line only.
    """
    if not path:
        return {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        log.debug("no %s, using the profile's values", path)
        return {}
    except OSError as err:
        log.error("cannot read %s: %s; using the profile's values", path,
                  describe_os_error(err, with_path=False))
        return {}
    found = {}
    names = set(options)
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        option = key[len(prefix):] if key.startswith(prefix) else None
        if not sep or option not in names:
            log.error("%s:%d: ignored, not %s<option>=value with option one of %s"
                      % (path, number, prefix, ", ".join(sorted(names))))
            continue
        found[option] = expand(value.strip())
    return found
