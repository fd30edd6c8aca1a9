# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune-metrics: the PCP pmdaopenmetrics entry and the systemd timer that
# writes the node_exporter textfile (see irqtune(8), METRICS).  Both run
# `irqtune metrics` as the unprivileged user irqtune-metrics (sysusers.d),
# which writes its own directory (tmpfiles.d); node_exporter's textfile
# directory gets a link to the file.  That directory differs by
# distribution: Debian's node_exporter reads /var/lib/prometheus/node-exporter,
# the RPM packagings of node_exporter this project follows
# /var/lib/node_exporter/textfile_collector.
PCP_PMDAS_DIR   ?= /var/lib/pcp/pmdas
SYSTEMD_UNITDIR ?= /usr/lib/systemd/system
SYSUSERS_DIR    ?= /usr/lib/sysusers.d
TMPFILES_DIR    ?= /usr/lib/tmpfiles.d
METRICS_TEXTFILE_DIR ?= $(if $(wildcard /etc/debian_version),/var/lib/prometheus/node-exporter,/var/lib/node_exporter/textfile_collector)
METRICS_FILE    := /var/lib/irqtune-metrics/irqtune.prom

.PHONY: install-metrics uninstall-metrics

# The link is installed like any packaged file (the RPM lists it), not made
# by tmpfiles.d: on Debian /var/lib/prometheus belongs to the prometheus
# user, and systemd-tmpfiles rightly refuses to create anything below it.
# Installed into this system (no DESTDIR): the user and its directory are
# made now, as the package's %post and the next boot would.
install-metrics:
	install -D -m 0755 metrics/irqtune.pcp.sh $(DESTDIR)$(PCP_PMDAS_DIR)/openmetrics/config.d/irqtune.sh
	install -D -m 0644 metrics/irqtune-metrics.service $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.service
	install -D -m 0644 metrics/irqtune-metrics.timer $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.timer
	install -D -m 0644 metrics/irqtune-metrics.sysusers $(DESTDIR)$(SYSUSERS_DIR)/irqtune-metrics.conf
	install -D -m 0644 metrics/irqtune-metrics.tmpfiles $(DESTDIR)$(TMPFILES_DIR)/irqtune-metrics.conf
	install -d $(DESTDIR)$(METRICS_TEXTFILE_DIR)
	ln -sfn $(METRICS_FILE) $(DESTDIR)$(METRICS_TEXTFILE_DIR)/irqtune.prom
	@if [ -z "$(DESTDIR)" ]; then \
		echo "systemd-sysusers $(SYSUSERS_DIR)/irqtune-metrics.conf"; \
		systemd-sysusers $(SYSUSERS_DIR)/irqtune-metrics.conf && \
		echo "systemd-tmpfiles --create $(TMPFILES_DIR)/irqtune-metrics.conf" && \
		systemd-tmpfiles --create $(TMPFILES_DIR)/irqtune-metrics.conf; fi

# The user stays (files it wrote may remain, as with any system user); the
# link in node_exporter's directory goes if it is ours.
uninstall-metrics:
	rm -f $(DESTDIR)$(PCP_PMDAS_DIR)/openmetrics/config.d/irqtune.sh
	rm -f $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.service $(DESTDIR)$(SYSTEMD_UNITDIR)/irqtune-metrics.timer
	rm -f $(DESTDIR)$(SYSUSERS_DIR)/irqtune-metrics.conf $(DESTDIR)$(TMPFILES_DIR)/irqtune-metrics.conf
	if [ "$$(readlink $(DESTDIR)$(METRICS_TEXTFILE_DIR)/irqtune.prom)" = $(METRICS_FILE) ]; then \
		rm -f $(DESTDIR)$(METRICS_TEXTFILE_DIR)/irqtune.prom; fi
