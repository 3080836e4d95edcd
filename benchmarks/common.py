"""What the benchmarks share: where things are, one parser shape, one way to run an mcoder stage,
the tiny model, results files written through mcoder's output guard, and resuming a measurement
that stopped part-way.

Every benchmark is a module of this package, run from the repository root in either form:

    python -m benchmarks.NAME [options]
    python benchmarks/NAME.py [options]

The second form puts this folder first on ``sys.path`` instead of the root, so each benchmark
imports this module by the name its form gives it (``benchmarks.common`` when it was run or
imported as part of the package, ``common`` when it was run as a file): no benchmark edits
``sys.path``. Nothing here is imported from ``tests/``: the tiny model and the small problems are
``mcoder.testing``'s, the warm start is ``mcoder.warmstart``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcoder.warmstart import WarmStartConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PROBLEMS = EXAMPLES / "problems"  # the bundled example problems (stdin.jsonl, call.jsonl)
LEARN = EXAMPLES / "learn"  # the learning proof's problem family
LONG = EXAMPLES / "long"  # its long-answer variant


def shared_data() -> Path:
    """The third-party problem sets: $MCODER_SHARED_DATA, else ``shared/data`` beside the checkout."""
    return Path(os.environ.get("MCODER_SHARED_DATA", ROOT.parent / "shared" / "data"))


# ---------------------------------------------------------------- the command line


def parser(doc: str | None, *, whole_doc: bool = False) -> argparse.ArgumentParser:
    """The benchmark's parser: its docstring's first paragraph as the description (``whole_doc``:
    the whole docstring, as written)."""
    doc = doc or ""
    if whole_doc:
        return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=doc.split("\n\n")[0])


def seeds(text: str) -> list[int]:
    """``0,1,2`` -> [0, 1, 2] (empty parts skipped)."""
    return [int(s) for s in text.split(",") if s.strip()]


def measurement_parser(doc: str | None, **defaults) -> argparse.ArgumentParser:
    """The options of a learning measurement (warm start, RL runs, held-out evaluation) that
    learning_proof.py and long_ablation.py share; ``defaults`` sets each one's default there.
    Every key must be one of them (``out``, ``train``, ...)."""
    p = parser(doc)
    options: list[tuple[str, dict]] = [
        ("--out", {"type": Path, "help": "folder for everything written"}),
        ("--seeds", {"default": "0,1,2", "help": "comma-separated seeds"}),
        ("--train", {"type": Path, "help": "train problems (JSONL with reference solutions)"}),
        ("--heldout", {"type": Path, "help": "held-out problems (never trained on)"}),
        ("--layers", {"type": int, "default": 2, "help": "tiny model layers"}),
        ("--sft-steps", {"type": int, "default": 1500, "help": "warm-start optimizer steps (the most)"}),
        ("--warm-target", {"type": float, "help": "the warm start stops once its gate, read on train problems "
                           "it leaves out, reaches this (0: no gate, all --sft-steps on every train problem)"}),
        ("--steps", {"type": int, "help": "RL loop steps per run"}),
        ("--n", {"type": int, "default": 8, "help": "G, samples per problem in training"}),
        ("--batch", {"type": int, "default": 16, "help": "problems per RL step"}),
        ("--mini-batch", {"type": int, "default": 4, "help": "prompt groups per optimizer step"}),
        ("--micro-batch", {"type": int, "default": 16, "help": "sequences per forward/backward"}),
        ("--lr", {"type": float, "default": 3e-4, "help": "RL learning rate (full fine-tuning)"}),
        ("--max-tokens", {"type": int, "help": "L_max of training (the train budget), the warm start's gate and evaluation"}),
        ("--eval-max-tokens", {"type": int, "help": "the test budget: held-out pass@1 is measured at it too "
                               "(default: the train budget alone)"}),
        ("--eval-n", {"type": int, "help": "held-out samples per problem"}),
        ("--eval-temperature", {"type": float, "default": 1.0}),
        ("--jobs", {"type": int, "default": 1, "help": "seeds (runs) side by side (2 on a 2-core CPU)"}),
        ("--smoke", {"action": "store_true", "help": "tiny sizes: checks the plumbing, proves nothing"}),
    ]
    declared = set()
    for flag, kw in options:
        dest = flag[2:].replace("-", "_")
        declared.add(dest)
        if dest in defaults:
            kw = {**kw, "default": defaults[dest]}
        p.add_argument(flag, **kw)
    unknown = set(defaults) - declared
    if unknown:
        raise ValueError(f"measurement_parser: no option {', '.join(sorted(unknown))}")
    return p


def smoke_sizes(args: argparse.Namespace, sizes: Mapping[str, object]) -> argparse.Namespace:
    """With --smoke, the plumbing-check sizes ``sizes`` replace the measured ones."""
    if getattr(args, "smoke", False):
        for k, v in sizes.items():
            setattr(args, k, v)
    return args


def config_dict(args: argparse.Namespace) -> dict:
    """The settings of a measurement as JSON-able values (what ``Results`` compares on a rerun)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}


