//! The C ABI of SCR v1.2/v2.0 (`include/scr.h`): 13 functions over one process-wide state.
//! No panic crosses this boundary; an error returns `SCR_FAILURE` (1) and prints one line
//! on stderr.

use crate::abort::{abort_job, abort_job_after};
use crate::runtime::Scr;
use std::ffi::{CStr, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

pub const SCR_SUCCESS: c_int = 0;
pub const SCR_FAILURE: c_int = 1;
pub const SCR_MAX_FILENAME: usize = 1024;

static STATE: Mutex<Process> = Mutex::new(Process {
    scr: None,
    life: Life::NotInitialized,
});

/// Where the process is in SCR's life, for calls that come before SCR_Init or after it
/// failed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Life {
    NotInitialized,
    /// SCR_ENABLE=0: every call fails without a word, as in SCR.
    Disabled,
    Running,
}

/// The process's SCR state. Open MPI's handles are pointers, so `Scr` is not `Send` there
/// (MPICH's are integers); the state lives in one static behind a mutex, and MPI handles
/// are process-wide, valid from any thread once MPI is initialized.
struct Process {
    scr: Option<Scr>,
    life: Life,
}
// SAFETY: every access goes through STATE's mutex; MPI handles are not tied to a thread.
unsafe impl Send for Process {}

/// Why a call cannot run: SCR is disabled (the call fails silently), or the error to print.
enum Failure {
    Disabled,
    Error(scr::Error),
}

impl From<scr::Error> for Failure {
    fn from(e: scr::Error) -> Self {
        Failure::Error(e)
    }
}

/// Runs `f` on the running state (a call before SCR_Init stops the job, as SCR's does;
/// with SCR_ENABLE=0 the call fails silently), turning errors into SCR_FAILURE with one
/// message. A panic is a bug that may leave this rank out of a collective the others are
/// in: it stops the job rather than return.
fn with_state(call: &str, f: impl FnOnce(&mut Scr) -> Result<c_int, Failure>) -> c_int {
    with_process(call, |process| match process.life {
        Life::Disabled => Err(Failure::Disabled),
        Life::NotInitialized => abort_job(&format!("Must call SCR_Init() before {call}()")),
        Life::Running => f(process
            .scr
            .as_mut()
            .expect("a running process has its state")),
    })
}

/// [`with_state`] on the whole process state (SCR_Init and SCR_Finalize change its life).
fn with_process(call: &str, f: impl FnOnce(&mut Process) -> Result<c_int, Failure>) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
        let rc = f(&mut guard);
        // what the call evicted is unlinked once it returns
        if let Some(scr) = guard.scr.as_mut() {
            scr.release_discards();
        }
        rc
    }));
    match result {
        Ok(Ok(rc)) => rc,
        Ok(Err(Failure::Disabled | Failure::Error(scr::Error::SaidByRoot { .. }))) => SCR_FAILURE,
        Ok(Err(Failure::Error(e))) => {
            say!("SCR: ERROR: {call}: {e}");
            SCR_FAILURE
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown");
            abort_job(&format!("{call}: internal error (panic: {what})"))
        }
    }
}

fn string_arg<'a>(p: *const c_char, what: &str) -> scr::Result<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller passes a NUL-terminated string, as scr.h documents.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(Some)
        .map_err(|_| scr::Error::refused(format!("{what} is not UTF-8")))
}

/// Copies `s` into a caller buffer of SCR_MAX_FILENAME bytes.
fn write_out(out: *mut c_char, s: &str) -> scr::Result<()> {
    if s.len() >= SCR_MAX_FILENAME {
        return Err(scr::Error::refused(format!(
            "{s} is longer than SCR_MAX_FILENAME"
        )));
    }
    if !out.is_null() {
        // SAFETY: scr.h requires a buffer of SCR_MAX_FILENAME bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, s.len());
            *out.add(s.len()) = 0;
        }
    }
    Ok(())
}

/// An output pointer the call cannot do without (a flag): NULL fails the call, after its
/// collective work so the other ranks are not left waiting.
fn required<T>(p: *mut T, what: &str) -> scr::Result<()> {
    if p.is_null() {
        return Err(scr::Error::refused(format!(
            "{what} is NULL; pass the address of a variable to receive it"
        )));
    }
    Ok(())
}

fn disabled() -> bool {
    std::env::var("SCR_ENABLE").is_ok_and(|v| v == "0")
}

