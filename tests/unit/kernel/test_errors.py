# SPDX-License-Identifier: GPL-2.0-or-later
"""One error model: a refused netlink request is an OSError with errno and
the kernel's whole extack; describe_os_error is the one place an errno
becomes the administrator's words."""

import ast
import errno
import pathlib

from irqtune.kernel import files
from irqtune.kernel.errors import (Extack, NetlinkRequestError, OptionError, describe_os_error,
                                   errno_error)

# What a 6.18 kernel answered a napi-set with defer-hard-irqs 2**31
# (tests/netlink/test_netdev.py reads it off the kernel).
RANGE = Extack("integer out of range", offset=28, refused="defer-hard-irqs")


def test_a_refused_request_is_an_oserror_with_the_whole_extack():
    err = NetlinkRequestError("setting NAPI 8193", errno.ERANGE, RANGE)
    assert isinstance(err, OSError) and err.errno == errno.ERANGE
    assert str(err) == ("setting NAPI 8193: integer out of range, in attribute "
                        "defer-hard-irqs (ERANGE)")
    assert str(Extack(offset=28)) == "in attribute at offset 28"
    missing = NetlinkRequestError("reading a NAPI", errno.EINVAL, Extack(missing="id"))
    assert str(missing) == "reading a NAPI: attribute id missing (EINVAL)"
    assert str(NetlinkRequestError("dumping NAPIs", errno.EIO)) == \
        "dumping NAPIs: Input/output error (EIO)"


def test_the_callers_meaning_then_the_errno_and_the_extack():
    err = NetlinkRequestError("setting rings", errno.EOPNOTSUPP, Extack("no header split"))
    meanings = {errno.EOPNOTSUPP: "the driver does not support header split (%s)"}
    assert describe_os_error(err, meanings) == \
        "the driver does not support header split (EOPNOTSUPP: no header split)"
    assert describe_os_error(OSError(errno.ENOSPC, "No space left on device"), meanings) == \
        "No space left on device (ENOSPC)"
    assert describe_os_error(err) == str(err)
    denied = PermissionError(errno.EACCES, "Permission denied", "/sys/x")
    assert describe_os_error(denied) == "/sys/x: Permission denied (EACCES)"
    # a caller that names the path itself
    assert describe_os_error(denied, with_path=False) == "Permission denied (EACCES)"
    assert describe_os_error(errno_error(errno.EOPNOTSUPP)) == "Operation not supported (EOPNOTSUPP)"


def test_other_errors_say_what_happened_themselves():
    err = OptionError("queues", "x", "rx queue indexes")
    assert describe_os_error(err) == str(err)
    # the library's own OSError: its words are the refusal, not an errno's
    fifo = files.NotRegularFile("a FIFO", "/run/x")
    assert describe_os_error(fifo) == str(fifo) == \
        "a FIFO is there, not a regular file; left as it is"
    assert describe_os_error(ValueError("bad number")) == "bad number"


def _errno_words_outside_errors_py():
    """Where the library turns an errno into words itself: os.strerror, an
    OSError's .strerror, errno.errorcode, or an {errno: text} table (a dict
    or dict.fromkeys) whose text leaves out the errno's name - a
    describe_os_error meaning puts it in with "%s"."""
    def errno_keys(nodes):
        return any(ast.unparse(k).startswith("errno.E") for n in nodes if n for k in ast.walk(n))

    def nameless_text(nodes):
        return any(isinstance(v, ast.Constant) and isinstance(v.value, str) and "%s" not in v.value
                   for v in nodes)

    root = pathlib.Path(__file__).resolve().parents[3]
    found = []
    for path in sorted([*(root / "irqtune").rglob("*.py"), *(root / "tuned-plugins").glob("*.py")]):
        if path == root / "irqtune" / "kernel" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = "%s:%d" % (path.relative_to(root), getattr(node, "lineno", 0))
            if isinstance(node, (ast.Attribute, ast.Name, ast.alias)) and \
                    getattr(node, "attr", getattr(node, "id", getattr(node, "name", None))) in \
                    ("strerror", "errorcode"):
                found.append("%s: %s" % (where, ast.unparse(node)))
            elif isinstance(node, ast.Dict) and errno_keys(node.keys) and \
                    nameless_text(node.values) or isinstance(node, ast.Call) and \
                    ast.unparse(node.func) == "dict.fromkeys" and len(node.args) == 2 and \
                    errno_keys(node.args[:1]) and nameless_text(node.args[1:]):
                found.append("%s: {errno: text}" % where)
    return found


# Python's own words for an OSError: str(err), "%s" % err, a log argument.
_OS_ERRORS = {"OSError", "IOError", "PermissionError", "FileNotFoundError", "FileExistsError",
              "ProcessLookupError", "TimeoutError", "ConnectionError", "InterruptedError"}


def _oserrors_shown_as_python_says():
    """Where an OSError caught by name is put in a message as it is
    ("[Errno 13] Permission denied: '/x'") instead of through
    describe_os_error."""
    root = pathlib.Path(__file__).resolve().parents[3]
    found = []
    for path in sorted((root / "irqtune").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for handler in ast.walk(tree):
            if not (isinstance(handler, ast.ExceptHandler) and handler.name and handler.type
                    and _OS_ERRORS & {ast.unparse(n) for n in ast.walk(handler.type)}):
                continue
            for node in (n for stmt in handler.body for n in ast.walk(stmt)):
                args = ([node.right] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
                        else node.args if isinstance(node, ast.Call) and (
                            ast.unparse(node.func) in ("str", "shown") or
                            ast.unparse(node.func).startswith("log."))
                        else [node.value] if isinstance(node, ast.FormattedValue) else [])
                for arg in args:
                    if any(isinstance(a, ast.Name) and a.id == handler.name
                           for a in (arg.elts if isinstance(arg, ast.Tuple) else [arg])):
                        found.append("%s:%d: %s" % (path.relative_to(root), node.lineno,
                                                    ast.unparse(node)[:60]))
    return found


def test_every_errno_becomes_words_in_describe_os_error():
    found = _errno_words_outside_errors_py() + _oserrors_shown_as_python_says()
    assert not found, "errno made words outside describe_os_error:\n" + "\n".join(found)