# ---------------------------------------------------------------- running a stage


def mcoder_cmd() -> list[str]:
    """The mcoder command: $MCODER (split as a shell would), else this Python's ``-m mcoder``."""
    if os.environ.get("MCODER"):
        return shlex.split(os.environ["MCODER"])
    return [sys.executable, "-m", "mcoder"]


def mcoder(*args) -> list[str]:
    """``mcoder ARGS`` as an argument list (every argument made a string)."""
    return [*mcoder_cmd(), *map(str, args)]


@dataclass
class Ran:
    """One finished command: exit code, wall seconds, its stdout ("" when it went to the log)."""

    returncode: int
    seconds: float
    stdout: str
    log: Path

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def run_stage(
    cmd: Iterable,
    log: Path,
    *,
    check: bool = True,
    echo: bool = True,
    output_to_log: bool = False,
    append: bool = True,
    cwd: Path | None = None,
) -> Ran:
    """Run one stage (an mcoder command, or any command) in a subprocess and wait for it.

    Its stderr goes to ``log`` (appended, or the log started afresh with ``append=False``), and
    its stdout too with ``output_to_log``, else it is returned. ``echo``: print the command on
    stderr first. ``check``: a non-zero exit ends the benchmark (SystemExit naming the log)."""
    cmd = [str(c) for c in cmd]
    if echo:
        print("  $ " + " ".join(cmd), file=sys.stderr, flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "a" if append else "w") as f:
        done = subprocess.run(
            cmd,
            stdout=f if output_to_log else subprocess.PIPE,
            stderr=subprocess.STDOUT if output_to_log else f,
            text=True,
            cwd=cwd,
            check=False,
        )
    ran = Ran(done.returncode, time.perf_counter() - t0, done.stdout or "", log)
    if check and done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}; see {log}")
    return ran


def warm_start_cmd(problems: Path, out: Path, config: WarmStartConfig) -> list[str]:
    """The supervised warm start (``python -m mcoder.warmstart``) into ``out`` with the settings
    of ``config``: a flag for each one that is not its default (``steps=1500`` -> ``--steps 1500``),
    in the order of the fields."""
    cmd = [sys.executable, "-m", "mcoder.warmstart", "--problems", problems, "--out", out]
    default = WarmStartConfig()
    for f in dataclasses.fields(config):
        if getattr(config, f.name) != getattr(default, f.name):
            cmd += [f"--{f.name.replace('_', '-')}", getattr(config, f.name)]
    return [str(c) for c in cmd]


# ---------------------------------------------------------------- the tiny model


def tiny_model(root: Path, name: str = "tiny") -> Path:
    """The model ``name`` (``tiny``, a Qwen3 shape, ``SHAPE:LAYERS``: mcoder.testing.named_spec)
    built once under ``root`` (``root/qwen3-0.6b-2``), random weights."""
    from mcoder.testing import make_tiny_model, named_spec

    return make_tiny_model(Path(root) / name.replace(":", "-"), named_spec(name))


# ---------------------------------------------------------------- held-out evaluation


