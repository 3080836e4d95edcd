"""mcoder: reinforcement learning for code models, as composable command-line stages.

Importing this package must stay cheap: it holds the version and nothing else, so that
``mcoder --help`` never pays for torch, transformers or vllm.
"""

__version__ = "0.1.0"
