//! Syscalls the kernel answers itself (a batch made with `device_io`, on devices that can:
//! `Device::device_syscalls`). A fuzz target's execution repeats a few syscalls: fstat of its
//! stdin and stdout, reads of its input, writes of its output. Each of those is a stop, a
//! sync of the lane's written pages and a service round on the host; the kernel answers them
//! from what the host left it instead:
//! - the lane's input bytes and their length, and the 128-byte stat of fds 0, 1 and 2, in
//!   the lane's block at `Params::sysd` (written once, at setup);
//! - in the record (`S_SYS`..): which of those answers hold now (armada-core's
//!   `Process::device_io`: fd 0 is still the captured stdin, fds 1 and 2 the captured
//!   output), fd 0's position, the bytes writes may still drop, and a count of answers;
//!   and, in deterministic mode, the time slept, from which with the instructions retired
//!   the kernel answers clock_gettime (`SYS_CLOCK`).
//!
//! The host takes the kernel's side of it at every stop of the lane, before servicing it
//! (`sync_from_device`: the position, the dropped bytes, the count), and writes the record's
//! words afresh after (`sys_words`), so a `dup2` over fd 0 or a `close(1)` that the host
//! services turns the matching answers off.
//!
//! Output the kernel answered is kept or dropped ([`KernelIo`]). Kept, it goes to the output
//! list at `Params::out` (`OUT_HEAD_WORDS`): the writers claim room in it with an atomic add,
//! so each lane's chunks are in the order it wrote them, and after each launch, before any
//! lane is serviced, the host appends them to the lanes' captures (`take_output`): the host's
//! own writes of a lane come after the kernel's, as they did in the guest. A write that does
//! not fit goes to the host, and the next launch gets a list twice as large. Dropped (a
//! fuzzer does not look at output), the bytes are counted toward the capture's cap, as if
//! kept.

use super::{Batch, LaneHost};
use crate::device::{dtoh_vec, htod_slice};
use crate::layout::*;
use crate::Error;
use armada_core::linux::DeviceIo;
use armada_core::runner::Lane;

/// Which syscalls a batch's kernel answers itself (`Engine::batch_with`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelIo {
    /// None: every syscall stops for the host.
    #[default]
    Off,
    /// Reads of the captured stdin, fstat of fds 0-2, exit, clock_gettime in deterministic
    /// mode, and writes to the captured stdout and stderr, whose bytes are dropped (fuzzing:
    /// counted, not kept).
    Drop,
    /// The same, with the written bytes kept in the lanes' captures, as the host keeps them.
    Keep,
}

/// The output list's first capacity: 512 bytes a lane, within [1 MiB, 64 MiB]; and the
/// most it grows to.
const OUT_MIN_WORDS: u64 = 1 << 17;
const OUT_START_MAX_WORDS: u64 = 1 << 23;
const OUT_MAX_WORDS: u64 = 1 << 25;

/// The record words `S_SYS`.. for the lane's state now (all zero when `on` is false).
pub(super) fn sys_words(lane: &Lane, on: bool, rec: &mut [u64]) {
    rec[S_SYS..=S_SLEPT].fill(0);
    // A lane of several threads (of all its processes) has the kernel answer them only
    // while no thread waits to retry its syscall: a completed syscall readies those
    // (`Lane::wake_retries`), which decides what runs next, and the kernel cannot do that.
    // Otherwise a syscall the kernel answers (a clock read, a read of stdin, a write to the
    // captured output) changes nothing the scheduler looks at: a thread can start waiting
    // only in a syscall the host services, and the lane's limit on the device is already
    // the scheduler's next turn point. An exit stays the host's: it ends the lane only as
    // its last thread's.
    let threads = lane.thread_count() > 1;
    if !on || lane.exit.is_some() || (threads && lane.waits_to_retry()) {
        return;
    }
    let io = lane.program.process.device_io();
    let mut bits = 0;
    if io.read_stdin {
        bits |= SYS_READ0;
        rec[S_IN_OFF] = io.stdin_pos;
    }
    for (k, room) in io.out_room.iter().enumerate() {
        if let Some(r) = room {
            bits |= SYS_DROP1 << k;
            rec[S_ROOM + k] = *r;
        }
    }
    for (fd, st) in io.stat.iter().enumerate() {
        if st.is_some() {
            bits |= SYS_STAT0 << fd;
        }
    }
    if io.exit && !threads {
        bits |= SYS_EXIT;
    }
    if let Some(slept) = io.slept_ns {
        bits |= SYS_CLOCK;
        rec[S_SLEPT] = slept;
    }
    rec[S_SYS] = bits;
}

