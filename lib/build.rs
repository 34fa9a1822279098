//! Gives the shared library SCR's soname, so programs link with -lscr.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libscr.so");
}
