"""tracer push and tracer fleet against Debian's ClickHouse server (18.16), started here on free
loopback ports in the test's temporary directory and stopped after: the spans in ClickHouse are
exactly the local file's (count and sum of durations per name), a resent batch counts once, a
cut file loads, fleet names the host whose verdict differs, two servers as two shards behind a
Distributed table, and every bad --to fails with one line."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections import defaultdict

import lib

SERVER = "/usr/sbin/clickhouse-server"


def golden(name):
    return os.path.join(lib.ROOT, "tests", "golden", name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One clickhouse-server with the minimal config doc/clickhouse.md gives, on loopback."""

    def __init__(self, tmp, name, cluster=None):
        if not os.access(SERVER, os.X_OK):
            raise lib.Skip("clickhouse-server is not installed (scripts/install-deps.sh "
                           "installs it)")
        self.dir = os.path.join(tmp, name)
        os.makedirs(os.path.join(self.dir, "data"))
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.http, self.tcp = free_port(), free_port()
        self.cluster = cluster

    def start(self, remote_servers=""):
        d = self.dir
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write(f"""<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/err.log</errorlog></logger>
  <http_port>{self.http}</http_port>
  <tcp_port>{self.tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  {remote_servers}
</yandex>
""")
        self.log = open(os.path.join(d, "stdout.log"), "w")
        self.proc = subprocess.Popen([SERVER, f"--config-file={d}/config.xml"], cwd=d,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        lib._procs.append(self.proc)
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.query("SELECT 1").strip() == "1":
                    break
            except OSError:
                pass
            assert self.proc.poll() is None, open(os.path.join(d, "stdout.log")).read()
            assert time.monotonic() < deadline, "clickhouse-server did not answer in 60 s"
            time.sleep(0.2)
        return self

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def url(self, db="default"):
        return f"clickhouse://127.0.0.1:{self.http}/{db}"

    def query(self, sql):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}/", data=sql.encode())
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode()

    def rows(self, sql):
        return [line.split("\t") for line in self.query(sql).splitlines()]


def push(*args, env=None):
    p = subprocess.run([lib.TRACER, "push", *args], capture_output=True, text=True, timeout=120,
                       env=env)
    assert p.returncode == 0, (args, p.stderr)
    return p.stderr


def stored_spans(server, table="tracer_spans", where="1"):
    return {name: (int(n), int(total)) for name, n, total in server.rows(
        f"SELECT name, count(), sum(dur_ns) FROM {table} FINAL WHERE {where} "
        "GROUP BY name ORDER BY name")}


def durations_exact(path):
    """The file's own nanoseconds: three decimals of microseconds, read as text."""
    per = defaultdict(lambda: [0, 0])
    with open(path) as f:
        for line in f:
            if '"ph":"X"' not in line or not line.rstrip().endswith(("},", "}")):
                continue
            e = json.loads(line.rstrip().rstrip(","))
            m = lib.X_RE.search(line)
            per[e["name"]][0] += 1
            per[e["name"]][1] += lib.us_to_ns(m.group(2))
    return {k: tuple(v) for k, v in per.items()}


def file_depths(path):
    """The file's spans in file order as (name, depth): the depth as the viewers nest a
    thread's spans — by start, the longest first, then file order — the number of the thread's
    spans before it still open at its start."""
    spans = []
    with open(path) as f:
        for line in f:
            line = line.rstrip().rstrip(",")
            if not line.startswith("{") or '"ph":"X"' not in line:
                continue
            e = json.loads(line)
            m = lib.X_RE.search(line)
            start = lib.us_to_ns(m.group(1))
            spans.append((e.get("pid", 0), e.get("tid", 0), start,
                          start + lib.us_to_ns(m.group(2)), e["name"]))
    depth, stack, thread = [0] * len(spans), [], None
    for i in sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], spans[i][2],
                                                      -spans[i][3], i)):
        pid, tid, start, end, _ = spans[i]
        if (pid, tid) != thread:
            stack, thread = [], (pid, tid)
        while stack and stack[-1] <= start:
            stack.pop()
        depth[i] = len(stack)
        stack.append(end)
    return [(spans[i][4], depth[i]) for i in range(len(spans))]