/// Takes what the kernel answered for the lane since the host last looked (its downloaded
/// record `rec`) into the lane's Linux state. With `kept` output, the bytes written are in
/// the lane's capture already (`Batch::take_output`); otherwise they were dropped, and count.
pub(super) fn sync_from_device(lane: &mut Lane, rec: &[u64], kept: bool) {
    let bits = rec[S_SYS];
    if bits == 0 {
        return;
    }
    let io: DeviceIo = lane.program.process.device_io();
    let mut dropped = [0u64; 2];
    for (k, d) in dropped.iter_mut().enumerate() {
        if !kept && bits & (SYS_DROP1 << k) != 0 {
            if let Some(room) = io.out_room[k] {
                *d = room.saturating_sub(rec[S_ROOM + k]);
            }
        }
    }
    let pos = if bits & SYS_READ0 != 0 {
        rec[S_IN_OFF]
    } else {
        io.stdin_pos
    };
    lane.program
        .process
        .device_io_done(pos, dropped, rec[S_SYS_N]);
}

impl Batch {
    /// Makes the output list the kernel keeps answered writes in (`KernelIo::Keep`).
    pub(super) fn alloc_output(&mut self, words: u64) -> Result<(), Error> {
        let d = self
            .dev
            .alloc(8 * (OUT_HEAD_WORDS as u64 + words) as usize)?;
        htod_slice(&*self.dev, d, &[0, words])?;
        if self.d_out != 0 {
            self.dev.free(self.d_out);
        }
        self.d_out = d;
        self.out_words = words;
        self.params.out = d;
        Ok(())
    }

