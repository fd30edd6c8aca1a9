# SPDX-License-Identifier: GPL-2.0-or-later
"""systemd's manager on a fake system bus, called as python3-dbus is:
bus.get_object(name, path, introspect=False).Method(*args,
dbus_interface=..., timeout=...), errors raised with
DBusException's get_dbus_name() and get_dbus_message().

What it answers is systemd's (org.freedesktop.systemd1(5), systemd 257):
LoadUnit gives a unit's object path whether or not the unit exists
(LoadState=not-found then), a property asked of the wrong interface is
org.freedesktop.DBus.Error.UnknownProperty, TryRestartUnit gives a job's
path, and a job's object is gone (UnknownObject) once the job ended.
"""

SYSTEMD = "org.freedesktop.systemd1"
MANAGER_PATH = "/org/freedesktop/systemd1"
UNIT_PATH = MANAGER_PATH + "/unit/"
JOB_PATH = MANAGER_PATH + "/job/"
# The interface each property lives on.
INTERFACES = {"LoadState": SYSTEMD + ".Unit", "ActiveState": SYSTEMD + ".Unit",
              "ControlGroup": SYSTEMD + ".Service", "MainPID": SYSTEMD + ".Service",
              "Environment": SYSTEMD + ".Service"}
DEFAULTS = {"ActiveState": "inactive", "LoadState": "loaded", "Environment": [], "MainPID": 0}


class DBusError(Exception):
    """dbus.exceptions.DBusException's accessors."""

    def __init__(self, name, message):
        super().__init__(message)
        self.name, self.message = name, message

    def get_dbus_name(self):
        return self.name

    def get_dbus_message(self):
        return self.message


class FakeSystemd:
    """units: {unit: {property: value}}, a missing property from defaults
    (defaults=None: UnknownProperty); fail: the manager methods that fail
    (Reload, TryRestartUnit, LoadUnit); a job answers State job_polls times
    before it ends.  calls records each call as (method, *args)."""

    def __init__(self, units=None, fail=(), defaults=DEFAULTS, job_polls=1):
        self.units = units or {}
        self.fail = set(fail)
        self.defaults = defaults or {}
        self.job_polls = job_polls
        self.calls = []
        self.jobs = {}          # path: polls left
        self._units_by_path = {}

    def __call__(self):
        """Systemctl's bus seam: (connection, error class)."""
        return self, DBusError

    def get_object(self, bus_name, path, introspect=True):
        assert bus_name == SYSTEMD and introspect is False, (bus_name, introspect)
        return _Proxy(self, path)

    def verbs(self):
        """The manager's methods called that change something."""
        return [c[0] for c in self.calls if c[0] not in ("LoadUnit", "Get")]

    def asked(self):
        """The unit properties asked, in order."""
        return [c[2] for c in self.calls if c[0] == "Get" and not c[1].startswith(JOB_PATH)]

    def call(self, path, interface, method, args):
        if path == MANAGER_PATH:
            assert interface == SYSTEMD + ".Manager", interface
            self.calls.append((method,) + tuple(args))
            if method in self.fail:
                raise DBusError(SYSTEMD + ".Fake", "fake failure of %s" % method)
            return getattr(self, "_" + method)(*args)
        assert (interface, method) == ("org.freedesktop.DBus.Properties", "Get"), (interface, method)
        iface, prop = args
        if path in self.jobs:
            self.calls.append(("Get", path, prop))
            if self.jobs[path] <= 0:
                del self.jobs[path]
                raise DBusError("org.freedesktop.DBus.Error.UnknownObject",
                                "Unknown object '%s'." % path)
            self.jobs[path] -= 1
            return "running"
        unit = self._units_by_path[path]
        self.calls.append(("Get", unit, prop))
        values = dict(self.defaults, **self.units.get(unit, {}))
        if INTERFACES.get(prop) != iface or prop not in values:
            raise DBusError("org.freedesktop.DBus.Error.UnknownProperty",
                            "Unknown interface %s or property %s." % (iface, prop))
        return values[prop]

    def _LoadUnit(self, unit):
        path = UNIT_PATH + "".join(c if c.isalnum() else "_%02x" % ord(c) for c in unit)
        self._units_by_path[path] = unit
        return path

    def _Reload(self):
        return None

    def _TryRestartUnit(self, unit, mode):
        assert mode == "replace", mode
        path = JOB_PATH + str(len(self.calls))
        self.jobs[path] = self.job_polls
        return path


class _Proxy:
    def __init__(self, bus, path):
        self.bus, self.path = bus, path

    def __getattr__(self, method):
        def call(*args, dbus_interface=None, timeout=None):
            return self.bus.call(self.path, dbus_interface, method, args)
        return call
