"""What every RAWP process needs once, beneath the tiers: settings and command plumbing, logs,
task ownership, rate budgets, the Redis lease, the migration lock, JSON bodies and metrics access
(docs/architecture.md, Layout). It imports only `rawp`, except the driver modules
(runtime.redis_lease …), which a process imports only when it uses that driver
(tests/test_layout.py).
"""
