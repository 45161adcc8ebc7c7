"""Read-only analyses of a loaded index: near-duplicates, outliers, topics over time, bridges, evaluation."""
