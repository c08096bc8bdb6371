//! One batch over several devices: the lanes are split into one contiguous shard per device,
//! each shard runs as an ordinary [`Batch`] on its device's own thread, and the results come
//! back in lane order, the same as on one device (a lane's result depends only on its own
//! inputs and seed, never on its neighbours).
//!
//! Host work stays spread: with several devices each shard's service runs in a rayon pool of
//! its own, an equal share of the host's cores, so one device's syscall service never waits
//! behind another's.
//!
//! A device that fails (its driver reports an error, or it runs out of memory in setup or
//! while running) loses only its shard's progress: those lanes are made again from their
//! spec and run on the devices that did not fail, after their own shards. Lanes are
//! deterministic, so a lane run twice gives the same result. When no device is left, the
//! lanes that could not run end as `Exit::Unsupported` with the device's error, and the rest
//! of the batch keeps its results.

use crate::engine::{feed_refusal, Batch, KernelIo, ProgressReader};
use crate::{Engine, Error};
use armada_core::batch::{DeviceShare, LaneResult, Progress};
use armada_core::runner::Lane;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Part of a batch that ran to its end on one device.
pub struct Shard<T> {
    /// The number of its first lane in the whole batch; its lanes follow in order.
    pub start: usize,
    /// Its engine's position in the engines given to [`run_sharded`].
    pub device: usize,
    /// What the caller's `finish` made of its batch (run, coverage collected), on the
    /// device's own thread, where the batch was then dropped.
    pub out: T,
}

/// Lanes that no device could run: every device had failed by their turn.
pub struct Lost {
    pub start: usize,
    pub count: usize,
    /// The last device failure they met.
    pub why: String,
}

/// What [`run_sharded`] gives back.
pub struct Sharded<T> {
    /// The shards that ran, ordered by their first lane.
    pub shards: Vec<Shard<T>>,
    /// Lanes no device could run (empty unless every device failed after some lanes ran).
    pub lost: Vec<Lost>,
    /// Each engine's share, in the order of the engines (figures of its batches included).
    pub shares: Vec<DeviceShare>,
}

/// How a sharded batch runs, besides its lanes.
pub struct ShardOptions<'a> {
    pub max_instructions: Option<u64>,
    pub io: KernelIo,
    /// Seconds it took to make the lanes (put in each batch's figures).
    pub spawn_s: f64,
    /// Called every 50 ms or so with the progress of the whole batch.
    pub progress: &'a (dyn Fn(Progress) + Sync),
    /// Set from outside to end the run between rounds: [`run_sharded`] then returns
    /// `Error::Device("interrupted")`.
    pub stop: &'a AtomicBool,
    /// A batch may hold fewer lanes at once than it has, each slot taking the next lane as
    /// one ends (`Batch::feed`): where the device runs out of memory, and with
    /// `ARMADA_GPU_SLOTS=N`. Only for callers that take the batch's `results`.
    pub feed: bool,
    /// How many of the engines are batches side by side on one device
    /// (`shards_on_one_device`): each may then hold at most that share of the device's
    /// memory in frames (`Batch::share_device`), 1 where each engine has a device.
    pub device_share: usize,
}

/// A batch's lanes waiting for a device: (first lane's number, the lanes, engine position).
type Piece = (usize, Vec<Box<Lane>>, usize);

/// A shard's progress, readable from the polling thread.
enum Live {
    /// While its batch lives: read from it.
    Running {
        reader: ProgressReader,
        done: Arc<AtomicUsize>,
    },
    /// Once it has ended: (lanes done, instructions retired).
    Ended(usize, u64),
}

impl Live {
    fn read(&self) -> (usize, u64) {
        match self {
            Live::Running { reader, done } => (done.load(Ordering::Relaxed), reader.retired()),
            Live::Ended(d, r) => (*d, *r),
        }
    }
}

/// A shard's batch once it has ended, from its device's thread.
struct Finished<T> {
    out: T,
    retired: u64,
    stats: Vec<(String, String)>,
}

