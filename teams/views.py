"""Pages of accounts and teams: log in (saying how to get an account), the user's teams, one
team's members (admins invite by username, change roles, remove), and the team switcher.
Thin doors: forms in, ``teams.services`` out, every object through the permission module."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.template.defaultfilters import pluralize
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from teams import services
from teams.current import current_team, team_switch, user_teams
from teams.forms import InviteForm, RoleForm, TeamStartForm, TeamSwitchForm, add_service_errors
from teams.models import Team, TeamMembership
from teams.permissions import MANAGE, VIEW, actions_on, require, restrict, team_roles


def login_locked_out(request, response=None, credentials=None):
    """django-axes' answer to a login from a locked account or address (``AXES_LOCKOUT_CALLABLE``):
    the login page again, saying why and for how long, with 429 Too Many Requests."""
    from axes.models import AccessAttempt
    from django.contrib.auth.forms import AuthenticationForm
    from django.db.models import Sum

    minutes = settings.TWIN_LOGIN_COOLOFF_MINUTES
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    failures = AccessAttempt.objects.filter(username=username).aggregate(n=Sum("failures_since_start"))["n"]
    whose = (
        "for this account" if (failures or 0) >= settings.TWIN_LOGIN_FAILURE_LIMIT else "from this address"
    )
    form = AuthenticationForm(request, initial={"username": username})
    form.errors["__all__"] = form.error_class(
        [f"too many failed logins {whose}; try again in {minutes} minutes"]
    )
    context = {"form": form, "next": request.POST.get("next", ""), "demo": None}
    return render(request, "registration/login.html", context, status=429)


class LoginView(auth_views.LoginView):
    """The login page; in embedded demo mode (``make run``) it shows the demo account."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        demo = (
            settings.EMBEDDED_MODE
            and get_user_model().objects.filter(username=services.DEMO_USERNAME).exists()
        )
        context["demo"] = (
            {"username": services.DEMO_USERNAME, "password": services.DEMO_PASSWORD} if demo else None
        )
        return context


def _team(user, pk, action: str = VIEW) -> Team:
    return require(get_object_or_404(restrict(Team.objects.all(), user, VIEW), pk=pk), user, action)


def _membership(team: Team, pk) -> TeamMembership:
    return get_object_or_404(TeamMembership.objects.select_related("user", "team"), team=team, pk=pk)


@login_required
def team_list(request):
    """The user's teams with their role in each, and a form to start a new team."""
    form = TeamStartForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_start(name=form.cleaned_data["name"], user=request.user)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            # Starting a team never changes what the lists show: the user switches when ready.
            current = current_team(request)
            where = "it is not your current team"
            if current is not None:
                where = f"your current team is still “{current.name}”"
            messages.success(
                request,
                f"Team “{team.name}” created; {where}. Switch to it with the button below, "
                "and invite your team-mates by username.",
            )
            return redirect("teams:detail", pk=team.pk)
    roles = team_roles(request.user)
    teams = [
        {"team": t, "role": roles.get(t.pk)} for t in user_teams(request.user).prefetch_related("members")
    ]
    return render(
        request, "teams/team_list.html", {"teams": teams, "form": form}, status=400 if form.errors else 200
    )


@login_required
def team_detail(request, pk: int):
    """One team: its members and roles; admins see the invite form and role controls."""
    team = _team(request.user, pk)
    return _team_page(request, team, invite=InviteForm())


def _team_page(request, team: Team, *, invite: InviteForm, status: int = 200):
    members = TeamMembership.objects.filter(team=team).select_related("user").order_by("user__username")
    can = actions_on(team, request.user)
    context = {
        "team": team,
        "members": [
            {"membership": m, "form": RoleForm(initial={"role": m.role}, prefix=f"m{m.pk}")} for m in members
        ],
        "invite": invite,
        "can_manage": MANAGE in can,
        "designs": team.designs.count(),
    }
    return render(request, "teams/team_detail.html", context, status=status)


@login_required
@require_POST
def team_invite(request, pk: int):
    team = _team(request.user, pk, MANAGE)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            member = services.team_invite(
                team=team,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
                user=request.user,
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"{member.user} joined {team} as {member.get_role_display().lower()}.")
            return redirect("teams:detail", pk=team.pk)
    return _team_page(request, team, invite=form, status=400)


@login_required
@require_POST
def membership_role(request, pk: int, membership_pk: int):
    team = _team(request.user, pk, MANAGE)
    membership = _membership(team, membership_pk)
    form = RoleForm(request.POST, prefix=f"m{membership.pk}")
    if form.is_valid():
        try:
            services.membership_update(
                membership=membership, role=form.cleaned_data["role"], user=request.user
            )
        except ValidationError as error:
            messages.error(request, " ".join(m.split(": ", 1)[-1] for m in error.messages))
        else:
            messages.success(request, f"{membership.user} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "role: choose viewer, editor or admin")
    return redirect("teams:detail", pk=team.pk)


@login_required
@require_POST
def membership_remove(request, pk: int, membership_pk: int):
    """Remove a member (admins) or leave the team (anyone, for themselves)."""
    team = _team(request.user, pk)
    membership = _membership(team, membership_pk)
    leaving = membership.user_id == request.user.pk
    if not leaving:
        require(team, request.user, MANAGE)
    try:
        services.membership_remove(membership=membership, user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(m.split(": ", 1)[-1] for m in error.messages))
        return redirect("teams:detail", pk=team.pk)
    if leaving:
        messages.success(request, f"You left {team}.")
        return redirect("teams:list")
    messages.success(request, f"{membership.user} was removed from {team}.")
    return redirect("teams:detail", pk=team.pk)


@login_required
@require_POST
def team_switch_view(request):
    """The nav's switcher: make a team current, then go back where the user was."""
    form = TeamSwitchForm(request.POST)
    if form.is_valid():
        team = get_object_or_404(user_teams(request.user), pk=form.cleaned_data["team"])
        team_switch(request, team)
    back = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = resolve_url(settings.LOGIN_REDIRECT_URL)
    return HttpResponseRedirect(back)


@login_required
@never_cache
def account(request):
    """The user's account page: their API tokens for scripts (create one, whose secret is shown
    this once; revoke one; revoke them all). ``no-store``: the page may show a secret."""
    from teams import tokens

    issued = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            issued = tokens.api_token_create(user=request.user)
        elif action == "revoke":
            if tokens.api_token_revoke(user=request.user, token_key=request.POST.get("token", "")):
                messages.success(request, "The token was revoked: scripts using it get 401 now.")
            return redirect("account")
        elif action == "revoke-all":
            count = tokens.api_tokens_revoke_all(user=request.user)
            messages.success(request, f"{count} token{pluralize(count)} revoked.")
            return redirect("account")
        else:
            return redirect("account")
    context = {"tokens": tokens.api_tokens_of(user=request.user), "issued": issued}
    return render(request, "twin/account.html", context)


@login_required
@require_POST
def logout_everywhere(request):
    """Log out here and revoke every API token of the user (a lost laptop, a leaked script)."""
    from django.contrib.auth import logout

    from teams.tokens import api_tokens_revoke_all

    api_tokens_revoke_all(user=request.user)
    logout(request)
    return redirect(settings.LOGOUT_REDIRECT_URL)
