use super::*;
use crate::stack::child;
use crate::stack::class::DISCARD_BATCH;
use crate::stack::layout::MIN_USABLE;
use corosensei::{Coroutine, CoroutineResult};
use std::fs;
use std::ptr;

const MIB: usize = 1 << 20;

fn pool(max_warm: usize, guard: GuardMode) -> StackPool {
    StackPool::new(PoolConfig { max_warm, guard })
}

/// The address of the top usable word, where a fresh fiber's first frame goes.
fn top_word(stack: &PooledStack) -> *mut u64 {
    (stack.base.get() - 8) as *mut u64
}

fn touch(stack: &PooledStack) {
    // SAFETY: the top word of a stack we hold and nothing else uses.
    unsafe { ptr::write_volatile(top_word(stack), 0xf1b7a) };
}

fn is_resident(addr: usize) -> bool {
    let page = addr & !(page_size() - 1);
    let mut vec = 0u8;
    // SAFETY: one page of a mapping we own; mincore writes one byte per page into `vec`.
    let rc = unsafe { libc::mincore(page as *mut libc::c_void, page_size(), &mut vec) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec & 1 == 1
}

fn is_mapped(addr: usize, len: usize) -> bool {
    // SAFETY: msync only inspects the range; it fails with ENOMEM where nothing is mapped.
    unsafe { libc::msync(addr as *mut libc::c_void, len, libc::MS_ASYNC) == 0 }
}

fn map_lines() -> usize {
    fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

#[test]
fn a_returned_stack_is_reused_warm() {
    let mut pool = pool(4, GuardMode::Auto);
    let stack = pool.take(MIB).unwrap();
    assert_eq!(stack.usable_size(), MIB);
    let (base, limit) = (stack.base, stack.limit);
    touch(&stack);
    pool.give(stack);

    let again = pool.take(MIB).unwrap();
    assert_eq!((again.base, again.limit), (base, limit));
    // SAFETY: the top word of the stack we hold again; warm reuse keeps its contents.
    assert_eq!(unsafe { ptr::read_volatile(top_word(&again)) }, 0xf1b7a);
}

#[test]
fn stacks_past_the_warm_bound_go_cold_warm_first_then_cold_then_fresh() {
    let mut pool = pool(1, GuardMode::Auto);
    let first = pool.take(MIB).unwrap();
    let second = pool.take(MIB).unwrap();
    let (first_top, second_top) = (top_word(&first) as usize, top_word(&second) as usize);
    pool.give(first);
    pool.give(second);
    assert_eq!(
        pool.classes[0].counts().0,
        2,
        "one warm, one awaiting its discard"
    );

    assert_eq!(top_word(&pool.take(MIB).unwrap()) as usize, first_top);
    assert_eq!(top_word(&pool.take(MIB).unwrap()) as usize, second_top);
    let fresh = pool.take(MIB).unwrap();
    assert!(![first_top, second_top].contains(&(top_word(&fresh) as usize)));
}

/// Lazily freed pages (`LazyFree` in `/proc/self/smaps`) of the mappings holding any of `addrs`.
fn lazily_freed_pages(addrs: &[usize]) -> usize {
    let smaps = fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut pages = 0;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().and_then(|range| {
            let (start, end) = range.split_once('-')?;
            Some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        });
        if let Some((start, end)) = range {
            inside = addrs.iter().any(|addr| (start..end).contains(addr));
        } else if let Some(kib) = line.strip_prefix("LazyFree:").filter(|_| inside) {
            let kib: usize = kib.trim().trim_end_matches("kB").trim().parse().unwrap();
            pages += kib * 1024 / page_size();
        }
    }
    pages
}

/// Cold stacks, a batch of them.
const COLD: usize = DISCARD_BATCH;

#[test]
fn cold_stacks_give_their_memory_back_once_they_have_waited_through_an_aging() {
    if child::in_child() {
        let mut pool = pool(0, GuardMode::Auto);
        let stacks: Vec<_> = (0..COLD).map(|_| pool.take(MIB).unwrap()).collect();
        let tops: Vec<usize> = stacks.iter().map(|s| top_word(s) as usize).collect();
        for stack in &stacks {
            touch(stack);
        }
        for stack in stacks {
            pool.give(stack);
        }
        pool.age();
        assert!(
            tops.iter().all(|&top| is_resident(top)),
            "an aging only marks the stacks waiting"
        );
        assert_eq!(lazily_freed_pages(&tops), 0);
        assert_eq!(
            pool.classes[0].counts().0,
            COLD,
            "all kept with their memory"
        );

        // The most recently returned stack is reused first, as it was; given back, it waits
        // anew.
        let again = pool.take(MIB).unwrap();
        assert_eq!(top_word(&again) as usize, tops[COLD - 1]);
        // SAFETY: the top word of the stack we hold again; nothing discarded it.
        assert_eq!(unsafe { ptr::read_volatile(top_word(&again)) }, 0xf1b7a);
        pool.give(again);

        pool.age();
        // The pages went back: lazily freed, or already reclaimed. `LazyFree` counts a page
        // only once the kernel's per-CPU batch holding it has drained, so not every page of
        // the batch need show yet; none showed before.
        let aged = &tops[..COLD - 1];
        let gone = aged.iter().filter(|&&top| !is_resident(top)).count();
        assert!(
            lazily_freed_pages(aged) + gone > 0,
            "the stacks that waited through an aging went back"
        );
        assert!(is_resident(tops[COLD - 1]), "the one reused since waits on");
        assert_eq!(pool.classes[0].counts().0, 1, "one kept with its memory");

        // It was returned before that aging: it goes when the worker idles.
        assert!(pool.discard_batches(), "something was given back");
        assert_eq!(
            pool.classes[0].counts().0,
            0,
            "one that waited through an aging goes"
        );
        // Fewer than a batch, returned since the last aging, wait on; a batch goes.
        for (returned, kept) in [(3, 3), (COLD, 0)] {
            let stacks: Vec<_> = (0..returned).map(|_| pool.take(MIB).unwrap()).collect();
            for stack in stacks {
                pool.give(stack);
            }
            let discarded = pool.discard_batches();
            assert_eq!(pool.classes[0].counts().0, kept, "{returned} returned");
            assert_eq!(
                discarded,
                kept == 0,
                "{returned} returned: whether any went"
            );
        }
        return;
    }
    let output = child::run(
        module_path!(),
        "cold_stacks_give_their_memory_back_once_they_have_waited_through_an_aging",
    );
    child::assert_passed(&output);
}

#[test]
fn chunks_grow_geometrically_per_size_class() {
    let mut pool = pool(0, GuardMode::Auto);
    let stacks: Vec<_> = (0..16 + 32 + 1)
        .map(|_| pool.take(64 * 1024).unwrap())
        .collect();
    let small = pool.take(1).unwrap();
    assert_eq!(small.usable_size(), MIN_USABLE);

    let slots = |class: usize| -> Vec<usize> {
        pool.classes[class]
            .chunks()
            .iter()
            .map(|chunk| chunk.slots())
            .collect()
    };
    assert_eq!(pool.classes.len(), 2);
    assert_eq!(slots(0), [16, 32, 64]);
    assert_eq!(slots(1), [16]);

    // Every stack is distinct and page aligned.
    let mut bases: Vec<_> = stacks.iter().map(|stack| stack.base.get()).collect();
    bases.sort_unstable();
    bases.dedup();
    assert_eq!(bases.len(), stacks.len());
    assert!(bases.iter().all(|base| base % page_size() == 0));
    for stack in stacks {
        pool.give(stack);
    }
    pool.give(small);
}

#[test]
fn madvise_guards_go_in_ahead_in_batches_growing_with_use() {
    let mut pool = pool(0, GuardMode::Madvise);
    let mut prepared = Vec::new();
    let stacks: Vec<_> = (0..17)
        .map(|_| {
            let stack = pool.take(64 * 1024).unwrap();
            prepared.push(pool.classes[0].chunks()[0].prepared());
            stack
        })
        .collect();
    assert_eq!(
        prepared,
        [1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16, 16]
    );
    assert_eq!(
        pool.classes[0].chunks()[1].prepared(),
        1,
        "a new chunk starts small"
    );
    for stack in stacks {
        pool.give(stack);
    }
}

#[test]
fn mprotect_guards_go_in_one_at_a_time() {
    let mut pool = pool(0, GuardMode::Mprotect);
    let stacks: Vec<_> = (0..5).map(|_| pool.take(64 * 1024).unwrap()).collect();
    assert_eq!(pool.classes[0].chunks()[0].prepared(), 5);
    for stack in stacks {
        pool.give(stack);
    }
}

#[test]
fn sizes_round_up_to_whole_pages() {
    let mut pool = pool(0, GuardMode::Auto);
    let stack = pool.take(MIN_USABLE + 1).unwrap();
    assert_eq!(stack.usable_size(), MIN_USABLE + page_size());
    let (limit, base) = (stack.limit.get(), stack.base.get());
    assert_eq!(base - limit, stack.usable_size() + GUARD_SIZE);
    assert_eq!(base % STACK_ALIGNMENT, 0);
    assert_eq!(limit % STACK_ALIGNMENT, 0);
    pool.give(stack);
}

#[test]
fn impossible_sizes_are_an_error() {
    let mut pool = pool(0, GuardMode::Auto);
    assert!(matches!(
        pool.take(usize::MAX),
        Err(StackError::TooLarge { size: usize::MAX })
    ));
}

#[test]
#[should_panic(expected = "not from")]
fn a_stack_from_another_pool_is_refused() {
    let mut lender = pool(0, GuardMode::Auto);
    let mut other = pool(0, GuardMode::Auto);
    let stack = lender.take(MIB).unwrap();
    other.give(stack);
}

#[test]
fn a_coroutine_runs_on_a_pooled_stack_and_gives_it_back() {
    let mut pool = pool(4, GuardMode::Auto);
    let stack = pool.take(64 * 1024).unwrap();
    let (base, limit) = (stack.base, stack.limit);
    let mut coroutine = Coroutine::with_stack(stack, |yielder, start: u64| {
        let halfway = yielder.suspend(start + 1);
        // Some real stack use across the suspension.
        let frame = std::hint::black_box([1u8; 8192]);
        halfway + start - u64::from(frame[4096])
    });
    assert!(matches!(coroutine.resume(1), CoroutineResult::Yield(2)));
    assert!(matches!(
        coroutine.resume(100),
        CoroutineResult::Return(100)
    ));

    let stack = coroutine.into_stack();
    assert_eq!((stack.base, stack.limit), (base, limit));
    pool.give(stack);
    let again = pool.take(64 * 1024).unwrap();
    assert_eq!(again.base, base);
}

#[test]
fn pooled_stacks_are_send() {
    fn assert_send<T: Send>() {}
    assert_send::<PooledStack>();
}

fn write_guard(mode: GuardMode) {
    let mut pool = pool(0, mode);
    // The fourth stack's guard went in ahead of use, with the third's (madvise guards).
    let earlier: Vec<_> = (0..3).map(|_| pool.take(64 * 1024).unwrap()).collect();
    let mut stack = pool.take(64 * 1024).unwrap();
    drop(earlier);
    if mode == GuardMode::Mprotect {
        // Through the cold list, whose mprotect guards are lifted and must come back.
        pool.give(stack);
        stack = pool.take(64 * 1024).unwrap();
    }
    touch(&stack);
    let guard_top = (stack.limit.get() + GUARD_SIZE - 8) as *mut u64;
    // SAFETY: deliberately faults: the guard is mapped by our chunk and made inaccessible, so
    // the volatile write traps before it can change anything.
    unsafe { ptr::write_volatile(guard_top, 1) };
    unreachable!("writing the guard did not fault");
}

#[test]
fn madvise_guard_faults() {
    if child::in_child() {
        write_guard(GuardMode::Madvise);
    }
    let output = child::run(module_path!(), "madvise_guard_faults");
    child::assert_killed_by(&output, libc::SIGSEGV);
}

#[test]
fn mprotect_guard_faults() {
    if child::in_child() {
        write_guard(GuardMode::Mprotect);
    }
    let output = child::run(module_path!(), "mprotect_guard_faults");
    child::assert_killed_by(&output, libc::SIGSEGV);
}

#[test]
fn a_chunk_leaked_for_an_abandoned_stack_keeps_only_that_stacks_memory() {
    let mut pool = pool(4, GuardMode::Auto);
    let (returned, abandoned) = (pool.take(64 * 1024).unwrap(), pool.take(64 * 1024).unwrap());
    touch(&returned);
    touch(&abandoned);
    let returned_top = top_word(&returned) as usize;
    pool.give(returned);
    assert!(is_resident(returned_top), "a warm stack keeps its memory");
    let guard = abandoned.limit.get();
    assert!(crate::stack::registry::guard_hit(guard).is_some());
    drop(pool);
    assert!(
        !is_resident(returned_top),
        "the leaked chunk's warm stack gave its memory back"
    );
    assert!(
        crate::stack::registry::guard_hit(guard).is_none(),
        "the leaked chunk's registry entry is free"
    );
    // SAFETY: the abandoned stack's chunk was leaked, so its memory is still ours.
    assert_eq!(unsafe { ptr::read_volatile(top_word(&abandoned)) }, 0xf1b7a);
}

#[test]
fn dropping_the_pool_unmaps_only_fully_returned_chunks() {
    if child::in_child() {
        let mut pool = pool(4, GuardMode::Auto);
        // 16 stacks fill the first chunk; the 17th opens the second.
        let mut stacks: Vec<_> = (0..17).map(|_| pool.take(64 * 1024).unwrap()).collect();
        let abandoned = stacks.pop().unwrap();
        let (first, first_len) = pool.classes[0].chunks()[0].range();
        let (second, second_len) = pool.classes[0].chunks()[1].range();
        for stack in stacks {
            pool.give(stack);
        }
        touch(&abandoned);
        drop(pool);

        assert!(!is_mapped(first, first_len), "idle chunk unmapped");
        assert!(
            is_mapped(second, second_len),
            "chunk with a stack out stays"
        );
        // SAFETY: the abandoned stack's chunk was leaked, so its memory is still ours.
        assert_eq!(unsafe { ptr::read_volatile(top_word(&abandoned)) }, 0xf1b7a);
        return;
    }
    let output = child::run(
        module_path!(),
        "dropping_the_pool_unmaps_only_fully_returned_chunks",
    );
    child::assert_passed(&output);
}

#[test]
fn a_hundred_thousand_madvise_guarded_stacks_keep_the_map_small() {
    if child::in_child() {
        let before = map_lines();
        let mut pool = pool(usize::MAX, GuardMode::Madvise);
        let stacks: Vec<_> = (0..100_000).map(|_| pool.take(MIB).unwrap()).collect();
        let during = map_lines();
        assert!(
            during < before + 100,
            "{before} lines before, {during} with the stacks"
        );
        for stack in stacks {
            pool.give(stack);
        }
        drop(pool);
        return;
    }
    let output = child::run(
        module_path!(),
        "a_hundred_thousand_madvise_guarded_stacks_keep_the_map_small",
    );
    child::assert_passed(&output);
}

#[test]
fn cold_mprotect_stacks_give_their_mappings_back() {
    if child::in_child() {
        let mut pool = pool(0, GuardMode::Mprotect);
        // Map the chunks first, so that only guards change the count below.
        let warmup: Vec<_> = (0..200).map(|_| pool.take(64 * 1024).unwrap()).collect();
        for stack in warmup {
            pool.give(stack);
        }
        let before = map_lines();
        let stacks: Vec<_> = (0..200).map(|_| pool.take(64 * 1024).unwrap()).collect();
        let during = map_lines();
        assert!(
            during >= before + 2 * 200 - 8,
            "{before} lines before, {during} after"
        );
        for stack in stacks {
            pool.give(stack);
        }
        let after = map_lines();
        assert!(
            after <= before + 2,
            "{before} lines before, {after} after going cold"
        );
        return;
    }
    let output = child::run(
        module_path!(),
        "cold_mprotect_stacks_give_their_mappings_back",
    );
    child::assert_passed(&output);
}
