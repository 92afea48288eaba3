//! Warming a fiber's memory before it runs. A fiber that waited behind many others finds its
//! stack and its `Core` out of the cache (and its stack's page out of the TLB) when it
//! resumes, and the first instructions after the switch stall on them. So a suspending fiber
//! notes where its stack stands, and its worker, about to resume one fiber, asks the CPU for
//! the lines of the fibers queued after it: their loads then overlap with the running fiber's
//! work instead of following it.

use super::Core;

/// Bytes below a suspended fiber's mark that its resume touches: the registers the switch
/// saved.
const BELOW: usize = 128;
/// Bytes above the mark that its resume touches first: the frames it returns through. More
/// measured slower: the lines are fetched for every switch, and the frames further up are
/// reached later, when the hardware's own prefetching has caught up.
const ABOVE: usize = 256;
const LINE: usize = 64;

/// An address in the caller's frame, for [`stack`] to warm from later.
#[inline(always)]
pub(crate) fn stack_mark() -> usize {
    let mark = 0u8;
    std::hint::black_box(&mark) as *const u8 as usize
}

/// Asks for the stack lines a fiber that suspended at `mark` touches when it resumes, on a
/// stack whose top (highest address) is `top`.
#[inline]
pub(crate) fn stack(mark: usize, top: usize) {
    let range = stack_range(mark, top);
    lines(range.start, range.len());
}

/// The bytes [`stack`] asks for: none before the fiber has suspended (`mark` 0), and never
/// past `top`, where the guard of the next stack lies (a prefetch there costs a page walk and
/// finds nothing).
#[inline]
fn stack_range(mark: usize, top: usize) -> std::ops::Range<usize> {
    if mark == 0 {
        return 0..0;
    }
    let start = mark.saturating_sub(BELOW);
    start..(mark + ABOVE).min(top).max(start)
}

/// Asks for the lines of a fiber's `Core` that its resume touches, without reading them.
#[inline]
pub(crate) fn core(core: *const Core) {
    lines(core as usize, Core::HOT_BYTES);
}

/// Asks for the cache lines of `[start, start + len)`: a hint that reads nothing, so any
/// address will do.
#[inline(always)]
fn lines(start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let end = start.saturating_add(len);
        let mut line = start & !(LINE - 1);
        while line < end {
            // Safe since Rust 1.87 (SSE is on for every x86_64 target), `unsafe` before.
            #[allow(unused_unsafe)]
            // SAFETY: a prefetch is a hint to the cache: it never faults, whatever the
            // address, and neither reads nor writes memory as the program sees it.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(line as *const i8)
            };
            line += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_is_warmed_around_its_mark_and_never_past_its_top() {
        assert_eq!(stack_range(0, 1 << 20), 0..0);
        let mark = 1 << 20;
        assert_eq!(stack_range(mark, 2 << 20), mark - BELOW..mark + ABOVE);
        assert_eq!(stack_range(mark, mark + 64), mark - BELOW..mark + 64);
        assert_eq!(stack_range(mark, mark), mark - BELOW..mark);
    }
}
