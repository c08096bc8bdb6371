//! Servicing stopped lanes (step 4 of the round): each lane that stopped for something other
//! than the end of its slice is serviced on its own thread against its host `Lane`: syscalls
//! through the Linux layer, page misses against the mirror, host steps through the CPU engine,
//! faults as signals. Each produces a `Plan` (the page states it wants on the device, from
//! `wants`, and its figures), applied on the same thread where it can (`apply_shared`), and
//! the record words to write back; the serial part (`apply`) takes the rest.

use super::apply::{apply_shared, Done};
use super::launch::Down;
use super::pagetable::ZERO_FRAME;
use super::records::{record_to_state, state_to_record};
use super::setup::start_wants;
use super::spaces::Followed;
use super::upload::{changed_runs, PageSrc};
use super::wants::{files_around, lazy_area, lazy_around, want_for, Want};
use super::{Batch, Image, LaneHost};
use crate::layout::*;
use crate::Error;
use armada_core::memory::{Access, AddressSpace, Fault, Perm, PAGE_SHIFT, PAGE_SIZE};
use armada_core::runner::Exit;
use armada_core::state::Stop;
use armada_isa::decode;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// A host step runs this many instructions when the PC is outside the decoded regions.
const HOST_RUN_OUTSIDE: u64 = 100_000;

/// Persistent lanes (a fuzzer's rounds): when at most this many lanes stop for the host in a
/// launch, each goes on running on the host after its stop, up to `FINISH_ON_HOST` more
/// instructions, rather than in another launch. A fuzz round's last lanes are typically a
/// few inputs that crash (abort's syscalls, the signal): each launch for them would wait for
/// every SM the other batch's kernel holds (a pipelined fuzzer runs two), and they finish on
/// the host in microseconds. The CPU engine is the reference, so the results are the same.
const FINISH_ON_HOST_LANES: usize = 256;
const FINISH_ON_HOST: u64 = 1_000_000;

/// What servicing one lane produced, for the serial part of the round.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) wants: Vec<(u64, Want)>,
    pub(super) exited: bool,
    pub(super) syscalls: u64,
    pub(super) misses: u64,
    pub(super) host_instructions: u64,
    pub(super) host_steps: u64,
    /// The micro-op the kernel left to the host, when it was one.
    pub(super) host_op: Option<u16>,
    /// Write the page-table entries even when the host copy says they are current.
    pub(super) force: bool,
    /// The lane makes no progress (an engine bug): the batch stops with this message.
    pub(super) stuck: Option<String>,
    /// Its executable areas changed (a library mapped): its regions are worked out again
    /// (`code`).
    pub(super) code: bool,
    /// With `code`: the keys of its executable areas (`code::area_keys`), worked out on
    /// the servicing thread for the serial part's lookups.
    pub(super) code_keys: Vec<super::code::CodeArea>,
    /// Its running process's space changed (`spaces`): the record's image and space words
    /// go up.
    pub(super) space: bool,
    /// Spaces no process of the lane runs on any more, to give back (`spaces::drop_spaces`).
    pub(super) dead: Vec<super::spaces::Space>,
    /// The running process forked: its children's spaces are made from its own
    /// (`Batch::adopt_forks`), but for the pages this plan puts anew.
    pub(super) forked: Option<Vec<u64>>,
}

