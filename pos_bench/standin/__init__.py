"""A stand-in for a served model: an OpenAI-compatible loopback endpoint that answers at the pace of a
vLLM-like deployment, so a sweep can be played at full size before anyone pays for one (issue 44).

- `service.py`: the batch-throughput model and the clock that applies it (real or simulated time);
- `prefix.py`: the prefix cache behind `cached_tokens`;
- `instance.py`: the smallest value a JSON schema accepts;
- `replies.py`: the reply to one request (schema-valid, a legal action for a policy);
- `wire.py`: the OpenAI shapes it sends; `server.py`: the HTTP server;
- `command.py`: its command line (`python -m pos_bench.standin`, `scripts/standin_server.py`).

`docs/fullsize.md` gives the model's parameters and where they come from.
"""
