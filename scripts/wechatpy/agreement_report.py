# SPDX-License-Identifier: Apache-2.0
"""The agreement table: one row per step, wechatpy's view next to the simulator's."""
import textwrap
from dataclasses import dataclass

AGREE = "yes"
DISAGREE = "NO"
EXPECTED = "expected"


@dataclass
class Row:
    step: str
    wechatpy: str
    simulator: str
    agree: str
    note: str = ""


class Report:
    def __init__(self):
        self.rows = []

    def add(self, step, wechatpy, simulator, agree, note=""):
        """agree: a bool (yes / NO), or EXPECTED for a documented disagreement (note says why)."""
        verdict = agree if isinstance(agree, str) else (AGREE if agree else DISAGREE)
        if verdict == EXPECTED and not note:
            raise ValueError("an expected disagreement needs its reason")
        self.rows.append(Row(step, str(wechatpy), str(simulator), verdict, note))

    @property
    def unexpected(self):
        return [row for row in self.rows if row.agree == DISAGREE]

    def render(self, width=54):
        header = ("step", "wechatpy's view", "simulator's view", "agree")
        widths = [28, width, width, 8]
        lines = [_line(header, widths), "-+-".join("-" * w for w in widths)]
        for row in self.rows:
            lines.append(_line((row.step, row.wechatpy, row.simulator, row.agree), widths))
        notes = [row for row in self.rows if row.note]
        if notes:
            lines.append("")
            lines.append("Notes:")
            for row in notes:
                label = f"[{row.agree}] {row.step}: "
                lines.extend(textwrap.wrap(row.note, width=110, initial_indent="  " + label,
                                           subsequent_indent="  " + " " * len(label)))
        counts = {verdict: sum(1 for row in self.rows if row.agree == verdict) for verdict in (AGREE, EXPECTED, DISAGREE)}
        lines.append("")
        lines.append(f"{len(self.rows)} steps: {counts[AGREE]} agree, {counts[EXPECTED]} expected (documented) "
                     f"disagreements, {counts[DISAGREE]} unexpected disagreements")
        return "\n".join(lines)


def _line(cells, widths):
    wrapped = [textwrap.wrap(cell, width) or [""] for cell, width in zip(cells, widths)]
    height = max(len(column) for column in wrapped)
    out = []
    for index in range(height):
        out.append(" | ".join((column[index] if index < len(column) else "").ljust(width)
                              for column, width in zip(wrapped, widths)).rstrip())
    return "\n".join(out)
