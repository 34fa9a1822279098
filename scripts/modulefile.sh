# The Lmod modulefile of an install, which scripts/install.sh writes to
# DIR/share/modulefiles/scr/<version>.lua (where sites keep a package's own):
#   modulefile PREFIX LIBDIR VERSION API_VERSION MPI   prints it.
# It sets no LD_LIBRARY_PATH: programs built with scr.pc, scrConfig.cmake or SCR's link
# lines carry an rpath, the Python module loads libscr by its path, and a library path
# would also redirect programs built against another SCR.
modulefile() {
  local prefix=$1 libdir=$2 version=$3 api_version=$4 mpi=$5
  lua_string() { printf '[==[%s]==]' "$1"; }
  cat <<EOF
-- SCR $version (built against $mpi), installed by scripts/install.sh:
--   module use $prefix/share/modulefiles
--   module load scr
help([[
SCR $version: Scalable Checkpoint/Restart for MPI applications, SCR v$api_version's API
(built against $mpi).
Run a job: scr-run srun ./app (or SCR's scr_srun); commands: scr help.
Defaults that differ from SCR v3.1 (man 7 scr): the cache is used (SCR_CACHE_BYPASS=0),
cache and control directories are in /tmp;
scr-run drains the cache at the end of a job.
Manuals: man 7 scr (concepts), man scr.conf (parameters), man scr-run (a page per command).
Build: mpicc app.c \$(pkg-config --cflags --libs scr); CMake: find_package(scr),
scr::scr or scr::scrf; Fortran: -lscrf; Python: import scr.
]])
whatis("Name: scr")
whatis("Version: $version")
whatis("Description: Scalable Checkpoint/Restart for MPI applications, SCR v$api_version's API (built against $mpi)")
whatis("URL: https://github.com/LLNL/scr")
local root = $(lua_string "$prefix")
prepend_path("PATH", pathJoin(root, "bin"))
-- man searches its system pages only while MANPATH is unset or has an empty entry: a
-- MANPATH this module creates ends in "::" so that man ls still works (and only that
-- entry is taken away again when the module unloads)
local man = pathJoin(root, "share/man")
local manpath = os.getenv("MANPATH") or ""
prepend_path("MANPATH", man)
if manpath == "" or (mode() == "unload" and manpath == man .. "::") then
  append_path("MANPATH", "")
end
prepend_path("PKG_CONFIG_PATH", $(lua_string "$libdir/pkgconfig"))
prepend_path("CMAKE_PREFIX_PATH", root)
prepend_path("PYTHONPATH", pathJoin(root, "share/scr/python"))
-- the install's root for Makefiles: SCR_ROOT, as sites' modules name a package's root
-- (Spack's {name}_ROOT), and SCR_INSTALL_DIR, the name SCR's user guide uses
setenv("SCR_ROOT", root)
setenv("SCR_INSTALL_DIR", root)
EOF
}