/// `SCR_Init`. A failure stops the job with the error, as SCR's does: an application that
/// went on would run without checkpoints and exit 0. SCR_ENABLE=0 fails silently.
#[unsafe(no_mangle)]
pub extern "C" fn SCR_Init() -> c_int {
    with_process("SCR_Init", |process| {
        if process.life == Life::Running {
            return Err(scr::Error::refused(
                "SCR is already initialized; call SCR_Finalize before SCR_Init again",
            )
            .into());
        }
        if disabled() {
            process.life = Life::Disabled;
            return Err(Failure::Disabled);
        }
        // before any MPI call, each of which would crash such a process; every rank finds
        // the same and ends alike (MPI_Abort is one of those calls)
        if let Some(why) = crate::mpi_mix::two_mpis() {
            say!("SCR: ERROR: SCR_Init: {why}");
            std::process::exit(1);
        }
        match Scr::init() {
            Ok(scr) => {
                process.scr = Some(scr);
                process.life = Life::Running;
                Ok(SCR_SUCCESS)
            }
            Err(e) if e.is_disabled() => {
                process.life = Life::Disabled;
                Err(Failure::Disabled)
            }
            Err(e) => abort_job_after(&e),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Finalize() -> c_int {
    with_process("SCR_Finalize", |process| match process.life {
        Life::Disabled => Err(Failure::Disabled),
        Life::NotInitialized => abort_job("Must call SCR_Init() before SCR_Finalize()"),
        Life::Running => {
            process.life = Life::NotInitialized;
            let scr = process.scr.take().expect("a running process has its state");
            scr.finalize()?;
            Ok(SCR_SUCCESS)
        }
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Need_checkpoint(flag: *mut c_int) -> c_int {
    if !flag.is_null() {
        // SAFETY: caller passes a valid int pointer
        unsafe { *flag = 0 };
    }
    with_state("SCR_Need_checkpoint", |scr| {
        let yes = scr.need_checkpoint()?;
        required(flag, "the flag")?;
        // SAFETY: as above
        unsafe { *flag = c_int::from(yes) };
        Ok(SCR_SUCCESS)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Start_checkpoint() -> c_int {
    with_state("SCR_Start_checkpoint", |scr| {
        scr.start_output(None, crate::FLAG_CHECKPOINT)?;
        Ok(SCR_SUCCESS)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Complete_checkpoint(valid: c_int) -> c_int {
    complete_output("SCR_Complete_checkpoint", valid)
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Start_output(name: *const c_char, flags: c_int) -> c_int {
    with_state("SCR_Start_output", |scr| {
        let name = string_arg(name, "dataset name")?;
        scr.start_output(name, flags)?;
        Ok(SCR_SUCCESS)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Complete_output(valid: c_int) -> c_int {
    complete_output("SCR_Complete_output", valid)
}

fn complete_output(call: &str, valid: c_int) -> c_int {
    with_state(call, |scr| {
        let ok = scr.complete_output(valid != 0)?;
        Ok(if ok { SCR_SUCCESS } else { SCR_FAILURE })
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Route_file(name: *const c_char, file: *mut c_char) -> c_int {
    with_process("SCR_Route_file", |process| {
        let name = string_arg(name, "file name")?
            .ok_or_else(|| scr::Error::refused("SCR_Route_file needs a file name"))?;
        required(file, "the output buffer")?;
        // before SCR_Init (as in SCR) and with SCR disabled the name comes back unchanged:
        // the program reads and writes its files where it would without SCR
        let path = match process.scr.as_mut() {
            Some(scr) => scr.route_file(name)?,
            None => std::path::PathBuf::from(name),
        };
        write_out(file, &path.to_string_lossy())?;
        Ok(SCR_SUCCESS)
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Have_restart(flag: *mut c_int, name: *mut c_char) -> c_int {
    if !flag.is_null() {
        // SAFETY: caller passes a valid int pointer; a failed call says "no checkpoint"
        unsafe { *flag = 0 };
    }
    with_state("SCR_Have_restart", |scr| {
        let found = scr.have_restart()?;
        required(flag, "the flag")?;
        // SAFETY: caller passes a valid int pointer
        unsafe { *flag = c_int::from(found.is_some()) };
        // the name is optional, as in SCR
        if let Some(n) = found {
            write_out(name, &n)?;
        }
        Ok(SCR_SUCCESS)
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Start_restart(name: *mut c_char) -> c_int {
    with_state("SCR_Start_restart", |scr| {
        let n = scr.start_restart()?;
        write_out(name, &n)?;
        Ok(SCR_SUCCESS)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Complete_restart(valid: c_int) -> c_int {
    with_state("SCR_Complete_restart", |scr| {
        let ok = scr.complete_restart(valid != 0)?;
        Ok(if ok { SCR_SUCCESS } else { SCR_FAILURE })
    })
}

/// Writes `value` through an int pointer the caller passed.
fn write_int(out: *mut c_int, value: u64, what: &str) -> scr::Result<()> {
    required(out, what)?;
    let value = c_int::try_from(value)
        .map_err(|_| scr::Error::refused(format!("{what} {value} does not fit an int")))?;
    // SAFETY: checked non-NULL; the caller passes a valid int pointer
    unsafe { *out = value };
    Ok(())
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Restart_writers(ranks: *mut c_int) -> c_int {
    with_state("SCR_Restart_writers", |scr| {
        write_int(ranks, scr.restart_writers()?, "the number of ranks")?;
        Ok(SCR_SUCCESS)
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Restart_file_count(count: *mut c_int) -> c_int {
    with_state("SCR_Restart_file_count", |scr| {
        let n = scr.restart_files()?.len() as u64;
        write_int(count, n, "the number of files")?;
        Ok(SCR_SUCCESS)
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Restart_file_name(index: c_int, name: *mut c_char) -> c_int {
    with_state("SCR_Restart_file_name", |scr| {
        let files = scr.restart_files()?;
        let file = usize::try_from(index)
            .ok()
            .and_then(|i| files.get(i))
            .ok_or_else(|| {
                scr::Error::refused(format!(
                    "index {index} is not below the restart's {} files",
                    files.len()
                ))
            })?;
        write_out(name, &file.to_string_lossy())?;
        Ok(SCR_SUCCESS)
    })
}

/// # Safety
/// Pointers are NULL or valid as `scr.h` documents (output buffers of SCR_MAX_FILENAME bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Should_exit(flag: *mut c_int) -> c_int {
    if !flag.is_null() {
        // SAFETY: caller passes a valid int pointer; the flag is set whatever happens
        unsafe { *flag = 0 };
    }
    with_state("SCR_Should_exit", |scr| {
        let yes = scr.should_exit()?;
        required(flag, "the flag")?;
        // SAFETY: caller passes a valid int pointer
        unsafe { *flag = c_int::from(yes) };
        Ok(SCR_SUCCESS)
    })
}

static VERSION: &CStr = match CStr::from_bytes_with_nul(
    concat!(
        "SCR in Rust ",
        env!("CARGO_PKG_VERSION"),
        " (SCR v3.1 API)\0"
    )
    .as_bytes(),
) {
    Ok(v) => v,
    Err(_) => panic!("the version string holds no NUL but its last byte"),
};

#[unsafe(no_mangle)]
pub extern "C" fn SCR_Get_version() -> *const c_char {
    VERSION.as_ptr()
}

/// `SCR_Config` (SCR v3.1): `KEY=VALUE` sets and `KEY=` unsets (before `SCR_Init` only;
/// NULL is returned), `KEY` or `KEY=NAME ATTR` queries (before or after; the value in a
/// string the caller frees with `free()`, or NULL when unset). An error prints one line
/// and returns NULL.
///
/// # Safety
/// `config` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Config(config: *const c_char) -> *mut c_char {
    let line = match string_arg(config, "the SCR_Config argument") {
        Ok(Some(line)) => line,
        Ok(None) => {
            say!(
                "SCR: ERROR: SCR_Config: called with NULL; pass \"KEY=VALUE\", \"KEY=\" or \"KEY\""
            );
            return std::ptr::null_mut();
        }
        Err(e) => {
            say!("SCR: ERROR: SCR_Config: {e}");
            return std::ptr::null_mut();
        }
    };
    match config_line(line) {
        Ok(Some(value)) => malloc_string(&value),
        _ => std::ptr::null_mut(),
    }
}

/// One `SCR_Config` request (before SCR_Init a set, unset or query; after it a query);
/// an error is printed once, here.
pub(crate) fn config_line(line: &str) -> scr::Result<Option<String>> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
        match &guard.scr {
            Some(scr) => crate::config_api::after_init(scr.params(), line),
            None => crate::config_api::before_init(line),
        }
    }))
    .unwrap_or_else(|_| {
        Err(scr::Error::Config {
            origin: "SCR_Config".into(),
            what: "internal error (panic); the call failed".into(),
        })
    });
    if let Err(e) = &result {
        // (an error of the SCR_Config layer names it already; a call that set nothing
        // returns NULL as a set does, so the words say it)
        let e = e.to_string();
        let e = match e.starts_with("SCR_Config") {
            true => e,
            false => format!("SCR_Config: {e}"),
        };
        say!("SCR: ERROR: {e} (nothing was set)");
    }
    result
}

/// A copy of `s` the C caller frees with `free()`.
fn malloc_string(s: &str) -> *mut c_char {
    let Ok(c) = std::ffi::CString::new(s) else {
        return std::ptr::null_mut();
    };
    // SAFETY: strdup copies a NUL-terminated string into memory from malloc
    unsafe { libc::strdup(c.as_ptr()) }
}

/// Runs a call that takes a dataset name.
fn with_name(
    call: &str,
    name: *const c_char,
    f: impl FnOnce(&mut Scr, &str) -> scr::Result<()>,
) -> c_int {
    with_state(call, |scr| {
        let name = string_arg(name, "the dataset name")?.ok_or_else(|| scr::Error::Config {
            origin: call.into(),
            what: "called with a NULL name".into(),
        })?;
        f(scr, name)?;
        Ok(SCR_SUCCESS)
    })
}

/// `SCR_Current` (SCR v3.1): the checkpoint `name` is the one a restart loads.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Current(name: *const c_char) -> c_int {
    with_name("SCR_Current", name, Scr::set_current)
}

/// `SCR_Drop` (SCR v3.1): forgets dataset `name` in the index; its files stay.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Drop(name: *const c_char) -> c_int {
    with_name("SCR_Drop", name, Scr::drop_dataset)
}

/// `SCR_Delete` (SCR v3.1): removes dataset `name` from cache, prefix and index.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SCR_Delete(name: *const c_char) -> c_int {
    with_name("SCR_Delete", name, Scr::delete_dataset)
}
