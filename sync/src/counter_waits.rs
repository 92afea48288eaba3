//! The reading and waiting methods of [`CountDownLatch`](crate::CountDownLatch) and
//! [`WaitGroup`](crate::WaitGroup), written once: the two differ only in how their count may
//! change, while waiting for it to reach zero means the same in both.

/// Expands, inside the `impl` of a type with a `counter: Counter` field, to its `count`, `wait`,
/// `wait_timeout` and `wait_async` methods; the waits are shown in dumps as `$kind` waits. Each
/// takes its docs from the caller, so that every type documents (and doc-tests) them in its own
/// terms.
macro_rules! counter_waits {
    (
        kind $kind:ident;
        $(#[$count:meta])* fn count;
        $(#[$wait:meta])* fn wait;
        $(#[$wait_timeout:meta])* fn wait_timeout;
        $(#[$wait_async:meta])* fn wait_async;
    ) => {
        $(#[$count])*
        pub fn count(&self) -> usize {
            self.counter.get()
        }

        $(#[$wait])*
        #[track_caller]
        pub fn wait(&self) {
            // Without a deadline the wait cannot time out.
            let _ = self.counter.wait(
                ::fibra_runtime::wait::Deadline::NEVER,
                ::fibra_runtime::wait::WaitKind::$kind,
                self,
            );
        }

        $(#[$wait_timeout])*
        #[track_caller]
        pub fn wait_timeout(
            &self,
            timeout: ::std::time::Duration,
        ) -> ::std::result::Result<(), $crate::TimedOut> {
            self.counter.wait(
                ::fibra_runtime::wait::Deadline::after(timeout),
                ::fibra_runtime::wait::WaitKind::$kind,
                self,
            )
        }

        $(#[$wait_async])*
        pub fn wait_async(&self) -> $crate::counter::UntilZero<'_> {
            self.counter.wait_async()
        }
    };
}

pub(crate) use counter_waits;
