"""How often the offline rules judge agrees with the LLM judge on ClinDiag submissions.

A ClinDiag run with `bench.judge=llm` stores, per episode, the LLM verdict (`diagnosis_correct`,
`differential_hit`) and the rules judge's verdict on the same submission (`rules_diagnosis_correct`,
`rules_differential_hit`). This script pools those over every `results.jsonl` below the given folders
(default `results/clindiag`) and prints agreement, Cohen's kappa and the confusion counts, per run and
pooled over real (non-smoke) runs. Episodes without a submission are left out: both judges trivially agree.

    python scripts/clindiag_judge_agreement.py [FOLDER ...]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pair:
    llm: bool
    rules: bool


def kappa(pairs: list[Pair]) -> float | None:
    """Cohen's kappa of the two judges; None when it is undefined (both judges constant and equal)."""
    n = len(pairs)
    observed = sum(p.llm == p.rules for p in pairs) / n
    llm_yes, rules_yes = sum(p.llm for p in pairs) / n, sum(p.rules for p in pairs) / n
    chance = llm_yes * rules_yes + (1 - llm_yes) * (1 - rules_yes)
    return None if chance == 1 else (observed - chance) / (1 - chance)


def describe(name: str, diagnosis: list[Pair], differential: list[Pair]) -> str:
    n = len(diagnosis)
    agree = sum(p.llm == p.rules for p in diagnosis) / n
    k = kappa(diagnosis)
    counts = {
        (llm, rules): sum(p.llm is llm and p.rules is rules for p in diagnosis)
        for llm in (True, False)
        for rules in (True, False)
    }
    diff_agree = (
        sum(p.llm == p.rules for p in differential) / len(differential) if differential else float("nan")
    )
    return (
        f"{name}: {n} judged submissions; diagnosis agreement {100 * agree:.1f}% "
        f"(kappa {'undefined' if k is None else f'{k:.3f}'}; LLM yes/rules yes {counts[True, True]}, "
        f"LLM yes/rules no {counts[True, False]}, LLM no/rules yes {counts[False, True]}, "
        f"LLM no/rules no {counts[False, False]}); differential-hit agreement {100 * diff_agree:.1f}%"
    )


def read_run(results: Path) -> tuple[list[Pair], list[Pair]]:
    diagnosis, differential = [], []
    for line in results.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        extras = record.get("extras", {})
        if (
            record.get("status") != "done"
            or extras.get("judge_rules") is not False
            or not extras.get("submitted")
        ):
            continue
        if "rules_diagnosis_correct" not in extras:
            continue
        diagnosis.append(Pair(bool(extras["diagnosis_correct"]), bool(extras["rules_diagnosis_correct"])))
        if "rules_differential_hit" in extras:
            differential.append(
                Pair(bool(extras["differential_hit"]), bool(extras["rules_differential_hit"]))
            )
    return diagnosis, differential


def run_label(results: Path) -> str:
    meta = results.parent / "run.json"
    labels = json.loads(meta.read_text(encoding="utf-8")).get("labels", {}) if meta.is_file() else {}
    return str(labels.get("label", "unlabelled"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("results") / "clindiag"])
    args = parser.parse_args()
    files = sorted(p for folder in args.folders if folder.exists() for p in folder.rglob("results.jsonl"))
    pooled: tuple[list[Pair], list[Pair]] = ([], [])
    any_llm = False
    for results in files:
        diagnosis, differential = read_run(results)
        if not diagnosis:
            continue
        any_llm = True
        label = run_label(results)
        print(describe(f"{results.parent} [{label}]", diagnosis, differential))
        if label != "smoke":
            pooled[0].extend(diagnosis)
            pooled[1].extend(differential)
    where = ", ".join(str(f) for f in args.folders)
    if not any_llm:
        print(f"no LLM-judge run exists yet under {where}: the rules-vs-LLM agreement has not been measured.")
    elif not pooled[0]:
        print("no real (non-smoke) LLM-judge run exists yet: the figures above come from smoke runs only.")
    else:
        print(describe("pooled over real runs", *pooled))


if __name__ == "__main__":
    main()
