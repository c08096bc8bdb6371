//! Reverse execution for a debugger (gdb's `reverse-stepi`, `reverse-continue` and what it
//! builds on them), by checkpoints and re-execution.
//!
//! A run under `--deterministic` is a function of its start and of what its syscalls
//! returned: the virtual clock, the seeded random bytes and the scheduler all count
//! instructions. So the state at any earlier instruction count can be made again by
//! copying a checkpoint taken before it and running forward to the count. Checkpoints are
//! [`Lane::copy_frozen`] copies (memory shared copy-on-write, every task and process), taken
//! every [`INTERVAL`] instructions and after every syscall of any process of the lane, and
//! after a signal the debugger let through: a re-execution never runs a syscall again (it
//! would write the program's output twice, or read input that is gone) and never decides a
//! signal's fate again. Going forward again through the past, at each syscall the run jumps
//! to the checkpoint taken after it; at the present it takes up the live lane, kept aside.
//!
//! Writing a register or memory in the past changes history: the future is dropped and the
//! run goes on live from there, as gdb's `record full` does.
//!
//! The oldest checkpoints go when there are more than [`MAX_POINTS`]: the history then
//! starts later ("No more reverse-execution history").

use super::debug::{Debugger, Event, Resume};
use super::Lane;
use std::collections::VecDeque;

/// Instructions between periodic checkpoints: a reverse step re-runs at most this many.
pub const INTERVAL: u64 = 1 << 20;

/// Checkpoints kept at most (the oldest go first).
pub const MAX_POINTS: usize = 4096;

struct Point {
    /// The instruction count the checkpoint was taken at.
    at: u64,
    lane: Lane,
}

/// A lane with its history: where the debugger stands (`lane`), and, while that is in the
/// past, the present.
pub struct Timeline {
    pub lane: Lane,
    present: Option<Lane>,
    points: VecDeque<Point>,
    next_periodic: u64,
    enabled: bool,
}

/// Where a reverse run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Back {
    /// At a stop of the debugger's (a breakpoint or a watchpoint met going backwards), or
    /// one instruction back ([`Event::Stepped`]).
    At(Event),
    /// At the start of the history.
    Begin { tid: i32 },
}

impl Timeline {
    /// A timeline for a lane that has not run yet. Without `enabled` (the run is not
    /// deterministic) it keeps no history.
    pub fn new(mut lane: Lane, enabled: bool) -> Timeline {
        let mut points = VecDeque::new();
        if enabled {
            points.push_back(Point {
                at: lane.retired(),
                lane: copy(&mut lane),
            });
        }
        Timeline {
            next_periodic: lane.retired() + INTERVAL,
            lane,
            present: None,
            points,
            enabled,
        }
    }

    /// Whether the timeline keeps history (reverse execution works).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether the debugger looks at the past.
    pub fn in_past(&self) -> bool {
        self.present.is_some()
    }

    /// The live lane (the present), the timeline dropped.
    pub fn into_present(self) -> Lane {
        self.present.unwrap_or(self.lane)
    }

    /// Checkpoints kept, and the instruction count of the oldest.
    pub fn extent(&self) -> (usize, Option<u64>) {
        (self.points.len(), self.points.front().map(|p| p.at))
    }

    fn checkpoint(&mut self) {
        if !self.enabled || self.in_past() {
            return;
        }
        let at = self.lane.retired();
        let lane = copy(&mut self.lane);
        self.points.push_back(Point { at, lane });
        while self.points.len() > MAX_POINTS {
            self.points.pop_front();
        }
    }

    /// The debugger changes the program's state where it stands: in the past, that state
    /// becomes the present and the future is dropped.
    pub fn changed(&mut self) {
        if self.present.take().is_some() {
            let now = self.lane.retired();
            while self.points.back().is_some_and(|p| p.at > now) {
                self.points.pop_back();
            }
            self.next_periodic = now + INTERVAL;
        }
    }

