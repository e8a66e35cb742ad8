"""Who may use the bot where on Slack: allowed workspaces, channels and user groups.

Each list is optional (empty allows everything on that axis). User-group membership comes from
`usergroups.users.list` (scope `usergroups:read`), remembered for `ttl_s` so a busy channel does
not ask Slack on every message; a lookup that fails counts as "not a member" (refuse, never
guess in the user's favour).

Direct messages (a channel id starting with `D`; decision, docs/slack.md): the workspace and
user-group lists apply as everywhere; the channel list cannot name a DM, so `dms` decides —
None (SLACK_ALLOW_DMS unset) allows DMs exactly when no channel is restricted, True allows them
whatever the channel list says, False refuses them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

REFUSAL = "Sorry — this bot is not available to you here. Ask an admin to add you."
MembersOf = Callable[[str], Awaitable[frozenset[str]]]


def members_from(client: AsyncWebClient) -> MembersOf:
    async def members_of(usergroup: str) -> frozenset[str]:
        try:
            answer = await client.usergroups_users_list(usergroup=usergroup)
        except SlackApiError as refused:
            log.warning("usergroups.users.list %s: %s", usergroup, refused.response.get("error"))
            return frozenset()
        except Exception:  # an unreadable answer: refuse rather than guess
            log.warning("usergroups.users.list %s failed", usergroup, exc_info=True)
            return frozenset()
        return frozenset(answer.get("users") or [])

    return members_of


class SlackAccess:
    def __init__(
        self,
        members_of: MembersOf,
        *,
        teams: frozenset[str] = frozenset(),
        channels: frozenset[str] = frozenset(),
        usergroups: frozenset[str] = frozenset(),
        dms: bool | None = None,
        ttl_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._members_of = members_of
        self.teams, self.channels, self.usergroups = teams, channels, usergroups
        self.dms = dms
        self._ttl, self._clock = ttl_s, clock
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}

    async def allows(self, team_id: str | None, channel_id: str | None, user_id: str) -> bool:
        if self.teams and team_id not in self.teams:
            return False
        if is_direct(channel_id):
            if not (self.dms if self.dms is not None else not self.channels):
                return False
        elif self.channels and channel_id not in self.channels:
            return False
        if not self.usergroups:
            return True
        for group in sorted(self.usergroups):
            if user_id in await self.members(group):
                return True
        return False

    async def members(self, group: str) -> frozenset[str]:
        """A user group's members, remembered for `ttl_s`."""
        cached = self._cache.get(group)
        if cached and self._clock() - cached[0] < self._ttl:
            return cached[1]
        members = await self._members_of(group)
        self._cache[group] = (self._clock(), members)
        return members


def is_direct(channel_id: str | None) -> bool:
    """A direct message with the app: Slack's IM channel ids start with `D`."""
    return bool(channel_id) and str(channel_id).startswith("D")
