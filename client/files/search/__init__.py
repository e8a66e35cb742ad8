"""The local client's file index and fuzzy file search (DPS §16.1); see docs/file-search.md."""

from client.files.search.service import FileSearchService

__all__ = ["FileSearchService"]
