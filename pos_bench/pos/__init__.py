"""PoS cut by job: `method` (the Method the config names), `belief` (the records), `updater` (the belief
update call), `sentinel` (the consistency audit), `gaps`, `health` and `recovery` (pure), `view` (the prompt)."""
