"""The format check (lib.check_format) is what stands in for the viewers' scheduler importers:
these negative controls show that each scheduler text rule catches the mistake it is for, on a
generated trace that passes it."""
import json
import os
import re
import subprocess
import sys

import lib

TRACEGEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tracegen.py")


def generated(tmp):
    path = os.path.join(tmp, "gen.json")
    subprocess.run([sys.executable, TRACEGEN, "-o", path, "--size", "60k", "--seed", "3"],
                   check=True, capture_output=True)
    return lib.load_trace(path)


def violations(trace, text, lines):
    """check_format on the file with its scheduler text replaced by lines."""
    old = json.dumps(trace["systemTraceEvents"])
    assert old in text
    changed = text.replace(old, json.dumps("\n".join(lines)))
    return lib.check_format(json.loads(changed), changed)


def first(lines, event):
    return next(i for i, l in enumerate(lines) if f": {event}: " in l)


@lib.offline
def test_scheduler_text_rules_catch_mistakes(tmp):
    trace, text = generated(tmp)
    lines = trace["systemTraceEvents"].split("\n")
    assert lib.check_format(trace, text) == []
    assert violations(trace, text, lines) == []
    sw = first(lines, "sched_switch")
    wk = first(lines, "sched_waking")

    def fails(changed, want):
        got = violations(trace, text, changed)
        assert any(want in v for v in got), (want, got[:3])

    # no header: neither importer recognises the text
    fails(lines[1:], "must start with '# tracer: nop'")
    # a line the importers' regular expressions reject (the CPU column without brackets)
    fails(lines[:sw] + [re.sub(r"\[(\d{3})\]", r"\1", lines[sw])] + lines[sw + 1:],
          "neither importer accepts")
    # a switch reported by a task other than the one switched out
    bad = re.sub(r"-(\d+)(\s+\()", lambda m: f"-{int(m.group(1)) + 1}{m.group(2)}", lines[sw], 1)
    fails(lines[:sw] + [bad] + lines[sw + 1:], "not from the task it switches out")
    # a wake-up without its target CPU
    fails(lines[:wk] + [re.sub(r" target_cpu=\d+", "", lines[wk])] + lines[wk + 1:],
          "payload malformed")
    # the tgid column naming another process than the thread's
    bad = re.sub(r"\(\s*(\d+)\)", "(  99999)", lines[sw], 1)
    fails(lines[:sw] + [bad] + lines[sw + 1:], "is not the process of thread")
    # a time past the end of the recording: not on the clock of ts
    bad = re.sub(r" (\d+)\.(\d{9}): ", " 999.000000000: ", lines[sw], 1)
    fails(lines[:sw] + [bad] + lines[sw + 1:], "outside the recording")
    # two switches of one CPU out of order
    cpu = re.search(r"\[(\d{3})\]", lines[sw]).group(1)
    stamp = lambda l: re.search(r" (\d+\.\d{9}): ", l).group(1)
    later = next(i for i in range(sw + 1, len(lines))
                 if f"[{cpu}]" in lines[i] and ": sched_switch: " in lines[i] and
                 stamp(lines[i]) != stamp(lines[sw]))
    swapped = list(lines)
    swapped[sw] = lines[sw].replace(stamp(lines[sw]), stamp(lines[later]))
    swapped[later] = lines[later].replace(stamp(lines[later]), stamp(lines[sw]))
    fails(swapped, "goes back in time on CPU")
