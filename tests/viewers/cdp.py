"""Drive Debian's headless Chromium through the DevTools protocol, with the standard library only
(no network beyond loopback, no npm driver): open a page, evaluate JavaScript in it, press keys,
take screenshots. Used by tests/integration/test_viewers.py and scripts that make screenshots."""
import base64
import http.client
import json
import os
import socket
import struct
import subprocess
import time

CHROMIUM = os.environ.get("CHROMIUM", "chromium")

# The flags that make Debian's Chromium run headless on this kind of machine (root, no GPU, no
# network): see doc/trace-format.md, "Checking a trace in a real browser, offline".
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


class CDPError(Exception):
    pass


class _WebSocket:
    """The client side of RFC 6455, enough for DevTools: text frames, masked, no extensions."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise CDPError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise CDPError(f"DevTools refused the WebSocket: {head.decode(errors='replace')}")

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise CDPError("DevTools closed the connection")
            buf += chunk
        return bytes(buf)

    def send(self, text):
        data = text.encode()
        head = bytearray([0x81])
        if len(data) < 126:
            head.append(0x80 | len(data))
        elif len(data) < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", len(data))
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", len(data))
        mask = os.urandom(4)
        self.sock.sendall(bytes(head) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = bytearray()
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise CDPError("DevTools closed the WebSocket")
            if opcode == 9:  # ping: answer and go on
                self.sock.sendall(bytes([0x8A, 0x80]) + os.urandom(4))
                continue
            if opcode in (0, 1, 2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        self.sock.close()


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, profile_dir, width=1400, height=800, log=None):
        self.profile_dir = profile_dir
        os.makedirs(profile_dir, exist_ok=True)
        port_file = os.path.join(profile_dir, "DevToolsActivePort")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.log = open(log or os.devnull, "w")
        self.proc = subprocess.Popen(
            [CHROMIUM] + FLAGS + [f"--user-data-dir={profile_dir}",
                                  f"--window-size={width},{height}",
                                  "--remote-debugging-port=0", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.next_id = 0
        self.events = []
        self.dialogs = []
        try:
            self.port = self._wait_port(port_file)
            self.ws = self._connect_page()
        except BaseException:
            self.quit()
            raise

    def _wait_port(self, port_file, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CDPError(f"chromium exited with status {self.proc.returncode}")
            try:
                with open(port_file) as f:
                    first = f.readline().strip()
                if first:
                    return int(first)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise CDPError("chromium did not open its DevTools port")

    def _connect_page(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", "/json/list")
        targets = json.loads(conn.getresponse().read())
        conn.close()
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            raise CDPError("chromium has no page to drive")
        url = pages[0]["webSocketDebuggerUrl"]
        path = url.split(str(self.port), 1)[1]
        return _WebSocket("127.0.0.1", self.port, path)

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CDPError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == "Page.javascriptDialogOpening":
                    # an alert() blocks the page (and our call) until someone answers it
                    self.dialogs.append(msg["params"].get("message", ""))
                    self.next_id += 1
                    self.ws.send(json.dumps({"id": self.next_id,
                                             "method": "Page.handleJavaScriptDialog",
                                             "params": {"accept": True}}))

    def eval(self, expression):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise CDPError(f"{expression}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=30):
        """Waits until the expression is truthy in the page; returns its value, or None when
        the page never got there (the caller says what it expected)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        return None

    def on_new_document(self, source):
        self.call("Page.addScriptToEvaluateOnNewDocument", source=source)

    def open(self, url):
        self.call("Page.enable")
        self.call("Page.navigate", url=url)

    def press(self, key):
        """A printable key, as a user types it (speedscope listens to keydown)."""
        code = "Key" + key.upper() if key.isalpha() else ""
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": key, "code": code}
            if kind == "keyDown":
                params["text"] = key
            self.call("Input.dispatchKeyEvent", **params)

    def screenshot(self, path, full_page=False, clip=None):
        """The viewport, the whole page, or clip (x, y, width, height in page pixels)."""
        params = {"format": "png"}
        if clip:
            params.update(captureBeyondViewport=True,
                          clip={"x": clip[0], "y": clip[1], "width": clip[2],
                                "height": clip[3], "scale": 1})
        elif full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"],
                                "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def dom(self):
        return self.eval("document.documentElement.outerHTML")

    def quit(self):
        ws = getattr(self, "ws", None)
        if ws:
            try:
                self.call("Browser.close")
            except (CDPError, OSError):
                pass
            ws.close()
            self.ws = None
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quit()
