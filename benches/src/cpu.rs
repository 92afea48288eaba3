//! CPU time (user + system) and minor page faults from `getrusage`, of this process or of its
//! waited-for children.

use std::mem::MaybeUninit;
use std::time::Duration;

/// User + system CPU time of every thread of this process so far.
pub fn process_cpu() -> Duration {
    cpu_time(&usage(libc::RUSAGE_SELF))
}

/// Minor page faults (memory first touched, or touched again after it was given back) of every
/// thread of this process so far.
pub fn process_minor_faults() -> u64 {
    usage(libc::RUSAGE_SELF).ru_minflt as u64
}

/// User + system CPU time of the children of this process waited for so far.
pub fn children_cpu() -> Duration {
    cpu_time(&usage(libc::RUSAGE_CHILDREN))
}

fn usage(who: libc::c_int) -> libc::rusage {
    let mut usage = MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is valid for writes of one `rusage`, which is all `getrusage` writes.
    let rc = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    // SAFETY: `getrusage` returned 0, so it has filled in the whole struct.
    unsafe { usage.assume_init() }
}

fn cpu_time(usage: &libc::rusage) -> Duration {
    let time = |t: libc::timeval| {
        Duration::new(t.tv_sec as u64, 0) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_cpu_time_advances() {
        let before = process_cpu();
        let mut x = 0u64;
        while process_cpu() == before {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(process_cpu() > before);
    }

    #[test]
    fn touching_fresh_memory_counts_faults() {
        const PAGES: usize = 64;
        let before = process_minor_faults();
        let mut memory = vec![0u8; PAGES * 4096 * 4];
        for byte in memory.iter_mut().step_by(4096) {
            *byte = 1;
        }
        std::hint::black_box(&memory);
        assert!(process_minor_faults() >= before + PAGES as u64);
    }
}
