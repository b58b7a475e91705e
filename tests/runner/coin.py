"""A one-turn test benchmark for repeated trials: call the coin; `heads` wins. Its outcome depends only on the
model's reply, so a stub that draws the reply per trial decides every trial's success."""

from __future__ import annotations

from pos_bench.types import Brief, Observation, Score, Task


class CoinEnv:
    def reset(self, task: Task) -> Observation:
        self.won = False
        return Observation(
            text=f"A coin is tossed for task {task.id}. Call it.",
            actions=("heads", "tails"),
            goal=f"call the coin of task {task.id}",
        )

    def step(self, action) -> Observation:
        self.won = action == "heads"
        return Observation(text="It landed.", done=True)

    def score(self) -> Score:
        return Score(success=self.won, value=float(self.won))

    def close(self) -> None:
        return None


class CoinBenchmark:
    def __init__(self, n_tasks: int = 20, *, start: int = 0, limit: int | None = None, max_turns: int = 1):
        self.n_tasks, self.start, self.limit, self.max_turns = n_tasks, start, limit, max_turns
        self.brief = Brief(system="Call the coin: answer with one of the listed actions.")

    def tasks(self) -> list[Task]:
        every = [Task(id=f"coin-{i:02d}", source=str(i)) for i in range(self.n_tasks)]
        return every[self.start : None if self.limit is None else self.start + self.limit]

    def make_env(self, model) -> CoinEnv:
        return CoinEnv()
