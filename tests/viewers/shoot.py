#!/usr/bin/env python3
"""Screenshots for the docs (doc/images/), taken in Debian's headless Chromium:

  shoot.py speedscope TRACE.json OUT.png [--thread NAME] [--view time|left|sandwich]
                      [--zoom K] [--viewers DIR]
      the trace in the offline speedscope viewer, on the first thread whose profile name
      contains NAME, in a view (time order by default), zoomed in K times (x2 each) around the
      middle
  shoot.py page PAGE.html OUT.png [--max-height PX] [--section ID]
      a page (tracer report --html), full length or cut at PX; or from the element ID down
      (at most PX, 800 by default)

The viewer comes from `make viewers` (OUTPUT/viewers/node_modules/speedscope/dist/release)."""
import argparse
import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def serve(root):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Quiet, directory=root))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def wait_text(b, text, timeout=30):
    if not b.wait_for(f"document.body && document.body.innerText.includes({text!r})", timeout):
        sys.exit(f"shoot.py: the page never showed {text!r}")


def speedscope(args, tmp):
    os.symlink(os.path.abspath(args.viewers), os.path.join(tmp, "viewer"))
    name = os.path.basename(args.trace)
    shutil.copyfile(args.trace, os.path.join(tmp, name))
    srv = serve(tmp)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        with cdp.Browser(os.path.join(tmp, "chromium"), args.width, args.height) as b:
            b.open(f"{base}/viewer/index.html#profileURL={base}/{name}")
            wait_text(b, "Time Order")
            if args.thread:
                for _ in range(500):
                    line = b.eval("document.body.innerText.split('\\n')[1] || ''")
                    if args.thread in line:
                        break
                    b.press("n")
                    time.sleep(0.2)
                else:
                    sys.exit(f"shoot.py: no thread matching {args.thread!r}")
            b.press({"time": "1", "left": "2", "sandwich": "3"}[args.view])
            for _ in range(args.zoom):
                b.press("=")
                time.sleep(0.2)
            time.sleep(1)
            b.screenshot(args.out)
    finally:
        srv.shutdown()


def page(args, tmp):
    with cdp.Browser(os.path.join(tmp, "chromium"), args.width, args.height) as b:
        b.open("file://" + os.path.abspath(args.page))
        if not b.wait_for("document.readyState === 'complete'"):
            sys.exit("shoot.py: the page did not load")
        if args.section:  # from the element's top, at most --max-height (default 800) tall
            box = b.eval(f"(() => {{const e = document.getElementById({args.section!r}); "
                         "if (!e) return null; const r = e.getBoundingClientRect(); "
                         "return [r.left + scrollX, r.top + scrollY, "
                         "document.documentElement.scrollHeight];})()")
            if not box:
                sys.exit(f"shoot.py: the page has no element #{args.section}")
            height = min(args.max_height or 800, box[2] - box[1])
            b.screenshot(args.out, clip=(0, box[1] - 4, args.width, height))
        elif args.max_height:
            b.call("Emulation.setDeviceMetricsOverride", width=args.width,
                   height=args.max_height, deviceScaleFactor=1, mobile=False)
            b.screenshot(args.out)
        else:
            b.screenshot(args.out, full_page=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speedscope")
    s.add_argument("trace")
    s.add_argument("out")
    s.add_argument("--thread")
    s.add_argument("--view", choices=("time", "left", "sandwich"), default="time")
    s.add_argument("--zoom", type=int, default=0)
    s.add_argument("--viewers", default=os.path.join(
        ROOT, ".output", "viewers", "node_modules", "speedscope", "dist", "release"))
    p = sub.add_parser("page")
    p.add_argument("page")
    p.add_argument("out")
    p.add_argument("--max-height", type=int)
    p.add_argument("--section", help="the id of the element to start at (e.g. timeline)")
    for x in (s, p):
        x.add_argument("--width", type=int, default=1400 if x is s else 1000)
        x.add_argument("--height", type=int, default=800)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="shoot-") as tmp:
        (speedscope if args.what == "speedscope" else page)(args, tmp)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
