"""Replicas: leases and routing between gateway replicas, and the shared platform budget."""
