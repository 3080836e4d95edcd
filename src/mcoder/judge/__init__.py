"""Stage 3: judge rollouts by running their code in a sandbox against the tests.

Modules, in the order a rollout meets them (after ``mcoder.extract`` found the program in its
completion: the last fenced Python block, else bare code):

- ``core``: ``Judge``, the library entry point (warm pool, cache, comparison, verdicts);
- ``cache``: outcomes by (program, tests, limits, comparison), so identical programs run once;
- ``pool``: the judge's side of the warm workers (start, hand out, restart);
- ``worker``: a warm fork server in the sandbox, one candidate (or check) at a time;
- ``harness``: what runs inside a candidate process (limits, stdin tests, serving calls);
- ``checker``: the trusted side of a functional test, in a process of its own;
- ``plain``: the plain data (and nothing else) that crosses between candidate and judge;
- ``framing``: the length-prefixed frames every pipe of the judge carries;
- ``sandbox``: the Linux isolation (namespaces, Landlock, seccomp, cgroups, user ids, rlimits,
  cleanup), a module per concern, and what it guarantees and what not;
- ``libraries``: which installed libraries a problem's programs may import (library profiles);
- ``compare``: whether an output or return value answers a test;
- ``stage``: ``mcoder judge`` on files (shards, resume, progress, summary);
- ``explain``: ``mcoder judge --explain``, one rollout judged again and every test printed;
- ``config``: ``JudgeConfig``.
"""
