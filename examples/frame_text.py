"""How the Python examples read a frame message (protocol/PROTOCOL.md,
"frame"): the objects found with their positions, then each instance of a
tracked object ("track": true: id, position, velocity) and each blob of an
object that lists blobs ("blobs": K). A tracked object's blobs are its
instances seen in the frame: they are printed once, as instances.

    frame 17: red (641.5, 360.1), ball (101.0, 60.5)
      red blob at (640.2, 358.9), 2210 px
      ball #7 at (101.0, 60.5) moving (5.01, 0.20) px/frame
      ball #9 at (240.5, 66.0) moving (-4.98, -0.10) px/frame, lost for 2 frames
"""
import sys


def print_frame(seq, objects, markers=()):
    found = [f"{o['name']} ({o['cx']:.1f}, {o['cy']:.1f})" for o in objects if o["found"]]
    print(f"frame {seq}: {', '.join(found)}")
    for o in objects:
        for i in o.get("instances", []):
            lost = f", lost for {i['lost']} frames" if i["lost"] else ""
            print(f"  {o['name']} #{i['id']} at ({i['cx']:.1f}, {i['cy']:.1f}) moving "
                  f"({i['vx']:.2f}, {i['vy']:.2f}) px/frame{lost}")
        if "instances" not in o:
            for b in o.get("blobs", []):
                print(f"  {o['name']} blob at ({b['cx']:.1f}, {b['cy']:.1f}), {b['mass']} px")
    for m in markers:  # only when the objects file has "patterns"
        lost = f", lost for {m['lost']} frames" if m["lost"] else ""
        print(f"  marker {m['pattern']} {m['id']} at ({m['cx']:.1f}, {m['cy']:.1f}) heading "
              f"{m['heading']:.1f} deg, track {m['track_id']}{lost}")
    sys.stdout.flush()
