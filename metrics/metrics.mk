# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune-metrics: the PCP pmdaopenmetrics entry and the systemd timer that
# writes the node_exporter textfile (see irqtune(8), METRICS).
PCP_PMDAS_DIR   ?= /var/lib/pcp/pmdas
SYSTEMD_UNITDIR ?= /usr/lib/systemd/system

.PHONY: install-metrics uninstall-metrics

install-metrics:
	install -D -m 0755 metrics/irqtune.pcp.sh $(DESTDIR)$(PCP_PMDAS_DIR)/openmetrics/config.d/irqtune.sh
	install -D -m 0644 metrics/irqtune-metrics.service $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.service
	install -D -m 0644 metrics/irqtune-metrics.timer $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.timer

uninstall-metrics:
	rm -f $(DESTDIR)$(PCP_PMDAS_DIR)/openmetrics/config.d/irqtune.sh
	rm -f $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.service $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.timer
