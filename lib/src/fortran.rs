//! Fortran bindings with gfortran's conventions: lower-case names with a trailing
//! underscore, every argument by reference, an `IERROR` last, and the length of each
//! CHARACTER argument passed as a hidden trailing `size_t` (blank-padded, no NUL).

use crate::ffi::{self, SCR_FAILURE, SCR_MAX_FILENAME, SCR_SUCCESS};
use std::ffi::{CString, c_char, c_int};

/// A Fortran CHARACTER argument as a C string, trailing blanks removed.
///
/// # Safety
/// `s` points to `len` bytes.
unsafe fn from_fortran(s: *const c_char, len: usize) -> Option<CString> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller passes the hidden length of this CHARACTER argument.
    let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, len) };
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != 0)
        .map_or(0, |i| i + 1);
    CString::new(&bytes[..end]).ok()
}

/// Copies a C string result into a Fortran CHARACTER of `len`, blank-padded; fails when
/// it does not fit.
///
/// # Safety
/// `out` points to `len` writable bytes; `c` is NUL-terminated.
unsafe fn to_fortran(c: &[u8], out: *mut c_char, len: usize) -> c_int {
    let n = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    if n > len {
        say!(
            "SCR: ERROR: a result of {n} characters does not fit the {len}-character Fortran variable"
        );
        return SCR_FAILURE;
    }
    // SAFETY: `out` has `len` bytes and `n <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(c.as_ptr(), out as *mut u8, n);
        std::ptr::write_bytes(out.add(n) as *mut u8, b' ', len - n);
    }
    SCR_SUCCESS
}

/// Runs a C call that fills a SCR_MAX_FILENAME buffer, then copies the result into a
/// Fortran CHARACTER of `len` when the call succeeded.
///
/// # Safety
/// `out` points to `len` writable bytes.
unsafe fn with_string_result(
    out: *mut c_char,
    len: usize,
    call: impl FnOnce(*mut c_char) -> c_int,
) -> c_int {
    let mut buf = [0u8; SCR_MAX_FILENAME];
    let rc = call(buf.as_mut_ptr() as *mut c_char);
    if rc != SCR_SUCCESS {
        return rc;
    }
    // SAFETY: forwarded from the caller
    unsafe { to_fortran(&buf, out, len) }
}

