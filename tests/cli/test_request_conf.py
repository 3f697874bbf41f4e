"""A request's run conf for an asset's own config (Airflow's "trigger with conf"), through the CLI on a real
instance: validated up front, frozen, given to one-interval and batched runs, part of the version's params digest,
and shown by `request show` and reconcile. The orders example's `order_facts` takes FxRates (usd_to_cny 7.1 and
eur_to_cny 7.8 by default). The example is a demo: each of its data assets also takes a deliberate defect
(``backfill_assets.defects``), whose two fields are part of every frozen conf, unset (``NO_DEFECT``)."""

from __future__ import annotations

import json

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.assets.chunks import CHUNK_JOB, op_name
from backfill_assets.integration.jobs import BACKFILL_JOB, PRODUCTION_JOB
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.sensors.driver import drive_request, run_config_for
from tests.driver_harness import drive
from tests.orders import DEFS, GRAPH, run_partitions

DAY = "2022-09-01"
NO_DEFECT = {"defect": None, "defect_days": {}}
DEFAULT_RATES = {"usd_to_cny": 7.1, "eur_to_cny": 7.8, **NO_DEFECT}
FX_FIX = {ORDER_FACTS: {"usd_to_cny": 8.0}}


def invoke(*args: str) -> dict | str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def create(assets: str, first: str, last: str, conf: dict | None = None, *extra: str) -> str:
    args = ["request", "create", "--assets", assets, "--from", first, "--to", last, "--reason", "FX fix", *extra]
    if conf is not None:
        args += ["--conf", json.dumps(conf)]
    return invoke(*args, "--json")["request_id"]


def created_and_driven(env, conf: dict, *extra: str, assets: str = f"{RAW_ORDERS},{ORDER_FACTS}",
                       last: str = DAY) -> str:
    request_id = create(assets, DAY, last, conf, *extra)
    drive(env, request_id)
    assert Ledger(env.catalog).get(request_id).status == M.COMPLETED
    return request_id


def expected_amounts_cny(env, rates: dict[str, float]) -> dict[str, float]:
    """order_id -> amount in CNY of its latest amendment, from the published raw_orders, at ``rates``."""
    raw = invoke("read", RAW_ORDERS, DAY, "--json")["records"]
    latest: dict[str, dict] = {}
    for row in sorted(raw, key=lambda r: r["updated_at"]):
        latest[row["order_id"]] = row
    per_unit = {"CNY": 1.0, "USD": rates["usd_to_cny"], "EUR": rates["eur_to_cny"]}
    return {o: round(r["amount"] * per_unit[r["currency"]], 2) for o, r in latest.items()}


def test_a_conf_changes_what_the_run_computes_and_the_published_data_says_so(env):
    request_id = created_and_driven(env, FX_FIX)
    published = {r["order_id"]: r for r in invoke("read", ORDER_FACTS, DAY, "--json")["records"]}
    fixed = expected_amounts_cny(env, {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]})
    assert {o: r["amount_cny"] for o, r in published.items()} == pytest.approx(fixed)
    # The fix touched only the dollars: the default rates would have given other USD amounts and the same rest.
    by_default = expected_amounts_cny(env, DEFAULT_RATES)
    usd = [o for o, r in published.items() if r["currency"] == "USD"]
    assert usd and all(published[o]["amount_cny"] != pytest.approx(by_default[o]) for o in usd)
    assert all(published[o]["amount_cny"] == pytest.approx(by_default[o]) for o in published if o not in usd)
    # What Dagster ran: the request's conf, normalized with the default EUR rate, as the op's run config.
    [run] = env.instance.get_runs(dg.RunsFilter(tags={"backfill/request_id": request_id}))
    assert run.run_config["ops"][ORDER_FACTS]["config"] == {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]}


def test_request_show_and_reconcile_show_the_conf_and_each_versions_params(env, tmp_path):
    request_id = created_and_driven(env, FX_FIX)
    frozen = {ORDER_FACTS: {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]}}
    shown = invoke("request", "show", request_id, "--json")
    assert shown["conf"] == frozen
    assert f"  conf {json.dumps(frozen, sort_keys=True)}" in invoke("request", "show", request_id).splitlines()

    report = invoke("reconcile", request_id, "--json")
    params = {c["asset"]: c["versions"][-1]["params"] for c in report["cells"]}
    assert params[ORDER_FACTS] == {"config": frozen[ORDER_FACTS]}
    assert params[RAW_ORDERS] == {"config": NO_DEFECT}  # not in the conf: its defaults
    human = invoke("reconcile", request_id, "--html", str(tmp_path / "r.html"))
    # The request's conf, then order_facts' cell line with the conf its version was computed with.
    assert f"conf {json.dumps(frozen, sort_keys=True)}" in " ".join(human.split())
    assert f"{ORDER_FACTS} published versions 1:PUBLISHED rows" in " ".join(human.split())
    assert f"conf {json.dumps(frozen[ORDER_FACTS], sort_keys=True)}" in " ".join(human.split())
    page = (tmp_path / "r.html").read_text()
    assert page.count('"usd_to_cny": 8.0') == 2  # the request's conf and the order_facts version's params


