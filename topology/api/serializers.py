"""Shapes of designs, catalog entries and teams in the API. They only shape data: every rule is
the services' (generators name the parameter and its limit, the catalog loader the entry and
field, the design services the version that changed)."""

from __future__ import annotations

from rest_framework import serializers

from topology.choices import Generator, RackKind
from topology.models import Design, Rack

MAX_PK = 2**63 - 1


def id_field(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=MAX_PK, **kwargs)


class DesignSerializer(serializers.ModelSerializer):
    """A design with the totals computed when it was built (``summary``: GPUs, servers, racks,
    switches and links per tier, feeds, IT power, bisection)."""

    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    parameters = serializers.DictField(help_text="the generator's parameters after defaults")
    summary = serializers.DictField(help_text="totals computed when the design was built")

    class Meta:
        model = Design
        fields = (
            "id",
            "name",
            "description",
            "team",
            "team_name",
            "owner",
            "generator",
            "parameters",
            "summary",
            "version",
            "created",
            "updated",
        )
        read_only_fields = fields


class DesignCountsSerializer(serializers.Serializer):
    racks = serializers.IntegerField()
    servers = serializers.IntegerField()
    gpus = serializers.IntegerField()
    switches = serializers.DictField(child=serializers.IntegerField())


class DesignDetailSerializer(DesignSerializer):
    """A design with its totals and the row counts in the database now."""

    counts = DesignCountsSerializer(read_only=True)

    class Meta(DesignSerializer.Meta):
        fields = (*DesignSerializer.Meta.fields, "counts")
        read_only_fields = fields


class DesignCreateSerializer(serializers.Serializer):
    """Generate a design: a team, a name, a generator and its parameters (``server``, ``nodes``,
    ``oversubscription``, ``nic_gbps``, ``su_nodes``, ``switch``, ``tiers``...)."""

    team = id_field()
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, default="")
    generator = serializers.ChoiceField(
        choices=Generator.choices, help_text="manual designs are not generated"
    )
    params = serializers.DictField(help_text="the generator's parameters (server and nodes at least)")


class DesignUpdateSerializer(serializers.Serializer):
    """Rename or describe a design; ``version`` is the one you read (409 if it moved since)."""

    version = serializers.IntegerField(min_value=0, max_value=MAX_PK)
    name = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    description = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)


class DesignForkSerializer(serializers.Serializer):
    """Copy a design into a team (yours or another you may change designs in)."""

    team = id_field()
    name = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)


class RackSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(choices=RackKind.choices, read_only=True)

    class Meta:
        model = Rack
        fields = ("id", "name", "row", "column", "kind", "u_height", "power_budget_kw")
        read_only_fields = fields


class RackUpdateSerializer(serializers.Serializer):
    """Change a rack; ``version`` is the design version you read (409 if it moved since)."""

    version = serializers.IntegerField(min_value=0, max_value=MAX_PK)
    name = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    power_budget_kw = serializers.FloatField(required=False)


class CatalogSerializer(serializers.Serializer):
    """The whole catalog in the YAML form ``manage.py catalog import`` reads."""

    gpus = serializers.ListField(child=serializers.DictField())
    servers = serializers.ListField(child=serializers.DictField())
    switches = serializers.ListField(child=serializers.DictField())
    links = serializers.ListField(child=serializers.DictField())
    feeds = serializers.ListField(child=serializers.DictField())
