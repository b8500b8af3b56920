#!/usr/bin/env python3
# tests/test_helper/etcd_hold.py - a stand-in for one etcd member that takes
# a write and never answers it (tests/81): it relays every connection to the
# member's client port, byte for byte, except that while DIR/hold exists a
# POST /v3/kv/txn that puts something is kept, unanswered. Reads, the watch
# and the writes before DIR/hold pass. Once DIR/release exists, each kept
# request is sent to the member after all, on a connection of its own (a
# write that lands late), and the member's answer is appended to DIR/late;
# the connection it came on is closed unanswered.
#
# Usage: etcd_hold.py MEMBER_PORT DIR   (the port it listens on goes to DIR/port)
import os
import socket
import sys
import threading
import time

member_port, work = int(sys.argv[1]), sys.argv[2]


def pump(src, dst):
    """Copies src to dst until either ends (the member's answers, the watch's stream)."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def read_request(conn, buf):
    """One whole request (headers and Content-Length body) from conn: (request, rest) or (None, b"")."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buf += data
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        data = conn.recv(65536)
        if not data:
            return None, b""
        body += data
    return head + b"\r\n\r\n" + body[:length], body[length:]


def land_late(request):
    """Waits for DIR/release, then sends request to the member and keeps its answer in DIR/late."""
    while not os.path.exists(os.path.join(work, "release")):
        time.sleep(0.05)
    head, _, body = request.partition(b"\r\n\r\n")
    lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
    with socket.create_connection(("127.0.0.1", member_port)) as s:
        s.sendall(b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body)
        answer = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            answer += data
    with open(os.path.join(work, "late"), "ab") as f:
        f.write(answer.partition(b"\r\n\r\n")[2] + b"\n")


def serve(conn):
    member = socket.create_connection(("127.0.0.1", member_port))
    threading.Thread(target=pump, args=(member, conn), daemon=True).start()
    buf = b""
    while True:
        try:
            request, buf = read_request(conn, buf)
        except OSError:
            request = None
        if request is None:
            member.close()
            return
        if (os.path.exists(os.path.join(work, "hold")) and
                request.startswith(b"POST /v3/kv/txn ") and b"request_put" in request):
            land_late(request)
            conn.close()
            return
        member.sendall(request)


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(os.path.join(work, "port.tmp"), "w") as f:
    f.write(str(listener.getsockname()[1]))
os.rename(os.path.join(work, "port.tmp"), os.path.join(work, "port"))
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
