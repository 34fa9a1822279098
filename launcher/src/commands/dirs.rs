//! `scr prefix` (`scr_prefix`) and `scr list-dir` (`scr_list_dir`; 1.1-8's `scr_cntl_dir`):
//! where a job's prefix, control and cache directories are, for batch scripts.

use scr::layout;
use scr::params::{Params, Sources};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Print the prefix directory: SCR_PREFIX (environment or configuration), else the working directory"
)]
pub struct PrefixArgs {}

pub fn prefix(_: PrefixArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    match layout::prefix_dir(None, params.typed().places.prefix.as_deref()) {
        Ok(p) => {
            println!("{}", p.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("scr_prefix: ERROR: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Control,
    Cache,
}

#[derive(clap::Args)]
#[command(
    about = "Print the job's control or cache directories (space separated)",
    long_about = "Print <base>/<user>/scr.<jobid> for the control directory, or for every cache store \
                  (SCR_CACHE_BASE and the STORE of each CKPT descriptor), from SCR's configuration. \
                  The job id is the library's: SCR_JOB_ID, else the resource manager's, else \
                  defjobid. Prints INVALID and exits 1 when a name is not a directory name.\n\n\
                  As scr_cntl_dir (SCR 1.1-8) it prints the control directory, or with --cache the caches."
)]
pub struct ListDirArgs {
    /// User name (default: SCR_USER_NAME, else USER)
    #[arg(short = 'u', long)]
    user: Option<String>,
    /// Job id (default: SCR_JOB_ID, else SLURM_JOBID or SLURM_JOB_ID, else defjobid)
    #[arg(short = 'j', long)]
    jobid: Option<String>,
    /// Print only the base directories
    #[arg(short = 'b', long)]
    base: bool,
    /// (scr_cntl_dir) print the cache directories instead of the control directory
    #[arg(short = 'c', long, hide = true)]
    cache: bool,
    /// Which directories
    which: Option<Which>,
}

pub fn list_dir(args: ListDirArgs) -> scr::Result<ExitCode> {
    let which = args.which.unwrap_or(if args.cache {
        Which::Cache
    } else {
        Which::Control
    });
    let params = Params::load(&Sources::from_process())?;
    let settings = params.typed();
    let user = args.user.unwrap_or_else(layout::user_name);
    let jobid = args.jobid.unwrap_or_else(|| super::job_id(&params));
    let bases: Vec<String> = match which {
        Which::Control => vec![settings.places.cntl_base],
        Which::Cache => {
            let mut b = vec![settings.redundancy.cache_base];
            for d in params
                .descriptors_of("CKPT")
                .chain(params.descriptors_of("CKPTDESC"))
            {
                if let Some(s) = d.attr("STORE").or(d.attr("BASE"))
                    && !b.iter().any(|x| x == s)
                {
                    b.push(s.to_string());
                }
            }
            b
        }
    };
    if args.base {
        println!("{}", bases.join(" "));
        return Ok(ExitCode::SUCCESS);
    }
    let dirs: Vec<String> = match bases
        .iter()
        .map(|b| layout::job_dir(b.as_ref(), &user, &jobid).map(|d| d.display().to_string()))
        .collect::<scr::Result<_>>()
    {
        Ok(d) => d,
        Err(e) => {
            println!("INVALID");
            eprintln!("scr_list_dir: ERROR: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    println!("{}", dirs.join(" "));
    Ok(ExitCode::SUCCESS)
}
