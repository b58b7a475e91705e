"""Measure a ClinDiag judge on a labelled fixture generated from the cases (see clindiag/fixture.py).

Prints one confusion table per form (true/false positives/negatives, acceptance rate) and the targets of
issues 13 and 27 for the rules judge (the adversarial `doubt` and `listed` forms carry a reasoning that argues
for them). With `--llm MODEL` it also grades (a per-form sample of) the fixture with the LLM
judge served by that model config (conf/model/MODEL.yaml plus `--set key=value` overrides).

    python scripts/clindiag_judge_eval.py [--data DIR] [--judge pkg.module:Class] [--by-variant]
        [--llm qwen --set model=qwen3.7-plus --llm-per-form 20]
"""

from __future__ import annotations

import argparse
import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.fixture import ACCEPTED_FORMS, FORMS, CaseText, Item, build
from pos_bench.benchmarks.clindiag.judge import LLMJudge, Submission, Verdict
from pos_bench.models.roles import build_model
from pos_bench.runner.rescore import merged

REPO = Path(__file__).resolve().parents[1]
Grader = Callable[[Item, CaseText], Verdict]


def load_cases(data_dir: str | None, manifest: str | None) -> tuple[list[CaseText], str]:
    source = data.find_source(data_dir)
    refs = data.select_refs(source, manifest).refs
    cases = []
    for ref in refs:
        record = data.load_case(source, ref)
        key = data.load_answer(source, ref)
        text = "\n".join([record.initial_information, *record.sections.values()])
        cases.append(CaseText(ref.entry, key.final_diagnosis, key.differential_diagnosis, text))
    return cases, str(source.root)


def grader(judge: object, keys: dict[str, data.AnswerKey]) -> Grader:
    def grade(item: Item, case: CaseText) -> bool:
        verdict = judge.judge(
            Submission(item.submitted, "", item.reasoning), keys[item.case], record=case.record
        )
        return verdict

    return grade


def confusion(items: Sequence[Item], accepted: Sequence[bool], *, by: str = "form") -> pd.DataFrame:
    counts: dict[str, Counter] = {}
    for item, ok in zip(items, accepted, strict=True):
        key = item.form if by == "form" else f"{item.form}/{item.variant}"
        cell = ("TP" if ok else "FN") if item.accept else ("FP" if ok else "TN")
        counts.setdefault(key, Counter())[cell] += 1
    order = sorted(counts, key=lambda k: (FORMS.index(k.split("/")[0]), k))
    rows = []
    for key in order:
        c = counts[key]
        n = sum(c.values())
        rows.append(
            {
                by: key,
                "label": "accept" if key.split("/")[0] in ACCEPTED_FORMS else "reject",
                "n": n,
                "TP": c["TP"],
                "FN": c["FN"],
                "FP": c["FP"],
                "TN": c["TN"],
                "accepted_%": round(100 * (c["TP"] + c["FP"]) / n, 1),
            }
        )
    return pd.DataFrame(rows)


def targets(items: Sequence[Item], accepted: Sequence[bool]) -> list[str]:
    def rate(forms: tuple[str, ...]) -> tuple[float, int]:
        chosen = [ok for item, ok in zip(items, accepted, strict=True) if item.form in forms]
        return (100 * sum(chosen) / len(chosen) if chosen else float("nan")), len(chosen)

    lines = []
    for forms, op, bound in (
        (("negated", "excluded"), "≤", 1.0),
        (("other_case",), "≤", 2.0),
        (("exact", "prefixed"), "≥", 95.0),
        (("rewritten",), "≥", 85.0),
        (("doubt", "listed"), "≤", 0.0),
        (("equivalent",), "≥", 85.0),
    ):
        value, n = rate(forms)
        met = value <= bound if op == "≤" else value >= bound
        verdict = "no items" if not n else "met" if met else "NOT met"
        lines.append(f"{'+'.join(forms)} accepted {value:.1f}% of {n} (target {op} {bound:g}%): {verdict}")
    return lines


def load_judge(path: str) -> object:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)()


def llm_model(name: str, overrides: Sequence[str]) -> object:
    """The model of conf/model/<name>.yaml with `overrides`, behind the run's retry policy and cache."""
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=merged([f"model={name}"], overrides))
    return build_model(OmegaConf.to_container(cfg, resolve=True))


def report(title: str, items: Sequence[Item], accepted: Sequence[bool], by_variant: bool) -> None:
    print(f"\n== {title}: {len(items)} items ==")
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(confusion(items, accepted).to_string(index=False))
        if by_variant:
            print(confusion(items, accepted, by="variant").to_string(index=False))
    for line in targets(items, accepted):
        print("  " + line)


# ---- adversarial families (issue 40) --------------------------------------------------------------
# Written here from generation rules of their own; the judge never imports this script. HELD_OUT was fixed
# before any development run: those families are not printed under --hide-held-out.

HELD_OUT = ("other_language", "line_lists", "symbols", "concluding_sentence")
"""Whole families kept out of sight while developing; printed last."""

