"""``/gcs/`` in the replicas: the emulator's gs:// root mounted as Vertex AI's Cloud Storage FUSE puts
buckets there (runtime/gcs_mount.py, runtime/replica_gcs.py), through the stock clients; the fallback
with ``gcs_mount="off"``; and the launcher's own rules (what it exposes, what it leaves alone)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runner_support import wait_for

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.gcs import GCS_MOUNTED_NOTE, GCS_NOTE
from vertex_emulator.runtime.gcs_mount import SETUP_FAILED
from vertex_emulator.runtime.replica_gcs import gcs_mount_problem, launcher_argv

PARENT = "projects/p/locations/us-central1"
ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}

#: a replica that reads an uploaded object at /gcs/, writes one there, and tells what it is
MOUNTED_REPLICA = """
import ctypes, json, os
data = open('/gcs/bkt/in/data.txt').read()
with open('/gcs/bkt/out.txt', 'w') as fh:
    fh.write('seen: ' + data)
sig = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(json.dumps({'ppid': os.getppid(), 'pgid': os.getpgid(0), 'sid': os.getsid(0), 'uid': os.getuid(),
                  'gid': os.getgid(), 'cwd': os.getcwd(), 'pdeathsig': sig.value,
                  'top': sorted(os.listdir('/'))}))
