"""LOCA-Bench: the role-grouped tool catalog, and mini-LOCA (`mini/`), the offline stand-in."""
