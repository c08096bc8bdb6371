//! Fuzz the ELF loader: no input may panic it. An image that parses is also mapped into a
//! fresh address space, and its stack is built, which must not panic either.
//!
//!     cargo +nightly fuzz run elf_parse
#![no_main]

use armada_core::elf::Image;
use armada_core::memory::AddressSpace;
use armada_core::process::{setup_stack, HWCAP, HWCAP2};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(image) = Image::parse(data) {
        let mut mem = AddressSpace::new();
        if image.map_into(&mut mem).is_ok() {
            let _ = setup_stack(
                &mut mem,
                &image,
                "/fuzz",
                &[b"fuzz".to_vec()],
                &[b"A=B".to_vec()],
                [7; 16],
                HWCAP,
                HWCAP2,
            );
        }
    }
});
