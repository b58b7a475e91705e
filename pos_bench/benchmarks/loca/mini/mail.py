"""mini-LOCA family `mail_calendar`: turn every meeting request addressed to the user into a calendar event
and send each requester a confirmation (SPEC-BENCH §3.7 a).

Scale-independent core: 3–5 real requests, a request addressed to a colleague (the user only in cc), a
reply to an old request, two existing events and one sent message. Distractors (newsletters, invoices,
status mails, unrelated calendar events) fill the services up to the nominal length.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pos_bench.benchmarks.loca.mini.generation import (
    FILLER,
    compact,
    fill,
    measure,
    nominal_tokens,
    person,
    uid,
)
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

NAME = "mail_calendar"
ME = "alex.morgan@northwind.example"
TOPICS = (
    "Q3 budget review",
    "Onboarding plan for new analysts",
    "Vendor contract renewal",
    "Website redesign kickoff",
    "Security audit findings",
    "Hiring pipeline sync",
    "Data retention policy",
    "Customer churn deep dive",
    "Office move logistics",
    "API deprecation timeline",
    "Support backlog triage",
    "Partner workshop agenda",
)
REQUEST_BODIES = (
    "Hi Alex,\n\nCould we meet to go through this?\nProposed time: {start}\nDuration: {minutes} minutes\n\nBest,\n{name}",
    "Hello Alex,\n\nI would like to book some time with you on this topic.\nSlot: {start} ({minutes} minutes)\n\nThanks,\n{name}",
    "Alex,\n\nwould {start} work for you? We need about {minutes} minutes.\n\nRegards,\n{name}",
)
NOISE_SUBJECTS = (
    "Weekly newsletter #{n}",
    "Invoice {n} from Contoso Supplies",
    "Status update: project {n}",
    "Reminder: timesheet for week {n}",
    "Your order {n} has shipped",
    "Minutes of the all-hands #{n}",
)


def _slot(rng: random.Random) -> str:
    return f"2026-03-{rng.randint(2, 27):02d}T{rng.randint(9, 16):02d}:{rng.choice(('00', '30'))}"


def _sent_date(rng: random.Random) -> str:
    return f"2026-02-{rng.randint(2, 27):02d}T{rng.randint(7, 19):02d}:{rng.randint(0, 59):02d}"


def _mail(mid: str, sender: str, to: list[str], subject: str, body: str, date: str, cc=()) -> dict[str, Any]:
    return {
        "id": mid,
        "from": sender,
        "to": to,
        "cc": list(cc),
        "date": date,
        "subject": subject,
        "body": body,
    }


def _noise(seed: int, i: int) -> tuple[str, dict[str, Any]]:
    rng = random.Random(f"{NAME}/{seed}/noise/{i}")
    name, address = person(rng)
    if rng.random() < 0.2:
        event = {
            "id": uid("evt", seed, "noise", i),
            "title": f"{rng.choice(('1:1 with', 'Lunch with', 'Interview:', 'Focus time for'))} {name}",
            "start": _slot(rng).replace("2026-03", "2026-" + rng.choice(("02", "03", "04"))),
            "duration_minutes": rng.choice((15, 30, 60)),
            "attendees": [address],
        }
        return "event", event
    subject = rng.choice(NOISE_SUBJECTS).format(n=rng.randint(100, 9999))
    body = "Hi Alex,\n\n" + " ".join(rng.sample(FILLER, rng.randint(2, 4))) + f"\n\n{name}"
    return "mail", _mail(uid("msg", seed, "noise", i), address, [ME], subject, body, _sent_date(rng))


INSTRUCTION = (
    f"I am Alex Morgan ({ME}). Please handle the meeting requests in my inbox. A meeting request is a message "
    "whose subject starts with 'Meeting request: ' and that lists me in its 'to' field; ignore replies "
    "('Re: ...') and requests sent to someone else, even when I am in cc. For each request: (1) create a "
    "calendar event whose title is exactly the topic (the subject text after 'Meeting request: '), starting "
    "at the proposed date and time, lasting the proposed number of minutes, with the sender's address as the "
    "only attendee; (2) send the sender an email with the subject 'Confirmed: <topic>' (any body). Do not "
    "create, change or delete any other event and do not send any other email. Call claim_done when finished."
)


def _people(rng: random.Random, n: int) -> list[tuple[str, str]]:
    people: list[tuple[str, str]] = []
    while len(people) < n:
        candidate = person(rng)
        if candidate[1] not in {p[1] for p in people}:
            people.append(candidate)
    return people


def _requests(rng: random.Random, seed: int, people, topics) -> tuple[list, list, list]:
    """The real requests: inbox messages, the events they call for and the confirmations owed."""
    inbox, expected, confirmations = [], [], []
    for j in range(rng.randint(3, 5)):
        (name, address), topic = people[j], topics[j]
        start, minutes = _slot(rng), rng.choice((30, 45, 60, 90))
        body = rng.choice(REQUEST_BODIES).format(start=start.replace("T", " "), minutes=minutes, name=name)
        subject = f"Meeting request: {topic}"
        inbox.append(_mail(uid("msg", seed, "core", j), address, [ME], subject, body, _sent_date(rng)))
        expected.append({"title": topic, "start": start, "duration_minutes": minutes, "attendees": [address]})
        confirmations.append({"to": address, "subject": f"Confirmed: {topic}"})
    return inbox, expected, confirmations


def _decoys(rng: random.Random, seed: int, people, topics) -> tuple[list, list, list]:
    """Near misses that must be left alone: a request to a colleague (the user in cc), a reply to an old
    request; plus two existing events and one sent message."""
    (cname, caddr), (rname, raddr), (oname, oaddr) = people[5:8]
    body = REQUEST_BODIES[0].format(start=_slot(rng).replace("T", " "), minutes=30, name=cname)
    subject = f"Meeting request: {topics[5]}"
    inbox = [
        _mail(
            uid("msg", seed, "core", "cc"),
            caddr,
            [oaddr],
            subject,
            body.replace("Alex", oname.split()[0]),
            _sent_date(rng),
            cc=[ME],
        ),
        _mail(
            uid("msg", seed, "core", "re"),
            raddr,
            [ME],
            f"Re: Meeting request: {topics[6]}",
            f"Hi Alex,\n\nthanks, that meeting is already in my calendar.\n\n{rname}",
            _sent_date(rng),
        ),
    ]
    events = [
        {
            "id": uid("evt", seed, "core", j),
            "title": f"Team standup {j + 1}",
            "start": _slot(rng),
            "duration_minutes": 15,
            "attendees": [people[5 + j][1]],
        }
        for j in range(2)
    ]
    sent = [
        _mail(
            uid("msg", seed, "core", "sent"),
            ME,
            [oaddr],
            "Slides for Monday",
            "Attached as promised.",
            _sent_date(rng),
        )
    ]
    return inbox, events, sent


def generate(seed: int, scale: str) -> Case:
    rng = random.Random(f"{NAME}/{seed}")
    topics, people = rng.sample(TOPICS, 7), _people(rng, 8)
    inbox, expected, confirmations = _requests(rng, seed, people, topics)
    decoy_mail, events, sent = _decoys(rng, seed, people, topics)
    inbox += decoy_mail
    db = {"email": {"owner": ME, "inbox": inbox, "sent": sent}, "calendar": {"owner": ME, "events": events}}
    for kind, record in fill(nominal_tokens(scale), measure(db), lambda i: _noise(seed, i)):
        (inbox if kind == "mail" else events).append(record)
    inbox.sort(key=lambda m: (m["date"], m["id"]), reverse=True)
    events.sort(key=lambda e: (e["start"], e["id"]))
    truth = {"events": expected, "confirmations": confirmations}
    return Case(NAME, seed, scale, INSTRUCTION, db, {}, truth, measure(db))


def _normal_start(value: str) -> str:
    try:
        return datetime.fromisoformat(value.strip().replace(" ", "T")).strftime("%Y-%m-%dT%H:%M")
    except ValueError:
        raise ToolError(f"start must look like 2026-03-12T14:30; got {value!r}") from None


def _folder(args: Mapping[str, Any]) -> str:
    folder = args.get("folder") or "inbox"
    if folder not in ("inbox", "sent"):
        raise ToolError(f"folder must be 'inbox' or 'sent'; got {folder!r}")
    return folder


def _list_messages(ws: Workspace, args: Mapping[str, Any]) -> str:
    return page(ws.load("email")[_folder(args)], args.get("offset", 0), args.get("limit", 50))


def _search_messages(ws: Workspace, args: Mapping[str, Any]) -> str:
    query = args["query"].strip().casefold()
    if not query:
        raise ToolError("query must be a non-empty string")
    hits = [
        m
        for m in ws.load("email")[_folder(args)]
        if query in f"{m['from']}\n{m['subject']}\n{m['body']}".casefold()
    ]
    return page(hits, args.get("offset", 0), args.get("limit", 50))


def _read_message(ws: Workspace, args: Mapping[str, Any]) -> str:
    data = ws.load("email")
    for message in data["inbox"] + data["sent"]:
        if message["id"] == args["message_id"]:
            return compact(message)
    raise ToolError(f"no message with id {args['message_id']!r}")


def _send_message(ws: Workspace, args: Mapping[str, Any]) -> str:
    data = ws.load("email")
    mid = f"msg-sent-{len(data['sent']) + 1:03d}"
    data["sent"].append(
        _mail(mid, ME, [args["to"].strip()], args["subject"], args["body"], "2026-03-01T09:00")
    )
    ws.save("email", data)
    return f"Sent message {mid} to {args['to'].strip()}."


def _list_events(ws: Workspace, args: Mapping[str, Any]) -> str:
    return page(ws.load("calendar")["events"], args.get("offset", 0), args.get("limit", 50))


def _create_event(ws: Workspace, args: Mapping[str, Any]) -> str:
    if args["duration_minutes"] < 1 or not all(isinstance(a, str) for a in args["attendees"]):
        raise ToolError("duration_minutes must be ≥ 1 and attendees a list of email addresses")
    data = ws.load("calendar")
    eid = f"evt-new-{len(data['events']) + 1:04d}"
    event = {
        "id": eid,
        "title": args["title"],
        "start": _normal_start(args["start"]),
        "duration_minutes": args["duration_minutes"],
        "attendees": list(args["attendees"]),
    }
    data["events"].append(event)
    ws.save("calendar", data)
    return f"Created event {eid}: {compact(event)}"


def _delete_event(ws: Workspace, args: Mapping[str, Any]) -> str:
    data = ws.load("calendar")
    kept = [e for e in data["events"] if e["id"] != args["event_id"]]
    if len(kept) == len(data["events"]):
        raise ToolError(f"no event with id {args['event_id']!r}")
    ws.save("calendar", {**data, "events": kept})
    return f"Deleted event {args['event_id']}."


def _event_key(event: Mapping[str, Any]) -> tuple:
    return (
        str(event["title"]).strip().casefold(),
        event["start"],
        event["duration_minutes"],
        tuple(sorted(a.strip().casefold() for a in event["attendees"])),
    )


def check(ws: Workspace) -> Verdict:
    truth, start_db = ws.case.truth, ws.case.db
    events = ws.load("calendar")["events"]
    original = {e["id"]: e for e in start_db["calendar"]["events"]}
    now = {e["id"]: e for e in events}
    if any(now.get(i) != e for i, e in original.items()):
        return Verdict(False, "an event that existed before was changed or deleted")
    created = sorted(_event_key(e) for e in events if e["id"] not in original)
    wanted = sorted(_event_key(e) for e in truth["events"])
    if created != wanted:
        return Verdict(False, f"created events {created} differ from the {len(wanted)} expected")
    sent = ws.load("email")["sent"][len(start_db["email"]["sent"]) :]
    got = sorted((m["to"][0].casefold(), m["subject"].strip().casefold()) for m in sent)
    expected = sorted((c["to"], c["subject"].casefold()) for c in truth["confirmations"])
    if got != expected:
        return Verdict(False, f"sent messages {got} differ from the {len(expected)} expected confirmations")
    return Verdict(True, f"{len(wanted)} events created and {len(expected)} confirmations sent as requested")


_FOLDER = {"type": "string", "enum": ["inbox", "sent"], "description": "Mailbox folder (default inbox)."}
TOOLS = (
    Tool(
        "email_list_messages",
        "[email] List the messages of a folder, newest first, whole messages, one page at a time.",
        {"folder": _FOLDER, **PAGING},
        (),
        _list_messages,
    ),
    Tool(
        "email_search_messages",
        "[email] Messages whose sender, subject or body contains the text (case-insensitive).",
        {"query": {"type": "string", "description": "Text to look for."}, "folder": _FOLDER, **PAGING},
        ("query",),
        _search_messages,
    ),
    Tool(
        "email_read_message",
        "[email] Read one message by id.",
        {"message_id": {"type": "string", "description": "The message id."}},
        ("message_id",),
        _read_message,
    ),
    Tool(
        "email_send_message",
        "[email] Send an email from the user's account.",
        {
            "to": {"type": "string", "description": "Recipient address."},
            "subject": {"type": "string", "description": "Subject line."},
            "body": {"type": "string", "description": "Message text."},
        },
        ("to", "subject", "body"),
        _send_message,
    ),
    Tool(
        "calendar_list_events",
        "[calendar] List the user's calendar events by start time, one page at a time.",
        dict(PAGING),
        (),
        _list_events,
    ),
    Tool(
        "calendar_create_event",
        "[calendar] Create a calendar event.",
        {
            "title": {"type": "string", "description": "Event title."},
            "start": {"type": "string", "description": "Start, as YYYY-MM-DDTHH:MM."},
            "duration_minutes": {"type": "integer", "description": "Length in minutes."},
            "attendees": {"type": "array", "items": {"type": "string"}, "description": "Attendee addresses."},
        },
        ("title", "start", "duration_minutes", "attendees"),
        _create_event,
    ),
    Tool(
        "calendar_delete_event",
        "[calendar] Delete an event by id.",
        {"event_id": {"type": "string", "description": "The event id."}},
        ("event_id",),
        _delete_event,
    ),
)

FAMILY = Family(NAME, generate, (*TOOLS, *FS_TOOLS, CLAIM_DONE), check)
