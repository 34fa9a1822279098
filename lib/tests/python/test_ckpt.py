"""An mpi4py program checkpointing through the scr module: restarts from the newest
checkpoint if there is one (verifying every byte), then writes CKPTS checkpoints; with
KILL_AFTER=t, rank 0 kills itself with SIGKILL right after checkpoint t completes. A
checkpoint written by another number of ranks (offered with SCR_RESHAPE=1) is
re-partitioned: file i of its list (scr.restart_files) is read by rank i % size and checked
against its writer's bytes."""
import os
import signal
import sys

from mpi4py import MPI
import scr

rank = MPI.COMM_WORLD.Get_rank()
size = MPI.COMM_WORLD.Get_size()
ckpts = int(sys.argv[1]) if len(sys.argv) > 1 else 2


def payload(t, writer=None):
    writer = rank if writer is None else writer
    return bytes((writer + i + t) % 256 for i in range(4096))


def read_restart(offered, t):
    """Whether this rank's share of the restart verifies."""
    writers = scr.restart_writers()
    if writers == size:
        with open(scr.route_file(f"{offered}/rank_{rank}.dat"), "rb") as f:
            return f.read() == payload(t)
    files = scr.restart_files()
    mine = files[rank::size]
    ok = True
    for name in mine:
        writer = int(os.path.basename(name)[len("rank_"):-len(".dat")])
        with open(scr.route_file(name), "rb") as f:
            ok = ok and f.read() == payload(t, writer)
    print(f"test_ckpt.py: rank {rank} read {len(mine)} of the {len(files)} files "
          f"{writers} ranks wrote", flush=True)
    return ok


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
    ok = read_restart(offered, t)
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
