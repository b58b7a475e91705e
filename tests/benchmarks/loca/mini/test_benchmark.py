import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pos_bench.benchmarks.loca.catalog import ROLES, role_of
from pos_bench.benchmarks.loca.mini.benchmark import (
    FAMILIES,
    LocaBenchmark,
    LocaEnv,
    generate,
    task_id,
)
from pos_bench.benchmarks.loca.mini.generation import SCALES, SEEDS, nominal_tokens
from pos_bench.benchmarks.loca.mini.tools import MAX_ARGUMENT_CHARS
from pos_bench.loop import play
from pos_bench.protocols import MethodBase
from pos_bench.runner import run as run_config
from pos_bench.runner.summary import summarize
from pos_bench.transcript import Transcript
from pos_bench.types import Decision, Task, ToolCall
from tests.conftest import REPO

ME = "alex.morgan@northwind.example"


def task(family, seed=42, scale="8k"):
    return Task(task_id(family, seed, scale), meta={"family": family, "seed": seed, "scale": scale})


# ---- a scripted oracle that reads everything through the tools and applies the instruction's rules ----


def read_all(tool, arguments):
    """Follow `next_offset` through every page of a listing tool; returns the items."""
    items, offset = [], 0
    while offset is not None:
        obs = yield ToolCall(tool, {**arguments, "offset": offset, "limit": 200})
        page = json.loads(obs.text)
        items += page["items"]
        offset = page["next_offset"]
    return items


def mail_oracle(goal, sabotage):
    inbox = yield from read_all("email_list_messages", {"folder": "inbox"})
    requests = [m for m in inbox if m["subject"].startswith("Meeting request: ") and ME in m["to"]]
    for number, message in enumerate(requests):
        topic = message["subject"].removeprefix("Meeting request: ")
        day, clock = re.search(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})", message["body"]).groups()
        minutes = int(re.search(r"(\d+) minutes", message["body"]).group(1))
        event = {
            "title": topic,
            "start": f"{day}T{clock}",
            "duration_minutes": minutes,
            "attendees": [message["from"]],
        }
        yield ToolCall("calendar_create_event", event)
        if not (sabotage and number == len(requests) - 1):
            yield ToolCall(
                "email_send_message",
                {"to": message["from"], "subject": f"Confirmed: {topic}", "body": "See you."},
            )


def inventory_oracle(goal, sabotage):
    warehouse = re.search(r"Our (\w+) warehouse", goal).group(1)
    products = yield from read_all("inventory_list_products", {})
    rows = [
        [p["sku"], p["name"], p["stock"], p["reorder_threshold"], p["reorder_threshold"] - p["stock"]]
        for p in products
        if p["warehouse"] == warehouse and p["stock"] < p["reorder_threshold"]
    ]
    if sabotage:
        rows[0][4] += 1
    header = ["sku", "name", "stock", "reorder_threshold", "shortfall"]
    yield ToolCall(
        "sheets_write_csv", {"path": "outputs/low_stock_alert.csv", "header": header, "rows": rows}
    )


def course_oracle(goal, sabotage):
    course = re.search(r"\(([A-Z]+-\d+)\)", goal).group(1)
    students = yield from read_all("canvas_list_students", {"course_id": course})
    obs = yield ToolCall("canvas_list_assignments", {"course_id": course})
    published = {a["assignment_id"] for a in json.loads(obs.text)["assignments"] if a["published"]}
    submissions = yield from read_all("canvas_list_submissions", {"course_id": course})
    finished = {
        (s["student_id"], s["assignment_id"]) for s in submissions if s["status"] in ("submitted", "graded")
    }
    wanted = "dropped" if sabotage else "active"
    unfinished = {}
    for student in students:
        gaps = sorted(a for a in published if (student["student_id"], a) not in finished)
        if gaps and student["enrollment"] in ("active", wanted):
            unfinished[student["student_id"]] = gaps
    yield ToolCall(
        "fs_write_file",
        {"path": "/workspace/outputs/unfinished_assignments.json", "content": json.dumps(unfinished)},
    )


