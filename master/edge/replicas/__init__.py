"""Replicas: the relay shared by several master replicas through Redis (docs/scale-out.md)."""
