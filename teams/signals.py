"""Receivers of teams: a user's API tokens end when their password changes (whoever changed
it: the admin, ``manage.py changepassword``, a password form)."""

from __future__ import annotations

from django.conf import settings
from django.db.models.signals import pre_save
from django.dispatch import receiver


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="teams-revoke-tokens-on-password")
def revoke_tokens_on_password_change(sender, instance, update_fields=None, **kwargs):
    """A new password revokes every API token of the user: a token is a second password."""
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    old = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if old is not None and old != instance.password:
        from teams.tokens import api_tokens_revoke_all

        api_tokens_revoke_all(user=instance)
