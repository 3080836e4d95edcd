"""``mcoder dataset difficulty predict``: a model rates each problem's difficulty on several
weighted dimensions; the weighted score is what ``calibrate`` maps to a pass rate.

Scoring a problem costs one short generation; measuring its pass rate costs G full solutions and
a judge run each. That is the point of the MicroCoder dataset paper's filter.

Each problem gets one record in the scores file, keyed by ``problem_id``::

    {"schema": 1, "problem_id": "p1", "status": "ok", "scores": {"algorithmic_thinking": 7, ...},
     "score": 6.1, "attempts": 1, "error": null, "answer": "algorithmic_thinking: 7\\n...", "model": "M"}

``status`` is ``ok``; ``malformed`` when no attempt gave a score for every dimension in range
(``error`` says what the last one lacked); or ``too_long`` when the prompt does not fit the model's
context. A malformed answer is asked again up to ``--retries`` times with new seeds; it never stops
the run. The output is claimed and resumed like every stage's (``mcoder.outputs``): a killed run
rerun continues after the last problem written, and no problem is written twice.

``--scoring expected`` generates nothing (``rate_expected``): each dimension's score is the
expected rating under the model's next-token probabilities, which any causal LM gives, so a small
model that never writes the asked format still ranks problems. Its records have the same fields,
plus ``rating_mass`` (per dimension: the probability the model put on a rating at all) and
``rating_mass_mean``; ``answer`` shows each dimension's expected score and mass.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcoder import console
from mcoder.dataset.config import PredictConfig, parse_dimensions
from mcoder.errors import UsageError
from mcoder.jsonl import RecordWriter
from mcoder.outputs import Claim, Job, execute
from mcoder.prompts import difficulty_messages, render_messages
from mcoder.records import SCHEMA_VERSION, Problem

SCALE = (1.0, 10.0)
RATINGS = tuple(range(1, 11))  # what --scoring expected weighs: the whole numbers of SCALE
NO_RATING = "no probability on any rating"
ANSWER_KEPT = 300  # characters of the last answer kept in a record (to read why it failed)
SCORE_FIELDS = ("problem_id", "status", "score")

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_LINE = re.compile(
    r"^[\s>*#`\-\d.)]*([A-Za-z][A-Za-z _-]*?)\**\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*10)?\b"
)
_JSON = re.compile(r"\{[^{}]*\}", re.DOTALL)


class Malformed(ValueError):
    """An answer that does not give every dimension a score in range; the message says why."""


def _key(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def parse_scores(text: str, names: Sequence[str], scale: tuple[float, float] = SCALE) -> dict[str, float]:
    """The score of each dimension in ``names`` from a model's answer, or ``Malformed``.

    Read: ``name: score`` lines (``name = score``, ``score/10``, list marks and bold allowed) or one
    JSON object; names compared case-insensitively with spaces and hyphens as ``_``; a ``<think>``
    block is ignored; the first value of a name counts; other names are ignored."""
    text = _THINK.sub("", text)
    found: dict[str, str] = {}
    for obj in reversed(_JSON.findall(text)):  # a JSON object, the last one given
        try:
            data = json.loads(obj)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            found = {_key(str(k)): str(v) for k, v in data.items()}
            break
    if not found:
        for line in text.splitlines():
            m = _LINE.match(line)
            if m:
                found.setdefault(_key(m.group(1)), m.group(2))
    scores = {}
    lo, hi = scale
    for name in names:
        if name not in found:
            raise Malformed(f"no score for {name}")
        try:
            value = float(found[name])
        except ValueError:
            raise Malformed(f"{name}: {found[name]!r} is not a number") from None
        if not lo <= value <= hi:
            raise Malformed(f"{name}: {value:g} is outside {lo:g}..{hi:g}")
        scores[name] = value
    return scores


def weighted_score(scores: dict[str, float], weights: dict[str, float]) -> float:
    """sum_i w_i s_i / sum_i w_i: on the same 1..10 scale as each dimension."""
    total = sum(weights.values())
    return round(sum(weights[k] * scores[k] for k in weights) / total, 6)


@dataclass
class PredictSummary:
    out: str
    ok: int = 0
    malformed: int = 0
    too_long: int = 0
    resumed: int = 0
    answers: int = 0
    malformed_answers: int = 0
    """Answers that could not be read, retried ones included."""
    ok_after_retry: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    """The reason of each malformed answer (its first words), counted."""

    @property
    def written(self) -> int:
        return self.ok + self.malformed + self.too_long


def predict(cfg: PredictConfig, engine=None, tokenizer=None, context: int | None = None) -> PredictSummary:
    """Rate every problem of ``cfg.problems`` into ``cfg.out``. ``engine``/``tokenizer``: made from
    ``cfg.model`` unless given (a test or benchmark may pass its own engine); ``context``: the
    model's context length in tokens (None: no limit checked)."""
    from mcoder.rollout.problems import spooled_stdin

    cfg.validate()
    with spooled_stdin(cfg.problems) as problems:  # read more than once: '-' is spooled to a file
        return _predict(cfg, str(problems), engine, tokenizer, context)


