"""What the PostgreSQL storages pass to dagster-postgres's constructors, read from their dagster.yaml config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster_postgres.utils import pg_url_from_config


def postgres_storage_args(config_value: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments dagster-postgres's own ``from_config_value`` passes, for a subclass to pass to ``cls``."""
    args: dict[str, Any] = {
        "postgres_url": pg_url_from_config(config_value),
        "should_autocreate_tables": config_value.get("should_autocreate_tables", True),
    }
    # Token authentication (an ``auth_provider`` block) came within 0.29.x: earlier releases accept no such block
    # and their constructors take no ``token_provider``, so it is passed only when configured.
    if config_value.get("auth_provider") is not None:
        from dagster_postgres.utils import get_token_provider_from_config

        args["token_provider"] = get_token_provider_from_config(config_value)
    return args


class BuiltFromItsConfig:
    """For a subclass of a dagster-postgres storage, placed before it: dagster-postgres's ``from_config_value``
    builds its own class, not ``cls``, so the subclass a dagster.yaml names would never be the one built."""

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **postgres_storage_args(config_value))