/// # Safety
/// Arguments follow gfortran's calling convention (see the module documentation).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_init_(ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Init() };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_finalize_(ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Finalize() };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_need_checkpoint_(flag: *mut c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Need_checkpoint(flag) };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_start_checkpoint_(ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Start_checkpoint() };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_complete_checkpoint_(valid: *const c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Complete_checkpoint(*valid) };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_start_output_(
    name: *const c_char,
    flags: *const c_int,
    ierror: *mut c_int,
    name_len: usize,
) {
    unsafe {
        let name = from_fortran(name, name_len);
        let ptr = name
            .as_ref()
            .filter(|n| !n.is_empty())
            .map_or(std::ptr::null(), |n| n.as_ptr());
        *ierror = ffi::SCR_Start_output(ptr, *flags);
    }
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_complete_output_(valid: *const c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Complete_output(*valid) };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_route_file_(
    name: *const c_char,
    file: *mut c_char,
    ierror: *mut c_int,
    name_len: usize,
    file_len: usize,
) {
    unsafe {
        let Some(name) = from_fortran(name, name_len) else {
            *ierror = SCR_FAILURE;
            return;
        };
        *ierror = with_string_result(file, file_len, |buf| {
            ffi::SCR_Route_file(name.as_ptr(), buf)
        });
    }
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_have_restart_(
    flag: *mut c_int,
    name: *mut c_char,
    ierror: *mut c_int,
    name_len: usize,
) {
    unsafe {
        *ierror = with_string_result(name, name_len, |buf| ffi::SCR_Have_restart(flag, buf));
    }
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_start_restart_(
    name: *mut c_char,
    ierror: *mut c_int,
    name_len: usize,
) {
    unsafe {
        *ierror = with_string_result(name, name_len, |buf| ffi::SCR_Start_restart(buf));
    }
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_complete_restart_(valid: *const c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Complete_restart(*valid) };
}

/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_should_exit_(flag: *mut c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Should_exit(flag) };
}

/// `SCR_GET_VERSION(VERSION, IERROR)`, as SCR v3.1's guide documents it (its library has
/// no such routine): `SCR_Get_version`'s string, blank-padded; fails when it does not fit.
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_get_version_(
    version: *mut c_char,
    ierror: *mut c_int,
    version_len: usize,
) {
    // SAFETY: SCR_Get_version returns a static NUL-terminated string
    let c = unsafe { std::ffi::CStr::from_ptr(ffi::SCR_Get_version()) };
    unsafe { *ierror = to_fortran(c.to_bytes_with_nul(), version, version_len) };
}

/// `SCR_CONFIG(CONFIG, VAL, IERROR)` (SCR v3.1): sets, unsets or queries as `SCR_Config`;
/// VAL receives a query's value, blank-padded (all blanks when unset or for a set).
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_config_(
    config: *const c_char,
    val: *mut c_char,
    ierror: *mut c_int,
    config_len: usize,
    val_len: usize,
) {
    unsafe {
        let Some(config) = from_fortran(config, config_len) else {
            *ierror = SCR_FAILURE;
            return;
        };
        *ierror = match config.to_str().map(ffi::config_line) {
            Ok(Ok(answer)) => to_fortran(answer.unwrap_or_default().as_bytes(), val, val_len),
            _ => SCR_FAILURE,
        };
    }
}

/// Runs a C call that takes one name, from a Fortran CHARACTER.
///
/// # Safety
/// `name` points to `len` bytes; `ierror` is writable.
unsafe fn with_fortran_name(
    name: *const c_char,
    len: usize,
    ierror: *mut c_int,
    call: unsafe extern "C" fn(*const c_char) -> c_int,
) {
    unsafe {
        *ierror = match from_fortran(name, len) {
            Some(name) => call(name.as_ptr()),
            None => SCR_FAILURE,
        };
    }
}

/// `SCR_CURRENT(NAME, IERROR)` (SCR v3.1).
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_current_(name: *const c_char, ierror: *mut c_int, len: usize) {
    unsafe { with_fortran_name(name, len, ierror, ffi::SCR_Current) }
}

/// `SCR_DROP(NAME, IERROR)` (SCR v3.1).
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_drop_(name: *const c_char, ierror: *mut c_int, len: usize) {
    unsafe { with_fortran_name(name, len, ierror, ffi::SCR_Drop) }
}

/// `SCR_DELETE(NAME, IERROR)` (SCR v3.1).
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_delete_(name: *const c_char, ierror: *mut c_int, len: usize) {
    unsafe { with_fortran_name(name, len, ierror, ffi::SCR_Delete) }
}

/// `SCR_RESTART_WRITERS(RANKS, IERROR)`: how many ranks wrote the restart checkpoint.
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_restart_writers_(ranks: *mut c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Restart_writers(ranks) }
}

/// `SCR_RESTART_FILE_COUNT(COUNT, IERROR)`: how many files of the restart this rank may
/// route.
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_restart_file_count_(count: *mut c_int, ierror: *mut c_int) {
    unsafe { *ierror = ffi::SCR_Restart_file_count(count) }
}

/// `SCR_RESTART_FILE_NAME(INDEX, NAME, IERROR)`: the restart's file `INDEX` (from 1, as
/// Fortran counts), a path on the prefix.
///
/// # Safety
/// As [`scr_init_`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scr_restart_file_name_(
    index: *const c_int,
    name: *mut c_char,
    ierror: *mut c_int,
    name_len: usize,
) {
    unsafe {
        let index = if index.is_null() { 0 } else { *index - 1 };
        *ierror = with_string_result(name, name_len, |buf| ffi::SCR_Restart_file_name(index, buf));
    }
}
