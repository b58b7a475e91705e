"""Real LOCA-Bench on a checkout (`LOCA_BENCH_ROOT`): servers, isolation, the upstream checkers, the world cache.

Skipped without a checkout (CI has none). Each reset generates a world and launches every MCP server, and each
tool call launches them again (upstream's MCPTool), so these tests take minutes.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from baselines.raw import RawHistory
from pos_bench.benchmarks.loca.real.benchmark import LocaBenchmark
from pos_bench.benchmarks.loca.real.isolation import bwrap_path
from pos_bench.benchmarks.loca.real.session import ServerDied
from pos_bench.loop import play as play_episode
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Transcript
from pos_bench.types import ToolCall

ROOT = os.environ.get("LOCA_BENCH_ROOT")
pytestmark = pytest.mark.skipif(
    not ROOT,
    reason="real LOCA-Bench needs a LOCA-bench checkout: set LOCA_BENCH_ROOT (see docs/how-to/loca-setup.md)",
)
PYTHON, CLAIM = "python_execute_python_execute", "claim_done_claim_done"
HERE = Path(__file__).parent
MODES = ["episode", "per_call"]
"""bench.servers: held for the episode, or upstream's MCPTool as it is; grades must not depend on it."""
FAMILIES = [
    "CanvasArrangeExam",
    "CanvasListTest",
    "CourseAssistant",
    "ABTesting",
    "AcademicWarning",
    "ApplyPhDEmail",
    "MachineOperating",
    "SetConfCrDdl",
    "ExcelMarketResearch",
    "FilterLowSellingProducts",
    "UpdateMaterialInventory",
    "WoocommerceNewWelcome",
    "WoocommerceStockAlert",
    "NhlB2bAnalysis",
    "PayableInvoiceChecker",
]


OPEN: list = []


@pytest.fixture(autouse=True)
def close_envs():
    """A failed assertion must not leave a case's folder locked (and its servers' vault closed) for the next test."""
    yield
    while OPEN:
        OPEN.pop().close()


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = Path(os.environ.get("POS_BENCH_LOCA_TEST_DIR", tmp_path_factory.mktemp("loca")))
    return {"work_dir": str(base / "work"), "cache_dir": str(base / "worlds")}


def play(dirs, family, actions, seed=42, servers="episode"):
    """Reset one case, run `actions` (ToolCalls, or functions of the observations so far), return the env."""
    bench = LocaBenchmark(
        root=ROOT, families=[family], seeds=[seed], keep_workspaces="all", servers=servers, **dirs
    )
    env = bench.make_env(None)
    OPEN.append(env)
    seen = [env.reset(bench.tasks()[0])]
    for action in actions:
        call = action(seen) if callable(action) else action
        seen.append(env.step(call))
    return env, seen


def python(code: str) -> ToolCall:
    return ToolCall(PYTHON, {"code": code})


def test_untouched_workspace_scores_zero_and_the_cache_makes_the_second_reset_cheap(dirs):
    env, seen = play(dirs, "CanvasListTest", [ToolCall(CLAIM, {})])
    assert seen[0].info["tools"] == 92 and seen[-1].done
    assert env.score().value == 0.0 and not env.score().success
    first = seen[0].info["reset_seconds"]  # the world's part of the reset: generation, or restoration
    env.close()
    again, seen = play(dirs, "CanvasListTest", [], servers="per_call")  # per_call: no server launch here
    assert seen[0].info["world_cached"] and seen[0].info["reset_seconds"] < 0.25 * max(first, 4.0)
    again.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_the_untouched_workspace_grade_is_the_same_with_servers_for_the_episode_and_per_call(dirs, family):
    grades = {}
    for servers in MODES:
        env, seen = play(dirs, family, [ToolCall(CLAIM, {})], servers=servers)
        assert seen[0].info["servers"] == servers
        grades[servers] = (seen[-1].done, env.score().value)
        env.close()
    assert grades["episode"] == grades["per_call"] == (True, 0.0)


