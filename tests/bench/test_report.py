"""docs/BENCHMARKS.md from a synthetic results dict (no contender runs): the target rows (B against the floor in CPU
and against the two-process floor in wall among them), the scale curve and how contender B asks for chunk runs (the
contenders' homes: ``test_dagster_home.py``)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from bench.contenders.ours import AUTO_FLAG, DEFAULT_PATH, FIXED_K, batching_mode, partitions_argv
from bench.dagster_facts import RUN_START_PHASE
from bench.report import ratios, write_report
from bench.run import chosen, parse_args, scale_contenders
from bench.scale import b_over_f, marginal_b_vs_f, scale_growth
from bench.storage_report import KEY as WAREHOUSE_S3_VS_LOCAL

# A results file of an earlier `make bench`, for its micro-benchmarks (kept in the repository).
EARLIER_RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "20261130T033304Z.json"
CHECK = {"days": 20, "missing_days": 0, "orders": 400_000, "revenue_cny": 359_230_942.13}


def contender(name: str, wall: float, runs: int = 20, cpu: float | None = None, **details) -> dict:
    return {"contender": name, "title": f"contender {name}", "wall_s": wall,
            "cpu_s": wall * 1.5 if cpu is None else cpu, "peak_rss_mb": 1000.0, "peak_process_rss_mb": 300.0,
            "processes": 10, "runs": runs, "check": dict(CHECK), "details": details}


def ours(name: str, wall: float, first_run: float, run_start_median: float, runs: int = 20) -> dict:
    """``first_run``: after `request create` returned; the command took 1.5 s."""
    breakdown = {"runs": runs, RUN_START_PHASE: {"n": runs, "median_s": run_start_median, "total_s": 1.0}}
    return contender(name, wall, runs, first_run_start_s=first_run, first_run_after_invocation_s=first_run + 1.5,
                     create_command_s=1.5, breakdown=breakdown, daemon_command="backfill-assets-daemon run -m x",
                     partitions_per_run=10, partitions_flag="--partitions-per-run auto",
                     run_coordinator="BackfillRunCoordinator", run_launcher="DefaultRunLauncher")


def point(days: int, walls: dict[str, float], cpus: dict[str, float] | None = None) -> dict:
    contenders = {}
    for name, wall in walls.items():
        c = contender(name, wall, runs=days, cpu=(cpus or {}).get(name))
        c["check"] = {**CHECK, "days": days, "orders": days * 20_000}
        contenders[name] = c
    return {"days": days, "sizes": {"days": days}, "contenders": contenders, "checks_agree": True}


@pytest.fixture
def results() -> dict:
    contenders = {
        "F": contender("F", 8.0, runs=0, cpu=16.0),  # B/F in CPU 36 / 16 = 2.25: missed
        "F2": contender("F2", 12.0, runs=0, cpu=17.0),  # B/F2 in wall 24 / 12 = 2.0: met
        "N": contender("N", 240.0, first_run_start_s=34.7, run_coordinator="QueuedRunCoordinator",
                       run_launcher="DefaultRunLauncher", breakdown={"runs": 20, RUN_START_PHASE: {"n": 0}}),
        "A": contender("A", 80.0, first_task_start_s=5.0),
        "O": ours("O", 40.0, first_run=0.5, run_start_median=0.4),  # O/A 0.5: met; first run met; run start met
        "B": ours("B", 24.0, first_run=4.0, run_start_median=0.9, runs=2),  # B/A 0.3: missed; first run missed
    }
    points = [point(10, {"N": 120.0, "A": 40.0, "O": 20.0, "B": 10.0}),
              point(40, {"N": 480.0, "A": 140.0, "O": 60.0, "B": 30.0}),
              point(120, {"A": 400.0, "O": 240.0, "B": 70.0})]
    return {
        "timestamp": "20270101T000000Z",
        "machine": {"nproc": 2, "ram_gb": 8, "os": "Linux", "python": "3.11", "postgresql": "15",
                    "packages": {"dagster": "1.13"}},
        "sizes": {"days": 20, "orders_per_day": 20_000, "max_active": 2, "partitions_per_run": 31,
                  "first_day": "2022-09-01", "last_day": "2022-09-20"},
        "command": "python -m bench.run --with-airflow --scale 10,40,120",
        "contenders": contenders,
        "micro": {},
        "checks_agree": True,
        "ratios": ratios(contenders),
        "total_s": 1.0,
        "seed": {"rows": 1, "seconds": 0.1},
        "scale": {"sizes": [10, 40, 120], "points": points, "growth": scale_growth(points)},
    }


def rendered(results: dict, tmp_path) -> str:
    path = tmp_path / "BENCHMARKS.md"
    write_report(results, path)
    return path.read_text()


def row(text: str, figure: str) -> list[str]:
    [line] = [line for line in text.splitlines() if line.startswith(f"| {figure} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_scale_growth_is_largest_over_smallest_size_and_compared_with_airflow_over_the_same_sizes(results):
    growth = results["scale"]["growth"]
    assert growth["O"]["growth"] == 12.0 and growth["A"]["growth"] == 10.0
    assert growth["O"]["a_growth_same_sizes"] == 10.0 and growth["O"]["growth_vs_a"] == 1.2
    assert growth["B"]["growth"] == 7.0 and growth["B"]["growth_vs_a"] == 0.7
    # N stops at 40 days, so it is compared with A's 10 -> 40 growth, not A's 10 -> 120.
    assert growth["N"]["days"] == [10, 40] and growth["N"]["a_growth_same_sizes"] == 3.5
    assert growth["N"]["slope_s_per_day"] == 12.0
    assert (growth["O"]["slope_s_per_day"], growth["A"]["slope_s_per_day"]) == (2.052, 3.268)  # least squares


def test_target_rows_judge_each_figure(results, tmp_path):
    text = rendered(results, tmp_path)
    assert row(text, "O/A (one interval per run vs Airflow 3)")[3:] == ["0.5", "≤ 0.6", "met"]
    assert row(text, "default request path (B) / A")[3:] == ["0.3", "≤ 0.25", "**missed**"]
    # B against the floor: in CPU against F, in wall against F2 (the floor on two processes); B/F in wall (24 / 8)
    # is the earlier target, still shown.
    assert row(text, "B/F in CPU (default path vs the plain loop, side by side, 20 d)")[3:] == [
        "2.25", "≤ 2.0", "**missed**"]
    assert row(text, "B/F2 in wall (default path vs the plain loop on two processes, side by side, 20 d)")[3:] == [
        "2.0", "≤ 2.0", "met"]
    assert row(text, "B/F in wall (default path vs the plain loop, side by side, 20 d)")[1:] == [
        "earlier target", "6.37", "3.0", "≤ 3.0", "met"]
    assert row(text, "B/N (default path vs naive Dagster)")[3:] == ["0.1", "≤ 0.1", "met"]
    # The first run counts from `request create` returning (the command's 1.5 s are not in it) ...
    assert row(text, "first run started after `request create` returned, s (O; the command itself: 1.5 s)")[3:] == [
        "0.5", "≤ 1", "met"]
    assert row(text, "first run started after `request create` returned, s (B; the command itself: 1.5 s)")[
        5] == "**missed**"
    # ... and from its invocation it must be no later than A's first task (5.0 s here).
    assert row(text, "first run started after `request create` was invoked, s (O)")[3:] == [
        "2.0", "≤ A's first task (5.0 s)", "met"]
    assert row(text, "run start (RUN_STARTING -> first step) median s (O)")[3:] == ["0.4", "≤ 0.5", "met"]
    assert row(text, "run start (RUN_STARTING -> first step) median s (B)")[5] == "**missed**"
    assert row(text, "scale: wall growth 10→120 d (O)")[3:] == ["12.0", "≤ A's (10.0)", "**missed**"]
    assert row(text, "scale: wall growth 10→120 d (B)")[3:] == ["7.0", "≤ A's (10.0)", "met"]
    # Without the micro-benchmarks the CAS ratio is reported, not judged.
    assert row(text, "publish CAS p99 / baseline p99 (PostgreSQL, 8 publishers)")[5] == "not measured"


def test_each_target_row_names_the_group_of_what_it_asks_for_and_no_issue_or_session(results, tmp_path):
    text = rendered(results, tmp_path)
    assert "| figure | group | earlier (20261201T165151Z) / beside | measured | target | verdict |" in text
    groups = {
        "B/F in CPU (default path vs the plain loop, side by side, 20 d)": "batches near the floor",
        "B/F2 in wall (default path vs the plain loop on two processes, side by side, 20 d)": "batches near the floor",
        "B/F in CPU at 365 d (scale curve)": "batches near the floor",
        "B/F2 in wall at 365 d (scale curve)": "batches near the floor",
        "B's marginal CPU per day / F's (least-squares slopes of CPU s over the scale curve's sizes)":
            "batches near the floor",
        "B/F in wall (default path vs the plain loop, side by side, 20 d)": "earlier target",
        "B/N (default path vs naive Dagster)": "ahead of Dagster and Airflow",
        "O/A (one interval per run vs Airflow 3)": "ahead of Dagster and Airflow",
        "first run started after `request create` was invoked, s (O)": "start at once",
        "run start (RUN_STARTING -> first step) median s (B)": "start at once",
        "publish CAS p99 / baseline p99 (PostgreSQL, 8 publishers)": "publish near a plain write",
        "run start (RUN_STARTING -> first step) median s (O)": "earlier target",
        "scale: wall growth 10→120 d (B)": "earlier target",
        "O/N (one interval per run vs naive Dagster)": "earlier target",
        "largest process RSS, B / O": "earlier target",
    }
    assert {figure: row(text, figure)[1] for figure in groups} == groups
    # What a reader sees names what each thing is, never an issue or a working session.
    assert not re.search(r"\bissues?\b|\bsession [0-9]|same session|this session", text, re.IGNORECASE)


def test_first_run_is_not_judged_against_airflow_when_airflow_did_not_run(results, tmp_path):
    del results["contenders"]["A"]
    results["ratios"] = ratios(results["contenders"])
    text = rendered(results, tmp_path)
    assert row(text, "first run started after `request create` was invoked, s (B)")[5] == "not measured (A not run)"
    assert row(text, "O/A (one interval per run vs Airflow 3)")[5] == "not measured (A not run)"


def test_the_scale_table_lists_every_size_with_slope_growth_and_cross_check(results, tmp_path):
    text = rendered(results, tmp_path)
    assert "## Scale curve" in text
    assert row(text, "**O** | 10")[:8] == ["**O**", "10", "20.0", "30.0", "10", "", "", "1.0"]
    # from 40 to 120 days O added 180 s: 2.25 s per day, 12 times its 10-day wall
    assert row(text, "**O** | 120")[:8] == ["**O**", "120", "240.0", "360.0", "120", "", "2.25", "12.0"]
    assert not [line for line in text.splitlines() if line.startswith("| **N** | 120 |")]
    assert "10 d: **True**; 40 d: **True**; 120 d: **True**" in text
    summary = [line for line in text.splitlines() if line.startswith("| **B** | 10→120 |")]
    assert summary == ["| **B** | 10→120 | 7.0 | 7.0 | 0.536 | 0.804 | 10→120 | 10.0 | 0.7 | 0.16 | met |"]
    # N is a reference, compared with A over its own sizes (10 -> 40), and judged by no target.
    assert "| **N** | 10→40 | 4.0 | 4.0 | 12.0 | 18.0 | 10→40 | 3.5 | 1.14 | 3.6 |  |" in text


def test_b_and_the_floor_at_365_days_b_over_f_at_each_size_and_their_slopes(results, tmp_path):
    points = results["scale"]["points"]
    for p, f_wall, f_cpu, f2_wall in zip(points, (4.0, 10.0, 26.0), (6.0, 15.0, 39.0), (5.0, 15.0, 35.0),
                                         strict=True):
        p["contenders"].update(point(p["days"], {"F": f_wall, "F2": f2_wall}, {"F": f_cpu})["contenders"])
    points.append(point(365, {"F": 75.0, "F2": 90.0, "B": 180.0}, {"F": 100.0}))
    results["scale"] = {"sizes": [10, 40, 120, 365], "points": points, "growth": scale_growth(points)}
    growth = results["scale"]["growth"]
    # B's growth against A's is over the sizes both ran (10 -> 120), its own growth over all of its sizes.
    assert growth["B"]["a_span"] == [10, 120] and growth["B"]["growth_vs_a"] == 0.7 and growth["B"]["growth"] == 18.0
    assert "a_span" not in growth["F2"]  # a floor, like F: a reference, not compared with Airflow
    m = marginal_b_vs_f(growth)
    slope = lambda name, key: growth[name][key]  # noqa: E731
    assert m == {"b_slope_s_per_day": slope("B", "slope_s_per_day"), "f_slope_s_per_day": slope("F", "slope_s_per_day"),
                 "ratio": round(slope("B", "slope_s_per_day") / slope("F", "slope_s_per_day"), 2),
                 "b_cpu_slope_s_per_day": slope("B", "cpu_slope_s_per_day"),
                 "f_cpu_slope_s_per_day": slope("F", "cpu_slope_s_per_day"),
                 "cpu_ratio": round(slope("B", "cpu_slope_s_per_day") / slope("F", "cpu_slope_s_per_day"), 2),
                 "f2_slope_s_per_day": slope("F2", "slope_s_per_day")}
    # B's CPU over F's, B's wall over F2's (the targets), B's wall over F's (the earlier target), at each size.
    assert [(r["b_over_f_cpu"], r["b_over_f2"], r["b_over_f"]) for r in b_over_f(points)] == [
        (2.5, 2.0, 2.5), (3.0, 2.0, 3.0), (2.692, 2.0, 2.692), (2.7, 2.0, 2.4)]
    text = rendered(results, tmp_path)
    assert row(text, "B/F in CPU at 365 d (scale curve)")[1:] == [
        "batches near the floor", "", "2.7", "≤ 2", "**missed**"]
    assert row(text, "B/F2 in wall at 365 d (scale curve)")[1:] == ["batches near the floor", "", "2.0", "≤ 2", "met"]
    assert row(text, "B/F in wall at 365 d (scale curve)")[1:] == ["earlier target", "", "2.4", "≤ 2", "**missed**"]
    assert "| B/F in CPU at 120 d (scale curve) |" not in text  # the targets name 20 and 365 days
    cpu_row = row(text, "B's marginal CPU per day / F's (least-squares slopes of CPU s over the scale curve's sizes)")
    assert cpu_row[1:] == ["batches near the floor", "", str(m["cpu_ratio"]), "≤ 2",
                           "met" if m["cpu_ratio"] <= 2 else "**missed**"]
    wall_row = row(text,
                   "B's marginal wall per day / F's (least-squares slopes of wall s over the scale curve's sizes)")
    assert wall_row[1:4] == ["earlier target", "", str(m["ratio"])]
    assert row(text, "365") == ["365", "270.0", "100.0", "**2.7**", "180.0", "90.0", "**2.0**", "75.0", "2.4"]
    assert row(text, "**F** | 365")[:4] == ["**F**", "365", "75.0", "100.0"]
    assert row(text, "**F2** | 365")[:3] == ["**F2**", "365", "90.0"]
    assert f"in CPU: B {m['b_cpu_slope_s_per_day']} s/day, F {m['f_cpu_slope_s_per_day']} s/day" in text
    assert "F, F2, B at every size; N up to 40 days; A up to 120 days; O up to 120 days" in text


def test_the_curve_judges_b_against_the_floor_at_20_and_at_365_days_when_it_has_them(results, tmp_path):
    points = [point(days, {"F": 0.2 * days, "F2": 0.12 * days, "B": 0.4 * days}, {"F": 0.2 * days})
              for days in (10, 20, 365)]
    results["scale"] = {"sizes": [10, 20, 365], "points": points, "growth": scale_growth(points)}
    text = rendered(results, tmp_path)
    # B's CPU is 1.5 x its wall here: 0.6 s per day against F's 0.2.
    assert [row(text, f"B/F in CPU at {d} d (scale curve)")[3] for d in (20, 365)] == ["3.0", "3.0"]
    assert [row(text, f"B/F2 in wall at {d} d (scale curve)")[3:] for d in (20, 365)] == [
        ["3.333", "≤ 2", "**missed**"]] * 2
    assert "| B/F in CPU at 10 d (scale curve) |" not in text
    assert row(text, "B's marginal CPU per day / F's (least-squares slopes of CPU s over the scale curve's sizes)")[
        3] == "3.0"


def test_without_a_scale_curve_the_scale_rows_say_how_to_measure_it(results, tmp_path):
    del results["scale"]
    text = rendered(results, tmp_path)
    assert "## Scale curve" not in text
    assert row(text, "scale: wall growth curve (O)")[5] == "not measured (`make bench-scale`)"
    assert row(text, "B/F in CPU at 365 d (scale curve)")[5] == "not measured (`make bench-scale`)"
    assert row(text, "B/F2 in wall at 365 d (scale curve)")[5] == "not measured (`make bench-scale`)"
    assert row(text, "B/F in wall at 365 d (scale curve)")[5] == "not measured (`make bench-scale`)"


def test_the_report_renders_results_of_older_runs(results, tmp_path):
    old = copy.deepcopy(results)
    del old["scale"]
    for c in old["contenders"].values():  # older runs: no run-start phase, no record of B's flag
        c["details"].get("breakdown", {}).pop(RUN_START_PHASE, None)
        c["details"].pop("partitions_flag", None)
    for c in old["contenders"].values():  # older runs: the first run counted from the invocation
        c["details"].pop("first_run_after_invocation_s", None)
        if "first_run_start_s" in c["details"] and "create_command_s" in c["details"]:
            c["details"]["first_run_start_s"] = 2.0
    # Older runs: no F2, no ratio of CPU stored, no CPU slope on the curve.
    del old["contenders"]["F2"]
    old["ratios"] = {key: value for key, value in ratios(old["contenders"]).items() if key != "B/F CPU"}
    old["scale"] = copy.deepcopy(results["scale"])
    for p in old["scale"]["points"]:
        p["contenders"]["F"] = point(p["days"], {"F": p["days"] / 5}, {"F": p["days"] / 5})["contenders"]["F"]
    old["scale"]["growth"] = scale_growth(old["scale"]["points"])
    for g in old["scale"]["growth"].values():
        g.pop("cpu_slope_s_per_day")
    text = rendered(old, tmp_path)
    assert ("| run start (RUN_STARTING -> first step) median s (O) | earlier target |  |  | ≤ 0.5 | not measured |"
            in text)
    # B/F in CPU from the stored medians (36 / 16); F2 did not run.
    assert row(text, "B/F in CPU (default path vs the plain loop, side by side, 20 d)")[3] == "2.25"
    assert row(text, "B/F2 in wall (default path vs the plain loop on two processes, side by side, 20 d)")[3:] == [
        "", "≤ 2.0", "not measured (F2 not run)"]
    assert row(text, "B/F2 in wall at 365 d (scale curve)")[5] == "not measured (F2 not on the curve)"
    # The CPU slopes from the sizes and CPU seconds: B 1.5 x 0.536 s/day, F 0.2 s/day.
    assert row(text, "B/F in CPU at 120 d (scale curve)")[3] == "4.375"
    assert row(text, "B's marginal CPU per day / F's (least-squares slopes of CPU s over the scale curve's sizes)")[
        3] == "4.02"
    # 2.0 s from the invocation, the command 1.5 s: 0.5 s after it returned.
    assert row(text, "first run started after `request create` returned, s (O; the command itself: 1.5 s)")[3] == (
        "0.5")


def storage_result() -> dict:
    def operation(local_ms: float, s3_ms: float) -> dict:
        return {"local": {"p50_ms": local_ms, "p90_ms": local_ms * 1.2}, "s3": {"p50_ms": s3_ms, "p90_ms": s3_ms * 1.5},
                "p50_ratio": round(s3_ms / local_ms, 2), "p90_ratio": round(s3_ms * 1.5 / (local_ms * 1.2), 2),
                "p50_added_ms": s3_ms - local_ms}

    size = {"orders": 20_000, "rows": 20_600, "parquet_bytes": 614_400, "write": operation(25.0, 100.0),
            "read": operation(8.0, 28.0), "gate": operation(90.0, 240.0)}
    return {"server": "moto_server", "catalog": "SQLite", "day": "2022-09-01", "repetitions": 40, "warmup": 3,
            "sizes": {"20000": size}}


def test_the_micro_section_has_the_warehouse_on_s3_vs_local_when_the_run_measured_it(results, tmp_path):
    results["micro"] = json.loads(EARLIER_RESULTS.read_text())["micro"]  # an older run: no such table
    assert "Warehouse on S3 vs a local folder" not in rendered(results, tmp_path)
    results["micro"][WAREHOUSE_S3_VS_LOCAL] = storage_result()
    text = rendered(results, tmp_path)
    assert row(text, "20,000 (20,600 rows, 600 KiB)") == [
        "20,000 (20,600 rows, 600 KiB)", "write (Parquet + manifest)", "25.0", "30.0", "100.0", "150.0", "**4.0**",
        "5.0", "75.0"]
    assert "|  | whole gate (write, audits, publish CAS, read) | 90.0 | 108.0 | 240.0 | 360.0 | **2.67** |" in text


HELP_TODAY = """Options:
  --order TEXT                  forward | backward  [default: forward]
  --partitions-per-run INTEGER  Batch up to K consecutive days of an asset
                                into one run (depends-on-past assets: 1).
                                [default: 1]
  --downstream TEXT             none | cascade | handoff  [default: none]
