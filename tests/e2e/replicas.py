"""Two (or more) real ``gpunode serve`` processes on one PostgreSQL database, between the
Kubernetes stand-in (with the ha overlay's Lease RBAC) and the Slack stand-in (HTTP mode).

Each replica is the production entry point in its own process, started with the settings
the ha overlay gives a pod (DSN, Lease name, pod name as identity), with a short lease so
a takeover happens within the test. Nothing reaches into a replica: the tests read the
stand-ins, the database, and run ``gpunode audit --verify`` as an operator would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bot.store import Store
from gpunode_sandbox.demo import POLICY
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.slacksim import SlackSim

REPO = Path(__file__).resolve().parents[2]
SECRET = "replica-signing-secret"
LEASE = "gpunode-leader"
#: the line serve logs once it listens, with the port it bound
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+) ")
#: a short lease, so a killed leader is replaced within the test (production: 15 s)
LEASE_S = 3


async def until(check: Callable[[], Any], *, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@dataclass
class Replica:
    name: str
    port: int
    proc: asyncio.subprocess.Process
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Replicas:
    kube: KubeSim
    slack: SlackSim
    dsn: str
    workdir: Path
    #: Socket Mode: each replica opens its own connection (Slack picks one per envelope)
    socket_mode: bool = False
    running: dict[str, Replica] = field(default_factory=dict)
    _store: Store | None = None

    def env(self, name: str, port: int) -> dict[str, str]:
        socket = {
            "GPUNODE_SLACK__SOCKET_MODE": "true",
            "GPUNODE_SLACK__APP_TOKEN": "xapp-1-A0GPUNODE-replicas",
        }
        return (socket if self.socket_mode else {}) | {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO),  # the checkout under test, not whatever is installed
            # the user's own HOME: matplotlib's font cache is built once, not per replica
            # (building it blocks a replica's event loop for seconds)
            "HOME": os.environ.get("HOME", str(self.workdir)),
            "GPUNODE_SLACK__BOT_TOKEN": "xoxb-serve",
            "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
            "GPUNODE_SLACK__API_BASE_URL": self.slack.api_url,
            "GPUNODE_KUBE__MODE": "server",
            "GPUNODE_KUBE__SERVER": self.kube.url,
            "GPUNODE_KUBE__TOKEN": BOT_TOKEN,
            "GPUNODE_KUBE__VERIFY_TLS": "false",
            "GPUNODE_ACTIONS__POLICY_FILE": str(POLICY),
            "GPUNODE_STORE__DSN": self.dsn,
            "GPUNODE_HTTP__HOST": "127.0.0.1",
            "GPUNODE_HTTP__PORT": str(port),
            "GPUNODE_LEADER__LEASE_NAME": LEASE,
            "GPUNODE_LEADER__IDENTITY": name,
            "GPUNODE_LEADER__LEASE_DURATION_S": str(LEASE_S),
            "GPUNODE_LEADER__RENEW_DEADLINE_S": str(LEASE_S * 2 / 3),
            "GPUNODE_LEADER__RETRY_S": "0.5",
            "GPUNODE_LEADER__RECONCILE_S": "1",
            "GPUNODE_LOG_LEVEL": os.environ.get("GPUNODE_TEST_REPLICA_LOG_LEVEL", "INFO"),
        }

    async def start(self, name: str) -> Replica:
        # port 0: serve binds a free port and logs it (a port picked free here could be
        # taken by another process, an ephemeral client port among them, before serve binds
        # it: the flake under load); the port is read from the log line
        port = 0
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "serve",
                env=self.env(name, port),
                cwd=self.workdir,
                stdout=out,
                stderr=out,
            )
        replica = Replica(name, port, proc, log)
        self.running[name] = replica
        # a serve start is ~7 s of CPU (imports, doctor, the warm-up's template compile and
        # worker): with both cores busy (two suites of 4 workers each) two replicas starting
        # together took over 30 s. Readiness time is not what these tests check.
        await until(lambda: self._ready(replica), timeout_s=120, what=f"{name} to be ready")
        return replica

    async def _ready(self, replica: Replica) -> bool:
        assert replica.proc.returncode is None, replica.log.read_text()[-3000:]
        if not replica.port:
            bound = LISTENING.search(replica.log.read_text(errors="replace"))
            if bound is None:
                return False
            replica.port = int(bound[1])
        try:
            async with aiohttp.ClientSession() as http, http.get(replica.url + "/readyz") as r:
                return r.status == 200
        except aiohttp.ClientError:
            return False

    async def stop(self, name: str, sig: int = signal.SIGTERM, *, wait_s: float = 30) -> int:
        replica = self.running.pop(name)
        if replica.proc.returncode is not None:  # it has exited already (e.g. a failed start)
            return replica.proc.returncode
        with contextlib.suppress(ProcessLookupError):  # it exits as it is signalled
            replica.proc.send_signal(sig)
        try:
            return await asyncio.wait_for(replica.proc.wait(), wait_s)
        except TimeoutError:
            replica.proc.kill()
            return await replica.proc.wait()

    async def stop_all(self) -> None:
        for name in list(self.running):
            await self.stop(name, signal.SIGKILL)
        if self._store is not None:
            await self._store.close()

    def holder(self) -> str | None:
        lease = self.kube.get("leases", "gpunode", LEASE)
        return lease["spec"].get("holderIdentity") if lease else None

    def route_to(self, name: str) -> None:
        """Slack's request URL points at ``name`` (as a Service would route one request)."""
        self.slack.set_request_url(self.running[name].url + "/slack/events")

    async def post_signed(self, name: str, body: bytes) -> int:
        headers = self.slack.sign_headers(body)
        url = self.running[name].url + "/slack/events"
        async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as r:
            await r.read()
            return r.status

    async def db(self) -> Store:
        """The test's own connection to the shared store (what `gpunode status` reads)."""
        if self._store is None:
            self._store = await Store.open(self.dsn)
        return self._store

    async def audit_verify(self) -> tuple[int, str]:
        """``gpunode audit --verify`` against the shared database: (exit code, its output)."""
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO),
            "HOME": str(self.workdir),
            "GPUNODE_STORE__DSN": self.dsn,
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "audit",
            "--verify",
            env=env,
            cwd=self.workdir,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await proc.communicate()
        return int(proc.returncode or 0), out.decode().strip()


async def install_lease_rbac(url: str) -> None:
    """What `kubectl apply -k deploy/overlays/ha` adds for the Lease, applied as the admin."""
    from gpunode_sandbox.kubesim.kustomize import render
    from tests.conftest import kube_call

    for obj in render(REPO / "deploy" / "overlays" / "ha"):
        if obj["kind"] in ("Role", "RoleBinding") and "leader" in obj["metadata"]["name"]:
            plural = "roles" if obj["kind"] == "Role" else "rolebindings"
            status, body = await kube_call(
                url,
                "POST",
                f"/apis/rbac.authorization.k8s.io/v1/namespaces/gpunode/{plural}",
                body=obj,
            )
            assert status == 201, body
