"""The model: intervals, identity, states, errors, tags, the asset graph, request specs, settings."""
