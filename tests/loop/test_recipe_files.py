"""`mcoder loop --config FILE`, `--set key=value` and the recipe files of recipes/: the order in
which settings win, the errors a bad file gets, a run's own config.json as a recipe, the files
stating their presets, and `mcoder train --loop` handed to `mcoder loop`."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.cli.loop import loop_config
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.loop.recipe import build, merge, parse_sets, read_recipe
from mcoder.train.config import (
    ALGOS,
    DEFAULT_ALGO,
    RECIPES,
    TrainConfig,
    preset,
    presets,
    recipe_names,
    resolve,
)

ROOT = Path(__file__).resolve().parents[2]
# the recipes that name an algorithm: each algorithm's preset
ALGO_RECIPES = [n for n in recipe_names() if "algo" in tomllib.loads((RECIPES / f"{n}.toml").read_text()).get("train", {})]


def command(name: str):
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def cfg_of(*args: str) -> LoopConfig:
    """The LoopConfig `mcoder loop ARGS` would run with (validated, as run_loop does)."""
    return loop_config(command("loop").make_context("loop", list(args)).params).validate()


BASE = ("-m", "M", "-p", "P.jsonl", "--run-dir", "RUN")


# ---------------------------------------------------------------- the order settings win in


def test_defaults_then_file_then_options_then_set(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[loop]\nsteps = 7\nsave_every = 3\n[train]\nlr = 0.5\nmask_rho = 0.3\nseed = 9\n'
                      '[sampling]\nn = 6\n[judge]\nmemory_mb = 512\n')  # fmt: skip
    cfg = cfg_of(*BASE, "--config", str(recipe), "--lr", "0.25", "--mask-rho", "0.4", "--n", "3",
                 "--set", "train.mask_rho=0.6", "--set", "judge.memory_mb=256")  # fmt: skip
    assert cfg.steps == 7 and cfg.save_every == 3  # the file over the defaults (1, 1)
    assert cfg.train.seed == 9 and cfg.train.lr == 0.25  # a plain option over the file
    assert cfg.train.mask_rho == 0.6 and cfg.judge.memory_mb == 256  # --set over both
    assert cfg.sampling.n == 3 and cfg.train_batch_size == 4  # untouched: the field's default
    assert cfg.train.eps_high == preset("microcoder-grpo")["eps_high"]


def test_a_later_file_wins_and_the_preset_comes_before_every_file(tmp_path):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text('[loop]\nsteps = 2\n[train]\nalgo = "grpo"\nbeta = 0.01\n')
    second.write_text("[train]\nbeta = 0.02\n")
    cfg = cfg_of(*BASE, "--config", str(first), "--config", str(second))
    assert cfg.train.algo == "grpo" and cfg.train.beta == 0.02
    assert cfg.train.loss_agg == "sequence" and cfg.sampling.temperature == "1.0"  # grpo's preset
    # a file that names another algorithm is refused under --algo: its values are that algorithm's
    with pytest.raises(UsageError, match=r"a.toml:4: train.algo is 'grpo', and --algo dapo names 'dapo'"):
        cfg_of(*BASE, "--config", str(first), "--algo", "dapo")
    # a file that names none goes over --algo's preset: its values were said, not defaulted
    cfg = cfg_of(*BASE, "--config", str(second), "--steps", "2", "--algo", "dapo")
    assert cfg.train.algo == "dapo" and cfg.train.beta == 0.02 and cfg.train.truncation == "all"
    saved = json.loads(cfg.to_json())["train"]  # RUN/config.json: the algorithm whose preset ran, its values
    assert saved["algo"] == "dapo" and saved["mask_mode"] == "drop" and saved["dynamic_sampling"] is True


def test_set_reads_toml_values_and_bare_words():
    cfg = cfg_of(*BASE, "--set", "loop.steps=4", "--set", "sampling.temperature=auto",
                 "--set", "train.report_to=['tensorboard']", "--set", "train.adam_betas=[0.8, 0.9]",
                 "--set", "judge.cache=false", "--set", "judge.allow_packages=numpy")  # fmt: skip
    assert cfg.steps == 4 and cfg.sampling.temperature == "auto"
    assert cfg.train.report_to == ("tensorboard",) and cfg.train.adam_betas == (0.8, 0.9)
    assert cfg.judge.cache is False and cfg.judge.allow_packages == ("numpy",)


@pytest.mark.parametrize(
    "item, message",
    [
        ("train.lr", "not key=value"),
        ("train.lrr=1", "train.lrr: unknown key"),
        ("a.b.c=1", "one section and a key"),
        ("steps=3", "steps: unknown key"),
        ("train.lr=fast", "expected a number, got 'fast'"),
        ("loop.steps=2.5", "expected a whole number"),
        ("train.shuffle=1", "expected true or false"),
        ("train.adam_betas=[0.9]", "expected 2 values"),
    ],
)
def test_a_bad_set_is_a_usage_error_naming_it(item, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[")) as e:
        parse_sets([item])
    assert e.value.exit_code == 2


def test_a_step_count_and_the_inputs_are_needed():
    with pytest.raises(UsageError, match="needs --steps"):
        cfg_of(*BASE)
    with pytest.raises(UsageError, match="needs --model, --run-dir"):
        cfg_of("-p", "P", "--steps", "1")
    r = CliRunner().invoke(app, ["loop", "-p", "P", "--steps", "1"])
    assert r.exit_code == 2 and "needs --model, --run-dir" in r.stderr


# ---------------------------------------------------------------- a bad file


def test_an_unknown_key_names_the_file_its_line_and_the_key(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text("[loop]\nsteps = 2\n\n[train]\nlr = 1e-6\nmask_rhoo = 0.2\n")
    with pytest.raises(UsageError) as e:
        read_recipe(recipe)
    assert e.value.message == f"{recipe}:6: train.mask_rhoo: unknown key"
    recipe.write_text("steps = 2\n")
    with pytest.raises(UsageError, match=r"r.toml:1: steps: unknown key") as e:
        read_recipe(recipe)
    assert "setting of [loop]" in (e.value.hint or "")
    recipe.write_text("[sampling]\nmask_rho = 0.2\n")
    with pytest.raises(UsageError, match=r"r.toml:2: sampling.mask_rho: unknown key") as e:
        read_recipe(recipe)
    assert "setting of [train]" in (e.value.hint or "")


def test_a_bad_value_or_syntax_names_the_file(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[train]\nlr = "fast"\n')
    with pytest.raises(UsageError, match=r"r.toml:2: train.lr: expected a number"):
        read_recipe(recipe)
    recipe.write_text("[train\nlr = 1\n")
    with pytest.raises(UsageError, match=r"r.toml:1: not valid TOML"):
        read_recipe(recipe)
    broken = tmp_path / "config.json"
    broken.write_text('{\n  "loop": {\n    "steps": 2,\n  }\n}\n')
    with pytest.raises(UsageError, match=r"config.json:4: not valid JSON"):
        read_recipe(broken)
    broken.write_text('{\n  "train": {\n    "lr": 1.0,\n    "nope": 1\n  }\n}\n')
    with pytest.raises(UsageError, match=r"config.json:4: train.nope: unknown key"):
        read_recipe(broken)
    with pytest.raises(UsageError, match="no such file"):
        read_recipe(tmp_path / "missing.toml")


def test_a_bad_value_in_a_file_names_the_file_its_line_and_the_key_not_a_flag(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[loop]\nsteps = 1\n[train]\nloss_agg = "mean"\n')
    with pytest.raises(UsageError) as e:
        cfg_of(*BASE, "--config", str(recipe))
    assert e.value.message == f"{recipe}:4: train.loss_agg: 'mean' is not one of token, sequence, constant"
    for line, message in (("lr = inf", "is not a finite number"), ("lr = nan", "is not a finite number"),
                          ("lr = -1.0", "is out of range: it must be > 0"),
                          ("adam_betas = [0.9, 1.5]", "1.5 is out of range: it must be in [0, 1)")):  # fmt: skip
        recipe.write_text(f"[loop]\nsteps = 1\n\n[train]\n{line}\n")
        with pytest.raises(UsageError) as e:
            cfg_of(*BASE, "--config", str(recipe))
        key = line.split(" ")[0]
        assert e.value.message == f"{recipe}:5: train.{key}: {message}", line
    with pytest.raises(UsageError) as e:
        cfg_of(*BASE, "--steps", "1", "--set", "sampling.n=0")
    assert e.value.message == "--set sampling.n=0: sampling.n: is out of range: it must be >= 1"
    with pytest.raises(UsageError) as e:  # a plain option is named by its flag
        cfg_of(*BASE, "--steps", "1", "--lr", "inf")
    assert e.value.message == "--lr inf: is not a finite number"


def test_a_byte_order_mark_is_not_a_setting(tmp_path):
    for name in ("r.toml", "r.json"):
        recipe = tmp_path / name
        body = "[loop]\nsteps = 3\n" if name.endswith(".toml") else '{"loop": {"steps": 3}}\n'
        recipe.write_bytes(b"\xef\xbb\xbf" + body.encode())  # what Windows editors save
        assert read_recipe(recipe) == {"loop": {"steps": 3}}


def test_a_deeply_nested_recipe_is_a_usage_error_not_a_crash(tmp_path):
    for name, text in (("deep.toml", "x = " + "[" * 100_000 + "]" * 100_000 + "\n"),
                       ("deep.json", '{"train": ' + "[" * 100_000 + "]" * 100_000 + "}")):  # fmt: skip
        recipe = tmp_path / name
        recipe.write_text(text)
        with pytest.raises(UsageError, match=f"{name}: nested too deeply"):
            read_recipe(recipe)
    with pytest.raises(UsageError, match="nested too deeply"):
        parse_sets(["train.lr=" + "[" * 100_000 + "]" * 100_000])


def test_a_key_given_twice_in_a_json_recipe_is_refused(tmp_path):
    recipe = tmp_path / "config.json"
    recipe.write_text('{\n  "train": {\n    "lr": 1e-6,\n    "lr": 1e-3\n  }\n}\n')
    with pytest.raises(UsageError) as e:
        read_recipe(recipe)
    assert e.value.message == f"{recipe}:4: lr: given twice"


def test_a_train_length_limit_other_than_the_sampling_one_is_refused():
    with pytest.raises(UsageError, match="train.max_tokens 100 differs from the sampling limit 64"):
        cfg_of(*BASE, "--steps", "1", "--max-tokens", "64", "--set", "train.max_tokens=100")
    assert cfg_of(*BASE, "--steps", "1", "--max-tokens", "64", "--set", "train.max_tokens=64").train.max_tokens == 64


# ---------------------------------------------------------------- a run's config.json restarts it


def test_a_run_config_json_builds_the_same_config(tmp_path):
    """RUN/config.json as a recipe: the same settings, every one (workers, the resolved early
    exit, the sampling limit copied into train included)."""
    cfg = cfg_of(*BASE, "--steps", "3", "--algo", "dapo", "--temperature", "auto", "--lora-rank", "4",
                 "--workers", "2", "--no-cache", "--allow-package", "numpy", "--report-to", "tensorboard",
                 "--judge-url", "http://a:1", "--adam-betas", "0.8", "0.95", "--max-tokens", "33")  # fmt: skip
    saved = tmp_path / "config.json"
    saved.write_text(cfg.to_json())
    again = cfg_of("--config", str(saved), "--run-dir", "RUN")
    assert again.to_json() == cfg.to_json()
    assert str(again.problems) == str(Path("P.jsonl").resolve()) and again.model == "M"  # no folder M here
    longer = cfg_of("--config", str(saved), "--run-dir", "RUN", "--steps", "5")
    assert longer.steps == 5 and longer.train == cfg.train


def test_the_loop_restarts_from_its_own_config_in_process(tiny_model, tmp_path):
    """A real run: one step, then `--config RUN/config.json --steps 2` continues the same run."""

    sandbox_or_skip()
    run = tmp_path / "run"
    problems = ROOT / "examples" / "problems" / "stdin.jsonl"
    r = CliRunner().invoke(app, ["loop", "-m", str(tiny_model), "-p", str(problems), "--run-dir", str(run),
                                 "--config", str(RECIPES / "smoke.toml"), "--steps", "1", "--workers", "1",
                                 "--max-tokens", "8", "-q"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["loop", "--config", str(run / "config.json"), "--run-dir", str(run),
                                 "--steps", "2"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "resuming after step 1" in r.stderr
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2]


# ---------------------------------------------------------------- the recipe files


def test_the_package_recipes_are_the_repository_s_and_each_algorithm_has_one():
    """recipes/ is the package's recipe folder (package data), and the algorithms --algo takes
    are exactly the recipes that name one, each in the file of its name."""
    assert (ROOT / "recipes").resolve() == RECIPES.resolve()
    assert ALGO_RECIPES and sorted(ALGOS) == ALGO_RECIPES, "a recipe that names an algorithm is in Algo"
    for name in ALGO_RECIPES:
        assert tomllib.loads((RECIPES / f"{name}.toml").read_text())["train"]["algo"] == name


@pytest.mark.parametrize("algo", ALGO_RECIPES)
def test_each_recipe_is_its_preset(algo):
    """`--algo ALGO` starts from the recipe's [train] table and its temperature: the file with its
    sizes gives the TrainConfig that --algo with the same sizes gives, and its values are of their
    fields' types as written (a recipe read as a preset is not converted)."""
    path = RECIPES / f"{algo}.toml"
    raw = tomllib.loads(path.read_text())
    assert read_recipe(path) == raw, "every value of the field's type, as written"
    assert presets()[algo] == {k: v for k, v in raw["train"].items() if k != "algo"}
    cfg = build(merge(read_recipe(path), {"model": "M", "problems": "P", "run_dir": "R"})).validate()
    settled = {"vllm_sampling": cfg.engine == "vllm" and not cfg.off_policy}  # the loop settles dtype, IS cap
    assert cfg.train == resolve(algo, {"max_tokens": raw["sampling"]["max_tokens"]}).settle(**settled)
    by_algo = cfg_of(*BASE, "--algo", algo, "--steps", "1")
    assert by_algo.train.eps_high == raw["train"]["eps_high"]
    assert str(by_algo.sampling.temperature) == raw["sampling"]["temperature"] == str(cfg.sampling.temperature)


