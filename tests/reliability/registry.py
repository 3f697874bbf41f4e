"""Every fault class of the reliability suite: the row it gets in docs/RELIABILITY.md and how the design
prevents the harm. Tests record trials and failures under these ids (``trials`` fixture); the renderer
(``python -m tests.reliability.render``) lists every class here, including one that did not run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultClass:
    id: str
    group: str
    fault: str
    unit: str  # what one trial is
    prevention: str


_PER_ATTEMPT = (
    "Each attempt writes to its own `_runs/<run_id>/attempt=<n>/` folder that no reader resolves; readers go "
    "through the catalog pointer, which still names the previous version."
)
_REPAIR_STUCK = "reconcile flags the attempt stuck in {state} once its run has ended; `--repair` marks it ABANDONED."

CLASSES: tuple[FaultClass, ...] = (
    # ---- 1. crash points ------------------------------------------------------------------------------------
    FaultClass(
        "crash.after_data_file", "crash points", "SIGKILL after `data.parquet` is written, before the manifest",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        f"{_PER_ATTEMPT} {_REPAIR_STUCK.format(state='WRITING')}",
    ),
    FaultClass(
        "crash.after_manifest", "crash points", "SIGKILL after `_manifest.json`, before VERIFYING is recorded",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        f"{_PER_ATTEMPT} {_REPAIR_STUCK.format(state='WRITING')}",
    ),
    FaultClass(
        "crash.after_verifying", "crash points", "SIGKILL after VERIFYING is committed, before the checks conclude",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        "\"Computed\" is not \"published\": a VERIFYING version is invisible to readers. "
        + _REPAIR_STUCK.format(state="VERIFYING"),
    ),
    FaultClass(
        "crash.in_publish_transaction", "crash points",
        "SIGKILL inside the publish transaction (pointer CAS + states + publish_log written, not committed)",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        "Pointer swap, state changes and the publish_log row are one database transaction: the kill rolls all of "
        "it back (SQLite ignores uncommitted WAL frames, PostgreSQL aborts the dead session). The version stays "
        "VERIFYING, never PUBLISHED; reconcile abandons it.",
    ),
    FaultClass(
        "crash.after_publish_commit", "crash points",
        "SIGKILL after the publish commit, before the Dagster materialization event",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        "The catalog is the source of truth: the committed version is complete (file, manifest and sha256 were "
        "verified before publish). reconcile reports \"published without a Dagster materialization\"; `--repair` "
        "records it (`report_runless_asset_event` + a `repair` row in publish_log).",
    ),
    FaultClass(
        "crash.after_event", "crash points", "SIGKILL after the materialization event, before the step ends",
        "kill, inspect, repair, retry (SQLite and PostgreSQL catalog alternately)",
        "Catalog and Dagster agree (published + materialized); the run is marked failed by run monitoring and "
        "nothing is left to repair. The next run publishes over it by CAS from the pointer it saw.",
    ),
    # ---- 2. service faults ----------------------------------------------------------------------------------
    FaultClass(
        "service.daemon_killed", "service faults", "`dagster-daemon` SIGKILLed and restarted mid-request",
        "one kill + restart of the daemon during a running request",
        "The driver records each cell's decision and run key in the ledger before the run request leaves the "
        "sensor; after a restart it re-requests the same run keys, and Dagster creates at most one run per run "
        "key. Runs already launched are separate processes and finish on their own.",
    ),
    FaultClass(
        "service.postgres_restarted", "service faults",
        "PostgreSQL restarted (`pg_ctlcluster 15 main restart`) mid-request, Dagster storage and catalog on it",
        "one server restart during a running request",
        "The catalog engine pre-pings pooled connections and retries transient errors; a step that loses its "
        "connection fails before commit and its `RetryPolicy` starts a new attempt. A run Dagster could not "
        "launch while its storage restarted (marked FAILURE before any step ran) wrote nothing, so the driver "
        "resubmits its cell under the next round's run key (at most twice); run keys keep every resubmission "
        "idempotent. An attempt the restart interrupted mid-write stays invisible and is reported by reconcile; "
        "`--repair` abandons it.",
    ),
    FaultClass(
        "service.catalog_unreachable", "service faults",
        "catalog database unreachable at publish time (connections killed, new ones refused)",
        "one step that reaches publish while the catalog is cut off",
        "Publish is one transaction: a lost connection rolls it back, so nothing is half-written and the pointer "
        "does not move. The attempt stays VERIFYING; the step's RetryPolicy retries it as a new attempt, and "
        "reconcile `--repair` abandons the orphaned attempt. Once a publish has committed, the step needs the "
        "catalog no more (the published row comes back from the publish transaction).",
    ),
    FaultClass(
        "service.s3_outage", "service faults",
        "the warehouse's S3 endpoint down mid-request (new connections refused, open ones reset), then back",
        "one request of 4 days whose steps are released into the outage right after writing `data.parquet`; "
        "long (until a run has failed) and short (1 s) outages alternately",
        "A version is visible only through the catalog pointer, which moves after the data object and manifest "
        "are written and verified; a storage call that fails raises StorageError naming the warehouse and the "
        "endpoint, so the attempt is ABANDONED (its orphaned object never read) and the step's RetryPolicy "
        "retries it as a new attempt. A short outage is ridden out by the retry; a long one fails the run, the "
        "previous version keeps serving, and `--reprocess failed` redoes exactly the failed cells once the "
        "endpoint is back.",
    ),
    # ---- 3. races -------------------------------------------------------------------------------------------
    FaultClass(
        "race.overlapping_requests", "races",
        "two requests over overlapping partitions created at the same instant from two processes",
        "one simultaneous pair (barrier), via the CLI and via Ledger.create, SQLite and PostgreSQL",
        "Claims have a primary key on (asset, partition): exactly one transaction inserts them. The loser's "
        "transaction rolls back (no request, cell or claim row) and its one retry sees the winner's claims and "
        "is refused naming the holder.",
    ),
    FaultClass(
        "race.concurrent_publish", "races",
        "a production-lane run and a backfill-lane run of the same partition publish at the same instant",
        "one pair of real Dagster runs released together right before `catalog.publish`, SQLite and PostgreSQL",
        "Publish compare-and-swaps the pointer row from the version seen at begin (a conditional UPDATE, or the "
        "INSERT of a first pointer under its primary key), in one transaction with the state changes and the "
        "log row. The second publisher matches nothing: its version is REJECTED with \"lost the publish race to "
        "<version>\", its run fails with that message, and reconcile shows it.",
    ),
    # ---- 4. bad input ---------------------------------------------------------------------------------------
    FaultClass(
        "input.dates_and_ranges", "bad input", "generated `--from/--to` dates and ranges (request create, seed, read)",
        "one generated command line (hypothesis example)",
        "Dates parse strictly (ASCII `YYYY-MM-DD`, real calendar days within 0001-01-02..9999-12-30, not before "
        "the first partition, not past the newest complete interval) before anything is written; click's own "
        "usage errors are one `error:` line like every other refusal.",
    ),
    FaultClass(
        "input.timezones", "bad input", "generated timezone names (BusinessCalendar / load_timezone)",
        "one generated name (hypothesis example)",
        "`load_timezone` refuses empty names, NUL, `..` and absolute paths before zoneinfo sees them, and turns "
        "every zoneinfo error into one InvalidInput.",
    ),
    FaultClass(
        "input.asset_selection", "bad input", "generated `--assets` selections",
        "one generated command line (hypothesis example)",
        "Every name must be a known asset; duplicates and empty selections are refused; the selection is put in "
        "lineage order.",
    ),
    FaultClass(
        "input.conf_json", "bad input", "generated `--conf` JSON: deep, huge, wrong types, unknown keys",
        "one generated command line (hypothesis example)",
        "`--conf` is bounded (64 KiB, 8 levels) before and after parsing, only known keys are accepted, and "
        "every defect is checked against the request's own partitions and assets.",
    ),
    FaultClass(
        "input.names_and_keys", "bad input",
        "asset names, partition keys, version and request ids with path tricks, unicode, NUL, control chars",
        "one generated command line or core call (hypothesis example)",
        "Names are validated by strict ASCII patterns before they reach a path or a query; the warehouse also "
        "refuses any path that resolves outside its root. Stored free text (`--reason`, `--reader`, `--by`) is "
        "bounded and refused with NUL, control characters or lone surrogates, which PostgreSQL cannot store.",
    ),
    # ---- 5. data faults -------------------------------------------------------------------------------------
    FaultClass(
        "data.altered_after_publish", "data faults",
        "a published data file truncated, altered, replaced or deleted after publish",
        "one alteration, then reconcile --verify-files, `read` and a downstream run",
        "The catalog keeps each version's sha256 and row count; every reader (`read`, downstream steps) re-hashes "
        "the bytes before use and refuses a mismatch; `reconcile --verify-files` re-hashes every published file.",
    ),
    # ---- 6. past one machine --------------------------------------------------------------------------------
    FaultClass(
        "distributed.worker_killed", "past one machine",
        "a Celery worker SIGKILLed mid-step, after its write and checks, before the publish (steps on two "
        "workers, no shared folder; PostgreSQL, S3 server, RabbitMQ)",
        "one 1-day request held on the worker that took its step, that worker killed, the step finished elsewhere",
        "Steps are acknowledged late (`task_acks_late`, `task_reject_on_worker_lost`): the broker returns a dead "
        "worker's message and the other worker runs the step. The catalog numbers it attempt 2 of the same "
        "logical run and abandons attempt 1 (whose object stays unreferenced); counted per trial: a cell not "
        "published (lost), two published versions (duplicated), a pointer to an attempt that is not complete or "
        "does not verify (partial).",
    ),
    # ---- the catalog and the warehouse's integrity ------------------------------------------------------------
    FaultClass(
        "data.tampered_manifest", "data faults",
        "a published `_manifest.json` altered, forged, corrupted or deleted",
        "one tampering, then reconcile --verify-files, `read` and a downstream run",
        "The catalog keeps the sha256 of each version's manifest as written (`manifest_sha256`); the one "
        "verification every reader, audit, report and pointer move calls (`Warehouse.verify_version`) checks it "
        "with the data file and refuses a difference naming the version, its manifest and what differs.",
    ),
    FaultClass(
        "catalog.damaged", "catalog faults",
        "catalog.db replaced by random bytes, text, damaged pages, a directory, or missing a table",
        "one damaged catalog, then `read`, `versions` and `catalog version`",
        "Opening a catalog checks its tables against its schema version and turns the database's own "
        "\"not a database\" / \"malformed\" errors into one `CatalogDamaged` line naming the file and saying "
        "to restore it from a backup; exit 2, no traceback, nothing created.",
    ),
    FaultClass(
        "catalog.empty_beside_warehouse", "catalog faults",
        "catalog.db zero-length or missing beside a warehouse with versions",
        "one emptied or removed catalog, then `read` and `catalog version`",
        "An empty or missing catalog is created only while the warehouse beside it holds no version; otherwise it "
        "is refused (`CatalogEmpty`), naming both, and nothing is created; `catalog init --force` starts over on "
        "purpose.",
    ),
    FaultClass(
        "catalog.held_lock", "catalog faults",
        "a PostgreSQL catalog table locked by another session",
        "one `LOCK TABLE … ACCESS EXCLUSIVE` held, then `read` and a publish",
        "Catalog sessions run with `lock_timeout` and `statement_timeout` (`BACKFILL_CATALOG_LOCK_TIMEOUT`, "
        "`BACKFILL_CATALOG_STATEMENT_TIMEOUT`); a timeout is one `CatalogBusy` line naming the catalog and the "
        "lock held by another session, within the timeout.",
    ),
    # ---- two daemons on one home ----------------------------------------------------------------------------
    FaultClass(
        "service.two_daemons", "service faults",
        "two daemons on one home: a second `backfill-assets-daemon run`, and two Dagster drivers ticking one "
        "request at once",
        "one second daemon start beside a running one, or one request driven by two racing drivers to its end",
        "The daemon holds a lease in the catalog (renewed every third of `BACKFILL_DAEMON_LEASE_SECONDS`): a second "
        "one, or one beside a running `dagster-daemon run` (its heartbeats), refuses to start naming the first, and "
        "a daemon whose lease was taken stops. A driver tick records its decisions only if nothing it read changed "
        "(the request's tick token and each cell's decision, compare-and-set), so of two racing ticks only one "
        "submits; a recorded run still missing is asked for again only after a grace or a daemon restart. Counted "
        "per trial: a run key with two runs, a cell published twice in the request, a cell not published.",
    ),
    # ---- 7. input bounds ------------------------------------------------------------------------------------
    FaultClass(
        "bad_input.non_finite", "bad input",
        "non-finite numbers (NaN, ±Infinity, 1e999) through every door: --conf on the CLI, the Launchpad's conf, "
        "a transform's frame under each comparing audit",
        "one generated conf (CLI or Launchpad job) or one generated frame, expectation and tolerance (hypothesis "
        "example)",
        "A conf's numbers must be finite (`engine/model/numbers.require_finite`, in the one conf check every door "
        "calls, and in the step for a run given its own run config): refused in one line naming where the number "
        "is, nothing created. Every comparing audit fails, never passes, on what it cannot compare: "
        "`business_totals` on a non-finite sum, expectation or tolerance and on an infinite value in a compared "
        "column (written so that a NaN difference fails); `row_count` on a non-finite expectation.",
    ),
    FaultClass(
        "bad_input.numeric_tags", "bad input",
        "generated `backfill/*` numeric tag values: unicode digits, huge, signs, spaces",
        "one generated tag value through the launch policy, the step's admission check, the adoption and the "
        "queue's pacing (hypothesis example)",
        "One parser for numbers given as text (`engine/model/numbers.whole_number`): plain ASCII digits within "
        "bounds, else one line naming the tag; never a ValueError. The adoption sensor handles each Dagster "
        "backfill on its own, so one bad backfill never blocks the others.",
    ),
    # ---- 7. access and the audit trail -------------------------------------------------------------------------
    FaultClass(
        "access.forged_lane_tags", "access",
        "side-effect asset launched with no tags, a typed backfill/lane=production, forged backfill/* tags: "
        "nothing delivered without an approver for a day production would not deliver",
        "one run of revenue_alert for a backfilled day with one set of launch tags (none, a typed lane, the "
        "production trigger's sensor tags, a forged request id with approval tags)",
        "The side-effect step decides from the day itself: only the production trigger's run (Dagster's sensor and "
        "run-key tags) of the newest due day goes without an approver; any other run needs the asset allowed and "
        "an approver the AccessPolicy accepts, read from the request's record in the catalog for a request's run "
        "(never from its tags), from the launch tags otherwise. Counted per trial: an alert delivered, a delivery "
        "row written.",
    ),
    FaultClass(
        "bad_input.trailing_control_in_names", "bad input",
        "a control character (\\n, \\r, \\t, \\x0b, \\x85...) at the end/inside of every name field through every "
        "door: nothing commits, no orphan audit row",
        "one name field (--requested-by, --approved-by, --by of accept/reject/rollback/skip/pause/handoff, the "
        "Launchpad's requested_by) with one control character, at the end or inside",
        "Names are matched whole (fullmatch, never `$`, which accepts a final newline) and checked at the service's "
        "entry before anything is written; every state change and its operations row commit in one transaction, "
        "so a trail row that cannot be written undoes the change.",
    ),
)

_TABLE_SWITCH = (
    "The table is a projection of the publish log: a sync applies the committed rows after the table's own position "
    "(`backfill-assets.publish-seq` in its snapshot) as one Iceberg overwrite snapshot — each changed day's old file "
    "out, its new one in — and the Iceberg catalog's swap of the table's metadata is the one moment it changes, so "
    "a reader sees the table before or after, each day one whole published version. It can lag the pointers, never "
    "lead them; `lag` names the days it is behind and whoever syncs next (the step, the daemon's sensor, an "
    "operation, `reconcile --repair`, `backfill-assets tables sync`) applies them."
)
_TABLE_ONE_TRIAL = (
    "a publisher process publishes 1–3 days and syncs; SIGKILL; the table and `lag` checked; one sync; readers "
    "polling throughout (pyiceberg, DuckDB, polars), judged (SQLite and PostgreSQL catalog and Iceberg catalog "
    "alternately)"
)
TABLE_CLASSES: tuple[FaultClass, ...] = (
    FaultClass(
        "table.killed_before_sync", "published tables",
        "the publishing process SIGKILLed after its publish commit, before it syncs the Iceberg table",
        _TABLE_ONE_TRIAL,
        f"{_TABLE_SWITCH} Here the pointer moved and the table still holds its last state: it lags by exactly the "
        "published days.",
    ),
    FaultClass(
        "table.killed_before_commit", "published tables",
        "the syncing process SIGKILLed with its Iceberg snapshot written, before the catalog swaps the table to it",
        _TABLE_ONE_TRIAL,
        f"{_TABLE_SWITCH} Files written for a snapshot no catalog entry names are never read; the table keeps its "
        "last state.",
    ),
    FaultClass(
        "table.killed_after_commit", "published tables",
        "the syncing process SIGKILLed right after the Iceberg commit",
        _TABLE_ONE_TRIAL,
        f"{_TABLE_SWITCH} The committed snapshot is the pointers at its seq: nothing is left to apply.",
    ),
    FaultClass(
        "table.iceberg_catalog_unreachable", "published tables",
        "the Iceberg catalog unreachable mid-publish (PostgreSQL: connections refused and terminated; SQLite: its "
        "folder gone), then back",
        "a publisher held right before its table commit or before its sync, the Iceberg catalog cut off, the "
        "publisher released; the catalog restored; one sync",
        "The pointer is the truth and moves in the catalog's own transaction, before and apart from the table: the "
        "publish stands. `PublishedTables.sync` reports the table it could not sync (`SyncReport.failed`) and "
        "returns, never raises; the table keeps its last committed state and lags; the Iceberg catalog's "
        "connections are checked before use, so the first sync once it is back converges.",
    ),
    FaultClass(
        "table.commit_storm", "published tables",
        "four processes publishing and syncing overlapping days of one asset at once",
        "4 processes × 20 publishes (6 in `make test`), each followed by a sync, over 6 days, released by one "
        "barrier; readers polling throughout; counted: Iceberg commits, commits lost to another writer and planned "
        "again (conflicts), syncs that gave up (the next one converges)",
        "Iceberg's optimistic commit orders the writers: a commit on a stale base fails (`commit.retry.num-retries` "
        "0, so pyiceberg never replays an old plan onto a newer table) and the sync plans again from the table's "
        "new position, never moving a day backwards; each plan is a prefix of the log, so any winner's snapshot is "
        "the pointers at its seq, and the last sync leaves the table equal to the pointers.",
    ),
)
CLASSES = CLASSES + TABLE_CLASSES

BY_ID = {c.id: c for c in CLASSES}
