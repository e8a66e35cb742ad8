"""The web edge (issue 21): the gateway serving a browser app over the Edge API (docs/web.md)."""

from adapters.web.server import WebConfig, WebEdge

__all__ = ["WebConfig", "WebEdge"]
