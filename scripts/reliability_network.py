"""Reliability checks of what an endpoint that is not ours can do (issue 48): redirects to another origin of every
kind, replies that never end, usage values that are no counts, and a key echoed back. Cases are drawn from their
kinds on every run; every server is on loopback and stops by itself."""

from __future__ import annotations

import os
import random
import tracemalloc
from pathlib import Path

from reliability_harness import Figure, cli

KEY_VARIABLE = "RELIABILITY_NETWORK_KEY"


def redirect_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """Every redirect status to another port, host name or scheme, for a chat call and the pre-flight check:
    the call fails with one line, and the other origin hears nothing."""
    from pos_bench.models.endpoint import ReplyRefused
    from pos_bench.models.openai import OpenAIModel
    from pos_bench.runner.endpoints import Endpoint, problem
    from pos_bench.types import Message, Prompt
    from tests.models.stub_hostile_server import Server

    os.environ[KEY_VARIABLE] = "sk-network-" + "".join(rng.choice("abcdef0123456789") for _ in range(24))
    held = total = heard = 0
    other = Server()
    try:
        port = other.url.rsplit(":", 1)[1]
        targets = [other.url, f"http://localhost:{port}", f"https://127.0.0.1:{port}"]
        for status in (301, 302, 303, 307, 308):
            first = Server(f"redirect:{status}:{rng.choice(targets)}")
            try:
                model = OpenAIModel("m", base_url=f"{first.url}/v1", api_key_env=KEY_VARIABLE, timeout=20)
                try:
                    model.generate(Prompt(messages=(Message("user", "secret prompt"),)))
                    chat = False
                except ReplyRefused as refused:
                    chat = "another origin" in str(refused)
                endpoint = Endpoint("agent", f"{first.url}/v1", "m", "openai", KEY_VARIABLE)
                check = problem(endpoint) or ""
                held += chat + ("another origin" in check)
                total += 2
            finally:
                first.close()
        heard = len(other.seen)
    finally:
        other.close()
    return [
        Figure(
            "redirect to another origin",
            f"{held}/{total} chat calls and checks refused with one line; the other origin heard {heard} requests",
            held == total and heard == 0,
            trials=total,
            leaked=heard,
        )
    ]


def endless_reply_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """A reply that never ends, for a chat call and a models listing, under a random byte bound: the call fails
    naming the bound and the memory it took stays within a few times the bound."""
    from pos_bench.models.endpoint import ReplyRefused
    from pos_bench.models.openai import OpenAIModel
    from pos_bench.runner.endpoints import Endpoint, problem
    from pos_bench.types import Message, Prompt
    from tests.models.stub_hostile_server import servers

    os.environ.setdefault(KEY_VARIABLE, "sk-network-endless-0123456789")
    cap = rng.choice([1, 2, 4]) << 20
    peaks, held = [], 0
    with servers("endless") as (first, _):
        for kind in ("chat", "listing"):
            tracemalloc.start()
            try:
                if kind == "chat":
                    model = OpenAIModel(
                        "m",
                        base_url=f"{first.url}/v1",
                        api_key_env=KEY_VARIABLE,
                        timeout=30,
                        max_reply_bytes=cap,
                    )
                    try:
                        model.generate(Prompt(messages=(Message("user", "hi"),)))
                    except ReplyRefused as refused:
                        held += "max_reply_bytes" in str(refused)
                else:
                    found = (
                        problem(Endpoint("agent", f"{first.url}/v1", "m", "openai", KEY_VARIABLE, cap)) or ""
                    )
                    held += "max_reply_bytes" in found
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
    worst = max(peaks) / cap
    return [
        Figure(
            "reply that never ends",
            f"{held}/2 cut at {cap >> 20} MB naming the bound; peak Python memory {worst:.1f}× the bound",
            held == 2 and worst < 8,
            trials=2,
        )
    ]


def usage_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """Usage values that are no token counts are malformed responses, named as such."""
    from pos_bench.models.openai import OpenAIModel
    from pos_bench.models.retry import TransientError
    from pos_bench.types import Message, Prompt
    from tests.models.stub_hostile_server import servers

    os.environ.setdefault(KEY_VARIABLE, "sk-network-usage-0123456789")
    values = ["-1", f"-{rng.randrange(2, 10**6)}", "Infinity", "-Infinity", "NaN", "1e400", "2.5", '"lots"']
    held = 0
    for value in values:
        with servers(f"usage:{value}") as (first, _):
            model = OpenAIModel("m", base_url=f"{first.url}/v1", api_key_env=KEY_VARIABLE, timeout=20)
            try:
                model.generate(Prompt(messages=(Message("user", "hi"),)))
            except TransientError as error:
                held += "malformed usage" in str(error)
    return [
        Figure(
            "usage that is no count",
            f"{held}/{len(values)} named a malformed usage",
            held == len(values),
            trials=len(values),
        )
    ]


def echoed_name_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """A server that names its model after the caller's key: the key is in no file and no line of output."""
    from tests.models.stub_hostile_server import servers

    key = "sk-echo-" + "".join(rng.choice("abcdef0123456789") for _ in range(32))
    root = tmp / "echoed-name"
    with servers("echo") as (first, _):
        out = cli(
            [
                "bench=toy",
                "bench.n_tasks=2",
                "bench.max_turns=1",
                "method=raw",
                "model=openai",
                "model.model=m",
                f"model.base_url={first.url}/v1",
                f"model.api_key_env={KEY_VARIABLE}",
                "runner.progress=false",
                "runner.check_endpoints=false",
            ],
            root,
            env={KEY_VARIABLE: key},
        )
        asked = sum(path.endswith("/chat/completions") for _, path, _ in first.seen)
    files = [p for p in root.rglob("*") if p.is_file()]
    leaks = sum(key.encode() in p.read_bytes() for p in files) + (key in out.stdout + out.stderr)
    return [
        Figure(
            "key echoed as the model's name",
            f"{asked} calls answered with the key as the served name; {len(files)} files, {leaks} with the key",
            asked > 0 and leaks == 0,
            leaked=leaks,
        )
    ]