/// Runs `lanes` (lane `i` of the batch at index `i`) over `engines`, one contiguous shard
/// each, and moves the lanes of a device that fails to the others; `respawn(i)` makes lane
/// `i` again for that. Each shard's batch, once run, goes to `finish` on its device's thread
/// (results are taken and the batch's memory freed there, in parallel). With one engine
/// this is an ordinary batch on its own thread.
pub fn run_sharded<T: Send>(
    engines: &[Engine],
    lanes: Vec<Box<Lane>>,
    respawn: &(dyn Fn(usize) -> Result<Box<Lane>, Error> + Sync),
    finish: &(dyn Fn(Batch) -> T + Sync),
    opts: &ShardOptions<'_>,
) -> Result<Sharded<T>, Error> {
    let total = lanes.len();
    let mut shares: Vec<DeviceShare> = engines
        .iter()
        .map(|e| DeviceShare {
            ordinal: e.ordinal(),
            name: e.describe(),
            ..Default::default()
        })
        .collect();
    let mut out = Sharded {
        shards: Vec::new(),
        lost: Vec::new(),
        shares: Vec::new(),
    };
    if total == 0 || engines.is_empty() {
        out.shares = shares;
        return Ok(out);
    }
    let mut alive: Vec<usize> = (0..engines.len()).collect();
    // pieces waiting for their device, in order; a wave runs the first of each device's
    let mut queue = split(0, lanes, &alive);
    // progress of lanes in shards that already ended, for the next wave's reports
    let mut base = (0usize, 0u64);
    let mut first_error: Option<Error> = None;
    // the fewest lanes each device ran out of memory with: a piece queued for it with as
    // many is split before it runs, not after it fails too
    let mut too_many: Vec<usize> = vec![usize::MAX; engines.len()];
    // the most lanes a batch on each device holds at once, the others waiting for slots
    let first_slots = std::env::var("ARMADA_GPU_SLOTS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| opts.feed && n > 0)
        .unwrap_or(usize::MAX);
    let mut slots: Vec<usize> = vec![first_slots; engines.len()];
    while !queue.is_empty() {
        let mut fitted = Vec::with_capacity(queue.len());
        for p in queue {
            let limit = too_many[p.2];
            halve_to(p, limit, &mut fitted);
        }
        queue = fitted;
        let mut pieces = Vec::new();
        let mut rest = Vec::new();
        for p in queue {
            if pieces.iter().any(|q: &Piece| q.2 == p.2) {
                rest.push(p);
            } else {
                pieces.push(p);
            }
        }
        queue = rest;
        let results = wave(
            engines,
            pieces,
            &slots,
            respawn,
            finish,
            opts,
            (base, total),
        );
        if opts.stop.load(Ordering::Relaxed) {
            return Err(Error::Device("interrupted".into()));
        }
        let mut failed: Vec<(usize, usize, String)> = Vec::new();
        for ran in results {
            let (start, count, device, secs, r) =
                (ran.start, ran.count, ran.device, ran.secs, ran.r);
            shares[device].seconds += secs;
            // (the piece ran out of memory and ran again with fewer lanes at once: the
            // device's later pieces start with as few)
            shares[device].waves += ran.ooms;
            slots[device] = slots[device].min(ran.held);
            match r {
                Ok(f) => {
                    let share = &mut shares[device];
                    share.lanes += count;
                    share.instructions += f.retired;
                    share.stats.push(f.stats);
                    base.0 += count;
                    base.1 += f.retired;
                    out.shards.push(Shard {
                        start,
                        device,
                        out: f.out,
                    });
                }
                // More lanes than the device holds at once, and they could not wait for
                // slots (`run_fed`): they run as smaller batches one after the other on it
                // (split again if need be): as many as the failed batch said fit, less a
                // tenth for lanes that grow further, else halves. Lanes are deterministic,
                // so running them again gives what they would have given; what the failed
                // batch ran is lost time, which the message says.
                Err(Error::OutOfMemory(m, fit)) if count >= 2 => {
                    shares[device].waves += 1;
                    let mut again = remake(start, count, respawn)?;
                    let parts = pieces_for(count, fit);
                    let sizes: Vec<usize> = (0..parts)
                        .map(|k| count * (k + 1) / parts - count * k / parts)
                        .collect();
                    eprintln!(
                        "armada: device {} ran out of memory with {count} lanes at once ({m}); \
                         running them as {parts} batches of {}{}, one after the other \
                         (fewer lanes a batch, or --lane-memory, avoids the lost time)",
                        engines[device].ordinal(),
                        sizes[0],
                        if sizes[parts - 1] != sizes[0] {
                            format!(" to {}", sizes[parts - 1])
                        } else {
                            String::new()
                        }
                    );
                    too_many[device] = too_many[device].min(count);
                    let mut front = Vec::with_capacity(parts);
                    let mut at = start;
                    for size in sizes {
                        let rest = again.split_off(size);
                        front.push((at, again, device));
                        again = rest;
                        at += size;
                    }
                    front.append(&mut queue);
                    queue = front;
                }
                Err(e) => {
                    let why = format!("device {}: {e}", engines[device].ordinal());
                    if engines[device].opts.verbose {
                        eprintln!("armada: {why}; its {count} lanes go to the other devices");
                    }
                    shares[device].failed.get_or_insert_with(|| e.to_string());
                    if first_error.is_none() {
                        // one device's error as it was; several devices' names the device
                        first_error = Some(if engines.len() == 1 {
                            e
                        } else {
                            Error::Device(why.clone())
                        });
                    }
                    alive.retain(|&d| d != device);
                    failed.push((start, count, why));
                }
            }
        }
        for (start, count, why) in failed {
            if alive.is_empty() {
                out.lost.push(Lost { start, count, why });
                continue;
            }
            let again = remake(start, count, respawn)?;
            queue.extend(split(start, again, &alive));
        }
        // (pieces still queued for a device that failed go to the others)
        let mut moved = Vec::new();
        for p in std::mem::take(&mut queue) {
            if alive.contains(&p.2) {
                queue.push(p);
            } else if alive.is_empty() {
                out.lost.push(Lost {
                    start: p.0,
                    count: p.1.len(),
                    why: "every device failed".into(),
                });
            } else {
                moved.extend(split(p.0, p.1, &alive));
            }
        }
        queue.extend(moved);
    }
    if out.shards.is_empty() {
        // nothing ran anywhere: the batch as a whole failed, as on one device
        return Err(first_error.unwrap_or_else(|| Error::Device("no device ran".into())));
    }
    out.shards.sort_by_key(|s| s.start);
    out.lost.sort_by_key(|l| l.start);
    out.shares = shares;
    Ok(out)
}

/// Into how many batches `count` lanes that ran out of memory go: enough that each holds at
/// most nine tenths of the `fit` lanes the failed batch said fit (lanes may grow past what the
/// largest held when it failed), and at least two.
fn pieces_for(count: usize, fit: Option<usize>) -> usize {
    let each = fit.map_or(count / 2, |f| (f - f / 10).max(1));
    count.div_ceil(each.max(1)).clamp(2, count)
}

/// How many of `held` lanes a batch that ran out of memory with them holds at once next:
/// half, or fewer where nine tenths of the `fit` it said fit is fewer (at least one). Half at
/// most, since `fit` counts what the lanes held when the device ran out, and lanes that
/// were still growing then fit fewer: on an H100, 32,768 Python lanes said 25,725, and
/// 16,372 when tried again.
fn slots_for(held: usize, fit: Option<usize>) -> usize {
    let half = held / 2;
    fit.map_or(half, |f| half.min(f - f / 10)).max(1)
}

/// `p` into `out`, halved (the first half first) until each part has fewer than `limit`
/// lanes, or one.
fn halve_to<T>(p: (usize, Vec<T>, usize), limit: usize, out: &mut Vec<(usize, Vec<T>, usize)>) {
    let (start, mut lanes, device) = p;
    if lanes.len() < limit || lanes.len() < 2 {
        out.push((start, lanes, device));
        return;
    }
    let half = lanes.len() / 2;
    let second = lanes.split_off(half);
    halve_to((start, lanes, device), limit, out);
    halve_to((start + half, second, device), limit, out);
}

/// Whether `lanes` may not run `held` at a time, the others waiting for slots
/// (`feed_refusal`).
fn refused(lanes: &[(usize, Box<Lane>)], held: usize) -> bool {
    let held = held.min(lanes.len());
    let all: Vec<&Lane> = lanes.iter().map(|(_, l)| &**l).collect();
    feed_refusal(&all[..held], &all[held..]).is_some()
}

/// Lanes `start + n` for each `n` of `these` made again (in parallel), with their `n`.
fn remake_these(
    start: usize,
    these: &[usize],
    respawn: &(dyn Fn(usize) -> Result<Box<Lane>, Error> + Sync),
) -> Result<Vec<(usize, Box<Lane>)>, Error> {
    use rayon::prelude::*;
    these
        .par_iter()
        .map(|&n| respawn(start + n).map(|l| (n, l)))
        .collect()
}

/// Lanes `start..start+count` made again (in parallel).
fn remake(
    start: usize,
    count: usize,
    respawn: &(dyn Fn(usize) -> Result<Box<Lane>, Error> + Sync),
) -> Result<Vec<Box<Lane>>, Error> {
    use rayon::prelude::*;
    (start..start + count)
        .into_par_iter()
        .map(respawn)
        .collect()
}

/// `lanes` (the first numbered `start`) in contiguous pieces, one per device of `devices`,
/// as equal as can be; devices past the last lane get none.
fn split<T>(start: usize, mut lanes: Vec<T>, devices: &[usize]) -> Vec<(usize, Vec<T>, usize)> {
    let n = lanes.len();
    let k = devices.len().max(1);
    let mut pieces = Vec::with_capacity(k);
    // the first n % k pieces take one lane more; cut from the back so each cut is cheap
    let mut bounds = Vec::with_capacity(k + 1);
    let mut at = 0;
    for d in 0..k {
        bounds.push(at);
        at += n / k + usize::from(d < n % k);
    }
    for d in (0..k).rev() {
        let tail = lanes.split_off(bounds[d]);
        if !tail.is_empty() {
            pieces.push((start + bounds[d], tail, devices[d]));
        }
    }
    pieces.reverse();
    pieces
}

/// One result of a wave.
struct Ran<T> {
    /// The piece's first lane, its lanes, its engine's position.
    start: usize,
    count: usize,
    device: usize,
    /// Its wall seconds and its batch.
    secs: f64,
    r: Result<Finished<T>, Error>,
    /// The most lanes it held at once, and the times it ran out of memory and ran again
    /// with fewer (`run_fed`).
    held: usize,
    ooms: usize,
}

/// Runs each piece on its device's thread at once (`run_fed`, `slots` the most lanes each
/// device's batch holds at once), reporting progress from this thread until all have ended
/// (`base`: lanes ended and instructions retired before this wave; `total`: the batch's
/// lanes).
fn wave<T: Send>(
    engines: &[Engine],
    pieces: Vec<Piece>,
    slots: &[usize],
    respawn: &(dyn Fn(usize) -> Result<Box<Lane>, Error> + Sync),
    finish: &(dyn Fn(Batch) -> T + Sync),
    opts: &ShardOptions<'_>,
    (base, total): ((usize, u64), usize),
) -> Vec<Ran<T>> {
    let k = pieces.len();
    let live: Vec<Mutex<Option<Live>>> = (0..k).map(|_| Mutex::new(None)).collect();
    // with several devices, each gets its own pool: an equal share of the host's threads
    let threads = (rayon::current_num_threads() / k).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .into_iter()
            .zip(&live)
            .map(|((start, lanes, device), slot)| {
                let engine = &engines[device];
                let count = lanes.len();
                let ordinal = engine.ordinal();
                let h = s.spawn(move || {
                    let t = Instant::now();
                    let held = slots[device];
                    let run = || run_fed(engine, (start, lanes), held, respawn, finish, opts, slot);
                    let r = if k > 1 {
                        match rayon::ThreadPoolBuilder::new()
                            .num_threads(threads)
                            .thread_name(move |i| format!("armada-dev{ordinal}-{i}"))
                            .build()
                        {
                            Ok(pool) => pool.install(run),
                            Err(e) => (
                                Err(Error::Device(format!(
                                    "cannot start the host threads for its service: {e}"
                                ))),
                                held,
                                0,
                            ),
                        }
                    } else {
                        run()
                    };
                    (t.elapsed().as_secs_f64(), r)
                });
                (start, count, device, h)
            })
            .collect();
        let report = || {
            let mut done = base.0;
            let mut retired = base.1;
            for slot in &live {
                if let Some(l) = &*slot.lock().unwrap_or_else(|p| p.into_inner()) {
                    let (d, r) = l.read();
                    done += d;
                    retired += r;
                }
            }
            (opts.progress)(Progress {
                lanes_done: done,
                lanes: total,
                instructions: retired,
            });
        };
        while !handles.iter().all(|(_, _, _, h)| h.is_finished()) {
            report();
            std::thread::sleep(Duration::from_millis(50));
        }
        report();
        handles
            .into_iter()
            .map(|(start, count, device, h)| {
                let (secs, (r, held, ooms)) = h.join().unwrap_or_else(|_| {
                    let e = Error::Device("its batch thread panicked".into());
                    (0.0, (Err(e), slots[device], 0))
                });
                Ran {
                    start,
                    count,
                    device,
                    secs,
                    r,
                    held,
                    ooms,
                }
            })
            .collect()
    })
}

