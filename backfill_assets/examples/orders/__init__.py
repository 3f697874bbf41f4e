"""The orders demo: Asia/Shanghai business days, raw_orders → order_facts → daily_revenue / customer_snapshot →
revenue_alert. Its code location is ``backfill_assets.examples.orders.definitions``."""

MODULE = "backfill_assets.examples.orders.definitions"
# The same code location with its steps on Celery workers (deploy/celery, `make demo-distributed`).
CELERY_MODULE = "backfill_assets.examples.orders.on_celery"
