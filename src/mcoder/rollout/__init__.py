"""Stage 2: problems -> groups of sampled completions (sampling, diversity, temperature;
the engines that generate are ``mcoder.engines``)."""
