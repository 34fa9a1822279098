"""SCR (Scalable Checkpoint/Restart) for Python MPI programs, over libscr through ctypes.

The functions follow SCR v3.1's ``scr`` module: import mpi4py first (SCR needs MPI
initialized), then ``scr.init()``. A failed call raises ``RuntimeError`` naming the SCR
function. libscr is ``$SCR_LIBRARY`` if set, else the library of the install this file
came from, by the absolute path ``scripts/install.sh`` writes into the copy it installs
(a copy of that copy, which ``pip install`` makes, loads it too), and nothing else: when it
is gone, importing fails naming it. The source tree's module, which no install wrote,
leaves libscr to the dynamic linker (``LD_LIBRARY_PATH``).

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
import sys

FLAG_NONE = 0
FLAG_CHECKPOINT = 1
FLAG_OUTPUT = 2
MAX_FILENAME = 1024


# The install's library directory, absolute: scripts/install.sh writes its --libdir here in
# the copy it installs. Never a path relative to this file: a copy of the module put in a
# directory others can write (three levels below a shared one) would load whatever library
# they left at that distance, before the install's own.
_INSTALL_LIBDIR = None


def _library():
    """The libscr to load and what to do when it does not load: ``$SCR_LIBRARY`` (the
    user's choice), else the install's by its absolute path, else (no install wrote this
    module) the dynamic linker's."""
    chosen = os.environ.get("SCR_LIBRARY")
    if chosen:
        return chosen, "SCR_LIBRARY names it: correct SCR_LIBRARY, or unset it"
    if _INSTALL_LIBDIR:
        return (os.path.join(_INSTALL_LIBDIR, "libscr.so"),
                f"this module ({__file__}) loads the libscr of the SCR install that wrote it "
                "and no other: reinstall SCR there, or set SCR_LIBRARY to a libscr.so")
    return "libscr.so", ("set SCR_LIBRARY to its path, or add its directory to "
                         "LD_LIBRARY_PATH")


def _on_library_path(name):
    """Where the dynamic linker would find ``name`` through LD_LIBRARY_PATH, if there."""
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


# Which MPI a shared library belongs to, by its file name: MPICH's (libmpich, or
# libmpi.so.12, MPICH's ABI name) or Open MPI's (libmpi.so.40 and its libopen-pal). Two of
# them in one process cannot share MPI_COMM_WORLD: a program whose mpi4py initialized one
# and whose libscr calls the other crashes in SCR_Init, and the one loaded first takes the
# other's symbols.
def _mpi_of(path):
    name = os.path.basename(path)
    if name.startswith("libmpich") or name.startswith("libmpi.so.12"):
        return "MPICH"
    if name.startswith(("libopen-pal", "libopen-rte")) or name.startswith("libmpi.so.4"):
        return "Open MPI"
    return None


def _needed(path):
    """The DT_NEEDED names of a 64-bit little-endian ELF shared object (its libraries)."""
    import mmap
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _needed_in(data)


def _needed_in(data):
    import struct
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for (_, kind, _, _, offset, size, link, _, _, entsize) in sections:
        if kind != 6 or not entsize:  # SHT_DYNAMIC
            continue
        strtab_offset = sections[link][4]
        for at in range(offset, offset + size, entsize):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                start = strtab_offset + value
                end = data.find(b"\0", start)
                if end < 0:
                    raise ValueError("a DT_NEEDED name runs past the end of the file")
                names.append(data[start:end].decode())
    return names


def _mpi_needed_by(path):
    try:
        return next((m for m in map(_mpi_of, _needed(path)) if m), None)
    except (OSError, ValueError, IndexError, __import__("struct").error):
        # not an ELF file this reads (truncated, odd): the MPI is found at SCR_Init instead
        return None


def _mpi4py_mpi():
    """The MPI mpi4py uses: asked when its MPI module is loaded, else read from that
    module's file, so a mismatch is found before libscr loads another MPI beside it."""
    module = sys.modules.get("mpi4py.MPI")
    if module is not None:
        try:
            version = module.Get_library_version()
        except Exception:
            return None
        return "Open MPI" if "Open MPI" in version else "MPICH" if "MPICH" in version else None
    try:
        import importlib.util
        spec = importlib.util.find_spec("mpi4py.MPI")
    except (ImportError, ValueError):
        return None
    return _mpi_needed_by(spec.origin) if spec and spec.origin else None


def _refuse_two_mpis(error, mpi4py_mpi, libscr_mpi, libscr_path, detail=""):
    raise error(
        f"scr: mpi4py uses {mpi4py_mpi} but libscr ({libscr_path}) was built against "
        f"{libscr_mpi}{detail}. One process can use only one MPI: install SCR against the MPI "
        "mpi4py uses (scripts/install.sh --mpi openmpi for Debian's python3-mpi4py), or use "
        "an mpi4py built against the MPI of this SCR (e.g. `MPICC=mpicc.mpich pip install "
        "--no-binary mpi4py mpi4py`).")


def _load():
    path, fix = _library()
    file = path if os.sep in path else _on_library_path(path)
    if file and os.path.exists(file):
        mpi4py_mpi, libscr_mpi = _mpi4py_mpi(), _mpi_needed_by(file)
        if mpi4py_mpi and libscr_mpi and mpi4py_mpi != libscr_mpi:
            _refuse_two_mpis(ImportError, mpi4py_mpi, libscr_mpi, file)
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
    except OSError as e:
        raise ImportError(f"scr: cannot load libscr {path} ({e}); {fix}") from None


def _mpi_libraries():
    """The MPI implementations loaded in this process: {name: a library file of it}."""
    found = {}
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6:
                    path = fields[5].strip()
                    mpi = _mpi_of(path)
                    if mpi and mpi not in found:
                        found[mpi] = path
    except OSError:
        pass
    return found


def _check_one_mpi(error=RuntimeError):
    """Refuses to start SCR in a process holding two MPIs (a library loaded after this
    module took another MPI in), naming both and the fix."""
    found = _mpi_libraries()
    if len(found) < 2:
        return
    mpi4py_mpi = _mpi4py_mpi()
    others = [m for m in found if m != mpi4py_mpi]
    if mpi4py_mpi in found and len(others) == 1:
        _refuse_two_mpis(error, mpi4py_mpi, others[0], _lib_path,
                         f" ({found[mpi4py_mpi]} and {found[others[0]]} are both loaded)")
    raise error(
        "scr: two MPI libraries are loaded in this process: "
        + ", ".join(f"{m} ({p})" for m, p in sorted(found.items()))
        + f"; libscr is {_lib_path}. One process can use only one MPI.")


_lib, _lib_path = _load()
_check_one_mpi(ImportError)
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
    _check_one_mpi()
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
    """SCR_Complete_restart: every rank says whether it read its files. Returns True when
    every rank read its files, False otherwise (then have_restart() offers an older
    checkpoint), as SCR v3.1's module does; it does not raise."""
    return _lib.SCR_Complete_restart(ctypes.c_int(1 if valid else 0)) == 0


def restart_writers():
    """How many ranks wrote the restart checkpoint (between start_restart and
    complete_restart)."""
    ranks = ctypes.c_int(0)
    _check(_lib.SCR_Restart_writers(ctypes.byref(ranks)), "SCR_Restart_writers")
    return ranks.value


def restart_files():
    """The files of the restart this rank may route, as paths on the prefix (between
    start_restart and complete_restart): its own when the job has as many ranks as the one
    that wrote the checkpoint, every file of it, in the writers' rank order, when it has
    not (any rank may then route any of them)."""
    count = ctypes.c_int(0)
    _check(_lib.SCR_Restart_file_count(ctypes.byref(count)), "SCR_Restart_file_count")
    names = []
    for i in range(count.value):
        name = _buffer()
        _check(_lib.SCR_Restart_file_name(ctypes.c_int(i), name), "SCR_Restart_file_name")
        names.append(os.fsdecode(name.value))
    return names


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
    """SCR_Complete_checkpoint (SCR v2.0's form of complete_output): True when complete."""
    return _lib.SCR_Complete_checkpoint(ctypes.c_int(1 if valid else 0)) == 0


def start_output(name, flags=FLAG_CHECKPOINT):
    """SCR_Start_output: begin dataset ``name`` (FLAG_CHECKPOINT, FLAG_OUTPUT or both)."""
    _check(_lib.SCR_Start_output(os.fsencode(name), ctypes.c_int(flags)), "SCR_Start_output")


def complete_output(valid=True):
    """SCR_Complete_output: every rank says whether it wrote its files. Returns True when
    the dataset is complete on every rank, False otherwise, as SCR v3.1's module does; it
    does not raise."""
    return _lib.SCR_Complete_output(ctypes.c_int(1 if valid else 0)) == 0


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
