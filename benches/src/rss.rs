//! The process's resident set size, from `/proc/self/status`.

/// `VmRSS` of this process, in bytes.
pub fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    parse_vm_rss(&status).expect("VmRSS in /proc/self/status")
}

/// The `VmRSS:` line of a `/proc/<pid>/status` text, in bytes.
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_vm_rss_line() {
        let status = "Name:\tx\nVmHWM:\t  9 kB\nVmRSS:\t    1234 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(parse_vm_rss(status), Some(1234 * 1024));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert!(resident_bytes() > 0);
    }
}
