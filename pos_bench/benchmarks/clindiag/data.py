"""Where the ClinDiag cases come from: find the user's copy, unpack an archive once, follow the PoS manifest,
and read a case's record sections and, separately, its answer key (SPEC-BENCH §5.1, §5.2, §5.7).

Three layouts are accepted:
- per-file (the staged tarball, or a `geteff1/ClinDiag` checkout): `<id>/` with `initial_information.json`,
  `medical_history.json`, `physical_examination.json`, `laboratory_test.json`, `radiographic_test.json`,
  `other_test.json` and `diagnosis.json`, anywhere below the root (e.g. `benchmark_dataset/<id>/`);
- the official zip: the same, but one `diagnostic_test.json` holds the three test sections;
- prepared: `cases/<slug>/` (either record layout) beside `answer_key/<slug>.diagnosis.json`, where
  `<slug>` is the case id or `<subset>__<id>`.

`load_case` never opens `diagnosis.json`; only `load_answer` does, and the environment calls it when scoring.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pos_bench.benchmarks import staging

TARBALL = "clindiag_pos604_benchmark_dataset.tar.gz"
OFFICIAL_ZIP = "Clindiag_Benchmark.zip"
MANIFEST_NAMES = ("pos_manifest_604.txt", "manifest.txt")
SUBSETS = ("rare", "challenging")
UPSTREAM_RARE = re.compile(r"^rare\d*$", re.IGNORECASE)
"""Upstream's case folder names: `rare<N>` for the rare-disease cases, a PMID for the challenging ones (§5.1)."""
INITIAL = "initial_information.json"
ANSWER = "diagnosis.json"
MERGED_TESTS = "diagnostic_test.json"

NO_RECORD = "No record of this category exists for this patient."

SECTION_SOURCES: Mapping[str, tuple[tuple[str, str | None], ...]] = {
    "history": (("medical_history.json", None),),
    "physical_exam": (("physical_examination.json", None),),
    "laboratory": (
        (MERGED_TESTS, "laboratory_examinations"),
        ("laboratory_test.json", "laboratory_examinations"),
    ),
    "radiographic": (
        (MERGED_TESTS, "radiographic_examinations"),
        ("radiographic_test.json", "radiographic_examinations"),
    ),
    # The per-file layout names this key `other_tests`, the zip `other_examinations`: mapped explicitly.
    "other": ((MERGED_TESTS, "other_examinations"), ("other_test.json", "other_tests")),
}
"""Record category → (file, key) places to read it from, first found wins; key None = the whole file text."""

HOW_TO_GET = (
    "Get the cases from github.com/geteff1/ClinDiag at commit d9222f32d2afeb71a3c477e5b3de4cf7dbfb06a1 "
    "(folder benchmark_dataset/) or its later Clindiag_Benchmark.zip, and the PoS manifest "
    "(benchmarks/ClinDiag/manifest.txt of github.com/luoyu100/PoS); then set bench.data_dir or CLINDIAG_DATA"
)


@dataclass(frozen=True)
class CaseRef:
    """One manifest entry (`rare/rare0`): the case id and the subset it was drawn for."""

    id: str
    subset: str

    @property
    def entry(self) -> str:
        return f"{self.subset}/{self.id}"


@dataclass(frozen=True)
class CaseRecord:
    """What the agent side of the environment may know about a case: no answer key in here."""

    id: str
    subset: str
    initial_information: str
    sections: Mapping[str, str]
    """Record category (a key of SECTION_SOURCES) → record text, or NO_RECORD."""


@dataclass(frozen=True)
class AnswerKey:
    final_diagnosis: str
    differential_diagnosis: str
    diagnostic_reasoning: str


@dataclass(frozen=True)
class Source:
    """A resolved copy of the cases: where each case's record directory and answer file are."""

    root: Path
    case_dirs: Mapping[str, Path]
    answers: Mapping[str, Path]
    manifest: Path | None
    """A manifest found inside the copy, if any."""

    def case_dir(self, ref: CaseRef) -> Path:
        for key in (ref.id, f"{ref.subset}__{ref.id}"):
            if key in self.case_dirs:
                return self.case_dirs[key]
        raise KeyError(f"case {ref.entry} is not in {self.root}")

    def answer_path(self, ref: CaseRef) -> Path:
        for key in (ref.id, f"{ref.subset}__{ref.id}"):
            if key in self.answers:
                return self.answers[key]
        raise KeyError(f"no answer key for case {ref.entry} in {self.root}")


