"""Approvals: interaction prompts as buttons, their answers, and the audit records."""
