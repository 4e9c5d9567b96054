"""What the scenarios app does when a design is forked or deleted (``topology.signals``):
topology sends the signal inside its service's transaction and never imports this app."""

from __future__ import annotations

from django.dispatch import receiver

from scenarios.models import Run, Scenario
from topology.signals import design_deleting, design_forked

#: Fields a fork copies as they are (the rest point at the original design or its times).
_NOT_COPIED = {"id", "design", "created_by", "created", "updated"}


@receiver(design_forked, dispatch_uid="scenarios-copy-on-fork")
def copy_scenarios(sender, *, source, copy, user, **kwargs) -> None:
    """The fork gets a copy of every scenario of the source (not its runs: their results belong
    to the version they simulated)."""
    fields = [f.attname for f in Scenario._meta.concrete_fields if f.name not in _NOT_COPIED]
    Scenario.objects.bulk_create(
        [
            Scenario(design=copy, created_by=user, **{name: getattr(s, name) for name in fields})
            for s in Scenario.objects.filter(design=source).order_by("pk")
        ]
    )


@receiver(design_deleting, dispatch_uid="scenarios-cancel-on-delete")
def cancel_runs(sender, *, design, user, **kwargs) -> None:
    """Runs still queued or running on a design being deleted are cancelled first."""
    from scenarios.services import run_cancel

    for run in Run.objects.filter(scenario__design=design).active():
        run_cancel(run=run, user=user)