def test_a_different_conf_is_a_different_params_digest_and_the_same_conf_with_defaults_the_same(env):
    run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS])  # production: no conf at all
    [production] = env.catalog.versions_of(ORDER_FACTS, DAY)
    assert production.params == {"config": DEFAULT_RATES}

    def digest_of_request(conf: dict) -> tuple[str, str]:
        created_and_driven(env, conf, "--reprocess", "completed", assets=ORDER_FACTS)
        latest = env.catalog.versions_of(ORDER_FACTS, DAY)[-1]
        return latest.params_digest, latest.logical_run_id

    explicit_defaults = digest_of_request({ORDER_FACTS: {"usd_to_cny": 7.1}})
    fixed = digest_of_request(FX_FIX)
    # The defaults spelled out are the same parameters as none given: a retry or a re-run with them is the same.
    assert explicit_defaults[0] == production.params_digest
    assert fixed[0] != production.params_digest
    assert len({production.logical_run_id, explicit_defaults[1], fixed[1]}) == 3


def test_a_batched_run_gives_every_day_of_the_chunk_the_conf(env):
    request_id = created_and_driven(env, FX_FIX, "--partitions-per-run", "2", "--max-active", "1",
                                    last="2022-09-04")
    runs = env.instance.get_runs(dg.RunsFilter(tags={"backfill/request_id": request_id}))
    assert len(runs) == 2 and all(r.job_name == "backfill_chunk" for r in runs)
    for run in runs:
        assert run.run_config["ops"][op_name(ORDER_FACTS)]["config"]["usd_to_cny"] == 8.0
        assert "usd_to_cny" not in run.run_config["ops"][op_name(RAW_ORDERS)]["config"]
    for day in ("2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"):
        [version] = env.catalog.versions_of(ORDER_FACTS, day)
        assert version.params["config"] == {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]}
    published = {r["order_id"]: r["amount_cny"] for r in invoke("read", ORDER_FACTS, DAY, "--json")["records"]}
    assert published == pytest.approx(expected_amounts_cny(env, {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]}))


def test_the_driver_puts_the_conf_in_one_interval_and_in_chunk_run_configs(env):
    one = create(f"{RAW_ORDERS},{ORDER_FACTS}", DAY, DAY, FX_FIX)
    chunked = create(f"{RAW_ORDERS},{ORDER_FACTS}", "2022-09-02", "2022-09-05", FX_FIX, "--partitions-per-run", "2")
    ledger = Ledger(env.catalog)
    [single] = drive_request(GRAPH, env.instance, env.catalog, ledger.get(one), code_version())
    assert run_config_for(GRAPH, single) == {"ops": {ORDER_FACTS: {"config": {**DEFAULT_RATES, "usd_to_cny": 8.0}}}}
    batches = drive_request(GRAPH, env.instance, env.catalog, ledger.get(chunked), code_version())
    assert batches and all(b.batched for b in batches)
    for batch in batches:
        ops = run_config_for(GRAPH, batch)["ops"]
        assert ops[op_name(ORDER_FACTS)]["config"]["usd_to_cny"] == 8.0
        assert set(ops[op_name(RAW_ORDERS)]["config"]) == {"partitions"}


def test_dagster_takes_the_assets_fields_beside_the_gates_own_in_every_data_job():
    for job_name, op in ((PRODUCTION_JOB, ORDER_FACTS), (BACKFILL_JOB, ORDER_FACTS), (CHUNK_JOB, op_name(ORDER_FACTS))):
        job = DEFS.resolve_job_def(job_name)
        config = {"usd_to_cny": 7.3, "defect_days": {DAY: "drop_rows"}}
        resolved = dg.validate_run_config(job, {"ops": {op: {"config": config}}})
        assert resolved["ops"][op]["config"]["usd_to_cny"] == 7.3
        assert resolved["ops"][op]["config"]["eur_to_cny"] == 7.8  # the default, filled in by Dagster
        with pytest.raises(dg.DagsterInvalidConfigError):
            dg.validate_run_config(job, {"ops": {op: {"config": {"usd_rate": 7.3}}}})


def ledger_rows(env) -> dict[str, list[tuple]]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted(tuple(r) for r in conn.execute(sa.select(t)).all())
                for t in (schema.requests, schema.request_items, schema.claims)}


