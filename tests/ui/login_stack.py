"""The real Airflow stack with logins: ``tests/stack/stack.py``'s ``AirflowStack`` (PostgreSQL, the
api-server, scheduler, triggerer and dag-processor, the emulator) with the simple auth manager's users
and roles instead of ``[core] simple_auth_manager_all_admins``, under which everyone is an admin (on
Airflow 3.3 its middleware adds an admin's token to every request, whatever cookie a browser sends),
so nobody could be refused anything.

The simple auth manager cannot limit a user to some DAGs: a role reads every DAG (VIEWER and up) or,
for a user given no role, none (``SimpleAuthManager._is_authorized``: no role, no access). The users:
``admin`` (ADMIN) and ``nobody`` (no role), their passwords written to the auth manager's passwords
file before the stack starts.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.stack.stack import AirflowStack

__all__ = ["USERS", "LoginStack"]

#: user name -> simple auth manager role ("": no role)
USERS = {"admin": "ADMIN", "nobody": ""}


class LoginStack(AirflowStack):
    """``AirflowStack`` whose users log in (the login page or ``POST /auth/token``); the REST calls of
    the harness go as the first ADMIN of ``users``."""

    def __init__(self, dags_folder: Path, *, users: Mapping[str, str] = USERS, **kwargs: Any) -> None:
        super().__init__(dags_folder, **kwargs)
        self.users = dict(users)
        self.passwords = {name: secrets.token_urlsafe(12) for name in self.users}
        self.passwords_file = self.root / "simple_auth_manager_passwords.json"
        self.passwords_file.write_text(json.dumps(self.passwords))
        os.chmod(self.passwords_file, 0o600)
        self._tokens: dict[str, str] = {}

    def airflow_env(self) -> dict[str, str]:
        env = super().airflow_env()
        env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] = "False"
        env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] = ",".join(f"{u}:{r}" for u, r in self.users.items())
        env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] = str(self.passwords_file)
        return env

    def token_of(self, user: str) -> str:
        """A JWT for ``user`` from ``POST /auth/token`` (user name and password)."""
        if user not in self._tokens:
            resp = self._http.post(
                f"{self.api_url}/auth/token", json={"username": user, "password": self.passwords[user]}
            )
            resp.raise_for_status()
            self._tokens[user] = str(resp.json()["access_token"])
        return self._tokens[user]

    def token(self) -> str:
        admin = next(name for name, role in self.users.items() if role.upper() == "ADMIN")
        return self.token_of(admin)
