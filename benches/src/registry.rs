//! The one list of benches: each bench's name (on the command line and in the JSON output),
//! what it measures, and the function that runs it. Everything else that names benches — the
//! usage text, `all`, the dispatch — reads this list.

use crate::{
    accept_storm, balance, block_on_ready, blocking_roundtrip, call_roundtrip, cancel_storm,
    chan_pingpong, chan_throughput, diag_overhead, fs_read, http_hello, idle_conn_memory,
    interop_roundtrip, link_chain_kill, load_http, mutex_contended, mutex_uncontended,
    parallel_map, parked_memory, proc_memory, proc_pingpong, proc_ring, proc_spawn, select2,
    selective_receive, semaphore, skynet, spawn_join, sysmon_cpu, tcp_echo, timers, yield_pingpong,
};

/// One benchmark the binary can run.
#[derive(Debug)]
pub struct Bench {
    /// Its name on the command line and in the JSON output.
    pub name: &'static str,
    /// What it measures, in a line.
    pub about: &'static str,
    /// Measures and prints; `true` shrinks the workload.
    pub run: fn(bool),
}

impl PartialEq for Bench {
    fn eq(&self, other: &Bench) -> bool {
        self.name == other.name
    }
}

impl Eq for Bench {}

/// Every bench, in the order `all` runs them.
pub static BENCHES: &[Bench] = &[
    Bench {
        name: "spawn_join",
        about: "Trivial spawn + join, in batches.",
        run: spawn_join::run,
    },
    Bench {
        name: "yield_pingpong",
        about: "Park/unpark ping-pong between two fibers on one worker.",
        run: yield_pingpong::run,
    },
    Bench {
        name: "parked_memory",
        about: "RSS per parked fiber, each system in its own child process.",
        run: parked_memory::run,
    },
    Bench {
        name: "skynet",
        about: "The 10-ary skynet tree.",
        run: skynet::run,
    },
    Bench {
        name: "balance",
        about: "One spawner, 1 000 working, yielding, ping-ponging tasks: time and worker share.",
        run: balance::run,
    },
    Bench {
        name: "timers",
        about: "Many tasks sleeping at once: wall and CPU time.",
        run: timers::run,
    },
    Bench {
        name: "block_on_ready",
        about: "`block_on` of a future that is ready at once.",
        run: block_on_ready::run,
    },
    Bench {
        name: "blocking_roundtrip",
        about: "A round trip through the blocking pool.",
        run: blocking_roundtrip::run,
    },
    Bench {
        name: "interop_roundtrip",
        about: "A tokio task spawning a fiber and awaiting it.",
        run: interop_roundtrip::run,
    },
    Bench {
        name: "mutex_contended",
        about: "1 000 tasks locking one mutex, fair and unfair.",
        run: mutex_contended::run,
    },
    Bench {
        name: "mutex_uncontended",
        about: "Lock/unlock of a mutex nobody else touches.",
        run: mutex_uncontended::run,
    },
    Bench {
        name: "semaphore",
        about: "1 000 tasks sharing a 10-permit semaphore.",
        run: semaphore::run,
    },
    Bench {
        name: "cancel_storm",
        about: "100 000 parked children cancelled at once.",
        run: cancel_storm::run,
    },
    Bench {
        name: "parallel_map",
        about: "A trivial map over 1 000 000 items, in parallel.",
        run: parallel_map::run,
    },
    Bench {
        name: "chan_pingpong",
        about: "Round trips between two tasks over capacity-1 channels.",
        run: chan_pingpong::run,
    },
    Bench {
        name: "chan_throughput",
        about: "`u64`s through a `bounded(1024)` channel, 1→1 and 4→4.",
        run: chan_throughput::run,
    },
    Bench {
        name: "select2",
        about: "One consumer selecting over two fed channels.",
        run: select2::run,
    },
    Bench {
        name: "proc_spawn",
        about: "Processes spawned until each waits in a receive.",
        run: proc_spawn::run,
    },
    Bench {
        name: "proc_memory",
        about: "RSS per parked process, 100 000 of them, each system in its own child process.",
        run: proc_memory::run,
    },
    Bench {
        name: "proc_ring",
        about: "A token around a ring of 1 000 processes.",
        run: proc_ring::run,
    },
    Bench {
        name: "proc_pingpong",
        about: "Round trips between two processes.",
        run: proc_pingpong::run,
    },
    Bench {
        name: "selective_receive",
        about: "A receive matching the newest of 1 000 queued messages.",
        run: selective_receive::run,
    },
    Bench {
        name: "link_chain_kill",
        about: "A chain of 100 000 linked processes ended by one `exit(kill)`.",
        run: link_chain_kill::run,
    },
    Bench {
        name: "call_roundtrip",
        about: "Calls with a typed reply to a server process.",
        run: call_roundtrip::run,
    },
    Bench {
        name: "tcp_echo",
        about: "64-byte round trips over loopback TCP, 1 and 100 connections.",
        run: tcp_echo::run,
    },
    Bench {
        name: "accept_storm",
        about: "Connect + accept + close over loopback TCP.",
        run: accept_storm::run,
    },
    Bench {
        name: "http_hello",
        about: "Requests/s of the hello server under 100 keep-alive connections, vs hyper.",
        run: http_hello::run,
    },
    Bench {
        name: "idle_conn_memory",
        about: "RSS per idle TCP connection parked in `read`, 10 000 open, in child processes.",
        run: idle_conn_memory::run,
    },
    Bench {
        name: "fs_read",
        about: "A 64 MiB file read in 8 KiB calls.",
        run: fs_read::run,
    },
    Bench {
        name: "load_http",
        about: "HTTP load generators (fibra-load, oha, wrk, hey) against the hello server.",
        run: load_http::run,
    },
    Bench {
        name: "diag_overhead",
        about: "Channel, mutex and park workloads with wait-site recording on and compiled out.",
        run: diag_overhead::run,
    },
    Bench {
        name: "sysmon_cpu",
        about: "The monitor thread's CPU use over an idle and a busy runtime.",
        run: sysmon_cpu::run,
    },
];

/// The bench called `name`.
pub fn find(name: &str) -> Option<&'static Bench> {
    BENCHES.iter().find(|bench| bench.name == name)
}