CYRILLIC = {"a": "а", "e": "е", "o": "о", "c": "с", "p": "р", "i": "і", "x": "х", "y": "у"}
CYRILLIC |= {
    "A": "А",
    "B": "В",
    "C": "С",
    "E": "Е",
    "H": "Н",
    "K": "К",
    "M": "М",
    "O": "О",
    "P": "Р",
    "T": "Т",
}


def _swap_letters(name: str) -> str:
    """Every other mappable letter swapped for its look-alike, at least one (a name left unchanged would be the
    exact answer, not a confusable one)."""
    swapped = "".join(CYRILLIC.get(c, c) if i % 2 else c for i, c in enumerate(name))
    if swapped == name:
        first = next((i for i, c in enumerate(name) if c in CYRILLIC), None)
        if first is not None:
            swapped = name[:first] + CYRILLIC[name[first]] + name[first + 1 :]
    return swapped


def _zero_width(name: str) -> str:
    return "\u200b".join(name[i : i + 3] for i in range(0, len(name), 3))


FAMILIES: dict[str, tuple[Callable[[str, str, str], str], ...]] = {
    "bracketed": (
        lambda n, o, p: f"{n} (ruled out)",
        lambda n, o, p: f"{n} (unlikely)",
        lambda n, o, p: f"{n} [not]",
        lambda n, o, p: f"{n} (excluded on biopsy)",
        lambda n, o, p: f"{n} (considered, rejected)",
        lambda n, o, p: f"{n} (resolved)",
    ),
    "history_mimic": (
        lambda n, o, p: f"History of {n}",
        lambda n, o, p: f"{n} mimic",
        lambda n, o, p: f"{n}-like illness",
        lambda n, o, p: f"Previous {n}",
        lambda n, o, p: f"Pseudo-{n}",
        lambda n, o, p: f"Family history of {n}",
    ),
    "negation_words": (
        lambda n, o, p: f"No {n}",
        lambda n, o, p: f"{n} excluded",
        lambda n, o, p: f"{n} — negative",
        lambda n, o, p: f"Absence of {n}",
        lambda n, o, p: f"{n} isn't present",
        lambda n, o, p: f"Nothing suggests {n}",
    ),
    "other_language": (
        lambda n, o, p: f"sans {n}",
        lambda n, o, p: f"kein {n}",
        lambda n, o, p: f"pas de {n}",
        lambda n, o, p: f"sin {n}",
        lambda n, o, p: f"{n} nicht bestätigt",
        lambda n, o, p: f"{n} escluso",
    ),
    "confusable_letters": (
        lambda n, o, p: _swap_letters(n),
        lambda n, o, p: f"Nоt {n}",
        lambda n, o, p: f"{_swap_letters(n)} ruled out",
    ),
    "zero_width": (
        lambda n, o, p: f"n\u200bot {n}",
        lambda n, o, p: f"{_zero_width(n)} or {o}",
        lambda n, o, p: f"{n}\u2060; {o}",
    ),
    "markup": (
        lambda n, o, p: f"~~{n}~~ {o}",
        lambda n, o, p: f"<del>{n}</del>",
        lambda n, o, p: f"**Not** {n}",
        lambda n, o, p: f"<s>{n}</s>",
        lambda n, o, p: f"_{n}_ (no)",
    ),
    "joined_lists": (
        lambda n, o, p: f"{n} and {o}",
        lambda n, o, p: f"{n} or {o}",
        lambda n, o, p: f"{n}; {o}",
        lambda n, o, p: f"{n} + {o}",
        lambda n, o, p: f"{n} & {o}",
        lambda n, o, p: f"{o} plus {n}",
    ),
    "line_lists": (
        lambda n, o, p: f"{n}\n{o}",
        lambda n, o, p: f"- {n}\n- {o}",
        lambda n, o, p: f"• {n} • {o}",
        lambda n, o, p: f"1) {o} 2) {n}",
        lambda n, o, p: f"{o}\n\n{n}",
    ),
    "concluding_sentence": (
        lambda n, o, p: f"Although {n} was considered, the final answer is {o}",
        lambda n, o, p: f"{n} was suspected but biopsy confirmed {o}",
        lambda n, o, p: f"{o}, not {n}",
        lambda n, o, p: f"Initially thought to be {n}; turned out to be {o}",
    ),
    "shotgun": (
        lambda n, o, p: f"{o}, {p}, {n}",
        lambda n, o, p: f"{n}, {o}, {p}",
        lambda n, o, p: f"{o} {p} {n}",
    ),
    "doubt_words": (
        lambda n, o, p: f"Questionable {n}",
        lambda n, o, p: f"{n}?",
        lambda n, o, p: f"Maybe {n}",
        lambda n, o, p: f"{n}, cannot be confirmed",
        lambda n, o, p: f"Perhaps {n}",
        lambda n, o, p: f"{n} (doubtful)",
    ),
    "extra_words": (
        lambda n, o, p: f"{n} banana",
        lambda n, o, p: f"{n} in remission",
        lambda n, o, p: f"Resolved {n}",
        lambda n, o, p: f"{n} awaiting confirmation",
        lambda n, o, p: f"Iatrogenic-looking {n} hypothesis",
    ),
    "symbols": (
        lambda n, o, p: f"{n} ✗",
        lambda n, o, p: f"≠ {n}",
        lambda n, o, p: f"¬{n}",
        lambda n, o, p: f"{n} ❌",
        lambda n, o, p: f"!{n}",
        lambda n, o, p: f"{n} → {o}",
    ),
}


