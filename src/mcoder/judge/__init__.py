"""Stage 3: judge rollouts by running their code in a sandbox against the tests."""