BAD_CONF = [
    pytest.param(ORDER_FACTS, {"no_such_asset": {}}, "--conf has unknown key 'no_such_asset'; allowed: "
                 "handoff_window_seconds, or a selected asset's config: order_facts", id="unknown-key"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: {"usd_rate": 8}}, "--conf order_facts has unknown field(s) 'usd_rate'; "
                 "FxRatesWithDefects allows: usd_to_cny, eur_to_cny, defect, defect_days", id="unknown-field"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: {"usd_to_cny": "eight"}}, "--conf order_facts.usd_to_cny: Value "
                 "\"eight\"", id="wrong-type"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: {"usd_to_cny": True}}, "--conf order_facts.usd_to_cny: true is a bool; "
                 "expected float", id="bool-for-a-number"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: {"usd_to_cny": 0}}, "--conf order_facts.usd_to_cny: Input should be "
                 "greater than 0", id="refused-by-the-class-own-validator"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: {"usd_to_cny": {"env": "USD_RATE"}}}, "--conf order_facts.usd_to_cny: "
                 "give the value itself; a request freezes its conf", id="environment-variable"),
    pytest.param(ORDER_FACTS, {ORDER_FACTS: 8.0}, "--conf order_facts must be an object of its config fields "
                 "(usd_to_cny, eur_to_cny, defect, defect_days)", id="section-not-an-object"),
    pytest.param(DAILY_REVENUE, FX_FIX, "--conf names asset 'order_facts', which this request does not run "
                 "(--assets daily_revenue)", id="asset-not-selected"),
    pytest.param(ORDER_FACTS, {RAW_ORDERS: {"x": 1}}, "--conf names asset 'raw_orders', which this request does not "
                 "run (--assets order_facts)",
                 id="upstream-not-run"),
    pytest.param(f"{ORDER_FACTS},{REVENUE_ALERT}", {REVENUE_ALERT: {"fx": 1}}, "--conf names asset 'revenue_alert', "
                 "which declares no config; configurable: order_facts", id="asset-without-config"),
]


@pytest.fixture(scope="module")
def one_request(refusal_env):
    """A request already in the ledger, so that "unchanged" means more than "still empty"."""
    return create(RAW_ORDERS, "2022-09-04", "2022-09-05")


@pytest.mark.parametrize("assets, conf, message", BAD_CONF)
@pytest.mark.parametrize("dry_run", [False, True], ids=["create", "dry-run"])
def test_a_bad_conf_is_one_line_exit_2_and_writes_no_ledger_row(refusal_env, one_request, assets, conf, message,
                                                                dry_run):
    env = refusal_env
    before = ledger_rows(env)
    args = ["request", "create", "--assets", assets, "--from", DAY, "--to", DAY, "--conf", json.dumps(conf)]
    result = CliRunner().invoke(cli, args + (["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.output
    assert ledger_rows(env) == before


def test_a_launchpad_request_freezes_the_same_normalized_conf(env):
    config = {"assets": [ORDER_FACTS], "from_day": DAY, "to_day": DAY, "conf": json.dumps(FX_FIX)}
    result = DEFS.resolve_job_def(REQUEST_JOB).execute_in_process(
        run_config={"ops": {REQUEST_OP: {"config": config}}}, instance=env.instance, raise_on_error=False
    )
    assert result.success
    [record] = Ledger(env.catalog).list()
    assert record.spec.conf == {ORDER_FACTS: {**DEFAULT_RATES, "usd_to_cny": 8.0}}
    assert record.spec.config_for(ORDER_FACTS) == {**DEFAULT_RATES, "usd_to_cny": 8.0}


def test_an_asset_a_cascade_adds_runs_with_the_requests_conf_for_it(env):
    """--assets raw_orders --downstream cascade: order_facts is not selected but the cascade runs it, so its conf
    section is accepted up front and the cascaded runs get it."""
    run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS])  # a published order_facts to cascade over
    request_id = create(RAW_ORDERS, DAY, DAY, FX_FIX, "--downstream", "cascade", "--reprocess", "completed")
    drive(env, request_id)
    cells = {(c.asset, c.decision) for c in Ledger(env.catalog).cells(request_id)}
    assert (ORDER_FACTS, M.PUBLISHED) in cells
    published = {r["order_id"]: r["amount_cny"] for r in invoke("read", ORDER_FACTS, DAY, "--json")["records"]}
    assert published == pytest.approx(expected_amounts_cny(env, {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]}))
    runs = env.instance.get_runs(dg.RunsFilter(tags={"backfill/request_id": request_id}))
    cascaded = [r for r in runs if ORDER_FACTS in (r.run_config.get("ops") or {})]
    assert cascaded and all(
        r.run_config["ops"][ORDER_FACTS]["config"] == {**DEFAULT_RATES, **FX_FIX[ORDER_FACTS]} for r in cascaded
    )