def _descendants() -> set[int]:
    """The processes this test process started, at any depth (from /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    mine, grew = {os.getpid()}, True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        mine |= found
        grew = bool(found)
    return mine - {os.getpid()}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _server_pid(name: str) -> int:
    """The process of the filesystem (`@modelcontextprotocol/server-filesystem`) or another server by a
    fragment of its command line."""
    for pid in _descendants():
        try:
            if name in Path(f"/proc/{pid}/cmdline").read_text():
                return pid
        except OSError:
            continue
    raise AssertionError(f"no server process with {name!r} in its command line")


def test_servers_stay_up_for_the_episode_and_no_process_outlives_close(dirs):
    listing = ToolCall("filesystem_list_directory", {"path": "."})
    env, seen = play(dirs, "CanvasListTest", [])
    started = _descendants()
    assert (
        len(started) >= 5
    )  # one process per server at least (canvas, python, claim_done, memory, filesystem)
    for _ in range(3):
        env.step(ToolCall("filesystem_list_directory", {"path": str(env.task_dir / "agent_workspace")}))
    assert _descendants() == started  # the same processes served every call
    assert listing.name in {s["function"]["name"] for s in seen[0].tools}
    env.close()
    time.sleep(1.0)
    assert not [pid for pid in started if _alive(pid)]


def test_a_server_that_dies_is_restarted_once_then_the_episode_ends_naming_it(dirs):
    env, _ = play(dirs, "CanvasListTest", [])
    workspace = str(env.task_dir / "agent_workspace")
    listing = ToolCall("filesystem_list_directory", {"path": workspace})
    first = _server_pid("server-filesystem")
    os.kill(first, signal.SIGKILL)
    again = env.step(listing)
    assert "quiz_info.csv" in again.text and not again.done  # restarted before the call: the episode goes on
    second = _server_pid("server-filesystem")
    assert second != first
    os.kill(second, signal.SIGKILL)
    with pytest.raises(ServerDied, match="filesystem"):
        env.step(listing)
    before = _descendants()
    env.close()
    time.sleep(1.0)
    assert not [pid for pid in before if _alive(pid)]


def test_a_reply_without_a_tool_call_is_graded_as_the_final_answer(dirs):
    bench = LocaBenchmark(root=ROOT, families=["CanvasListTest"], seeds=[42], **dirs)
    env = bench.make_env(None)
    OPEN.append(env)
    model = ScriptedModel({"agent": ['{"thought": "nothing left to do", "action": "All done."}']})
    with RawHistory(model=model) as method:
        result = play_episode(
            bench.tasks()[0], env, method, model, brief=bench.brief, max_turns=5, log=Transcript()
        )
    assert (result.turns, result.steps, result.spent_turns) == (1, 1, 0)
    assert not result.success and env.score().value == 0.0


SNOOP = """import os, glob
print("ENV", sorted(k for k in os.environ if "API_KEY" in k))
print("GT", glob.glob("../groundtruth_workspace/*") + glob.glob("../../**/groundtruth_workspace", recursive=True))
try:
    print("README", open({readme!r}).read()[:20])
except OSError as error:
    print("README-ERROR", type(error).__name__)
