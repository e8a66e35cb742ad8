"""What every RAWP process needs once, beneath the tiers: settings and command plumbing, logs,
task ownership, rate budgets, the Redis lease scripts, the migration lock, JSON bodies and
metrics access (docs/architecture.md, Layout). It imports only `rawp` (tests/test_layout.py).
"""
