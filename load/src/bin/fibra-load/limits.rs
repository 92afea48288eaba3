//! The open-file limit: every VU holds a socket, so a large run needs many descriptors.

/// Descriptors the process needs beyond one per VU (stdio, the runtime, reports, listeners).
const SPARE: u64 = 64;

/// Raises the soft open-file limit to the hard limit and returns how many VUs fit in it when
/// each needs `files_per_vu` descriptors.
pub(crate) fn vus_that_fit(files_per_vu: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for getrlimit to fill in.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return u64::MAX;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; raising our own soft limit up to the hard limit
        // is always permitted and affects only this process.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    if limit.rlim_cur == libc::RLIM_INFINITY {
        return u64::MAX;
    }
    limit.rlim_cur.saturating_sub(SPARE) / files_per_vu
}
