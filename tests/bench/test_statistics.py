"""The side by side's repetitions (interleaving, medians, spread), how the two-process floor splits the days, and a
depends-on-past chain's cost per day beyond its step, on synthetic figures."""

from __future__ import annotations

import pytest

from bench.contenders.floor import spans
from bench.past_facts import DayStep, beyond_step, chain_summary
from bench.past_report import past_section, past_target_rows
from bench.repetitions import interleaved, spread_text, summarize


def outcome(wall: float, first_run: float, run_start: float) -> dict:
    return {"wall_s": wall, "cpu_s": wall * 2, "peak_rss_mb": 100.0, "peak_process_rss_mb": 50.0, "runs": 2,
            "check": {"days": 2}, "details": {"first_run_start_s": first_run, "note": f"rep of {wall}",
                                              "breakdown": {"runs": 2, "phase": {"n": 2, "median_s": run_start}}}}


def test_repetitions_alternate_the_order_so_no_contender_always_runs_first():
    assert interleaved(["F", "N", "B"], 3) == [(0, "F"), (0, "N"), (0, "B"), (1, "B"), (1, "N"), (1, "F"),
                                               (2, "F"), (2, "N"), (2, "B")]


@pytest.mark.parametrize(("days", "parts", "expected"), [
    ("abcde", 2, [("a", "c"), ("d", "e")]),  # consecutive halves, the first one a day longer
    ("abcd", 2, [("a", "b"), ("c", "d")]),
    ("ab", 2, [("a", "a"), ("b", "b")]),
    ("a", 2, [("a", "a")]),  # one day: one process
    ("abcde", 1, [("a", "e")]),  # F: every day in one loop
])
def test_the_two_process_floor_splits_the_days_in_consecutive_halves(days, parts, expected):
    assert spans(list(days), parts) == expected


def test_a_contender_is_its_medians_with_the_spread_and_the_median_repetitions_details():
    summary = summarize([outcome(30.0, 0.9, 0.2), outcome(10.0, 0.5, 0.4), outcome(20.0, 2.0, 0.3)])
    assert (summary["wall_s"], summary["cpu_s"], summary["details"]["first_run_start_s"]) == (20.0, 40.0, 0.9)
    assert summary["reps"]["wall_s"] == [30.0, 10.0, 20.0] and summary["reps"]["median_rep"] == 2
    assert summary["details"]["note"] == "rep of 20.0"  # the details of the repetition with the median wall
    assert summary["details"]["breakdown"]["phase"]["median_s"] == 0.3
    assert summary["details"]["breakdown"]["phase"]["median_s_each"] == [0.2, 0.4, 0.3]


def test_an_even_count_takes_the_median_of_the_figures_and_the_lower_middle_repetitions_details():
    summary = summarize([outcome(10.0, 1.0, 0.1), outcome(20.0, 2.0, 0.1)])
    assert summary["wall_s"] == 15.0 and summary["details"]["note"] == "rep of 10.0"


@pytest.mark.parametrize(("value", "each", "digits", "text"), [
    (20.25, [19.8, 20.25, 21.04], 1, "20.2 (19.8–21.0)"),
    (1329.4, [1300.2, 1400.7], 0, "1329 (1300–1401)"),
    (3.2, [3.2], 1, "3.2"),
    (None, [], 1, ""),
])
def test_spread_text_is_the_median_and_the_range(value, each, digits, text):
    assert spread_text(value, each, digits) == text


def chain(*steps: tuple[float, float]) -> list[DayStep]:
    return [DayStep(f"2022-09-0{i + 1}", f"run{i}", start, end) for i, (start, end) in enumerate(steps)]


def test_a_chains_cost_beyond_the_step_is_the_time_between_two_publishes_not_spent_in_the_second_step():
    # Day 2 starts 0.5 s after day 1 ends and takes 2 s; day 3 starts 1.5 s after day 2 ends and takes 1 s.
    days = chain((0.0, 3.0), (3.5, 5.5), (7.0, 8.0))
    assert beyond_step(days) == [0.5, 1.5]
    summary = chain_summary(days)
    assert summary["beyond_step"] == {"n": 2, "median_s": 1.0, "min_s": 0.5, "max_s": 1.5, "total_s": 2.0}
    assert summary["step"]["median_s"] == 2.0 and summary["first_step_to_last_publish_s"] == 8.0
    assert chain_summary(chain((0.0, 1.0)))["beyond_step"] == {"n": 0}


def past_results(beyond: float, per_day: float, naive_per_day: float) -> dict:
    def measured(per: float, gap: float, daemon: str) -> dict:
        return {"days": 10, "wall_s": per * 10, "per_day_s": per, "runs": 10, "status": "COMPLETED_SUCCESS",
                "first_run_start_s": 0.4, "daemon_command": daemon,
                "chain": {"days": 10, "step": {"n": 10, "median_s": 0.5},
                          "beyond_step": {"n": 9, "median_s": gap, "min_s": gap, "max_s": gap}},
                "check": {"as_of": "2022-09-10", "customers": 7, "lifetime_orders": 300}}

    ours_chain = {**measured(beyond + 0.5, beyond, "backfill-assets-daemon run -m x"), "status": "completed",
                  "partitions_per_run": 1}
    return {"ui_days": 10, "chain_days": 10, "ui_keys": ["2022-09-01", "2022-09-10"],
            "chain_keys": ["2022-09-11", "2022-09-20"],
            "ours": {"ui": measured(per_day, 1.0, "backfill-assets-daemon run -m x"), "chain": ours_chain},
            "naive": {"ui": measured(naive_per_day, 29.0, "dagster-daemon run -m n")},
            "checks": {"chain_counts_every_order": True, "ui_snapshots_agree": True}}


def test_the_depends_on_past_targets_judge_ours_and_show_naive_dagster_beside():
    chain_row, ui_row = past_target_rows({"depends_on_past": past_results(0.8, 6.0, 30.5)})
    assert chain_row[2:] == ["N 29.0 s (UI backfill)", 0.8, "≤ 1", "met"]
    assert ui_row[2:] == ["N 30.5 s/day", 6.0, "≤ 5", "**missed**"]
    assert [r[5] for r in past_target_rows({})] == ["not measured (`--no-past`)"] * 2
    text = "\n".join(past_section(past_results(0.8, 6.0, 30.5)))
    assert "| **N**, UI backfill | `dagster-daemon run -m n` | 10 | 305.0 | 30.5 | 0.5 | **29.0** (29.0–29.0) |" in text