def cache_root() -> Path:
    return staging.cache_root("clindiag")


def staged_dir() -> Path:
    return staging.staged_dir("clindiag")


def unpack(archive: Path, cache: Path | None = None) -> Path:
    """Extract a `.tar.gz` or `.zip` once into the cache (see `staging.unpack`); return that directory."""
    return staging.unpack(archive, cache or cache_root())


def _archive_in(path: Path) -> Path | None:
    if path.is_file() and (path.name.endswith(".tar.gz") or path.name.endswith(".zip")):
        return path
    for name in (TARBALL, OFFICIAL_ZIP):
        if (path / name).is_file():
            return path / name
    return None


def _index(root: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """Case directories and answer files below `root`, keyed by slug (prepared) or directory name; two case
    folders with the same key are an error naming both."""
    if (root / "cases").is_dir() and (root / "answer_key").is_dir():
        folders = sorted(d for d in (root / "cases").iterdir() if d.is_dir())
        answers = {p.name.removesuffix("." + ANSWER): p for p in (root / "answer_key").glob("*." + ANSWER)}
    else:
        # a folder holding either file is a case, so one that lacks its presentation is named, not dropped
        found = tqdm(
            (p.parent for name in (INITIAL, ANSWER) for p in root.rglob(name)),
            desc=f"ClinDiag: listing cases in {root}",
            unit=" files",
            disable=None,
            leave=False,
        )
        folders = sorted(set(found))
        answers = {d.name: d / ANSWER for d in folders}
    cases: dict[str, Path] = {}
    seen: dict[str, Path] = {}
    for folder in folders:
        case_id = _split_slug(folder.name)[1]
        if case_id in seen:
            raise ValueError(
                f"case id {case_id!r} occurs twice in {root}: {seen[case_id]} and {folder}; keep one of them"
            )
        seen[case_id] = folder
        cases[folder.name] = folder
    return cases, answers


def _split_slug(name: str) -> tuple[str | None, str]:
    """`rare__x` → ("rare", "x"); a plain id has no subset of its own."""
    subset, sep, case_id = name.partition("__")
    return (subset, case_id) if sep and subset in SUBSETS and case_id else (None, name)


def open_source(path: Path, cache: Path | None = None) -> Source | None:
    """The cases `path` stands for (a directory in any layout, a folder holding an archive, or the archive
    itself), unpacking an archive if needed; None when it holds none of these."""
    path = path.expanduser()
    if not path.exists():
        return None
    archive = _archive_in(path)
    root = unpack(archive, cache) if archive is not None else path
    cases, answers = _index(root)
    if not cases:
        return None
    manifest = next(
        (
            d / n
            for d in (path if path.is_dir() else path.parent, root)
            for n in MANIFEST_NAMES
            if (d / n).is_file()
        ),
        None,
    )
    return Source(root=root, case_dirs=cases, answers=answers, manifest=manifest)


def find_source(data_dir: str | Path | None, cache: Path | None = None) -> Source:
    """The case source: `data_dir`, else `$CLINDIAG_DATA`, else the staged copy beside the repository."""
    if data_dir is not None:
        candidates = [Path(data_dir)]
    else:
        env = os.environ.get("CLINDIAG_DATA")
        candidates = ([Path(env)] if env else []) + [staged_dir()]
    for path in candidates:
        source = open_source(path, cache)
        if source is not None:
            return source
    looked = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"ClinDiag cases not found (looked in: {looked}); expected a directory of case folders holding "
        f"{INITIAL}, a prepared cases/ + answer_key/ directory, {TARBALL} or {OFFICIAL_ZIP}. {HOW_TO_GET}"
    )


def read_manifest(path: Path) -> list[CaseRef]:
    """The manifest's cases in file order; each line is `rare/<id>` or `challenging/<id>`."""
    refs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        subset, _, case_id = line.partition("/")
        if subset not in SUBSETS or not case_id:
            raise ValueError(f"{path}:{number}: expected '<rare|challenging>/<case id>', got {line!r}")
        refs.append(CaseRef(id=case_id, subset=subset))
    return refs


@dataclass(frozen=True)
class Selection:
    """The cases a run plays, in order, and how that order was decided."""

    refs: list[CaseRef]
    note: str = ""
    """Set when no manifest was used, to be said once to the user."""


def find_manifest(manifest: str | Path | None, source: Source) -> Path | None:
    """`manifest`, else one inside the user's copy, else None."""
    if manifest is not None:
        path = Path(manifest).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"bench.manifest {path} does not exist")
        return path
    return source.manifest