@pytest.mark.parametrize("name", recipe_names())
def test_a_recipe_given_by_name_is_the_package_s_file(name, tmp_path, monkeypatch):
    """`--config dapo` reads the file `--algo dapo` reads; a file of that name here wins."""
    by_path = cfg_of(*BASE, "--steps", "1", "--config", str(RECIPES / f"{name}.toml"))
    monkeypatch.chdir(tmp_path)
    assert cfg_of(*BASE, "--steps", "1", "--config", name).to_json() == by_path.to_json()
    (tmp_path / name).write_text('{"loop": {"steps": 5}}')  # a file that is not .toml is JSON
    assert cfg_of(*BASE, "--config", name).steps == 5


def test_the_fields_an_algorithm_sets_default_to_the_default_algorithm_s_values():
    assert resolve(DEFAULT_ALGO) == TrainConfig(algo=DEFAULT_ALGO).validate()
    for name, value in preset(DEFAULT_ALGO).items():
        assert getattr(TrainConfig(), name) == value, name


def test_the_smoke_overlay_sets_sizes_only():
    raw = tomllib.loads((RECIPES / "smoke.toml").read_text())
    objective = {k for values in presets().values() for k in values} | {"algo"}
    assert not objective & set(raw.get("train", {})), "the smoke size changes no algorithm setting"
    cfg = build(merge(read_recipe(RECIPES / "microcoder-grpo.toml"), read_recipe(RECIPES / "smoke.toml"),
                      {"model": "M", "problems": "P", "run_dir": "R"})).validate()  # fmt: skip
    assert (cfg.steps, cfg.train_batch_size, cfg.sampling.n, cfg.sampling.max_tokens) == (2, 2, 2, 24)
    assert cfg.engine == "hf" and cfg.sampling.temperature == "1.0" and cfg.train.mask_rho == 0.1


