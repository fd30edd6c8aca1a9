# SPDX-License-Identifier: GPL-2.0-or-later
from tuned.plugins import irqtune_common as common

from irqtune.frontends.plugins import PLUGINS


class GsimPlugin(common.InstancePlugin):
	r"""
	`gsim`::

	Configures Global Software Interrupt Moderation (GSIM), a kernel
	feature that keeps the platform's total interrupt rate, each CPU's
	interrupt rate and each CPU's share of time in hard interrupt context
	under targets by delaying MSI/MSI-X interrupts adaptively. GSIM is not
	in mainline Linux: it needs a kernel with the GSIM patches (the irqtune
	sources carry them in `kernel-patches/gsim`). All three interface
	shapes that were posted are recognised: `/proc/irq/sw_moderation/`,
	the `/proc/irq/soft_moderation/` directory and the older
	`/proc/irq/soft_moderation` file. On a kernel without GSIM one warning
	names the missing interface (on a PREEMPT_RT kernel: that GSIM refuses
	PREEMPT_RT), the rest of the profile applies, and verification reports
	the GSIM options as unsupported.
	+
	[option]`delay_us` is the longest moderation delay (0 to 500
	microseconds; 0 turns moderation off). [option]`target_intr_rate` is
	the global interrupt rate target in interrupts per second (0 to
	50000000, 0 = none; kernels that call it `target_irq_rate` are
	handled). [option]`hardirq_percent` is the per-CPU target for time in
	hard interrupt context (0 to 100, 0 = none; needs
	CONFIG_IRQ_TIME_ACCOUNTING). [option]`update_ms` is the control loop
	period (1 to 100 ms). With both targets 0 the delay is fixed. An empty
	value leaves the setting alone. Values are checked against these
	ranges before anything is written.
	+
	[option]`irqs` chooses the interrupts GSIM may moderate, as selectors
	separated by `;`: `nic:` followed by NIC names (commas between them,
	shell wildcards allowed) selects the queue interrupts of those NICs;
	`name:` followed by a regular expression selects interrupts whose name
	in `/proc/interrupts` matches it; `all` selects every interrupt GSIM
	can moderate (MSI/MSI-X, edge). Empty leaves every per-interrupt switch
	alone. Interrupts that appear later (a NIC added, a channel count
	changed) or whose switch the kernel reset (a device probed again) are
	moderated too: the plugin looks again on every link change and every
	few seconds.
	+
	[option]`variables_file` names a file of `gsim_<option>=value` lines
	(for example `gsim_delay_us=200`) whose values replace the options
	above; the `gsim` overlay profile uses
	`/etc/tuned/gsim-variables.conf`. A missing file changes nothing.
	+
	Every value and per-interrupt switch changed is saved (also in
	`/run/irqtune`, so that a restarted daemon still restores it) and put
	back when the profile is unapplied.
	+
	.Moderate the queues of all NICs and of NVMe devices
	====
	----
	[gsim]
	delay_us=100
	target_intr_rate=1000000
	hardirq_percent=70
	irqs=nic:*; name:^nvme\d+q\d+
	----
	====
	"""

	_feature = PLUGINS["gsim"]