def _predict(cfg: PredictConfig, problems: str, engine, tokenizer, context: int | None) -> PredictSummary:
    inputs = {"problems": cfg.problems}
    if engine is None:
        inputs |= {"model": cfg.model, "adapter": cfg.adapter}
    job = Job(out=cfg.out, inputs=inputs, settings=cfg.settings(), overwrite=cfg.overwrite)
    summary, made = execute(PredictStage(cfg, problems, engine, tokenizer, context), job)
    if made:
        show_summary(summary)
    return summary


@dataclass
class PredictStage:
    """``mcoder dataset difficulty predict`` as a stage (``mcoder.outputs.Stage``): the summary,
    and whether this run rated (an output finished earlier: nothing to show)."""

    cfg: PredictConfig
    problems: str
    engine: Any
    tokenizer: Any
    context: int | None
    name = "dataset difficulty predict"
    kind = "jsonl"
    expect = SCORE_FIELDS

    def finished(self, job: Job, claim: Claim) -> tuple[PredictSummary, bool]:
        console.info(claim.finished_message)
        return PredictSummary(out=self.cfg.out), False

    def run(self, job: Job, claim: Claim) -> tuple[PredictSummary, bool]:
        from mcoder.rollout.problems import count_problems, iter_problems

        cfg, problems, engine, tokenizer, context = self.cfg, self.problems, self.engine, self.tokenizer, self.context
        summary = PredictSummary(out=cfg.out)
        total = count_problems(problems, cfg.limit)  # bad input fails here, before a model loads
        if engine is None:
            engine, tokenizer, context = _make_engine(cfg)
        with RecordWriter(cfg.out, "problem_id", resume=claim.resume) as writer:
            summary.resumed = writer.resumed
            if writer.resumed:
                console.info(f"resuming {cfg.out}: {writer.resumed} problems already rated")
            todo = (p for _, p in iter_problems(problems, cfg.limit) if p.id not in writer.done)
            bar = console.progress()
            with bar:
                task = bar.add_task("predict", total=total - writer.resumed)
                while chunk := list(itertools.islice(todo, cfg.batch_size)):
                    for record in rate(chunk, engine, tokenizer, cfg, summary, context):
                        writer.write(record)
                    bar.update(task, advance=len(chunk))
        return summary, True


def _make_engine(cfg: PredictConfig):
    from mcoder.engines.factory import make_engine
    from mcoder.models import check_model_dir, load_tokenizer
    from mcoder.rollout.problems import PromptBudget

    folder = check_model_dir(cfg.model, cfg.adapter)
    tokenizer = load_tokenizer(folder)
    if cfg.scoring == "expected":
        _check_expected_engine(cfg.engine)
    engine = make_engine(
        cfg.engine, cfg.model, cfg.adapter, tokenizer=tokenizer, batch_size=cfg.batch_size, seed=cfg.seed
    )
    # expected: the sequence scored is the prompt and the rating, nothing generated after it
    room = cfg.max_tokens if cfg.scoring == "generate" else 0
    return engine, tokenizer, PromptBudget.of(str(folder.base), room).limit


def _check_expected_engine(kind: str) -> None:
    """Refuse --scoring expected on a vLLM that cannot give the log-probs of chosen tokens, before
    a model loads (a missing vLLM is make_engine's to report)."""
    from mcoder.engines.factory import vllm_available

    if kind == "hf" or not vllm_available():
        return
    from mcoder.engines.vllm_engine import require_token_logprobs

    require_token_logprobs()


