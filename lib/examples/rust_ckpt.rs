//! Example SCR application in Rust: restarts from the newest checkpoint when there is one
//! (verifying every byte), then writes checkpoints. Rank r's file in timestep t holds the
//! timestep (8 bytes, little endian) and then SIZE bytes that say where they belong: byte
//! i is byte i % 8 of the little-endian word (t << 56) ^ (r << 40) ^ (i / 8), as test_api.
//! A job of another size restarts too (with SCR_RESHAPE=1, which says this program
//! re-partitions): rank r reads the files of writers r, r + ranks, … from the list the
//! restart gives.
//! Run: mpiexec -n 4 target/debug/examples/rust_ckpt [SIZE [CKPTS]]

use mpi::traits::*;
use scr_runtime::Scr;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = mpi::initialize().ok_or("MPI is already initialized")?;
    let rank = universe.world().rank() as usize;
    let ranks = universe.world().size() as usize;
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let ckpts: u64 = args.next().map_or(Ok(2), |a| a.parse())?;
    let pattern = |t: u64, rank: usize| -> Vec<u8> {
        let mut v = t.to_le_bytes().to_vec();
        v.extend((0..size).map(|i| {
            let w = (t << 56) ^ ((rank as u64) << 40) ^ (i as u64 / 8);
            (w >> (8 * (i % 8))) as u8
        }));
        v
    };

    let mut scr = Scr::init()?;
    let mut start = 0;
    if let Some(mut restart) = scr.restart()? {
        let t: u64 = restart.name().trim_start_matches("ckpt.").parse()?;
        let writers = restart.writers()? as usize;
        // the files this rank may read, in the order of their writers
        let files = restart.files()?;
        let mine: Vec<usize> = if writers == ranks {
            vec![rank]
        } else {
            (rank..writers).step_by(ranks).collect()
        };
        let listed = |w: usize| {
            let want = std::path::Path::new(&format!("ckpt.{t}")).join(format!("rank_{w}.ckpt"));
            let at = if writers == ranks { 0 } else { w };
            files.get(at).is_some_and(|f| f.ends_with(&want))
        };
        let ok = files.len() == if writers == ranks { 1 } else { writers }
            && mine.iter().all(|&w| {
                listed(w)
                    && restart
                        .route(&format!("ckpt.{t}/rank_{w}.ckpt"))
                        .ok()
                        .and_then(|path| std::fs::read(path).ok())
                        .is_some_and(|b| b == pattern(t, w))
            });
        let name = restart.name().to_string();
        if !restart.complete(ok)? {
            return Err(format!("restart from {name} failed verification").into());
        }
        if rank == 0 {
            println!("rust_ckpt: restarted from {name} written by {writers} ranks, data verified");
        }
        start = t;
    } else if rank == 0 {
        println!("rust_ckpt: no checkpoint, starting from the beginning");
    }
    for t in start + 1..=start + ckpts {
        if !scr.need_checkpoint()? {
            continue;
        }
        let mut ckpt = scr.checkpoint(Some(&format!("ckpt.{t}")))?;
        // a rank that could not prepare its part still completes the checkpoint (invalid):
        // it is collective, and the other ranks' complete waits for this one's
        if let Some(why) = ckpt.unprepared() {
            eprintln!("rust_ckpt: rank {rank}: checkpoint {t}: {why}");
        }
        let ok = ckpt.unprepared().is_none()
            && ckpt
                .route(&format!("ckpt.{t}/rank_{rank}.ckpt"))
                .is_ok_and(|path| std::fs::write(&path, pattern(t, rank)).is_ok());
        if !ckpt.complete(ok)? {
            return Err(format!("checkpoint {t} failed").into());
        }
    }
    scr.finalize()?;
    if rank == 0 {
        println!("rust_ckpt: done");
    }
    Ok(())
}
