"""Bad input, generated: hypothesis drives the CLI (click's CliRunner) and the core entry points.

Every case ends in exactly one of two ways: a correct result, or exit 2 with one line ``error: …`` on stderr,
nothing on stdout, no row changed in any catalog table, and no file created anywhere. Never a traceback.
The CLI runs against a SQLite and a PostgreSQL catalog (PostgreSQL refuses NUL characters and over-long
strings that SQLite stores). Example counts: modest in the normal run, large in slow mode.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.identity import RunIdentity, make_version_id, parse_version_id
from backfill_assets.engine.model.intervals import BusinessCalendar, load_timezone, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.examples.orders.domain import DATA_ASSETS, ORDER_FACTS, RAW_ORDERS
from tests.orders import CALENDAR as calendar
from tests.orders import GRAPH, run_partitions

from . import mode
from .bad_input_strategies import (
    DAY,
    FIRST_DAY,
    PATH_TRICKS,
    PROFILE,
    dates,
    json_values,
    names,
    nested,
    weird_text,
)
from .fuzz_harness import BACKENDS, Fuzz, run_property

# Each test's budget only catches a hang: the slowest took 31 s in a 24-minute suite and passed 120 s in a 41-minute
# one on a machine three times slower (all its work is CLI calls on CPU the whole suite shares).
HANG_SECONDS = 900

# ---- the harness (fuzz_harness.py) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz(module_envs, tmp_path_factory):
    built = {}
    for backend in BACKENDS:
        env = module_envs(f"fuzz-{backend}", backend=backend)
        runs = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS])
        assert all(r.success for r in runs), runs
        built[backend] = env
    cwd = tmp_path_factory.mktemp("cwd")
    return Fuzz(built, [module_envs.base, cwd], cwd)


backends = st.sampled_from(BACKENDS)

# ---- dates and ranges ---------------------------------------------------------------------------------------


def expected_range(first: str, last: str) -> list[str] | None:
    """The oracle: the partitions a request over [first, last] must get, or None when it must be refused."""
    import re

    if not all(isinstance(x, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", x) for x in (first, last)):
        return None
    try:
        a, b = date.fromisoformat(first), date.fromisoformat(last)
    except ValueError:
        return None
    newest = calendar.newest_complete_key(utc_now())  # now, not at collection: midnight may have passed since
    if a < FIRST_DAY or b < a or newest is None or b > date.fromisoformat(newest):
        return None
    return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_dates_and_ranges_are_refused_in_one_line_or_expanded_exactly(fuzz, trials):
    @PROFILE
    @given(backend=backends, first=dates, last=dates, dry=st.booleans())
    def prop(backend, first, last, dry):
        args = ["request", "create", "--assets", ORDER_FACTS, "--from", first, "--to", last, "--json"]
        result = fuzz.run(backend, args + (["--dry-run"] if dry else []))
        expected = expected_range(first, last)
        if result is None:
            assert expected is None or len(expected) > 20_000 or not dry, f"refused a valid range {first}..{last}"
            return
        assert expected is not None, f"accepted {first!r}..{last!r}"
        out = json.loads(result.stdout)
        if dry:
            assert [c["partition_key"] for c in out["cells"]] == expected
        else:
            assert out["partitions"] == expected and out["status"] == "open"
            Ledger(fuzz.envs[backend].catalog).cancel(out["request_id"])  # release the claims

    run_property(trials, "input.dates_and_ranges", fuzz, prop)


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_partition_dates_for_read_versions_and_seed_never_crash(fuzz, trials):
    @PROFILE
    @given(backend=backends, day=dates, command=st.sampled_from(["read", "versions", "rollback", "seed"]))
    def prop(backend, day, command):
        if command == "seed":
            args = ["seed", "--from", day, "--to", day, "--orders-per-day", "1", "--json"]
        elif command == "rollback":
            args = ["rollback", ORDER_FACTS, day, "--reason", "fuzz", "--json"]
        else:
            args = [command, ORDER_FACTS, day] + (["--json"] if command == "versions" else [])
        result = fuzz.run(backend, args)
        if result is not None and command in ("read", "rollback"):
            assert day == DAY, f"{command} accepted {day!r}"
        elif result is not None:
            assert day_is_valid(day), f"{command} accepted {day!r}"

    run_property(trials, "input.dates_and_ranges", fuzz, prop)


def day_is_valid(day: str) -> bool:
    try:
        return calendar.day_of_key(day) >= FIRST_DAY
    except InvalidInput:
        return False


# ---- timezones (core) ---------------------------------------------------------------------------------------

ZONES = ["Asia/Shanghai", "America/New_York", "Europe/London", "UTC", "Etc/GMT+12", "Pacific/Kiritimati",
         "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kathmandu", "posixrules", "localtime", "Factory",
         "zoneinfo/UTC", "../../etc/passwd", "/etc/localtime", "Asia/../UTC", "UTC\x00", "utc", "asia/shanghai",
         "Asia/Shanghai ", "Asia//Shanghai", "Asia/Shanghai/", "EST5EDT", "GMT+8", "+08:00", "Z", "__init__",
         "tzdata", "Asia/Shanghai\n", "\udcff"]


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_timezones_are_refused_or_give_whole_days(fuzz, trials):
    @PROFILE
    @given(name=st.one_of(st.sampled_from(ZONES), weird_text, st.sampled_from(PATH_TRICKS)),
           day=st.one_of(st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 30)), st.dates()))
    def prop(name, day):
        fuzz.examples += 1
        try:
            zone = load_timezone(name)
        except InvalidInput as exc:
            assert "\n" not in str(exc)
            with pytest.raises(InvalidInput):
                BusinessCalendar(name, day)
            return
        assert zone.key == name
        cal = BusinessCalendar(name, day)
        if not date(1, 1, 2) <= day <= date(9999, 12, 30):
            with pytest.raises(InvalidInput):
                cal.interval(day.isoformat())
            return
        interval = cal.interval(day.isoformat())
        hours = interval.duration.total_seconds() / 3600
        assert 20 <= hours <= 28, f"{name} {day}: a business day of {hours} h"
        assert interval.start.date() == day and interval.end.date() == day + timedelta(days=1)
        assert cal.key_of(interval.start_utc) == day.isoformat()

    run_property(trials, "input.timezones", fuzz, prop)


# ---- asset selections ---------------------------------------------------------------------------------------


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_asset_selections_are_refused_in_one_line_or_planned_exactly(fuzz, trials):
    parts = st.one_of(st.sampled_from(sorted(GRAPH.names)), names)
    separators = st.sampled_from([",", ", ", " ,", ",,", ";", " "])

    @PROFILE
    @given(backend=backends, chosen=st.lists(parts, max_size=6), sep=separators)
    def prop(backend, chosen, sep):
        selection = sep.join(chosen)
        args = ["request", "create", "--assets", selection, "--from", DAY, "--to", DAY, "--dry-run", "--json"]
        result = fuzz.run(backend, args)
        picked = [s.strip() for s in selection.split(",") if s.strip()]
        valid = bool(picked) and len(set(picked)) == len(picked) and all(p in GRAPH.names for p in picked)
        if result is None:
            assert not valid, f"refused a valid selection {selection!r}"
            return
        assert valid, f"accepted {selection!r}"
        cells = json.loads(result.stdout)["cells"]
        assert {c["asset"] for c in cells} == set(picked) and all(c["partition_key"] == DAY for c in cells)

    run_property(trials, "input.asset_selection", fuzz, prop)


# ---- --conf JSON --------------------------------------------------------------------------------------------


def valid_confs():
    """Confs stored exactly as given: an asset section names every field of its config (a request freezes the
    defaults it was not given)."""
    defect = st.sampled_from(["drop_rows", "duplicate_keys", "bad_schema"])
    days = st.dictionaries(st.just(DAY), defect, max_size=1)
    section = st.builds(lambda d: {"usd_to_cny": 7.1, "eur_to_cny": 7.8, "defect": None, "defect_days": d}, days)
    window = st.integers(1, 30 * 86400)
    optional = {ORDER_FACTS: section, "handoff_window_seconds": window}
    return st.fixed_dictionaries({}, optional=optional).map(json.dumps)


ORDER_FACTS_DEFAULTS = {"usd_to_cny": 7.1, "eur_to_cny": 7.8, "defect": None, "defect_days": {}}


def stored_form(conf: str) -> dict:
    """What a request freezes of an accepted conf: an asset's section with the defaults it was not given."""
    given = json.loads(conf) if conf else {}
    return {key: {**ORDER_FACTS_DEFAULTS, **value} if key == ORDER_FACTS else value for key, value in given.items()}


