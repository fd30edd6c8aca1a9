# SPDX-License-Identifier: GPL-2.0-or-later
"""The opt-in on the tuner contract (irqtune.shared.tuner): ledger, verify
records, errors as values."""

import logging

from ...kernel.errors import IrqtuneError, UnsupportedError
from ...shared.options import parse_options
from ...shared.tuner import Check, Tuner
from .config import OPTIONS, OptInValues
from .optin import ServiceOptIn

log = logging.getLogger(__name__)


class OptInTuner(Tuner):
    """One ServiceOptIn, system-wide (no devices).

    The ledger holds {"written": [drop-in records]}: on disk before the
    first drop-in is written, so that a daemon killed meanwhile leaves the
    next one what to remove; a later daemon takes over what an earlier one
    wrote.  label starts every verify line ("busy_poll_optin <instance>").
    """

    # Drop-ins are meant to outlive a shutdown, as the bootloader plugin's
    # changes do: only a full rollback (a profile switch, TuneD stopped by
    # the administrator) removes them.
    full_rollback_only = True

    def __init__(self, optin, ledger=None, label="busy_poll_optin"):
        super().__init__(ledger)
        self.optin = optin
        self.label = label
        self.applied = False

    def apply(self, *devices):
        """Write the drop-ins; a refusal is logged once and kept for verify."""
        previous = self.ledger.load().get("written") if self.ledger is not None else None
        try:
            self.optin.apply(previous_state=previous, record=self._record)
        except UnsupportedError as err:
            self.unsupported["services"] = str(err)
            log.error("%s", err)
            return ""
        except IrqtuneError as err:
            self.rejected["services"] = err
            log.error("%s", err)
            self._keep(previous)        # nothing of this apply is left
            return ""
        self.applied = True
        self._keep(self.optin.export_state())
        return ", ".join(e.unit for e in self.optin.written) and \
            "opted in " + ", ".join(e.unit for e in self.optin.written)

    def _record(self, records):
        if self.ledger is not None:
            self.ledger.save({"written": records})

    def _keep(self, records):
        if self.ledger is None:
            return
        if records:
            self.ledger.update({"written": records})
        else:
            self.ledger.remove()

    def verify(self, device=None):
        """One Check per named service: its drop-in as written."""
        if self.unsupported:
            return []
        return [Check("%s: %s" % (self.label, self.optin.dropin_path(unit)), state,
                      "present", ok)
                for unit, ok, state in self.optin.verify()]

    def restore_all(self):
        """Remove the drop-ins this tuner wrote (or took over)."""
        if not self.applied:
            return
        try:
            self.optin.unapply()
        except IrqtuneError as err:
            log.error("%s", err)
        self.applied = False
        self._remove_ledger()


def build(options, env):
    """(OptInTuner or None, [OptionError]) from the busy_poll_optin plugin's
    options.  Every bad value is reported, and any opts no service in.
    The tuner's first apply takes over what an earlier daemon wrote (kill
    -9, or kept over a shutdown until /run was cleared)."""
    values, errors = OptInValues.from_options(options)
    checked, more = parse_options([o for o in OPTIONS if o.name in
                                   ("services", "restart", "library")], options)
    if errors or more:
        return None, errors + more
    optin = ServiceOptIn(checked.get("services", ()), values, library=checked.get("library"),
                         root=env.root, bus=env.bus, restart=checked.get("restart", False),
                         kfs=env.kfs)
    return OptInTuner(optin, ledger=env.ledger("busy_poll_optin-" + env.instance),
                      label="busy_poll_optin " + env.instance), []
