"""Catalog tables (their names are a contract: docs/ARCHITECTURE.md#storage). SQLAlchemy Core; SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

_ts = sa.String(40)  # UTC ISO-8601 with offset; strings compare in time order and round-trip exactly
_key = sa.String(64)
_asset = sa.String(64)
_vid = sa.String(255)
_req = sa.String(80)

versions = sa.Table(
    "versions",
    metadata,
    sa.Column("version_id", _vid, primary_key=True),
    sa.Column("asset", _asset, nullable=False),
    sa.Column("partition_key", _key, nullable=False),
    sa.Column("interval_start", _ts, nullable=False),
    sa.Column("interval_end", _ts, nullable=False),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("dagster_run_id", sa.String(64), nullable=False),
    sa.Column("attempt_no", sa.Integer, nullable=False),
    sa.Column("request_id", _req),
    sa.Column("lane", sa.String(16)),
    sa.Column("code_version", sa.String(80), nullable=False),
    sa.Column("params_digest", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("path", sa.Text),
    sa.Column("rows", sa.BigInteger),
    sa.Column("sha256", sa.String(64)),
    sa.Column("stats_json", sa.Text),
    sa.Column("checks_json", sa.Text),
    sa.Column("input_versions_json", sa.Text),
    sa.Column("source_fingerprint", sa.String(64)),
    sa.Column("expected_previous_version_id", _vid),
    sa.Column("error", sa.Text),
    sa.Column("requested_at", _ts),
    sa.Column("started_at", _ts, nullable=False),
    sa.Column("ended_at", _ts),
    sa.Column("published_at", _ts),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("worker", sa.String(200)),  # the process that wrote the attempt (RunIdentity.worker)
    sa.Column("params_json", sa.Text),  # what params_digest digests (RunIdentity.params): defect, asset config
    sa.Column("manifest_sha256", sa.String(64)),  # sha256 of _manifest.json as written; NULL before revision 0005
    sa.UniqueConstraint("asset", "partition_key", "run_id", "attempt_no", name="uq_versions_attempt"),
    sa.Index("ix_versions_cell", "asset", "partition_key"),
    sa.Index("ix_versions_request", "request_id"),
    sa.Index("ix_versions_dagster_run", "dagster_run_id"),
)

pointers = sa.Table(
    "pointers",
    metadata,
    sa.Column("asset", _asset, primary_key=True),
    sa.Column("partition_key", _key, primary_key=True),
    sa.Column("version_id", _vid, nullable=False),
    sa.Column("previous_version_id", _vid),
    sa.Column("updated_at", _ts, nullable=False),
)

publish_log = sa.Table(
    "publish_log",
    metadata,
    # Assigned under the log_head row lock, so seq order is commit order (a cursor never skips a late commit).
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("asset", _asset, nullable=False),
    sa.Column("partition_key", _key, nullable=False),
    sa.Column("version_id", _vid, nullable=False),
    sa.Column("previous_version_id", _vid),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("request_id", _req),
    sa.Column("lane", sa.String(16)),
    sa.Column("reason", sa.Text),
    sa.Column("at", _ts, nullable=False),
    sa.Index("ix_publish_log_request", "request_id", "seq"),
)

log_head = sa.Table(
    "log_head",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
)

reads = sa.Table(
    "reads",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("consumer_version_id", _vid),  # NULL for an external reader
    sa.Column("consumer_run_id", sa.String(64)),
    sa.Column("consumer", sa.String(200)),  # who read: a version id or an external reader's label
    sa.Column("upstream_asset", _asset, nullable=False),
    sa.Column("upstream_partition", _key, nullable=False),
    sa.Column("upstream_version_id", _vid, nullable=False),
    sa.Column("at", _ts, nullable=False),
    sa.Index("ix_reads_upstream", "upstream_version_id"),
)

outbox = sa.Table(
    "outbox",
    metadata,
    sa.Column("idempotency_key", sa.String(255), primary_key=True),
    sa.Column("asset", _asset, nullable=False),
    sa.Column("partition_key", _key, nullable=False),
    sa.Column("payload_json", sa.Text, nullable=False),
    sa.Column("run_id", sa.String(64)),
    sa.Column("request_id", _req),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("sent_at", _ts),
)

requests = sa.Table(
    "requests",
    metadata,
    sa.Column("request_id", _req, primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("assets_json", sa.Text, nullable=False),
    sa.Column("partitions_json", sa.Text, nullable=False),
    sa.Column("code_version", sa.String(80), nullable=False),
    sa.Column("reprocess", sa.String(16), nullable=False),
    sa.Column("downstream", sa.String(16), nullable=False),
    sa.Column("confirm_cascade", sa.Boolean, nullable=False, default=False),
    sa.Column("order", sa.String(16), nullable=False),
    sa.Column("max_active", sa.Integer, nullable=False),
    sa.Column("partitions_per_run", sa.Integer, nullable=False, default=1),
    # How partitions_per_run was chosen: "explicit" or "auto: <why>"; NULL in a catalog from before (explicit).
    sa.Column("partitions_per_run_mode", sa.Text),
    sa.Column("only_failed", sa.Boolean),  # clear --only-failed (NULL in catalogs older than it: false)
    # A depends-on-past asset is selected, so intervals run one at a time whatever max_active (NULL in catalogs
    # older than it, whose max_active column holds the effective value: false reads back right).
    sa.Column("serial", sa.Boolean),
    sa.Column("wait_for_overlap", sa.Boolean),  # NULL in catalogs older than it: false
    sa.Column("conf_json", sa.Text, nullable=False),
    sa.Column("side_effects_json", sa.Text, nullable=False),
    sa.Column("approved_by", sa.String(120)),
    sa.Column("requested_by", sa.String(120), nullable=False),
    # Who the system saw create it (OS user, Dagster's launching user) beside the names stated; NULL before 0002.
    sa.Column("system_user", sa.String(120)),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("requested_at", _ts, nullable=False),
    sa.Column("source", sa.String(16), nullable=False),  # cli | dagster (adopted)
    sa.Column("message", sa.Text),
    sa.Column("confirmed_at", _ts),
    sa.Column("closed_at", _ts),
)

request_items = sa.Table(
    "request_items",
    metadata,
    sa.Column("request_id", _req, primary_key=True),
    sa.Column("asset", _asset, primary_key=True),
    sa.Column("partition_key", _key, primary_key=True),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),  # planned | cascade | handoff
    sa.Column("decision", sa.String(24), nullable=False),  # pending | submitted | skipped | cancelled | ...
    sa.Column("reason", sa.Text),
    sa.Column("run_id", sa.String(64)),
    sa.Column("run_key", sa.String(255)),
    sa.Column("submitted_at", _ts),
    sa.Column("updated_at", _ts, nullable=False),
    sa.Column("skip_kind", sa.String(24)),  # a skipped cell's SkipKind (left_unpublished | marked | decided)
)

claims = sa.Table(
    "claims",
    metadata,
    sa.Column("asset", _asset, primary_key=True),
    sa.Column("partition_key", _key, primary_key=True),
    sa.Column("request_id", _req, nullable=False),
    sa.Column("claimed_at", _ts, nullable=False),
)

# Every pause of a request (`request pause` / `request resume`), kept after the resume: who stopped it, when and
# why, and the status (and message) its resume restores. At most one row per request has resumed_at NULL.
request_pauses = sa.Table(
    "request_pauses",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("request_id", _req, nullable=False),
    sa.Column("paused_at", _ts, nullable=False),
    sa.Column("paused_by", sa.String(120), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("status_before", sa.String(16), nullable=False),
    sa.Column("message_before", sa.Text),
    sa.Column("resumed_at", _ts),
    sa.Column("resumed_by", sa.String(120)),
    sa.Index("ix_request_pauses_request", "request_id", "id"),
)

handoffs = sa.Table(
    "handoffs",
    metadata,
    sa.Column("handoff_id", sa.String(80), primary_key=True),
    sa.Column("request_id", _req, nullable=False),
    sa.Column("asset", _asset, nullable=False),
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("partitions_json", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("deadline", _ts, nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("decided_at", _ts),
    sa.Column("decided_by", sa.String(120)),
    sa.Column("system_user", sa.String(120)),  # who the system saw decide, beside decided_by (NULL before 0002)
)

# Named cursors kept in the catalog (not only in Dagster's sensor state) so the driver can tell whether the
# propagation sensor has seen every publish of a request before it closes that request.
cursors = sa.Table(
    "cursors",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.BigInteger, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
)

# Cells a backfill launched from Dagster (UI, `dagster job backfill`) left alone at the start of their step, and
# why (its reprocess policy, a run in flight, an unauthorized side effect): the adoption sensor turns them into
# `skipped` cells with that reason.
admissions = sa.Table(
    "admissions",
    metadata,
    sa.Column("dagster_run_id", sa.String(64), primary_key=True),
    sa.Column("asset", _asset, primary_key=True),
    sa.Column("partition_key", _key, primary_key=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("at", _ts, nullable=False),
    sa.Column("skip_kind", sa.String(24)),  # SkipKind; rows that predate it were decided by the policy
    # The run found writing the cell (left alone because in flight): the adopted request follows its outcome.
    sa.Column("followed_run_id", sa.String(64)),
)

# An operator's overrides, never silent (backfill-assets accept / reject / skip): who decided what about which version
# or cell, when and why. Rows are only added: a withdrawn skip mark is an `unskip` row after the `skip` row.
overrides = sa.Table(
    "overrides",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("action", sa.String(16), nullable=False),  # accept | reject | skip | unskip | register
    sa.Column("asset", _asset, nullable=False),
    sa.Column("partition_key", _key, nullable=False),
    sa.Column("version_id", _vid),  # the version accepted or rejected; NULL for a cell's skip mark
    sa.Column("decided_by", sa.String(120), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("at", _ts, nullable=False),
    sa.Column("publish_seq", sa.BigInteger),  # the publish_log row of an accept (publish) or reject (rollback)
    sa.Column("system_user", sa.String(120)),  # who the system saw decide, beside decided_by (NULL before 0002)
    sa.Index("ix_overrides_cell", "asset", "partition_key"),
    sa.Index("ix_overrides_version", "version_id"),
)

# Every operation made through the service (backfill_assets.service), whichever door it came through: who, from
# which surface (python | cli | launchpad | dagster), what on which target, when, why, and its outcome in a line.
# Rows are only added; the tables each operation changes (requests, request_pauses, overrides, publish_log,
# handoffs) stay the truth, this is the trail across them.
operations = sa.Table(
    "operations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", _ts, nullable=False),
    sa.Column("operation", sa.String(32), nullable=False),  # create | cancel | pause | resume | rollback | ...
    sa.Column("surface", sa.String(16), nullable=False),
    sa.Column("actor", sa.String(120), nullable=False),
    sa.Column("target", sa.String(255), nullable=False),  # a request id, version id, asset/day, handoff id
    sa.Column("request_id", _req),  # the request it concerns, when one does (the filter of `request show`)
    sa.Column("reason", sa.Text),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Index("ix_operations_request", "request_id"),
)

# An external engine's ids (a subprocess, a Kubernetes pod, a Spark application) recorded with the version it
# computed (RunContext.report_engine_id), so `backfill-assets trace <id>` finds the version from the engine's side.
engine_refs = sa.Table(
    "engine_refs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("version_id", _vid, nullable=False),
    sa.Column("engine", sa.String(64), nullable=False),  # what kind: subprocess, kubernetes_pod, spark_application
    sa.Column("engine_id", sa.String(255), nullable=False),
    sa.Column("at", _ts, nullable=False),
    sa.Index("ix_engine_refs_engine_id", "engine_id"),
    sa.Index("ix_engine_refs_version", "version_id"),
)

# Write-target quotas (engine/store/target_slots.py): one row per slot taken of a target's limit, a lease its holder
# renews while it writes, audits and publishes; a lease not renewed (its worker killed) expires and the slot is
# taken again. Waiters queue by priority (production first), then by arrival; a waiter that stops polling expires too.
target_slots = sa.Table(
    "target_slots",
    metadata,
    sa.Column("target", sa.String(64), primary_key=True),
    sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("holder", sa.String(64), nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("dagster_run_id", sa.String(64)),
    sa.Column("asset", _asset),
    sa.Column("partition_key", _key),
    sa.Column("acquired_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
)

target_slot_waiters = sa.Table(
    "target_slot_waiters",
    metadata,
    sa.Column("target", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(64), primary_key=True),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("since", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
)

# One daemon per catalog (engine/store/daemon_lease.py): the lease a running backfill-assets-daemon holds and renews,
# taken over only once it expires (or at once when its holder's process is known dead on the same host).
daemon_lease = sa.Table(
    "daemon_lease",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(64), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("pid_scope", sa.String(255), nullable=False),  # where ``pid`` means a process: host, boot, namespace
    sa.Column("instance", sa.Text, nullable=False),  # the DAGSTER_HOME it runs on
    sa.Column("acquired_at", _ts, nullable=False),
    sa.Column("renewed_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
)

# One row per request the driver has ticked: ``seq`` is the tick token a driver reads before it reads the cells and
# advances by compare-and-set when it records its decisions, so of two drivers ticking one request at once only the
# first records (and submits) anything.
driver_ticks = sa.Table(
    "driver_ticks",
    metadata,
    sa.Column("request_id", _req, primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("ticked_at", _ts, nullable=False),
)

# Which code location writes an asset's versions (engine/store/asset_owners.py): claimed by the first attempt it
# begins, so a second code location on the same catalog that declares the same asset name is refused before it
# writes, instead of superseding the first location's days.
asset_owners = sa.Table(
    "asset_owners",
    metadata,
    sa.Column("asset", _asset, primary_key=True),
    sa.Column("location", sa.String(200), nullable=False),
    sa.Column("claimed_at", _ts, nullable=False),
)