conf_texts = st.one_of(
    valid_confs(),
    json_values().map(json.dumps),
    st.dictionaries(st.sampled_from([ORDER_FACTS, "handoff_window_seconds", "x", ""]), json_values(8),
                    max_size=3).map(json.dumps),
    st.integers(1, 200).map(nested),
    st.integers(60_000, 70_000).map(lambda n: json.dumps({"handoff_window_seconds": 60, "pad": "x" * n})),
    st.integers(60_000, 70_000).map(lambda n: json.dumps({ORDER_FACTS: {"defect_days": {DAY: "x" * n}}})),
    st.sampled_from(["[" * 100_000, "{" * 50_000, '{"a":' * 50_000, "1e999999", "NaN",
                     '{"handoff_window_seconds": NaN}',
                     '{"handoff_window_seconds": 1e3}', '{"handoff_window_seconds": true}', '{"order_facts": null}',
                     '{"order_facts": {"defect_days": {"2022-09-01": 7}}}', '{"a": 1, "a": 2}', "\x00", "",
                     '{"order_facts": {"defect_days": {"../../x": "drop_rows"}}}', '{"\\u0000": 1}',
                     '{"revenue_alert": {"defect_days": {"2022-09-01": "drop_rows"}}}', '"\\ud800"']),
    weird_text,
)


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_conf_json_is_refused_in_one_line_or_stored_exactly(fuzz, trials):
    @PROFILE
    @given(backend=backends, conf=conf_texts)
    def prop(backend, conf):
        args = ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--conf", conf, "--json"]
        result = fuzz.run(backend, args)
        if result is None:
            return
        out = json.loads(result.stdout)
        assert out["conf"] == stored_form(conf), "the stored conf differs from the given one"
        Ledger(fuzz.envs[backend].catalog).cancel(out["request_id"])

    run_property(trials, "input.conf_json", fuzz, prop)


