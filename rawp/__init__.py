"""RAWP protocol core: envelope and event models, file-reference tokens, errors, ids and time.

Pure: no sockets, no servers, no Quart, discord or slack imports (see tests/test_layout.py).
"""

__version__ = "0.1.0"