def stored_depths(server, batch, where="1"):
    """The stored spans as (name, depth), by their place in the file (seq * batch + row)."""
    rows = server.rows(f"SELECT seq, row, name, depth FROM tracer_spans FINAL WHERE {where}")
    return {int(q) * batch + int(r): (name, int(d)) for q, r, name, d in rows}


def file_states(path):
    """The thread-state intervals in the file's scheduler lines (doc/clickhouse.md): a thread
    is running from its switch in, runnable from a wakeup (when it slept) or a preemption,
    sleeping or blocked from its switch out; the state it is in at the end is left out. The
    number of intervals per state."""
    with open(path) as f:
        trace = json.load(f)
    state, since, n = {}, {}, defaultdict(int)

    def close(tid, ts, nxt):
        if state.get(tid) and ts > since[tid]:
            n[state[tid]] += 1
        state[tid], since[tid] = nxt, ts

    for line in trace.get("systemTraceEvents", "").split("\n"):
        m = lib.FTRACE_RE.match(line)
        if not m:
            continue
        ts = round(float(m.group(5)) * 1e9)
        if m.group(6) == "sched_switch":
            sw = lib.SWITCH_RE.search(m.group(7))
            prev, nxt = int(sw.group(2)), int(sw.group(6))
            if prev > 0:
                close(prev, ts, {"R": "runnable", "D": "blocked", "S": "sleeping"}.get(
                    sw.group(4)[0]))
            if nxt > 0:
                close(nxt, ts, "running")
        else:
            woken = int(lib.WAKEUP_RE.match(m.group(7)).group(2))
            if woken > 0 and state.get(woken) in (None, "sleeping", "blocked"):
                close(woken, ts, "runnable")
    return dict(n)


def stored_states(server):
    return {st: int(k) for st, k in server.rows(
        "SELECT state, count() FROM tracer_states FINAL GROUP BY state")}


OLD_SPANS = ("CREATE TABLE tracer_spans (recording_id String, seq UInt32, row UInt32, "
             "host String, pid Int64, tid Int64, thread String, process String, name String, "
             "category String, start_ns Int64, dur_ns Int64, args String, py_caller String) "
             "ENGINE = ReplacingMergeTree() PARTITION BY toDate(toDateTime(intDiv(start_ns, "
             "1000000000))) ORDER BY (host, name, recording_id, seq, row)")


@lib.offline
def test_depth_is_the_nesting_of_the_spans_in_the_file(tmp):
    """Each span's depth in ClickHouse is its nesting in its thread in the file, as the viewers
    nest it; a tracer_spans made before the column gets it."""
    s = Server(tmp, "ch").start()
    s.query(OLD_SPANS)
    s.query("INSERT INTO tracer_spans FORMAT JSONEachRow\n" + json.dumps(
        {"recording_id": "old", "seq": 0, "row": 0, "host": "h", "name": "before",
         "start_ns": 1, "dur_ns": 1}))
    path = os.path.join(tmp, "nest.json")
    # written as a recorder writes them, each when it ends: children before their parents; on
    # thread 1 a in [0, 100] holds b [10, 50] holding c [20, 30], then e and d, both [60, 90]
    # (e first in the file: it counts as the outer one), f [100, 110] after a; g on thread 2
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        for name, tid, ts, dur in [("c", 1, 20, 10), ("b", 1, 10, 40), ("e", 1, 60, 30),
                                   ("d", 1, 60, 30), ("a", 1, 0, 100), ("f", 1, 100, 10),
                                   ("g", 2, 15, 10)]:
            f.write(f'{{"ph":"X","name":"{name}","cat":"c","ts":{ts}.000,"dur":{dur}.000,'
                    f'"pid":1,"tid":{tid}}},\n')
        f.write('{"ph":"i","s":"g","name":"end","ts":200,"pid":1,"tid":1}\n]}\n')
    push(path, "--to", s.url(), "--host", "h", "--batch", "3")
    got = stored_depths(s, 3, "recording_id != 'old'")
    assert [got[i] for i in range(7)] == [("c", 2), ("b", 1), ("e", 1), ("d", 2), ("a", 0),
                                          ("f", 0), ("g", 0)], got
    assert [got[i] for i in range(7)] == file_depths(path)
    assert s.rows("SELECT name, depth FROM tracer_spans WHERE recording_id = 'old'") == [
        ["before", "0"]]
    # a recorded pipeline: the golden file, in batches of 25
    path = golden("pipeline.json")
    push(path, "--to", s.url(), "--host", "p", "--batch", "25")
    want = file_depths(path)
    got = stored_depths(s, 25, "host = 'p'")
    assert [got[i] for i in range(len(want))] == want, (got, want)
    assert max(d for _, d in want) >= 1, want


