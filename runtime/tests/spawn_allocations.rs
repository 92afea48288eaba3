//! Heap allocations per spawn + join, counted by a global allocator: a scoped child costs one
//! (its `Core`, which keeps its closure and its result), a `spawn` two (and its own cancel
//! scope, which `JoinHandle::abort` cancels).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; counting allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Children spawned before they are joined, as in the `spawn_join` bench.
const BATCH: u64 = 1000;
/// Batches counted, after one to warm the queues, the stack pool and the fiber table.
const BATCHES: u64 = 10;

fn scoped_batch() -> u64 {
    fibra_runtime::scope(|s| {
        let children: Vec<_> = (0..BATCH).map(|i| s.spawn(move || black_box(i))).collect();
        children.into_iter().map(|c| c.join().unwrap()).sum()
    })
}

fn spawned_batch() -> u64 {
    let children: Vec<_> = (0..BATCH)
        .map(|i| fibra_runtime::spawn(move || black_box(i)))
        .collect();
    children.into_iter().map(|c| c.join().unwrap()).sum()
}

/// Allocations per child over `BATCHES` runs of `batch`, in hundredths.
fn per_child(batch: fn() -> u64) -> usize {
    batch();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..BATCHES {
        assert_eq!(batch(), BATCH * (BATCH - 1) / 2);
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    allocations * 100 / (BATCHES * BATCH) as usize
}

/// Per child: the fixed allocations, and at most a quarter more shared by the batch (the
/// vector of handles, queue growth, whatever the driver and monitor threads do meanwhile).
#[test]
fn a_scoped_child_allocates_once_and_a_spawned_fiber_twice() {
    for workers in [1, 2] {
        let (scoped, spawned) = fibra_testing::on(workers, || {
            (per_child(scoped_batch), per_child(spawned_batch))
        });
        assert!(
            (100..125).contains(&scoped),
            "{workers} workers: {scoped} / 100"
        );
        assert!(
            (200..225).contains(&spawned),
            "{workers} workers: {spawned} / 100"
        );
    }
}
