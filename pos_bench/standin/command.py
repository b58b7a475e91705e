"""The stand-in's command line (`scripts/standin_server.py`): options → `Settings`, then serve until stopped.

Its first line on stdout is `standin: <base URL>`, so a program that starts it (`scripts/bench_fullsize.py`)
learns the port when `--port 0` picked a free one.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Sequence

from pos_bench.standin.server import Faults, Settings, StandinServer
from pos_bench.standin.service import ServiceModel

READY = "standin: "
"""What the line giving the base URL starts with."""


def arguments() -> argparse.ArgumentParser:
    service, faults, settings = ServiceModel(), Faults(), Settings()
    parser = argparse.ArgumentParser(
        description="An OpenAI-compatible stand-in endpoint on 127.0.0.1 (docs/fullsize.md)."
    )
    parser.add_argument("--port", type=int, default=0, help="loopback port (0: a free one)")
    parser.add_argument(
        "--tokens-per-s", type=float, default=service.tokens_per_s, help="decode speed of one request alone"
    )
    parser.add_argument(
        "--batch-tokens-per-s",
        type=float,
        default=service.batch_tokens_per_s,
        help="summed decode speed a full batch approaches",
    )
    parser.add_argument(
        "--prefill-tokens-per-s",
        type=float,
        default=service.prefill_tokens_per_s,
        help="uncached prompt tokens read per second, shared",
    )
    parser.add_argument(
        "--first-token-s",
        type=float,
        default=service.first_token_s,
        help="fixed latency before the prompt is read",
    )
    parser.add_argument("--max-batch", type=int, default=service.max_batch, help="requests served at once")
    parser.add_argument("--cache-tokens", type=int, default=settings.cache_tokens, help="prefix-cache room")
    parser.add_argument(
        "--rate-429", type=float, default=faults.rate_429, help="share of requests refused 429"
    )
    parser.add_argument("--rate-5xx", type=float, default=faults.rate_5xx, help="share answered 500")
    parser.add_argument(
        "--retry-after", type=float, default=faults.retry_after_s, help="Retry-After of a 429"
    )
    parser.add_argument("--seed", type=int, default=faults.seed, help="seed of the fault draws")
    parser.add_argument(
        "--reply-tokens",
        type=int,
        default=settings.reply_tokens,
        help="fewest output tokens per reply (schema-valid text, then spaces; up to max_tokens)",
    )
    parser.add_argument("--served-name", default=settings.served_name, help="the model id /v1/models lists")
    return parser


def settings_of(args: argparse.Namespace) -> Settings:
    return Settings(
        service=ServiceModel(
            tokens_per_s=args.tokens_per_s,
            batch_tokens_per_s=args.batch_tokens_per_s,
            prefill_tokens_per_s=args.prefill_tokens_per_s,
            first_token_s=args.first_token_s,
            max_batch=args.max_batch,
        ),
        faults=Faults(
            rate_429=args.rate_429, rate_5xx=args.rate_5xx, retry_after_s=args.retry_after, seed=args.seed
        ),
        served_name=args.served_name,
        cache_tokens=args.cache_tokens,
        reply_tokens=args.reply_tokens,
    )


def parse(argv: Sequence[str] | None = None) -> tuple[int, Settings]:
    """The port and the settings an argument list gives; a bad value exits with the parser's message."""
    parser = arguments()
    args = parser.parse_args(argv)
    try:
        return args.port, settings_of(args)
    except ValueError as error:
        parser.error(str(error))
        raise  # parser.error exits; this line keeps type checkers informed


def main(argv: Sequence[str] | None = None) -> int:
    port, settings = parse(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with StandinServer(settings, port=port) as server:
        print(f"{READY}{server.url}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0