@lib.offline
def test_push_has_the_spans_of_the_file(tmp):
    s = Server(tmp, "ch").start()
    path = golden("pipeline.json")
    out = push(path, "--to", s.url(), "--host", "host-1", "--batch", "25")
    want = durations_exact(path)
    assert sum(n for n, _ in want.values()) == 144 and len(want) == 9, want
    assert stored_spans(s) == want, (stored_spans(s), want)
    # the batches each carry the recording id and a number
    ids = s.rows("SELECT DISTINCT recording_id FROM tracer_spans")
    assert len(ids) == 1 and ids[0][0] in out, (ids, out)
    seqs = s.rows("SELECT seq, count() FROM tracer_spans FINAL GROUP BY seq ORDER BY seq")
    assert [int(q) for q, _ in seqs] == list(range(6)), seqs  # 144 spans / 25
    # thread states: the sched lines of the file, as intervals
    n = int(s.query("SELECT count() FROM tracer_states FINAL"))
    bad = s.query("SELECT count() FROM tracer_states WHERE dur_ns <= 0 OR state = ''")
    assert n > 100 and int(bad) == 0, (n, bad)
    rec = s.rows("SELECT host, spans, bottleneck, verdict, toDate(toDateTime(intDiv(start_ns, "
                 "1000000000))) FROM tracer_recordings FINAL")
    assert rec == [["host-1", "144", "decode[*]", rec[0][3], "2023-11-14"]], rec
    assert rec[0][3].startswith("bottleneck: decode[*]"), rec


@lib.offline
def test_python_caller_and_args(tmp):
    s = Server(tmp, "ch").start()
    path = os.path.join(tmp, "py.json")
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n'
                '{"ph":"M","name":"thread_name","pid":7,"tid":8,"args":{"name":"worker-0"}},\n'
                '{"ph":"X","name":"read","cat":"io","ts":5.000,"dur":2.500,"pid":7,"tid":8,'
                '"args":{"py":"Loader.__next__","py_line":"loader.py:42","fd":3}},\n'
                '{"ph":"C","name":"queue depth","ts":6.000,"pid":7,"tid":7,'
                '"args":{"frames":3,"bytes":1024}}\n]}\n')
    push(path, "--to", s.url(), "--host", "h")
    assert s.rows("SELECT thread, name, category, start_ns, dur_ns, py_caller, args "
                  "FROM tracer_spans FINAL") == [[
        "worker-0", "read", "io", "5000", "2500", "Loader.__next__ (loader.py:42)",
        '{"py":"Loader.__next__","py_line":"loader.py:42","fd":3}']]
    assert s.rows("SELECT pid, name, key, start_ns, value FROM tracer_counters FINAL "
                  "ORDER BY key") == [["7", "queue depth", "bytes", "6000", "1024"],
                                      ["7", "queue depth", "frames", "6000", "3"]]


@lib.offline
def test_resent_batches_count_once(tmp):
    s = Server(tmp, "ch").start()
    path = golden("pipeline.json")
    want = durations_exact(path)
    push(path, "--to", s.url(), "--host", "h", "--batch", "25")
    # one batch again, as a sender that timed out would resend it: the same recording id,
    # number and rows, inserted a second time
    again = s.query("SELECT * FROM tracer_spans WHERE seq = 2 ORDER BY row FORMAT JSONEachRow")
    assert again.count("\n") == 25, again
    s.query("INSERT INTO tracer_spans FORMAT JSONEachRow\n" + again)
    raw = int(s.query("SELECT count() FROM tracer_spans"))
    assert raw in (144, 169), raw  # 169 until the background merge folds the copy
    assert stored_spans(s) == want
    # the whole file again: every batch resent
    push(path, "--to", s.url(), "--host", "h", "--batch", "25")
    assert stored_spans(s) == want
    assert s.query("SELECT count() FROM tracer_recordings FINAL").strip() == "1"