"""


def _skip_unless_mounted(root: Path) -> None:
    problem = gcs_mount_problem(root)
    if problem is not None:
        pytest.skip(f"this host gives a process no mount namespace: {problem}")


@pytest.fixture
def em(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path) as emulator:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", str(emulator.config.storage_endpoint))
        monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
        yield emulator


def _run(em: Emulator, code: str, *, cancel_when: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """Create a one-replica job running ``code`` with the stock JobServiceClient, wait for its end
    (cancelling it once ``cancel_when`` exists); (the job, its primary's replica view)."""
    from google.cloud.aiplatform_v1 import CustomJob

    client = testing.grpc_client(em)
    try:
        spec = CustomJob.from_json(json.dumps(testing.container_job("gcs-mount", code)))
        job = client.create_custom_job(parent=PARENT, custom_job=spec)
        if cancel_when is not None:
            wait_for(cancel_when.exists, 60, "the replica to be ready")
            client.cancel_custom_job(name=job.name)
        done = testing.wait_for_state(client, job.name, ENDED, 60)
    finally:
        client.transport.close()
    view = em.runner.replica_view(done.name, "workerpool0-0")
    assert view is not None
    return done, view


def _log_lines(em: Emulator, job_name: str) -> list[str]:
    path = em.config.state_dir / "logs" / job_name.rsplit("/", 1)[-1] / "workerpool0-0.log"
    return path.read_text().splitlines()


@pytest.mark.slow
def test_a_replica_reads_and_writes_objects_at_gcs_as_the_storage_client_sees_them(em: Emulator) -> None:
    from google.cloud import storage

    _skip_unless_mounted(em.config.gcs_root)
    client = storage.Client()
    try:
        client.create_bucket("bkt")
        client.bucket("bkt").blob("in/data.txt").upload_from_string("uploaded with the stock client")
        job, view = _run(em, MOUNTED_REPLICA)
        assert job.state.name == "JOB_STATE_SUCCEEDED", job.error.message
        assert (
            client.bucket("bkt").blob("out.txt").download_as_text() == "seen: uploaded with the stock client"
        )
    finally:
        client.close()
    assert _log_lines(em, job.name)[0] == GCS_MOUNTED_NOTE
    seen = json.loads(view["logTail"][-1])
    # the launcher exec'd: the replica is its supervisor's child, in the supervisor's group and session
    assert seen["ppid"] == view["pid"] and seen["pgid"] == seen["sid"] == view["pid"]
    assert seen["pdeathsig"] == signal.SIGKILL  # it still dies with its supervisor
    assert (seen["uid"], seen["gid"]) == (os.getuid(), os.getgid())  # the emulator's own ids
    assert seen["cwd"] == str(em.config.state_dir / "work" / job.name.rsplit("/", 1)[-1] / "workerpool0-0")
    assert set(seen["top"]) == set(os.listdir("/")) | {"gcs"}  # the host's / and /gcs, nothing else


@pytest.mark.slow
def test_a_mounted_replica_killed_by_a_signal_reports_128_plus_n(em: Emulator) -> None:
    _skip_unless_mounted(em.config.gcs_root)
    job, view = _run(em, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert job.state.name == "JOB_STATE_FAILED"
    assert "exited with a non-zero status of 137. Termination reason: killed by SIGKILL." in job.error.message
    assert view["exitCode"] == 137


@pytest.mark.slow
def test_a_cancelled_mounted_replica_gets_sigterm(em: Emulator, tmp_path: Path) -> None:
    _skip_unless_mounted(em.config.gcs_root)
    ready, got = tmp_path / "ready", tmp_path / "got-sigterm"
    code = (
        "import os, signal, sys\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (open({str(got)!r}, 'w').close(), sys.exit(0)))\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "while True: signal.pause()\n"
    )
    job, view = _run(em, code, cancel_when=ready)
    assert job.state.name == "JOB_STATE_CANCELLED"
    assert got.exists() and view["state"] == "CANCELLED"


@pytest.mark.slow
def test_with_gcs_mount_off_a_replica_has_no_gcs_and_its_log_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = "import os; print('gcs exists:', os.path.exists('/gcs'))"
    with testing.running_emulator(tmp_path, gcs_mount="off") as emulator:
        job, view = _run(emulator, code)
        assert job.state.name == "JOB_STATE_SUCCEEDED", job.error.message
        assert _log_lines(emulator, job.name)[0] == GCS_NOTE
    assert view["logTail"] == [f"gcs exists: {os.path.exists('/gcs')}"]  # the host's /gcs, or none


def test_a_bad_gcs_mount_setting_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vertex_emulator.cli import main, parse_config

    with pytest.raises(ValueError, match=r"gcs_mount: must be 'auto' or 'off' \(got 'on'\)"):
        Emulator(testing.make_config(tmp_path, gcs_mount="on"))
    assert main(["--gcs-mount", "on"]) == 2
    assert "argument --gcs-mount: invalid choice: 'on' (choose from 'auto', 'off')" in capsys.readouterr().err
    assert parse_config([]).gcs_mount == "auto" and parse_config(["--gcs-mount", "off"]).gcs_mount == "off"


# -- the launcher alone ------------------------------------------------------------------------------


def _launch(root: Path, code: str, *, prefix: tuple[str, ...] = (), cwd: Path | None = None) -> Any:
    argv = [*prefix, *launcher_argv(root), sys.executable, "-I", "-S", "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60, check=False)


def test_the_launcher_shows_the_gcs_root_at_gcs_and_leaves_the_host_alone(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    (root / "bkt").mkdir(parents=True)
    _skip_unless_mounted(root)
    (root / "bkt" / "a.txt").write_text("object")
    host_mounts = Path("/proc/self/mountinfo").read_text()
    code = (
        "import errno, os, sys\n"
        "assert open('/gcs/bkt/a.txt').read() == 'object'\n"
        "open('/gcs/bkt/b.txt', 'w').write('from inside')\n"
        "try:\n"
        "    os.mkdir('/not-on-the-host')\n"
        "except OSError as exc:\n"
        "    assert exc.errno in (errno.EROFS, errno.EACCES), exc\n"
        "else:\n"
        "    sys.exit('the top level of / is writable')\n"
        "s = os.stat('/gcs')\n"
        "print(s.st_dev, s.st_ino, os.getcwd())\n"
    )
    done = _launch(root, code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    st = root.stat()
    assert done.stdout.split() == [str(st.st_dev), str(st.st_ino), str(tmp_path)]
    assert (root / "bkt" / "b.txt").read_text() == "from inside"
    assert not Path("/not-on-the-host").exists()
    assert Path("/proc/self/mountinfo").read_text() == host_mounts  # none of its mounts reached the host


def test_the_launcher_puts_the_gcs_root_over_a_gcs_the_host_has(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    (outer / "outer-bucket").mkdir(parents=True)
    (inner / "inner-bucket").mkdir(parents=True)
    _skip_unless_mounted(outer)
    # the launcher run inside the launcher: the "host" it starts from has a /gcs (the outer root)
    code = "import os; print(sorted(os.listdir('/gcs')))"
    done = _launch(inner, code, prefix=tuple(launcher_argv(outer)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['inner-bucket']"


def test_the_launcher_fails_before_the_command_runs_when_it_cannot_mount(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = _launch(tmp_path / "missing", f"open({str(marker)!r}, 'w').close()")
    assert done.returncode == SETUP_FAILED
    assert "emulator: cannot mount /gcs/: gcs root" in done.stderr and "not a directory" in done.stderr
    assert not marker.exists()


def test_the_launcher_reports_a_command_it_cannot_start_as_the_supervisor_does(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    root.mkdir()
    _skip_unless_mounted(root)
    argv = [*launcher_argv(root), str(tmp_path / "no-such-program")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 127
    assert f"emulator: cannot start {str(tmp_path / 'no-such-program')!r}" in done.stderr


def _unprivileged() -> tuple[str, ...]:
    """A prefix that runs the launcher without the privilege to make a mount namespace alone: none for a
    user other than root; for root, setpriv without CAP_SYS_ADMIN (the launcher then needs a user
    namespace, as for any other user)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is not installed to drop CAP_SYS_ADMIN")
    return (setpriv, "--bounding-set=-sys_admin")


def test_without_privilege_the_replica_keeps_its_own_ids_and_no_more_access(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    root.mkdir()
    _skip_unless_mounted(root)
    other = tmp_path / "other-users-file"
    other.write_text("secret")
    other.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(other, 4321, 4321)  # another user's file, which root reads outside
        assert other.read_text() == "secret"
    code = (
        "import json, os\n"
        "try:\n"
        f"    access = open({str(other)!r}).read()\n"
        "except PermissionError:\n"
        "    access = 'refused'\n"
        "uid_map = open('/proc/self/uid_map').read().split()\n"
        f"owners = [os.stat({str(other)!r}).st_uid, os.stat('/').st_uid]\n"
        "ids = [os.getuid(), os.getgid()]\n"
        "print(json.dumps({'map': uid_map, 'ids': ids, 'owners': owners, 'access': access}))\n"
    )
    done = _launch(root, code, prefix=_unprivileged())
    if done.returncode == SETUP_FAILED:
        pytest.skip(f"no user namespace for an unprivileged process here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    uid, gid = os.getuid(), os.getgid()
    assert seen["map"] == [str(uid), str(uid), "1"]  # its own user id, mapped to itself
    assert seen["ids"] == [uid, gid]
    overflow = int(Path("/proc/sys/kernel/overflowuid").read_text())
    # the files of other users show as the overflow id (nobody)
    expected = [
        uid if other.stat().st_uid == uid else overflow,
        uid if os.stat("/").st_uid == uid else overflow,
    ]
    assert seen["owners"] == expected
    assert seen["access"] == ("secret" if other.stat().st_uid == uid else "refused")


def test_a_failed_probe_is_logged_once_with_its_reason_and_replicas_fall_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from vertex_emulator.runtime.replica_gcs import replica_launch

    config = testing.make_config(tmp_path, gcs_root=tmp_path / "not-made")  # the probe cannot stat it
    with caplog.at_level("WARNING", logger="vertex_emulator.runtime.replica_gcs"):
        for _ in range(2):
            assert replica_launch(config) == ([], GCS_NOTE)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "replicas get no /gcs/" in warned[0] and "cannot be read" in warned[0]
