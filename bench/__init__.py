"""Benchmarks: scripts that print measured figures against their targets."""
