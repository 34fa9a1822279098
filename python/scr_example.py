"""A complete SCR program in Python: restart from the newest checkpoint SCR has, then
compute and checkpoint whenever SCR says to, and stop when SCR says the job should.

Run it under the same MPI this SCR was built with, for example:

    mpiexec -n 4 python3 scr_example.py [STEPS]

Each rank keeps one file per checkpoint, ``timestep_<t>/rank_<r>.txt``, holding its rank
and the timestep. A restart reads it back; if any rank cannot, complete_restart() returns
False and the loop asks SCR for an older checkpoint.
"""
import sys

from mpi4py import MPI
import scr

rank = MPI.COMM_WORLD.rank
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6


def file_of(timestep):
    return f"timestep_{timestep}/rank_{rank}.txt"


# parameters may be set before init(), as in a configuration file
scr.config("SCR_CHECKPOINT_INTERVAL=2")
scr.init()

# restart: try the checkpoints SCR offers, newest first, until every rank reads its file
timestep = 0
while True:
    name = scr.have_restart()
    if not name:
        break
    scr.start_restart()
    timestep = int(name.split("_", 1)[1])
    valid = True
    try:
        with open(scr.route_file(file_of(timestep))) as f:
            valid = f.read() == f"rank={rank} timestep={timestep}\n"
    except OSError:
        valid = False
    if scr.complete_restart(valid):
        if rank == 0:
            print(f"scr_example: restarted from {name}", flush=True)
        break
    timestep = 0

# compute, checkpointing when SCR asks for one
last = timestep + steps
while timestep < last:
    timestep += 1
    # ... one step of the computation ...
    if scr.need_checkpoint():
        name = f"timestep_{timestep}"
        scr.start_output(name, scr.FLAG_CHECKPOINT)
        valid = True
        try:
            with open(scr.route_file(file_of(timestep)), "w") as f:
                f.write(f"rank={rank} timestep={timestep}\n")
        except OSError:
            valid = False
        if scr.complete_output(valid) and rank == 0:
            print(f"scr_example: checkpoint {name} complete", flush=True)
    if scr.should_exit():
        if rank == 0:
            print("scr_example: SCR says the job should stop", flush=True)
        break

scr.finalize()
if rank == 0:
    print(f"scr_example: done at timestep {timestep}", flush=True)