def test_print_config_prints_the_resolved_settings_and_runs_nothing(tmp_path, monkeypatch):
    """`mcoder loop --print-config`: the RUN/config.json the run would write (a recipe: given
    back as --config, the same settings), on stdout; no run folder, nothing run."""
    import mcoder.loop.loop

    monkeypatch.setattr(mcoder.loop.loop, "run_loop", lambda cfg: pytest.fail("--print-config ran the loop"))
    run = tmp_path / "run"
    args = ["-m", "M", "-p", "P.jsonl", "--run-dir", str(run), "--config", "dapo", "--config", "smoke", "--lr", "2e-6"]
    r = CliRunner().invoke(app, ["loop", *args, "--print-config"])
    assert r.exit_code == 0, r.output
    assert not run.exists()
    assert r.stdout == cfg_of(*args).to_json() + "\n"
    printed = json.loads(r.stdout)
    assert printed["train"]["algo"] == "dapo" and printed["train"]["eps_high"] == preset("dapo")["eps_high"]
    assert printed["train"]["lr"] == 2e-6 and printed["loop"]["steps"] == 2
    saved = tmp_path / "printed.json"
    saved.write_text(r.stdout)
    assert cfg_of("--config", str(saved), "--run-dir", str(run)).to_json() == r.stdout.rstrip("\n")
    r = CliRunner().invoke(app, ["loop", "--config", "dapo", "--print-config"])  # what a run needs, it needs
    assert r.exit_code == 2 and "needs --model" in r.stderr