    /// Runs forward as [`Lane::debug_run`] does, keeping history: live, it checkpoints;
    /// in the past, it goes through the checkpoints after syscalls instead of running
    /// syscalls again, and takes up the present when it gets there.
    pub fn run(
        &mut self,
        dbg: &mut Debugger,
        how: Resume,
        deliver: bool,
        slice: u64,
        max: Option<u64>,
    ) -> Event {
        if !self.enabled {
            return self.lane.debug_run(dbg, how, deliver, slice, max, false);
        }
        if dbg.has_pending() {
            if self.in_past() {
                // a signal met again in replayed history: what gdb decides now makes the
                // present
                self.changed();
            }
            // the signal delivered or dropped, as gdb said; the state after is a checkpoint,
            // so re-execution never decides it again
            let ev = self.lane.debug_run(dbg, how, deliver, 0, max, true);
            if ev != Event::Slice {
                return ev;
            }
            self.checkpoint();
        }
        let start = self.lane.retired();
        loop {
            let now = self.lane.retired();
            let done = now - start;
            if done >= slice {
                return Event::Slice;
            }
            let mut s = slice - done;
            if let Some(present) = &self.present {
                let frontier = present.retired();
                if now >= frontier {
                    // back at the present: the live lane takes over
                    self.lane = self.present.take().expect("checked");
                    continue;
                }
                s = s.min(frontier - now);
            } else {
                if now >= self.next_periodic {
                    self.checkpoint();
                    self.next_periodic = now + INTERVAL;
                }
                s = s.min(self.next_periodic - now);
            }
            match self.lane.debug_run(dbg, how, false, s, max, true) {
                Event::Slice => continue,
                Event::Syscall if self.in_past() => {
                    let at = self.lane.retired();
                    match self.points.iter().rev().find(|p| p.at == at) {
                        Some(p) => self.lane = p.lane.copy_frozen(),
                        None => {
                            // the checkpoint is gone (the oldest went): run it for real,
                            // and the rest of history with it
                            self.changed();
                            if let Some(ev) = self.lane.debug_syscall(dbg) {
                                return ev;
                            }
                        }
                    }
                }
                Event::Syscall => {
                    if let Some(ev) = self.lane.debug_syscall(dbg) {
                        return ev;
                    }
                    self.checkpoint();
                }
                ev => return ev,
            }
        }
    }

    /// Leaves for the past: the present is kept aside (once), `lane` becomes `into`.
    fn go_back(&mut self, into: Lane) {
        let old = std::mem::replace(&mut self.lane, into);
        if self.present.is_none() {
            self.present = Some(old);
        }
    }

    /// The state at instruction count `target`, made from checkpoint `i` (at or before
    /// it): None if re-executing to it met something other than the count (it cannot,
    /// on a deterministic run).
    fn replay(&self, i: usize, target: u64, dbg: &Debugger) -> Option<Lane> {
        let p = &self.points[i];
        let mut lane = p.lane.copy_frozen();
        let mut none = dbg.no_stops();
        while lane.retired() < target {
            let left = target - lane.retired();
            match lane.debug_run(&mut none, Resume::Continue, false, left, None, true) {
                Event::Slice => {}
                _ => return None,
            }
        }
        Some(lane)
    }

    /// The last checkpoint at or before `target`.
    fn point_before(&self, target: u64) -> Option<usize> {
        self.points.iter().rposition(|p| p.at <= target)
    }

