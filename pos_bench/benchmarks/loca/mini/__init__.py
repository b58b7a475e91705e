"""mini-LOCA: three generated task families on in-process tools, written from scratch (SPEC-BENCH §3.7)."""