def pass_at_1(verdicts: Path) -> float:
    """Mean over problems of the share of accepted samples (the unbiased pass@1), in [0, 1]."""
    per: dict[str, list[bool]] = {}
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        per.setdefault(v["problem_id"], []).append(bool(v["passed"]))
    return statistics.fmean(sum(p) / len(p) for p in per.values()) if per else 0.0


def evaluate(
    model: Path,
    out: Path,
    *,
    problems: Path,
    n: int,
    max_tokens: int,
    temperature: float,
    seed: int,
    log: Path,
    baseline: Path | None = None,
) -> float:
    """Held-out pass@1 of ``model`` with `mcoder rollout` + `judge` + `bench`: rollouts, verdicts
    and the bench tables (``baseline``: verdicts to compare with) under ``out``. The bench table
    (bench.json) is written last: its presence means a whole evaluation."""
    out.mkdir(parents=True, exist_ok=True)
    rollouts, verdicts = out / "rollouts.jsonl", out / "verdicts.jsonl"
    run_stage(mcoder("rollout", "-p", problems, "-m", model, "-o", rollouts, "--n", n, "--max-tokens",
                     max_tokens, "-t", temperature, "--seed", seed, "--overwrite", "-q"), log)  # fmt: skip
    run_stage(mcoder("judge", "-p", problems, "-r", rollouts, "-o", verdicts, "--overwrite", "-q"), log)
    bench = mcoder("bench", "-p", problems, "--verdicts", verdicts, "--markdown", out / "bench.md",
                   "--json", out / "bench.json", "-q")  # fmt: skip
    if baseline is not None:
        bench += ["--baseline", str(baseline)]
    run_stage(bench, log)
    return pass_at_1(verdicts)


def plots(runs: list[Path], out_dir: Path, log: Path) -> None:
    """The training figures of ``runs`` (loop run folders) on shared axes, in ``out_dir``."""
    if runs:
        cmd = mcoder("bench", "--plots", "--out-dir", out_dir, "-q")
        for r in runs:
            cmd += ["--run-dir", str(r)]
        run_stage(cmd, log)


# ---------------------------------------------------------------- a learning measurement
# (learning_proof.py, long_ablation.py: ``args`` holds the options of measurement_parser)


def warm_start(args: argparse.Namespace, warm: Path, seed: int, log: Path, **more) -> Path:
    """The seed's warm start into ``warm``, unless a whole one is there already (mcoder.warmstart
    moves a finished model into place: a folder with config.json is whole); ``more``: further
    settings of ``WarmStartConfig`` by name."""
    if not (warm / "config.json").exists():
        config = WarmStartConfig(
            steps=args.sft_steps, seed=seed, layers=args.layers, target_pass=args.warm_target,
            max_tokens=args.max_tokens, **more,
        )  # fmt: skip
        run_stage(warm_start_cmd(args.train, warm, config), log)
    return warm


def heldout(
    model: Path, out: Path, args: argparse.Namespace, seed: int, log: Path, baseline=None, max_tokens=None
) -> float:
    """Held-out pass@1 of ``model`` (in [0, 1]), measured the same way for a warm start and every
    run of the seed (``evaluate`` on --heldout, --eval-n samples at --eval-temperature), at
    ``max_tokens`` (default: the train budget, --max-tokens)."""
    return evaluate(
        model, out, problems=args.heldout, n=args.eval_n, max_tokens=max_tokens or args.max_tokens,
        temperature=args.eval_temperature, seed=1000 + seed, log=log, baseline=baseline,
    )  # fmt: skip


def test_budget(args: argparse.Namespace) -> int | None:
    """The test budget when it differs from the train budget (--eval-max-tokens), else None: a
    measurement then evaluates at the train budget alone, as before the option existed."""
    tb = getattr(args, "eval_max_tokens", None)
    return tb if tb is not None and tb != args.max_tokens else None


