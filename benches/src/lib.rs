//! fibra's side-by-side peer benchmarks: the workloads and the harness behind the
//! `fibra-compare` binary.
//!
//! The harness: [`registry`] (the one list of benches), [`args`] (command line), [`rounds`]
//! (alternating rounds), [`report`] (JSON lines), [`runtimes`] (how every system is set up),
//! [`child`] and [`rss`] (for measurements that need a process of their own), [`cpu`] (CPU
//! time). Each bench is a module with a `run(quick)` that measures and prints.

pub mod accept_storm;
pub mod args;
pub mod balance;
pub mod block_on_ready;
pub mod blocking_roundtrip;
pub mod call_roundtrip;
pub mod cancel_storm;
pub mod chan_pingpong;
pub mod chan_throughput;
pub mod child;
pub mod cpu;
pub mod diag_overhead;
pub mod erlang;
pub mod fs_read;
pub mod http_hello;
pub mod idle_conn_memory;
pub mod interop_roundtrip;
pub mod link_chain_kill;
pub mod load_http;
pub mod mutex_contended;
pub mod mutex_uncontended;
pub mod parallel_map;
pub mod parked_memory;
pub mod proc_memory;
pub mod proc_pingpong;
pub mod proc_ring;
pub mod proc_spawn;
pub mod registry;
pub mod report;
pub mod rounds;
pub mod rss;
pub mod runtimes;
pub mod select2;
pub mod selective_receive;
pub mod semaphore;
pub mod skynet;
pub mod spawn_join;
pub mod sysmon_cpu;
pub mod tcp_echo;
pub mod timers;
pub mod yield_pingpong;
