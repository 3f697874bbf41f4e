"""Run tag names (docs/ARCHITECTURE.md#run-tags). Plain strings so the engine and the Dagster integration share them."""

REQUEST_ID = "backfill/request_id"
CODE_VERSION = "backfill/code_version"
REPROCESS = "backfill/reprocess"
DOWNSTREAM = "backfill/downstream"
LANE = "backfill/lane"
# The team a backfill run is charged to (engine/model/gates.py): the run queue limits runs per team.
TEAM = "backfill/team"
REQUESTED_BY = "backfill/requested_by"
REQUESTED_AT = "backfill/requested_at"
ALLOW_SIDE_EFFECTS = "backfill/allow_side_effects"
APPROVED_BY = "backfill/approved_by"
# Launch tags of a backfill started from Dagster (the UI's dialog, `dagster job backfill`): its pacing and order.
MAX_ACTIVE = "backfill/max_active"
ORDER = "backfill/order"
REASON = "backfill/reason"
# A run of such a backfill waits in the queue ("held", a tag limit of 0 in dagster.yaml) until every run before it
# in the backfill's order has been queued, then is "released": the queue can then start them in that order.
QUEUE_HOLD = "backfill/queue_hold"
HELD = "held"
RELEASED = "released"
# One of a request's max_active run slots ("<request id>/<n>"); the instance runs one run per slot at a time, so
# the driver can queue a run behind each running one and the queue starts it the moment its slot frees.
SLOT = "backfill/slot"
# A run that shows a request's plan or report in the UI (the Launchpad's backfill_request, backfill_report): it
# computes nothing, so it is never one of the request's runs (those carry backfill/request_id).
REPORT_OF = "backfill/report_of"
# Where a run forked by the warm run launcher runs: host:pid:start_ticks (terminate and health checks find it).
RUN_WORKER = "backfill/run_worker"
# A request's run queued by the driver tick its previous run did when it ended (the run id of that run), rather
# than by the driver sensor's tick or `request create`'s.
QUEUED_BY = "backfill/queued_by"
# A batched (chunk) run: the days and assets it writes (it is an op job, so Dagster's partition tags do not apply).
CHUNK_FIRST = "backfill/chunk_first"
CHUNK_LAST = "backfill/chunk_last"
CHUNK_ASSETS = "backfill/chunk_assets"
# A run a command runs in its own process (the demo's production days, run_partitions, run_chunk): "stop" makes
# Ctrl-C stop its step rather than retry it (integration/assets/interrupted_steps.py).
ON_INTERRUPT = "backfill/on_interrupt"
ON_INTERRUPT_STOP = "stop"

# Asset tag marking an asset whose step acts on the outside world.
SIDE_EFFECT = "backfill/side_effect"
DEPENDS_ON_PAST = "backfill/depends_on_past"
# Asset tags: the order a request runs the asset's days in ("any", "forward", "backward") and whether several of
# its days may run at once ("true" / "false"), as declared (engine/model/day_order.py).
DAY_ORDER = "backfill/day_order"
PARALLEL_DAYS = "backfill/parallel_days"

LANE_PRODUCTION = "production"
LANE_BACKFILL = "backfill"
LANE_MANUAL = "manual"

PRIORITY_PRODUCTION = 10
PRIORITY_BACKFILL = -5

# Dagster's own tags, used as they are.
DAGSTER_BACKFILL = "dagster/backfill"
DAGSTER_PARTITION = "dagster/partition"
DAGSTER_SENSOR = "dagster/sensor_name"
DAGSTER_RUN_KEY = "dagster/run_key"
DAGSTER_SCHEDULE = "dagster/schedule_name"
DAGSTER_PRIORITY = "dagster/priority"
DAGSTER_ROOT_RUN_ID = "dagster/root_run_id"
DAGSTER_RETRY_NUMBER = "dagster/retry_number"
DAGSTER_RANGE_START = "dagster/asset_partition_range_start"
DAGSTER_RANGE_END = "dagster/asset_partition_range_end"

ADOPTED_PREFIX = "dg-"