def rate(
    problems: list[Problem],
    engine,
    tokenizer,
    cfg: PredictConfig,
    summary: PredictSummary,
    context: int | None,
) -> list[dict]:
    """One score record per problem, in input order: with --scoring generate each problem asked
    until its answer reads, at most 1 + retries times; with expected see ``rate_expected``."""
    if cfg.scoring == "expected":
        return rate_expected(problems, engine, tokenizer, cfg, summary, context)
    from mcoder.engines.base import derive_seed

    names, weights, described = _dimensions(cfg)
    records: dict[str, dict] = {}
    pending: list[tuple[Problem, list[int]]] = []
    for p in problems:
        _, ids = render_messages(difficulty_messages(p, described), tokenizer)
        if context is not None and len(ids) > context:
            records[p.id] = _record(
                p.id, "too_long", attempts=0, error=f"prompt of {len(ids)} tokens", model=cfg.model
            )
            summary.too_long += 1
        else:
            pending.append((p, ids))
    for attempt in range(1 + cfg.retries):
        if not pending:
            break
        temperature = cfg.temperature if attempt == 0 else cfg.retry_temperature
        seeds = [derive_seed(cfg.seed, p.id, attempt) for p, _ in pending]
        generations = engine.generate(
            [ids for _, ids in pending], n=1, max_tokens=cfg.max_tokens, temperature=temperature, seed=seeds
        )
        still = []
        for (p, ids), (gen, *_) in zip(pending, generations, strict=True):
            summary.answers += 1
            try:
                scores = parse_scores(gen.text, names)
            except Malformed as e:
                summary.malformed_answers += 1
                reason = str(e).split(":")[0] if ":" in str(e) else str(e)
                summary.errors[reason] = summary.errors.get(reason, 0) + 1
                records[p.id] = _record(
                    p.id, "malformed", attempts=attempt + 1, error=str(e), answer=gen.text, model=cfg.model
                )
                still.append((p, ids))
                continue
            records[p.id] = _record(
                p.id, "ok", attempts=attempt + 1, scores=scores, score=weighted_score(scores, weights),
                answer=gen.text, model=cfg.model,
            )  # fmt: skip
            summary.ok += 1
            summary.ok_after_retry += attempt > 0
        pending = still
    summary.malformed += len(pending)
    return [records[p.id] for p in problems]


def _dimensions(cfg: PredictConfig) -> tuple[list[str], dict[str, float], list[tuple[str, str]]]:
    """The dimensions' names, their weights and (name, description) pairs for the prompt."""
    dims = parse_dimensions(cfg.dimension)
    return [n for n, _, _ in dims], {n: w for n, w, _ in dims}, [(n, d) for n, _, d in dims]


def _record(
    pid: str, status: str, *, attempts: int, model: str, scores=None, score=None, error=None, answer="",
    **extra,
) -> dict:  # fmt: skip
    return {
        "schema": SCHEMA_VERSION, "problem_id": pid, "status": status, "scores": scores, "score": score,
        "attempts": attempts, "error": error, "answer": answer[:ANSWER_KEPT], "model": model, **extra,
    }  # fmt: skip


# ----------------------------------------------------------------------------- --scoring expected