    /// One instruction of thread `tid` back (`reverse-stepi`): the state before that
    /// thread's last instruction (other threads' instructions since are undone too).
    pub fn step_back(&mut self, dbg: &mut Debugger, tid: i32) -> Back {
        let now = self.lane.retired();
        dbg.drop_pending();
        let begin = |t: &mut Timeline, dbg: &Debugger| {
            let tid = t.lane.debug_current_thread(dbg).unwrap_or(dbg.pid());
            Back::Begin { tid }
        };
        let Some(target) = now.checked_sub(1) else {
            return begin(self, dbg);
        };
        let Some(i) = self.point_before(target) else {
            return begin(self, dbg);
        };
        // most often the last instruction was the thread's own
        if let Some(mut lane) = self.replay(i, target, dbg) {
            if lane.schedule().is_some() && lane.debug_current_thread(dbg) == Some(tid) {
                self.go_back(lane);
                return Back::At(Event::Stepped { tid });
            }
        }
        // else: the last count before now at which the thread ran an instruction
        let mut end = now;
        for i in (0..self.points.len()).rev() {
            let at = self.points[i].at;
            if at >= end {
                continue;
            }
            if let Some(x) = self.last_step_of(i, end, tid, dbg) {
                if let Some(mut lane) = self.replay(i, x, dbg) {
                    lane.schedule();
                    self.go_back(lane);
                    return Back::At(Event::Stepped { tid });
                }
            }
            end = at;
        }
        begin(self, dbg)
    }

    /// The last instruction count in [checkpoint `i`, `end`) at which thread `tid` ran an
    /// instruction, found by re-executing the segment one instruction of that thread at a
    /// time (the other threads run their turns whole).
    fn last_step_of(&self, i: usize, end: u64, tid: i32, dbg: &Debugger) -> Option<u64> {
        let mut lane = self.points[i].lane.copy_frozen();
        let mut none = dbg.no_stops();
        let mut last = None;
        while lane.retired() < end {
            let left = end - lane.retired();
            none.begin_resume();
            match lane.debug_run(&mut none, Resume::Step(tid), false, left, None, true) {
                Event::Stepped { tid: t } if t == tid && lane.retired() <= end => {
                    last = Some(lane.retired() - 1);
                }
                _ => break,
            }
        }
        last
    }

    /// Back to the last stop of the debugger's before now (`reverse-continue`): a
    /// breakpoint, or an access a watchpoint catches; or to the start of the history.
    pub fn continue_back(&mut self, dbg: &mut Debugger) -> Back {
        dbg.drop_pending();
        let mut end = self.lane.retired();
        for i in (0..self.points.len()).rev() {
            let at = self.points[i].at;
            if at >= end {
                continue;
            }
            if let Some((count, ev)) = self.scan(i, end, dbg).pop() {
                // A watched access is shown from just after it: gdb steps back over the
                // instruction itself (an AArch64 watchpoint stops before its access) and
                // stops there, at the instruction that made it, with the old value. A
                // breakpoint is shown where it is.
                let to = match ev {
                    Event::Watch { .. } => count + 1,
                    _ => count,
                };
                if let Some(lane) = self.replay(i, to, dbg) {
                    self.go_back(lane);
                    return Back::At(ev);
                }
            }
            end = at;
        }
        // nothing: the start of the history
        if let Some(p) = self.points.front() {
            let lane = p.lane.copy_frozen();
            self.go_back(lane);
        }
        let tid = self.lane.program.process.tid();
        Back::Begin { tid }
    }

    /// The debugger's stops met re-executing from checkpoint `i` up to count `end`
    /// (exclusive), in order, with their counts.
    fn scan(&self, i: usize, end: u64, dbg: &Debugger) -> Vec<(u64, Event)> {
        let mut lane = self.points[i].lane.copy_frozen();
        let mut d = dbg.same_stops();
        let mut none = dbg.no_stops();
        let mut found = Vec::new();
        while lane.retired() < end {
            let left = end - lane.retired();
            let ev = lane.debug_run(&mut d, Resume::Continue, false, left, None, true);
            match ev {
                Event::Breakpoint { tid } | Event::Watch { tid, .. } => {
                    found.push((lane.retired(), ev));
                    // over the stop, without the debugger's breakpoints and watchpoints
                    match lane.debug_run(&mut none, Resume::Step(tid), false, 1, None, true) {
                        Event::Stepped { .. } | Event::Slice => {}
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        found
    }
}

/// A checkpoint of `lane` as it is now.
fn copy(lane: &mut Lane) -> Lane {
    lane.freeze();
    lane.copy_frozen()
}
