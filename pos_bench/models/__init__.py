"""Model providers and the wrappers around them (role routing, cache, retries)."""
