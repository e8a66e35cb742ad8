"""The master's tables (SQLAlchemy Core), one schema for SQLite and PostgreSQL.

Secrets are never stored in the clear where a fingerprint is enough: pairing tokens and the
master's refresh tokens are kept as SHA-256 fingerprints (`rawp.tokens.fingerprint`). The client's
credentials must be presented to the client, so they are stored as received (docs: operations).

Times are timezone-aware UTC datetimes. SQLite keeps them as text without a zone, so readers go
through `storage.db.utc()`; comparisons with "now" happen in Python, never in SQL.

The Edge API (next issue) extends these tables through new migrations: `users` gains profile
columns, `sessions` (created here for §4.1.8 pinning) gains edge bookkeeping, and usage records
and edge tickets get tables of their own. Migration 3 adds the approval audit (issue 15 §4).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from runtime.migrate import version_table

metadata = MetaData()


def _time(name: str, *, nullable: bool = True) -> Column:
    return Column(name, DateTime(timezone=True), nullable=nullable)


schema_version = version_table("schema_version", metadata, DateTime(timezone=True))

# A person, named by the platform that vouches for them: `discord:123`, `slack:T1:U2`, `local:me`.
users = Table(
    "users",
    metadata,
    Column("id", String(200), primary_key=True),
    _time("created_at", nullable=False),
)

# A paired local client (§3.3). `status` is `active` until DELETE /v1/nodes/self (§3.5) makes it
# `unregistered`; the row stays so sessions and usage keep their owner.
nodes = Table(
    "nodes",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False, index=True),
    Column("device_name", String(100), nullable=False),
    Column("client_address", String(2048), nullable=False),
    Column("status", String(20), nullable=False),
    # §3.3 client_credentials: what the master presents to the client. NULL once unregistered.
    Column("client_access_token", Text),
    Column("client_refresh_token", Text),
    _time("client_token_expires_at"),
    _time("paired_at", nullable=False),
    _time("last_seen_at"),
    _time("unregistered_at"),
)

# §3.1 pairing tokens, single use, bound to the user who asked for them.
pairing_tokens = Table(
    "pairing_tokens",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False),
    _time("created_at", nullable=False),
    _time("expires_at", nullable=False),
    _time("used_at"),
    Column("node_id", String(36)),
)

# §3.4 the master's refresh tokens: opaque, rotated on every use, revoked with the node.
refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("node_id", String(36), ForeignKey("nodes.id"), nullable=False, index=True),
    _time("issued_at", nullable=False),
    _time("expires_at", nullable=False),
    _time("rotated_at"),
    _time("revoked_at"),
)

# §4.1.1 one row per (node, scope): the latest accepted snapshot and its version.
config_scopes = Table(
    "config_scopes",
    metadata,
    Column("node_id", String(36), ForeignKey("nodes.id"), primary_key=True),
    Column("scope", String(20), primary_key=True),  # "limits" | "capabilities"
    Column("version", Integer, nullable=False),
    Column("snapshot", JSON, nullable=False),
    _time("effective_at", nullable=False),
    Column("reason", Text),
    _time("accepted_at", nullable=False),
)

# §4.1.8 sessions with the config pinned at init (M-PIN-02/04). The Edge API creates the rows.
sessions = Table(
    "sessions",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("node_id", String(36), ForeignKey("nodes.id"), nullable=False),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False),
    Column("agent_name", String(200), nullable=False),
    Column("workspace_path", Text),
    Column("status", String(20), nullable=False),  # rawp.session_state.SessionState
    Column("pinned_limits", JSON, nullable=False),
    Column("pinned_capabilities", JSON, nullable=False),
    Column("limits_version", Integer, nullable=False),
    Column("capabilities_version", Integer, nullable=False),
    _time("created_at", nullable=False),
    _time("updated_at", nullable=False),
    _time("terminated_at"),
    # §9.3.2 `last_activity_at`, added by migration 2 (written at most every few seconds).
    _time("last_activity_at"),
)
Index("ix_sessions_node_status", sessions.c.node_id, sessions.c.status)

# --- Edge API (RAWP §9), migration 2 ----------------------------------------------------------

# E-WS-07: every `session.usage` the relay saw, keyed by the frame's message_id so that a frame
# replayed after a reattach is counted once. Metrics (§9.2.2) are sums over these rows.
usage_records = Table(
    "usage_records",
    metadata,
    Column("message_id", String(36), primary_key=True),
    Column("session_id", String(36), ForeignKey("sessions.id"), nullable=False),
    Column("node_id", String(36), ForeignKey("nodes.id"), nullable=False),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False),
    _time("recorded_at", nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("tool_invocations", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
)
Index("ix_usage_node_time", usage_records.c.node_id, usage_records.c.recorded_at)

# §9.4 / A-22: single-use edge_ws_tickets, kept as fingerprints, bound to a session and a user.
edge_tickets = Table(
    "edge_tickets",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("session_id", String(36), ForeignKey("sessions.id"), nullable=False),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False),
    _time("created_at", nullable=False),
    _time("expires_at", nullable=False),
    _time("used_at"),
)

# --- Approval audit (issue 15 §4), migration 3 ------------------------------------------------

# One row per approval outcome the gateway reports: an answer, a refused press, an expiry. The
# owner (`user_id`) is the session's; `actor` is the platform subject who pressed (NULL for an
# expiry). Only a tool's name and a short preview of its input are kept, never the input.
approval_audit = Table(
    "approval_audit",
    metadata,
    Column("id", String(36), primary_key=True),  # the gateway's record id: a retry is one row
    Column("session_id", String(36), ForeignKey("sessions.id"), nullable=False),
    Column("node_id", String(36), ForeignKey("nodes.id"), nullable=False),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False),
    _time("recorded_at", nullable=False),
    Column("outcome", String(20), nullable=False),  # master.storage.audit.OUTCOMES
    Column("actor", String(200)),
    Column("platform", String(30), nullable=False),
    Column("interaction_id", String(200), nullable=False),
    Column("option_id", String(200)),
    Column("option_label", String(200)),
    Column("tool_name", String(200)),
    Column("input_preview", String(400)),
    Column("detail", String(400)),
)
Index("ix_audit_user_time", approval_audit.c.user_id, approval_audit.c.recorded_at)
Index("ix_audit_node_time", approval_audit.c.node_id, approval_audit.c.recorded_at)

# --- Budgets (issue 16 §4), migration 4 -------------------------------------------------------

# Usage summed per user (today, this month: the edge usage endpoint and budgets) and per session
# (tokens per session) — the node's index above serves the node sums.
Index("ix_usage_user_time", usage_records.c.user_id, usage_records.c.recorded_at)
Index("ix_usage_session", usage_records.c.session_id)

# One row per budget warning sent (master.edge.usage.budgets rule 4): the 80 % warning of a budget
# goes out once per period, whichever replica sees the prompt — the primary key decides.
budget_warnings = Table(
    "budget_warnings",
    metadata,
    Column("scope", String(250), primary_key=True),  # `user:<subject>` / `node:<id>`
    Column("budget", String(40), primary_key=True),  # master.services.budget_rules.KINDS
    Column("period", String(40), primary_key=True),  # `2026-12-03`, `2026-12`, a session id
    _time("sent_at", nullable=False),
)

# --- Scheduled prompts (issue 30 §5), migration 5 --------------------------------------------

# One row per schedule (master.edge.sessions.scheduler). `last_run_at` is the last tick that was
# claimed — by a conditional UPDATE, so replicas never both run one tick; `missed_runs` counts
# the ticks skipped because the master or the node was away (reported, never run late).
schedules = Table(
    "schedules",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(200), ForeignKey("users.id"), nullable=False, index=True),
    Column("node_id", String(36), ForeignKey("nodes.id"), nullable=False),
    Column("agent_name", String(200), nullable=False),
    Column("workspace_path", Text),
    Column("prompt", Text, nullable=False),
    Column("cron", String(200), nullable=False),  # 5 fields, in `timezone`
    Column("timezone", String(64), nullable=False),
    Column("paused", Boolean, nullable=False),
    _time("created_at", nullable=False),
    _time("last_run_at", nullable=False),
    Column("last_session_id", String(36)),
    Column("last_outcome", String(400)),
    Column("missed_runs", Integer, nullable=False),
)
