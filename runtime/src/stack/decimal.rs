//! Decimal formatting without allocation or locks, usable inside a signal handler.

/// Writes `n` in decimal to `out`, in one call.
pub(crate) fn write_decimal(mut n: u64, out: &mut dyn FnMut(&[u8])) {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(n: u64) -> String {
        let mut text = Vec::new();
        write_decimal(n, &mut |bytes| text.extend_from_slice(bytes));
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn formats_like_display() {
        for n in [0, 7, 10, 99, 1_048_576, u64::MAX - 1, u64::MAX] {
            assert_eq!(decimal(n), n.to_string());
        }
    }
}