/// A piece run on its device's thread (`run_piece`) holding at most `held` lanes at once;
/// where the device runs out of memory and the lanes may wait for slots, run again at once
/// with fewer (`slots_for`), so the other pieces of the wave (another batch on the device)
/// never wait for it. Returns the batch, the most lanes it held at once at the end, and the
/// times it ran out of memory and ran again. Lanes are deterministic, so running them again
/// gives what they would have given; what the failed batch ran is lost time, which the
/// message says.
fn run_fed<T>(
    engine: &Engine,
    piece: (usize, Vec<Box<Lane>>),
    mut held: usize,
    respawn: &(dyn Fn(usize) -> Result<Box<Lane>, Error> + Sync),
    finish: &(dyn Fn(Batch) -> T + Sync),
    opts: &ShardOptions<'_>,
    slot: &Mutex<Option<Live>>,
) -> (Result<Finished<T>, Error>, usize, usize) {
    let (start, lanes) = piece;
    let count = lanes.len();
    let mut lanes: Vec<(usize, Box<Lane>)> = lanes.into_iter().enumerate().collect();
    // results of lanes that ended in a batch that then ran out of memory
    let mut kept: Vec<LaneResult> = Vec::new();
    let mut ooms = 0;
    let mut share = opts.device_share;
    loop {
        let left = lanes.len();
        let (r, ended) = run_piece(engine, lanes, kept, (held, share), finish, opts, slot);
        let Err(Error::OutOfMemory(m, fit)) = &r else {
            return (r, held, ooms);
        };
        let at_once = left.min(held);
        let mut each = slots_for(at_once, *fit);
        // a batch that cannot hold fewer lanes, held back by its share of the device: once
        // more with the whole device (what the batches beside it leave)
        let unshare = share > 1
            && m.contains(crate::engine::SHARE_REFUSED)
            && (!opts.feed || count < 2 || each >= at_once);
        if unshare {
            share = 1;
            each = at_once;
        } else if !opts.feed || count < 2 || each >= at_once {
            return (r, held, ooms);
        }
        kept = ended.unwrap_or_default();
        let mut done = vec![false; count];
        for r in &kept {
            done[r.lane] = true;
        }
        let todo: Vec<usize> = (0..count).filter(|&n| !done[n]).collect();
        let again = match remake_these(start, &todo, respawn) {
            Ok(a) => a,
            Err(e) => return (Err(e), held, ooms),
        };
        let each = each.min(todo.len()).max(1);
        if !unshare && refused(&again, each) {
            return (r, held, ooms);
        }
        let (how, advice) = if unshare {
            ("again with what the device has".to_string(), "")
        } else {
            (
                format!("{each} at a time, each taking the slot of a lane that ended"),
                "; fewer lanes at once, or --lane-memory, avoids the lost time",
            )
        };
        eprintln!(
            "armada: device {} ran out of memory with {at_once} lanes at once ({m}); running \
             the {} lanes left {how} ({} lanes' results kept{advice})",
            engine.ordinal(),
            todo.len(),
            kept.len(),
        );
        held = each;
        lanes = again;
        ooms += 1;
    }
}