def idle():
    yield from ()


ORACLES = {
    "mail_calendar": mail_oracle,
    "inventory_alert": inventory_oracle,
    "course_unfinished": course_oracle,
}


class Oracle(MethodBase):
    """Plays one family's oracle, then claim_done; records every observation's length."""

    def __init__(self, model=None, *, sabotage=False, work=True):
        self.sabotage, self.work = sabotage, work
        self.observed = []

    def start(self, task, brief, first):
        self.observed.append(len(first.text))
        self.plan = ORACLES[task.meta["family"]](first.goal, self.sabotage) if self.work else idle()
        self.action = next(self.plan, ToolCall("claim_done", {}))

    def prompt(self, obs):
        return Decision(thought="oracle", action=self.action)

    def update(self, step):
        self.observed.append(len(step.after.text))
        try:
            self.action = self.plan.send(step.after)
        except StopIteration:
            self.action = ToolCall("claim_done", {})


def run(family, seed=42, scale="8k", **oracle):
    method = Oracle(**oracle)
    env = LocaEnv()
    log = Transcript()
    try:
        result = play(
            task(family, seed, scale), env, method, None, brief=LocaBenchmark().brief, max_turns=100, log=log
        )
    finally:
        env.close()
    return result, method, log


@pytest.fixture(scope="module")
def oracle_runs():
    return {(f, seed, scale): run(f, seed, scale)[:2] for f in FAMILIES for seed in SEEDS for scale in SCALES}


# ---- checker and oracle --------------------------------------------------------------------------------


def test_oracle_succeeds_on_every_family_seed_and_scale(oracle_runs):
    assert len(oracle_runs) == 3 * 5 * 7
    for key, (result, _) in oracle_runs.items():
        assert result.success and result.score == 1.0, (key, result.final_observation)
        assert result.extras["claimed_done"] and not result.extras["truncated"]
        assert (
            result.steps == result.extras["tool_uses"] <= 100 and "Check passed" in result.final_observation
        )


def test_text_read_grows_with_scale_roughly_in_proportion(oracle_runs):
    for family in FAMILIES:
        for seed in SEEDS:
            read = [sum(oracle_runs[family, seed, s][1].observed) for s in SCALES]
            tokens = [oracle_runs[family, seed, s][0].extras["env_tokens"] for s in SCALES]
            assert read == sorted(read) and len(set(read)) == len(read)
            for scale, count in zip(SCALES, tokens, strict=True):
                assert 0.97 <= count / nominal_tokens(scale) <= 1.05, (family, seed, scale, count)
            # roughly 4 characters per token: what the oracle reads tracks the nominal length
            assert all(2.5 <= chars / count <= 5 for chars, count in zip(read, tokens, strict=True))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_wrong_answer_gets_reward_zero(family):
    result, _, _ = run(family, sabotage=True)
    assert result.extras["claimed_done"] and not result.success and result.score == 0.0
    assert "Check failed" in result.final_observation


@pytest.mark.parametrize("family", FAMILIES)
def test_claim_done_on_an_untouched_workspace_gets_zero(family):
    result, _, _ = run(family, work=False)
    assert result.steps == 1 and result.extras["claimed_done"] and result.score == 0.0 and not result.success


def test_episode_ends_at_the_tool_use_budget():
    env = LocaEnv(max_tool_uses=3)
    env.reset(task("inventory_alert"))
    observations = [env.step(ToolCall("inventory_list_warehouses", {})) for _ in range(3)]
    assert [o.done for o in observations] == [False, False, True] and "budget" in observations[-1].text
    assert "over" in env.step(ToolCall("claim_done", {})).text.lower()
    score = env.score()
    assert (
        not score.success
        and score.value == 0.0
        and score.extras["truncated"]
        and not score.extras["claimed_done"]
    )
    env.close()


