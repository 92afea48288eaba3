//! fibra's side-by-side peer benchmarks: the workloads and the harness behind the
//! `fibra-compare` binary.
//!
//! The harness: [`args`] (command line), [`rounds`] (alternating rounds), [`report`] (JSON
//! lines), [`runtimes`] (how every system is set up), [`child`] and [`rss`] (for measurements
//! that need a process of their own). The benches: [`spawn_join`], [`yield_pingpong`],
//! [`parked_memory`], [`skynet`], [`timers`], [`block_on_ready`], [`blocking_roundtrip`],
//! [`interop_roundtrip`], [`mutex_contended`], [`mutex_uncontended`], [`semaphore`],
//! [`cancel_storm`], [`parallel_map`], [`chan_pingpong`], [`chan_throughput`], [`select2`],
//! [`proc_ring`], [`tcp_echo`], [`accept_storm`], [`fs_read`], [`load_http`]; each has a
//! `run(quick)` that
//! measures and prints.

pub mod accept_storm;
pub mod args;
pub mod block_on_ready;
pub mod blocking_roundtrip;
pub mod cancel_storm;
pub mod chan_pingpong;
pub mod chan_throughput;
pub mod child;
pub mod fs_read;
pub mod interop_roundtrip;
pub mod load_http;
pub mod mutex_contended;
pub mod mutex_uncontended;
pub mod parallel_map;
pub mod parked_memory;
pub mod proc_ring;
pub mod report;
pub mod rounds;
pub mod rss;
pub mod runtimes;
pub mod select2;
pub mod semaphore;
pub mod skynet;
pub mod spawn_join;
pub mod tcp_echo;
pub mod timers;
pub mod yield_pingpong;
