"""Single-file HTML report of run folders (`python -m pos_bench.report RUN_DIR ... -o report.html`)."""