"""
HELP_ACCEPTS_AUTO = HELP_TODAY.replace("INTEGER  Batch up to K", "TEXT     K, or auto: batch up to K")
HELP_DEFAULT_AUTO = HELP_ACCEPTS_AUTO.replace("[default: 1]", "[default:\n                                auto]")


@pytest.mark.parametrize(("help_text", "mode", "argv"), [
    (HELP_TODAY, FIXED_K, ["--partitions-per-run", "31"]),
    (HELP_ACCEPTS_AUTO, AUTO_FLAG, ["--partitions-per-run", "auto"]),
    (HELP_DEFAULT_AUTO, DEFAULT_PATH, []),
])
def test_contender_b_takes_the_default_request_path_the_cli_offers(help_text, mode, argv):
    assert batching_mode(help_text) == mode
    assert partitions_argv(mode, 31) == argv


def test_the_scale_curve_runs_both_floors_and_b_at_every_size_o_and_airflow_to_120_days_naive_dagster_to_40():
    args = parse_args(["--with-airflow", "--scale", "365,120,10,40,10"])
    assert args.scale == [10, 40, 120, 365]
    assert scale_contenders(args, 40) == ["F", "F2", "N", "A", "O", "B"]
    assert scale_contenders(args, 120) == ["F", "F2", "A", "O", "B"]
    assert scale_contenders(args, 365) == ["F", "F2", "B"]
    assert scale_contenders(parse_args(["--scale", "10"]), 10) == ["F", "F2", "N", "O", "B"]
    assert scale_contenders(parse_args(["--only", "O,A", "--scale", "10"]), 10) == ["A", "O"]
    assert scale_contenders(parse_args(["--only", "f2,B", "--scale", "10"]), 10) == ["F2", "B"]
    with pytest.raises(SystemExit):
        parse_args(["--scale", "0,10"])


def test_the_side_by_side_has_the_two_process_floor_by_default_and_with_only():
    assert chosen(parse_args([])) == ["F", "F2", "N", "O", "B"]
    assert chosen(parse_args(["--with-airflow"])) == ["F", "F2", "N", "A", "O", "B"]
    assert chosen(parse_args(["--only", "B,F2,F"])) == ["F", "F2", "B"]


def test_b_against_the_floor_is_a_ratio_of_cpu_against_f_and_of_wall_against_f2(results):
    r = ratios(results["contenders"])
    assert (r["B/F CPU"], r["B/F2"], r["B/F"]) == (2.25, 2.0, 3.0)
    del results["contenders"]["F2"]
    assert ratios(results["contenders"])["B/F2"] is None


def tables_result(wall_ratio: float) -> dict:
    mode = {"wall_s": 100.0, "cpu_s": 150.0, "peak_rss_mb": 1800.0, "wall_s_each": [99.0, 101.0],
            "cpu_s_each": [149.0, 151.0], "status": ["completed"]}
    return {"sizes": {"days": 365, "first_day": "2022-09-01", "last_day": "2023-08-31", "orders_per_day": 20_000},
            "reps": 2, "modes": {"on": mode, "off": mode}, "wall_ratio": wall_ratio, "cpu_ratio": 1.05,
            "latency": {"n": 2190, "p50_ms": 2230.0, "p90_ms": 4450.0, "p99_ms": 5070.0, "max_ms": 5330.0},
            "snapshots_per_run": 34, "publishes_per_run": 1095, "lost_commits": 0, "days_missing": 0,
            "check": CHECK, "checks_agree": True}


def test_the_published_tables_cost_is_judged_from_this_run_else_from_the_newest_stored_one(results, tmp_path):
    from bench.published_tables_report import KEY, section_for, target_row

    with_run = {**results, KEY: tables_result(1.2)}
    assert target_row(with_run, tmp_path)[2:] == ["", 1.2, "≤ 1.1", "**missed**"]
    text = "\n".join(section_for(with_run, tmp_path))
    assert "p50 **2.23 s**" in text and "p99 **5.07 s**" in text and "Not measured in the run above" not in text

    assert target_row(results, tmp_path)[3:] == [None, "≤ 1.1", "not measured"] and section_for(results, tmp_path) == []
    stored = tmp_path / f"20261205T000000Z-{KEY}.json"
    stored.write_text(json.dumps({"stamp": "20261205T000000Z", "command": "python -m bench.published_tables",
                                  KEY: tables_result(1.04)}))
    assert target_row(results, tmp_path)[2:] == [f"stored run `{stored.stem}`", 1.04, "≤ 1.1", "met"]
    assert "Not measured in the run above: `python -m bench.published_tables` on 2026-12-05" in "\n".join(
        section_for(results, tmp_path))