    /// The output list's first capacity for `lanes` lanes (ARMADA_GPU_OUT_WORDS: a smaller
    /// one, so tests see writes that do not fit).
    pub(super) fn output_words(lanes: usize) -> u64 {
        let words = (64 * lanes as u64).clamp(OUT_MIN_WORDS, OUT_START_MAX_WORDS);
        std::env::var("ARMADA_GPU_OUT_WORDS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(words, |w| w.clamp(1, words))
    }

    /// Appends the output the kernel kept in the last launch to the lanes' captures, and
    /// empties the list (a larger one where it overflowed). Before any lane is serviced.
    pub(super) fn take_output(&mut self) -> Result<(), Error> {
        if self.d_out == 0 {
            return Ok(());
        }
        let used = dtoh_vec::<u64>(&*self.dev, self.d_out, 1)?[0];
        if used == 0 {
            return Ok(());
        }
        let n = used.min(self.out_words) as usize;
        let words: Vec<u64> = dtoh_vec(&*self.dev, self.d_out + 8 * OUT_HEAD_WORDS as u64, n)?;
        let mut at = 0;
        while at < n {
            let h = words[at];
            if h == OUT_END {
                break;
            }
            let (lane, stream, len) = (h as u32, (h >> 32) & 1, (h >> 33) as usize);
            let w = len.div_ceil(8);
            let Some(chunk) = words.get(at + 1..at + 1 + w) else {
                return Err(Error::Device(format!(
                    "the kernel's output list is cut short at word {at} of {n} (an engine bug)"
                )));
            };
            at += 1 + w;
            if lane == OUT_SKIP {
                continue;
            }
            let Some(lh) = self.lanes.get_mut(lane as usize) else {
                return Err(Error::Device(format!(
                    "the kernel's output list names lane {lane} of {} (an engine bug)",
                    self.lanes.len()
                )));
            };
            let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
            lh.lane
                .program
                .process
                .device_output(stream as usize, &bytes[..len]);
        }
        htod_slice(&*self.dev, self.d_out, &[0u64])?;
        if used > self.out_words && self.out_words < OUT_MAX_WORDS {
            self.alloc_output((self.out_words * 2).min(OUT_MAX_WORDS))?;
        }
        Ok(())
    }

    /// Writes every lane's block (input, stats) for the kernel's answers; at setup.
    pub(super) fn upload_sys_blocks(&mut self, lanes: &[LaneHost]) -> Result<(), Error> {
        let n = lanes.len();
        let inputs: Vec<&[u8]> = lanes
            .iter()
            .map(|l| l.lane.program.process.stdin_bytes().unwrap_or(&[]))
            .collect();
        let io = self.upload_inputs(&inputs)?;
        let mut words = vec![0u64; n * SYSD_WORDS];
        for (k, l) in lanes.iter().enumerate() {
            let b = &mut words[k * SYSD_WORDS..(k + 1) * SYSD_WORDS];
            sys_block(&l.lane, [io[2 * k], io[2 * k + 1]], b);
        }
        let d_sysd = self.dev.alloc(words.len() * 8)?;
        self.d_sysd = d_sysd;
        htod_slice(&*self.dev, d_sysd, &words)?;
        self.params.sysd = d_sysd;
        Ok(())
    }

    /// Puts the inputs on the device, back to back (each 8-aligned); returns each one's
    /// (address, length), as a lane's block at `Params::sysd` starts.
    pub(super) fn upload_inputs<I: AsRef<[u8]>>(
        &mut self,
        inputs: &[I],
    ) -> Result<Vec<u64>, Error> {
        let (bytes, at) = pack_inputs(inputs);
        let total = bytes.len();
        if total.max(8) > self.inputs_bytes {
            let bytes = total.max(8).next_power_of_two();
            let p = self.dev.alloc(bytes)?;
            if self.d_inputs != 0 {
                self.dev.free(self.d_inputs);
            }
            self.d_inputs = p;
            self.inputs_bytes = bytes;
        }
        self.dev.htod(self.d_inputs, &bytes)?;
        Ok(inputs
            .iter()
            .zip(&at)
            .flat_map(|(i, &a)| [self.d_inputs + a as u64, i.as_ref().len() as u64])
            .collect())
    }
}

/// `inputs` back to back, each at a multiple of 8 bytes, and where each starts.
pub(super) fn pack_inputs<I: AsRef<[u8]>>(inputs: &[I]) -> (Vec<u8>, Vec<usize>) {
    let mut at = Vec::with_capacity(inputs.len());
    let mut total = 0usize;
    for i in inputs {
        at.push(total);
        total += i.as_ref().len().div_ceil(8) * 8;
    }
    let mut bytes = vec![0u8; total];
    for (i, &a) in inputs.iter().zip(&at) {
        let i = i.as_ref();
        bytes[a..a + i.len()].copy_from_slice(i);
    }
    (bytes, at)
}

/// Lane `lane`'s block for the kernel's answers (`SYSD_WORDS` words into `b`): its stdin's
/// (address, length) on the device, and the stat of each of its fds 0-2.
pub(super) fn sys_block(lane: &Lane, input: [u64; 2], b: &mut [u64]) {
    b[..2].copy_from_slice(&input);
    for (fd, st) in lane.program.process.device_io().stat.iter().enumerate() {
        if let Some(st) = st {
            for (w, c) in st.chunks_exact(8).enumerate() {
                b[8 + 16 * fd + w] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            }
        }
    }
}
