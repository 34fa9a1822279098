//! The run's side of the database log: [`Sink`] hands each record to a worker thread of its
//! own, which connects and writes, so no caller ever waits on the server.

use super::*;

/// What the worker of a [`Sink`] is asked to do.
enum Work {
    /// Write one event of the text log (its kind, time and `key=value` fields).
    Record(String, DateTime<Local>, Vec<(String, String)>),
    /// Answer once everything asked before is written (or given up).
    Settle(mpsc::SyncSender<()>),
}

/// How many records may wait for a slow server before further ones are left to the text
/// log: a run's events are a few per checkpoint, so this is minutes of a stalled server.
const QUEUE: usize = 1024;

/// The database log of a run that must never cost it: a worker thread of its own connects
/// and writes, so no caller ever waits on the server (SCR_Init, a checkpoint's Complete);
/// every failure is said once (on stderr) and ends the database log for the rest of the
/// run; the caller's other logs go on.
pub struct Sink {
    queue: Arc<Mutex<Option<mpsc::SyncSender<Work>>>>,
    on: Arc<AtomicBool>,
    finished: Option<mpsc::Receiver<()>>,
    left_out: AtomicU64,
}

impl Sink {
    /// A sink that writes nothing.
    pub fn off() -> Sink {
        Sink {
            queue: Arc::new(Mutex::new(None)),
            on: Arc::new(AtomicBool::new(false)),
            finished: None,
            left_out: AtomicU64::new(0),
        }
    }

    /// Starts the worker that connects to `target` and registers the job of `user` named
    /// `jobname` (its prefix); returns at once. When that fails the worker says why once
    /// and the sink writes nothing.
    pub fn open(
        target: Result<Target, DbError>,
        user: &str,
        jobname: &str,
        start: DateTime<Local>,
    ) -> Sink {
        let target = match target {
            Ok(t) => t,
            Err(e) => {
                give_up(&e);
                return Sink::off();
            }
        };
        let (queue, work) = mpsc::sync_channel(QUEUE);
        let (done, finished) = mpsc::sync_channel(1);
        let on = Arc::new(AtomicBool::new(true));
        let (user, jobname, worker_on) = (user.to_string(), jobname.to_string(), on.clone());
        let spawned = std::thread::Builder::new()
            .name("scr-db-log".into())
            .spawn(move || {
                // the client's own failures end the database log, never the job
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    write_records(&target, &user, &jobname, start, &work, &worker_on)
                }));
                if let Err(e) = ran.unwrap_or_else(|_| Err(DbError::Panicked)) {
                    give_up(&e);
                }
                worker_on.store(false, Ordering::SeqCst);
                let _ = done.send(());
            });
        match spawned {
            Ok(_) => Sink {
                queue: Arc::new(Mutex::new(Some(queue))),
                on,
                finished: Some(finished),
                left_out: AtomicU64::new(0),
            },
            Err(e) => {
                give_up(&DbError::Thread(e));
                Sink::off()
            }
        }
    }

    /// Whether records still go to the database (as far as is known now: the worker may
    /// still be connecting; see [`Sink::settle`]).
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::SeqCst)
    }

    /// Hands one event of the text log (its kind, time and `key=value` fields) to the
    /// worker, which writes it as v3.1's rows: one in `events`, and one in `transfers`
    /// when it moved bytes. Never waits: with the worker that far behind, the event is
    /// left to the other logs.
    pub fn record(&self, kind: &str, time: DateTime<Local>, fields: &[(&str, String)]) {
        if !self.is_on() {
            return;
        }
        let fields = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        self.hand(Work::Record(kind.to_string(), time, fields));
    }

    fn hand(&self, work: Work) -> bool {
        match try_hand(&self.queue, work) {
            Some(Ok(())) => true,
            Some(Err(mpsc::TrySendError::Full(_))) => {
                self.left_out.fetch_add(1, Ordering::Relaxed);
                false
            }
            _ => false,
        }
    }

    /// Waits at most `within` for everything handed over so far to be written; whether the
    /// log is still on then.
    pub fn settle(&self, within: Duration) -> bool {
        settle_queue(&self.queue, within);
        self.is_on()
    }

    /// A way to wait for this sink's records from where the sink is not at hand (the
    /// process's exit), which never keeps the sink or its worker going.
    pub fn settler(&self) -> Settler {
        Settler(Arc::downgrade(&self.queue))
    }

    /// Ends the log: the worker writes what it was handed, for at most `within` more (a
    /// run ends no later for its database log); what it could not is said once.
    pub fn close(mut self, within: Duration) {
        self.finish(within);
    }

    fn finish(&mut self, within: Duration) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.take();
        }
        let Some(finished) = self.finished.take() else {
            return;
        };
        let waited = finished.recv_timeout(within);
        let left_out = self.left_out.load(Ordering::Relaxed);
        if waited.is_err() && self.is_on() {
            give_up(&DbError::Behind(format!(
                "still writing after {} s at the end of the run",
                within.as_secs_f64()
            )));
        } else if left_out > 0 {
            line_to(
                std::io::stderr().lock(),
                &format!(
                    "SCR: WARNING: {left_out} events were not written to the database log (its server was too slow); the other logs have them"
                ),
            );
        }
    }
}

