//! The two ends of a channel — [`Reader`](crate::Reader) and [`Writer`](crate::Writer) — their
//! iterators and futures, and the accessors they have in common.

mod exclusive;
pub(crate) mod future;
pub(crate) mod iter;
pub(crate) mod reader;
pub(crate) mod writer;

/// Implements, on an end type with a `chan: Arc<Chan<T>>` field, the public accessors of the
/// channel's shared state. Each end passes the docs for every accessor, because what a call
/// means (and the example that shows it) depends on which side of the channel it is made from.
/// The docs come one block per accessor, each ended by `;`, in this order: `close`,
/// `is_closed`, `len`, `is_empty`, `is_full`, `capacity`, `same_channel`.
macro_rules! state_accessors {
    ($end:ident {
        $(#[$close:meta])* ;
        $(#[$is_closed:meta])* ;
        $(#[$len:meta])* ;
        $(#[$is_empty:meta])* ;
        $(#[$is_full:meta])* ;
        $(#[$capacity:meta])* ;
        $(#[$same_channel:meta])* ;
    }) => {
        impl<T> $end<T> {
            $(#[$close])*
            pub fn close(&self) -> bool {
                self.chan.close()
            }

            $(#[$is_closed])*
            pub fn is_closed(&self) -> bool {
                self.chan.is_closed()
            }

            $(#[$len])*
            pub fn len(&self) -> usize {
                self.chan.len()
            }

            $(#[$is_empty])*
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            $(#[$is_full])*
            pub fn is_full(&self) -> bool {
                self.len() >= self.capacity()
            }

            $(#[$capacity])*
            pub fn capacity(&self) -> usize {
                self.chan.capacity()
            }

            $(#[$same_channel])*
            pub fn same_channel(&self, other: &$end<T>) -> bool {
                std::sync::Arc::ptr_eq(&self.chan, &other.chan)
            }
        }
    };
}

use state_accessors;
