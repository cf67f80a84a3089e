"""Load from a second process on loopback: wrk when installed, else a small aiohttp client
in a subprocess. Always bounded in time. Two sides are measured interleaved: short rounds of
A, then B, then A again, so drift on a shared machine falls on both."""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

WRK = shutil.which("wrk")
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


@dataclass
class Target:
    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Round:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


@dataclass
class Side:
    rounds: list[Round] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return statistics.median(r.rps for r in self.rounds)

    @property
    def p50(self) -> float:
        return statistics.median(r.p50_ms for r in self.rounds)

    @property
    def p99(self) -> float:
        return statistics.median(r.p99_ms for r in self.rounds)

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.rounds)


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not m:
        raise ValueError(f"cannot read a wrk latency: {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def run_wrk(target: Target, seconds: float, connections: int) -> Round:
    assert WRK is not None
    whole = max(1, math.ceil(seconds))  # wrk counts whole seconds
    cmd = [WRK, "-t1", f"-c{connections}", f"-d{whole}s", "--latency", "--timeout", "10s"]
    for name, value in target.headers.items():
        cmd += ["-H", f"{name}: {value}"]
    cmd.append(target.url)
    out = subprocess.run(  # noqa: S603 (our own arguments)
        cmd, capture_output=True, text=True, timeout=seconds + 30, check=True
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\n\s+50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\n\s+99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors:.*?timeout (\d+)", out)
    errors = (int(bad.group(1)) if bad else 0) + (int(sock.group(1)) if sock else 0)
    return Round(rps=rps, p50_ms=p50, p99_ms=p99, errors=errors)


def run_python(target: Target, seconds: float, connections: int) -> Round:
    """The fallback load generator, in its own process (bench/pyload.py)."""
    spec = json.dumps(
        {"url": target.url, "headers": target.headers, "seconds": seconds, "conns": connections}
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "bench.pyload", spec],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
    ).stdout
    data = json.loads(out)
    return Round(rps=data["rps"], p50_ms=data["p50"], p99_ms=data["p99"], errors=data["errors"])


def measure(target: Target, seconds: float, connections: int) -> Round:
    if WRK:
        return run_wrk(target, seconds, connections)
    return run_python(target, seconds, connections)


def compare(
    a: Target, b: Target, *, rounds: int, seconds: float, connections: int, warm_up: bool = True
) -> tuple[Side, Side]:
    """Alternating rounds of A and B (after one short warm-up of each)."""
    if warm_up:
        measure(a, 1, connections)
        measure(b, 1, connections)
    side_a, side_b = Side(), Side()
    for i in range(rounds):
        # ABBA order: neither side always goes first.
        order = ((a, side_a), (b, side_b)) if i % 2 == 0 else ((b, side_b), (a, side_a))
        for target, side in order:
            side.rounds.append(measure(target, seconds, connections))
    return side_a, side_b
