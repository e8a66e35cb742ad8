"""Redaction: credentials in text bound for a chat platform are found and replaced."""
