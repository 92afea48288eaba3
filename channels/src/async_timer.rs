//! Waking a future at a timer channel's deadline.
//!
//! Blocking waits sleep with `park_current_until`; a future needs something that wakes its
//! task instead. Inside a tokio runtime (which includes every fibra worker: they enter the
//! driver's tokio context) that is a tokio sleep on the runtime's timer wheel. Outside any
//! tokio runtime (`futures::executor::block_on` on a plain thread), a short-lived thread sleeps
//! until the deadline and wakes the task — the only fallback there is, and only for async waits
//! on timer channels.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

pub(crate) enum AsyncTimer {
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Thread { at: Instant, started: bool },
}

impl AsyncTimer {
    pub(crate) fn new(at: Instant) -> Self {
        if tokio::runtime::Handle::try_current().is_ok() {
            AsyncTimer::Tokio(Box::pin(tokio::time::sleep_until(at.into())))
        } else {
            AsyncTimer::Thread { at, started: false }
        }
    }

    /// Ready once the deadline has passed; otherwise arranges a wake of `cx`'s task then.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            AsyncTimer::Tokio(sleep) => sleep.as_mut().poll(cx),
            AsyncTimer::Thread { at, started } => {
                let at = *at;
                if Instant::now() >= at {
                    return Poll::Ready(());
                }
                if !*started {
                    *started = true;
                    let waker = cx.waker().clone();
                    std::thread::spawn(move || {
                        while let Some(left) = at.checked_duration_since(Instant::now()) {
                            if left.is_zero() {
                                break;
                            }
                            std::thread::sleep(left);
                        }
                        waker.wake();
                    });
                }
                Poll::Pending
            }
        }
    }
}