impl Batch {
    /// Services the listed lanes in parallel from what came down for them (`down`); returns
    /// what they produced, gathered in lane order (`apply::Done`).
    pub(super) fn service_lanes(&mut self, svc: &[u32], down: Down) -> Result<Done, Error> {
        const W: usize = DOWN_WORDS;
        let Down {
            recs: recs_buf,
            vwords,
            vpos,
        } = down;
        let recs = recs_buf.words(svc.len() * W);
        // Service in parallel, and apply what each lane wants of the table where it can (room
        // for most of it first: the rest waits for the serial part).
        self.ensure_pt_room(svc.len() as u64 * 16)?;
        let t = Instant::now();
        struct Work<'a> {
            k: usize,
            rec: &'a [u64],
            v: Option<&'a [u64]>,
        }
        let mut work: Vec<Option<Work>> = (0..self.lanes.len()).map(|_| None).collect();
        for (k, &l) in svc.iter().enumerate() {
            work[l as usize] = Some(Work {
                k,
                rec: &recs[k * W..(k + 1) * W],
                v: vpos[k].map(|j| &vwords[j * 64..(j + 1) * 64]),
            });
        }
        let images = &self.images;
        let empty = self.empty_image;
        let keys = &self.space_keys;
        let stops = &self.stops;
        let lazy = self.lazy;
        // (ARMADA_GPU_FINISH_ON_HOST=0 turns it off: tests of lanes serviced between launches)
        let finish_on = std::env::var("ARMADA_GPU_FINISH_ON_HOST").map_or(true, |v| v != "0");
        let finish = if finish_on && self.d_start != 0 && svc.len() <= FINISH_ON_HOST_LANES {
            FINISH_ON_HOST
        } else {
            0
        };
        let devio = self.devio;
        let kept = self.d_out != 0;
        let pt = &self.pt;
        let files = &self.files;
        let code = &self.code;
        let reserve = self.reserve_rule();
        // (what each lane holds, where the admission of waiting lanes, or of lanes that
        // left the device, needs it: `feed`)
        let feeding = self.feed.is_some();
        let done: Done = self
            .lanes
            .par_iter_mut()
            .zip(work.into_par_iter())
            .fold(Done::default, |mut done, (lh, w)| {
                let Some(w) = w else {
                    return done;
                };
                let lane_id = svc[w.k] as usize;
                if feeding {
                    lh.peak_own = lh.peak_own.max(lh.own_frames());
                }
                record_to_state(w.rec, w.v, &mut lh.lane.program.state);
                if devio {
                    super::devio::sync_from_device(&mut lh.lane, w.rec, kept);
                }
                let v_before = lh.lane.program.state.v;
                let at = Spaces {
                    images,
                    empty,
                    keys,
                };
                let mut plan = service_lane(lh, lane_id, w.rec, stops[lane_id], &at, lazy, finish);
                done.figures.count(&plan, stops[lane_id]);
                if let Some(msg) = &plan.stuck {
                    done.err.get_or_insert_with(|| Error::Device(msg.clone()));
                    return done;
                }
                let mut applied = apply_shared(pt, files, lh, &mut plan, reserve.pool_on);
                let dead = std::mem::take(&mut plan.dead);
                super::spaces::drop_spaces(pt, lh, dead, &mut applied);
                if plan.exited {
                    plan.forked = None;
                } else if let Some(excluded) = plan.forked.take() {
                    plan.forked = match super::spaces::adopt_forks_shared(
                        pt,
                        keys,
                        lh,
                        excluded,
                        &mut applied,
                    ) {
                        Ok(left) => left,
                        Err(e) => {
                            done.err.get_or_insert(e);
                            return done;
                        }
                    };
                }
                let lane = lane_id as u32;
                if plan.code && !plan.exited {
                    let keys = super::code::area_keys(&lh.lane.program.mem);
                    match code.lookup(&keys) {
                        Some((set, word)) => {
                            lh.code = set.iter().map(|r| (r.0, r.1)).collect();
                            lh.regions = word;
                            plan.code = false;
                            if !plan.space {
                                done.records.push(lane, S_REGIONS, &[word]);
                            }
                        }
                        None => plan.code_keys = keys,
                    }
                }
                if plan.space && !plan.exited {
                    // (S_REGIONS, S_IMAGE, S_SPACE are one run of the record)
                    let words = [lh.regions, images[lh.image].key_lane, lh.space];
                    if plan.code {
                        // (the regions are worked out in the serial part)
                        done.records.push(lane, S_IMAGE, &words[1..]);
                    } else {
                        done.records.push(lane, S_REGIONS, &words);
                    }
                }
                if !plan.exited {
                    lh.epoch = lh.epoch.wrapping_add(1).max(1);
                    let st = &lh.lane.program.state;
                    let mut rec = [0u64; S_V + 64];
                    state_to_record(st, lh.dev_limit, lh.epoch, &mut rec);
                    super::devio::sys_words(&lh.lane, devio, &mut rec);
                    done.records.push(lane, 0, &rec[..CORE_WORDS]);
                    if st.v != v_before {
                        done.records.push(lane, S_V, &rec[S_V..]);
                    }
                }
                done.take(lh, lane_id, plan, applied, reserve);
                done
            })
            .reduce(Done::default, Done::merge);
        self.stats.service_s += t.elapsed().as_secs_f64();
        self.spare.recs = recs_buf;
        Ok(done)
    }
}

