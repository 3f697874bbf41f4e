"""docs/RELIABILITY.md as rendered from a run's counts: a class's tallies appear in its row, and a report written
before classes could tally still renders."""

from __future__ import annotations

from .render import render


def _row(text: str, fault: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| ") and fault in line)


def test_a_class_that_tallies_shows_its_counts_in_its_row_and_an_older_report_still_renders():
    text = render({"classes": {
        "service.s3_outage": {"trials": 5, "failures": 1, "notes": ["long outage: some cell failed"],
                              "tallies": {"lost publishes": 0, "partial publishes": 1}},
        "data.altered_after_publish": {"trials": 30, "failures": 0, "notes": []},  # no "tallies": an older report
    }})
    s3 = _row(text, "S3 endpoint down mid-request")
    assert "| 5 | **1** |" in s3
    assert "long outage: some cell failed — counted: lost publishes 0, partial publishes **1**" in s3
    altered = _row(text, "truncated, altered, replaced or deleted")
    assert "| 30 | 0 |" in altered and "counted" not in altered
    assert "| not run | — |" in _row(text, "SIGKILLed and restarted")