"""


def test_python_execute_sees_no_ground_truth_no_keys_and_with_bwrap_nothing_outside(dirs, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    readme = str(Path(ROOT) / "README.md")
    env, seen = play(dirs, "CanvasListTest", [python(SNOOP.format(readme=readme))])
    out = seen[-1].text
    assert "ENV []" in out and "GT []" in out
    assert ("README-ERROR" in out) == bool(bwrap_path())
    assert (env.task_dir / "agent_workspace").is_dir() and not (
        env.task_dir / "groundtruth_workspace"
    ).exists()
    env.close()
    assert (env.task_dir / "groundtruth_workspace").is_dir()  # restored for the checker and for inspection


def test_terminal_cannot_read_the_ground_truth(dirs):
    terminal = ToolCall("terminal_run_command", {"command": "ls -a .. ../groundtruth_workspace; pwd"})
    env, seen = play(dirs, "ExcelMarketResearch", [terminal])
    text = seen[-1].text
    assert "Market_Data_gt" not in text and "metadata.json" not in text
    assert str(env.task_dir / "agent_workspace") in text  # it ran, in the agent workspace
    env.close()


# -- scripted solutions that work only through the real tools -----------------------------------------------
EXCEL_SOLVER = (HERE / "solvers" / "excel_market_research.py").read_text()


@pytest.mark.parametrize("servers", MODES)
@pytest.mark.parametrize("wrong", [False, True])
def test_excel_market_research_solved_through_python_execute(dirs, wrong, servers):
    code = EXCEL_SOLVER.replace('"mn": 0.001', '"mn": 1.0') if wrong else EXCEL_SOLVER  # wrong: ignores units
    env, seen = play(dirs, "ExcelMarketResearch", [python(code), ToolCall(CLAIM, {})], servers=servers)
    assert "wrote growth_rate.xlsx" in seen[1].text
    assert env.score().value == (0.0 if wrong else 1.0)
    env.close()


@pytest.mark.parametrize("wrong", [False, True])
def test_an_episode_ended_by_its_budget_is_graded_as_left_but_never_counted_a_success(dirs, wrong):
    code = EXCEL_SOLVER.replace('"mn": 0.001', '"mn": 1.0') if wrong else EXCEL_SOLVER
    env, seen = play(dirs, "ExcelMarketResearch", [python(code)])  # the budget ends here: no claim_done
    score = env.score()
    assert not seen[-1].done and not score.success and score.value == 0.0
    assert score.extras["claimed_done"] is False
    assert score.extras["unclaimed_reward"] == (0.0 if wrong else 1.0)
    env.close()
    assert env.score().extras["unclaimed_reward"] == (0.0 if wrong else 1.0)  # graded once, kept after close
    claimed, _ = play(dirs, "ExcelMarketResearch", [ToolCall(CLAIM, {})])
    assert claimed.score().extras["unclaimed_reward"] is None  # the checker already graded a claimed episode
    claimed.close()


RANGES = """import json, openpyxl
sheet = openpyxl.load_workbook("machine_operating_parameters.xlsx", data_only=True)["Operating Parameters"]
rows = list(sheet.iter_rows(values_only=True))
print(json.dumps([dict(zip(rows[0], r)) for r in rows[1:] if r[0]], default=str))"""
QUERY = (
    "SELECT timestamp, machine_id, sensor_type, reading FROM `machine_operating.live_sensor` "
    "WHERE timestamp >= '2025-08-19 11:30:00' AND timestamp <= '2025-08-19 12:30:00' ORDER BY timestamp"
)


def _json_in(text: str):
    """The first JSON value in a tool result (after a BigQuery result's "rows):" header when there is one)."""
    if "rows):" in text:
        text = text[text.index("rows):") + len("rows):") :]
    start = min(i for i in (text.find("["), text.find("{")) if i >= 0)
    return json.JSONDecoder().raw_decode(text[start:])[0]


def _report(seen, wrong: bool) -> ToolCall:
    ranges = {(r["machine_id"], r["sensor_type"]): r for r in _json_in(seen[1].text)}
    result = _json_in(seen[2].text)
    rows = result.get("rows", result.get("results", result)) if isinstance(result, dict) else result
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["timestamp", "machine_id", "sensor_type", "reading", "normal_range"])
    for row in rows:
        limits = ranges.get((row["machine_id"], row["sensor_type"]))
        low, high = float(limits["min_value"]), float(limits["max_value"])
        outside = not low <= float(row["reading"]) <= high
        if outside != wrong:
            writer.writerow(
                [
                    row["timestamp"],
                    row["machine_id"],
                    row["sensor_type"],
                    row["reading"],
                    f"{low:.2f} - {high:.2f}",
                ]
            )
    workspace = re.search(r"agent workspace folder is (\S+);", seen[0].text).group(1)
    path = f"{workspace}/anomaly_report.csv"
    return ToolCall("filesystem_write_file", {"path": path, "content": out.getvalue()})


@pytest.mark.parametrize("servers", MODES)
@pytest.mark.parametrize("wrong", [False, True])
def test_machine_operating_solved_through_bigquery_excel_and_storage(dirs, wrong, servers):
    def upload(seen):
        workspace = re.search(r"agent workspace folder is (\S+);", seen[0].text).group(1)
        return ToolCall(
            "google_cloud_storage_upload_file",
            {
                "bucket_name": "iot_anomaly_reports",
                "source_file_path": f"{workspace}/anomaly_report.csv",
                "destination_blob_name": "anomaly_report.csv",
            },
        )

    actions = [
        python(RANGES),
        ToolCall("google_cloud_bigquery_run_query", {"query": QUERY, "max_results": 100000}),
        lambda seen: _report(seen, wrong),
        ToolCall("google_cloud_storage_create_bucket", {"bucket_name": "iot_anomaly_reports"}),
        upload,
        ToolCall(CLAIM, {}),
    ]
    env, seen = play(dirs, "MachineOperating", actions, servers=servers)
    assert "anomaly_report.csv" in seen[3].text  # the manifest lists the file the write created
    assert env.score().value == (0.0 if wrong else 1.0), seen[-1].text[-1500:]
    env.close()


