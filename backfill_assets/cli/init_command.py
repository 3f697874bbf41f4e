"""``backfill-assets init``: a new project, or what an existing one lacks (backfill_assets.scaffold)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backfill_assets.scaffold.project import HOME, FileOutcome, ProjectSpec, ScaffoldResult, scaffold

from .app import cli, emit, json_option


@cli.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--module", default=None, help="The project's Python package (default: the folder's name).")
@click.option("--timezone", default="UTC", show_default=True, help="The business timezone of its daily partitions.")
@click.option("--start", default="2024-01-01", show_default=True, help="Its first business day, YYYY-MM-DD.")
@json_option
def init(folder: Path, module: str | None, timezone: str, start: str, as_json: bool) -> None:
    """Write a Dagster project that uses backfill_assets into FOLDER (created if missing): pyproject.toml
    ([tool.dagster] for dagster's CLIs, [tool.dg] for dg's), .dagster_home/dagster.yaml (run queue, run launcher,
    limits), one gated asset and its test. A file that exists is never overwritten: init says what it lacks
    (exit status 1 until nothing is lacking); a dagster.yaml with the run queue's limits and run monitoring is
    complete whatever classes it names, and a note lists the library's optional accelerators it does not use.

    Example: backfill-assets init my_meters --timezone Europe/Berlin --start 2024-01-01
    """
    result = scaffold(ProjectSpec.of(folder, module, timezone, start))
    payload = {
        "folder": str(folder.resolve()), "module": result.spec.module,
        "files": [{"path": f.path, "outcome": f.outcome.value, "advice": f.advice} for f in result.files],
    }
    emit(payload, as_json, lambda: _print(result, folder))
    if result.incomplete:
        sys.exit(1)  # the project is not ready until the user adds what was named


def _print(result: ScaffoldResult, folder: Path) -> None:
    for item in result.files:
        click.echo(f"{item.outcome.value:>10}  {item.path}")
    for item in result.incomplete:
        click.echo(f"\n{item.path} lacks what the project needs: {item.advice}")
    for item in result.files:
        if item.outcome is FileOutcome.KEPT and item.advice:
            click.echo(f"\n{item.path}: note: {item.advice}")
    written = [f for f in result.files if f.outcome is FileOutcome.WRITTEN]
    if result.incomplete:
        return
    click.echo(
        f"\n{len(written)} file(s) written. Next:\n"
        f"  cd {folder}\n"
        f"  export DAGSTER_HOME=$PWD/{HOME}\n"
        "  pytest -q && dg check defs && dg list defs\n"
        "  dagster dev    # the UI and the daemon (or backfill-assets-daemon run, without the UI)"
    )
