"""Section 9 of bench/bench.py: tracer push into ClickHouse (Debian's clickhouse-server 18.16,
on loopback, started here as tests/integration/test_clickhouse.py starts it), tracer fleet over
what was pushed, and what record --to costs a recording. b is the harness (bench.py): its
helpers and settings."""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request



def start_server(d):
    """A clickhouse-server on free loopback ports in d (as tests/integration/test_clickhouse.py
    starts it); returns (Popen, http port)."""
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    for sub in ("data", "tmp"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(os.path.join(d, "config.xml"), "w") as f:
        f.write(f"""<yandex><logger><level>warning</level><log>{d}/server.log</log>
<errorlog>{d}/err.log</errorlog></logger><http_port>{ports[0]}</http_port>
<tcp_port>{ports[1]}</tcp_port><listen_host>127.0.0.1</listen_host><path>{d}/data/</path>
<tmp_path>{d}/tmp/</tmp_path><users_config>/etc/clickhouse-server/users.xml</users_config>
<default_profile>default</default_profile><default_database>default</default_database>
<mark_cache_size>5368709</mark_cache_size></yandex>""")
    p = subprocess.Popen(["/usr/sbin/clickhouse-server", f"--config-file={d}/config.xml"], cwd=d,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/?query=SELECT%201", timeout=5)
            return p, ports[0]
        except OSError:
            time.sleep(0.2)
    p.kill()
    raise RuntimeError("clickhouse-server did not answer in 60 s")


def run(b):
    b.log("9. tracer push into ClickHouse")
    if not os.access("/usr/sbin/clickhouse-server", os.X_OK):
        b.row("9. clickhouse", "push", "not run", "", "", "",
            "install the Debian package clickhouse-server")
        return
    size = "20M" if b.QUICK else "100M"
    trace = os.path.join(b.TMP, "ch.json")
    subprocess.run([sys.executable, os.path.join(b.ROOT, "tests", "integration", "tracegen.py"),
                    "-o", trace, "--size", size], check=True, capture_output=True)
    spans = sum(1 for line in subprocess.run(
        [b.TRACER, "export", trace, "--jsonl"], capture_output=True, text=True,
        check=True).stdout.splitlines())
    server, port = start_server(os.path.join(b.TMP, "ch"))

    def q(sql):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=sql.encode())
        return urllib.request.urlopen(req, timeout=120).read().decode().strip()
    try:
        secs, states = [], 0
        for r in range(3):
            q(f"CREATE DATABASE r{r}")  # a fresh database each run: every row is inserted
            t = time.monotonic()
            subprocess.run([b.TRACER, "push", trace, "--to",
                            f"clickhouse://127.0.0.1:{port}/r{r}"], check=True,
                           capture_output=True)
            secs.append(time.monotonic() - t)
            got = int(q(f"SELECT count() FROM r{r}.tracer_spans FINAL"))
            if got != spans:
                raise RuntimeError(f"run {r}: {got} spans in ClickHouse, {spans} in the file")
            states = int(q(f"SELECT count() FROM r{r}.tracer_states FINAL"))
        rate = (spans + states) / b.med(secs)
        b.row("9. clickhouse", f"tracer push of a {size} trace ({spans} spans + {states} "
            f"states, 0 lost) to clickhouse-server on loopback",
            f"{rate / 1000:.0f}k rows/s, {b.med(secs):.2f} s (runs {min(secs):.2f}-"
            f"{max(secs):.2f})")
        t = time.monotonic()
        subprocess.run([b.TRACER, "fleet", "--from", f"clickhouse://127.0.0.1:{port}/r0"],
                       check=True, capture_output=True)
        b.row("9. clickhouse", f"tracer fleet over those {spans} spans (server-side quantiles)",
            f"{time.monotonic() - t:.2f} s")
        record_to(b, q, port)
    finally:
        server.kill()
        server.wait()


def record_to(b, q, port):
    """What --to costs the recording: the same rate-limited loop target recorded without and
    with --to (streaming to the server, then the push at the end), rounds interleaved."""
    secs, rate = (5, 50000) if b.QUICK else (10, 50000)
    out = os.path.join(b.TMP, "to.json")
    runs = {False: [], True: []}
    for r in range(3):
        for to in (False, True):
            extra = []
            if to:
                q(f"CREATE DATABASE to{r}")
                extra = ["--to", f"clickhouse://127.0.0.1:{port}/to{r}"]
            res, meta, cpu, wall, proc = b.record_loop(
                ["-f", "bench_push", "-t", 1, "-s", secs, "-r", rate], out, extra)
            m = re.search(r"streamed (\d+) span", proc.text())
            streamed = int(m.group(1)) if m else 0
            if to and int(q(f"SELECT count() FROM to{r}.tracer_spans FINAL")) != \
                    meta["counts"]["spans"]:
                raise RuntimeError(f"--to run {r}: ClickHouse does not hold the file's spans")
            runs[to].append({"cpu": cpu, "while": proc.cpu_while,
                             "pace": res["calls"] / (res["wall_ns"] / 1e9),
                             "ns": res["ns_per_call"], "spans": meta["counts"]["spans"],
                             "streamed": streamed / secs,
                             # from the target's end to tracer's: the push at the end
                             "tail": wall - res["wall_ns"] / 1e9})

    def m(to, k):
        return b.med([x[k] for x in runs[to]])

    def rng(to, k, f):
        return f"{f.format(min(x[k] for x in runs[to]))}-{f.format(max(x[k] for x in runs[to]))}"
    for to in (False, True):
        b.row("9. clickhouse", f"recording a loop at {rate // 1000}k calls/s for {secs} s "
            f"({m(to, 'spans'):.0f} spans){' with --to' if to else ', no --to'}",
            f"tracer CPU {m(to, 'cpu'):.2f} s (runs {rng(to, 'cpu', '{:.2f}')}), "
            f"{m(to, 'while'):.2f} s of it while the target ran; target "
            f"{m(to, 'pace') / 1000:.1f}k calls/s, {m(to, 'ns'):.0f} ns CPU per call (runs "
            f"{rng(to, 'ns', '{:.0f}')})" +
            (f"; {m(to, 'streamed') / 1000:.1f}k spans/s streamed while recording, the push "
             f"at the end {m(to, 'tail'):.1f} s" if to else ""))
