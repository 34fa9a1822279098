//! One MPI in one process. A program built with one MPI (its `mpicc`) and a libscr built
//! against another load both: the one loaded first takes the other's symbols, so libscr's
//! handles (MPICH's integers, Open MPI's pointers) reach a library that reads them as its
//! own, and the first MPI call crashes. SCR_Init looks before making any.

use std::path::Path;

/// The MPI a shared library belongs to, by its file name: MPICH's (`libmpich`, or
/// `libmpi.so.12`, MPICH's ABI name) or Open MPI's (`libmpi.so.40` and its `libopen-pal`).
fn family_of(file: &str) -> Option<&'static str> {
    let name = Path::new(file).file_name()?.to_str()?;
    if name.starts_with("libmpich") || name.starts_with("libmpi.so.12") {
        Some("MPICH")
    } else if name.starts_with("libopen-pal")
        || name.starts_with("libopen-rte")
        || name.starts_with("libmpi.so.4")
    {
        Some("Open MPI")
    } else {
        None
    }
}

/// The MPIs `maps` (the text of /proc/self/maps) shows loaded, each with one of its files,
/// in the order first seen.
fn families_in(maps: &str) -> Vec<(&'static str, String)> {
    let mut found: Vec<(&'static str, String)> = Vec::new();
    for file in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        if let Some(family) = family_of(file)
            && !found.iter().any(|(f, _)| *f == family)
        {
            found.push((family, file.to_string()));
        }
    }
    found
}

/// Why this process cannot use SCR, when it has loaded two MPIs.
pub(crate) fn two_mpis() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let found = families_in(&maps);
    let [(a, a_file), (b, b_file), ..] = found.as_slice() else {
        return None;
    };
    Some(format!(
        "this process has loaded two MPI libraries, {a} ({a_file}) and {b} ({b_file}): the program \
         and libscr were built against different MPIs, and one process can use only one. Build \
         the program with the MPI this SCR was installed for (`pkg-config --cflags --libs scr` \
         with that MPI's mpicc), or install SCR against the program's MPI \
         (scripts/install.sh --mpi openmpi or --mpi mpich)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mpis_are_told_apart_by_their_files() {
        let maps = "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.2\n\
                    7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libopen-pal.so.40\n\
                    7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libmpich.so.12.1\n\
                    7f03-7f04 rw-p 00000000 00:00 0\n\
                    7f04-7f05 r-xp 00000000 08:01 4 /opt/scr/lib/libscr.so\n";
        let found = families_in(maps);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, "Open MPI");
        assert_eq!(
            found[1],
            ("MPICH", "/usr/lib/x86_64-linux-gnu/libmpich.so.12.1".into())
        );
        let one = "7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libmpich.so.12\n\
                   7f03-7f04 r-xp 00000000 08:01 5 /usr/lib/x86_64-linux-gnu/libmpi.so.12\n";
        assert_eq!(families_in(one).len(), 1);
    }
}
