"""Stage 2: problems -> groups of sampled completions (engines, sampling, diversity, temperature)."""
