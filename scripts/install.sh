#!/usr/bin/env bash
# Builds SCR in release mode and installs it under a prefix, as an HPC library is installed:
#
#   scripts/install.sh --prefix DIR [--mpi mpich|openmpi] [--config-file PATH] [--libdir DIR]
#                                                           build and install
#   scripts/install.sh --prefix DIR --uninstall             remove exactly what was installed
#
# Layout under DIR:
#   bin/                 scr, scr-run, and SCR's command names (scr_srun, scr_index, …) as links
#   lib/                 libscr.so (soname libscr.so), libscr.a, libscrf.so/.a (SCR's Fortran
#                        library: links to libscr, which carries the Fortran interface),
#                        pkgconfig/scr.pc; --libdir DIR puts them in DIR instead, as CMake's
#                        GNUInstallDirs does (relative to the prefix, e.g. lib64, or absolute
#                        inside it), and everything that names the directory follows
#   include/             scr.h, scrf.h
#   share/scr/cmake/     scrConfig.cmake, scrConfigVersion.cmake (targets scr::scr, scr::scr-static,
#                        scr::scrf, scr::scrf-static)
#   share/man/           man1: a page per command; man5: scr.conf (every parameter, generated
#                        from the parameter table); man7: scr (the concepts)
#   share/bash-completion/, share/zsh/  completions
#   share/scr/examples/  the C and Fortran examples with a Makefile for this prefix
#   share/scr/python/    the Python module (PYTHONPATH=DIR/share/scr/python, then import scr)
#   share/modulefiles/scr/VERSION.lua
#                        an Lmod modulefile: module use DIR/share/modulefiles; module load scr
#   etc/scr.conf.example
# Every file, link and directory created is listed in DIR/share/scr/install-manifest.txt,
# which --uninstall reads. MPICH is the default MPI; --mpi openmpi builds libscr against
# Open MPI (Debian's openmpi-bin and libopenmpi-dev) in its own target directory.
# --config-file PATH builds in where the system configuration is read (SCR's CMake option
# SCR_CONFIG_FILE); without it, /etc/scr.conf (or /etc/scr/scr.conf when only that exists).
# The build goes to CARGO_TARGET_DIR when it is set (Open MPI's to its openmpi/ below), else
# to target/: a build with a configuration path compiled in belongs in a directory of its
# own, not where others take target/release's library from.
set -euo pipefail
here=$(pwd)
cd "$(dirname "$0")/.."
src=$(pwd)
target_base=${CARGO_TARGET_DIR:-$src/target}
case $target_base in /*) ;; *) target_base=$here/$target_base ;; esac

usage() { echo "usage: scripts/install.sh --prefix DIR [--mpi mpich|openmpi] [--config-file PATH] [--libdir DIR] [--uninstall]" >&2; exit 2; }
prefix="" mpi=mpich uninstall=0 config_file="" libdir_arg=lib
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --mpi) [ $# -ge 2 ] || usage; mpi=$2; shift 2 ;;
    --mpi=*) mpi=${1#--mpi=}; shift ;;
    --config-file) [ $# -ge 2 ] || usage; config_file=$2; shift 2 ;;
    --config-file=*) config_file=${1#--config-file=}; shift ;;
    --libdir) [ $# -ge 2 ] || usage; libdir_arg=$2; shift 2 ;;
    --libdir=*) libdir_arg=${1#--libdir=}; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "install: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$prefix" ] || { echo "install: --prefix DIR is required" >&2; usage; }
case $prefix in /*) ;; *) prefix=$here/$prefix ;; esac
prefix=${prefix%/}
manifest=$prefix/share/scr/install-manifest.txt

if [ $uninstall -eq 1 ]; then
  [ -f "$manifest" ] || { echo "install: no $manifest: nothing installed there by this script" >&2; exit 1; }
  mapfile -t lines < "$manifest"
  for line in "${lines[@]}"; do
    case ${line#*$'\t'} in "$prefix"|"$prefix"/*) ;; *) echo "install: manifest entry outside $prefix: $line" >&2; exit 1 ;; esac
  done
  rm -f -- "$manifest"
  # files and links first, then directories deepest first, each only if empty: a user's
  # own files in them are kept
  for line in "${lines[@]}"; do
    [ "${line%%$'\t'*}" = dir ] || rm -f -- "${line#*$'\t'}"
  done
  printf '%s\n' "${lines[@]}" | grep $'^dir\t' | cut -f2 | sort -r | while read -r dir; do
    rmdir -- "$dir" 2>/dev/null || echo "install: kept $dir: it holds files not installed by SCR" >&2
  done
  echo "uninstalled SCR from $prefix"
  exit 0
fi

case $mpi in
  mpich) mpicc=mpicc.mpich mpif90=mpif90.mpich pc_requires=mpich target=$target_base ;;
  openmpi) mpicc=mpicc.openmpi mpif90=mpif90.openmpi pc_requires=ompi-c target=$target_base/openmpi ;;
  *) echo "install: --mpi must be mpich or openmpi, not '$mpi'" >&2; exit 2 ;;
esac
command -v "$mpicc" >/dev/null || {
  echo "install: $mpicc not found: run scripts/setup.sh (it installs MPICH and Open MPI)" >&2; exit 1; }
command -v cargo >/dev/null || [ ! -x "$HOME/.cargo/bin/cargo" ] || export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo >/dev/null || { echo "install: no Rust toolchain (cargo) found" >&2; exit 1; }
if [ -e "$manifest" ]; then
  echo "install: $prefix already holds an SCR install; run with --uninstall first" >&2; exit 1
fi

case $config_file in
  ""|/*) ;;
  *) echo "install: --config-file must be an absolute path, not '$config_file'" >&2; exit 2 ;;
esac
if [ -n "$config_file" ]; then export SCR_CONFIG_FILE=$config_file; else unset SCR_CONFIG_FILE; fi

# the library directory, as CMake's GNUInstallDirs takes CMAKE_INSTALL_LIBDIR: relative to
# the prefix, or absolute; it must be inside the prefix, since --uninstall removes nothing
# outside it and the installed files name it relative to the prefix
case $libdir_arg in
  "") echo "install: --libdir needs a directory (lib, lib64, …)" >&2; exit 2 ;;
  /*) libdir=$libdir_arg ;;
  *) libdir=$prefix/$libdir_arg ;;
esac
while [ "${libdir%/}" != "$libdir" ]; do libdir=${libdir%/}; done
case $libdir/ in
  */../*|*/./*|*//*) echo "install: --libdir '$libdir_arg' must not hold '.', '..' or empty components" >&2; exit 2 ;;
esac
case $libdir in
  "$prefix"/?*) ;;
  *) echo "install: --libdir '$libdir_arg' is not inside the prefix $prefix" >&2; exit 2 ;;
esac
libdir_rel=${libdir#"$prefix"/}
echo "install: building (release, $mpi${config_file:+, system configuration $config_file})"
# the library links MPI: it gets a target directory per MPI; the commands do not link MPI
MPICC=$mpicc CARGO_TARGET_DIR=$target cargo build --release --quiet -p scr-runtime --lib
CARGO_TARGET_DIR=$target_base cargo build --release --quiet -p scr-launcher
built_lib=$target/release built_bin=$target_base/release

entries=()
mkdirs() {
  local d
  for d in "$@"; do
    local missing=() p=$d
    while [ ! -d "$p" ]; do missing=("$p" "${missing[@]}"); p=$(dirname "$p"); done
    for p in "${missing[@]}"; do mkdir -- "$p"; entries+=("dir	$p"); done
  done
}
put() { # put MODE SOURCE DEST
  mkdirs "$(dirname "$3")"
  [ ! -e "$3" ] && [ ! -L "$3" ] || { echo "install: $3 exists already; not overwriting it" >&2; exit 1; }
  install -m "$1" -- "$2" "$3"
  entries+=("file	$3")
}
link() { # link TARGET DEST
  mkdirs "$(dirname "$2")"
  [ ! -e "$2" ] && [ ! -L "$2" ] || { echo "install: $2 exists already; not overwriting it" >&2; exit 1; }
  ln -s -- "$1" "$2"
  entries+=("link	$2")
}
write() { # write MODE DEST < text
  local tmp; tmp=$(mktemp); cat > "$tmp"; put "$1" "$tmp" "$2"; rm -f "$tmp"
}
save_manifest() {
  mkdirs "$(dirname "$manifest")"
  printf '%s\n' "${entries[@]}" > "$manifest"
}
trap 'save_manifest; echo "install: failed; what was installed so far is in $manifest (--uninstall removes it)" >&2' ERR

mkdirs "$prefix"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# the SCR API this implements (scr.h's SCR_VERSION): what build systems compare, so that a
# program's find_package(scr 3.1) or pkg-config --atleast-version=3.1 finds it
api_version=$(sed -n 's/^#define SCR_VERSION "v\(.*\)"/\1/p' lib/include/scr.h)

# commands: scr and scr-run, SCR's names as links to scr
put 755 "$built_bin/scr" "$prefix/bin/scr"
put 755 "$built_bin/scr-run" "$prefix/bin/scr-run"
links=$(mktemp -d)
"$built_bin/scr" install-links "$links" >/dev/null
for name in $(ls "$links"); do
  [ -e "$prefix/bin/$name" ] || link scr "$prefix/bin/$name"
done
rm -rf "$links"

# libraries: libscr.so is the real file (its soname is libscr.so). libscr carries SCR's
# Fortran interface (scr_init_, …) itself, so SCR's Fortran library libscrf is libscr under
# that name: `-lscrf` alone links a Fortran program, as SCR documents, shared or static.
# Links rather than copies: a program linked with -lscrf records libscr.so, so one copy of
# SCR's state is loaded however its C and Fortran parts were linked (-lscrf, -lscr, both),
# and a program linked against SCR's own libscrf.so still finds one by that name.
put 755 "$built_lib/libscr_runtime.so" "$libdir/libscr.so"
put 644 "$built_lib/libscr_runtime.a" "$libdir/libscr.a"
link libscr.so "$libdir/libscrf.so"
link libscr.a "$libdir/libscrf.a"
put 644 lib/include/scr.h "$prefix/include/scr.h"
put 644 lib/include/scrf.h "$prefix/include/scrf.h"

# what a static link of libscr.a needs besides MPI (rustc --print native-static-libs)
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

write 644 "$libdir/pkgconfig/scr.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/$libdir_rel
includedir=\${prefix}/include

Name: scr
Description: Scalable Checkpoint/Restart for MPI applications, SCR v$api_version's API (SCR in Rust $version, built against $mpi)
Version: $api_version
URL: https://github.com/LLNL/scr
Requires: $pc_requires
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lscr
Libs.private: $static_libs
EOF

mpicc_path=$(command -v "$mpicc")
mpif90_path=$(command -v "$mpif90" || echo "$mpif90")
cmake_static_libs=$(echo "$static_libs" | sed 's/-l//g; s/ /;/g')
write 644 "$prefix/share/scr/cmake/scrConfig.cmake" <<EOF
# CMake package for SCR (find_package(scr)): imported targets scr::scr (shared) and
# scr::scr-static, with MPI::MPI_C from the MPI libscr was built against ($mpi), and SCR's
# Fortran targets scr::scrf and scr::scrf-static (libscr carries the Fortran interface),
# which add MPI::MPI_Fortran when the project enables Fortran before find_package(scr).
include(CMakeFindDependencyMacro)
get_filename_component(_scr_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT MPI_C_COMPILER)
  set(MPI_C_COMPILER "$mpicc_path")
endif()
set(_scr_mpi_components C)
set(_scr_fortran_mpi "MPI::MPI_C")
if(CMAKE_Fortran_COMPILER_LOADED)
  if(NOT MPI_Fortran_COMPILER)
    set(MPI_Fortran_COMPILER "$mpif90_path")
  endif()
  list(APPEND _scr_mpi_components Fortran)
  set(_scr_fortran_mpi "MPI::MPI_Fortran;MPI::MPI_C")
endif()
find_dependency(MPI COMPONENTS \${_scr_mpi_components})
set(scr_INCLUDE_DIRS "\${_scr_prefix}/include")
set(scr_LIBRARIES scr::scr)
if(NOT TARGET scr::scr)
  add_library(scr::scr SHARED IMPORTED)
  set_target_properties(scr::scr PROPERTIES
    IMPORTED_LOCATION "\${_scr_prefix}/$libdir_rel/libscr.so"
    IMPORTED_SONAME "libscr.so"
    INTERFACE_INCLUDE_DIRECTORIES "\${_scr_prefix}/include"
    INTERFACE_LINK_LIBRARIES "MPI::MPI_C")
endif()
if(NOT TARGET scr::scr-static)
  add_library(scr::scr-static STATIC IMPORTED)
  set_target_properties(scr::scr-static PROPERTIES
    IMPORTED_LOCATION "\${_scr_prefix}/$libdir_rel/libscr.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_scr_prefix}/include"
    INTERFACE_LINK_LIBRARIES "MPI::MPI_C;$cmake_static_libs")
endif()
if(NOT TARGET scr::scrf)
  add_library(scr::scrf SHARED IMPORTED)
  set_target_properties(scr::scrf PROPERTIES
    IMPORTED_LOCATION "\${_scr_prefix}/$libdir_rel/libscrf.so"
    IMPORTED_SONAME "libscr.so"
    INTERFACE_INCLUDE_DIRECTORIES "\${_scr_prefix}/include"
    INTERFACE_LINK_LIBRARIES "\${_scr_fortran_mpi}")
endif()
if(NOT TARGET scr::scrf-static)
  add_library(scr::scrf-static STATIC IMPORTED)
  set_target_properties(scr::scrf-static PROPERTIES
    IMPORTED_LOCATION "\${_scr_prefix}/$libdir_rel/libscrf.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_scr_prefix}/include"
    INTERFACE_LINK_LIBRARIES "\${_scr_fortran_mpi};$cmake_static_libs")
endif()
set(scr_FOUND TRUE)
unset(_scr_prefix)
unset(_scr_mpi_components)
unset(_scr_fortran_mpi)
EOF
write 644 "$prefix/share/scr/cmake/scrConfigVersion.cmake" <<EOF
# The SCR API this implements (SCR in Rust $version): compatible when the requested version is
# not newer than $api_version and has the same major.
set(PACKAGE_VERSION "$api_version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^[0-9]+" _have_major "\${PACKAGE_VERSION}")
  if("\${PACKAGE_FIND_VERSION_MAJOR}" STREQUAL "" OR "\${PACKAGE_FIND_VERSION_MAJOR}" STREQUAL _have_major)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF

# man pages and completions, generated from the commands' own clap definitions, and
# scr.conf(5) from the parameter table, by the scr being installed (so it names the system
# configuration path built in); scr(7) is written by hand
docs=$(mktemp -d)
"$built_bin/scr" generate-docs --man "$docs/man1" --man5 "$docs/man5" \
  --completions "$docs/completions" >/dev/null
for page in "$docs"/man1/*.1; do put 644 "$page" "$prefix/share/man/man1/$(basename "$page")"; done
put 644 "$docs/man5/scr.conf.5" "$prefix/share/man/man5/scr.conf.5"
put 644 doc/scr.7 "$prefix/share/man/man7/scr.7"
for f in scr scr-run; do
  put 644 "$docs/completions/bash/$f" "$prefix/share/bash-completion/completions/$f"
  put 644 "$docs/completions/zsh/_$f" "$prefix/share/zsh/site-functions/_$f"
done
rm -rf "$docs"

# configuration example, examples, Python module
put 644 conf/scr.conf "$prefix/etc/scr.conf.example"
put 644 examples/c/test_api.c "$prefix/share/scr/examples/test_api.c"
put 644 examples/fortran/test_ckpt.F90 "$prefix/share/scr/examples/test_ckpt.F90"
write 644 "$prefix/share/scr/examples/Makefile" <<EOF
# Builds the examples against this SCR install ($mpi): make; then e.g. mpiexec -n 4 ./test_api
SCR_PREFIX_DIR ?= $prefix
SCR_LIBDIR ?= \$(SCR_PREFIX_DIR)/$libdir_rel
MPICC ?= $mpicc
MPIF90 ?= $mpif90
CPPFLAGS = -I\$(SCR_PREFIX_DIR)/include
LDLIBS = -L\$(SCR_LIBDIR) -Wl,-rpath,\$(SCR_LIBDIR) -lscr

all: test_api test_ckpt

test_api: test_api.c
	\$(MPICC) \$(CPPFLAGS) -O2 -o \$@ \$< \$(LDLIBS)

# Fortran: -lscrf, as SCR documents its Fortran link line
test_ckpt: test_ckpt.F90
	\$(MPIF90) \$(CPPFLAGS) -O2 -o \$@ \$< -L\$(SCR_LIBDIR) -Wl,-rpath,\$(SCR_LIBDIR) -lscrf

clean:
	rm -f test_api test_ckpt

.PHONY: all clean
EOF
# what SCR v3.1 installs for Python, in the same place: the module, setup.py (pip install
# of that directory), an example program and its README
for f in setup.py scr_example.py README.md; do
  put 644 "python/$f" "$prefix/share/scr/python/$f"
done
# the installed module loads this install's libscr and no other: the library directory
# goes into its copy as an absolute path, which a copy pip moves elsewhere keeps (a path
# relative to the module would load whatever is there in a directory a copy was put in)
py_string() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
module=$(mktemp) written=0
while IFS= read -r line || [ -n "$line" ]; do
  case $line in
    "_INSTALL_LIBDIR = "*)
      printf '_INSTALL_LIBDIR = %s\n' "$(py_string "$libdir")"; written=$((written + 1)) ;;
    *) printf '%s\n' "$line" ;;
  esac
done < python/scr.py > "$module"
if [ "$written" -ne 1 ]; then
  rm -f "$module"
  echo "install: python/scr.py lacks the _INSTALL_LIBDIR line the library directory goes into" >&2
  false
fi
put 644 "$module" "$prefix/share/scr/python/scr.py"
rm -f "$module"

# an Lmod modulefile (scripts/modulefile.sh says what it sets and why)
. scripts/modulefile.sh
# (write runs in this shell, not a pipeline's, so that the manifest records the file)
write 644 "$prefix/share/modulefiles/scr/$version.lua" \
  < <(modulefile "$prefix" "$libdir" "$version" "$api_version" "$mpi")

save_manifest
trap - ERR
echo "installed SCR $version ($mpi) in $prefix"
echo "  module use $prefix/share/modulefiles; module load scr"
echo "  or: PATH=$prefix/bin:\$PATH  MANPATH=$prefix/share/man:  PKG_CONFIG_PATH=$libdir/pkgconfig  CMAKE_PREFIX_PATH=$prefix"
