//! Syscalls the kernel answers itself (a batch made with `device_io`, on devices that can:
//! `Device::device_syscalls`). A fuzz target's execution repeats a few syscalls: fstat of its
//! stdin and stdout, reads of its input, writes of its output. Each of those is a stop, a
//! sync of the lane's written pages and a service round on the host; the kernel answers them
//! from what the host left it instead:
//! - the lane's input bytes and their length, and the 128-byte stat of fds 0, 1 and 2, in
//!   the lane's block at `Params::sysd` (written once, at setup);
//! - in the record (`S_SYS`..): which of those answers hold now (armada-core's
//!   `Process::device_io`: fd 0 is still the captured stdin, fds 1 and 2 the captured
//!   output), fd 0's position, the bytes writes may still drop, and a count of answers.
//!
//! The host takes the kernel's side of it at every stop of the lane, before servicing it
//! (`sync_from_device`: the position, the dropped bytes, the count), and writes the record's
//! words afresh after (`sys_words`), so a `dup2` over fd 0 or a `close(1)` that the host
//! services turns the matching answers off. Output the kernel answered is dropped (counted
//! toward the capture's cap, as if kept): a fuzzer does not look at it.

use super::{Batch, LaneHost};
use crate::device::htod_slice;
use crate::layout::*;
use crate::Error;
use armada_core::linux::DeviceIo;
use armada_core::runner::Lane;

/// The record words `S_SYS`.. for the lane's state now (all zero when `on` is false).
pub(super) fn sys_words(lane: &Lane, on: bool, rec: &mut [u64]) {
    rec[S_SYS..S_ROOM + 2].fill(0);
    if !on || lane.exit.is_some() {
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
    if io.exit {
        bits |= SYS_EXIT;
    }
    rec[S_SYS] = bits;
}

/// Takes what the kernel answered for the lane since the host last looked (its downloaded
/// record `rec`) into the lane's Linux state.
pub(super) fn sync_from_device(lane: &mut Lane, rec: &[u64]) {
    let bits = rec[S_SYS];
    if bits == 0 {
        return;
    }
    let io: DeviceIo = lane.program.process.device_io();
    let mut dropped = [0u64; 2];
    for (k, d) in dropped.iter_mut().enumerate() {
        if bits & (SYS_DROP1 << k) != 0 {
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
            b[..2].copy_from_slice(&io[2 * k..2 * k + 2]);
            for (fd, st) in l.lane.program.process.device_io().stat.iter().enumerate() {
                if let Some(st) = st {
                    for (w, c) in st.chunks_exact(8).enumerate() {
                        b[8 + 16 * fd + w] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
                    }
                }
            }
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
        let mut at = Vec::with_capacity(inputs.len());
        let mut total = 0usize;
        for i in inputs {
            at.push(total);
            total += i.as_ref().len().div_ceil(8) * 8;
        }
        if total.max(8) > self.inputs_bytes {
            let bytes = total.max(8).next_power_of_two();
            let p = self.dev.alloc(bytes)?;
            if self.d_inputs != 0 {
                self.dev.free(self.d_inputs);
            }
            self.d_inputs = p;
            self.inputs_bytes = bytes;
        }
        let mut bytes = vec![0u8; total];
        for (i, &a) in inputs.iter().zip(&at) {
            let i = i.as_ref();
            bytes[a..a + i.len()].copy_from_slice(i);
        }
        self.dev.htod(self.d_inputs, &bytes)?;
        Ok(inputs
            .iter()
            .zip(&at)
            .flat_map(|(i, &a)| [self.d_inputs + a as u64, i.as_ref().len() as u64])
            .collect())
    }
}
