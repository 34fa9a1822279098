//! `SCR_Configf(format, ...)` (SCR v3.1), exported by libscr as SCR's header declares it.
//!
//! Rust cannot define a C variadic function on stable, so the formatting is C's
//! (`configf.c`, compiled into the library by the build script), and the exported symbol
//! is a one-instruction trampoline: a tail jump leaves every argument register, the
//! stack and the count of vector registers a variadic call sets where the caller put
//! them, so the C function reads the caller's arguments as if called directly.

use std::ffi::c_char;

unsafe extern "C" {
    /// `configf.c`: formats the line and calls `SCR_Config` with it.
    fn scr_configf_formatted(format: *const c_char, ...) -> *const c_char;
}

/// `SCR_Configf(format, ...)`: `SCR_Config` of the line `format` and the arguments after
/// it make, as printf formats them. The Rust signature names the first argument only;
/// the rest reach the C formatter untouched.
///
/// # Safety
/// As printf: `format` is a NUL-terminated format string and the arguments that follow
/// match it.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Configf(format: *const c_char) -> *const c_char {
    #[cfg(target_arch = "x86_64")]
    core::arch::naked_asm!("jmp {f}", f = sym scr_configf_formatted);
    #[cfg(target_arch = "aarch64")]
    core::arch::naked_asm!("b {f}", f = sym scr_configf_formatted);
}
