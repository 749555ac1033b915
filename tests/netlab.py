"""A private network of machines on this host for cluster tests: one network namespace per node, each with
its own address on a virtual bridge (a veth pair per node). The bridge lives in a namespace of its own, so the
host's root namespace gets neither an interface nor a route to the subnet; the subnet exists only inside
these namespaces. Everything is created by :class:`Lab` and removed by :meth:`Lab.remove`, which first
SIGKILLs every process left in them."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field

SUBNET = "10.231.7"  # a private /24 that exists only inside the lab's namespaces


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def netns_pids(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@dataclass
class Lab:
    """Namespaces ``<tag>-br`` (the bridge) and ``<tag>-<node>`` (one per node, address ``SUBNET.<host>``)."""

    tag: str
    nodes: dict[str, str] = field(default_factory=dict)  # node name -> its namespace
    addresses: dict[str, str] = field(default_factory=dict)  # node name -> its address

    @property
    def bridge(self) -> str:
        return f"{self.tag}-br"

    def create(self) -> None:
        _ip("netns", "add", self.bridge)
        _ip("-n", self.bridge, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.bridge, "link", "set", "br0", "up")

    def add_node(self, name: str, host: int) -> str:
        """A namespace for node ``name`` with ``lo`` and ``eth0`` (``SUBNET.host/24``) on the bridge."""
        ns, peer = f"{self.tag}-{name}", f"v{host}"
        _ip("netns", "add", ns)
        self.nodes[name] = ns
        _ip("-n", self.bridge, "link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", self.bridge, "link", "set", peer, "master", "br0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{SUBNET}.{host}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        self.addresses[name] = f"{SUBNET}.{host}"
        return ns

    def kill(self, name: str, timeout: float = 20) -> int:
        """SIGKILL every process in node ``name``'s namespace (as a machine losing power); how many there were."""
        ns, killed = self.nodes[name], set()
        deadline = time.time() + timeout
        while (pids := netns_pids(ns)) and time.time() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.2)
        assert not netns_pids(ns), f"processes survived in {ns}"
        return len(killed)

    def listeners(self, name: str) -> list[str]:
        """``process address:port`` of every TCP listener in node ``name``'s namespace (``ss -ltnp``)."""
        out = subprocess.run(
            ["ip", "netns", "exec", self.nodes[name], "ss", "-ltnpH"], capture_output=True, text=True
        ).stdout
        found = []
        for line in out.splitlines():
            program = re.search(r'users:\(\("([^"]+)"', line)
            found.append(f"{program.group(1) if program else '?'} {line.split()[3]}")
        return sorted(found)

    def ipv4(self, name: str) -> set[str]:
        """The IPv4 addresses of node ``name``'s namespace."""
        out = subprocess.run(["ip", "-n", self.nodes[name], "-o", "-4", "addr"], capture_output=True, text=True).stdout
        return {line.split()[3].split("/")[0] for line in out.splitlines()}

    def remove(self) -> None:
        for name in list(self.nodes):
            self.kill(name)
        for ns in [*self.nodes.values(), self.bridge]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.nodes.clear()


def host_has_no_route() -> bool:
    """The root namespace has no address or route in the lab's subnet."""
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    addrs = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    return SUBNET + "." not in routes + addrs