def _subset_in_tree(source: Source, key: str) -> str:
    slug_subset = _split_slug(key)[0]
    if slug_subset:
        return slug_subset
    parts = source.case_dirs[key].relative_to(source.root).parts[:-1]
    inside = next((p for p in reversed(parts) if p in SUBSETS), None)
    if inside:
        return inside
    return SUBSETS[0] if UPSTREAM_RARE.match(_split_slug(key)[1]) else SUBSETS[1]


def select_refs(source: Source, manifest: str | Path | None) -> Selection:
    """The manifest's cases, or, when the copy has no manifest, every case in sorted id order with its subset
    taken from the tree: a `rare/` or `challenging/` folder, a `<subset>__` slug, else upstream's folder name
    (`rare<N>` is rare, any other id challenging, as in the full upstream tree). Nothing is parsed here."""
    path = find_manifest(manifest, source)
    if path is not None:
        return Selection(read_manifest(path))
    refs = sorted(
        (CaseRef(id=_split_slug(key)[1], subset=_subset_in_tree(source, key)) for key in source.case_dirs),
        key=lambda r: r.id,
    )
    return Selection(
        refs,
        note=(
            f"ClinDiag: no manifest in {source.root}, so all {len(refs)} cases play in sorted id order; set "
            f"bench.manifest (e.g. the PoS manifest {MANIFEST_NAMES[0]}) to play a fixed list."
        ),
    )


class CaseDataError(ValueError):
    """A case file that cannot be read as the layout says; the message names the file and the case."""


def _json(path: Path, ref: CaseRef) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise FileNotFoundError(f"ClinDiag case {ref.entry}: {path} is missing") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CaseDataError(
            f"ClinDiag case {ref.entry}: {path} is not UTF-8 JSON ({type(error).__name__}: {error}); restore "
            "it from the original data, or leave the case out with bench.manifest"
        ) from error


def _text(path: Path, ref: CaseRef) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CaseDataError(f"ClinDiag case {ref.entry}: {path} is not UTF-8 text ({error})") from error


def missing_files(source: Source, refs: Iterable[CaseRef]) -> list[str]:
    """One line per selected case that lacks a required file (its presentation or its answer key)."""
    lines = []
    for ref in refs:
        try:
            case_dir, answer = source.case_dir(ref), source.answer_path(ref)
        except KeyError as error:
            lines.append(str(error.args[0]))
            continue
        lines.extend(f"case {ref.entry}: no {p}" for p in (case_dir / INITIAL, answer) if not p.is_file())
    return lines


def _section(case_dir: Path, category: str, ref: CaseRef) -> str:
    for filename, key in SECTION_SOURCES[category]:
        path = case_dir / filename
        if not path.is_file():
            continue
        if key is None:
            return _text(path, ref)
        payload = _json(path, ref)
        if isinstance(payload, dict) and key in payload:
            return json.dumps(payload[key], ensure_ascii=False, indent=2)
        return NO_RECORD
    return NO_RECORD


def load_case(source: Source, ref: CaseRef) -> CaseRecord:
    """The case's initial presentation and record sections; `diagnosis.json` is never opened here."""
    case_dir = source.case_dir(ref)
    initial = _json(case_dir / INITIAL, ref)
    return CaseRecord(
        id=ref.id,
        subset=ref.subset,
        initial_information=str(
            initial.get("initial_information", "") if isinstance(initial, dict) else initial
        ),
        sections={category: _section(case_dir, category, ref) for category in SECTION_SOURCES},
    )


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return "" if value is None else str(value)


def load_answer(source: Source, ref: CaseRef) -> AnswerKey:
    """The reference diagnosis; called by the environment only when scoring."""
    path = source.answer_path(ref)
    payload = _json(path, ref)
    diagnosis = payload.get("diagnosis", payload) if isinstance(payload, dict) else None
    if not isinstance(diagnosis, dict):
        raise CaseDataError(
            f"ClinDiag case {ref.entry}: {path} should hold an object with final_diagnosis (under 'diagnosis'), "
            f"got {type(diagnosis if isinstance(payload, dict) else payload).__name__}"
        )
    return AnswerKey(
        final_diagnosis=_as_text(diagnosis.get("final_diagnosis")),
        differential_diagnosis=_as_text(diagnosis.get("differential_diagnosis")),
        diagnostic_reasoning=_as_text(diagnosis.get("diagnostic_reasoning")),
    )
