"""``trace``: from an external engine's id or label (a pod, a Spark application, a subprocess) to the version(s) it
computed (docs/ENGINES.md)."""

from __future__ import annotations

import click

from .app import AppContext, cli, emit, json_option


@cli.command()
@click.argument("ref")
@json_option
@click.pass_obj
def trace(app: AppContext, ref: str, as_json: bool) -> None:
    """Find the version(s) an external engine's id or label names: an engine id the engine reported (a pod name,
    a Spark application id, host:pid), a pod's backfill-assets.io/version-id label, a version id, or a logical or
    Dagster run id (every version of that run). Each is listed with its state and its engine ids; an id that
    names no version is an error.

    Example: backfill-assets trace spark-application-1718000000000 --json
    """
    traced = app.service().trace(ref)
    rows = [t.as_dict() for t in traced]

    def human() -> None:
        click.echo(f"{ref}: {len(rows)} version(s)")
        for r in rows:
            click.echo(f"  {r['version_id']}  {r['state']}  (matched by {r['matched_by']})  request "
                       f"{r['request_id'] or '-'}  lane {r['lane'] or '-'}  started {r['started_at']}")
            for e in r["engine_refs"]:
                click.echo(f"    {e['engine']} {e['engine_id']}  reported {e['at']}")

    emit(rows, as_json, human)
