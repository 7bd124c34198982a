#!/usr/bin/python3
"""Prints what trackd sends with --udp HOST:PORT: per frame, the objects
found and their positions, then each instance of a tracked object (id,
position, velocity) and each blob of an object that lists blobs, as
examples/ws_client.py does.

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

port = int(sys.argv[1]) if len(sys.argv) > 1 else 5005
frames = int(sys.argv[2]) if len(sys.argv) > 2 else 0
group = sys.argv[3] if len(sys.argv) > 3 else None

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("", port))
if group:
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                    socket.inet_aton(group) + socket.inet_aton("0.0.0.0"))

pending = {}  # seq -> {part: objects}
n = 0
while n != frames:
    msg = json.loads(sock.recv(65536))
    parts = pending.setdefault(msg["seq"], {})
    parts[msg["part"]] = msg["objects"]
    if len(parts) < msg["parts"]:
        continue
    objects = [o for i in sorted(parts) for o in parts[i]]
    pending = {seq: p for seq, p in pending.items() if seq > msg["seq"]}
    found = [f"{o['name']} ({o['cx']:.1f}, {o['cy']:.1f})" for o in objects if o["found"]]
    print(f"frame {msg['seq']}: {', '.join(found)}")
    # Instances of tracked objects (id, position, velocity), else blobs.
    for o in objects:
        for i in o.get("instances", []):
            lost = f", lost for {i['lost']} frames" if i["lost"] else ""
            print(f"  {o['name']} #{i['id']} at ({i['cx']:.1f}, {i['cy']:.1f}) moving "
                  f"({i['vx']:.2f}, {i['vy']:.2f}) px/frame{lost}")
        if "instances" not in o:
            for b in o.get("blobs", []):
                print(f"  {o['name']} blob at ({b['cx']:.1f}, {b['cy']:.1f}), {b['mass']} px")
    sys.stdout.flush()
    n += 1
