#!/usr/bin/python3
"""Prints what trackd sends with --udp HOST:PORT: per frame, the objects
found and their positions, then each instance of a tracked object (id,
position, velocity), each blob of an object that lists blobs and each
marker (objects files with "patterns"), as
examples/ws_client.py does (frame_text.py beside it reads the message).

    trackd --udp 127.0.0.1:5005 &
    python3 examples/udp_listener.py [PORT [FRAMES [GROUP]]]

PORT defaults to 5005; FRAMES (default 0 = forever) stops after that many
frames; GROUP joins a multicast group (trackd --udp GROUP:PORT). A frame over
1400 bytes comes in parts (protocol/PROTOCOL.md section 9): they are joined
here by seq; a frame that lost a part is skipped when a newer one is whole.
"""
import json
import socket
import sys

from frame_text import print_frame

port = int(sys.argv[1]) if len(sys.argv) > 1 else 5005
frames = int(sys.argv[2]) if len(sys.argv) > 2 else 0
group = sys.argv[3] if len(sys.argv) > 3 else None

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("", port))
if group:
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                    socket.inet_aton(group) + socket.inet_aton("0.0.0.0"))

pending = {}  # seq -> {part: message}
n = 0
while n != frames:
    msg = json.loads(sock.recv(65536))
    parts = pending.setdefault(msg["seq"], {})
    parts[msg["part"]] = msg
    if len(parts) < msg["parts"]:
        continue
    # a split frame: its objects, then its markers, in part order
    objects = [o for i in sorted(parts) for o in parts[i]["objects"]]
    markers = [m for i in sorted(parts) for m in parts[i].get("markers", [])]
    pending = {seq: p for seq, p in pending.items() if seq > msg["seq"]}
    print_frame(msg["seq"], objects, markers)
    n += 1
