//! The handoff core of a channel: the lock-free ring, the wait queues under the lock, the
//! waiter whose claim decides a select, and the packet a blocked operation's value travels
//! through.

pub(crate) mod chan;
pub(crate) mod packet;
pub(crate) mod queue;
pub(crate) mod retry_slot;
pub(crate) mod ring;
pub(crate) mod waiter;