# ---- names, keys and ids with path tricks -------------------------------------------------------------------

ID_COMMANDS = [
    (["reconcile"], (0, 1)), (["request", "show"], (0,)), (["request", "cancel"], (0,)),
    (["request", "confirm"], (0,)), (["request", "wait"], (0, 1, 3)), (["handoff", "accept"], (0,)),
    (["handoff", "decline"], (0,)),
]


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=900 if mode.SLOW else HANG_SECONDS))
def test_generated_names_keys_and_ids_never_escape_the_warehouse_or_crash(fuzz, trials):
    @PROFILE
    @given(data=st.data(), backend=backends)
    def prop(data, backend):
        kind = data.draw(st.sampled_from(["cell", "version", "id", "who", "gc"]))
        if kind == "cell":
            asset, key = data.draw(names), data.draw(st.one_of(dates, names))
            command = data.draw(st.sampled_from(["read", "versions", "rollback"]))
            args = [command, asset, key] + (["--reason", "fuzz"] if command == "rollback" else [])
            result = fuzz.run(backend, args)
            if result is not None:
                valid_day = key == DAY if command != "versions" else day_is_valid(key)
                # versions also answers for a side-effect asset (its outbox deliveries); read/rollback need data.
                known = GRAPH.names if command == "versions" else DATA_ASSETS
                assert asset in known and valid_day, f"{command} accepted {asset!r} {key!r}"
        elif kind == "version":
            version = data.draw(st.one_of(names, st.builds("/".join, st.lists(names, min_size=4, max_size=4))))
            command = data.draw(st.sampled_from(["read", "rollback"]))
            args = ([command, ORDER_FACTS, DAY, "--version", version] if command == "read"
                    else [command, ORDER_FACTS, DAY, "--reason", "fuzz", "--to", version])
            fuzz.run(backend, args)
        elif kind == "id":
            command, ok = data.draw(st.sampled_from(ID_COMMANDS))
            extra = ["--timeout", "0"] if command[-1] == "wait" else []
            fuzz.run(backend, [*command, data.draw(names), *extra], ok_codes=ok)
        elif kind == "who":
            field = data.draw(st.sampled_from(["--requested-by", "--approved-by", "--reason", "--reader", "rollback"]))
            value = data.draw(st.one_of(names, st.text(max_size=300),
                                        st.text(alphabet=st.characters(codec=None), max_size=2100)))
            if field == "--reader":
                args = ["read", ORDER_FACTS, DAY, "--reader", value]
            elif field == "rollback":
                args = ["rollback", ORDER_FACTS, DAY, "--reason", value]
            else:
                args = ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, field, value,
                        "--json"]
                if field == "--approved-by":
                    args[3] = f"{ORDER_FACTS},revenue_alert"
                    args += ["--allow-side-effects", "revenue_alert"]
            result = fuzz.run(backend, args)
            if result is not None and field not in ("--reader", "rollback"):
                Ledger(fuzz.envs[backend].catalog).cancel(json.loads(result.stdout)["request_id"])
        else:
            days = data.draw(st.one_of(st.integers(-10, 10**12).map(str), names))
            fuzz.run(backend, ["gc", "--older-than", days, "--dry-run", "--json"])

    run_property(trials, "input.names_and_keys", fuzz, prop)


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else HANG_SECONDS))
def test_generated_names_reach_no_path_outside_the_warehouse_root_in_core(fuzz, trials, tmp_path):
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    root = (tmp_path / "warehouse").resolve()
    catalog = Catalog(fuzz.envs["sqlite"].settings.catalog_url)

    @PROFILE
    @given(asset=names, key=st.one_of(dates, names), run_id=names, attempt=st.integers(-2, 10**6))
    def prop(asset, key, run_id, attempt):
        fuzz.examples += 1
        try:
            path = warehouse.version_dir(asset, key, run_id, attempt)
        except InvalidInput as exc:
            assert "\n" not in str(exc).replace("\\n", "")
        else:
            assert root in Path(str(path)).resolve().parents, f"{path} is outside {root}"
        try:
            version_id = make_version_id(asset, key, run_id, attempt)
        except InvalidInput:
            pass
        else:
            assert parse_version_id(version_id) == (asset, key, run_id, attempt)
            # A prefixed asset (berlin/daily_usage) adds its own separators; the id's last three stay fixed.
            assert version_id.count("/") == 3 + asset.count("/")
        for call in (lambda: catalog.current(asset, key), lambda: catalog.versions_of(asset, key),
                     lambda: validate_request_id(run_id), lambda: parse_version_id(f"{asset}/{key}/{run_id}/1")):
            try:
                call()
            except InvalidInput:
                pass
        try:
            RunIdentity(asset=asset, interval=calendar.interval(DAY), logical_run_id=run_id, dagster_run_id=run_id,
                        request_id=None, code_version="x", params_digest="0", lane="manual", requested_at=None,
                        started_at="2022-09-01T00:00:00+00:00")
        except InvalidInput:
            pass
        assert not list(tmp_path.rglob("*")), "a core call created a file"

    run_property(trials, "input.names_and_keys", fuzz, prop)