/// One piece's batch, set up, run to its end, its coverage collected and given to
/// `finish`; `slot` shows its progress. It holds at most `held` lanes at once where the
/// others may wait for their slots (`Batch::feed`), else all; and at most a `share`th of its
/// device's memory (`Batch::share_device`).
fn run_piece<T>(
    engine: &Engine,
    mut lanes: Vec<(usize, Box<Lane>)>,
    kept: Vec<LaneResult>,
    (held, share): (usize, usize),
    finish: &(dyn Fn(Batch) -> T + Sync),
    opts: &ShardOptions<'_>,
    slot: &Mutex<Option<Live>>,
) -> (Result<Finished<T>, Error>, Option<Vec<LaneResult>>) {
    // (a batch that may feed its slots takes each lane's result as it ends, whether or not
    // lanes wait, so that one that runs out of memory keeps those)
    let feedable = opts.feed && !refused(&lanes, held);
    let waiting = if feedable && held < lanes.len() {
        lanes.split_off(held)
    } else {
        Vec::new()
    };
    let (first, lanes): (Vec<usize>, Vec<Box<Lane>>) = lanes.into_iter().unzip();
    let mut b = match engine.batch_with(lanes, opts.max_instructions, opts.io) {
        Ok(b) => b,
        // (nothing ran: what an earlier batch kept stays kept)
        Err(e) => return (Err(e), Some(kept)),
    };
    b.share_device(share);
    if feedable || !kept.is_empty() {
        if let Err(e) = b.feed(first, waiting, kept) {
            return (Err(e), None);
        }
    }
    b.stats.spawn_s = opts.spawn_s;
    let show = |v: Option<Live>| *slot.lock().unwrap_or_else(|p| p.into_inner()) = v;
    show(Some(Live::Running {
        reader: b.progress_reader(),
        done: b.done.clone(),
    }));
    let ran = (|| {
        b.bind()?;
        while b.round(&|_| {})? {
            if opts.stop.load(Ordering::Relaxed) {
                return Err(Error::Device("interrupted".into()));
            }
        }
        b.collect_coverage()
    })();
    if let Err(e) = ran {
        // the reader points into the batch's memory: forget it before the batch goes
        show(None);
        let ended = b.take_ended();
        return (Err(e), ended);
    }
    let retired = b.retired_all();
    show(Some(Live::Ended(b.lanes_all(), retired)));
    let stats = b.stats_list();
    (
        Ok(Finished {
            out: finish(b),
            retired,
            stats,
        }),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (first lane, lanes, device) of each piece of lanes 10.. split over `devices`.
    fn pieces(n: usize, devices: &[usize]) -> Vec<(usize, Vec<usize>, usize)> {
        split(10, (10..10 + n).collect(), devices)
    }

    #[test]
    fn pieces_too_large_are_halved_in_order() {
        let mut out = Vec::new();
        halve_to((100, (0..10).collect::<Vec<usize>>(), 3), 4, &mut out);
        let got: Vec<(usize, Vec<usize>, usize)> = out;
        assert_eq!(
            got,
            vec![
                (100, vec![0, 1], 3),
                (102, vec![2, 3, 4], 3),
                (105, vec![5, 6], 3),
                (107, vec![7, 8, 9], 3)
            ]
        );
        let mut one = Vec::new();
        halve_to((0, vec![7], 0), 1, &mut one);
        assert_eq!(one, vec![(0, vec![7], 0)]);
    }

    #[test]
    fn batches_that_ran_out_split_by_what_fit() {
        // 65,536 lanes of which about 20,000 fit: batches of at most 18,000
        assert_eq!(pieces_for(65_536, Some(20_000)), 4);
        // no estimate: halves
        assert_eq!(pieces_for(65_536, None), 2);
        // an estimate of more than the batch still splits it, in two
        assert_eq!(pieces_for(100, Some(1_000)), 2);
        // nothing fit, or one: one lane a batch at most
        assert_eq!(pieces_for(5, Some(0)), 5);
        assert_eq!(pieces_for(5, Some(1)), 5);
        assert_eq!(pieces_for(2, None), 2);
    }

    #[test]
    fn split_is_contiguous_and_even() {
        assert_eq!(
            pieces(7, &[0, 1, 2]),
            vec![
                (10, vec![10, 11, 12], 0),
                (13, vec![13, 14], 1),
                (15, vec![15, 16], 2)
            ]
        );
        assert_eq!(
            pieces(4, &[3, 1]),
            vec![(10, vec![10, 11], 3), (12, vec![12, 13], 1)]
        );
        // fewer lanes than devices: the last devices get none
        assert_eq!(pieces(1, &[0, 1]), vec![(10, vec![10], 0)]);
        assert!(pieces(0, &[0, 1]).is_empty());
        for n in 0..40 {
            for k in 1..6 {
                let devices: Vec<usize> = (0..k).collect();
                let all: Vec<usize> = pieces(n, &devices).into_iter().flat_map(|p| p.1).collect();
                assert_eq!(all, (10..10 + n).collect::<Vec<_>>(), "{n} lanes over {k}");
            }
        }
    }
}
