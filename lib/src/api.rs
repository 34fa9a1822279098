//! The Rust API: handles whose lifetimes make SCR's call order a compile-time matter. While
//! an [`Output`] or a [`Restart`] is open it borrows the [`Scr`] mutably, so nothing else
//! can be started; completing consumes the handle.

use crate::runtime::{FLAG_CHECKPOINT, Scr};
use scr::{Error, Result};
use std::path::PathBuf;

/// An open output or checkpoint dataset (`SCR_Start_output` … `SCR_Complete_output`).
/// Dropping it without [`Output::complete`] completes it as invalid (collectively, as the
/// C API would need every rank to do).
#[must_use = "complete the output, or it is discarded as invalid when dropped"]
pub struct Output<'a> {
    scr: &'a mut Scr,
    open: bool,
    unprepared: Option<Error>,
}

impl Output<'_> {
    /// Why this rank could not prepare the dataset (its filemap or cache directory could
    /// not be written), when it could not. The others are in the dataset all the same:
    /// complete it, and [`Output::complete`] answers false on every rank.
    pub fn unprepared(&self) -> Option<&Error> {
        self.unprepared.as_ref()
    }

    /// Where to write `name` (a path under the prefix, relative to the working directory or absolute).
    pub fn route(&mut self, name: &str) -> Result<PathBuf> {
        self.scr.route_file(name)
    }

    /// Completes the dataset; true when every rank's files were valid.
    pub fn complete(mut self, valid: bool) -> Result<bool> {
        self.open = false;
        self.scr.complete_output(valid)
    }
}

impl Drop for Output<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.scr.complete_output(false);
        }
    }
}

/// An open restart (`SCR_Start_restart` … `SCR_Complete_restart`); restart files can be
/// routed only while it lives.
#[must_use = "complete the restart, or it counts as failed when dropped"]
pub struct Restart<'a> {
    scr: &'a mut Scr,
    name: String,
    open: bool,
}

impl Restart<'_> {
    /// The dataset name given when it was written.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where to read `name` from.
    pub fn route(&mut self, name: &str) -> Result<PathBuf> {
        self.scr.route_file(name)
    }

    /// The files of the checkpoint this rank may route, as paths on the prefix: its own
    /// when the job has as many ranks as the one that wrote it ([`Restart::writers`]),
    /// every file of the checkpoint, in the writers' rank order, when it has not (any rank
    /// may then route any of them, and reads it in place; such a checkpoint is offered
    /// only to a program that sets SCR_RESHAPE=1).
    pub fn files(&self) -> Result<Vec<PathBuf>> {
        self.scr.restart_files()
    }

    /// How many ranks wrote the checkpoint.
    pub fn writers(&self) -> Result<u64> {
        self.scr.restart_writers()
    }

    /// Completes the restart; false when any rank failed, in which case the dataset is
    /// marked failed and [`Scr::restart`] offers the next older one.
    pub fn complete(mut self, valid: bool) -> Result<bool> {
        self.open = false;
        self.scr.complete_restart(valid)
    }
}

impl Drop for Restart<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.scr.complete_restart(false);
        }
    }
}

impl Scr {
    /// Starts a checkpoint dataset named `name` (or `scr.dataset.<id>`).
    pub fn checkpoint(&mut self, name: Option<&str>) -> Result<Output<'_>> {
        self.output(name, FLAG_CHECKPOINT)
    }

    /// Starts a dataset with SCR's flags (`FLAG_CHECKPOINT`, `FLAG_OUTPUT`).
    ///
    /// An error means no rank started it (a name SCR refuses, another dataset still open).
    /// A rank that could not prepare its part still gets the [`Output`], with
    /// [`Output::unprepared`] saying why: the dataset is collective, and the other ranks'
    /// Complete waits for this one's.
    pub fn output(&mut self, name: Option<&str>, flags: i32) -> Result<Output<'_>> {
        let started = self.start_output(name, flags);
        match started {
            Err(e) if !self.in_output() => Err(e),
            started => Ok(Output {
                scr: self,
                open: true,
                unprepared: started.err(),
            }),
        }
    }

    /// Starts restarting from the newest dataset available, if there is one.
    pub fn restart(&mut self) -> Result<Option<Restart<'_>>> {
        if self.have_restart()?.is_none() {
            return Ok(None);
        }
        let name = self.start_restart()?;
        Ok(Some(Restart {
            scr: self,
            name,
            open: true,
        }))
    }
}
