"""A plug-in costs one module and one config: a throw-away benchmark and method, written to a temporary folder
(a package on `sys.path` and a config folder on Hydra's search path), compose with the shipped groups and play
through the runner with nothing in the repository edited."""

from __future__ import annotations

import json
import os
import sys
import textwrap

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pos_bench.runner import run
from tests.conftest import REPO

BENCHMARK = '''
"""A counter that must reach `target`: `up` adds one, `check` ends the episode."""

from pos_bench.types import Brief, Observation, Score, Task


class CounterEnv:
    def __init__(self, target):
        self.target, self.count = target, 0

    def reset(self, task):
        self.count = 0
        return self.observe(f"The counter shows 0; bring it to {self.target}.")

    def step(self, action):
        if action == "up":
            self.count += 1
        return self.observe(f"The counter shows {self.count}.", done=self.count >= self.target)

    def observe(self, text, done=False):
        return Observation(text=text, actions=("up", "check"), done=done, goal=f"count to {self.target}")

    def score(self):
        return Score(success=self.count >= self.target, value=float(self.count))

    def close(self):
        return None


class CounterBenchmark:
    def __init__(self, *, target=2, start=0, limit=None, max_turns=5):
        self.target, self.start, self.limit, self.max_turns = target, start, limit, max_turns
        self.brief = Brief(system="Press the commands offered until the counter reaches its target.")

    def tasks(self):
        every = [Task(id=f"counter/{i}", source=str(i)) for i in range(3)]
        return every[self.start : None if self.limit is None else self.start + self.limit]

    def make_env(self, model):
        return CounterEnv(self.target)
'''

METHOD = '''
"""Shows the model only the current observation."""

from pos_bench.prompting import policy_prompt, render_observation
from pos_bench.protocols import MethodBase


class Forgetful(MethodBase):
    def __init__(self, model, *, max_json_retries=1):
        self.model, self.max_json_retries = model, max_json_retries
        self.turns = 0

    def start(self, task, brief, first):
        self.brief = brief

    def prompt(self, obs):
        sections = [f"Current observation:\\n{render_observation(obs)}"]
        return policy_prompt(
            self.brief, obs, sections, max_tokens=64, max_json_retries=self.max_json_retries
        )

    def update(self, step):
        self.turns += 1
        return {"seen": step.after.text if step.after else None}

    def report(self):
        return {"turns_seen": self.turns}
'''


def write_plugins(root):
    package = root / "plugins" / "throwaway"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "counter.py").write_text(textwrap.dedent(BENCHMARK))
    (package / "forgetful.py").write_text(textwrap.dedent(METHOD))
    conf = root / "conf"
    (conf / "bench").mkdir(parents=True)
    (conf / "method").mkdir()
    (conf / "bench" / "counter.yaml").write_text(
        "_target_: throwaway.counter.CounterBenchmark\ntarget: 2\nlimit: 1\n"
    )
    (conf / "method" / "forgetful.yaml").write_text(
        "_target_: throwaway.forgetful.Forgetful\n_partial_: true\n"
    )
    return root / "plugins", conf


def test_a_benchmark_and_a_method_from_outside_the_repository_play_through_the_runner(tmp_path, monkeypatch):
    plugins, conf = write_plugins(tmp_path)
    monkeypatch.syspath_prepend(str(plugins))
    # worker processes import the plug-ins too
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), *sys.path]))
    overrides = [
        f"hydra.searchpath=[file://{conf}]",
        "bench=counter",
        "method=forgetful",
        "model=scripted",
        '+model.default=\'{"thought": "press", "action": "up"}\'',
        f"results_root={tmp_path / 'results'}",
        "runner.progress=false",
        "cache.mode=off",
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    plain = OmegaConf.to_container(cfg, resolve=True)
    folder = tmp_path / "run"
    run(plain, folder, {"bench": "counter", "method": "forgetful"})
    (row,) = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "done", row["error"]
    assert row["success"] is True and row["turns"] == 2
    events = [
        json.loads(line) for path in folder.rglob("events.jsonl") for line in path.read_text().splitlines()
    ]
    assert [e["record"]["seen"] for e in events if e["kind"] == "memory"] == [
        "The counter shows 1.",
        "The counter shows 2.",
    ]
