"""The replica launcher that gives a replica ``/gcs/``: the emulator's ``gs://`` root, as Vertex AI's
Cloud Storage FUSE mount puts each bucket at ``/gcs/<bucket>/`` (Google's page "Use Cloud Storage as a
mounted file system").

Run as ``python -I -S gcs_mount.py <gcs root> -- <argv...>`` (standard library only, no ``site``, started
by path like supervise.py) by the replica's supervisor in place of the replica's argv. On Linux, in its
own process, it

1. makes a mount namespace of its own: ``unshare(CLONE_NEWNS)`` when it may (the emulator runs as
   root), else ``unshare(CLONE_NEWUSER | CLONE_NEWNS)`` with the caller's own user and group ids mapped
   to themselves (``setgroups`` denied first, as the kernel requires of an unprivileged map): the
   replica keeps the ids, and so the file access, it had without the launcher;
2. makes every mount a slave of the host's (nothing it mounts reaches the host's namespace);
3. builds a new root as bubblewrap does: a tmpfs, a recursive bind of each top-level entry of the old
   ``/`` into it at the same name (top-level symlinks copied as symlinks), and ``gcs``: a recursive
   bind of the gcs root (in place of the host's own ``/gcs`` when there is one); pivots into it,
   detaches the old root and makes the new root's top level read-only;
4. goes back to the caller's working directory, asks again for SIGKILL when its parent (the
   supervisor) dies, and ``exec``s the argv with the caller's environment: the replica keeps the pid,
   process group and session the supervisor gave it.

Any step failing ends it with status 126 and a line on stderr naming the step, before the replica's
argv runs (the emulator's probe, replica_gcs.py, runs it once with a tiny command and falls back to no
``/gcs/`` when it fails). An argv that cannot be executed ends it with status 127 and the line the
supervisor writes in that case.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

__all__ = ["SETUP_FAILED", "main", "mount_gcs"]

#: the exit status when ``/gcs`` could not be set up (the argv did not run)
SETUP_FAILED = 126

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_SLAVE = 0x80000
_MNT_DETACH = 0x2
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
#: pivot_root(2) has no libc wrapper: its system call number, by machine
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41}
#: where the new root is assembled, inside the tmpfs (gone once the old root is detached)
_NEW = "newroot"
_OLD = "oldroot"


class SetupError(Exception):
    """A step of the mount failed: ``<step>: <reason>``."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(rc: int, step: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{step}: {os.strerror(err)} ({errno.errorcode.get(err, err)})")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int) -> None:
    def raw(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    rc = libc.mount(raw(source), raw(target), raw(fstype), ctypes.c_ulong(flags), None)
    _check(rc, f"mount {source or fstype or ''} on {target}")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise SetupError(f"write {path}: {exc.strerror}") from None


def _unshare(libc: ctypes.CDLL) -> None:
    """A mount namespace; a user namespace too when this process may not make one alone."""
    if libc.unshare(_CLONE_NEWNS) == 0:
        return
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _pivot_root(libc: ctypes.CDLL, new: str, old: str) -> None:
    machine = os.uname().machine
    number = _SYS_PIVOT_ROOT.get(machine)
    if number is None:
        raise SetupError(f"pivot_root: no system call number known for {machine!r}")
    _check(libc.syscall(ctypes.c_long(number), os.fsencode(new), os.fsencode(old)), f"pivot_root {new}")


def _bind_entry(libc: ctypes.CDLL, name: str) -> None:
    """``/<_NEW>/<name>``: the old root's top-level entry ``name`` (a symlink copied, anything else
    bound recursively onto a directory or an empty file of its kind)."""
    source, target = f"/{_OLD}/{name}", f"/{_NEW}/{name}"
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    _mount(libc, source, target, None, _MS_BIND | _MS_REC)


def mount_gcs(gcs_root: str) -> None:
    """Give this process a root whose ``/gcs`` is ``gcs_root`` and is otherwise the old root (the
    module docstring's steps 1-3). SetupError naming the step when one fails."""
    if not sys.platform.startswith("linux"):
        raise SetupError(f"mount namespaces: Linux only (this is {sys.platform})")
    root = os.path.realpath(gcs_root)
    if not os.path.isdir(root):
        raise SetupError(f"gcs root {gcs_root!r}: not a directory")
    if root == "/":
        raise SetupError("gcs root '/': it must not be the whole filesystem")
    libc = _libc()
    _unshare(libc)
    _mount(libc, None, "/", None, _MS_REC | _MS_SLAVE)
    # the tmpfs goes on the gcs root itself (a directory sure to exist), which it hides only until the
    # first pivot puts the old root, whole, at /oldroot
    _mount(libc, "tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV)
    for name in (_NEW, _OLD):
        os.mkdir(f"{root}/{name}", 0o755)
    _mount(libc, f"{root}/{_NEW}", f"{root}/{_NEW}", None, _MS_BIND)  # pivot_root wants a mount point
    _pivot_root(libc, root, f"{root}/{_OLD}")
    os.chdir("/")
    for name in sorted(os.listdir(f"/{_OLD}")):
        if name != "gcs":
            _bind_entry(libc, name)
    os.mkdir(f"/{_NEW}/gcs", 0o755)
    _mount(libc, f"/{_OLD}{root}", f"/{_NEW}/gcs", None, _MS_BIND | _MS_REC)
    os.chdir(f"/{_NEW}")
    _pivot_root(libc, ".", ".")  # the tmpfs (with the old root under it) now lies on top of "/"
    _check(libc.umount2(b".", _MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(libc, None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: gcs_mount.py <gcs root> -- <argv...>\n")
        os._exit(2)
    gcs_root, argv = args[0], args[2:]
    cwd = os.getcwd()
    try:
        mount_gcs(gcs_root)
        os.chdir(cwd)
    except (SetupError, OSError) as exc:
        sys.stderr.write(f"emulator: cannot mount /gcs/: {exc}\n")
        sys.stderr.flush()
        os._exit(SETUP_FAILED)
    _libc().prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"emulator: cannot start {argv[0]!r}: {exc}\n")
        sys.stderr.flush()
    os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