def heldout_at_test_budget(model: Path, out: Path, args, seed: int, log: Path, baseline=None) -> float | None:
    """Held-out pass@1 at the test budget, in ``OUT-L{budget}`` beside ``out`` (its baseline the
    warm start's at that budget), or None when there is no separate test budget. A finished
    evaluation (bench.json written) is read back, not redone."""
    tb = test_budget(args)
    if tb is None:
        return None
    where = out.with_name(f"{out.name}-L{tb}")
    if (where / "bench.json").exists():
        return pass_at_1(where / "verdicts.jsonl")
    base = None if baseline is None else Path(baseline).parent.with_name(f"{Path(baseline).parent.name}-L{tb}") / "verdicts.jsonl"
    return heldout(model, where, args, seed, log, baseline=base, max_tokens=tb)


def loop_command(warm: Path, run: Path, args: argparse.Namespace, seed: int, algo: str) -> list[str]:
    """`mcoder loop` from the warm start at the measurement's sizes, a checkpoint at the
    end; the caller adds its own settings after it."""
    return mcoder(
        "loop", "--model", warm, "--problems", args.train, "--run-dir", run, "--algo", algo,
        "--steps", args.steps, "--n", args.n, "--train-batch-size", args.batch,
        "--mini-batch-size", args.mini_batch, "--micro-batch-size", args.micro_batch,
        "--max-tokens", args.max_tokens, "--lr", args.lr, "--seed", seed, "--save-every", args.steps, "-q",
    )  # fmt: skip


# ---------------------------------------------------------------- results, through the output guard


def write_result(path: Path, text: str, *, benchmark: str) -> None:
    """A results file written whole through mcoder's output guard (``write_document``): under its
    lock, through a temp file, with its ``.meta.json`` beside it; a file mcoder did not write, or
    one changed since, is never replaced (exit 2)."""
    from mcoder.outputs import write_document

    write_document(path, text, stage=f"benchmark {benchmark}", flag="--out")


def write_json(path: Path, data, *, benchmark: str, indent: int = 2, end: str = "") -> None:
    """``data`` as JSON (``indent``, then ``end``) through ``write_result``."""
    write_result(path, json.dumps(data, indent=indent) + end, benchmark=benchmark)


class Results:
    """The rows of a measurement in ``OUT/results.json`` (``{"config": ..., "rows": [...]}``) and
    what a rerun into the same OUT keeps of them: every row, when the settings are the same but
    for ``run_only`` (the settings that choose what to run, not how), so a rerun measures only
    what is missing; none, when another setting changed (the old files are moved to ``*.old``).
    A setting the old run did not have yet reads as unset (None), so adding an option to a
    benchmark does not discard the rows of every earlier run.

    ``files``: the results files the benchmark writes in OUT (the first is results.json); all are
    written through the output guard (``write_result``), and a set written before they were (no
    ``.meta.json`` beside results.json) is moved to ``*.old``, its rows written again at once
    through the guard."""

    def __init__(self, out: Path, benchmark: str, run_only: Iterable[str], files=("results.json", "results.md")):
        self.out, self.benchmark, self.run_only = Path(out), benchmark, frozenset(run_only)
        self.files = [self.out / f for f in files]
        self.path = self.files[0]

    def load(self, config: Mapping) -> list[dict]:
        from mcoder.outputs import read_sidecar

        if not self.path.exists():
            return []
        old = json.loads(self.path.read_text())
        new = {k: v for k, v in config.items() if k not in self.run_only}
        if {k: old.get("config", {}).get(k) for k in new} != new:
            self._aside()
            print(f"{self.path}: other settings, moved to {self.path.name}.old; starting over", file=sys.stderr)
            return []
        if read_sidecar(self.path) is None:  # written before results went through the output guard
            self._aside()
            write_json(self.path, old, benchmark=self.benchmark)  # the same rows, now the guard's
            print(f"{self.path}: rows kept; the file as it was is {self.path.name}.old", file=sys.stderr)
        return list(old.get("rows", []))

    def _aside(self) -> None:
        for f in self.files:
            if f.exists():
                f.rename(f.with_name(f.name + ".old"))

    def save(self, config: Mapping, rows: list[dict], markdown: str, **more) -> None:
        write_json(self.path, {"config": dict(config), "rows": rows, **more}, benchmark=self.benchmark)
        if len(self.files) > 1:
            write_result(self.files[1], markdown, benchmark=self.benchmark)


