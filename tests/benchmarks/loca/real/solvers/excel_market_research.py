# Sent as python_execute code by test_real.py (run in the agent workspace; not imported by the tests): reads the
# task's category and years, the Methodology weights and the RawData sheet (units in the headers), and writes
# growth_rate.xlsx in the format of Market_Data_Format.xlsx.
import re
from pathlib import Path

import openpyxl

spec = Path("task_specific.md").read_text(encoding="utf-8")
target = re.search(r"\*\*Target Category:\*\*\s*(.+)", spec).group(1).strip()
first, last = map(int, re.search(r"\*\*Time Range:\*\*\s*(\d+)\s*to\s*(\d+)", spec).groups())
book = openpyxl.load_workbook("Market_Data.xlsx", data_only=True)
method = list(book["Methodology"].iter_rows(values_only=True))
raw_names = [c for c in method[0][1:] if c]
weights = next(dict(zip(raw_names, row[1:])) for row in method if row[0] == target)
rows = [r for r in book["RawData"].iter_rows(values_only=True) if any(v is not None for v in r)]
scale = {"mn": 0.001, "bn": 1.0, "tn": 1000.0}
columns = {}
for i, header in enumerate(rows[0][1:], 1):
    name, unit = re.match(r"(.+?)\s*\((\w+) USD\)", header).groups()
    columns[name] = (i, scale[unit])
value = {r[0]: {n: r[i] * s for n, (i, s) in columns.items()} for r in rows[1:]}


def total(v):
    return sum(weights[n] * v[n] for n in raw_names)


out = openpyxl.Workbook()
sheet = out.active
sheet.title = "GrowthRate"
sheet.append(["Year", *[f"{n} %" for n in raw_names], "Growth Rate %"])
for year in range(first, last + 1):
    now, before = value[year], value[year - 1]
    rates = [(now[n] / before[n] - 1) * 100 for n in raw_names]
    sheet.append([year, *rates, (total(now) / total(before) - 1) * 100])
out.save("growth_rate.xlsx")
print("wrote growth_rate.xlsx for", target, first, last)
