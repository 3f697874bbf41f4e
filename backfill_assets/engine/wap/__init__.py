"""Write–audit–publish: the gate, the audits, compute by the asset's transform, defects and fault points."""