@lib.offline
def test_server_killed_and_restarted_during_a_push(tmp):
    """The server dies while batches are going in and comes back 2 s later: the push sends the
    batch it was on again, and every span is there once."""
    s = Server(tmp, "ch").start()
    path = os.path.join(tmp, "big.json")
    subprocess.run(["/usr/bin/python3", os.path.join(lib.ROOT, "tests", "integration",
                                                     "tracegen.py"), "-o", path, "--size", "8M"],
                   check=True, capture_output=True)
    p = subprocess.Popen([lib.TRACER, "push", path, "--to", s.url(), "--host", "h", "--batch",
                          "200"], stderr=subprocess.PIPE, text=True)
    lib._procs.append(p)
    deadline = time.monotonic() + 60
    while True:  # the first batches are in: the push is under way
        try:
            if int(s.query("SELECT count() FROM tracer_spans")) >= 400:
                break
        except OSError:  # the table is not there yet
            pass
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        time.sleep(0.02)
    s.kill()
    time.sleep(2)
    s.start()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "sending it again" in err, err  # the kill did land in the middle of the push
    want = durations_exact(path)
    assert sum(n for n, _ in want.values()) > 5000, want
    assert stored_spans(s) == want


@lib.offline
def test_push_of_a_cut_file(tmp):
    s = Server(tmp, "ch").start()
    cut = golden("cut.json")
    err = push(cut, "--to", s.url(), "--host", "h", "--batch", "10")
    assert "cut short" in err, err
    want = durations_exact(cut)
    assert sum(n for n, _ in want.values()) > 0
    assert stored_spans(s) == want, (stored_spans(s), want)
    cut_states = int(s.query("SELECT count() FROM tracer_states FINAL"))
    # then the whole recording: the cut copy's rows are its first rows, counted once
    push(golden("pipeline.json"), "--to", s.url(), "--host", "h", "--batch", "10")
    assert stored_spans(s) == durations_exact(golden("pipeline.json"))
    assert s.rows("SELECT count(), any(states) > %d FROM tracer_recordings FINAL"
                  % cut_states) == [["1", "1"]]


def three_hosts(tmp):
    """Three recordings from three hosts; the third ran a pipeline whose decoders are
    called resize-K, so its verdict names another stage."""
    odd = os.path.join(tmp, "odd.json")
    with open(golden("host-b.json")) as f, open(odd, "w") as o:
        o.write(f.read().replace('"decode-', '"resize-'))
    return [(golden("pipeline.json"), "node-1"), (golden("host-a.json"), "node-2"),
            (odd, "node-3")]


