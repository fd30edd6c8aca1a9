# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune metrics` read by the monitoring stacks themselves.

veth NAPIs in a namespace get distinct values (set with the raw netlink
writer, not the library).  Then:

- the OpenMetrics text carries every NAPI with those values, counters
  with ``_total``, units in names, and ends in ``# EOF``;
- the Prometheus text format passes `promtool check metrics`;
- ``--output`` replaces the file in one rename (no temporary file left);
- PCP: a private pmcd (its own port, socket, pmcd.conf and PMNS; the
  host's PCP configuration is not touched) runs Debian's pmdaopenmetrics
  with a config.d holding the executable the package installs
  (metrics/irqtune.pcp.sh, pointed at this checkout's irqtune); `pminfo -f`
  shows each NAPI as an instance with its value and the help text of the
  OpenMetrics output, `pmval` samples it;
- Prometheus: node_exporter's textfile collector reads the file
  ``--output`` wrote, a Prometheus server (Debian's) scrapes it on
  localhost, and its HTTP query API answers with the NAPIs' values.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request

import pytest

from support.netns import NetNs
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "irqtune-metrics"
DEV = "vmet"
PCP_SCRIPT = os.path.join(REPO, "metrics", "irqtune.pcp.sh")
OPENMETRICS_PMDA = "/var/lib/pcp/pmdas/openmetrics/pmdaopenmetrics.python"


def _pmcd():
    """pmcd lives in PCP_BINADM_DIR (/etc/pcp.conf), not on PATH."""
    try:
        with open("/etc/pcp.conf") as f:
            conf = dict(l.strip().split("=", 1) for l in f if "=" in l and not l.startswith("#"))
        path = os.path.join(conf.get("PCP_BINADM_DIR", "/usr/lib/pcp/bin"), "pmcd")
        return path if os.access(path, os.X_OK) else shutil.which("pmcd")
    except OSError:
        return shutil.which("pmcd")


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metrics(*args):
    p = subprocess.run(["ip", "netns", "exec", NS, "/usr/bin/python3", "-m", "irqtune",
                        "metrics"] + list(args), cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def ns():
    netns = NetNs(NS)
    try:
        netns.add_veth(DEV, queues=3)
        with netns.entered():
            from support.rawnapi import RawGenl
            nl = RawGenl()
            try:
                for i, n in enumerate(sorted(nl.napis(DEV), key=lambda n: n["id"])):
                    nl.set(n["id"], defer_hard_irqs=10 + i, gro_flush_timeout=20000 + 1000 * i,
                           irq_suspend_timeout=20000000)
            finally:
                nl.close()
        napis = {n["id"]: n for n in netns.napis(DEV)}
        assert len(napis) == 3
        yield napis
    finally:
        netns.delete()


def samples(text, name):
    """{napi id: value} of one metric's samples for DEV."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^%s\{(.*)\} (\S+)$' % re.escape(name), line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("device") == DEV:
                out[int(labels["napi"])] = float(m.group(2))
    return out


def test_openmetrics_text_carries_every_napi(ns):
    text = metrics(DEV)
    assert text.endswith("# EOF\n")
    assert samples(text, "irqtune_napi_defer_hard_irqs") == \
        {i: n["defer-hard-irqs"] for i, n in ns.items()}
    assert samples(text, "irqtune_napi_gro_flush_timeout_seconds") == \
        {i: n["gro-flush-timeout"] / 1e9 for i, n in ns.items()}
    assert "# UNIT irqtune_napi_gro_flush_timeout_seconds seconds" in text
    assert "# TYPE irqtune_busy_poll_rx_packets counter" in text
    assert re.search(r'^irqtune_busy_poll_rx_packets_total\{netns="%s"\} \d+$' % NS, text, re.M)
    assert re.search(r'^irqtune_device_rx_packets_total\{device="%s",netns="%s"\} \d+$'
                     % (DEV, NS), text, re.M)


def test_prometheus_text_passes_promtool(ns, tmp_path):
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian: prometheus) not installed")
    out = tmp_path / "irqtune.prom"
    metrics("--output", str(out))
    assert os.listdir(tmp_path) == ["irqtune.prom"]          # no temporary file left
    assert os.stat(out).st_mode & 0o777 == 0o644
    text = out.read_text()
    assert "# EOF" not in text and "irqtune_busy_poll_rx_packets_total counter" in text
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert samples(text, "irqtune_napi_defer_hard_irqs") == \
        {i: n["defer-hard-irqs"] for i, n in ns.items()}


@pytest.fixture
def pmcd(tmp_path):
    """A private pmcd with pmdaopenmetrics and irqtune's config.d entry."""
    if _pmcd() is None or not os.path.exists(OPENMETRICS_PMDA):
        pytest.skip("pcp (pmcd, pmdaopenmetrics) not installed")
    confd = tmp_path / "config.d"
    confd.mkdir()
    # The packaged entry, run in the test namespace with this checkout.
    entry = confd / "irqtune.sh"
    entry.write_text("#!/bin/sh\ncd %s\nexport IRQTUNE='/usr/bin/python3 -m irqtune'\n"
                     "exec ip netns exec %s %s\n" % (REPO, NS, PCP_SCRIPT))
    entry.chmod(0o755)
    (tmp_path / "pmns").write_text("root {\n    openmetrics\t144:*:*\n}\n")
    (tmp_path / "pmcd.conf").write_text(
        "openmetrics\t144\tpipe\tbinary notready\t/usr/bin/python3 %s -c %s -l %s\n"
        % (OPENMETRICS_PMDA, confd, tmp_path / "openmetrics.log"))
    port = _free_port()
    # pmdaopenmetrics keeps its metric and instance ids in
    # $PCP_VAR_DIR/config/pmda: a directory of the test's, not the host's.
    (tmp_path / "var" / "config" / "pmda").mkdir(parents=True)
    env = dict(os.environ, PCP_VAR_DIR=str(tmp_path / "var"))
    proc = subprocess.Popen([_pmcd(), "-f", "-c", str(tmp_path / "pmcd.conf"), "-n",
                             str(tmp_path / "pmns"), "-p", str(port), "-s",
                             str(tmp_path / "pmcd.socket"), "-l", str(tmp_path / "pmcd.log"),
                             "-x", str(tmp_path / "pmcd.err")], env=env, cwd=str(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    host = "localhost:%d" % port
    try:
        wait_for(lambda: "openmetrics.irqtune.irqtune_napi_defer_hard_irqs" in
                 subprocess.run(["pminfo", "-h", host, "openmetrics"], capture_output=True,
                                text=True).stdout, timeout=60, what="pmdaopenmetrics to list irqtune")
        yield host
    finally:
        proc.terminate()
        proc.wait(20)
        for log in ("pmcd.log", "openmetrics.log"):
            path = tmp_path / log
            if path.exists():
                print("--- %s\n%s" % (log, path.read_text()[-2000:]))


def test_pcp_shows_the_same_instances_and_help(ns, pmcd):
    metric = "openmetrics.irqtune.irqtune_napi_defer_hard_irqs"
    p = subprocess.run(["pminfo", "-h", pmcd, "-fT", metric], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    got = {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r'inst \[\d+ or "\d+ device:%s napi:(\d+) netns:%s"\] value (\S+)' % (DEV, NS), p.stdout)}
    assert got == {i: n["defer-hard-irqs"] for i, n in ns.items()}, p.stdout
    om_help = re.search(r"^# HELP irqtune_napi_defer_hard_irqs (.*)$", metrics(DEV), re.M).group(1)
    assert om_help in p.stdout
    d = subprocess.run(["pminfo", "-h", pmcd, "-d",
                        "openmetrics.irqtune.irqtune_busy_poll_rx_packets_total",
                        "openmetrics.irqtune.irqtune_napi_gro_flush_timeout_seconds"],
                       capture_output=True, text=True, timeout=60).stdout
    assert re.search(r"busy_poll_rx_packets_total\n.*\n\s+Semantics: counter", d), d
    assert re.search(r"gro_flush_timeout_seconds\n.*\n\s+Semantics: instant\s+Units: sec", d), d
    v = subprocess.run(["pmval", "-h", pmcd, "-s", "2", "-t", "0.5",
                        "openmetrics.irqtune.irqtune_napi_irq_suspend_timeout_seconds"],
                       capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stderr
    # one column per instance, in the order of the "full label" lines
    labels = re.findall(r"full label for instance\[\d+\]: \d+ device:(\S+) napi:(\d+)", v.stdout)
    rows = [l.split() for l in v.stdout.splitlines()
            if re.match(r"^\s*[0-9.eE+-]+(\s+[0-9.eE+-]+)*\s*$", l)]
    assert len(rows) == 2 and all(len(r) == len(labels) for r in rows), v.stdout
    for row in rows:
        got = {int(napi): float(x) for (dev, napi), x in zip(labels, row) if dev == DEV}
        assert got == {i: n["irq-suspend-timeout"] / 1e9 for i, n in ns.items()}, v.stdout


def _get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read().decode())


def test_prometheus_scrapes_the_textfile(ns, tmp_path):
    for tool in ("prometheus", "prometheus-node-exporter"):
        if shutil.which(tool) is None:
            pytest.skip("%s not installed" % tool)
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    metrics("--output", str(textdir / "irqtune.prom"))
    ne_port, prom_port = _free_port(), _free_port()
    exporter = subprocess.Popen(["prometheus-node-exporter", "--collector.disable-defaults",
                                 "--collector.textfile", "--collector.textfile.directory=%s" % textdir,
                                 "--web.listen-address=127.0.0.1:%d" % ne_port],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                      "  - job_name: node\n    static_configs:\n"
                      "      - targets: ['127.0.0.1:%d']\n" % ne_port)
    server = subprocess.Popen(["prometheus", "--config.file=%s" % config,
                               "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                               "--web.listen-address=127.0.0.1:%d" % prom_port],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (
            prom_port, urllib.parse.quote('irqtune_napi_defer_hard_irqs{device="%s"}' % DEV))

        def answered():
            try:
                result = _get_json(url)["data"]["result"]
            except (OSError, ValueError, KeyError):
                return None
            return result if len(result) == len(ns) else None
        result = wait_for(answered, timeout=90, interval=1, what="Prometheus to scrape irqtune")
        got = {int(r["metric"]["napi"]): float(r["value"][1]) for r in result}
        assert got == {i: n["defer-hard-irqs"] for i, n in ns.items()}, result
        assert all(r["metric"]["netns"] == NS and r["metric"]["job"] == "node" for r in result)
        counter = _get_json("http://127.0.0.1:%d/api/v1/query?query=%s" % (
            prom_port, urllib.parse.quote('irqtune_busy_poll_rx_packets_total{netns="%s"}' % NS)))
        assert len(counter["data"]["result"]) == 1, counter
    finally:
        for proc in (server, exporter):
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