@dataclass
class RatingTokens:
    """How the model would write each rating of one dimension after the prompt: ``prefix``, the
    ids every rating's text starts with (the prompt and ``name:``, with the space when the
    tokenizer keeps it apart), and ``tails[i]``, the ids that follow for rating ``RATINGS[i]``."""

    prefix: list[int]
    tails: list[list[int]]

    @property
    def contexts(self) -> list[tuple[int, ...]]:
        """Each distinct start of a tail after which a next token is read: () for every first
        token, ("1",) for the "0" of a 10 written as two tokens."""
        return sorted({tuple(t[:i]) for t in self.tails for i in range(len(t))}, key=lambda c: (len(c), c))

    def queries(self) -> list[tuple[list[int], list[int]]]:
        """(context ids, the token ids whose probability is needed there), one per context."""
        out = []
        for ctx in self.contexts:
            after = {t[len(ctx)] for t in self.tails if len(t) > len(ctx) and tuple(t[: len(ctx)]) == ctx}
            out.append((self.prefix + list(ctx), sorted(after)))
        return out

    def probabilities(self, logprobs: list[list[float]]) -> list[float]:
        """P(rating) for each of RATINGS, not renormalised, from the log-probs ``queries`` asked
        for (in their order). A rating's probability is that of its tokens in a row; when one
        rating's tokens begin another's (10 written "1", "0"), the longer one is taken out of the
        shorter: P(1) = P("1") - P("1", "0")."""
        logp = {
            (ctx, tok): lp
            for (ctx_ids, toks), lps in zip(self.queries(), logprobs, strict=True)
            for ctx in (tuple(ctx_ids[len(self.prefix) :]),)
            for tok, lp in zip(toks, lps, strict=True)
        }
        joint = [math.exp(sum(logp[(tuple(t[:i]), t[i])] for i in range(len(t)))) for t in self.tails]
        out = []
        for r, t in enumerate(self.tails):
            longer = [u for u, other in enumerate(self.tails) if _starts(other, t)]
            # of the ratings that continue this one, those that continue no other of them
            first = [u for u in longer if not any(_starts(self.tails[u], self.tails[v]) for v in longer)]
            out.append(max(0.0, joint[r] - sum(joint[u] for u in first)))
        return out


def _starts(longer: list[int], shorter: list[int]) -> bool:
    """``longer`` continues ``shorter`` (a proper extension)."""
    return len(longer) > len(shorter) and longer[: len(shorter)] == shorter


def rating_tokens(prompt_text: str, name: str, tokenizer) -> RatingTokens:
    """The ids of ``prompt_text + "name: r"`` for each rating r, split where they part."""
    ids = tokenizer([f"{prompt_text}{name}: {r}" for r in RATINGS], add_special_tokens=False)["input_ids"]
    n = min(len(i) for i in ids)
    n = next((k for k in range(n) if len({i[k] for i in ids}) > 1), n)
    tails = [list(i[n:]) for i in ids]
    if not all(tails) or len({tuple(t) for t in tails}) != len(tails):
        raise ValueError(f"the tokenizer does not tell the ratings of {name} apart")
    return RatingTokens(list(ids[0][:n]), tails)


def expected_rating(probs: list[float]) -> tuple[float | None, float]:
    """(sum_r r P(r) / sum_r P(r), sum_r P(r)): the expected rating renormalised over RATINGS, and
    the mass they held (None when it is 0)."""
    mass = sum(probs)
    if not mass > 0:
        return None, 0.0
    return sum(r * p for r, p in zip(RATINGS, probs, strict=True)) / mass, mass