/// Waits for a [`Sink`]'s records, while the sink is open, from anywhere ([`Sink::settler`]).
#[derive(Clone)]
pub struct Settler(Weak<Mutex<Option<mpsc::SyncSender<Work>>>>);

impl Settler {
    /// [`Sink::settle`], if the sink is still open.
    pub fn settle(&self, within: Duration) {
        if let Some(queue) = self.0.upgrade() {
            settle_queue(&queue, within);
        }
    }
}

/// Hands `work` to the worker behind `queue` without waiting; None once the sink closed.
fn try_hand(
    queue: &Mutex<Option<mpsc::SyncSender<Work>>>,
    work: Work,
) -> Option<Result<(), mpsc::TrySendError<Work>>> {
    let queue = queue.lock().ok()?;
    queue.as_ref().map(|q| q.try_send(work))
}

/// Waits at most `within` for the worker behind `queue` to write what it was handed.
fn settle_queue(queue: &Mutex<Option<mpsc::SyncSender<Work>>>, within: Duration) {
    let (answer, answered) = mpsc::sync_channel(1);
    if matches!(try_hand(queue, Work::Settle(answer)), Some(Ok(()))) {
        let _ = answered.recv_timeout(within);
    }
}

impl Drop for Sink {
    /// [`Sink::close`] within [`TIMEOUT`].
    fn drop(&mut self) {
        self.finish(TIMEOUT);
    }
}

/// How long the worker tries to get the server back after it went away mid-run (a restart
/// of the server, a failover), before the log goes off for the rest of the run.
const SERVER_BACK_WITHIN: Duration = Duration::from_secs(300);

/// The most records held while the server is away; later ones are left to the other logs.
const HELD_MOST: usize = 4096;

/// The worker of a [`Sink`]: connects, registers the job, then writes each record handed
/// over until the sink closes or a statement fails. A server that went away (a lost
/// connection, no answer) is tried again for [`SERVER_BACK_WITHIN`], the records handed
/// meanwhile held, in order, to be written when it is back.
fn write_records(
    target: &Target,
    user: &str,
    jobname: &str,
    start: DateTime<Local>,
    work: &mpsc::Receiver<Work>,
    on: &AtomicBool,
) -> Result<(), DbError> {
    let open = || Connection::open(target, true)?.register_job(user, jobname, start);
    let mut job = open()?;
    // what was handed and is not done yet, in order: records, and settles answered once
    // every record before them is written
    let mut held: std::collections::VecDeque<Work> = std::collections::VecDeque::new();
    for item in work.iter() {
        held.push_back(item);
        while let Some(next) = held.front() {
            let written = match next {
                Work::Record(kind, time, fields) => {
                    write_one(&mut job, kind, *time, fields, jobname)
                }
                Work::Settle(answer) => {
                    let _ = answer.try_send(());
                    Ok(())
                }
            };
            match written {
                Ok(()) => {
                    held.pop_front();
                }
                Err(e) if e.connection_lost() => match server_back(&open, work, &mut held) {
                    // the record that failed is written again: a server that went away
                    // mostly never ran it
                    Some(back) => job = back,
                    None => {
                        on.store(false, Ordering::SeqCst);
                        return Err(e);
                    }
                },
                Err(e) => {
                    on.store(false, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Writes one record as v3.1's rows.
fn write_one(
    job: &mut JobLog,
    kind: &str,
    time: DateTime<Local>,
    fields: &[(String, String)],
    jobname: &str,
) -> Result<(), DbError> {
    let fields: Vec<(&str, String)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let (event, transfer) = records::rows(kind, time, &fields, jobname);
    job.event(&event)
        .and_then(|()| transfer.map_or(Ok(()), |t| job.transfer(&t)))
}

/// The job's log on the server again, tried every few seconds for [`SERVER_BACK_WITHIN`];
/// the records handed meanwhile are `held` (at most [`HELD_MOST`]). None when the server
/// did not come back, or the sink closed meanwhile (its run ended: what is held is the
/// other logs').
fn server_back(
    open: &dyn Fn() -> Result<JobLog, DbError>,
    work: &mpsc::Receiver<Work>,
    held: &mut std::collections::VecDeque<Work>,
) -> Option<JobLog> {
    let given_up = std::time::Instant::now() + SERVER_BACK_WITHIN;
    let mut pause = Duration::from_secs(1);
    while std::time::Instant::now() < given_up {
        let until = std::time::Instant::now() + pause;
        loop {
            let now = std::time::Instant::now();
            if now >= until {
                break;
            }
            match work.recv_timeout(until - now) {
                // (one past the bound is left to the other logs)
                Ok(Work::Record(..)) if held.len() >= HELD_MOST => {}
                Ok(item) => held.push_back(item),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
        if let Ok(job) = open() {
            return Some(job);
        }
        pause = (pause * 2).min(Duration::from_secs(30));
    }
    None
}

/// Says on stderr why the database log stops, once a process.
fn give_up(e: &DbError) {
    // once a process: scr-run opens its log again at each run's bounds, and each attempt
    // would say the same
    static SAID: AtomicBool = AtomicBool::new(false);
    if SAID.swap(true, Ordering::SeqCst) {
        return;
    }
    line_to(
        std::io::stderr().lock(),
        &format!(
            "SCR: WARNING: database log off for the rest of this run: {e}; the other logs go on"
        ),
    );
}