# ---- generation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_is_byte_identical_and_the_answer_ignores_scale(family):
    for seed in SEEDS:
        first, again = generate(family, seed, "16k"), generate(family, seed, "16k")
        assert first.rendered() == again.rendered() and first.instruction == again.instruction
        bigger = generate(family, seed, "32k")
        assert bigger.truth == first.truth and bigger.instruction == first.instruction
    assert generate(family, 42, "8k").truth != generate(family, 123, "8k").truth


def digest(family, seed, scale):
    case = generate(family, seed, scale)
    return hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(case.rendered().items()))).hexdigest()


def test_generation_does_not_depend_on_the_process_or_its_hash_seed():
    code = (
        "from tests.benchmarks.loca.mini.test_benchmark import digest, FAMILIES; "
        "print(' '.join(digest(f, 2024, '16k') for f in FAMILIES))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [digest(f, 2024, "16k") for f in FAMILIES]


@pytest.mark.parametrize("family", FAMILIES)
def test_workspace_on_disk_matches_the_generated_case_and_grows_with_scale(family):
    sizes = []
    for scale in SCALES:
        env = LocaEnv()
        first = env.reset(task(family, 789, scale))
        root = env.workspace_dir
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert files == generate(family, 789, scale).rendered()
        assert first.info["env_tokens"] > 0 and first.goal and not first.done
        sizes.append(sum(len(b) for b in files.values()))
        env.close()
        assert not root.exists()
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)


# ---- tools, errors and the catalog ---------------------------------------------------------------------


def test_errors_are_observations_that_consume_the_call():
    env = LocaEnv()
    env.reset(task("mail_calendar"))
    unknown = env.step(ToolCall("email_delete_everything", {}))
    assert "unknown tool" in unknown.text and "email_list_messages" in unknown.text and not unknown.done
    assert unknown.info["status"] == "unknown_tool" and unknown.info["tool_uses"] == 1
    extra = env.step(ToolCall("email_read_message", {"message_id": "x", "folder": "inbox"}))
    missing = env.step(ToolCall("calendar_create_event", {"title": "x"}))
    typed = env.step(ToolCall("email_list_messages", {"limit": "ten"}))
    bad_value = env.step(
        ToolCall(
            "calendar_create_event", {"title": "x", "start": "soon", "duration_minutes": 5, "attendees": []}
        )
    )
    no_id = env.step(ToolCall("email_read_message", {"message_id": "msg-none"}))
    assert "unknown argument 'folder'" in extra.text and "missing required argument 'start'" in missing.text
    assert (
        "must be a JSON integer" in typed.text
        and "start must look like" in bad_value.text
        and "no message" in no_id.text
    )
    assert all(o.info["status"] == "error" for o in (extra, missing, typed, bad_value, no_id))
    malformed = env.step("open the inbox")
    assert malformed.info["status"] == "invalid" and malformed.info["tool_uses"] == 6
    failed = (unknown, extra, missing, typed, bad_value, no_id, malformed)
    assert all(o.tool_error for o in failed)  # each counts as a tool error in the failure ledger
    assert not env.step(ToolCall("email_list_messages", {})).tool_error
    assert env.score().value == 0.0 and not env.score().extras["claimed_done"]
    env.close()