/// What a service needs to follow a lane's switch to another address space.
struct Spaces<'a> {
    images: &'a [Image],
    empty: usize,
    keys: &'a super::spaces::SpaceKeys,
}

/// Services one lane's stop; returns what to change on the device. `finish`: instructions
/// the lane may then run on the host (`FINISH_ON_HOST`; not after a page miss, whose pages'
/// states are planned before).
fn service_lane(
    lh: &mut LaneHost,
    lane_id: usize,
    rec: &[u64],
    stop: u32,
    at: &Spaces,
    lazy: bool,
    finish: u64,
) -> Plan {
    let mut plan = Plan::default();
    let image = &at.images[lh.image];
    if lh.lane.exit.is_some() {
        // (it ended before the launch: see `start_record`)
        plan.exited = true;
        return plan;
    }
    let before = area_list(&lh.lane.program.mem);
    lh.lane.program.mem.gpu_track_writes_keep();
    let info = rec[S_INFO];
    let mut extra: Vec<(u64, Want)> = Vec::new();
    let exit: Option<Exit> = match stop {
        // (an exit the kernel ended the lane at is serviced as the syscall it is)
        STOP_SVC | STOP_EXIT => {
            plan.syscalls += 1;
            lh.lane.service(Stop::Syscall)
        }
        STOP_HLT => lh.lane.service(Stop::Halt(info as u16)),
        STOP_BRK => lh.lane.service(Stop::Breakpoint(info as u16)),
        STOP_UNDEFINED => lh.lane.service(Stop::Undefined(info as u32)),
        // the end of the running task's turn, or a timer: `LaneHost::schedule` below
        STOP_LIMIT if lh.at_turn_point() => None,
        STOP_LIMIT => lh.lane.service(Stop::Budget),
        STOP_MISS_R | STOP_MISS_W => {
            plan.misses += 1;
            let write = stop == STOP_MISS_W;
            if write && rec[S_RES_N] == 0 {
                lh.res_grown += 1;
            }
            // The same miss again at the same point: the device did not see the last fix.
            let key = (info, lh.lane.program.state.retired, write);
            if lh.last_miss.0 == key {
                lh.last_miss.1 += 1;
                plan.force = true;
                if lh.last_miss.1 > 8 {
                    plan.stuck = Some(format!(
                        "lane {lane_id} keeps missing page {info:#x} at pc {:#x}",
                        lh.lane.program.state.pc
                    ));
                }
            } else {
                lh.last_miss = (key, 0);
            }
            let vpn = info >> PAGE_SHIFT;
            let owned = lh.entries.get(&vpn).is_some_and(|e| e.private);
            // A page copied on write from the image, or one never written: the device makes
            // the lane's frame from the image's frame or the zero frame, nothing to upload.
            let src = if write && !owned {
                match lh.lane.program.mem.gpu_page(vpn) {
                    None => Some(ZERO_FRAME),
                    Some((d, false)) if AddressSpace::gpu_is_zero_page(d) => Some(ZERO_FRAME),
                    Some((d, false)) => image
                        .pages
                        .get(&vpn)
                        .filter(|(i, ..)| Arc::ptr_eq(i, d))
                        .map(|(_, f, _)| *f),
                    _ => None,
                }
            } else {
                None
            };
            match resolve_miss(&mut lh.lane.program.mem, info, write) {
                Ok(()) => {
                    let mem = &lh.lane.program.mem;
                    let w = want_for(mem, vpn, image, owned, !owned, !write, lazy && !write);
                    let w = match (src, w) {
                        (Some(f), Want::Private { perms, .. }) => Want::Private {
                            perms,
                            data: Some(PageSrc::Frame(f)),
                        },
                        (_, w) => w,
                    };
                    let file = matches!(w, Want::File { .. });
                    extra.push((vpn, w));
                    if file {
                        // a library's page: its neighbours will likely be read soon too, and
                        // entries on the batch's frames cost no upload
                        files_around(lh, image, vpn, &mut extra);
                    }
                    if lazy {
                        // the pages around it will likely be written next
                        let mut wanted = extra.iter().map(|w| w.0).collect();
                        lazy_around(lh, image, vpn, &mut extra, &mut wanted);
                    }
                    None
                }
                // A real fault: the CPU engine runs the instruction, so the fault (and any
                // bytes a straddling store writes before it) is exactly the CPU engine's.
                Err(_) => host_step(lh, image, &mut plan),
            }
        }
        STOP_HOST => host_step(lh, image, &mut plan),
        _ => None,
    };
    let exit = match exit {
        None if finish > 0 && extra.is_empty() && lh.lane.exit.is_none() => {
            run_on_host(lh, finish, &mut plan)
        }
        e => e,
    };
    // the scheduler's turn: it may fire timers (a signal frame the host writes) or switch
    // to another thread, whose registers go up in the record
    let exit = match exit {
        None if !lh.schedule() => lh.lane.exit.clone(),
        e => e,
    };
    // (from the space running now: when that is another one than at the start, the pages
    // the host wrote to it since it last ran; the outgoing space keeps its record)
    let written_kept = lh.lane.program.mem.gpu_take_written_keep();
    if let Some(e) = exit {
        lh.lane.exit = Some(e);
        plan.exited = true;
        return plan;
    }
    let mut before = before;
    match super::spaces::follow(lh, &before, at.images, at.empty, at.keys) {
        Err(m) => {
            lh.lane.exit = Some(Exit::Unsupported(m));
            plan.exited = true;
            return plan;
        }
        Ok(Followed::Same) => {}
        Ok(Followed::Back(areas)) => {
            plan.space = true;
            before = areas;
            // (a page miss's fix was for the outgoing space: that process misses again when
            // it runs, and its memory has the page then)
            extra.clear();
        }
        Ok(Followed::New) => {
            plan.space = true;
            plan.code = true;
            plan.dead = super::spaces::dead_spaces(lh);
            plan.wants = start_wants(lh, &at.images[lh.image], lazy, true);
            return plan;
        }
    }
    plan.dead = super::spaces::dead_spaces(lh);
    let image = &at.images[lh.image];
    let mem = &lh.lane.program.mem;
    let after = area_list(mem);
    let written: Vec<u64> = written_kept.iter().map(|p| p.0).collect();
    let mut vpns: Vec<u64> = Vec::new();
    // its code changed: other executable areas, or new pages in one (a mapping over it)
    let in_code = |v: u64| {
        lh.code
            .iter()
            .any(|&(s, e)| v >= s >> PAGE_SHIFT && v < e.div_ceil(PAGE_SIZE))
    };
    plan.code = written.iter().any(|&v| in_code(v))
        || before != after && super::code::code_areas(mem) != lh.code;
    if before != after {
        let ranges = changed_ranges(&before, &after);
        let inside = |v: u64| ranges.iter().any(|&(s, e)| v >= s && v < e);
        vpns.extend(lh.entries.keys().copied().filter(|&v| inside(v)));
        vpns.extend(image.pages.keys().copied().filter(|&v| inside(v)));
    }
    let mut wants: Vec<(u64, Want)> = Vec::new();
    vpns.sort_unstable();
    vpns.dedup();
    for v in vpns {
        if written.binary_search(&v).is_ok() || extra.iter().any(|x| x.0 == v) {
            continue;
        }
        let e = lh.entries.get(&v);
        let owned = e.is_some_and(|e| e.private);
        // a lazy entry stays lazy; an image page of a writable area becomes one
        let lazy = lazy && (e.is_some_and(|e| e.lazy) || image.pages.contains_key(&v));
        wants.push((v, want_for(mem, v, image, owned, false, false, lazy)));
    }
    for (v, kept) in written_kept {
        if extra.iter().any(|x| x.0 == v) {
            continue;
        }
        let owned = lh.entries.get(&v).is_some_and(|e| e.private);
        // A frame of the lane's own holds the page as it was before the host wrote it (the
        // kernel's changes came back before the service): only the changed blocks go up.
        let want = match (kept, owned) {
            (Some(kept), true) => match want_for(mem, v, image, true, false, false, false) {
                Want::Private { perms, data: None } => Want::Private {
                    perms,
                    data: mem
                        .gpu_page(v)
                        .and_then(|(now, _)| changed_runs(&kept, now)),
                },
                w => w,
            },
            _ => want_for(mem, v, image, owned, true, false, false),
        };
        wants.push((v, want));
    }
    wants.extend(extra);
    if lazy && before != after {
        // a writable area that is new or changed (a heap that grew, a fresh mapping)
        let mut wanted = wants.iter().map(|w| w.0).collect();
        for &(start, end, perm) in &after {
            if perm.contains(Perm::W) && !before.contains(&(start, end, perm)) {
                let (lo, hi) = (start >> PAGE_SHIFT, end.div_ceil(PAGE_SIZE));
                lazy_area(lh, image, lo, hi, &mut wants, &mut wanted);
            }
        }
    }
    // (only when the process that ran is the one running now: a fork's child is made from
    // its parent's space)
    if !plan.space && lh.lane.process_count() > 1 + lh.spaces.len() {
        plan.forked = Some(wants.iter().map(|w| w.0).collect());
    }
    plan.wants = wants;
    plan
}

