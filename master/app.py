"""The master's Quart application (RAWP §3, §4.1, §7).

`create_app(settings, clock)` wires the blueprints and one error policy: every `RawpError`
becomes its §7.1 body and status; an unknown route or method becomes a 404/405 with the same
body; anything else is logged here and answered `500 INTERNAL_ERROR` without a stack trace.
Services are built when the app starts serving (database migrated, signing key loaded) and
closed when it stops.
"""

from __future__ import annotations

import logging

from quart import Quart, request, websocket
from werkzeug.exceptions import HTTPException

from master.api import auth, health, metrics, nodes
from master.api.common import EXTENSION
from master.edge.api import rest as edge_api
from master.edge.api import ws as edge_ws
from master.metrics import MasterMetrics
from master.settings import MasterSettings
from master.wiring import build_services
from rawp.clock import SYSTEM_CLOCK, Clock, is_uuid4, new_id
from rawp.errors import RawpError
from runtime.logs import REQUEST_ID, SESSION_ID
from runtime.rate_limit import RateLimiter

log = logging.getLogger("rawp.master")

HTTP_CODES = {
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    408: "REQUEST_TIMEOUT",
}


def create_app(
    settings: MasterSettings, clock: Clock = SYSTEM_CLOCK, limiter: RateLimiter | None = None
) -> Quart:
    app = Quart("master")
    # Quart refuses larger bodies before reading them; json_body() checks again by size.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = True
    app.register_blueprint(auth.blueprint)
    app.register_blueprint(health.blueprint)
    app.register_blueprint(nodes.blueprint)
    app.register_blueprint(edge_api.blueprint)  # Edge API (RAWP §9), master/edge
    app.register_blueprint(edge_ws.blueprint)
    app.register_blueprint(metrics.blueprint)
    app.after_request(nodes.add_legacy_warning)
    app_metrics = MasterMetrics()  # this app's own registry (several apps in one test process)

    _name_what_is_served(app)

    @app.before_serving
    async def start() -> None:
        app.extensions[EXTENSION] = services = await build_services(
            settings, clock, limiter, app_metrics
        )
        if services.edge is not None:
            await services.edge.start()  # reattach sessions a previous process left (Edge API)

    @app.after_serving
    async def stop() -> None:
        services = app.extensions.pop(EXTENSION, None)
        if services is not None:
            await services.close()

    _answer_errors(app)
    return app


def _name_what_is_served(app: Quart) -> None:
    """runtime.logs rule 1: every line logged while serving a request or a socket names it."""

    @app.before_request
    async def name_the_request() -> None:
        # runtime.logs rule 1: every line logged while serving it names this request, and the
        # session its path names (the task serving a request ends with it: no reset).
        REQUEST_ID.set(new_id())
        session_id = (request.view_args or {}).get("session_id")
        if isinstance(session_id, str) and is_uuid4(session_id):  # never raw input in a log
            SESSION_ID.set(session_id)

    @app.before_websocket
    async def name_the_socket() -> None:
        REQUEST_ID.set(new_id())
        session_id = websocket.args.get("session_id")
        if session_id and is_uuid4(session_id):
            SESSION_ID.set(session_id)

    @app.after_request
    async def tell_the_request_id(response):
        request_id = REQUEST_ID.get()
        if request_id is not None:
            response.headers["X-Request-Id"] = request_id
        return response


def _answer_errors(app: Quart) -> None:
    """The one error policy (module docstring): §7.1 bodies, never a stack trace."""

    @app.errorhandler(RawpError)
    async def rawp_error(error: RawpError):
        return error.to_body(), error.status, error.headers

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException):
        status = error.code or 500
        code = HTTP_CODES.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL_ERROR")
        headers = {}
        if status == 405 and getattr(error, "valid_methods", None):
            headers["Allow"] = ", ".join(error.valid_methods)
        return {"error_code": code, "message": error.description or error.name}, status, headers

    @app.errorhandler(Exception)
    async def unexpected(error: Exception):
        log.exception("unhandled error while serving a request")
        body = {"error_code": "INTERNAL_ERROR", "message": "internal error; see the master's log"}
        return body, 500