def claim_out(out: Path, name: str, flag: str = "--out", *, make: bool = True) -> None:
    """Make ``out`` the folder of benchmark ``name`` (``mcoder.outputs.claim_folder``, marker
    ``.mcoder-NAME``): a benchmark removes or rewrites files of its own names under its --out (or
    ``flag``), so a folder that is not new, empty or its own (a link, a file, someone's folder) is
    refused: the error on stderr and exit 2. ``make=False``: the checks alone, nothing written."""
    from mcoder.errors import McoderError
    from mcoder.outputs import claim_folder

    try:
        claim_folder(out, f".mcoder-{name}", flag=flag, make=make)
    except McoderError as e:
        print(e.plain(), file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as e:
        print(f"error: {flag} {out}: {e.strerror or e}", file=sys.stderr)
        raise SystemExit(2) from None


def one_writer(out: Path, run: Callable[[], int], name: str) -> int:
    """``run()`` in OUT, the folder of benchmark ``name`` (``claim_out``), while holding OUT's lock
    (``OUT.lock``, as every mcoder stage): a second measurement into the same folder would delete
    the first one's run folders under it. It exits 2 at once instead, naming the holder or what is
    wrong with OUT, before writing anything."""
    from mcoder.errors import UsageError
    from mcoder.outputs import hold_lock

    claim_out(out, name, make=False)  # before the lock file is made beside it
    try:
        lock = hold_lock(out)
        lock.__enter__()
    except UsageError as e:
        print(f"{e}", file=sys.stderr)
        return 2
    try:
        claim_out(out, name)  # again, now that no other run can change it
        return run()
    finally:
        lock.__exit__(None, None, None)


# ---------------------------------------------------------------- the memory model's extrapolation
# (benchmarks/memory_model.py measures the constants ``m``; gpu_bench.py sets its figures beside
# what a GPU measures)


@dataclass(frozen=True)
class MemoryTarget:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool

    def layer_params(self) -> int:
        attn = self.hidden * self.head_dim * (self.heads + 2 * self.kv_heads) + self.heads * self.head_dim * self.hidden
        return attn + 3 * self.hidden * self.intermediate + 2 * self.hidden + 2 * self.head_dim

    def edge_params(self) -> int:
        """Embeddings, the output layer (once when tied) and the final norm."""
        return self.vocab * self.hidden * (1 if self.tied else 2) + self.hidden

    def params(self) -> int:
        return self.layers * self.layer_params() + self.edge_params()


# Qwen3's dense checkpoints (their config.json)
QWEN3_TARGETS = [
    MemoryTarget("Qwen3-1.7B", 28, 2048, 16, 8, 128, 6144, 151936, True),
    MemoryTarget("Qwen3-4B", 36, 2560, 32, 8, 128, 9728, 151936, True),
    MemoryTarget("Qwen3-8B", 36, 4096, 32, 8, 128, 12288, 151936, False),
]


def update_bytes(t: MemoryTarget, m: dict, tokens: int, chunk: int, shards: int = 1) -> float:
    """The update's peak: its forward/backward (activation checkpointing on) or its optimizer step."""
    # kept layer inputs, one layer's activations recomputed in the backward, the log-prob chunk
    act = tokens * t.hidden * (t.layers * m["per_token_on"] + m["per_token_off"]) + chunk * t.vocab * m["per_logit"]
    if shards == 1:
        return max(t.params() * m["per_param"] + act, t.params() * m["per_param_opt"])
    gathered = 2 * (2 * t.layer_params() + t.edge_params())  # bf16: two layers (prefetch) and the root
    sharded = t.params() / shards
    return max(sharded * 16 + gathered + act, sharded * m["per_param_opt"])  # master, gradient, moments


def resident_bytes(t: MemoryTarget, m: dict, shards: int = 1) -> float:
    """What the trainer holds between updates (while vLLM samples): weights and moments."""
    return t.params() / shards * m["per_param_resident"]
