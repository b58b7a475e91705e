"""LOCA-Bench on a user's LOCA-bench checkout: real MCP servers and the upstream checkers (SPEC-BENCH §3)."""
