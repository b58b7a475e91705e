"""Process slots fork from a server that imported the run's modules: a worker starts with them imported, with the
driver's environment as it is when the worker starts, and the server survives a module that fails to import."""

import json
import subprocess
import sys
import textwrap

from pos_bench.runner.pool.forkserver import preload, worker_modules


def test_the_modules_are_the_episode_code_and_every_target_of_the_config():
    cfg = {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 2},
        "method": {
            "_target_": "baselines.pace.Pace",
            "encoder": {"_target_": "baselines.pace.encoder.MiniLMEncoder"},
        },
        "model": {"_target_": "pos_bench.models.openai.OpenAIModel"},
        "roles": {
            "judge": {"_target_": "pos_bench.models.openai.OpenAIModel"},
            "list": [{"_target_": "x.y.Z"}],
        },
        "runner": {"n_jobs": 16},
    }
    assert worker_modules(cfg) == (
        "pos_bench.runner.episode",
        "pos_bench.benchmarks.toy",
        "baselines.pace",
        "baselines.pace.encoder",
        "pos_bench.models.openai",
        "x.y",
    )


def test_preload_imports_the_modules_and_what_they_list_and_reports_what_failed(tmp_path, monkeypatch):
    (tmp_path / "pb_lazy_user.py").write_text('WORKER_IMPORTS = ("pb_lazy_engine", "pb_missing_engine")\n')
    (tmp_path / "pb_lazy_engine.py").write_text("")
    (tmp_path / "pb_raises.py").write_text('raise RuntimeError("broken on import")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    failed = preload("pb_lazy_user,pb_raises,,pb_absent")
    assert failed == ["pb_raises", "pb_absent", "pb_missing_engine"]
    assert "pb_lazy_engine" in sys.modules and "pb_raises" not in sys.modules


WORKER = textwrap.dedent(
    """
    import json, os, sys
    from pos_bench.runner.pool import forkserver, slots
    from pos_bench.types import EpisodeResult, Task

    def seen(task):
        return EpisodeResult(task.id, "done", task_meta={
            "openai": "openai" in sys.modules, "pid": os.getpid(), "parent": os.getppid(),
            "key": os.environ.get("PB_TEST_KEY"), "preload": os.environ.get(forkserver.PRELOAD_VARIABLE)})

    if __name__ == "__main__":
        forkserver.start(("pos_bench.models.openai", "pb_no_such_module"))
        os.environ["PB_TEST_KEY"] = "set after the server started"
        (result,) = slots.play_all(seen, [Task("a")], n_jobs=1, backend="loky")
        slots.close_idle()
        print(json.dumps({**result.task_meta, "driver": os.getpid(), "driver_openai": "openai" in sys.modules}))
    """
)


def test_a_worker_starts_with_the_run_modules_imported_and_the_driver_environment(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(WORKER)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["openai"] and not seen["driver_openai"]  # imported by the server, not by the driver
    assert seen["parent"] != seen["driver"]  # forked by the server
    assert seen["key"] == "set after the server started" and seen["preload"] is None
