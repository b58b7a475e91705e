"""mini-LOCA family `course_unfinished`: list, per active student of one course, the published assignments
they have not finished, into a JSON file (SPEC-BENCH §3.7 c).

Finished means a submission with status `submitted` or `graded`; a `draft` does not count. Scale-independent
core: the target course with 5 published assignments and one unpublished, 4–7 active students with gaps,
one dropped student with gaps, and two other courses. Distractors are further active students of the target
course who finished everything (with their submissions), so the answer never depends on scale.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from pos_bench.benchmarks.loca.mini.generation import compact, fill, measure, nominal_tokens, person, uid
from pos_bench.benchmarks.loca.mini.tools import PAGING, Tool, ToolError
from pos_bench.benchmarks.loca.mini.workspace import (
    CLAIM_DONE,
    FS_TOOLS,
    Case,
    Family,
    Verdict,
    Workspace,
    page,
)

NAME = "course_unfinished"
OUTPUT = "outputs/unfinished_assignments.json"
COURSES = (
    ("Data Structures", "CS"),
    ("Organic Chemistry", "CHEM"),
    ("Medieval History", "HIST"),
    ("Linear Algebra", "MATH"),
    ("Microeconomics", "ECON"),
    ("Cell Biology", "BIO"),
)
WORK = ("Problem set", "Lab report", "Essay", "Quiz", "Project milestone", "Reading response")


def _student(rng: random.Random, sid: str, course: str, status: str) -> dict[str, Any]:
    name, email = person(rng)
    return {
        "student_id": sid,
        "name": name,
        "email": email.replace("northwind", "campus"),
        "course_id": course,
        "enrollment": status,
    }


def _submission(rng: random.Random, sid: str, aid: str, status: str, key: tuple) -> dict[str, Any]:
    day = rng.randint(1, 28)
    return {
        "submission_id": uid("sub", *key),
        "student_id": sid,
        "assignment_id": aid,
        "status": status,
        "submitted_at": f"2026-04-{day:02d}T{rng.randint(8, 23):02d}:{rng.randint(0, 59):02d}",
        "score": rng.randint(50, 100) if status == "graded" else None,
    }


def _noise(seed: int, course: str, published: list[str], i: int) -> tuple[str, list[dict[str, Any]]]:
    rng = random.Random(f"{NAME}/{seed}/noise/{i}")
    sid = uid("stu", seed, "noise", i)
    records = [_student(rng, sid, course, "active")]
    records += [
        _submission(rng, sid, aid, rng.choice(("submitted", "graded")), (seed, "noise", i, aid))
        for aid in published
    ]
    return "student", records


def _roster(rng: random.Random, seed: int, course: str, published: list[str]) -> tuple[list, list, dict]:
    """The students who decide the answer: one dropped and 4–7 active, most with gaps (some drafts), and
    the expected listing."""
    students, submissions, expected = [], [], {}
    for j in range(rng.randint(4, 7) + 1):
        sid = uid("stu", seed, "core", j)
        status = "dropped" if j == 0 else "active"
        students.append(_student(rng, sid, course, status))
        missing = set(rng.sample(published, rng.randint(0 if j % 3 == 2 else 1, 3)))
        for aid in published:
            if aid not in missing:
                submissions.append(
                    _submission(rng, sid, aid, rng.choice(("submitted", "graded")), (seed, j, aid))
                )
            elif rng.random() < 0.4:
                submissions.append(_submission(rng, sid, aid, "draft", (seed, j, aid)))
        if status == "active" and missing:
            expected[sid] = sorted(missing)
    return students, submissions, expected


def generate(seed: int, scale: str) -> Case:
    rng = random.Random(f"{NAME}/{seed}")
    (title, dept), *other_courses = rng.sample(COURSES, 3)
    course = f"{dept}-{rng.randint(100, 399)}"
    courses = [{"course_id": course, "title": title, "term": "Spring 2026"}]
    courses += [
        {"course_id": f"{d}-{rng.randint(100, 399)}", "title": t, "term": "Spring 2026"}
        for t, d in other_courses
    ]
    assignments = [
        {
            "assignment_id": uid("asg", seed, j),
            "course_id": course,
            "title": f"{rng.choice(WORK)} {j + 1}",
            "due": f"2026-04-{3 + 5 * j:02d}",
            "published": j < 5,
        }
        for j in range(6)
    ]
    published = [a["assignment_id"] for a in assignments if a["published"]]
    students, submissions, expected = _roster(rng, seed, course, published)
    db = {
        "canvas": {
            "courses": courses,
            "assignments": assignments,
            "students": students,
            "submissions": submissions,
        }
    }
    for _, records in fill(nominal_tokens(scale), measure(db), lambda i: _noise(seed, course, published, i)):
        students.append(records[0])
        submissions.extend(records[1:])
    students.sort(key=lambda s: s["student_id"])
    submissions.sort(key=lambda s: s["submission_id"])
    instruction = (
        f"I teach {title} ({course}) this term. For every student whose enrollment in {course} is active, find the "
        "published assignments of the course that the student has not finished. An assignment counts as finished "
        "only when the student has a submission for it with status 'submitted' or 'graded' (a 'draft' is not "
        "finished); unpublished assignments never count. Write the result to "
        f"{OUTPUT} in the workspace as one JSON object mapping each such student_id to the list of their "
        "unfinished assignment_ids (any order); leave out students who finished everything and students who "
        "dropped the course. Call claim_done when finished."
    )
    return Case(NAME, seed, scale, instruction, db, {}, {"unfinished": expected}, measure(db))


def _course_items(ws: Workspace, table: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    data = ws.load("canvas")
    if args["course_id"] not in {c["course_id"] for c in data["courses"]}:
        raise ToolError(f"no course {args['course_id']!r}; canvas_list_courses shows the course ids")
    if table == "submissions":
        enrolled = {s["student_id"] for s in data["students"] if s["course_id"] == args["course_id"]}
        return [s for s in data["submissions"] if s["student_id"] in enrolled]
    return [row for row in data[table] if row["course_id"] == args["course_id"]]


def _list_courses(ws: Workspace, args: Mapping[str, Any]) -> str:
    return compact({"courses": ws.load("canvas")["courses"]})


def _list_students(ws: Workspace, args: Mapping[str, Any]) -> str:
    return page(_course_items(ws, "students", args), args.get("offset", 0), args.get("limit", 50))


def _list_assignments(ws: Workspace, args: Mapping[str, Any]) -> str:
    return compact({"assignments": _course_items(ws, "assignments", args)})


def _list_submissions(ws: Workspace, args: Mapping[str, Any]) -> str:
    return page(_course_items(ws, "submissions", args), args.get("offset", 0), args.get("limit", 50))


def check(ws: Workspace) -> Verdict:
    path = ws.resolve(OUTPUT)
    if not path.is_file():
        return Verdict(False, f"{OUTPUT} was not written")
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        return Verdict(False, f"{OUTPUT} is not valid JSON ({error})")
    if not isinstance(got, dict) or not all(isinstance(v, list) for v in got.values()):
        return Verdict(False, "the output must be a JSON object of student_id → list of assignment_ids")
    normal = {str(k).strip(): sorted(str(a).strip() for a in v) for k, v in got.items()}
    wanted = ws.case.truth["unfinished"]
    if normal != wanted:
        return Verdict(
            False, f"{len(normal)} students listed; the listing differs from the {len(wanted)} expected"
        )
    return Verdict(True, f"unfinished assignments of all {len(wanted)} students listed correctly")


_COURSE = {"course_id": {"type": "string", "description": "The course id, e.g. CS-204."}}
TOOLS = (
    Tool("canvas_list_courses", "[canvas] The courses of the current term.", {}, (), _list_courses),
    Tool(
        "canvas_list_students",
        "[canvas] Students enrolled in a course (any enrollment status), one page at a time.",
        {**_COURSE, **PAGING},
        ("course_id",),
        _list_students,
    ),
    Tool(
        "canvas_list_assignments",
        "[canvas] All assignments of a course, published or not.",
        dict(_COURSE),
        ("course_id",),
        _list_assignments,
    ),
    Tool(
        "canvas_list_submissions",
        "[canvas] Submissions of the course's students, one page at a time.",
        {**_COURSE, **PAGING},
        ("course_id",),
        _list_submissions,
    ),
)

FAMILY = Family(NAME, generate, (*TOOLS, *FS_TOOLS, CLAIM_DONE), check)
