//! OTP's error report, written to stderr when a process ends abnormally by itself.

use crate::{ProcessId, Reason};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// Whether a process that ended by itself with `reason` gets an error report (OTP's emulator
/// writes none for `normal`, nor for an orderly `shutdown`).
pub(crate) fn is_reported(reason: &Reason) -> bool {
    !matches!(reason, Reason::Normal | Reason::Shutdown)
}

/// Writes the report for `id`, after flushing stdout so the two streams stay in order.
pub(crate) fn write(id: &ProcessId, reason: &Reason) {
    let text = format_report(SystemTime::now(), id, reason);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn format_report(now: SystemTime, id: &ProcessId, reason: &Reason) -> String {
    format!(
        "=ERROR REPORT==== {} ===\nError in process {id} with exit value:\n{reason}\n",
        timestamp(now)
    )
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `8-Oct-2026::03:42:15.983000`, in UTC.
fn timestamp(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    format!(
        "{day}-{}-{year}::{:02}:{:02}:{:02}.{:06}",
        MONTHS[(month - 1) as usize],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_micros()
    )
}

/// Year, month (1–12) and day of the month of a day counted from 1970-01-01 (Howard
/// Hinnant's algorithm for the proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_read_like_otps_logger() {
        // 2026-10-08T03:42:15.983Z
        let at = UNIX_EPOCH + Duration::from_micros(1_791_430_935_983_000);
        assert_eq!(timestamp(at), "8-Oct-2026::03:42:15.983000");
        assert_eq!(timestamp(UNIX_EPOCH), "1-Jan-1970::00:00:00.000000");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(timestamp(leap), "29-Feb-2000::00:00:00.000000");
    }

    #[test]
    fn normal_and_shutdown_are_not_reported() {
        assert!(!is_reported(&Reason::Normal));
        assert!(!is_reported(&Reason::Shutdown));
        assert!(is_reported(&Reason::Panic("x".into())));
        assert!(is_reported(&Reason::custom("boom")));
    }
}