def test_train_print_config_prints_the_update_s_settings_and_trains_nothing(tmp_path):
    """`mcoder train --print-config`: the TrainConfig the update would save (train_config.json),
    the preset's values and the options over them; no checkpoint, no input read."""
    out = tmp_path / "ckpt"
    r = CliRunner().invoke(app, ["train", "-m", "M", "-o", str(out), "--algo", "grpo", "--beta", "0.5", "--print-config"])
    assert r.exit_code == 0, r.output
    assert not out.exists()
    printed = json.loads(r.stdout)
    assert printed == json.loads(resolve("grpo", {"beta": 0.5}).settle().to_json())
    assert printed["loss_agg"] == preset("grpo")["loss_agg"] and printed["beta"] == 0.5


# ---------------------------------------------------------------- options: one name each


def _flags(cmd) -> dict[str, str]:
    return {opt: p.name for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}


def test_no_loop_flag_is_taken_twice_and_the_judge_s_are_mcoder_judge_s():
    """Each flag of `mcoder loop` belongs to one parameter; a JudgeConfig field x_y is --x-y
    (--no-x-y when on by default, --allow-package for allow_packages), as in `mcoder judge`."""
    params = command("loop").params
    opts = [o for p in params for o in (*p.opts, *p.secondary_opts)]
    assert len(opts) == len(set(opts)), sorted(o for o in opts if opts.count(o) > 1)
    assert len({p.name for p in params}) == len(params)
    flags = _flags(command("loop"))
    for f in dataclasses.fields(JudgeConfig):
        name = f.name.replace("_", "-")
        expected = "--allow-package" if f.name == "allow_packages" else f"--no-{name}" if f.default is True else f"--{name}"
        assert expected in flags, expected
    assert not any(o.startswith("--judge-") and o != "--judge-url" for o in opts)


