"""Differential testing of the core's torch API models against real torch (see harness.py)."""
