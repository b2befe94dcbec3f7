"""Three (or more) embedded nats-servers on loopback forming one JetStream cluster.

The production shape in small (docker-compose.yml): every node has its own name,
store dir and ports, routes to all the others, and fsyncs each write before its
PubAck (`sync_interval: always`). A stream with 3 replicas then survives the loss
of any one node, which is what tests/faults/test_nats_cluster.py proves by SIGKILL.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import attrs

from adapters.embedded.nats import nats_server_binary
from adapters.embedded.process import free_port, spawn, stop, wait_for_port

CLUSTER_NAME = "club"


@attrs.define
class ClusterNode:
    name: str
    root: Path
    port: int  # clients
    route_port: int  # the other nodes
    http_port: int  # monitoring: /healthz says when JetStream is ready
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / "nats.log"

    def config(self, routes: list[str]) -> str:
        store = json.dumps(str(self.root / "jetstream"))
        return (
            f"server_name: {json.dumps(self.name)}\n"
            f"listen: 127.0.0.1:{self.port}\n"
            f"http: 127.0.0.1:{self.http_port}\n"
            f"jetstream {{\n  store_dir: {store}\n  sync_interval: always\n}}\n"
            f"cluster {{\n  name: {CLUSTER_NAME}\n"
            f"  listen: 127.0.0.1:{self.route_port}\n"
            f"  routes: {json.dumps(routes)}\n}}\n"
        )


class EmbeddedNatsCluster:
    def __init__(self, data_dir: Path, *, size: int = 3) -> None:
        self.root = data_dir
        self.nodes = [
            ClusterNode(
                name=f"n{n}",
                root=data_dir / f"n{n}",
                port=free_port(),
                route_port=free_port(),
                http_port=free_port(),
            )
            for n in range(1, size + 1)
        ]

    @property
    def url(self) -> str:
        """Every node's address, comma-separated, as CLUB_NATS_URL carries them."""
        return ",".join(node.url for node in self.nodes)

    def node_on(self, port: int | None) -> ClusterNode | None:
        """The node serving clients on `port` (`nc.connected_url.port`)."""
        return next((node for node in self.nodes if node.port == port), None)

    def start(self, timeout: float = 30) -> str:
        routes = [f"nats-route://127.0.0.1:{node.route_port}" for node in self.nodes]
        for node in self.nodes:
            node.root.mkdir(parents=True, exist_ok=True)
            (node.root / "nats.conf").write_text(node.config(routes))
        for node in self.nodes:
            self._spawn(node, timeout)
        self.wait_ready(timeout)
        return self.url

    def restart(self, node: ClusterNode, timeout: float = 30) -> None:
        """Start a killed node again on its own ports and store."""
        self._spawn(node, timeout)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 30) -> None:
        """Until every running node says JetStream is current: a metadata leader
        is elected and caught up (a stream request before that would fail)."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            if node.proc is None:
                continue
            while not _healthy(node):
                if time.monotonic() > deadline:
                    msg = (
                        f"NATS node {node.name} not ready in {timeout}s; see {node.log}"
                    )
                    raise RuntimeError(msg)
                time.sleep(0.1)

    def kill(self, node: ClusterNode) -> None:
        """SIGKILL: no goodbye to the cluster, no flush; the worst a node can do."""
        if node.proc is not None:
            node.proc.kill()
            node.proc.wait()
            node.proc = None

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None:
                stop(node.proc, signal.SIGTERM)
                node.proc = None

    def _spawn(self, node: ClusterNode, timeout: float) -> None:
        argv = [str(nats_server_binary()), "-c", str(node.root / "nats.conf")]
        node.proc = spawn(argv, log=node.log)
        wait_for_port(node.port, node.proc, node.log, timeout)


def _healthy(node: ClusterNode) -> bool:
    url = f"http://127.0.0.1:{node.http_port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)  # noqa: PLR2004
    except (urllib.error.URLError, OSError):
        return False
