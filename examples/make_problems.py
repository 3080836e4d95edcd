"""Write the example problem set in examples/problems/ from the definitions in problem_defs/.

    python examples/make_problems.py            # (re)write examples/problems/*.jsonl
    python examples/make_problems.py --check    # exit 1 if the files differ from a fresh build
    python examples/make_problems.py --out DIR  # write somewhere else

Expected outputs are never typed by hand: every test input is run through every reference
solution in a fresh Python process, the solutions must agree, and the first one's output becomes
the expected output. Test inputs come from fixed seeds, so the files are reproduced byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import json
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from problem_defs import call, stdin_algo, stdin_easy
from problem_defs.spec import Spec

from mcoder.jsonl import RecordWriter
from mcoder.records import Problem, Test, from_dict, to_dict

SOURCE = "mcoder-examples"
PLATFORM = "mcoder"
FLOAT_TOLERANCE = 1e-6
RUN_TIMEOUT_S = 120  # generous: the machine may be busy; real limits belong to the judge
FILES = {"stdin": "stdin.jsonl", "call": "call.jsonl"}

# Runs a call-based solution on every test of a problem in one process. The payload (stdin)
# holds the code, the function name and each test's input: JSON arguments, one per line.
CALL_HARNESS = """
import json, sys
payload = json.load(sys.stdin)
ns = {"__name__": "__solution__"}
exec(compile(payload["code"], "<solution>", "exec"), ns)
name = payload["fn_name"]
cls = ns.get("Solution")
fn = getattr(cls(), name) if cls is not None and hasattr(cls, name) else ns[name]
results = []
for text in payload["inputs"]:
    args = [json.loads(line) for line in text.split("\\n")]
    results.append(json.dumps(fn(*args)))
print(json.dumps(results))
"""


def all_specs() -> list[Spec]:
    specs = stdin_easy.specs() + stdin_algo.specs() + call.specs()
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate problem ids in problem_defs")
    for s in specs:
        if not 5 <= len(s.tests) <= 12:
            raise SystemExit(f"{s.id}: {len(s.tests)} tests, want 5 to 12")
        if s.difficulty not in ("easy", "medium", "hard") or not s.solutions:
            raise SystemExit(f"{s.id}: bad difficulty or no reference solution")
    return specs


def normalize(text: str) -> str:
    """Trailing spaces of each line and trailing blank lines do not count."""
    lines = [line.rstrip() for line in text.rstrip().split("\n")]
    return "\n".join(lines) + "\n"


def same_output(expected: str, got: str, floats: bool) -> bool:
    a, b = normalize(expected), normalize(got)
    if a == b or not floats:
        return a == b
    ta, tb = a.replace("[", " ").replace("]", " ").split(), b.replace("[", " ").replace("]", " ").split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        try:
            if not math.isclose(float(x), float(y), rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE):
                return False
        except ValueError:
            return False
    return True


def run_stdin(code: str, text: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return normalize(proc.stdout)


def run_calls(code: str, fn_name: str, inputs: list[str]) -> list[str]:
    payload = json.dumps({"code": code, "fn_name": fn_name, "inputs": inputs})
    proc = subprocess.run([sys.executable, "-c", CALL_HARNESS], input=payload, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def test_inputs(spec: Spec) -> list[str]:
    if spec.kind == "stdin":
        return list(spec.tests)
    return ["\n".join(json.dumps(arg) for arg in args) for args in spec.tests]


def expected_outputs(spec: Spec, pool: ThreadPoolExecutor) -> list[str]:
    """The first solution's outputs, after checking that every solution gives the same."""
    inputs = test_inputs(spec)
    per_solution = []
    for code in spec.solutions:
        if spec.kind == "stdin":
            per_solution.append(list(pool.map(lambda text, c=code: run_stdin(c, text), inputs)))
        else:
            per_solution.append(run_calls(code, spec.fn_name, inputs))
    for k, outs in enumerate(per_solution[1:], start=2):
        for i, (want, got) in enumerate(zip(per_solution[0], outs)):
            if not same_output(want, got, spec.float_output):
                raise SystemExit(f"{spec.id}: solution {k} disagrees with solution 1 on test {i}")
    return per_solution[0]


def param_names(spec: Spec) -> list[str]:
    for node in ast.walk(ast.parse(spec.solutions[0])):
        if isinstance(node, ast.FunctionDef) and node.name == spec.fn_name:
            return [a.arg for a in node.args.args if a.arg != "self"]
    raise SystemExit(f"{spec.id}: no function {spec.fn_name} in the first solution")


def example_section(spec: Spec, sample_input: str, sample_output: str) -> str:
    if spec.kind == "stdin":
        return f"Example\n\nInput:\n{sample_input.rstrip()}\n\nOutput:\n{sample_output.rstrip()}\n"
    args = ", ".join(f"{name} = {json.dumps(arg)}" for name, arg in zip(param_names(spec), spec.tests[0]))
    return f"Example\n\nInput: {args}\nOutput: {sample_output}\n"


def build(spec: Spec, pool: ThreadPoolExecutor) -> Problem:
    inputs = test_inputs(spec)
    outputs = expected_outputs(spec, pool)
    meta = {"title": spec.title, "tags": spec.tags}
    if spec.float_output:
        meta["float_tolerance"] = FLOAT_TOLERANCE
    problem = Problem(
        id=spec.id,
        source=SOURCE,
        question=spec.statement.rstrip() + "\n\n" + example_section(spec, inputs[0], outputs[0]),
        tests=[Test(input=i, output=o, kind=spec.kind) for i, o in zip(inputs, outputs)],
        platform=PLATFORM,
        difficulty=spec.difficulty,
        starter_code=spec.starter_code,
        fn_name=spec.fn_name,
        reference_solutions=list(spec.solutions),
        meta=meta,
    )
    return from_dict(Problem, to_dict(problem))  # the strict parser must accept what we write


def write_all(out_dir: Path) -> dict[str, int]:
    specs = all_specs()
    counts = {}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for kind, name in FILES.items():
            chosen = [s for s in specs if s.kind == kind]
            with RecordWriter(out_dir / name, "id", resume=False) as writer:
                for spec in chosen:
                    writer.write(build(spec, pool))
            counts[name] = len(chosen)
    return counts


def _same_file(a: Path, b: Path) -> bool:
    return b.is_file() and filecmp.cmp(a, b, shallow=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "problems", help="folder for the JSONL files")
    parser.add_argument("--check", action="store_true", help="compare a fresh build with --out")
    args = parser.parse_args()
    if not args.check:
        for name, n in write_all(args.out).items():
            print(f"{args.out / name}: {n} problems")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        write_all(Path(tmp))
        differ = [n for n in FILES.values() if not _same_file(Path(tmp) / n, args.out / n)]
    for name in differ:
        print(f"{args.out / name} differs from a fresh build", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
