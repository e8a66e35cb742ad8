"""Usage: what users spend and approve: the usage book, budgets, usage reports, the audit."""
