//! Gives the shared library SCR's soname, so programs link with -lscr, and compiles the C
//! half of SCR_Configf (a variadic function, which stable Rust cannot define).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libscr.so");
    println!("cargo:rerun-if-changed=src/configf.c");
    cc::Build::new()
        .file("src/configf.c")
        .warnings(true)
        .compile("scr_configf");
}