@lib.offline
def test_fleet_names_the_host_whose_verdict_differs(tmp):
    s = Server(tmp, "ch").start()
    for path, host in three_hosts(tmp):
        push(path, "--to", s.url(), "--host", host)
    p = subprocess.run([lib.TRACER, "fleet", "--from", s.url(), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    f = json.loads(p.stdout)
    assert sorted(r["host"] for r in f["recordings"]) == ["node-1", "node-2", "node-3"]
    assert [(g["bottleneck"], sorted(g["hosts"])) for g in f["bottlenecks"]] == [
        ("decode[*]", ["node-1", "node-2"]), ("resize[*]", ["node-3"])], f["bottlenecks"]
    # the quantiles are the server's, over the stored spans
    p99 = {(r["name"], r["host"]): float(r["p99"]) for r in f["spans"]}
    want = float(s.query("SELECT quantile(0.99)(dur_ns) FROM tracer_spans FINAL "
                         "WHERE host = 'node-1' AND name = 'decode_frame'"))
    assert p99[("decode_frame", "node-1")] == want
    # the text view says the same in one screen
    p = subprocess.run([lib.TRACER, "fleet", "--from", s.url(), "--where", "host != 'node-2'"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "differs: bottleneck resize[*] on 1 host (node-3)" in p.stdout, p.stdout
    assert "node-2" not in p.stdout, p.stdout
    # --since: these recordings are from 2023
    p = subprocess.run([lib.TRACER, "fleet", "--from", s.url(), "--since", "1h", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["recordings"] == [], p.stdout


@lib.offline
def test_two_shards_behind_a_distributed_table(tmp):
    a, b = Server(tmp, "a"), Server(tmp, "b")
    shards = f"""<remote_servers><two>
    <shard><replica><host>127.0.0.1</host><port>{a.tcp}</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>{b.tcp}</port></replica></shard>
  </two></remote_servers>"""
    a.start(shards)
    b.start(shards)
    # the local tables on every server (no ZooKeeper, so no ON CLUSTER), then the data
    push("--to", b.url(), "--cluster", "two")
    hosts = three_hosts(tmp)
    for path, host in hosts:
        push(path, "--to", a.url(), "--host", host, "--cluster", "two", "--batch", "20")
    push(hosts[0][0], "--to", a.url(), "--host", hosts[0][1], "--cluster", "two",
         "--batch", "20")  # resent whole
    on = [int(x.query("SELECT count() FROM tracer_recordings_local")) for x in (a, b)]
    assert sum(on) >= 3 and all(on), on  # each shard holds recordings
    for path, host in hosts:
        assert stored_spans(a, where=f"host = '{host}'") == durations_exact(path), host
        assert stored_spans(b, where=f"host = '{host}'") == durations_exact(path), host
    p = subprocess.run([lib.TRACER, "fleet", "--from", b.url(), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    groups = json.loads(p.stdout)["bottlenecks"]
    assert [sorted(g["hosts"]) for g in groups] == [["node-1", "node-2"], ["node-3"]], groups


@lib.offline
def test_bad_destinations_fail_with_one_line(tmp):
    s = Server(tmp, "ch").start()
    dead = free_port()
    env = dict(os.environ, TRACER_CLICKHOUSE_PASSWORD="hunter2-secret")
    cases = [
        ("ftp://127.0.0.1/db", "not a ClickHouse URL"),
        (f"clickhouse://127.0.0.1:{s.http}", "names no database"),
        ("clickhouse://no-such-host.invalid/db", "unknown host"),
        (f"clickhouse://127.0.0.1:{dead}/default", "cannot connect"),
        (f"clickhouse://default@127.0.0.1:{s.http}/default", "login refused"),
        (f"clickhouse://nobody:pw-in-url@127.0.0.1:{s.http}/default", "login refused"),
        (f"clickhouse://127.0.0.1:{s.http}/nodb", "Database nodb doesn't exist"),
    ]
    for url, says in cases:
        for cmd in (["push", golden("host-a.json"), "--to", url], ["fleet", "--from", url]):
            p = subprocess.run([lib.TRACER, *cmd], capture_output=True, text=True,
                               timeout=60, env=env if "default@" in url else None)
            assert p.returncode != 0, (cmd, p.stderr)
            lines = p.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("tracer: ") and says in lines[0], (
                cmd, p.stderr)
            assert "hunter2" not in p.stderr and "pw-in-url" not in p.stderr, p.stderr
    assert s.query("EXISTS TABLE tracer_spans").strip() == "0"
    p = subprocess.run([lib.TRACER, "fleet", "--from", s.url()], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "holds no recordings" in p.stderr, (
        p.stderr)
    for args, says in [(["push", golden("host-a.json")], "--to"),
                       (["push", "--to", s.url()], "no trace given"),
                       (["fleet", "--from", s.url(), "--since", "soon"], "--since"),
                       (["push", golden("host-a.json"), "--to", s.url(), "--batch", "0"],
                        "--batch")]:
        p = subprocess.run([lib.TRACER, *args], capture_output=True, text=True, timeout=60)
        lines = p.stderr.splitlines()
        assert p.returncode == 2 and len(lines) == 1 and says in lines[0], (args, p.stderr)


@lib.offline
def test_the_doc_queries_run(tmp):
    """doc/clickhouse.md's example queries, on the tables push made: they parse and answer."""
    s = Server(tmp, "ch").start()
    for path, host in three_hosts(tmp):
        push(path, "--to", s.url(), "--host", host)
    with open(os.path.join(lib.ROOT, "doc", "clickhouse.md")) as f:
        block = f.read().split("## Example queries")[1].split("```sql")[1].split("```")[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    assert len(queries) >= 5, queries
    answers = [s.query(q) for q in queries]
    assert "resize[*]\t['node-3']\t1" in answers[1], answers[1]
    assert "node-1\t" in answers[2] and answers[3], answers


def test_record_to_pushes_the_file_when_written(tmp):
    """record --to: the file is pushed once written (the network is not on the recording's
    path); with the server down the recording still succeeds and says how to push later."""
    s = Server(tmp, "ch").start()
    out = os.path.join(tmp, "run.json")
    pl, pid = lib.start_pipeline("--forever")
    lib.sigusr1(pid)  # it runs until SIGINT
    rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "-d", "1.5", "-o", out, "--to", s.url())
    assert rc == 0, err
    assert "pushed recording" in err, err
    want = durations_exact(out)
    assert sum(n for n, _ in want.values()) > 10, want
    assert stored_spans(s) == want
    assert int(s.query("SELECT count() FROM tracer_states FINAL")) > 0
    with open(out) as f:  # the pipeline pack's queue depths: one value per counter event
        depths = sum(1 for line in f if line.startswith('{"ph":"C"'))
    assert depths > 0 and int(s.query("SELECT count() FROM tracer_counters FINAL")) == depths
    # the recording's row says which machine and which boot its times are of
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert s.rows("SELECT host, boot_id FROM tracer_recordings FINAL") == \
        [[os.uname().nodename, boot]]
    # a file recorded on another machine keeps that machine's name, wherever it is pushed from
    with open(out) as f:
        text = f.read()
    other = os.path.join(tmp, "from-camera-7.json")
    with open(other, "w") as f:
        f.write(text.replace(f'"host":"{os.uname().nodename}"', '"host":"camera-7"'))
    push(other, "--to", s.url())
    assert ["camera-7"] in s.rows("SELECT DISTINCT host FROM tracer_spans FINAL")
    # nobody listening: the recording is written all the same, one line says what to do
    out2 = os.path.join(tmp, "run2.json")
    rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "-d", "1", "-o", out2, "--to",
                             f"clickhouse://127.0.0.1:{free_port()}/default")
    assert rc == 0, err
    # (the streaming thread may have said once already that it paused)
    lines = [l for l in err.splitlines() if "the recording is in" in l]
    assert len(lines) == 1 and "cannot connect" in lines[0] and out2 in lines[0], err
    assert sum(n for n, _ in durations_exact(out2).values()) > 10
    # a password in the URL (refused here: the default user has none) is never written into
    # the trace's command line, nor printed
    out3 = os.path.join(tmp, "run3.json")
    rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "-d", "0.5", "-o", out3, "--to",
                             f"clickhouse://default:s3cret-pw@127.0.0.1:{s.http}/default")
    assert rc == 0 and "login refused" in err, err
    with open(out3) as f:
        text = f.read()
    assert "s3cret-pw" not in text + err and "default:*********@127.0.0.1" in text, err
    pl.send_signal(signal.SIGINT)
    lib.wait_exit(pl)
    rc, err = lib.run_tracer("-p", "1", "-o", "-", "--to", s.url())
    assert rc == 2 and "--to pushes the trace file" in err, err


def test_record_to_streams_states_queue_depths_and_depths_while_recording(tmp):
    """record --to sends the thread states and the queue depths while it records, not at the
    end only, and each span's depth; at the end ClickHouse holds exactly the file's rows."""
    s = Server(tmp, "ch").start()
    out = os.path.join(tmp, "run.json")
    pl, pid = lib.start_pipeline("--forever")
    lib.sigusr1(pid)

    def count(table):
        try:
            return int(s.query(f"SELECT count() FROM {table} FINAL"))
        except (OSError, ValueError):  # the table is not there yet
            return 0

    # a recording far longer than the wait: it is stopped (SIGINT) only once the rows are in,
    # so that what came is what was streamed, not the push at the end
    tr = lib.start_tracer("-p", pid, "-P", "pipeline", "-d", "300", "-o", out, "--to", s.url())
    deadline = time.monotonic() + 60
    while not (count("tracer_states") and count("tracer_counters") and count("tracer_spans")):
        assert tr.poll() is None, "the recording ended before its states were streamed"
        assert time.monotonic() < deadline, "no states, queue depths or spans streamed in 60 s"
        time.sleep(0.2)
    # what was streamed so far: each span's depth, as the push at the end will not have set it
    time.sleep(2)
    live = stored_depths(s, 10000)
    cols = ("SELECT seq, row, pid, tid, name, category, start_ns, dur_ns, args, py_caller "
            "FROM tracer_spans FINAL ORDER BY seq, row")
    live_rows = s.rows(cols)
    assert tr.poll() is None, "the recording ended before the rows were read"
    tr.send_signal(signal.SIGINT)
    rc, err = lib.finish_tracer(tr)
    assert rc == 0, err
    assert "streamed " in err and "pushed recording" in err, err
    pl.send_signal(signal.SIGINT)
    lib.wait_exit(pl)
    want = file_states(out)
    assert sum(want.values()) > 100, want
    assert stored_states(s) == want, (stored_states(s), want)
    with open(out) as f:  # the pipeline pack's queue depths: one value per counter event
        depths = sum(1 for line in f if line.startswith('{"ph":"C"'))
    assert depths > 0 and count("tracer_counters") == depths
    # every span's depth at the end is the file's; while recording, those of the spans whose
    # enclosing spans had all ended within the second after them (a span waits that long)
    nest = file_depths(out)
    final = stored_depths(s, 10000)
    assert [final[i] for i in range(len(nest))] == nest
    assert len(live) > 50 and max(d for _, d in live.values()) >= 1, live
    wrong = {i: (live[i], nest[i]) for i in live if live[i] != nest[i]}
    assert not wrong, wrong
    # the streamed rows are the rows the push made of the file
    pushed = {(r[0], r[1]): r for r in s.rows(cols)}
    assert all(pushed[(r[0], r[1])] == r for r in live_rows), live_rows[:3]


def test_record_to_streams_while_recording_through_a_server_restart(tmp):
    """record --to sends spans while it records; the server killed early in the recording and
    started again 2 s later: rows flow again, and at the end ClickHouse holds exactly the
    spans of the file, none twice."""
    s = Server(tmp, "ch").start()
    out = os.path.join(tmp, "run.json")
    pl, pid = lib.start_pipeline("--forever")
    lib.sigusr1(pid)

    def spans_now():
        try:
            return int(s.query("SELECT count() FROM tracer_spans FINAL"))
        except OSError:
            return 0

    def wait_for(cond, what):
        deadline = time.monotonic() + 30
        while not cond():
            assert tr.poll() is None, f"the recording ended before {what}"
            assert time.monotonic() < deadline, what
            time.sleep(0.1)

    tr = lib.start_tracer("-p", pid, "-P", "pipeline", "-d", "12", "-o", out, "--to", s.url())
    def states_now():
        try:
            return int(s.query("SELECT count() FROM tracer_states FINAL"))
        except (OSError, ValueError):
            return 0

    wait_for(lambda: spans_now() > 0 and states_now() > 0, "any span and state was streamed")
    s.kill()
    time.sleep(2)
    s.start()
    before = spans_now()
    wait_for(lambda: spans_now() > before, "streaming resumed")
    rc, err = lib.finish_tracer(tr)
    assert rc == 0, err
    assert "streaming to ClickHouse paused" in err and "streamed " in err, err
    pl.send_signal(signal.SIGINT)
    lib.wait_exit(pl)
    want = durations_exact(out)
    assert sum(n for n, _ in want.values()) > 100, want
    assert stored_spans(s) == want
    # the thread states and queue depths streamed before and after the restart: once each
    assert stored_states(s) == file_states(out)
    with open(out) as f:
        depths = sum(1 for line in f if line.startswith('{"ph":"C"'))
    assert int(s.query("SELECT count() FROM tracer_counters FINAL")) == depths
    nest = file_depths(out)
    final = stored_depths(s, 10000)
    assert [final[i] for i in range(len(nest))] == nest
