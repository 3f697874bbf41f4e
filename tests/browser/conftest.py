"""The Dagster UI in a real Chromium, against a real ``dagster-webserver`` and ``dagster-daemon``.

One fresh DAGSTER_HOME, one daemon and one webserver (on a free port) are started for the whole package by the
``e2e`` fixture (a :class:`tests.e2e.conftest.E2E` with a ``webserver``), and stopped at its end. The tests seed
the state they start from with in-process runs (``e2e.prepare``), act through the browser (the ``ui`` fixture: a
Playwright page plus helpers) and check what happened through the CLI and the catalog, as the e2e tests do.
Every test takes screenshots of its steps (``ui.screenshot("1-backfill-dialog")``): into the test's temporary
folder, or, with ``BACKFILL_UPDATE_SCREENSHOTS=1`` (``make screenshots``), into ``docs/ui/``, where the README's
pictures live (a run that only checks leaves the committed pictures untouched: they differ in ids and times).

The scenarios share the daemon, so each works on its own days of October 2022 (seeded ``SEED_FROM..SEED_TO``):

    10-01..10-05  1. a backfill launched from the asset's partitions page (test_1_ui_backfill.py)
    10-06..10-12  2. reserved for the Launchpad ``backfill_request`` job (test_2_launchpad_request.py, not built yet)
    10-17         3. a defect day: the failed check and the version still serving (test_3_defect_day.py)

Chromium is Debian's (``apt-get install -y chromium``; ``playwright install`` cannot download browsers here), at
``$BACKFILL_CHROMIUM`` (default ``/usr/bin/chromium``). Without it the tests fail, they do not skip: CI installs it.
On a failure the daemon's and webserver's log tails are attached to the report, and the page's screenshot is
saved as ``<tmp>/ui/failed.png`` (named in the report).
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlencode, urlparse

import dagster as dg
import pytest
from playwright.sync_api import Browser, Page, Response, expect, sync_playwright

from backfill_assets.engine.store import db
from tests.e2e.conftest import E2E, Webserver, poll, prepare_home, start_daemon, stop_process, tail
from tests.orders import MODULE as CODE_LOCATION  # the webserver serves it with -m: its location name is the module

SEED_FROM, SEED_TO = "2022-10-01", "2022-10-20"
CHROMIUM_ENV = "BACKFILL_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"
UPDATE_SCREENSHOTS_ENV = "BACKFILL_UPDATE_SCREENSHOTS"
VIEWPORT = {"width": 1440, "height": 900}
# Generous: two cores shared with other test workers; Playwright's locators poll, these are only upper bounds.
UI_TIMEOUT_MS = 60_000
ADOPTION_TIMEOUT = 300.0

expect.set_options(timeout=UI_TIMEOUT_MS)


# ---- the browser (pytest-playwright's fixtures, pointed at the system Chromium) -----------------------------------


def chromium_path() -> str:
    """The Chromium binary to drive, or a test failure saying how to install it."""
    wanted = os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM
    found = shutil.which(wanted)
    if not found:
        pytest.fail(
            f"Chromium not found at {wanted!r} (${CHROMIUM_ENV}): the browser tests need it. "
            f"Run `apt-get install -y chromium`, or set {CHROMIUM_ENV} to a Chromium binary.",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="package")
def chromium() -> Iterable[Browser]:
    """Playwright and the system Chromium for this package only. Not pytest-playwright's session-scoped browser:
    Playwright's sync API keeps an event loop marked running on the test thread while it lives, and every later
    test of the worker that runs Dagster in process would then fail (an unawaited coroutine at loop shutdown)."""
    executable = chromium_path()
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


@pytest.fixture
def page(chromium: Browser) -> Iterable[Page]:
    # Times in the UI are shown in the browser's zone: UTC, like the catalog's.
    context = chromium.new_context(viewport=VIEWPORT, timezone_id="UTC", locale="en-US")
    try:
        yield context.new_page()
    finally:
        context.close()


# ---- the servers --------------------------------------------------------------------------------------------------


@dataclass
class BrowserE2E(E2E):
    """The e2e environment (CLI, catalog, in-process ``prepare``, the daemon) plus the webserver the browser uses."""

    webserver: Webserver

    def prepare(self, *args: Any, **kwargs: Any) -> None:
        """``E2E.prepare`` on a thread of its own. Playwright's sync API keeps its event loop marked running on the
        test's thread, so a Dagster in-process run there cannot shut its own loop down and leaves an unawaited
        coroutine behind (a RuntimeWarning: an error under ``filterwarnings = error``)."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(super().prepare, *args, **kwargs).result()

    def assert_daemon_alive(self) -> None:
        super().assert_daemon_alive()
        if self.webserver.proc.poll() is not None:
            code, log = self.webserver.proc.returncode, tail(self.webserver.log)
            pytest.fail(f"dagster-webserver exited with {code}; log tail:\n{log}", pytrace=False)

    def adopted(self, backfill_id: str, timeout: float = ADOPTION_TIMEOUT) -> dict:
        """The ledger's request ``dg-<backfill_id>``, once the adoption sensor has created it."""
        request_id = f"dg-{backfill_id}"
        return poll(
            lambda: {r["request_id"]: r for r in self.cli_json("request", "list")}.get(request_id),
            timeout,
            f"the adoption of Dagster backfill {backfill_id} as {request_id}",
            interval=1.0,
        )

    def run_log(self, dagster_run_id: str) -> str:
        return "\n".join(r.user_message for r in self.instance.all_logs(dagster_run_id))

    def log_tail(self) -> str:
        return f"{tail(self.daemon_log)}\n---- dagster-webserver ----\n{tail(self.webserver.log)}"


