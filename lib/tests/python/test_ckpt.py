"""An mpi4py program checkpointing through the scr module: restarts from the newest
checkpoint if there is one (verifying every byte), then writes CKPTS checkpoints; with
KILL_AFTER=t, rank 0 kills itself with SIGKILL right after checkpoint t completes."""
import os
import signal
import sys

from mpi4py import MPI
import scr

rank = MPI.COMM_WORLD.Get_rank()
ckpts = int(sys.argv[1]) if len(sys.argv) > 1 else 2


def payload(t):
    return bytes((rank + i + t) % 256 for i in range(4096))


# SCR v3.1's configuration calls, before init
scr.config("SCR_CHECKPOINT_INTERVAL=1")
assert scr.config("SCR_CHECKPOINT_INTERVAL") == "1", scr.config("SCR_CHECKPOINT_INTERVAL")
scr.init()
# the restart loop of SCR v3.1's own example: complete_restart() says whether every rank
# read its files; if not, have_restart() offers an older checkpoint. REFUSE_FIRST=1 makes
# rank 1 reject the first checkpoint offered.
start = 0
refuse = os.environ.get("REFUSE_FIRST") == "1"
name = None
while True:
    offered = scr.have_restart()
    if not offered:
        break
    restarted = scr.start_restart()
    assert restarted == offered, (restarted, offered)
    t = int(offered.split(".")[1])
    with open(scr.route_file(f"{offered}/rank_{rank}.dat"), "rb") as f:
        ok = f.read() == payload(t)
    if not ok:
        sys.exit(f"rank {rank}: {offered} failed verification")
    if refuse and rank == 1:
        ok = False
    completed = scr.complete_restart(ok)
    assert completed is (not refuse), (completed, refuse)
    if rank == 0:
        print(f"test_ckpt.py: complete_restart({offered}) returned {completed}", flush=True)
    if completed:
        name, start = offered, t
        break
    refuse = False
if name and rank == 0:
    print(f"test_ckpt.py: restarted from {name}, data verified", flush=True)
elif rank == 0:
    print("test_ckpt.py: no checkpoint, starting from the beginning", flush=True)

kill_after = int(os.environ.get("KILL_AFTER", "0"))
for t in range(start + 1, start + ckpts + 1):
    if not scr.need_checkpoint():
        continue
    dset = f"ckpt.{t}"
    scr.start_output(dset, scr.FLAG_CHECKPOINT)
    with open(scr.route_file(f"{dset}/rank_{rank}.dat"), "wb") as f:
        f.write(payload(t))
    completed = scr.complete_output(True)
    assert completed is True, completed
    if kill_after == t and rank == 0:
        print(f"test_ckpt.py: killed after {dset}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if scr.should_exit():
        break
if name:
    # the checkpoint restarted from is forgotten by name, the first one deleted
    scr.drop(name)
    scr.delete("ckpt.1")
scr.finalize()
if rank == 0:
    print("test_ckpt.py: done", flush=True)