def _workspace(seen) -> str:
    return re.search(r"agent workspace folder is (\S+);", seen[0].text).group(1)


TABLES = "SELECT table_name FROM `ab_testing.INFORMATION_SCHEMA.TABLES`"


def _ab_query(seen) -> ToolCall:
    tables = sorted(set(re.findall(r"\bab_[A-Za-z]+\b", seen[1].text)) - {"ab_testing"})
    sums = "SUM(A_clicks) AS a_clicks, SUM(A_store_views) AS a_views, SUM(B_clicks) AS b_clicks, SUM(B_store_views) AS b_views"
    union = " UNION ALL ".join(f"SELECT '{t}' AS scenario, {sums} FROM `ab_testing.{t}`" for t in tables)
    return ToolCall("google_cloud_bigquery_run_query", {"query": union, "max_results": 1000})


def _ab_record(seen) -> ToolCall:
    rows = _json_in(seen[2].text)
    lines = ["scenario,A_conversion %,B_conversion %"]
    for row in rows:
        lines.append(
            f"{row['scenario'].removeprefix('ab_')},{row['a_views'] / row['a_clicks'] * 100:.3f}%,{row['b_views'] / row['b_clicks'] * 100:.3f}%"
        )
    a = sum(r["a_views"] for r in rows) / sum(r["a_clicks"] for r in rows) * 100
    b = sum(r["b_views"] for r in rows) / sum(r["b_clicks"] for r in rows) * 100
    lines.append(f"overall (total_store_views/total_clicks),{a:.3f}%,{b:.3f}%")
    return ToolCall(
        "filesystem_write_file",
        {"path": f"{_workspace(seen)}/record.csv", "content": "\n".join(lines) + "\n"},
    )


def _ab_decision(seen, wrong: bool) -> ToolCall:
    rows = _json_in(seen[2].text)
    a = sum(r["a_views"] for r in rows) / sum(r["a_clicks"] for r in rows)
    b = sum(r["b_views"] for r in rows) / sum(r["b_clicks"] for r in rows)
    if (b > a) != wrong:
        return ToolCall("google_cloud_storage_create_bucket", {"bucket_name": "promo-assets-for-b"})
    message = "{'status': 'AB_Test_Concluded', 'winner': 'A', 'action': 'No_Change'}"
    return ToolCall("google_cloud_logging_write_log", {"log_name": "abtesting_logging", "message": message})


@pytest.mark.parametrize("servers", MODES)
@pytest.mark.parametrize("wrong", [False, True])
def test_ab_testing_solved_through_bigquery_and_cloud_actions(dirs, wrong, servers):
    actions = [
        ToolCall("google_cloud_bigquery_run_query", {"query": TABLES}),
        _ab_query,
        _ab_record,
        lambda seen: _ab_decision(seen, wrong),
        ToolCall(CLAIM, {}),
    ]
    env, seen = play(dirs, "ABTesting", actions, servers=servers)
    assert "record.csv" in seen[3].text
    assert env.score().value == (0.0 if wrong else 1.0), seen[-1].text[-1500:]
    env.close()


def test_worlds_generated_ahead_of_time_are_the_ones_a_reset_restores(dirs, capsys):
    from pos_bench.benchmarks.loca.real.pregenerate import main as pregenerate

    common = [
        f"bench.root={ROOT}",
        "bench.families=[NhlB2bAnalysis]",
        "bench.seeds=[123]",
        f"bench.work_dir={dirs['work_dir']}",
        f"bench.cache_dir={dirs['cache_dir']}",
    ]
    assert pregenerate([*common, "--jobs", "1"]) == 0
    first = capsys.readouterr().out  # generated now, or by an earlier run of this test in the same folder
    assert "8k: 1 generated, 0 already cached" in first or "8k: 0 generated, 1 already cached" in first
    assert pregenerate([*common, "--jobs", "1"]) == 0
    assert "8k: 0 generated, 1 already cached, 0 failed" in capsys.readouterr().out
    env, seen = play(dirs, "NhlB2bAnalysis", [], seed=123)
    assert seen[0].info["world_cached"] and seen[0].info["cache"] == "hit"
    env.close()