def test_train_is_the_one_batch_update_an_option_per_training_setting_and_its_files():
    """`mcoder train`'s options: its inputs and outputs, and one per TrainConfig field (less the
    multi-process ones); nothing of the loop's."""
    from mcoder.cli.train import SKIP

    r = CliRunner().invoke(app, ["train", "-h"], terminal_width=100)
    assert r.exit_code == 0
    options = [ln for ln in r.stdout.splitlines() if re.match(r"│ (\*  |   )?--", ln)]  # the flag column
    own = ("--model", "--rollouts", "--verdicts", "--out", "--overwrite", "--quiet", "--print-config", "--help")
    assert len(options) == len(own) + len(dataclasses.fields(TrainConfig)) - len(SKIP), len(options)
    flags = _flags(command("train"))
    for loop_only in ("--problems", "--run-dir", "--steps", "--n", "--workers", "--engine", "--loop"):
        assert loop_only not in flags, loop_only
    assert flags["--temperature"] == "logprob_temperature" and flags["--max-tokens"] == "max_tokens"


def test_every_loop_option_default_is_its_field_s(tmp_path):
    """No option of `mcoder loop` carries a default of its own: given nothing, each setting is
    its field's default (the preset's for the training objective and the temperature)."""
    cfg = cfg_of(*BASE, "--steps", "1")
    assert cfg.train == resolve("microcoder-grpo", {"max_tokens": cfg.sampling.max_tokens}).settle()
    assert cfg.judge == JudgeConfig()
    defaults = LoopConfig(model="M", problems=Path("P.jsonl"), run_dir=Path("RUN"), steps=1)
    assert {f.name: getattr(cfg, f.name) for f in dataclasses.fields(LoopConfig) if f.name not in ("train", "sampling", "judge")} == {
        f.name: getattr(defaults, f.name) for f in dataclasses.fields(LoopConfig) if f.name not in ("train", "sampling", "judge")
    }  # fmt: skip
    assert dataclasses.replace(cfg.sampling, temperature="1.0") == dataclasses.replace(
        defaults.sampling, temperature="1.0"
    ) and cfg.sampling.temperature == "auto"