/// Runs the instruction at the lane's PC on the CPU engine (or up to HOST_RUN_OUTSIDE of
/// them when the PC is outside the decoded code), then services whatever stopped it.
fn host_step(lh: &mut LaneHost, image: &Image, plan: &mut Plan) -> Option<Exit> {
    plan.host_steps += 1;
    let pc = lh.lane.program.state.pc;
    let inside = lh.code.iter().any(|&(s, e)| pc >= s && pc < e);
    let mut word = [0u8; 4];
    if inside && lh.lane.program.mem.fetch_bytes(pc, &mut word).is_ok() {
        plan.host_op = Some(decode(u32::from_le_bytes(word), pc).op);
    }
    let before_r = lh.lane.program.state.retired;
    // (to the record's limit: a point the scheduler must see comes first)
    let left = lh.dev_limit.saturating_sub(before_r);
    let budget = left.min(if inside {
        image.host_run
    } else {
        HOST_RUN_OUTSIDE
    });
    // with coverage on, the lane's host map takes the edges run here (see `coverage`)
    let s = lh.lane.run_cpu(budget);
    let done = lh.lane.program.state.retired - before_r;
    plan.host_instructions += done;
    lh.host_steps += done;
    // (short of the batch's limit: the host-step cap, or a turn point `schedule` acts on)
    if s == Stop::Budget && lh.at_turn_point() {
        None
    } else {
        if let Stop::Syscall = s {
            plan.syscalls += 1;
        }
        lh.lane.service(s)
    }
}

