#!/usr/bin/env bash
# Installs what bench=loca launches besides the `loca` Python extra: the two npm MCP servers and pdf-tools-mcp.
# Usage: bash scripts/loca_setup.sh [tools_dir]   (default ~/.cache/pos_bench/loca-tools = bench.tools_dir)
# pdf-tools-mcp declares Python >= 3.12 but runs on this project's 3.11, so it is installed without its
# dependencies (all in the `loca` extra) into <tools_dir>/python, which the servers' PYTHONPATH includes.
set -euo pipefail
TOOLS_DIR="${1:-$HOME/.cache/pos_bench/loca-tools}"
npm install --prefix "$TOOLS_DIR/npm" \
  @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31
uv pip install --no-deps --python-version 3.12 --target "$TOOLS_DIR/python" pdf-tools-mcp==0.1.4
echo "LOCA tools installed under $TOOLS_DIR"
