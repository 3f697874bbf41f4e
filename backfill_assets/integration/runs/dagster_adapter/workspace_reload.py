"""``backfill-assets-daemon`` reloads its workspace when the code changed, not every minute.

Dagster's daemon controller drops every code server and starts new ones each ``RELOAD_WORKSPACE_INTERVAL`` (60 s),
whatever happened, so that an edit reaches its sensors; each new server imports the code location again (3–4 s of
CPU on a 2-core machine, most of an idle daemon's cost; docs/PERFORMANCE.md, 'The daemon'). The webserver keeps its
servers until asked. Here the controller still looks every 60 s, but reloads only when:

- a location's code files changed (``code_files.fingerprint``: an edit is picked up as soon as Dagster's would be),
  or the workspace names other locations;
- a location failed to load, or its code server died (Dagster's reload is also its recovery);
- a location's files cannot be told from here (another interpreter, too many files): as Dagster does;
- ``reload_seconds`` passed since the last reload (what the fingerprint cannot see: an environment variable, a
  package upgraded outside the project).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from backfill_assets.integration.runs.code_files import CodeTarget, code_roots, fingerprint

from .origins import loadable_target


@dataclass
class ReloadState:
    """What the workspace was loaded from, and when."""

    fingerprint: tuple[str | None, ...] = ()
    reloaded_at: float = field(default_factory=time.monotonic)


def install_reload_on_change(controller, reload_seconds: float) -> None:
    """Make ``controller`` (a ``DagsterDaemonController``) reload its workspace only when ``reload_reason`` says."""
    from dagster._daemon import controller as controller_module

    dagster_check = controller.check_workspace_freshness
    state = ReloadState(fingerprint=workspace_fingerprint(controller))

    def check_workspace_freshness(last_workspace_update_time: float) -> float:
        if time.time() - last_workspace_update_time <= controller_module.RELOAD_WORKSPACE_INTERVAL:
            return last_workspace_update_time
        current = workspace_fingerprint(controller)
        reason = reload_reason(controller, state, current, reload_seconds)
        if reason is None:
            return time.time()  # fresh as of now: looked at again in a minute
        controller._logger.info("Reloading the workspace: %s", reason)  # the daemon's own log, beside Dagster's lines
        updated = dagster_check(last_workspace_update_time)
        if updated != last_workspace_update_time:  # reloaded (Dagster's own check keeps the time when it failed)
            state.fingerprint, state.reloaded_at = current, time.monotonic()
        return updated

    controller.check_workspace_freshness = check_workspace_freshness


def workspace_fingerprint(controller) -> tuple[str | None, ...]:
    """Per location of the workspace (by origin id), the fingerprint of its code files (None: cannot be told)."""
    marks: list[str | None] = []
    for origin in controller._workspace_process_context._origins:  # re-read: an edited workspace.yaml counts
        target = loadable_target(origin)
        roots = code_roots(_code_target(target)) if target is not None else None
        marks.append(origin.get_id())
        marks.append(fingerprint(roots) if roots else None)
    return tuple(marks)


def _code_target(target) -> CodeTarget:
    return CodeTarget(
        python_file=target.python_file,
        module_name=target.module_name or target.autoload_defs_module_name,
        package_name=target.package_name,
        working_directory=target.working_directory,
        executable_path=target.executable_path,
    )


def reload_reason(controller, state: ReloadState, current: tuple[str | None, ...], reload_seconds: float) -> str | None:
    """Why the workspace must be reloaded now, or None when what it loaded is still what it would load."""
    if current != state.fingerprint:
        return "a code location's files changed"
    if any(mark is None for mark in current[1::2]):
        return "a code location whose files cannot be watched reloads every minute, as Dagster's daemon does"
    broken = _broken_locations(controller)
    if broken:
        return f"code location {', '.join(broken)} failed to load or its code server stopped"
    if time.monotonic() - state.reloaded_at >= reload_seconds:
        return f"{reload_seconds:.0f} s since the last reload"
    return None


def _broken_locations(controller) -> list[str]:
    entries = controller._workspace_process_context.create_request_context().get_code_location_entries()
    broken = [name for name, entry in entries.items() if entry.load_error is not None]
    registry = controller._grpc_server_registry
    for entry in list(getattr(registry, "_active_entries", {}).values()) if registry is not None else []:
        process = getattr(entry, "process", None)  # an ErrorRegistryEntry has none: its server failed to start
        if process is None or process.server_process.poll() is not None:
            broken.append(str(entry.loadable_target_origin.module_name or entry.loadable_target_origin.python_file))
    return sorted(set(broken))
