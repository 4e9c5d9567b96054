"""Choices shared by models, forms and templates of the topology app."""

from __future__ import annotations

from django.db import models


class SwitchRole(models.TextChoices):
    LEAF = "leaf", "Leaf"
    SPINE = "spine", "Spine"
    CORE = "core", "Core"
    SCALEUP = "scaleup", "Scale-up (NVLink)"


class SwitchTier(models.IntegerChoices):
    """Tier codes; equal to ``topology.fabric.plan.SWITCH_TIERS`` indices."""

    LEAF = 0, "Leaf"
    SPINE = 1, "Spine"
    CORE = 2, "Core"
    SCALEUP = 3, "Scale-up"


class LinkTier(models.IntegerChoices):
    """Tier codes; equal to ``topology.fabric.plan`` link tier indices."""

    SERVER_LEAF = 0, "Server–leaf"
    LEAF_SPINE = 1, "Leaf–spine"
    SPINE_CORE = 2, "Spine–core"


class RackKind(models.IntegerChoices):
    COMPUTE = 0, "Compute"
    NETWORK = 1, "Network"


class FeedSide(models.IntegerChoices):
    A = 0, "A"
    B = 1, "B"


class ChangeAction(models.TextChoices):
    """What one history entry of a design records."""

    CREATED = "created", "Created"
    CHANGED = "changed", "Changed"
    ADDED = "added", "Added"
    REMOVED = "removed", "Removed"
    CATALOG = "catalog", "Catalog edit"


class BuildKind(models.TextChoices):
    GENERATE = "generate", "From a generator"
    FORK = "fork", "Fork"


class BuildStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Saving"
    SUCCEEDED = "succeeded", "Saved"
    FAILED = "failed", "Failed"


class Generator(models.TextChoices):
    RAIL_OPTIMIZED = "rail-optimized", "Rail-optimized (SuperPOD)"
    NVL72 = "nvl72", "GB200 NVL72 + fat-tree"
    FAT_TREE = "fat-tree", "Fat-tree"
    MANUAL = "manual", "Manual"
