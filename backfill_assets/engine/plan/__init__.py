"""Planning: reprocess decisions, the driver tick, lineage, propagation, reconcile, adoption, gc."""
