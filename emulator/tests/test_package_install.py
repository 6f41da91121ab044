"""Python package installs are user code: pip and the package's own ``setup.py`` run with the replica's
clean environment, under the replica's supervision, and nothing they start outlives the install."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from probe_figures import record
from runner_support import alive, create, finished, make_sdist, wait_for

pytestmark = pytest.mark.slow

EMULATOR_SECRET = "emulator-env-canary-7c2e"

# setup.py: record the environment it runs with, then start a detached daemon (double fork + setsid,
# its output away from pip's pipes) that writes its pid and sleeps.
SETUP_PRELUDE = """
import json, os, sys, time
with open({env_out!r}, "w") as fh:
    json.dump(dict(os.environ), fh)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(fd, n)
        with open({pid_out!r} + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.rename({pid_out!r} + ".tmp", {pid_out!r})
        time.sleep(600)
    os._exit(0)
os.wait()
"""


def _sdist(path: Path, prelude: str) -> Path:
    return make_sdist(path, "envtrainer", "print('trained', flush=True)\n", prelude)


def _install_job(env: Any, tmp_path: Path) -> tuple[str, Path, Path]:
    """Run a job whose package's setup.py records its environment and starts a daemon."""
    store, config, runner = env
    env_out, pid_out = tmp_path / "setup-env.json", tmp_path / "daemon.pid"
    sdist = _sdist(tmp_path, SETUP_PRELUDE.format(env_out=str(env_out), pid_out=str(pid_out)))
    spec = {
        "workerPoolSpecs": [
            {
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": "x",
                    "packageUris": [str(sdist)],
                    "pythonModule": "envtrainer.task",
                    "env": [{"name": "SPEC_VAR", "value": "from-the-spec"}],
                },
            }
        ]
    }
    name = create(store, runner, spec)
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    return name, env_out, pid_out


def test_setup_py_runs_with_the_replicas_clean_environment(
    env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = {
        "AIRFLOW_CONN_SECRET_DB": EMULATOR_SECRET,
        "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/key.json",
        "AWS_SECRET_ACCESS_KEY": EMULATOR_SECRET,
    }
    for key, value in planted.items():
        monkeypatch.setenv(key, value)
    name, env_out, _ = _install_job(env, tmp_path)
    seen = json.loads(env_out.read_text())
    leaked = [key for key in planted if key in seen]
    assert leaked == []
    assert EMULATOR_SECRET not in json.dumps(seen)
    # the replica's own environment: the service's variables and the pool's env
    assert seen["CLOUD_ML_JOB_ID"] == name.rsplit("/", 1)[1]
    assert seen["SPEC_VAR"] == "from-the-spec"
    record(
        "setup_py_environment",
        f"{', '.join(planted)} in the emulator's environment; a package's setup.py writes out its own",
        f"{', '.join(leaked) or 'none of them'} reached setup.py, which got the replica's environment "
        "(the pool's env, CLOUD_ML_JOB_ID) (was: planted AIRFLOW_CONN_* leaked to setup.py, with the "
        "emulator's whole environment)",
    )


def test_nothing_setup_py_starts_outlives_the_install(env: Any, tmp_path: Path) -> None:
    _, _, pid_out = _install_job(env, tmp_path)
    daemon = int(wait_for(lambda: pid_out.exists() and pid_out.read_text(), what="the daemon's pid"))
    # the daemon left pip's session, but not its supervisor's tree: it is killed when pip ends
    wait_for(lambda: alive([daemon]) == [], timeout=10, what="setup.py's daemon to be killed")
    record(
        "setup_py_daemon",
        "a package's setup.py starts a daemon (double fork, setsid, output away from pip's pipes) that "
        "sleeps 600 s",
        "killed when pip ended (was: it outlived the install)",
    )
