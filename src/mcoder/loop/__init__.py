"""``mcoder loop``: the RL loop that drives rollout, judge and train in one run.

config.py       LoopConfig: a TrainConfig, a SamplingConfig, a JudgeConfig and the loop's own settings
loop.py         run_loop: one loop for one process and torchrun
samplers.py     what samples and how it follows the policy (hf live policy, hf synced copy, vLLM)
temperature_stages.py  the sampling temperature by step (fixed, schedule, diversity stages)
run_folder.py   every file the loop writes
"""
