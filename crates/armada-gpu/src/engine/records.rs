//! Lane records: the registers of a lane as the device holds them (`layout`'s S_* words),
//! written before a launch (`state_to_record`, at setup and after each service) and read back
//! after one (`record_to_state`), and the stop a record reports (`lane_stop`).

use super::LaneStop;
use crate::layout::*;
use armada_core::state::CpuState;

pub(super) fn state_to_record(st: &CpuState, limit: u64, epoch: u32, rec: &mut [u64]) {
    rec[S_X..S_X + 32].copy_from_slice(&st.x[..32]);
    rec[S_PC] = st.pc;
    rec[S_NZCV] = st.nzcv;
    rec[S_FPCR] = st.fpcr;
    rec[S_FPSR] = st.fpsr;
    rec[S_TPIDR] = st.tpidr;
    rec[S_EXCL] = st.excl_addr;
    rec[S_RETIRED] = st.retired;
    rec[S_LIMIT] = limit;
    rec[S_STOP] = STOP_NONE as u64;
    rec[S_INFO] = 0;
    rec[S_EPOCH] = epoch as u64;
    rec[S_DIRTY_N] = 0;
    rec[S_VDIRTY] = 0;
    for i in 0..32 {
        rec[S_V + 2 * i] = st.v[i] as u64;
        rec[S_V + 2 * i + 1] = (st.v[i] >> 64) as u64;
    }
}

/// The registers of a downloaded record; the vector registers when given (else the host's
/// copy is current).
pub(super) fn record_to_state(rec: &[u64], v: Option<&[u64]>, st: &mut CpuState) {
    st.x[..32].copy_from_slice(&rec[S_X..S_X + 32]);
    st.x[32] = 0;
    st.pc = rec[S_PC];
    st.nzcv = rec[S_NZCV];
    st.fpcr = rec[S_FPCR];
    st.fpsr = rec[S_FPSR];
    st.tpidr = rec[S_TPIDR];
    st.excl_addr = rec[S_EXCL];
    st.retired = rec[S_RETIRED];
    if let Some(v) = v {
        for i in 0..32 {
            st.v[i] = v[2 * i] as u128 | (v[2 * i + 1] as u128) << 64;
        }
    }
}

pub(super) fn lane_stop(rec: &[u64], stop: u32) -> LaneStop {
    let info = rec[S_INFO];
    match stop {
        STOP_SLICE => LaneStop::Slice,
        STOP_LIMIT => LaneStop::Limit,
        STOP_SVC | STOP_EXIT => LaneStop::Syscall,
        STOP_HLT => LaneStop::Halt(info as u16),
        STOP_BRK => LaneStop::Breakpoint(info as u16),
        STOP_UNDEFINED => LaneStop::Undefined(info as u32),
        STOP_MISS_R => LaneStop::PageMiss {
            addr: info,
            write: false,
        },
        STOP_MISS_W => LaneStop::PageMiss {
            addr: info,
            write: true,
        },
        STOP_HOST => LaneStop::HostStep,
        _ => LaneStop::Finished,
    }
}

/// Record words to write to the device: runs of (lane, first word, words), their words back
/// to back in one buffer. A round writes a few runs for each of tens of thousands of lanes;
/// a buffer of its own for each run cost an allocation on the servicing thread and a free
/// on another (mimalloc's cross-thread path), which showed in the round's serial part.
#[derive(Default)]
pub(super) struct Records {
    /// (lane, first word, number of words)
    heads: Vec<(u32, u32, u32)>,
    words: Vec<u64>,
}

impl Records {
    pub(super) fn push(&mut self, lane: u32, first: usize, words: &[u64]) {
        self.heads.push((lane, first as u32, words.len() as u32));
        self.words.extend_from_slice(words);
    }

    /// Takes `other`'s runs after this one's.
    pub(super) fn append(&mut self, mut other: Records) {
        if self.heads.is_empty() {
            *self = other;
            return;
        }
        self.heads.append(&mut other.heads);
        self.words.append(&mut other.words);
    }

    /// The runs as (lane, first word, number of words), in order.
    pub(super) fn heads(&self) -> &[(u32, u32, u32)] {
        &self.heads
    }

    /// Every run's words, back to back in the order of `heads`.
    pub(super) fn words(&self) -> &[u64] {
        &self.words
    }
}

impl<'a> FromIterator<(u32, usize, &'a [u64])> for Records {
    fn from_iter<I: IntoIterator<Item = (u32, usize, &'a [u64])>>(iter: I) -> Self {
        let mut r = Records::default();
        for (lane, first, words) in iter {
            r.push(lane, first, words);
        }
        r
    }
}
