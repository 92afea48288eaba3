//! The bytes a port has taken for its program's input and not yet written. The port queues
//! them and goes on at once; its writer fiber takes them in order and may wait on a full
//! pipe as long as the program pleases, which must never hold up the port's own mailbox.

use fibra_runtime::wait::{current_waker, park_current};
use futures::task::AtomicWaker;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

#[derive(Default)]
pub(super) struct Input {
    state: Mutex<State>,
    writer: AtomicWaker,
}

#[derive(Default)]
struct State {
    chunks: VecDeque<Vec<u8>>,
    /// No more bytes are taken: the port closed the input, or the writer ended.
    closed: bool,
}

impl Input {
    /// Queues `bytes` after those queued before; once the input is closed they are dropped,
    /// as OTP drops what a port sends to a program that closed its input.
    pub(super) fn push(&self, bytes: Vec<u8>) {
        {
            let mut state = self.state();
            if state.closed {
                return;
            }
            state.chunks.push_back(bytes);
        }
        self.writer.wake();
    }

    /// Takes no more bytes; the writer still writes those already queued.
    pub(super) fn close(&self) {
        self.state().closed = true;
        self.writer.wake();
    }

    /// Takes no more bytes and drops those queued: the writer cannot write them.
    pub(super) fn discard(&self) {
        let mut state = self.state();
        state.closed = true;
        state.chunks.clear();
    }

    /// The next bytes to write, parking the writer until there are some; `None` once the
    /// input is closed and everything queued has been taken. A cancellation point.
    pub(super) fn next(&self) -> Option<Vec<u8>> {
        loop {
            // Registered before the look, so that a push after it wakes the park below.
            self.writer.register(&current_waker());
            {
                let mut state = self.state();
                if let Some(bytes) = state.chunks.pop_front() {
                    return Some(bytes);
                }
                if state.closed {
                    return None;
                }
            }
            park_current();
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change under the lock leaves the state whole, so a panic there (an allocation
        // failing) spoils nothing.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
