"""Skeletons that docs/architecture.md shows; tests/test_architecture_doc.py keeps them fitting."""