def test_paths_stay_inside_the_agent_workspace_and_changes_are_reported():
    env = LocaEnv()
    env.reset(task("inventory_alert"))
    for path in ("../local_db/inventory.json", "/etc/passwd", "/workspace/../local_db/inventory.json"):
        assert env.step(ToolCall("fs_read_file", {"path": path})).info["status"] == "error"
    for path in ("a\x00b.txt", "alert_template.csv/inner.txt", "/workspace", "x" * 300):
        assert env.step(ToolCall("fs_write_file", {"path": path, "content": "x"})).info["status"] == "error"
    created = env.step(ToolCall("fs_write_file", {"path": "notes/a.txt", "content": "one"}))
    modified = env.step(ToolCall("fs_write_file", {"path": "/workspace/notes/a.txt", "content": "two!"}))
    same = env.step(ToolCall("fs_write_file", {"path": "notes/a.txt", "content": "two!"}))
    manifest = [json.loads(o.text.split("Workspace changes: ")[1]) for o in (created, modified)]
    assert manifest == [
        [{"path": "/workspace/notes/a.txt", "bytes": 3, "change": "created", "producer": "fs_write_file"}],
        [{"path": "/workspace/notes/a.txt", "bytes": 4, "change": "modified", "producer": "fs_write_file"}],
    ]
    assert "Workspace changes" not in same.text
    assert env.step(ToolCall("fs_read_file", {"path": "alert_template.csv"})).text.startswith("sku,name")
    listing = json.loads(env.step(ToolCall("fs_list_directory", {})).text)
    assert [e["path"] for e in listing["entries"]] == ["/workspace/alert_template.csv", "/workspace/notes"]
    env.close()