def rate_expected(
    problems: list[Problem],
    engine,
    tokenizer,
    cfg: PredictConfig,
    summary: PredictSummary,
    context: int | None,
) -> list[dict]:
    """One score record per problem, in input order, with nothing generated: the probability-
    weighted scoring of G-Eval (Liu et al. 2023). Deterministic, so never retried.

    For each dimension the model reads the rating prompt (``difficulty_messages`` through the chat
    template) and, as the start of its answer, ``name: ``; the dimension's score is the expected
    rating under its next-token probabilities, renormalised over the ratings 1..10 (``RATINGS``),
    and ``rating_mass`` the probability those ratings held. Each dimension is asked alone, not
    after lines for the dimensions before it: its score then does not lean on the earlier
    expected values (which such lines would have to round to whole numbers), and every dimension
    shares one prompt, run once per problem.

    P(r) is the probability that the tokens after the prompt are those the tokenizer writes for
    ``name: r`` (``rating_tokens``). When one rating's tokens begin another's, the longer rating
    is taken out of the shorter: where 10 is written "1", "0", P(10) = P("1") P("0" | "1") and
    P(1) = P("1") - P(10); where "10" is one token, it is read directly. What follows a rating's
    last token is not read (a "15" written "1", "5" counts as 1): numbers beyond the scale are not
    told apart, mass the instruction asked the model not to use."""
    if not hasattr(engine, "next_token_logprobs"):
        raise UsageError(
            f"--scoring expected: the {engine.name} engine gives no token log-probs", hint="use --engine hf"
        )
    names, weights, described = _dimensions(cfg)
    records: dict[str, dict] = {}
    plans: list[tuple[Problem, list[RatingTokens]]] = []
    for p in problems:
        text, _ = render_messages(difficulty_messages(p, described), tokenizer)
        tokens = [rating_tokens(text, name, tokenizer) for name in names]
        longest = max(len(t.prefix) + len(tail) for t in tokens for tail in t.tails)
        if context is not None and longest > context:
            records[p.id] = _record(
                p.id, "too_long", attempts=0, error=f"prompt and rating of {longest} tokens", model=cfg.model
            )
            summary.too_long += 1
        else:
            plans.append((p, tokens))
    groups = [[q for t in tokens for q in t.queries()] for _, tokens in plans]
    answers = engine.next_token_logprobs(groups) if groups else []
    for (p, tokens), logprobs in zip(plans, answers, strict=True):
        summary.answers += 1
        scores: dict[str, float] = {}
        mass: dict[str, float] = {}
        pos = 0
        for name, t in zip(names, tokens, strict=True):
            n = len(t.contexts)
            value, held = expected_rating(t.probabilities(logprobs[pos : pos + n]))
            pos += n
            mass[name] = round(held, 6)
            if value is not None:
                scores[name] = round(value, 6)
        answer = "\n".join(f"{n}: {scores[n]:.4f} (rating mass {mass[n]:.4f})" for n in scores)
        extra = {"rating_mass": mass, "rating_mass_mean": round(sum(mass.values()) / len(mass), 6)}
        if len(scores) < len(names):  # every rating's probability underflowed to 0
            lost = next(n for n in names if n not in scores)
            summary.malformed_answers += 1
            summary.malformed += 1
            summary.errors[NO_RATING] = summary.errors.get(NO_RATING, 0) + 1
            records[p.id] = _record(
                p.id, "malformed", attempts=1, error=f"{lost}: {NO_RATING}", answer=answer,
                model=cfg.model, **extra,
            )  # fmt: skip
            continue
        records[p.id] = _record(
            p.id, "ok", attempts=1, scores=scores, score=weighted_score(scores, weights), answer=answer,
            model=cfg.model, **extra,
        )  # fmt: skip
        summary.ok += 1
    return [records[p.id] for p in problems]


def show_summary(s: PredictSummary) -> None:
    rows = [
        ("rated (ok)", s.ok), ("  of which after a retry", s.ok_after_retry), ("malformed (unscored)", s.malformed),
        ("prompt too long (unscored)", s.too_long), ("already in the output", s.resumed),
        ("answers read", s.answers), ("answers malformed", s.malformed_answers),
    ]  # fmt: skip
    rows += [(f"  {reason}", n) for reason, n in sorted(s.errors.items(), key=lambda kv: -kv[1])[:5]]
    console.show(console.table(f"difficulty predict -> {s.out}", ["", "problems"], rows))


# ----------------------------------------------------------------------------- reading scores


def read_scores(path: str | Path) -> dict[str, float | None]:
    """problem_id -> weighted score (None when unscored), checked: a bad record is a DataError
    naming the file, line and field."""
    from mcoder.errors import DataError
    from mcoder.jsonl import UniqueIds, iter_objects

    out: dict[str, float | None] = {}
    ids = UniqueIds(path, field="problem_id")
    for lineno, obj in iter_objects(path):
        for name in SCORE_FIELDS:
            if name not in obj:
                raise DataError(
                    f"missing field '{name}' (not a scores file?)", path=str(path), line=lineno, field=name
                )
        pid, status, score = obj["problem_id"], obj["status"], obj["score"]
        if not isinstance(pid, str):
            raise DataError("problem_id must be a string", path=str(path), line=lineno, field="problem_id")
        if status not in ("ok", "malformed", "too_long"):
            raise DataError(f"unknown status {status!r}", path=str(path), line=lineno, field="status")
        ok = isinstance(score, (int, float)) and not isinstance(score, bool)
        if (status == "ok") != ok:
            raise DataError(
                f"status {status} with score {score!r}", path=str(path), line=lineno, field="score",
                hint="a rated problem has a number, an unscored one null",
            )  # fmt: skip
        ids.add(pid, lineno)
        out[pid] = float(score) if ok else None
    return out