/// Runs the lane on the host for up to `budget` instructions, servicing its syscalls, until it
/// ends (its exit) or the budget runs out (None: it goes on on the device).
fn run_on_host(lh: &mut LaneHost, budget: u64, plan: &mut Plan) -> Option<Exit> {
    let mut left = budget;
    loop {
        if !lh.schedule() {
            return lh.lane.exit.clone();
        }
        let before = lh.lane.program.state.retired;
        let to_limit = lh.dev_limit.saturating_sub(before);
        let run = left.min(to_limit);
        let s = lh.lane.run_cpu(run);
        let done = lh.lane.program.state.retired - before;
        plan.host_instructions += done;
        lh.host_steps += done;
        left = left.saturating_sub(done);
        if s == Stop::Budget && run < to_limit {
            return None;
        }
        // the end of a turn (the loop's `schedule` switches), or the batch's limit
        if s != Stop::Budget || !lh.at_turn_point() {
            if let Stop::Syscall = s {
                plan.syscalls += 1;
            }
            if let Some(e) = lh.lane.service(s) {
                return Some(e);
            }
        }
        if left == 0 {
            return None;
        }
    }
}

/// A page miss against the mirror: Ok when the access is allowed (the page is made private
/// for a write, as a guest store would), else the fault the CPU engine would raise.
fn resolve_miss(mem: &mut AddressSpace, addr: u64, write: bool) -> Result<(), Fault> {
    let access = if write { Access::Write } else { Access::Read };
    let Some((_, _, perm)) = mem.area_at(addr) else {
        return Err(Fault {
            addr,
            access,
            mapped: false,
        });
    };
    if write {
        mem.gpu_make_private(addr).map(|_| ())
    } else if perm.contains(Perm::R) {
        Ok(())
    } else {
        Err(Fault {
            addr,
            access,
            mapped: true,
        })
    }
}

/// Areas as a comparable list.
fn area_list(mem: &AddressSpace) -> Vec<(u64, u64, Perm)> {
    mem.areas().collect()
}

/// Page numbers whose area or permissions differ between two area lists.
fn changed_ranges(a: &[(u64, u64, Perm)], b: &[(u64, u64, Perm)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (x, y) in [(a, b), (b, a)] {
        for &(s, e, p) in x {
            if !y.iter().any(|&(s2, e2, p2)| s2 == s && e2 == e && p2 == p) {
                out.push((s >> PAGE_SHIFT, e >> PAGE_SHIFT));
            }
        }
    }
    out
}
