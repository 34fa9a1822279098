"""SCR (Scalable Checkpoint/Restart) for Python MPI programs, over libscr through ctypes.

The functions follow SCR v3.1's ``scr`` module: import mpi4py first (SCR needs MPI
initialized), then ``scr.init()``. A failed call raises ``RuntimeError`` naming the SCR
function. libscr is found as ``$SCR_LIBRARY`` if set, else ``../../../lib/libscr.so`` from this
file (its place in an install prefix: ``<prefix>/share/scr/python``), else by the dynamic
linker (``LD_LIBRARY_PATH``).

    from mpi4py import MPI
    import scr
    scr.init()
    name = scr.have_restart()
    if name:
        scr.start_restart()
        path = scr.route_file("ckpt/rank_0.dat")
        ...
        scr.complete_restart(valid=True)
    if scr.need_checkpoint():
        scr.start_output("ckpt.1", scr.FLAG_CHECKPOINT)
        path = scr.route_file("ckpt.1/rank_0.dat")
        ...
        scr.complete_output(valid=True)
    scr.finalize()
"""

import ctypes
import os

FLAG_NONE = 0
FLAG_CHECKPOINT = 1
FLAG_OUTPUT = 2
MAX_FILENAME = 1024


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("SCR_LIBRARY"),
                  os.path.join(here, "..", "..", "..", "lib", "libscr.so"),
                  "libscr.so"]
    errors = []
    for path in candidates:
        if not path:
            continue
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("scr: cannot load libscr.so (set SCR_LIBRARY to its path, or add its "
                      "directory to LD_LIBRARY_PATH): " + "; ".join(errors))


_lib = _load()
_lib.SCR_Get_version.restype = ctypes.c_char_p
_lib.SCR_Config.restype = ctypes.c_void_p
_libc = ctypes.CDLL(None)


def _check(rc, function):
    if rc != 0:
        raise RuntimeError(f"{function} failed (return code {rc}); SCR printed why on stderr")


def _buffer():
    return ctypes.create_string_buffer(MAX_FILENAME)


def init():
    """SCR_Init: start SCR (after MPI is initialized)."""
    _check(_lib.SCR_Init(), "SCR_Init")


def finalize():
    """SCR_Finalize: flush what SCR_FLUSH asks for and stop SCR (before MPI_Finalize)."""
    _check(_lib.SCR_Finalize(), "SCR_Finalize")


def route_file(name):
    """SCR_Route_file: the path to write (in an output) or read (in a restart) ``name`` at."""
    out = _buffer()
    _check(_lib.SCR_Route_file(os.fsencode(name), out), "SCR_Route_file")
    return os.fsdecode(out.value)


def have_restart():
    """SCR_Have_restart: the name of the checkpoint a restart would load, or None."""
    flag = ctypes.c_int(0)
    name = _buffer()
    _check(_lib.SCR_Have_restart(ctypes.byref(flag), name), "SCR_Have_restart")
    return os.fsdecode(name.value) if flag.value else None


def start_restart():
    """SCR_Start_restart: begin reading the restart checkpoint; returns its name."""
    name = _buffer()
    _check(_lib.SCR_Start_restart(name), "SCR_Start_restart")
    return os.fsdecode(name.value)


def complete_restart(valid=True):
    """SCR_Complete_restart: every rank says whether it read its files; False on any rank
    makes SCR try an older checkpoint. Raises if the restart failed."""
    _check(_lib.SCR_Complete_restart(ctypes.c_int(1 if valid else 0)), "SCR_Complete_restart")


def need_checkpoint():
    """SCR_Need_checkpoint: whether to checkpoint now (SCR_CHECKPOINT_INTERVAL, _SECONDS,
    _OVERHEAD, or a halt)."""
    flag = ctypes.c_int(0)
    _check(_lib.SCR_Need_checkpoint(ctypes.byref(flag)), "SCR_Need_checkpoint")
    return bool(flag.value)


def start_checkpoint():
    """SCR_Start_checkpoint (SCR v2.0's form of start_output with FLAG_CHECKPOINT)."""
    _check(_lib.SCR_Start_checkpoint(), "SCR_Start_checkpoint")


def complete_checkpoint(valid=True):
    """SCR_Complete_checkpoint."""
    _check(_lib.SCR_Complete_checkpoint(ctypes.c_int(1 if valid else 0)),
           "SCR_Complete_checkpoint")


def start_output(name, flags=FLAG_CHECKPOINT):
    """SCR_Start_output: begin dataset ``name`` (FLAG_CHECKPOINT, FLAG_OUTPUT or both)."""
    _check(_lib.SCR_Start_output(os.fsencode(name), ctypes.c_int(flags)), "SCR_Start_output")


def complete_output(valid=True):
    """SCR_Complete_output: every rank says whether it wrote its files."""
    _check(_lib.SCR_Complete_output(ctypes.c_int(1 if valid else 0)), "SCR_Complete_output")


def should_exit():
    """SCR_Should_exit: whether the job should stop now (a halt condition or its time)."""
    flag = ctypes.c_int(0)
    _check(_lib.SCR_Should_exit(ctypes.byref(flag)), "SCR_Should_exit")
    return bool(flag.value)


def config(line):
    """SCR_Config: before init(), ``"KEY=VALUE"`` sets and ``"KEY="`` unsets; ``"KEY"`` or
    ``"CKPT=0 TYPE"`` returns the value in effect, or None. After init() only queries are
    allowed. Sets return None; a refused one prints why on stderr (query to check)."""
    answer = _lib.SCR_Config(os.fsencode(line))
    if not answer:
        return None
    try:
        return os.fsdecode(ctypes.string_at(answer))
    finally:
        _libc.free(ctypes.c_void_p(answer))


def current(name):
    """SCR_Current: make checkpoint ``name`` the one a restart loads."""
    _check(_lib.SCR_Current(os.fsencode(name)), "SCR_Current")


def drop(name):
    """SCR_Drop: forget dataset ``name`` in the index; its files stay."""
    _check(_lib.SCR_Drop(os.fsencode(name)), "SCR_Drop")


def delete(name):
    """SCR_Delete: remove dataset ``name`` from cache, prefix and index."""
    _check(_lib.SCR_Delete(os.fsencode(name)), "SCR_Delete")


def get_version():
    """SCR_Get_version."""
    return _lib.SCR_Get_version().decode()
