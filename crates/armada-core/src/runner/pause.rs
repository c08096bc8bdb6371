//! Where a run pauses for a snapshot (`armada run --snapshot-at`, `snapshot` in Python): at
//! a breakpoint armada planted (the word it replaced is put back) or at the first syscall
//! that touches the fuzz input; and the return trap a function-call snapshot ends at. The
//! runner checks each stop against them; `snapshot` plants them and takes the lane.

use super::Lane;
use crate::memory::{Access, PAGE_SIZE};
use crate::state::Stop;

/// The BRK immediate of the pause point.
pub(crate) const PAUSE_BRK_IMM: u32 = 0xa4ad;

/// What pauses a start run (see `Lane::service`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum PauseAt {
    Breakpoint { addr: u64, word: u32 },
    Input,
}

/// Whether `stop` is the pause point; if so, leaves the lane as it was just before it.
pub(crate) fn pauses_here(lane: &mut Lane, stop: &Stop) -> bool {
    let p = &mut lane.program;
    match (lane.pause, stop) {
        (Some(PauseAt::Breakpoint { addr, word }), Stop::Breakpoint(imm))
            if u32::from(*imm) == PAUSE_BRK_IMM && p.state.pc == addr =>
        {
            if p.mem.poke_bytes(addr, &word.to_le_bytes()).is_err() {
                return false;
            }
            lane.code.invalidate_page(addr / PAGE_SIZE);
            true
        }
        (Some(PauseAt::Input), Stop::Syscall) if p.process.touches_input(&p.state, &mut p.mem) => {
            // back to the SVC: a restored lane runs it first, on its own input
            p.state.pc -= 4;
            p.state.retired -= 1;
            true
        }
        _ => false,
    }
}

/// Whether `stop` is a return to the return trap at `at`.
pub(crate) fn returned(stop: &Stop, at: u64) -> bool {
    matches!(stop, Stop::Fault(f) if f.access == Access::Execute && f.addr == at)
}