def test_arguments_over_the_cap_are_refused_with_a_message_the_model_sees():
    env = LocaEnv()
    env.reset(task("inventory_alert"))
    huge = env.step(ToolCall("fs_write_file", {"path": "big.txt", "content": "x" * 20_000_000}))
    assert huge.info["status"] == "error" and not huge.done
    assert "20,000,0" in huge.text and f"{MAX_ARGUMENT_CHARS:,} one call may carry" in huge.text
    listing = json.loads(env.step(ToolCall("fs_list_directory", {})).text)
    assert "/workspace/big.txt" not in [e["path"] for e in listing["entries"]]  # nothing was written
    under = env.step(
        ToolCall("fs_write_file", {"path": "ok.txt", "content": "x" * (MAX_ARGUMENT_CHARS // 2)})
    )
    assert under.info["status"] == "ok"
    env.close()


def test_pages_stop_at_the_character_cap_and_say_where_to_continue():
    env = LocaEnv()
    env.reset(task("mail_calendar", scale="64k"))
    page = json.loads(env.step(ToolCall("email_list_messages", {"limit": 200})).text)
    assert page["returned"] < 200 and page["next_offset"] == page["returned"] and "offset=" in page["note"]
    assert env.step(ToolCall("email_list_messages", {"limit": 500})).info["status"] == "error"
    env.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_observation_shows_the_tools_in_catalog_order(family):
    env = LocaEnv()
    first = env.reset(task(family))
    names = [t["function"]["name"] for t in first.tools]
    assert sorted(names) == sorted(t.schema()["function"]["name"] for t in FAMILIES[family].tools)
    roles = [role_of(t) for t in first.tools]
    assert roles == sorted(roles, key=ROLES.index) and roles[-1] == "finish" and names[-1] == "claim_done"
    assert all(re.match(r"^\[\w+\] ", t["function"]["description"]) for t in first.tools)
    outline = json.loads(first.text.split("same order):\n", 1)[1])
    assert sum(d["tool_count"] for d in outline["domains"]) == len(names)
    assert [n for members in outline["tools_by_role"].values() for n in members] == names
    assert env.step(ToolCall(names[0], {})).tools == first.tools
    env.close()


# ---- benchmark -----------------------------------------------------------------------------------------


def test_tasks_nest_scale_family_seed_and_slice():
    bench = LocaBenchmark(
        scales=["8k", "32k"], families=["inventory_alert", "mail_calendar"], seeds=[42, 123]
    )
    ids = [t.id for t in bench.tasks()]
    assert ids[:3] == [
        "8k/inventory_alert/seed_42",
        "8k/inventory_alert/seed_123",
        "8k/mail_calendar/seed_42",
    ]
    assert len(ids) == 8 and ids[-1] == "32k/mail_calendar/seed_123"
    sliced = LocaBenchmark(start=14, limit=5).tasks()
    assert [t.id for t in sliced] == ["8k/course_unfinished/seed_2024"]
    assert LocaBenchmark().brief.mode == "execution" and LocaBenchmark().max_turns == 100
    for bad in ({"scales": ["12k"]}, {"families": ["nope"]}, {"limit": -1}):
        with pytest.raises(ValueError):
            LocaBenchmark(**bad)


def test_summary_groups_success_by_family_and_scale(oracle_runs):
    results = [r for (f, seed, scale), (r, _) in oracle_runs.items() if seed == 42 and scale in ("8k", "16k")]
    flipped = [replace(r, success=False) if r.task_meta["family"] == "mail_calendar" else r for r in results]
    summary = summarize(flipped, {})
    assert summary.by_group["family"] == {
        "course_unfinished": 1.0,
        "inventory_alert": 1.0,
        "mail_calendar": 0.0,
    }
    assert summary.by_group["scale"]["8k"] == pytest.approx(2 / 3)
    assert summary.extras["env_tokens"] == pytest.approx(12_000, rel=0.05)


def test_written_csv_is_what_the_checker_reads(tmp_path: Path):
    env = LocaEnv()
    env.reset(task("inventory_alert"))
    env.step(
        ToolCall(
            "sheets_write_csv", {"path": "outputs/x.csv", "header": ["a", "b"], "rows": [[1, "two, three"]]}
        )
    )
    read = json.loads(env.step(ToolCall("sheets_read_csv", {"path": "outputs/x.csv"})).text)
    assert read["rows"] == list(csv.reader(io.StringIO('a,b\n1,"two, three"\n')))
    env.close()


def test_a_scripted_model_plays_through_runner_loop_and_raw_history(tmp_path):
    replies = [
        '{"thought": "see the warehouses", "action": {"name": "inventory_list_warehouses", "arguments": {}}}',
        "I think I am done.",
        '{"thought": "nothing written yet, but stop", "action": {"name": "claim_done", "arguments": {}}}',
    ]
    config = {
        "bench": {
            "_target_": "pos_bench.benchmarks.loca.mini.benchmark.LocaBenchmark",
            "families": ["inventory_alert"],
            "limit": 1,
        },
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel", "replies": {"agent": replies}},
        "runner": {"backend": "threading", "progress": False},
        "roles": {},
        "cache": {"mode": "off"},
    }
    summary = run_config(config, tmp_path, {"label": "test"})
    assert (summary.episodes, summary.errors, summary.successes) == (1, 0, 0)
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert result["steps"] == 2 and result["extras"]["claimed_done"] and result["extras"]["tool_uses"] == 2
    assert result["task_meta"] == {"family": "inventory_alert", "scale": "8k", "seed": 42}
    (episode,) = (tmp_path / "episodes").iterdir()
    events = [json.loads(x) for x in (episode / "events.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["kind"] == "step"]
    assert (
        "Rotterdam" in steps[0]["observation"]["text"] and "Check failed" in steps[1]["observation"]["text"]
    )
    second_prompt = [e for e in events if e["kind"] == "call"][1]["prompt"]["messages"][1]["content"]
    assert "inventory_list_warehouses" in second_prompt.split("Previous steps:")[1]


class Fixed(MethodBase):
    """Plays a fixed list of actions."""

    def __init__(self, actions):
        self.actions = list(actions)

    def start(self, task, brief, first):
        pass

    def prompt(self, obs):
        return Decision(thought="fixed", action=self.actions.pop(0))

    def update(self, step):
        return None


def test_the_failure_ledger_counts_tool_errors_and_valid_turns():
    actions = [ToolCall("email_delete_everything", {}), ToolCall("email_list_messages", {}), "read mail"]
    env = LocaEnv()
    try:
        result = play(
            task("mail_calendar"),
            env,
            Fixed(actions),
            None,
            brief=LocaBenchmark().brief,
            max_turns=3,
            log=Transcript(),
        )
    finally:
        env.close()
    assert result.ledger.valid == 3 and result.ledger.tool_error == 2 and result.ledger.parse_failure == 0
