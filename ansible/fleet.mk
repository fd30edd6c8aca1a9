# SPDX-License-Identifier: GPL-2.0-or-later
# The Ansible collection irqtune.tuning (ansible/) and its tests
# (tests/fleet/); included by the top-level Makefile.
#
#   make fleet-check   syntax check, ansible-lint and the validation
#                      playbook on the controller only (part of make check;
#                      no guest, nothing applied to this host)
#   make fleet-test    the role against lab guests over ssh (tests/fleet/lab)
#
# ansible-core and ansible-lint come from PyPI into a virtualenv under
# build/, pinned so that lint results do not change under the tests' feet.

FLEET_VENV     := build/venv-ansible
FLEET_PACKAGES := ansible-core==2.19.14 ansible-lint==26.10.1 pyroute2==0.9.7 pytest==9.2.0
FLEET_ENV       = ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/ansible/collections \
	ANSIBLE_NOCOLOR=1 NO_COLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 PATH=$(CURDIR)/$(FLEET_VENV)/bin:$$PATH
FLEET_PLAYBOOKS := ansible/irqtune-rollout.yml tests/fleet/ci/validate.yml $(wildcard tests/fleet/lab/*.yml)
FLEET_PYTEST   ?= -v -rA

.PHONY: fleet-check fleet-test fleet-venv

fleet-venv: $(FLEET_VENV)/.installed
$(FLEET_VENV)/.installed: ansible/fleet.mk
	rm -rf $(FLEET_VENV)
	python3 -m venv $(FLEET_VENV)
	$(FLEET_VENV)/bin/pip install -q $(FLEET_PACKAGES)
	touch $@

fleet-check: $(FLEET_VENV)/.installed
	for p in $(FLEET_PLAYBOOKS); do \
		$(FLEET_ENV) ansible-playbook -i localhost, --syntax-check $$p || exit 1; done
	$(FLEET_ENV) ansible-lint -c ansible/.ansible-lint $(FLEET_PLAYBOOKS) \
		ansible/collections/ansible_collections/irqtune/tuning
	$(FLEET_ENV) ansible-playbook tests/fleet/ci/validate.yml

# Lab guests (QEMU) one at a time per host: under the lab lock.
fleet-test: $(FLEET_VENV)/.installed
	flock /tmp/irqtune-lab.lock env $(FLEET_ENV) python -m pytest -p no:cacheprovider \
		$(FLEET_PYTEST) tests/fleet/lab

check: fleet-check
