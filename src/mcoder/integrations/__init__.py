"""mcoder's judge where people already train: outside trainers and services call it from here.

- ``columns``: a problem from a dataset's columns, a verl ground truth, or a problems file;
- ``trl_reward``: ``JudgeReward``, a reward function for TRL's ``GRPOTrainer(reward_funcs=...)``;
- ``verl_reward``: ``compute_score``, verl's custom reward function;
- ``serve``: ``mcoder judge serve``, the judge as an HTTP service (SandboxFusion's ``run_code``
  and a native endpoint), on uvicorn + Starlette (the ``serve`` extra);
- ``remote``: ``RemoteJudge``, a client of one or more such services with ``Judge``'s interface.

These modules sit above ``mcoder.judge`` and use only ``Judge``'s public API; nothing below
imports them.
"""
