"""Serve the embedded SmolLM2 model over the OpenAI HTTP protocol on loopback.

llama.cpp's server inside xllamacpp answers `/v1/chat/completions`, `/v1/models` and `/health` on the
port it is given, so remote-provider code (the OpenAI SDK provider) can be tested end to end offline:

    python -m pos_bench.models.serve_local --port 8080      # then base_url http://127.0.0.1:8080/v1
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pos_bench.models.local import embedded_weights, server_params, start_server

SERVED_NAME = "smollm2"
"""The model id clients send and `/v1/models` lists."""


@contextmanager
def serve_embedded(
    port: int = 0, *, n_threads: int = 1, n_ctx: int = 8192, seed: int = 0, weights: str | None = None
) -> Iterator[str]:
    """Run the server on 127.0.0.1 while the block runs and yield its OpenAI base URL (`…/v1`).

    `port=0` picks a free port. Requests are greedy unless they set `temperature`. The server runs
    in background threads of this process and stops when the block exits.
    """
    params = server_params(
        Path(weights) if weights else embedded_weights(),
        n_threads=n_threads,
        n_ctx=n_ctx,
        seed=seed,
        port=port,
    )
    params.model_alias = {SERVED_NAME}
    server = start_server(params)
    try:
        yield f"{server.listening_address}/v1"
    finally:
        # Dropping the last reference runs the native destructor, which stops the HTTP and decode loops.
        del server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080, help="loopback port (0 picks a free one)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--weights", default=None, help="a GGUF file (default: the embedded SmolLM2)")
    args = parser.parse_args(argv)
    with serve_embedded(args.port, n_threads=args.threads, n_ctx=args.ctx, weights=args.weights) as base_url:
        print(f"serving {SERVED_NAME} at {base_url} (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
