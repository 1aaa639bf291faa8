#!/usr/bin/env python3
"""Writes a synthetic trace in tracer's format (userspace/trace/trace_writer.c): a pipeline of threads
(reader, decode-K, op-K, writer) that wait in queue spans (sleeping, sometimes blocked, sometimes
nested), work in decode/operator/io spans (operators nest run_operator > op_X), get preempted,
sleep outside spans, and now and then stall for a long span. Spans are written when they end and
scheduler lines in time order, as the recorder does, so it exercises everything `tracer report`
keeps bounded. Deterministic for a seed.

    python3 tests/integration/tracegen.py -o big.json --size 1G [--seed 1] [--threads 8] [--flows]

--flows adds the recorder's wake-up arrows (flow events from waker to woken thread) and a
queue-depth counter; without it the output is what the golden traces were made from.
"""
import argparse
import heapq
import random
import tempfile

CPUS = 2
HEADER = "# tracer: nop\\n# clock_type=LINUX_CLOCK_MONOTONIC\\n"


def us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def secs(ns):
    return f"{ns // 1000000000}.{ns % 1000000000:09d}"


FLOWS = False  # --flows


class Thread:
    flow_id = 0
    waits = 0

    def __init__(self, pid, tid, name, kind, rng, slow=1.0):
        self.pid, self.tid, self.name, self.kind, self.rng = pid, tid, name, kind, rng
        self.slow = slow  # its work takes this many times longer
        self.cpu = tid % CPUS

    def switch(self, t, state, out):
        """This thread leaves its CPU (state S, D, R, R+) to the idle task."""
        ncomm, ntid = "swapper/%d" % self.cpu, 0
        out.append((t, f"{self.name:>16}-{self.tid:<7} ({self.pid:>7}) [{self.cpu:03d}] d..2 "
                       f"{secs(t)}: sched_switch: prev_comm={self.name} prev_pid={self.tid} "
                       f"prev_prio=120 prev_state={state} ==> next_comm={ncomm} "
                       f"next_pid={ntid} next_prio=120"))

    def switch_in(self, t, out):
        out.append((t, f"{'swapper/%d' % self.cpu:>16}-{0:<7} (  -----) [{self.cpu:03d}] d..2 "
                       f"{secs(t)}: sched_switch: prev_comm=swapper/{self.cpu} prev_pid=0 "
                       f"prev_prio=120 prev_state=R ==> next_comm={self.name} "
                       f"next_pid={self.tid} next_prio=120"))

    def woken(self, t, out, waker):
        out.append((t, f"{waker.name:>16}-{waker.tid:<7} ({waker.pid:>7}) [{waker.cpu:03d}] d..2 "
                       f"{secs(t)}: sched_waking: comm={self.name} pid={self.tid} prio=120 "
                       f"target_cpu={self.cpu:03d}"))

    def span(self, name, cat, s, e, out, args=""):
        out.append((e, f'{{"ph":"X","name":"{name}","cat":"{cat}","ts":{us(s)},'
                       f'"dur":{us(e - s)},"pid":{self.pid},"tid":{self.tid}{args}}}'))

    def wait(self, name, t, d, spans, sched, others, blocked=False):
        """Sleeps d ns inside whatever span the caller opens; returns the end."""
        self.switch(t + 300, "D" if blocked else "S", sched)
        waker = self.rng.choice(others)
        self.woken(t + d - 2000, sched, waker)
        self.switch_in(t + d - 1000, sched)
        if FLOWS:  # the recorder's wake-up arrow and a queue-depth counter (no random draws)
            Thread.flow_id += 1
            Thread.waits += 1
            fid, wake, back = Thread.flow_id, t + d - 2000, t + d - 1000
            spans.append((back, f'{{"ph":"s","name":"wakeup","cat":"wakeup","id":{fid},'
                                f'"ts":{us(wake)},"pid":{waker.pid},"tid":{waker.tid}}}'))
            spans.append((back, f'{{"ph":"f","bp":"e","name":"wakeup","cat":"wakeup",'
                                f'"id":{fid},"ts":{us(back)},"pid":{self.pid},'
                                f'"tid":{self.tid}}}'))
            spans.append((back, f'{{"ph":"C","name":"Input Queue","ts":{us(back)},'
                                f'"pid":{self.pid},"tid":{self.pid},'
                                f'"args":{{"depth":{Thread.waits % 7}}}}}'))
        return t + d

    def work(self, t, d, sched, others):
        """Runs d ns, preempted now and then."""
        end = t + d
        while self.rng.random() < 0.3 and t + 20000 < end:
            at = self.rng.randrange(t + 1000, end - 10000)
            back = at + self.rng.randrange(2000, 8000)
            self.switch(at, "R+", sched)
            self.switch_in(back, sched)
            t = back
            end += back - at
        return end

    def cycle(self, t, others):
        """One loop of the thread; returns (its end, span lines, sched lines)."""
        rng, spans, sched = self.rng, [], []
        w = int(rng.expovariate(1 / 400000)) + 5000
        if rng.random() < 0.1:  # a wait nested in another queue span
            inner_s = t + 700
            inner_e = self.wait("cond_wait", inner_s, w, spans, sched, others)
            self.span("cond_wait", "queue", inner_s, inner_e, spans)
            end = inner_e + 500
            self.span("Wait on Input Queue", "queue", t, end, spans)
        else:
            end = self.wait("pop", t, w, spans, sched, others, blocked=rng.random() < 0.1)
            self.span("Wait on Input Queue", "queue", t, end, spans)
        t = end + 300
        if rng.random() < 0.0005:  # a stall: a long span
            d = rng.randrange(20, 80) * 1000000
        else:
            d = int(rng.expovariate(1 / (3000000 if self.kind == "decode" else 800000))) + 2000
        d = int(d * self.slow)
        if self.kind == "op":
            ops = ("resize", "normalize", "infer")
            for op in ops:
                s = t
                e = self.work(s + 200, d // 3, sched, others)
                self.span("op_" + op, "operator", s + 200, e, spans)
                self.span("run_operator", "operator", s, e + 100, spans, f',"args":{{"op":"{op}"}}')
                t = e + 150
        else:
            cat = {"decode": "decode", "reader": "io", "writer": "io"}[self.kind]
            name = {"decode": "decode_frame", "reader": "read_packet",
                    "writer": "write_frame"}[self.kind]
            e = self.work(t, d, sched, others)
            self.span(name, cat, t, e, spans)
            t = e
        if rng.random() < 0.2:  # asleep outside any span
            t = self.wait("sleep", t + 100, int(rng.expovariate(1 / 200000)) + 5000, spans, sched,
                          others)
        return t + 100, spans, sched


def generate(out_path, size, seed=1, threads=8, slow=None, flows=False):
    """Writes about size bytes; returns (spans, scheduler lines) written (spans: all events).
    slow: {kind: factor}, the work of the threads of a kind (reader, decode, op, writer) that
    many times longer; flows: wake-up arrows and a queue-depth counter too."""
    global FLOWS
    FLOWS = flows
    Thread.flow_id = Thread.waits = 0
    rng = random.Random(seed)
    pid = 4000
    names = ["reader"] + [f"decode-{i}" for i in range(max(1, (threads - 2) // 2))]
    names += [f"op-{i}" for i in range(max(1, threads - 2 - len(names) + 1))] + ["writer"]
    ts = [Thread(pid, pid + 1 + i, n, n.split("-")[0], random.Random(rng.random()),
                 (slow or {}).get(n.split("-")[0], 1.0)) for i, n in enumerate(names)]
    heap = [(1000000 + i * 1000, i, t) for i, t in enumerate(ts)]
    pending = []  # (emit time, seq, kind, text)
    seq = 0
    written = 0
    counts = [0, 0]
    end_time = 0
    with open(out_path, "w") as out, tempfile.TemporaryFile("w+") as sched_tmp:
        head = ['{"traceEvents":[\n', f'{{"ph":"M","name":"process_name","pid":{pid},"tid":{pid},'
                f'"args":{{"name":"pipeline"}}}},\n']
        for t in ts:
            head.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{t.tid},'
                        f'"args":{{"name":"{t.name}"}}}},\n')
        out.write("".join(head))
        ev_buf, sched_buf = [], []
        while written < size:
            start, i, t = heapq.heappop(heap)
            others = [o for o in ts if o is not t]
            nxt, spans, sched = t.cycle(start, others)
            heapq.heappush(heap, (nxt, i, t))
            for when, text in spans:
                heapq.heappush(pending, (when, seq, 0, text))
                seq += 1
            for when, text in sched:
                heapq.heappush(pending, (when, seq, 1, text))
                seq += 1
            # everything before the earliest next cycle start is final
            horizon = heap[0][0]
            while pending and pending[0][0] <= horizon:
                when, _, kind, text = heapq.heappop(pending)
                end_time = max(end_time, when)
                counts[kind] += 1
                if kind == 0:
                    ev_buf.append(text + ",\n")
                else:
                    sched_buf.append(text + "\\n")
                written += len(text) + 2
            if len(ev_buf) > 4096:
                out.write("".join(ev_buf))
                ev_buf = []
            if len(sched_buf) > 4096:
                sched_tmp.write("".join(sched_buf))
                sched_buf = []
        while pending:
            when, _, kind, text = heapq.heappop(pending)
            end_time = max(end_time, when)
            counts[kind] += 1
            (ev_buf if kind == 0 else sched_buf).append(text + (",\n" if kind == 0 else "\\n"))
        out.write("".join(ev_buf))
        sched_tmp.write("".join(sched_buf))
        end_time += 1000
        out.write(f'{{"ph":"i","s":"g","name":"recording stopped","pid":0,"tid":0,'
                  f'"ts":{us(end_time)},"args":{{"reason":"generated"}}}}\n],\n'
                  f'"systemTraceEvents":"{HEADER}')
        sched_tmp.seek(0)
        while True:
            chunk = sched_tmp.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
        out.write(f'",\n"metadata":{{"tracer_version":"tracegen","clock":"CLOCK_MONOTONIC",'
                  f'"t0_monotonic_ns":1000000000000,"t0_realtime_ns":1700000000000000000,'
                  f'"duration_ns":{end_time},"stop_reason":"generated"}}}}\n')
    return counts[0], counts[1]


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--size", default="10M", help="approximate size: 200M, 1G")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--slow", action="append", default=[], metavar="KIND=FACTOR",
                    help="make the work of a kind of thread (decode, op, ...) FACTOR times longer")
    ap.add_argument("--flows", action="store_true", help="wake-up arrows and a counter too")
    a = ap.parse_args()
    generate(a.output, parse_size(a.size), a.seed, a.threads,
             {k: float(v) for k, v in (x.split("=") for x in a.slow)}, a.flows)