@pytest.fixture(scope="package")
def e2e(tmp_path_factory, chromium: Browser) -> Iterable[BrowserE2E]:
    # (chromium first: without it, fail before starting any server.)
    home = tmp_path_factory.mktemp("browser") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home, SEED_FROM, SEED_TO)
        # The webserver's "Join the Dagster community" dialog covers the page on a fresh home until dismissed once.
        (home / ".nux").mkdir()
        (home / ".nux" / "nux.yaml").write_text("seen: 1\n")
        instance = dg.DagsterInstance.get()
        try:
            webserver = Webserver(home)  # starts while the daemon does; both are waited for below
            try:
                daemon, daemon_log = start_daemon(instance, home)
                try:
                    webserver.wait_ready()
                    yield BrowserE2E(home, instance, daemon, daemon_log, webserver)
                finally:
                    stop_process(daemon)
            finally:
                stop_process(webserver.proc)
        finally:
            instance.dispose()
            db.dispose_all()


# ---- the UI helper ------------------------------------------------------------------------------------------------


@dataclass
class UI:
    """A page on the webserver and the few moves every scenario makes; scenario-specific clicks live in the tests."""

    page: Page
    base_url: str
    screenshots: Path

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.base_url}{path}")

    def goto_asset(self, asset: str, view: str = "overview", **params: str) -> None:
        """The asset's page on a tab: ``overview``, ``partitions``, ``events``, ``checks``, ``lineage``; extra
        query parameters select within it (``partition="2022-10-17"``, ``checkDetail="business_totals"``)."""
        self.goto(f"/assets/{asset}?{urlencode({'view': view, **params})}")

    def goto_backfill(self, backfill_id: str) -> None:
        self.goto(f"/runs/b/{backfill_id}")

    def goto_run(self, dagster_run_id: str) -> None:
        self.goto(f"/runs/{dagster_run_id}")

    def goto_job(self, job: str, tab: str = "") -> None:
        """A job of the orders code location: its overview, or ``tab="playground"`` (the Launchpad), ``runs``..."""
        self.goto(f"/locations/{CODE_LOCATION}/jobs/{job}" + (f"/{tab}" if tab else ""))

    def goto_launchpad(self, job: str) -> None:
        self.goto_job(job, "playground")

    def launch_from_launchpad(self, job: str, run_config_yaml: str, shot: str, timeout: float) -> str:
        """Write the run config in the job's Launchpad editor, launch, and return the run id once its page says
        Success."""
        page = self.page
        self.goto_launchpad(job)
        editor = page.locator(".CodeMirror").first
        expect(editor).to_be_visible()
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        # insert_text: no key events, so the editor does not auto-indent the YAML a second time.
        page.keyboard.insert_text(run_config_yaml)
        launch = page.get_by_role("button", name="Launch Run")
        expect(launch).to_be_enabled()
        self.screenshot(shot)
        launch.click()
        expect(page).to_have_url(re.compile(r"/runs/[0-9a-f-]{36}"))
        run_id = re.search(r"/runs/([0-9a-f-]{36})", page.url).group(1)
        expect(page.get_by_text("Success", exact=True).first).to_be_visible(timeout=timeout * 1000)
        return run_id

    def screenshot(self, name: str) -> Path:
        """The viewport as ``<screenshots>/<name>.png`` (animations stopped, no caret: only the content changes)."""
        self.screenshots.mkdir(parents=True, exist_ok=True)
        path = self.screenshots / f"{name}.png"
        self.page.screenshot(path=str(path), animations="disabled", caret="hide")
        return path

    def graphql_response(self, operation: str) -> Callable[[Response], bool]:
        """``with ui.page.expect_response(ui.graphql_response("LaunchPartitionBackfill")) as sent: ...``: the
        GraphQL exchange the UI makes for ``operation`` (its request's variables and the server's answer)."""

        def matches(response: Response) -> bool:
            if urlparse(response.url).path != "/graphql" or response.request.method != "POST":
                return False
            body = response.request.post_data_json
            return isinstance(body, dict) and body.get("operationName") == operation

        return matches


@pytest.fixture
def ui(page: Page, e2e: BrowserE2E, tmp_path: Path) -> UI:
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.set_default_navigation_timeout(UI_TIMEOUT_MS)
    screenshots = SCREENSHOTS if os.environ.get(UPDATE_SCREENSHOTS_ENV) else tmp_path / "ui"
    return UI(page, e2e.webserver.base, screenshots)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, attach the daemon's and the webserver's log tails to the report."""
    outcome = yield
    report = outcome.get_result()
    env = getattr(item, "funcargs", {}).get("e2e")
    if report.failed and isinstance(env, BrowserE2E):
        report.sections.append(("dagster-daemon and dagster-webserver logs (tail)", env.log_tail()))
    ui = getattr(item, "funcargs", {}).get("ui")
    if report.failed and report.when == "call" and isinstance(ui, UI):
        try:
            report.sections.append(("the page when it failed", str(ui.screenshot("failed"))))
        except Exception as exc:  # a closed page: the logs above still tell
            report.sections.append(("the page when it failed", f"no screenshot: {exc}"))
