"""Forms of teams and members, and how every form of every app shows a service's errors."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from teams.choices import TeamRole


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Put a service's ``ValidationError`` on the form: next to the field it names (without the
    "field: " prefix the message carries for the API and the command line), else on top."""
    items = error.error_dict.items() if hasattr(error, "error_dict") else [(None, error.error_list)]
    for key, errors in items:
        field = key if key in form.fields else None
        for message in (m for e in errors for m in e.messages):
            if field is not None and message.startswith(f"{field}: "):
                message = message[len(field) + 2 :]
            form.add_error(field, message)


class TeamStartForm(forms.Form):
    name = forms.CharField(label="Team name", max_length=100)


class InviteForm(forms.Form):
    username = forms.CharField(label="Username", max_length=150)
    role = forms.ChoiceField(label="Role", choices=TeamRole.choices, initial=TeamRole.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=TeamRole.choices)


class TeamSwitchForm(forms.Form):
    team = forms.IntegerField(min_value=1, max_value=2**63 - 1)
