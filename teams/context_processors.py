"""Template context every page gets: the user's teams and the current one (for the nav)."""

from __future__ import annotations

from teams.current import current_team, user_teams


def teams(request) -> dict:
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"current_team": current_team(request), "user_teams": list(user_teams(request.user))}
