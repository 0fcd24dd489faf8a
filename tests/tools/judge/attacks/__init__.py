"""Implementations that try to earn points without doing the work (see ../test_attacks.py)."""
