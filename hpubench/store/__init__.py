"""Results on disk: the versioned record, the run directory (lock, append-only records), baselines, merges."""