# ---------------------------------------------------------------- `train --loop`: `loop` now


def test_train_loop_runs_the_loop_with_a_notice_and_the_old_judge_spellings(monkeypatch):
    import mcoder.loop.loop

    seen = []
    monkeypatch.setattr(mcoder.loop.loop, "run_loop", lambda cfg: seen.append(cfg.validate()))
    old = ["train", "--loop", *BASE, "--steps", "2", "--judge-workers", "1", "--judge-timeout-s", "4",
           "--no-judge-cache", "--judge-allow-package", "numpy", "--judge-url", "http://a:1", "--overwrite"]  # fmt: skip
    r = CliRunner().invoke(app, old)
    assert r.exit_code == 0, r.output
    notice = [ln for ln in r.stderr.splitlines() if ln.startswith("notice:")]
    assert len(notice) == 1 and "`mcoder loop` now" in notice[0] and "--timeout-s 4" in notice[0]
    new = ["loop", *BASE, "--steps", "2", "--workers", "1", "--timeout-s", "4", "--no-cache",
           "--allow-package", "numpy", "--judge-url", "http://a:1"]  # fmt: skip
    r = CliRunner().invoke(app, new)
    assert r.exit_code == 0 and "notice" not in r.stderr
    assert len(seen) == 2 and seen[0].to_json() == seen[1].to_json()
    assert seen[0].judge.workers == 1 and seen[0].judge.cache is False and seen[0].judge_url == ("http://a:1",)
    # errors are the loop's
    r = CliRunner().invoke(app, ["train", "--loop", "-m", "M"])
    assert r.exit_code == 2 and "needs --problems, --run-dir, --steps" in r.stderr


def test_a_recipe_file_that_names_itself_is_an_algorithm_listed_after_the_paper_s_three(tmp_path, monkeypatch):
    """A new preset is its recipe file and nothing else: the algorithms are read from the folder
    (the paper's three in its order, then the others by name); a recipe of sizes only, or one
    whose [train] names another algorithm, is not one."""
    from mcoder.train import config

    for name in ("microcoder-grpo", "dapo", "grpo"):
        (tmp_path / f"{name}.toml").write_text((RECIPES / f"{name}.toml").read_text())
    (tmp_path / "b-new.toml").write_text('[train]\nalgo = "b-new"\n')
    (tmp_path / "a-new.toml").write_text('[train]\nalgo = "a-new"\n')
    (tmp_path / "sizes.toml").write_text("[loop]\nsteps = 2\n")
    (tmp_path / "renamed.toml").write_text('[train]\nalgo = "grpo"\n')
    monkeypatch.setattr(config, "RECIPES", tmp_path)
    config._recipe_text.cache_clear()
    try:
        assert config._algorithms() == ("grpo", "dapo", "microcoder-grpo", "a-new", "b-new")
    finally:
        config._recipe_text.cache_clear()
    assert config.ALGOS == ("grpo", "dapo", "microcoder-grpo"), "the package's own, in the help's order"
    assert config.Algo.__choices__() == config.ALGOS
