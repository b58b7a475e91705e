"""A finished run in the formats other tools read; `python -m pos_bench.export` is the command line."""
