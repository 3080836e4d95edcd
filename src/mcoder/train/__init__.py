"""Stage 4: turn rollouts and verdicts into policy updates (GRPO, DAPO, MicroCoder-GRPO)."""
