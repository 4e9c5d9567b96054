"""API tokens move from DRF's authtoken table (stored verbatim) to knox's (stored as digests):
each verbatim key becomes a knox token of the same secret, so no user loses a token (it gets
knox's expiry from now), and the verbatim copies are deleted."""

from django.db import migrations


def hash_verbatim_tokens(apps, schema_editor):
    from django.utils import timezone
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS, knox_settings

    Verbatim = apps.get_model("authtoken", "Token")
    Hashed = apps.get_model("knox", "AuthToken")
    ttl = knox_settings.TOKEN_TTL
    expiry = timezone.now() + ttl if ttl else None
    for old in Verbatim.objects.using(schema_editor.connection.alias).all():
        digest = hash_token(old.key)
        Hashed.objects.using(schema_editor.connection.alias).update_or_create(
            digest=digest,
            defaults={"token_key": old.key[: CONSTANTS.TOKEN_KEY_LENGTH], "user_id": old.user_id, "expiry": expiry},
        )
        Hashed.objects.using(schema_editor.connection.alias).filter(digest=digest).update(created=old.created)
    Verbatim.objects.using(schema_editor.connection.alias).all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0001_initial"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(hash_verbatim_tokens, migrations.RunPython.noop)]