def adversarial_items(cases: Sequence[CaseText]) -> list[Item]:
    """One item per case and family, the family's variants taken in turn; `o`/`p` are other cases' names."""
    items = []
    for i, case in enumerate(cases):
        other, third = cases[(i + 7) % len(cases)].diagnosis, cases[(i + 13) % len(cases)].diagnosis
        for family, variants in FAMILIES.items():
            k = i % len(variants)
            text = variants[k](case.diagnosis, other, third)
            items.append(Item(case.case, family, f"{family}/{k}", text, False))
    return items


def family_table(items: Sequence[Item], verdicts: Sequence[Verdict], *, hide_held_out: bool) -> pd.DataFrame:
    """Acceptance, undecided and reject rates per adversarial family, held-out families last."""
    rows = []
    families = [f for f in FAMILIES if f not in HELD_OUT] + ([] if hide_held_out else list(HELD_OUT))
    for family in families:
        chosen = [v for item, v in zip(items, verdicts, strict=True) if item.form == family]
        n = len(chosen)
        rows.append(
            {
                "family": family,
                "held_out": family in HELD_OUT,
                "n": n,
                "accepted_%": round(100 * sum(v.decision == "accept" for v in chosen) / n, 1),
                "undecided_%": round(100 * sum(v.decision == "undecided" for v in chosen) / n, 1),
                "rejected_%": round(100 * sum(v.decision == "reject" for v in chosen) / n, 1),
            }
        )
    return pd.DataFrame(rows)


def accepted_rates(items: Sequence[Item], verdicts: Sequence[Verdict]) -> list[str]:
    """Acceptance and undecided rate on the answers a correct judge accepts (exact and equivalent forms)."""
    lines = []
    for forms in (("exact",), ACCEPTED_FORMS):
        chosen = [v for item, v in zip(items, verdicts, strict=True) if item.form in forms]
        n = len(chosen)
        acc = 100 * sum(v.decision == "accept" for v in chosen) / n
        und = 100 * sum(v.decision == "undecided" for v in chosen) / n
        lines.append(f"{'+'.join(forms)}: {n} items, accepted {acc:.1f}%, undecided {und:.1f}%")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", help="case folder (default: bench.data_dir rules: $CLINDIAG_DATA, staged)")
    parser.add_argument("--manifest")
    parser.add_argument("--judge", default="pos_bench.benchmarks.clindiag.judge:RulesJudge")
    parser.add_argument("--limit", type=int, help="only the first N cases (a quick look)")
    parser.add_argument("--by-variant", action="store_true")
    parser.add_argument("--hide-held-out", action="store_true", help="leave the held-out families out")
    parser.add_argument("--llm", help="a conf/model name: also grade with the LLM judge on that model")
    parser.add_argument("--set", action="append", default=[], help="Hydra override for the LLM judge config")
    parser.add_argument("--llm-per-form", type=int, default=20, help="items per form graded by the LLM judge")
    args = parser.parse_args()
    cases, root = load_cases(args.data, args.manifest)
    cases = cases[: args.limit] if args.limit else cases
    by_case = {c.case: c for c in cases}
    keys = {c.case: data.AnswerKey(c.diagnosis, c.differential, "") for c in cases}
    items = build(cases)
    print(f"fixture: {len(items)} items from {len(cases)} cases in {root}")
    grade = grader(load_judge(args.judge), keys)
    verdicts = [grade(i, by_case[i.case]) for i in items]
    report(f"judge=rules ({args.judge})", items, [v.diagnosis_correct for v in verdicts], args.by_variant)
    for line in accepted_rates(items, verdicts):
        print("  " + line)
    adversaries = adversarial_items(cases)
    adv_verdicts = [grade(i, by_case[i.case]) for i in adversaries]
    print(f"\n== adversarial families (issue 40): {len(adversaries)} items, all labelled reject ==")
    with pd.option_context("display.width", 200):
        print(
            family_table(adversaries, adv_verdicts, hide_held_out=args.hide_held_out).to_string(index=False)
        )
    if args.llm:
        sample: list[Item] = []
        for form in FORMS:
            sample.extend([i for i in items if i.form == form][: args.llm_per_form])
        grade_llm = grader(LLMJudge(llm_model(args.llm, args.set)), keys)
        report(
            f"judge=llm ({args.llm})",
            sample,
            [grade_llm(i, by_case[i.case]).diagnosis_correct for i in sample],
            args.by_variant,
        )


if __name__ == "__main__":
    main()
