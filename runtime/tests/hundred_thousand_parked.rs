//! 100 000 fibers parked at once, then all released and joined.

use fibra_runtime::{current, park, Fiber, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn a_hundred_thousand_parked_fibers_are_released_and_joined() {
    const FIBERS: usize = 100_000;
    let runtime = Runtime::builder()
        .workers(2)
        .stack_size(32 * 1024)
        .build()
        .unwrap();
    let released = runtime.block_on(|| {
        let parked: Arc<Mutex<Vec<Fiber>>> = Arc::new(Mutex::new(Vec::with_capacity(FIBERS)));
        let go = Arc::new(AtomicBool::new(false));
        let woke = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..FIBERS)
            .map(|_| {
                let (parked, go, woke) = (parked.clone(), go.clone(), woke.clone());
                fibra_runtime::spawn(move || {
                    parked.lock().unwrap().push(current());
                    while !go.load(Ordering::Acquire) {
                        park();
                    }
                    woke.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        while parked.lock().unwrap().len() < FIBERS {
            fibra_runtime::yield_now();
        }
        assert_eq!(woke.load(Ordering::SeqCst), 0, "a fiber ran past its park");
        go.store(true, Ordering::Release);
        for fiber in parked.lock().unwrap().drain(..) {
            fiber.unpark();
        }
        for handle in handles {
            handle.join().unwrap();
        }
        woke.load(Ordering::SeqCst)
    });
    assert_eq!(released, FIBERS);
}
